#pragma once
// A job: what a user asks for. Pods of a job form a gang: all are placed or none.
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/model/job_exec.h"
#include "core/model/node_affinity.h"
#include "core/model/resources.h"
#include "core/model/shared_box.h"

namespace sluice {

using TimeNs = int64_t;  // nanoseconds (time points: since the epoch of the caller's clock)
inline constexpr TimeNs kNsPerSec = 1'000'000'000;
// The longest duration read from input (walltimes, grace periods, queue and policy durations;
// deadlines: kMaxDeadlineAheadNs): 10 years, so a time point plus a few durations stays far
// inside int64 nanoseconds (a walltime of 100,000 days would overflow start + walltime).
inline constexpr TimeNs kMaxDurationNs = 10LL * 366 * 24 * 3600 * kNsPerSec;
// The latest time point read from input as seconds since 1970 (a budget's anchor): 2200-01-01.
inline constexpr TimeNs kMaxTimePointNs = 7'258'118'400LL * kNsPerSec;

struct PodSet {
  std::string name = "main";
  int32_t count = 1;  // pods in this set
  // Kueue's partial admission (minCount; a batch Job's kueue.x-k8s.io/job-min-parallelism):
  // when the job fits neither whole nor by preemption, it may start with fewer pods of this set,
  // down to min_count (docs/scheduling.md, "Partial admission"). 0: always `count` pods.
  int32_t min_count = 0;
  // Per-pod requests in canonical units. requests[kGpu] == gpus * gpu_milli.
  ResourceVec requests;
  int32_t gpus = 0;          // GPU devices per pod
  int32_t gpu_milli = 1000;  // per device; < 1000 only with gpus == 1 (a shared fraction)
  // nodeSelector, required node affinity and tolerations of its pods (Kubernetes kinds);
  // null: none. Shared: copies of a job do not copy it.
  std::shared_ptr<const NodeAffinity> node;
  // What its pods run where it differs from the job's (job_exec.h; not read by the core).
  const PodSetExec& exec() const { return exec_.get(); }
  PodSetExec& exec_mut() { return exec_.mut(); }
  SharedBox<PodSetExec> exec_;
  // Indexed completion within the set (a JobSet's Indexed child Jobs): > 0: the set's pods form
  // child jobs of this many pods each, and a pod's JOB_COMPLETION_INDEX is its index in its
  // child job. 0: none.
  int32_t indexed_group = 0;
  // At most this many of the set's pods on one node (Slurm's `-N`: 1, each pod a node of its
  // own; spec.maxPodsPerNode). 0: no limit.
  int32_t max_per_node = 0;
};

// Slices of a gang (Kueue's podset-slice annotations): its pods, pod set by pod set in index
// order, form consecutive groups of `size` pods, each inside one domain of `level`.
struct TopologySlice {
  int32_t level = 0;
  int32_t size = 1;
  bool operator==(const TopologySlice&) const = default;
};

// Whole-gang topology: all pods inside one domain of `level` (required) or in as few domains of
// it as possible (preferred: that level, then each coarser level, then spread). level indexes
// Cluster::levels; levels.size() means "node". Slices, coarsest first, each size a multiple of
// the next one's, hold whatever the level allows (level -1: anywhere, slices only).
struct TopologyRequest {
  int32_t level = -1;  // -1: none
  bool required = false;
  std::vector<TopologySlice> slices;
  bool operator==(const TopologyRequest&) const = default;
};

// A smaller shape a job accepts after waiting (fallback tier): `pods` pods of `gpus` whole GPUs
// each instead of its one pod set's count and GPUs. CPU and memory per pod scale with the GPUs
// per pod unless given (-1: scaled).
struct FallbackShape {
  int32_t pods = 1;
  int32_t gpus = 1;
  int64_t cpu_milli = -1;
  int64_t memory_mib = -1;
  bool operator==(const FallbackShape&) const = default;
};

// A job's own fallback tier (spec.fallback); overrides its ClusterQueue's spec.sluice.fallback.
struct FallbackRequest {
  TimeNs after_ns = -1;               // -1: the queue's; 0: every flavor and shape at once
  std::vector<FallbackShape> shapes;  // tried in order, after the original shape
};

enum class GpuLocality : uint8_t {
  kPreferred,      // a multi-GPU pod gets GPUs in one NVLink domain / NUMA / PCIe switch if it can
  kRequireNvlink,  // ... and must, or it does not fit on that node
};

struct Job {
  JobId id = 0;
  std::string name;
  std::string namespace_;
  std::string queue;  // LocalQueue name (in namespace_)
  // The LocalQueue's index, resolved once by the job's reader (Config::local_queue_of checks
  // that it is still that queue); -1: not resolved yet.
  int32_t local_queue = -1;
  int32_t priority = 0;  // resolved value of its priority class (exec().priority_class)
  bool preemptible = true;
  bool interactive = false;
  // A Kubernetes kind's metadata.name (not generateName): unique among the unfinished jobs of
  // its namespace, as the API server keeps it (the server refuses a second one, 409).
  bool unique_name = false;
  // spec.rightSize: auto (`sluice run --right-size auto`; the annotation sluice.dev/right-size on
  // Kubernetes kinds): the server may place a recurring job on the smallest GPU model or MIG
  // slice its measured history fits (core/model/right_size.h; docs/scheduling.md). The
  // decision and its history live in the server's record, not here.
  bool right_size = false;
  GpuLocality gpu_locality = GpuLocality::kPreferred;
  std::vector<PodSet> pod_sets;
  std::vector<std::string> allowed_models;  // empty: any GPU model
  TopologyRequest topology;
  TimeNs walltime_ns = 0;          // estimate; 0 = unknown (the queue's default applies)
  TimeNs checkpoint_grace_ns = 0;  // time to checkpoint after the preemption signal
  TimeNs submit_ns = 0;
  // Deadline (spec.completeBy / spec.completeWithin; core/model/deadline.h): the time by which
  // the job should have finished, on the scheduler's clock; 0 = none. completeWithin is kept in
  // complete_within_ns until submission fixes submit_ns, then resolve_deadline() turns it into
  // complete_by_ns (and clears it).
  TimeNs complete_by_ns = 0;
  TimeNs complete_within_ns = 0;
  FallbackRequest fallback;
  // What its pods run and who runs them (job_exec.h): the server's, its readers' and the
  // agents'; the core's decisions never read it. Shared by copies of the job until changed.
  const JobExec& exec() const { return exec_.get(); }
  JobExec& exec_mut() { return exec_.mut(); }
  SharedBox<JobExec> exec_;

  // Sum of all pods' requests.
  ResourceVec total_requests() const;
  int32_t pod_count() const;
};

// `job` with its one pod set replaced by `shape` (CPU and memory per pod scaled with the GPUs
// per pod where the shape does not set them).
Job reshaped(const Job& job, const FallbackShape& shape);

// Whether some pod set may run with fewer pods than its count (partial admission).
inline bool partially_admissible(const Job& job) {
  for (const auto& ps : job.pod_sets)
    if (ps.min_count > 0 && ps.min_count < ps.count) return true;
  return false;
}

// `job` with pod set i running counts[i] pods (requests per pod unchanged); counts has one
// entry per pod set.
Job with_counts(const Job& job, const std::vector<int32_t>& counts);

// Whether some pod set's nodeSelector or required affinity narrows the nodes it may use.
inline bool constrains_nodes(const Job& job) {
  for (const auto& ps : job.pod_sets)
    if (ps.node && ps.node->constrains_nodes()) return true;
  return false;
}

}  // namespace sluice
