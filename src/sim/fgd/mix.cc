#include "sim/fgd/mix.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <stdexcept>

namespace sluice::sim::fgd {

namespace {

constexpr uint64_t kMixSeed = 20230710;  // fixed: a mix is a property of the trace, not of a run

struct Family {
  const char* name;
  double max_share;  // inclusive
};
constexpr Family kFamilies[] = {
    {"sharing", 1.0}, {"multigpu", 1.0}, {"gpuspec", 1.0}, {"gpuspecuniform", 1.0}, {"cpu", 0.9}};

const std::map<std::string, std::string>& aliases() {
  static const std::map<std::string, std::string> a = {{"sharing", "sharing:0.7"},
                                                       {"multigpu", "multigpu:0.12"},
                                                       {"constrained", "gpuspec:0.4"},
                                                       {"cpuheavy", "cpu:0.4"}};
  return a;
}

bool whole1(const TracePod& p) {
  return p.num_gpu == 1 && p.gpu_milli == 1000;
}
bool is_sharing(const TracePod& p) {
  return p.num_gpu == 1 && p.gpu_milli < 1000;
}

// A uniform draw in [0, 1) from the mix's one generator.
double draw(std::mt19937_64& rng) {
  return static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

// The probability that converts `eligible` pods so that `have` of `total` reach `share`.
double conversion(double share, int64_t have, int64_t total, int64_t eligible) {
  if (eligible <= 0) return 0;
  const double need = share * static_cast<double>(total) - static_cast<double>(have);
  return std::clamp(need / static_cast<double>(eligible), 0.0, 1.0);
}

// Whole 1-GPU pods become sharing pods (pred = is_sharing) or multi-GPU pods, until `share` of
// the GPU pods are of that kind; each converted pod copies a pod of that kind from the trace.
Result<bool> convert(std::vector<TracePod>& out, const std::vector<TracePod>& original,
                     double share, bool sharing, std::mt19937_64& rng) {
  std::vector<const TracePod*> donors;
  int64_t gpu = 0, have = 0, eligible = 0;
  for (const TracePod& p : original) {
    const bool kind = sharing ? is_sharing(p) : p.num_gpu > 1;
    if (kind) donors.push_back(&p);
  }
  for (const TracePod& p : out) {
    gpu += p.num_gpu > 0;
    have += sharing ? is_sharing(p) : p.num_gpu > 1;
    eligible += whole1(p);
  }
  if (donors.empty())
    return Error{std::string("mix '") + (sharing ? "sharing" : "multigpu") + "' needs " +
                 (sharing ? "sharing" : "multi-GPU") + " pods in the trace"};
  const double prob = conversion(share, have, gpu, eligible);
  for (TracePod& p : out) {
    if (!whole1(p) || draw(rng) >= prob) continue;
    const TracePod& d = *donors[rng() % donors.size()];
    if (sharing) {
      p.gpu_milli = d.gpu_milli;
    } else {
      const std::string name = p.name;
      p = d;
      p.name = name;
    }
  }
  return true;
}

// `share` of the GPU pods may use one GPU model only, drawn among the models whose largest node
// can hold the pod: by GPU count (the pinned demand per GPU is even), or uniformly (the small
// models are pinned far more per GPU than the large ones: scarce models).
void constrain(std::vector<TracePod>& out, const std::vector<TraceNode>& nodes, double share,
               bool uniform, std::mt19937_64& rng) {
  std::map<std::string, int64_t> gpus;
  std::map<std::string, const TraceNode*> largest;
  for (const TraceNode& n : nodes) {
    if (n.gpus == 0) continue;
    gpus[n.model] += n.gpus;
    const TraceNode*& l = largest[n.model];
    if (!l || n.gpus > l->gpus || (n.gpus == l->gpus && n.cpu_milli > l->cpu_milli)) l = &n;
  }
  int64_t gpu = 0, have = 0;
  for (const TracePod& p : out) {
    gpu += p.num_gpu > 0;
    have += p.num_gpu > 0 && !p.gpu_spec.empty();
  }
  const double prob = conversion(share, have, gpu, gpu - have);
  for (TracePod& p : out) {
    if (p.num_gpu == 0 || !p.gpu_spec.empty() || draw(rng) >= prob) continue;
    auto holds = [&](const std::string& m) {
      const TraceNode& l = *largest[m];
      return l.gpus >= p.num_gpu && l.cpu_milli >= p.cpu_milli && l.memory_mib >= p.memory_mib;
    };
    int64_t total = 0;
    for (const auto& [m, g] : gpus)
      if (holds(m)) total += uniform ? 1 : g;
    if (total == 0) continue;
    auto pick = static_cast<int64_t>(rng() % static_cast<uint64_t>(total));
    for (const auto& [m, g] : gpus) {
      if (!holds(m)) continue;
      const int64_t weight = uniform ? 1 : g;
      if (pick < weight) {
        p.gpu_spec = {m};
        break;
      }
      pick -= weight;
    }
  }
}

// Clones of the trace's CPU-only pods are appended until `share` of the pods are CPU-only.
Result<bool> add_cpu(std::vector<TracePod>& out, const std::vector<TracePod>& original,
                     double share, std::mt19937_64& rng) {
  std::vector<const TracePod*> donors;
  for (const TracePod& p : original)
    if (p.num_gpu == 0) donors.push_back(&p);
  if (donors.empty()) return Error{"mix 'cpu' needs CPU-only pods in the trace"};
  int64_t have = 0;
  for (const TracePod& p : out) have += p.num_gpu == 0;
  const double n = static_cast<double>(out.size());
  const auto add = static_cast<int64_t>(
      std::llround(std::max(0.0, (share * n - static_cast<double>(have)) / (1 - share))));
  for (int64_t i = 0; i < add; ++i) {
    TracePod p = *donors[rng() % donors.size()];
    p.name += "-cpu" + std::to_string(i);
    out.push_back(std::move(p));
  }
  return true;
}

Result<bool> apply_family(std::vector<TracePod>& out, const std::vector<TracePod>& original,
                          const std::vector<TraceNode>& nodes, const std::string& part,
                          std::mt19937_64& rng) {
  const std::string spec = aliases().count(part) ? aliases().at(part) : part;
  const auto colon = spec.find(':');
  const std::string family = spec.substr(0, colon);
  const Family* f = nullptr;
  for (const Family& k : kFamilies)
    if (family == k.name) f = &k;
  if (f == nullptr || colon == std::string::npos)
    return Error{"unknown mix '" + part +
                 "' (default, sharing, multigpu, constrained, cpuheavy, or FAMILY:SHARE with "
                 "FAMILY sharing, multigpu, gpuspec, gpuspecuniform, cpu; join with +)"};
  double share = -1;
  try {
    size_t used = 0;
    share = std::stod(spec.substr(colon + 1), &used);
    if (used != spec.size() - colon - 1) share = -1;
  } catch (const std::logic_error&) {
  }
  if (!(share >= 0 && share <= f->max_share))
    return Error{"mix '" + part + "': the share must be a number in 0.." +
                 std::to_string(f->max_share).substr(0, 3)};
  if (family == "sharing" || family == "multigpu")
    return convert(out, original, share, family == "sharing", rng);
  if (family == "gpuspec" || family == "gpuspecuniform") {
    constrain(out, nodes, share, family == "gpuspecuniform", rng);
    return true;
  }
  return add_cpu(out, original, share, rng);
}

}  // namespace

const std::vector<std::string>& mix_names() {
  static const std::vector<std::string> names = {"default", "sharing", "multigpu", "constrained",
                                                 "cpuheavy"};
  return names;
}

Result<std::vector<TracePod>> apply_mix(const std::vector<TracePod>& pods,
                                        const std::vector<TraceNode>& nodes,
                                        const std::string& mix) {
  std::mt19937_64 rng(kMixSeed);
  std::vector<TracePod> out = pods;
  if (mix == "default") return out;
  size_t start = 0;
  while (start <= mix.size()) {
    const size_t plus = std::min(mix.find('+', start), mix.size());
    auto r = apply_family(out, pods, nodes, mix.substr(start, plus - start), rng);
    if (!r) return Error{r.error()};
    start = plus + 1;
  }
  return out;
}

}  // namespace sluice::sim::fgd
