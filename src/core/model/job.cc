#include "core/model/job.h"

#include <algorithm>

namespace sluice {

ResourceVec Job::total_requests() const {
  ResourceVec total;
  for (const auto& ps : pod_sets) total += ps.requests.scaled(ps.count);
  return total;
}

int32_t Job::pod_count() const {
  int32_t n = 0;
  for (const auto& ps : pod_sets) n += ps.count;
  return n;
}

Job with_counts(const Job& job, const std::vector<int32_t>& counts) {
  Job out = job;
  for (size_t i = 0; i < out.pod_sets.size() && i < counts.size(); ++i)
    out.pod_sets[i].count = counts[i];
  return out;
}

Job reshaped(const Job& job, const FallbackShape& shape) {
  Job out = job;
  if (out.pod_sets.empty()) return out;
  PodSet& ps = out.pod_sets.front();
  // Per-pod CPU and memory follow the GPUs per pod (a pod with half the GPUs feeds half as many
  // of them); integer arithmetic, rounded down, as every quantity here.
  const int64_t from = std::max<int64_t>(1, ps.gpus);
  ps.requests[kCpu] =
      shape.cpu_milli >= 0 ? shape.cpu_milli : ps.requests[kCpu] * shape.gpus / from;
  ps.requests[kMemory] =
      shape.memory_mib >= 0 ? shape.memory_mib : ps.requests[kMemory] * shape.gpus / from;
  ps.count = shape.pods;
  ps.gpus = shape.gpus;
  ps.gpu_milli = 1000;
  ps.requests[kGpu] = static_cast<int64_t>(shape.gpus) * 1000;
  return out;
}

}  // namespace sluice
