#pragma once
// Predicted start times (Slurm's `squeue --start`): the scheduler's current state is replayed
// forward on a virtual clock with no new arrivals. Running jobs end at start + walltime, each
// admitted job runs for its walltime, and the same core decides every cycle (house rule 2), so
// a prediction is what the scheduler would do if nothing else arrived and every estimate held.
//
// Two steps, so that a daemon holds its state lock only for the first:
//   1. predict_input(): a copy of what the replay needs (running jobs where they run, pending
//      jobs, the queues' fairness debt, GPU-hour budgets, nodes that take no new pods). Cheap:
//      no cycle runs.
//   2. predict_starts(): a fresh Scheduler built from the copy, then cycles at `now` and at
//      each end time, until every wanted job started or a bound is reached (cycles, or the
//      caller's `stop`, e.g. a wall-clock budget: the core reads no clock).
// The simulator (`sim run --predict-every`) and the server (`sluice jobs --start`) both call
// these.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/cycle/scheduler.h"

namespace sluice {

struct PredictOptions {
  // Walltime assumed for a job that has none and whose queue has no default (1 h).
  TimeNs unknown_walltime_ns = 3600 * kNsPerSec;
  // Bound on the forward replay's cycles; jobs not started by then are kBeyondBound.
  int64_t max_cycles = 100'000;
  // Asked before every cycle after the first; true stops the replay (kBeyondBound for the jobs
  // left). The server passes a wall-clock budget here.
  std::function<bool()> stop;
  // Expected arrivals: the jobs submitted in the last `arrival_window_ns` before now
  // (PredictInput::recent) arrive again, shifted by one window, then by two, ... up to
  // `arrival_horizon_ns` after now: "the next minutes look like the last ones". 0: none (the
  // plain no-arrivals forecast, a lower bound when nothing ends early).
  TimeNs arrival_window_ns = 0;
  TimeNs arrival_horizon_ns = 0;
};

// The copy a prediction replays (step 1). Plain values: it outlives the scheduler's lock.
struct PredictInput {
  TimeNs now = 0;
  struct Running {
    Job job;  // as requested (restore_running() re-applies the admission's shape)
    Admission admission;
    TimeNs start_ns = 0;
    TimeNs checkpoint_ns = 0;
    int32_t preemptions = 0;
  };
  std::vector<Running> running;     // by id
  std::vector<Job> pending;         // by id
  std::vector<FairnessDebt> debts;  // per ClusterQueue
  RecentWaits waits;                // per class (fairness yield)
  std::vector<Scheduler::BudgetSnapshot> budgets;
  std::vector<NodeId> not_ready;  // nodes that take no new pods
  // Jobs submitted in [now - arrival_window, now), in any state, as submitted (by submit time,
  // then id): the caller's, since the scheduler forgets finished jobs. Empty: no arrivals.
  std::vector<Job> recent;
};

// Step 1, without `recent` (the caller adds it when it wants expected arrivals).
PredictInput predict_input(const Scheduler& sched, TimeNs now);

enum class PredictOutcome : uint8_t {
  kStarts,       // start_ns is set
  kNever,        // the replay ran out of work without starting it: with nothing else arriving
                 // it never starts (it fits no node, its queue can never admit it, ...)
  kBeyondBound,  // not started when the replay reached its bound (cycles or stop())
  kNotPending,   // not a pending job of the copy
};
const char* outcome_name(PredictOutcome o);

struct PredictedStart {
  JobId job = 0;
  TimeNs start_ns = -1;  // kStarts only
  PredictOutcome outcome = PredictOutcome::kNotPending;
};

struct Prediction {
  std::vector<PredictedStart> starts;  // in `wanted` order
  int64_t cycles = 0;                  // cycles the replay ran
  bool bounded = false;                // stopped by max_cycles or stop() with jobs left
  TimeNs horizon_ns = 0;               // the virtual time it reached
};

// Predicted starts of `wanted` (pending job ids of the copy), in that order (step 2). The
// replay stops once every wanted job started. Deterministic for a given input (stop() aside).
Prediction predict_starts(const std::shared_ptr<const Config>& config, const PredictInput& input,
                          const std::vector<JobId>& wanted, const PredictOptions& options = {});

// Both steps on a scheduler the caller holds still (the simulator).
Prediction predict_starts(const std::shared_ptr<const Config>& config, const Scheduler& sched,
                          TimeNs now, const std::vector<JobId>& wanted,
                          const PredictOptions& options = {});

// The walltime the replay gives a job: its own, else its queue's default, else the option's.
TimeNs predicted_walltime(const Config& config, const Job& job, const PredictOptions& options);

}  // namespace sluice
