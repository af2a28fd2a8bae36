#pragma once
// `sluice sim run`: load a configuration, read a trace, simulate it, print a table and write
// the JSON report. run_sim() is the whole command without CLI11, so tests can call it.
#include <CLI/CLI.hpp>
#include <cstdint>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "sim/report.h"
#include "sim/trace_synthetic.h"

namespace sluice::sim {

struct RunArgs {
  std::vector<std::string> config;   // queue configuration files
  std::vector<std::string> cluster;  // cluster files
  std::string trace;                 // file (philly-chronus, sluice-events)
  std::string trace_format = "philly-chronus";
  std::string openb_queue = "openb";  // openb: the LocalQueue of every pod
  std::string report;                 // JSON report path; "" = none
  std::string html;      // HTML report path; "" = none (records the time series when set)
  std::string jobs_out;  // sim run: per-job CSV path (--jobs-out); "" = none
  bool skip_bad_rows = false;
  bool quiet = false;  // no table
  bool check_invariants = false;
  uint64_t seed = 1;
  // Trace variants (sim/trace_variant.h): run takes at most one, compare runs every config on
  // each; empty: the trace as read.
  std::vector<std::string> variants;
  int64_t predict_every = 0;      // SimOptions::predict_every
  double predict_arrivals_s = 0;  // SimOptions::predict_arrival_window_ns, seconds
  double cycle_interval_s = 0;
  SyntheticOptions synthetic;
  int32_t node_failures = 0;  // random node failures, spread over the arrival span
  double repair_time_s = 3600;
  // --right-size auto: every job opts in to right-sizing (SimOptions::right_size);
  // --right-size-headroom: percent over the history's peak.
  std::string right_size = "off";
  double right_size_headroom_pct = 20;
  // --checkpoint-every (seconds; 0: off) and --checkpoint-classes (SimOptions::checkpoint_*).
  double checkpoint_every_s = 0;
  std::vector<std::string> checkpoint_classes;
};

struct RunOutcome {
  int rc = 0;  // 0 ok, 1 bad input (errors written to `err`), 2 invariant violated
  // With --skip-bad-rows and bad rows: how many were skipped and the first few, for stderr
  // (run_sim prints it; compare_sim once per distinct text); "" when none were.
  std::string skipped_warning;
  Figures figures;
  double wall_s = 0;  // host time of the simulation loop (not in the JSON report)
};

// Loads the configuration (all --config and --cluster files together), reads the trace and
// simulates it.
RunOutcome run_once(const RunArgs& args, std::ostream& err);

// `sluice sim run`: run_once, then the JSON report and the table. Returns the exit status.
int run_sim(const RunArgs& args, std::ostream& out, std::ostream& err);

// `sluice sim compare`: run_once per --config file (each one variant, with the shared
// --cluster files), and per trace variant when --variant is given (variant-major); a Markdown
// table with one row per run; the report is a JSON object of the per-run reports keyed by file
// (by "variant file" with --variant).
int compare_sim(const RunArgs& args, std::ostream& out, std::ostream& err);
// Rows are (config file, outcome); an outcome whose inputs name a variant adds a variant column.
std::string compare_table(const std::vector<std::pair<std::string, RunOutcome>>& rows);

void register_run_command(CLI::App& sim_subcommand);

}  // namespace sluice::sim
