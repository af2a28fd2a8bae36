#pragma once
// What a scheduling cycle reads of the jobs: the pending and running records the Scheduler
// keeps, and the packed victim records the preemptor scans. The cycle's parts (the flavor
// assigner, the preemptor, the reservation) take these as input; none reaches into Scheduler.
#include <cstdint>
#include <limits>
#include <vector>

#include "core/decision/decisions.h"
#include "core/model/job.h"
#include "core/place/cluster_alloc.h"
#include "core/quota/quota_tree.h"

namespace sluice {

// What a cycle's walk reads of a pending job comes first: these fields, then the job's own
// scheduling fields up to its fallback tier (the walk prefetches those lines only: pending_hot_end;
// a Job's later fields, what its pods run and who runs them, are not read by the cycle).
struct PendingRecord {
  QueueId queue = 0;
  int32_t budget = -1;  // index into Config::budgets of its namespace; -1: none
  double key = 0;       // queue_key()
  // What decides whether it can be placed, interned on insertion: two pending jobs have the
  // same `shape` exactly when they ask for the same pods, devices, models and topology.
  uint64_t shape = 0;
  // Whether a failure of its (queue, shape) decides it: no fallback tier or shapes (theirs
  // depend on how long it waited) and no budget that may reject it. Fixed on insertion.
  bool by_shape = true;
  Job job;
};
// The end of what a walk over pending jobs reads of a record: the job's id, priority, pod sets,
// topology, times, deadline and fallback tier, in the Job's declaration order.
inline const char* pending_hot_end(const PendingRecord& p) {
  return reinterpret_cast<const char*>(&p.job.fallback + 1);
}

struct RunningRecord {
  Job job;  // as it runs: a fallback shape or best-effort priority already applied
  Admission admission;
  TimeNs start_ns = 0;
  TimeNs checkpoint_ns = 0;  // last checkpoint the job reported (start when none)
  // What the job asked for, restored when it goes back to pending: its pod sets when it runs
  // with a fallback shape (else empty), its priority and preemptibility when best-effort.
  std::vector<PodSet> requested_pod_sets;
  int32_t requested_priority = 0;
  bool requested_preemptible = true;
};

// What the victim search reads of a running job, packed: the search scans the queues a
// preemptor may take from, and a contiguous array of these keeps that scan off the scattered
// RunningRecords.
struct VictimRecord {
  JobId id = 0;
  TimeNs start_ns = 0;
  TimeNs checkpoint_ns = 0;
  TimeNs submit_ns = 0;
  // Its deadline less its walltime (its slack at time t is this - t); INT64_MAX without a
  // deadline: the victim choice prefers jobs with the most slack (deadline_term.h).
  TimeNs latest_start_ns = 0;
  int64_t gpu_milli = 0;       // the GPU column of its whole request (all pods)
  int32_t priority = 0;        // as it runs (best-effort work has the best-effort priority)
  NodeId node = -1;            // its node when it has one pod, else -1
  int64_t node_gpu_milli = 0;  // with one pod: the GPU milli it holds on that node
  // The (flavor, resource) pairs of its quota usage as bits (usage_bit()), so that a reclaim
  // scan tells whether it runs on borrowed quota without reading the RunningRecord;
  // kUsageInexact (a flavor past the first four) means: read r->admission.usage.
  static constexpr uint64_t kUsageInexact = ~uint64_t{0};
  uint64_t usage_bits = 0;
  const RunningRecord* r = nullptr;
};
// The bit of a (flavor, resource) pair in VictimRecord::usage_bits; -1 past 64 bits.
inline int usage_bit(FlavorId flavor, ResourceId resource) {
  const int bit = static_cast<int>(flavor) * kMaxResources + static_cast<int>(resource);
  return flavor >= 0 && bit < 64 ? bit : -1;
}

// A running job's capacity and quota usage taken out of / put back into working copies (exact
// inverses on integers).
void release_in(const RunningRecord& r, QuotaTree& quota, ClusterAlloc& alloc);
void commit_in(const RunningRecord& r, QuotaTree& quota, ClusterAlloc& alloc);

}  // namespace sluice
