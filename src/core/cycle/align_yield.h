#pragma once
// End alignment yields to small jobs (SchedulerPolicy spec.alignEndsYieldToSmall,
// docs/placement.md): aligned nodes drain together and free whole nodes for multi-GPU jobs,
// which one-GPU jobs pay for, since a GPU that would have come free alone comes free with seven
// others, often for a gang. With the knob on, the job that has waited the longest among the
// pending jobs of the highest priority pending decides: while it has a pod of more than one GPU
// a placement aligns; while it asks for at most one GPU per pod, the GPU scoring alone places
// and GPUs come free one at a time, as the job waiting the longest needs them.
#include <cstdint>

#include "core/model/job.h"

namespace sluice {

// Whether every pod of `job` asks for at most one GPU (a single GPU coming free serves it).
inline bool at_most_one_gpu_per_pod(const Job& job) {
  for (const PodSet& ps : job.pod_sets)
    if (ps.gpus > 1) return false;
  return true;
}

// Offered pending jobs one by one, keeps the one alignment yields to: the highest priority,
// then the earliest submit, then the lowest id.
class AlignYield {
 public:
  void offer(const Job& job) {
    if (!longest_ || job.priority > longest_->priority ||
        (job.priority == longest_->priority &&
         (job.submit_ns < longest_->submit_ns ||
          (job.submit_ns == longest_->submit_ns && job.id < longest_->id))))
      longest_ = &job;
  }
  // Whether placements align: nobody pending, or the longest waiting has a multi-GPU pod.
  bool aligns() const { return !longest_ || !at_most_one_gpu_per_pod(*longest_); }
  const Job* longest() const { return longest_; }

 private:
  const Job* longest_ = nullptr;
};

}  // namespace sluice
