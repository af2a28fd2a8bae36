#include "sim/trace.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>

namespace sluice::sim {

void set_gpu_shape(Job& job, int32_t gpus, int32_t gpus_per_node) {
  int32_t pods = 1;
  if (gpus > gpus_per_node) {
    // Fewest equal pods that each fit a node; bounded by `gpus` (1-GPU pods always divide).
    pods = (gpus + gpus_per_node - 1) / gpus_per_node;
    while (gpus % pods != 0) ++pods;
  }
  PodSet ps;
  ps.name = "main";
  ps.count = pods;
  ps.gpus = gpus / pods;
  ps.gpu_milli = 1000;
  ps.requests[kGpu] = int64_t{ps.gpus} * kMilliPerGpu;
  job.pod_sets = {ps};
}

int64_t earned_value(const std::vector<ValueStep>& utility, TimeNs submit_ns, TimeNs end_ns) {
  if (end_ns < 0) return 0;
  for (const ValueStep& step : utility)
    if (end_ns - submit_ns <= step.within_ns) return step.value;
  return 0;
}

int32_t max_gpus_per_node(const Config& config) {
  int32_t best = 1;
  for (const auto& n : config.cluster.nodes)
    best = std::max(best, static_cast<int32_t>(n.gpus.size()));
  return best;
}

namespace {

// Kept equal to the loader's built-in classes (docs/config.md, "Priority classes").
bool builtin_priority(const std::string& name, int32_t* value) {
  static const std::pair<const char*, int32_t> kBuiltin[] = {
      {"low", 100}, {"normal", 500}, {"medium", 500}, {"high", 1000}, {"critical", 10000}};
  for (const auto& [n, v] : kBuiltin)
    if (name == n) {
      *value = v;
      return true;
    }
  return false;
}

// A trace's job carries nothing aside but its priority class's name (job_exec.h): the jobs
// of one class share one JobExec, so that a trace of a million jobs holds a few of them.
void share_class_only(Job& j, std::map<std::string, SharedBox<JobExec>>& by_class) {
  JobExec only_class;
  only_class.priority_class = j.exec().priority_class;
  if (j.exec() != only_class) return;
  SharedBox<JobExec>& shared = by_class[only_class.priority_class];
  if (shared.empty()) shared = j.exec_;
  j.exec_ = shared;
}

}  // namespace

void check_against(TraceOutput& trace, const Config& config) {
  // The jobs kept are compacted in place (a second array of 100,000 jobs costs its pages).
  size_t kept = 0;
  std::map<std::string, SharedBox<JobExec>> by_class;
  for (size_t i = 0; i < trace.jobs.size(); ++i) {
    TraceJob& tj = trace.jobs[i];
    Job& j = tj.job;
    const auto lq = config.find_local_queue(j.namespace_, j.queue);
    if (!lq) {
      trace.errors.push_back(tj.where + ": unknown queue '" + j.queue + "' (no LocalQueue of " +
                             "that name in namespace '" + j.namespace_ + "')");
      continue;
    }
    if (j.exec().priority_class.empty())
      j.exec_mut().priority_class =
          config.cluster_queues[config.local_queues[*lq].cluster_queue].default_priority_class;
    if (const std::string& cls = j.exec().priority_class; !cls.empty()) {
      if (const auto* pc = config.find_priority_class(cls)) {
        j.priority = pc->value;
      } else if (!builtin_priority(cls, &j.priority)) {
        trace.errors.push_back(tj.where + ": unknown priority class '" + cls + "'");
        continue;
      }
      share_class_only(j, by_class);
    }
    if (kept != i) trace.jobs[kept] = std::move(tj);
    ++kept;
  }
  trace.jobs.erase(trace.jobs.begin() + static_cast<std::ptrdiff_t>(kept), trace.jobs.end());
}

std::string traces_dir(const std::string& repo_root) {
  if (const char* env = std::getenv("SLUICE_TRACES"); env && *env) return env;
  return (std::filesystem::path(repo_root) / ".." / "shared" / "traces")
      .lexically_normal()
      .string();
}

}  // namespace sluice::sim
