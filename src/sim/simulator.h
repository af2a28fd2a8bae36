#pragma once
// The discrete-event simulator: a virtual clock, one event queue, and the very same Scheduler
// the daemon drives (house rule 2). Events at one time are applied as a batch (arrivals submit,
// completions finish, node failures requeue the jobs they hit), then one scheduling cycle runs
// at that time and its admissions start jobs, each completing at start + its true run time.
// Deterministic: events are ordered by (time, sequence number), the Scheduler is deterministic,
// and nothing reads a clock or a hash-map order.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/model/config.h"
#include "sim/autoscale.h"
#include "sim/trace.h"

namespace sluice::sim {

struct NodeFailure {
  NodeId node = 0;
  TimeNs down_ns = 0;
  TimeNs up_ns = 0;  // recovery; <= down_ns: never recovers
};

struct SimOptions {
  // 0: a cycle after every batch of events. Otherwise at most one cycle per interval of virtual
  // time (events in between wait for the next cycle).
  TimeNs cycle_interval_ns = 0;
  std::vector<NodeFailure> failures;
  bool check_invariants = false;  // Scheduler::check_invariants() after every cycle (slow)
  // Record the time series (allocated GPUs, pending jobs per class) for the HTML report; off by
  // default: it costs memory proportional to the number of event batches.
  bool record_series = false;
  // Start predictions (core/cycle/predict.h): at the arrival of every Nth trace job (trace index
  // multiple of N) that is still pending after its arrival's cycle, predict its start by
  // replaying the state forward; 0: off. Costly: one forward replay per prediction.
  int64_t predict_every = 0;
  // Expected arrivals in the predictions (PredictOptions::arrival_window_ns): the trace jobs that
  // arrived in the last window arrive again in the forecast, up to the horizon. 0: none.
  TimeNs predict_arrival_window_ns = 0;
  TimeNs predict_arrival_horizon_ns = 24 * 3600 * kNsPerSec;
  uint64_t seed = 1;  // the node pools' spot reclaims (sim/autoscale.h)
  // Right-sizing (sim/right_size.h): every job opts in (spec.rightSize: auto); its GPU memory
  // comes from the documented model, seeded by `seed`. Off: no memory is drawn at all.
  bool right_size = false;
  double right_size_headroom = 0.2;
  // Checkpoints (docs/simulator.md, "Checkpoints"): 0: off, every interruption (preemption,
  // node failure, spot reclaim, consolidation move) throws the run away. Otherwise a job of
  // `checkpoint_classes` (empty: every job; "none": jobs without a class) saves its work every
  // this much run time, at no cost; an interrupted run keeps the work up to its last checkpoint
  // and the job restarts with only the rest to run (its walltime estimate cut by as much).
  TimeNs checkpoint_every_ns = 0;
  std::vector<std::string> checkpoint_classes;
};

// Step functions of the run, one point per batch of events whose values changed: from
// `t_ns[i]` until the next point, `used_gpu_milli[i]` was allocated and
// `pending[i * classes.size() + c]` jobs of class `classes[c]` were pending.
struct Series {
  std::vector<std::string> classes;  // sorted names ("none" for jobs without a class)
  std::vector<TimeNs> t_ns;
  std::vector<int64_t> used_gpu_milli;
  std::vector<int32_t> pending;
};

// What happened to one trace job.
struct JobOutcome {
  JobId id = 0;
  QueueId queue = -1;  // ClusterQueue; -1 when the submission was refused before resolving
  std::string priority_class;
  int32_t priority = 0;
  int64_t gpu_milli = 0;  // whole job
  TimeNs submit_ns = 0;
  TimeNs first_start_ns = -1;   // -1: never started
  TimeNs end_ns = -1;           // -1: never finished
  TimeNs run_ns = 0;            // time spent running, interrupted spans included
  int32_t starts = 0;           // > 1 after a node failure or a preemption sent it back
  int32_t preemptions = 0;      // times a scheduling cycle evicted it
  TimeNs preempted_run_ns = 0;  // run time its preemptions threw away (since the last checkpoint)
  TimeNs kept_run_ns = 0;       // run time its interruptions kept (checkpoints; 0 without)
  bool rejected = false;        // submit() refused it (pending cap, invalid, ...) or an interactive
                                // job timed out
  std::string reject_reason;
  TimeNs complete_by_ns = 0;       // deadline (TraceJob::complete_by_ns); 0 = none
  std::vector<ValueStep> utility;  // TraceJob::utility
  bool predicted = false;          // a start prediction was made at its arrival
  TimeNs predicted_start_ns = -1;  // the prediction; -1: the replay did not start it
};

// What a run counted, without the per-job outcomes (what a report keeps of a run).
struct SimTotals {
  int64_t events = 0;  // events popped
  int64_t cycles = 0;
  int64_t incremental_cycles = 0;
  int64_t evaluated = 0;    // jobs the cycles actually evaluated
  int64_t requeued = 0;     // running jobs sent back by node failures
  int64_t preemptions = 0;  // running jobs evicted by scheduling cycles
  TimeNs first_ns = 0;      // first arrival
  TimeNs last_ns = 0;       // last completion (or last event when nothing ran)
  int64_t capacity_gpu_milli = 0;
  // Fairness among contended queues over time: while at least two queues with a nominal GPU
  // quota have pending jobs, Jain's index of their GPU usage / nominal quota, weighted by time.
  double jain_contended_weighted_s = 0;  // sum of index x seconds
  double contended_s = 0;                // seconds with >= 2 contended queues
  std::string invariant_failure;         // first failed invariant check, when enabled
  // A hash of every cycle's decisions in order (time; admissions with queue, flavors, pod
  // counts and placements to the GPU; victims; rejections; pending jobs listed with their reason
  // code; the reservation): equal digests, same decisions. For checking that a change to the
  // scheduler's speed left its decisions alone (docs/simulator.md).
  uint64_t decision_digest = 0;
  Series series;  // only with SimOptions::record_series
  // Node pools (Config::node_pools; empty without): their node-hours, cost and node counts.
  std::vector<PoolFigures> pools;
  int64_t spot_requeued = 0;  // running jobs sent back by spot reclaims (not failures)
  // Right-sizing (SimOptions::right_size): jobs placed on a smaller shape than requested, and
  // those of them that ran out of GPU memory there and were retried whole.
  bool right_size_on = false;
  int64_t right_sized = 0;
  int64_t right_size_retries = 0;
  // Checkpoints (SimOptions::checkpoint_every_ns): the interval, the jobs that checkpoint, the
  // interrupted runs (any cause) and those that kept work, and the GPU time (milli-GPU x ns)
  // the interruptions kept and lost (since the last checkpoint; preemptions, failures, spot
  // reclaims and moves together).
  TimeNs checkpoint_every_ns = 0;
  int64_t checkpointing_jobs = 0;
  int64_t interrupted_runs = 0;
  int64_t resumed_runs = 0;
  double kept_gpu_milli_ns = 0;
  double lost_gpu_milli_ns = 0;
};

struct SimResult : SimTotals {
  std::vector<JobOutcome> jobs;  // trace order
};

SimResult simulate(std::shared_ptr<const Config> config, const std::vector<TraceJob>& jobs,
                   const SimOptions& options);

}  // namespace sluice::sim
