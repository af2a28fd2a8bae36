#pragma once
// Figures of one simulation run, as JSON (`--report`) and as a human table. Same run -> the same
// figures, byte for byte: everything is computed in trace or name order, and the JSON holds
// nothing that depends on the host (no wall-clock time).
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/model/config.h"
#include "sim/simulator.h"

namespace sluice::sim {

// Nanoseconds per second, for figures computed in double.
inline constexpr double kNs = 1e9;

// Seconds in a short human unit: 42s, 12.5m, 3.2h.
std::string short_dur(double s);

// Wait (first start - submit) over started jobs, completion time (end - submit) over finished
// jobs; seconds. Percentiles are nearest-rank.
struct JobStats {
  int64_t jobs = 0;  // submitted and accepted
  int64_t started = 0;
  int64_t finished = 0;
  double wait_mean_s = 0, wait_p50_s = 0, wait_p99_s = 0, wait_max_s = 0;
  double jct_mean_s = 0, jct_p50_s = 0, jct_p99_s = 0;
  double gpu_hours = 0;  // allocated GPU time, interrupted runs included
  int64_t preemptions = 0;
  double lost_gpu_hours = 0;  // GPU time of runs that preemptions threw away
  // Jobs with a deadline (TraceJob::complete_by_ns), and those that finished by it.
  int64_t deadline_jobs = 0;
  int64_t deadline_met = 0;
  // Utility (TraceJob::utility) over the jobs with one: the sum of their full values (each
  // one's first), of what they earned (earned_value()), and how many have more than one step
  // (soft jobs: the report shows the utility only when there are some).
  int64_t value_full = 0;
  int64_t value_earned = 0;
  int64_t soft_jobs = 0;
  // Wait quantiles for the CDF of the HTML report (not in the JSON): wait_q[i] = nearest-rank
  // percentile i, i = 0..100 (empty when nothing started).
  std::vector<double> wait_q;
};

struct QueueFigures {
  JobStats stats;
  double nominal_gpus = 0;
  double share_over_entitlement = 0;  // (its GPU-hours / all) / (its nominal / all nominal)
};

struct ReportInputs {
  std::string trace_format;
  std::string trace;  // file name or the synthetic spec
  uint64_t seed = 0;
  int64_t rows = 0;                           // rows read, good and bad
  int64_t bad_rows = 0;                       // skipped with --skip-bad-rows
  std::vector<std::string> bad_row_examples;  // the first few of them, "file:line: why"
  std::string variant;  // --variant spec; "" = the trace as read (not in the JSON then)
};

// Accuracy of start predictions (SimOptions::predict_every), over the jobs predicted at their
// arrival (all of them waited: a job that started in its arrival's cycle is not predicted).
// Error = |predicted start - actual first start|, seconds; a job the replay did not start, or
// that never started, counts as `unpredicted` and is left out of the error figures.
struct PredictionFigures {
  int64_t predicted = 0;
  int64_t unpredicted = 0;
  double abs_error_p50_s = 0, abs_error_p90_s = 0, abs_error_mean_s = 0;
  double wait_p50_s = 0;  // actual wait of the predicted jobs, for scale
  // Share whose error is within 10% of the actual wait (or within 1 s).
  double within_10pct = 0;
  double early_share = 0;  // share predicted to start earlier than they did
};

struct Figures {
  ReportInputs inputs;
  PredictionFigures prediction;  // all zero without predictions
  int64_t capacity_gpus = 0;
  int64_t jobs = 0;
  int64_t rejected = 0;       // refused by submit()
  int64_t never_started = 0;  // accepted but never admitted (could never fit, or left at the end)
  double busy_span_s = 0;     // first arrival to last completion
  double utilisation = 0;     // allocated GPU-time / (capacity x busy span)
  double gpu_hours = 0;
  double max_wait_s = 0;
  double jain_fairness = 1;  // Jain's index over queues with nominal GPU quota of share/entitlement
  // Time average, over the moments when at least two queues wait, of Jain's index of
  // usage / nominal among the waiting queues (SimResult::jain_contended_weighted_s); 1 if never.
  double jain_fairness_contended = 1;
  double contended_s = 0;
  JobStats overall;
  std::map<std::string, JobStats> by_priority_class;  // "none" for jobs without a class
  std::map<std::string, QueueFigures> by_queue;       // ClusterQueue name
  std::map<std::string, int32_t> class_value;         // priority value per class name
  SimTotals sim;                                      // the run's counters
};

// "12 of 16 met (75.0%)", and with soft jobs ", utility 140 of 160 (87.5%)"; "" without
// deadlines.
std::string deadline_summary(const JobStats& s);

// Over every node pool of a run (all zero without pools).
struct AutoscaleSummary {
  double node_hours = 0;
  double cost = 0;
  int32_t peak_nodes = 0;       // sum of the pools' peaks
  double paid_utilisation = 0;  // allocated GPU-hours / GPU-hours of the nodes paid for
};
AutoscaleSummary autoscale_summary(const Figures& f);
// j["autoscaling"] (report_pools.cc), only when the run had node pools.
void add_autoscale_json(const Figures& f, nlohmann::json& j);
// The autoscaling lines of the table; "" without pools.
std::string autoscale_table(const Figures& f);

Figures compute_figures(const SimResult& result, const Config& config, const ReportInputs& in);
nlohmann::json to_json(const Figures& f);
// The human table for stdout.
std::string to_table(const Figures& f);

}  // namespace sluice::sim
