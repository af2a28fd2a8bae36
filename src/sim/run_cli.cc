#include "sim/run_cli.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <set>
#include <sstream>

#include "config/loader.h"
#include "sim/html.h"
#include "sim/report.h"
#include "sim/rng.h"
#include "sim/simulator.h"
#include "sim/trace_events.h"
#include "sim/trace_openb.h"
#include "sim/trace_philly.h"
#include "sim/trace_variant.h"

namespace sluice::sim {

namespace {

constexpr size_t kMaxErrorsShown = 20;
// Bad rows named in the skip warning and the report (the count covers the rest).
constexpr size_t kBadRowExamples = 5;

// A relative trace path that does not exist is also looked up in the traces directory
// ($SLUICE_TRACES, else ../shared/traces from the current directory, normally the repo root).
std::string resolve_trace(const std::string& path) {
  namespace fs = std::filesystem;
  if (path.empty() || fs::exists(path) || fs::path(path).is_absolute()) return path;
  const fs::path alt = fs::path(traces_dir(".")) / path;
  return fs::exists(alt) ? alt.string() : path;
}

std::vector<NodeFailure> random_failures(const RunArgs& a, const Config& config,
                                         const std::vector<TraceJob>& jobs, Rng& rng) {
  std::vector<NodeFailure> out;
  if (a.node_failures <= 0 || config.cluster.nodes.empty() || jobs.empty()) return out;
  TimeNs lo = jobs.front().job.submit_ns, hi = lo;
  for (const auto& tj : jobs) {
    lo = std::min(lo, tj.job.submit_ns);
    hi = std::max(hi, tj.job.submit_ns);
  }
  const TimeNs repair = static_cast<TimeNs>(a.repair_time_s * 1e9);
  for (int32_t i = 0; i < a.node_failures; ++i) {
    NodeFailure f;
    f.node = static_cast<NodeId>(rng.below(config.cluster.nodes.size()));
    f.down_ns = lo + static_cast<TimeNs>(rng.uniform() * static_cast<double>(hi - lo));
    f.up_ns = f.down_ns + repair;
    out.push_back(f);
  }
  return out;
}

// Seconds with up to millisecond precision, trailing zeros dropped ("12", "0.25").
std::string fmt_seconds(TimeNs t) {
  char b[40];
  std::snprintf(b, sizeof b, "%.3f", static_cast<double>(t) / kNsPerSec);
  std::string s = b;
  s.erase(s.find_last_not_of('0') + 1);
  if (s.back() == '.') s.pop_back();
  return s;
}

// One row per trace job, in trace order: when it came, started and ended, and what happened to
// it (times in seconds of virtual time; -1 when it never started or never ended).
std::string jobs_csv(const SimResult& result, const Config& config) {
  std::string out =
      "id,queue,class,gpus,submit_s,first_start_s,wait_s,end_s,run_s,starts,preemptions,"
      "preempted_run_s,rejected\n";
  auto sec = [](TimeNs t) { return t < 0 ? std::string("-1") : fmt_seconds(t); };
  for (const JobOutcome& o : result.jobs) {
    const std::string queue =
        o.queue >= 0 ? config.cluster_queues[static_cast<size_t>(o.queue)].name : "";
    char gpus[32];
    std::snprintf(gpus, sizeof gpus, "%g", static_cast<double>(o.gpu_milli) / kMilliPerGpu);
    out += std::to_string(o.id) + "," + queue + "," + o.priority_class + "," + gpus + "," +
           sec(o.submit_ns) + "," + sec(o.first_start_ns) + "," +
           (o.first_start_ns < 0 ? "-1" : sec(o.first_start_ns - o.submit_ns)) + "," +
           sec(o.end_ns) + "," + sec(o.run_ns) + "," + std::to_string(o.starts) + "," +
           std::to_string(o.preemptions) + "," + sec(o.preempted_run_ns) + "," +
           (o.rejected ? "1" : "0") + "\n";
  }
  return out;
}

// "warning: skipped 3 bad row(s) of 10 (30.0%) in t.csv" and the first kBadRowExamples.
std::string skip_warning(const TraceOutput& trace, const std::string& trace_name) {
  char share[32] = "";
  if (trace.rows > 0)
    std::snprintf(
        share, sizeof share, " of %lld (%.1f%%)", static_cast<long long>(trace.rows),
        100.0 * static_cast<double>(trace.errors.size()) / static_cast<double>(trace.rows));
  std::string out = "warning: skipped " + std::to_string(trace.errors.size()) + " bad row(s)" +
                    share + " in " + trace_name + "; the figures leave them out\n";
  for (size_t i = 0; i < trace.errors.size() && i < kBadRowExamples; ++i)
    out += "warning:   " + trace.errors[i] + "\n";
  if (trace.errors.size() > kBadRowExamples)
    out +=
        "warning:   ... and " + std::to_string(trace.errors.size() - kBadRowExamples) + " more\n";
  return out;
}

}  // namespace

std::string compare_table(const std::vector<std::pair<std::string, RunOutcome>>& rows) {
  // Columns: per config, utilisation, busy span, then wait p50/p99 per priority class (the
  // classes of the first run, highest priority first), max wait, JCT p50/p99, Jain, speed.
  std::vector<std::pair<int32_t, std::string>> classes;
  if (!rows.empty())
    for (const auto& [name, s] : rows.front().second.figures.by_priority_class)
      classes.emplace_back(-rows.front().second.figures.class_value.at(name), name);
  std::sort(classes.begin(), classes.end());
  bool with_variant = false;
  for (const auto& row : rows) with_variant |= !row.second.figures.inputs.variant.empty();
  std::ostringstream out;
  out << (with_variant ? "| variant " : "") << "| config | utilisation | busy span |";
  for (const auto& c : classes) out << " wait " << c.second << " p50 / p99 |";
  out << " max wait | JCT p50 / p99 | Jain (contended) | run time | events/s |\n"
      << (with_variant ? "|---" : "") << "|---|---|---|";
  for (size_t i = 0; i < classes.size(); ++i) out << "---|";
  out << "---|---|---|---|---|\n";
  char b[64];
  for (const auto& [file, r] : rows) {
    const Figures& f = r.figures;
    std::snprintf(b, sizeof b, "%.1f%%", 100 * f.utilisation);
    if (with_variant) out << "| " << (f.inputs.variant.empty() ? "base" : f.inputs.variant) << " ";
    out << "| " << file << " | " << b << " | " << short_dur(f.busy_span_s) << " |";
    for (const auto& c : classes) {
      const auto it = f.by_priority_class.find(c.second);
      if (it == f.by_priority_class.end())
        out << " - |";
      else
        out << " " << short_dur(it->second.wait_p50_s) << " / " << short_dur(it->second.wait_p99_s)
            << " |";
    }
    std::snprintf(b, sizeof b, "%.3f", f.jain_fairness_contended);
    out << " " << short_dur(f.max_wait_s) << " | " << short_dur(f.overall.jct_p50_s) << " / "
        << short_dur(f.overall.jct_p99_s) << " | " << b << " |";
    std::snprintf(b, sizeof b, " %.2f s | %.0f |\n", r.wall_s,
                  r.wall_s > 0 ? static_cast<double>(f.sim.events) / r.wall_s : 0.0);
    out << b;
  }
  return out.str();
}

namespace {

// Step 1 of run_once: the queue files and cluster files as one Config; null (errors written to
// `err`) when they do not load.
std::shared_ptr<const Config> load_run_config(const RunArgs& a, std::ostream& err) {
  std::vector<Source> sources;
  for (const auto* list : {&a.config, &a.cluster})
    for (const auto& path : *list) {
      auto src = read_source(list == &a.cluster ? resolve_trace(path) : path);
      if (!src) {
        err << "error: " << src.error() << "\n";
        return nullptr;
      }
      // The openb node list (CSV) stands for a Cluster document.
      if (list == &a.cluster && is_openb_node_list(src->text)) {
        std::vector<std::string> node_errors;
        src->text = openb_nodes_to_cluster_yaml(src->name, src->text, node_errors);
        for (const auto& e : node_errors) err << "error: " << e << "\n";
        if (!node_errors.empty()) return nullptr;
      }
      sources.push_back(std::move(*src));
    }
  LoadOutput loaded = load(sources, LoadOptions{});
  for (const auto& e : loaded.errors) err << "error: " << e << "\n";
  if (!loaded.ok()) return nullptr;
  return std::make_shared<const Config>(std::move(loaded.config));
}

// Step 2 of run_once: the trace as read (or generated) and varied, its rows not yet checked
// against the configuration; false (errors written to `err`) when there is none.
bool read_trace(const RunArgs& a, const Config& config, Rng& rng, TraceOutput* trace,
                std::string* trace_name, std::ostream& err) {
  *trace_name = a.trace;
  if (a.trace_format == "synthetic") {
    SyntheticOptions so = a.synthetic;
    so.gpus_per_node = max_gpus_per_node(config);
    *trace = generate_synthetic(so, config, rng);
    *trace_name = "synthetic:jobs=" + std::to_string(a.synthetic.jobs);
  } else if (a.trace_format == "philly-chronus" || a.trace_format == "sluice-events" ||
             a.trace_format == "openb") {
    if (a.trace.empty()) {
      err << "error: --trace FILE is required for --trace-format " << a.trace_format << "\n";
      return false;
    }
    auto src = read_source(resolve_trace(a.trace));
    if (!src) {
      err << "error: " << src.error() << "\n";
      return false;
    }
    if (a.trace_format == "philly-chronus") {
      PhillyOptions po;
      po.gpus_per_node = max_gpus_per_node(config);
      *trace = read_philly(a.trace, src->text, po);
    } else if (a.trace_format == "openb") {
      OpenbOptions oo;
      oo.queue = a.openb_queue;
      *trace = read_openb(a.trace, src->text, oo);
    } else {
      *trace = read_sluice_events(a.trace, src->text);
    }
  } else {
    err << "error: --trace-format: '" << a.trace_format
        << "' is not philly-chronus, openb, synthetic or sluice-events\n";
    return false;
  }
  if (!a.variants.empty()) {
    std::string why;
    const auto v = parse_variant(a.variants.front(), &why);
    if (!v) {
      err << "error: " << why << "\n";
      return false;
    }
    Rng own(v->seed.value_or(0));
    apply_variant(*trace, *v, VariantClasses{}, v->seed ? own : rng);
  }
  return true;
}

// --checkpoint-every and --checkpoint-classes: a class named must be one of the
// configuration's (or "none"), and classes need an interval. False with the error written.
bool check_checkpoints(const RunArgs& a, const Config& config, std::ostream& err) {
  if (a.checkpoint_every_s > 0 && a.checkpoint_every_s < 1) {
    err << "error: --checkpoint-every: " << a.checkpoint_every_s
        << " s is under a second (0: no checkpoints)\n";
    return false;
  }
  if (!a.checkpoint_classes.empty() && a.checkpoint_every_s <= 0) {
    err << "error: --checkpoint-classes needs --checkpoint-every (an interval above 0)\n";
    return false;
  }
  for (const std::string& c : a.checkpoint_classes) {
    const bool known =
        c == "none" || std::any_of(config.priority_classes.begin(), config.priority_classes.end(),
                                   [&](const auto& pc) { return pc.name == c; });
    if (!known) {
      err << "error: --checkpoint-classes: '" << c
          << "' is no priority class of the configuration (nor \"none\")\n";
      return false;
    }
  }
  return true;
}

}  // namespace

RunOutcome run_once(const RunArgs& a, std::ostream& err) {
  RunOutcome res;
  res.rc = 1;
  // 1. Configuration, 2. the trace (bad rows fail the run unless skipped).
  const auto config = load_run_config(a, err);
  if (!config || !check_checkpoints(a, *config, err)) return res;
  Rng rng(a.seed);
  TraceOutput trace;
  std::string trace_name;
  if (!read_trace(a, *config, rng, &trace, &trace_name, err)) return res;
  check_against(trace, *config);
  if (!trace.errors.empty() && !a.skip_bad_rows) {
    for (size_t i = 0; i < trace.errors.size() && i < kMaxErrorsShown; ++i)
      err << "error: " << trace.errors[i] << "\n";
    if (trace.errors.size() > kMaxErrorsShown)
      err << "error: ... and " << trace.errors.size() - kMaxErrorsShown << " more bad rows\n";
    err << "error: " << trace.errors.size()
        << " bad row(s); fix them or pass --skip-bad-rows to skip and count them\n";
    return res;
  }
  if (!trace.errors.empty()) res.skipped_warning = skip_warning(trace, trace_name);

  // 3. Simulate (a per-job CSV that cannot be written fails before, not after, the run).
  std::ofstream jobs_out;
  if (!a.jobs_out.empty()) {
    jobs_out.open(a.jobs_out, std::ios::binary);
    if (!jobs_out) {
      err << "error: cannot write " << a.jobs_out << "\n";
      return res;
    }
  }
  SimOptions so;
  so.cycle_interval_ns = static_cast<TimeNs>(a.cycle_interval_s * 1e9);
  so.check_invariants = a.check_invariants;
  so.record_series = !a.html.empty();
  so.predict_every = a.predict_every;
  so.predict_arrival_window_ns = static_cast<TimeNs>(a.predict_arrivals_s * 1e9);
  so.failures = random_failures(a, *config, trace.jobs, rng);
  so.seed = a.seed ^ 0x5107a7c0ffeeULL;  // spot reclaims: a stream of their own
  so.right_size = a.right_size == "auto";
  so.right_size_headroom = a.right_size_headroom_pct / 100.0;
  so.checkpoint_every_ns = static_cast<TimeNs>(std::llround(a.checkpoint_every_s * 1e9));
  so.checkpoint_classes = a.checkpoint_classes;
  const auto t0 = std::chrono::steady_clock::now();
  SimResult result = simulate(config, trace.jobs, so);
  const double wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  // 4. Figures.
  ReportInputs in;
  in.trace_format = a.trace_format;
  in.trace = trace_name;
  in.seed = a.seed;
  in.rows = trace.rows;
  in.bad_rows = static_cast<int64_t>(trace.errors.size());
  for (size_t i = 0; i < trace.errors.size() && i < kBadRowExamples; ++i)
    in.bad_row_examples.push_back(trace.errors[i]);
  if (!a.variants.empty()) in.variant = a.variants.front();
  res.figures = compute_figures(result, *config, in);
  res.wall_s = wall_s;
  res.rc = 0;
  if (jobs_out.is_open()) {
    jobs_out << jobs_csv(result, *config);
    if (!jobs_out.flush()) {
      err << "error: cannot write " << a.jobs_out << "\n";
      res.rc = 1;
    }
  }
  if (!result.invariant_failure.empty()) {
    err << "error: invariant violated " << result.invariant_failure << "\n";
    res.rc = 2;
  }
  return res;
}

namespace {

std::string speed_line(const RunOutcome& r) {
  char line[160];
  std::snprintf(line, sizeof line, "simulated %lld events, %lld cycles in %.2f s (%.0f events/s)",
                static_cast<long long>(r.figures.sim.events),
                static_cast<long long>(r.figures.sim.cycles), r.wall_s,
                r.wall_s > 0 ? static_cast<double>(r.figures.sim.events) / r.wall_s : 0.0);
  return line;
}

bool write_file(const std::string& path, const std::string& text, std::ostream& err) {
  std::ofstream r(path, std::ios::binary);
  r << text;
  if (!r) err << "error: cannot write " << path << "\n";
  return static_cast<bool>(r);
}

bool write_report(const std::string& path, const nlohmann::json& j, std::ostream& err) {
  return write_file(path, j.dump(2) + "\n", err);
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : " ") + x;
  return s;
}

}  // namespace

int run_sim(const RunArgs& a, std::ostream& out, std::ostream& err) {
  if (a.variants.size() > 1) {
    err << "error: sim run takes one --variant (sim compare takes several)\n";
    return 1;
  }
  const RunOutcome r = run_once(a, err);
  if (r.rc == 1) return 1;
  err << r.skipped_warning;
  if (!a.report.empty() && !write_report(a.report, to_json(r.figures), err)) return 1;
  if (!a.html.empty() &&
      !write_file(a.html, to_html(r.figures, "sluice sim run: " + joined(a.config)), err))
    return 1;
  if (!a.quiet) out << to_table(r.figures) << "\n" << speed_line(r) << "\n";
  return r.rc;
}

int compare_sim(const RunArgs& a, std::ostream& out, std::ostream& err) {
  nlohmann::json all = nlohmann::json::object();
  std::vector<std::pair<std::string, RunOutcome>> rows;
  std::set<std::string> warned;  // each distinct skip warning once, not once per run
  const std::vector<std::string> variants =
      a.variants.empty() ? std::vector<std::string>{""} : a.variants;
  for (const auto& variant : variants)
    for (const auto& file : a.config) {
      RunArgs one = a;
      one.config = {file};
      one.variants.clear();
      if (!variant.empty()) one.variants = {variant};
      RunOutcome r = run_once(one, err);
      if (r.rc != 0) return r.rc;
      if (warned.insert(r.skipped_warning).second) err << r.skipped_warning;
      all[variant.empty() ? file : variant + " " + file] = to_json(r.figures);
      rows.emplace_back(file, std::move(r));
    }
  if (!a.report.empty() && !write_report(a.report, all, err)) return 1;
  if (!a.html.empty()) {
    std::vector<std::pair<std::string, const Figures*>> v;
    for (const auto& [file, r] : rows) v.emplace_back(file, &r.figures);
    if (!write_file(a.html, compare_html(v, "sluice sim compare"), err)) return 1;
  }
  if (a.quiet) return 0;
  out << compare_table(rows);
  return 0;
}

namespace {

// The inputs: the queue configuration, the cluster, the trace and its format.
void add_input_options(CLI::App* cmd, const std::shared_ptr<RunArgs>& a) {
  cmd->add_option("--config", a->config,
                  "Queue configuration (Kueue manifests, SchedulerPolicy); for compare, one "
                  "file per variant")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--cluster", a->cluster,
                  "Cluster description (sluice Cluster, or the openb node list CSV; a relative "
                  "path not found here is looked up as --trace is)");
  cmd->add_option("--trace", a->trace,
                  "Trace file (a relative path not found here is looked up in $SLUICE_TRACES, "
                  "default ../shared/traces)");
  cmd->add_option("--trace-format", a->trace_format,
                  "philly-chronus (default), openb, sluice-events or synthetic")
      ->check(CLI::IsMember({"philly-chronus", "openb", "sluice-events", "synthetic"}));
  cmd->add_option("--openb-queue", a->openb_queue,
                  "openb: the LocalQueue (namespace default) every pod goes to")
      ->capture_default_str();
}

// What a run writes and checks: the reports, the table, bad rows, the invariants.
void add_output_options(CLI::App* cmd, const std::shared_ptr<RunArgs>& a) {
  cmd->add_option("--report", a->report, "Write the JSON report here");
  cmd->add_option("--html", a->html,
                  "Write the HTML report here (one self-contained page: charts and tables)");
  cmd->add_flag("--skip-bad-rows", a->skip_bad_rows, "Skip bad trace rows and count them");
  cmd->add_flag("--quiet", a->quiet, "Print no table");
  cmd->add_flag("--check-invariants", a->check_invariants,
                "Check the scheduler's invariants after every cycle (slow)");
}

// How the replay goes: the seed, a trace variant, start predictions, the cycle interval.
void add_replay_options(CLI::App* cmd, const std::shared_ptr<RunArgs>& a) {
  cmd->add_option("--seed", a->seed, "Seed of the one generator (synthetic trace, failures)")
      ->capture_default_str();
  cmd->add_option("--variant", a->variants,
                  "Trace variant derived with --seed: comma-separated steps base, resample, "
                  "shift-vcs, strict, best-effort=P, slack=F, load=X, jitter=S, walltime-error=F, "
                  "replica=K, seed=N "
                  "(compare: repeat for several)");
  cmd->add_option("--predict-every", a->predict_every,
                  "Predict the start of every Nth trace job still pending after its arrival "
                  "(forward replay of the state) and report the accuracy; 0: off")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--predict-arrivals", a->predict_arrivals_s,
                  "With --predict-every: the forecast expects the arrivals of the last this many "
                  "seconds to repeat (0: no arrivals, the plain forecast)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--cycle-interval", a->cycle_interval_s,
                  "Seconds of virtual time between cycles (0: after every batch of events)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
}

// The shape of the synthetic trace (--trace-format synthetic).
void add_synthetic_options(CLI::App* cmd, const std::shared_ptr<RunArgs>& a) {
  cmd->add_option("--jobs", a->synthetic.jobs, "synthetic: number of jobs")->capture_default_str();
  cmd->add_option("--arrival-rate", a->synthetic.arrival_rate_per_s,
                  "synthetic: mean arrivals per second")
      ->capture_default_str();
  cmd->add_option("--diurnal-amplitude", a->synthetic.diurnal_amplitude,
                  "synthetic: daily swing of the arrival rate, in [0, 1)")
      ->capture_default_str();
  cmd->add_option("--min-duration", a->synthetic.min_duration_s, "synthetic: shortest run, s")
      ->capture_default_str();
  cmd->add_option("--max-duration", a->synthetic.max_duration_s, "synthetic: longest run, s")
      ->capture_default_str();
  cmd->add_option("--large-gang-fraction", a->synthetic.large_gang_fraction,
                  "synthetic: share of jobs that are large gangs")
      ->capture_default_str();
  cmd->add_option("--large-gang-gpus", a->synthetic.large_gang_gpus,
                  "synthetic: GPUs of a large gang")
      ->capture_default_str();
  cmd->add_option("--high-priority-fraction", a->synthetic.high_priority_fraction,
                  "synthetic: share of jobs in class high (the rest: low)")
      ->capture_default_str();
  cmd->add_option("--preemptible-fraction", a->synthetic.preemptible_fraction,
                  "synthetic: share of preemptible jobs")
      ->capture_default_str();
}

// What-ifs: right-sizing, checkpoints and node failures.
void add_what_if_options(CLI::App* cmd, const std::shared_ptr<RunArgs>& a) {
  cmd->add_option("--right-size", a->right_size,
                  "auto: every job opts in to right-sizing, GPU memory from the documented "
                  "model (docs/simulator.md, \"Right-sizing\")")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "off"}));
  cmd->add_option("--right-size-headroom", a->right_size_headroom_pct,
                  "Right-sizing: percent over the history's peak")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 100.0));
  cmd->add_option("--checkpoint-every", a->checkpoint_every_s,
                  "Seconds of run time between a job's checkpoints: an interrupted run keeps its "
                  "work up to the last one and restarts with the rest (0: off, from scratch)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--checkpoint-classes", a->checkpoint_classes,
                  "With --checkpoint-every: only jobs of these priority classes checkpoint "
                  "(comma-separated; none: jobs without a class; default: every job)")
      ->delimiter(',');
  cmd->add_option("--node-failures", a->node_failures,
                  "Random node failures spread over the arrival span (seeded)")
      ->capture_default_str();
  cmd->add_option("--repair-time", a->repair_time_s, "Seconds a failed node stays down")
      ->capture_default_str();
}

// The options sim run and sim compare share, in their --help order.
void add_common_options(CLI::App* cmd, const std::shared_ptr<RunArgs>& a) {
  add_input_options(cmd, a);
  add_output_options(cmd, a);
  add_replay_options(cmd, a);
  add_synthetic_options(cmd, a);
  add_what_if_options(cmd, a);
}

}  // namespace

void register_run_command(CLI::App& sim) {
  auto* cmd =
      sim.add_subcommand("run", "Replay a trace through the scheduling core (virtual clock)");
  auto a = std::make_shared<RunArgs>();
  add_common_options(cmd, a);
  cmd->add_option("--jobs-out", a->jobs_out,
                  "Write one CSV row per trace job here: queue, class, GPUs, submit, first start, "
                  "wait, end, run time, starts, preemptions, run time lost, rejected");
  cmd->callback([a] {
    const int rc = run_sim(*a, std::cout, std::cerr);
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
  auto* cmp = sim.add_subcommand(
      "compare",
      "Replay one trace under several configurations (each --config file is one variant); "
      "print one table row per variant");
  auto c = std::make_shared<RunArgs>();
  add_common_options(cmp, c);
  cmp->callback([c] {
    const int rc = compare_sim(*c, std::cout, std::cerr);
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace sluice::sim
