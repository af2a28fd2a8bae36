#pragma once
// Predicted start times (Slurm's `squeue --start`): the scheduler's current state is replayed
// forward on a virtual clock with no new arrivals. Running jobs end at start + walltime, each
// admitted job runs for its walltime, and the same core decides every cycle (house rule 2), so
// a prediction is what the scheduler would do if nothing else arrived and every estimate held.
//
// A copy of the state is built in a fresh Scheduler (restore_running() for running jobs,
// submit() for pending ones); the live one is not touched. What the copy does not carry: the
// queues' fairness debt (it starts at zero) and GPU-hour budgets.
#include <cstdint>
#include <memory>
#include <vector>

#include "core/cycle/scheduler.h"

namespace sluice::sim {

struct PredictOptions {
  // Walltime assumed for a job that has none and whose queue has no default (1 h).
  TimeNs unknown_walltime_ns = 3600 * kNsPerSec;
  // Bound on the forward replay's cycles; jobs not started by then get no prediction.
  int64_t max_cycles = 100'000;
};

struct PredictedStart {
  JobId job = 0;
  TimeNs start_ns = -1;  // -1: not started within the replay (never fits, or past the bound)
};

// Predicted starts of `wanted` (pending job ids of `sched`), in that order. The replay stops
// once every wanted job started. Deterministic; a job id not pending gets -1.
std::vector<PredictedStart> predict_starts(const std::shared_ptr<const Config>& config,
                                           const Scheduler& sched, TimeNs now,
                                           const std::vector<JobId>& wanted,
                                           const PredictOptions& options = {});

}  // namespace sluice::sim
