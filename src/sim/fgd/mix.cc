#include "sim/fgd/mix.h"

#include <map>
#include <random>

namespace sluice::sim::fgd {

namespace {
constexpr uint64_t kMixSeed = 20230710;  // fixed: a mix is a property of the trace, not of a run
}

const std::vector<std::string>& mix_names() {
  static const std::vector<std::string> names = {"default", "sharing", "multigpu", "constrained"};
  return names;
}

Result<std::vector<TracePod>> apply_mix(const std::vector<TracePod>& pods,
                                        const std::vector<TraceNode>& nodes,
                                        const std::string& mix) {
  std::mt19937_64 rng(kMixSeed);
  std::vector<TracePod> out = pods;
  if (mix == "default") return out;
  std::vector<const TracePod*> sharing, multi;
  for (const TracePod& p : pods) {
    if (p.num_gpu == 1 && p.gpu_milli < 1000) sharing.push_back(&p);
    if (p.num_gpu > 1) multi.push_back(&p);
  }
  if (mix == "sharing") {
    if (sharing.empty()) return Error{"mix 'sharing' needs sharing pods in the trace"};
    for (TracePod& p : out)
      if (p.num_gpu == 1 && p.gpu_milli == 1000 && rng() % 2 == 0)
        p.gpu_milli = sharing[rng() % sharing.size()]->gpu_milli;
    return out;
  }
  if (mix == "multigpu") {
    if (multi.empty()) return Error{"mix 'multigpu' needs multi-GPU pods in the trace"};
    for (TracePod& p : out)
      if (p.num_gpu == 1 && p.gpu_milli == 1000 && rng() % 5 == 0) {
        const std::string name = p.name;
        p = *multi[rng() % multi.size()];
        p.name = name;
      }
    return out;
  }
  if (mix == "constrained") {
    // 1. GPUs of each model, and the largest node of each model (a pod must fit somewhere).
    std::map<std::string, int64_t> gpus;
    std::map<std::string, const TraceNode*> largest;
    for (const TraceNode& n : nodes) {
      if (n.gpus == 0) continue;
      gpus[n.model] += n.gpus;
      const TraceNode*& l = largest[n.model];
      if (!l || n.gpus > l->gpus || (n.gpus == l->gpus && n.cpu_milli > l->cpu_milli)) l = &n;
    }
    // 2. 40% of GPU pods get one model, drawn by GPU count among models that can hold them.
    for (TracePod& p : out) {
      if (p.num_gpu == 0 || rng() % 5 >= 2) continue;
      int64_t total = 0;
      for (const auto& [m, g] : gpus)
        if (largest[m]->gpus >= p.num_gpu && largest[m]->cpu_milli >= p.cpu_milli &&
            largest[m]->memory_mib >= p.memory_mib)
          total += g;
      if (total == 0) continue;
      int64_t pick = static_cast<int64_t>(rng() % static_cast<uint64_t>(total));
      for (const auto& [m, g] : gpus) {
        if (!(largest[m]->gpus >= p.num_gpu && largest[m]->cpu_milli >= p.cpu_milli &&
              largest[m]->memory_mib >= p.memory_mib))
          continue;
        if (pick < g) {
          p.gpu_spec = {m};
          break;
        }
        pick -= g;
      }
    }
    return out;
  }
  return Error{"unknown mix '" + mix + "' (default, sharing, multigpu, constrained)"};
}

}  // namespace sluice::sim::fgd
