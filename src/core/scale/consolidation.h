#pragma once
// Consolidation (a NodePool's `consolidation`, docs/autoscaling.md; Karpenter's idea): a ready
// pool node whose running jobs could all run now on the pool's other busy nodes is emptied
// (its jobs go back to pending, as a preemption sends them: each loses the work since its last
// checkpoint, from scratch where none was reported) and removed at once. Pure and
// deterministic, part of decide() (core/scale/autoscaler.h).
//
// The rule, per pool, at most once every `interval` (the pool "looks"), in this order:
//  1. Nothing moves while work waits that the pool's room could take: a pending gang listing
//     the pool's flavor with quota left there (the freed room would be raced for), or a pool
//     that grows in this decision.
//  2. A candidate node: ready, with pods, every job on it preemptible, started at least `after`
//     ago, not on MIG slices, all its pods on this pool's ready nodes (a gang moves whole: its
//     pods on other nodes move too).
//  3. Its jobs' pods fit now, first fit, on the pool's other busy ready nodes (never an empty
//     one, never a new one), latest expected end first, and only on a node whose own work is
//     expected to end no earlier than the moved job's restarted run (its walltime less what its
//     last checkpoint kept): moving a job never keeps another node up longer.
//  4. What the node would still cost (its expected remaining time x its GPUs) is at least the
//     GPU time the moves throw away.
//  5. Of the candidates left, the one with the longest expected remaining time, then the fewest
//     busy GPUs, then the least work lost, then the lowest node id (a total order).
// A job's expected end is its start plus its walltime; without a walltime, never (its node is
// worth emptying, but it moves only next to work of unknown end).
#include <cstdint>
#include <vector>

#include "core/model/config.h"

namespace sluice::scale {

struct ScaleInput;
struct ScaleDecision;

// One device a running pod uses: its index on the node and its share.
struct GpuUse {
  int16_t gpu = 0;
  int32_t milli = 1000;
  bool mig = false;  // a MIG slice: the device counts as taken; the job does not move
};

struct RunningPod {
  NodeId node = -1;
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  std::vector<GpuUse> gpus;
};

// A running job as consolidation sees it (ScaleInput::running).
struct RunningGang {
  JobId job = 0;
  bool preemptible = false;
  TimeNs start_ns = 0;
  TimeNs checkpoint_ns = 0;  // its last checkpoint (its start when none): what a move keeps
  TimeNs walltime_ns = 0;    // expected run time; 0: unknown
  int64_t gpu_milli = 0;     // whole gang
  std::vector<RunningPod> pods;
};

// One node to empty and remove now.
struct Consolidate {
  int32_t pool = 0;
  NodeId node = -1;
  std::vector<JobId> jobs;           // to send back to pending, ascending
  int64_t lost_gpu_milli_ns = 0;     // their work since their last checkpoints
  TimeNs expected_remaining_ns = 0;  // how long the node was expected to stay busy
};

// Adds the pools' consolidation to `out` (after scale-up and scale-down).
void consolidate(const ScaleInput& in, ScaleDecision& out);

}  // namespace sluice::scale
