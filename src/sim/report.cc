#include "sim/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <vector>

namespace sluice::sim {

namespace {

// GPU-milli nanoseconds as GPU-hours.
double gpu_hours_of(double milli_ns) {
  return milli_ns / 1000.0 / kNs / 3600.0;
}

// part / whole; 0 when whole is 0.
double ratio(int64_t part, int64_t whole) {
  return whole > 0 ? static_cast<double>(part) / static_cast<double>(whole) : 0;
}

std::string digest_hex(uint64_t d) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(d));
  return buf;
}

// Accumulates one group's samples, then turns them into JobStats.
struct Acc {
  int64_t jobs = 0, started = 0, finished = 0;
  std::vector<TimeNs> waits, jcts;
  double gpu_ns_milli = 0;  // sum of gpu_milli * run_ns, as a double (can exceed int64)
  double lost_ns_milli = 0;
  int64_t preemptions = 0;
  int64_t deadline_jobs = 0, deadline_met = 0;
  int64_t value_full = 0, value_earned = 0, soft_jobs = 0;

  void add(const JobOutcome& o) {
    ++jobs;
    if (o.complete_by_ns > 0) {
      ++deadline_jobs;
      if (o.end_ns >= 0 && o.end_ns <= o.complete_by_ns) ++deadline_met;
    }
    if (!o.utility.empty()) {
      value_full += o.utility.front().value;
      value_earned += earned_value(o.utility, o.submit_ns, o.end_ns);
      soft_jobs += o.utility.size() > 1 ? 1 : 0;
    }
    gpu_ns_milli += static_cast<double>(o.gpu_milli) * static_cast<double>(o.run_ns);
    lost_ns_milli += static_cast<double>(o.gpu_milli) * static_cast<double>(o.preempted_run_ns);
    preemptions += o.preemptions;
    if (o.first_start_ns >= 0) {
      ++started;
      waits.push_back(o.first_start_ns - o.submit_ns);
    }
    if (o.end_ns >= 0) {
      ++finished;
      jcts.push_back(o.end_ns - o.submit_ns);
    }
  }
  static double pct(const std::vector<TimeNs>& sorted, double p) {
    if (sorted.empty()) return 0;
    size_t rank = static_cast<size_t>(std::ceil(p * static_cast<double>(sorted.size())));
    rank = std::clamp<size_t>(rank, 1, sorted.size());
    return static_cast<double>(sorted[rank - 1]) / kNs;
  }
  static double mean(const std::vector<TimeNs>& v) {
    if (v.empty()) return 0;
    double s = 0;
    for (TimeNs x : v) s += static_cast<double>(x);
    return s / static_cast<double>(v.size()) / kNs;
  }
  JobStats stats() {
    std::sort(waits.begin(), waits.end());
    std::sort(jcts.begin(), jcts.end());
    JobStats s;
    s.jobs = jobs;
    s.started = started;
    s.finished = finished;
    s.wait_mean_s = mean(waits);
    s.wait_p50_s = pct(waits, 0.50);
    s.wait_p99_s = pct(waits, 0.99);
    s.wait_max_s = waits.empty() ? 0 : static_cast<double>(waits.back()) / kNs;
    s.jct_mean_s = mean(jcts);
    s.jct_p50_s = pct(jcts, 0.50);
    s.jct_p99_s = pct(jcts, 0.99);
    s.gpu_hours = gpu_hours_of(gpu_ns_milli);
    s.preemptions = preemptions;
    s.deadline_jobs = deadline_jobs;
    s.deadline_met = deadline_met;
    s.value_full = value_full;
    s.value_earned = value_earned;
    s.soft_jobs = soft_jobs;
    s.lost_gpu_hours = gpu_hours_of(lost_ns_milli);
    if (!waits.empty())
      for (int i = 0; i <= 100; ++i) s.wait_q.push_back(pct(waits, i / 100.0));
    return s;
  }
};

int64_t nominal_gpu_milli(const ClusterQueue& cq) {
  int64_t n = 0;
  for (const auto& g : cq.resource_groups)
    for (const auto& f : g.flavors)
      for (const auto& r : f.resources)
        if (r.resource == kGpu) n += r.nominal;
  return n;
}

nlohmann::json stats_json(const JobStats& s) {
  nlohmann::json j = {
      {"jobs", s.jobs},
      {"started", s.started},
      {"finished", s.finished},
      {"wait_s",
       {{"mean", s.wait_mean_s},
        {"p50", s.wait_p50_s},
        {"p99", s.wait_p99_s},
        {"max", s.wait_max_s}}},
      {"jct_s", {{"mean", s.jct_mean_s}, {"p50", s.jct_p50_s}, {"p99", s.jct_p99_s}}},
      {"gpu_hours", s.gpu_hours},
      {"preemptions", s.preemptions},
      {"lost_gpu_hours", s.lost_gpu_hours}};
  // Only for traces with deadlines: reports of other traces keep their bytes.
  if (s.deadline_jobs > 0)
    j["deadlines"] = {{"jobs", s.deadline_jobs},
                      {"met", s.deadline_met},
                      {"satisfaction",
                       static_cast<double>(s.deadline_met) / static_cast<double>(s.deadline_jobs)}};
  // Only with soft jobs: for strict ones alone the utility repeats the satisfaction.
  if (s.soft_jobs > 0)
    j["deadlines"]["utility"] = {{"soft_jobs", s.soft_jobs},
                                 {"earned", s.value_earned},
                                 {"full", s.value_full},
                                 {"share", ratio(s.value_earned, s.value_full)}};
  return j;
}

PredictionFigures prediction_figures(const std::vector<JobOutcome>& jobs) {
  PredictionFigures p;
  std::vector<TimeNs> err, wait;
  int64_t close = 0, early = 0;
  for (const JobOutcome& o : jobs) {
    if (!o.predicted) continue;
    if (o.predicted_start_ns < 0 || o.first_start_ns < 0) {
      ++p.unpredicted;
      continue;
    }
    const TimeNs w = o.first_start_ns - o.submit_ns;
    const TimeNs e = std::abs(o.predicted_start_ns - o.first_start_ns);
    err.push_back(e);
    wait.push_back(w);
    close += (e * 10 <= w || e <= static_cast<TimeNs>(kNs)) ? 1 : 0;
    early += o.predicted_start_ns < o.first_start_ns ? 1 : 0;
  }
  p.predicted = static_cast<int64_t>(err.size());
  if (err.empty()) return p;
  std::sort(err.begin(), err.end());
  std::sort(wait.begin(), wait.end());
  p.abs_error_p50_s = Acc::pct(err, 0.5);
  p.abs_error_p90_s = Acc::pct(err, 0.9);
  p.abs_error_mean_s = Acc::mean(err);
  p.wait_p50_s = Acc::pct(wait, 0.5);
  p.within_10pct = static_cast<double>(close) / static_cast<double>(err.size());
  p.early_share = static_cast<double>(early) / static_cast<double>(err.size());
  return p;
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

}  // namespace

std::string deadline_summary(const JobStats& s) {
  if (s.deadline_jobs == 0) return "";
  std::string out = std::to_string(s.deadline_met) + " of " + std::to_string(s.deadline_jobs) +
                    " met (" + fmt("%.1f%%", 100 * ratio(s.deadline_met, s.deadline_jobs)) + ")";
  if (s.soft_jobs > 0)
    out += ", utility " + std::to_string(s.value_earned) + " of " + std::to_string(s.value_full) +
           " (" + fmt("%.1f%%", 100 * ratio(s.value_earned, s.value_full)) + ")";
  return out;
}

std::string short_dur(double s) {
  if (s < 120) return fmt("%.0fs", s);
  if (s < 7200) return fmt("%.1fm", s / 60);
  return fmt("%.1fh", s / 3600);
}

Figures compute_figures(const SimResult& result, const Config& config, const ReportInputs& in) {
  Figures f;
  f.inputs = in;
  f.capacity_gpus = result.capacity_gpu_milli / kMilliPerGpu;
  Acc all;
  std::map<std::string, Acc> by_class;
  std::vector<Acc> by_queue(config.cluster_queues.size());
  for (const auto& pc : config.priority_classes) f.class_value[pc.name] = pc.value;
  for (const JobOutcome& o : result.jobs) {
    if (o.rejected) {
      ++f.rejected;
      continue;
    }
    ++f.jobs;
    if (o.first_start_ns < 0) ++f.never_started;
    all.add(o);
    const std::string cls = o.priority_class.empty() ? "none" : o.priority_class;
    by_class[cls].add(o);
    f.class_value[cls] = o.priority;
    if (o.queue >= 0) by_queue[static_cast<size_t>(o.queue)].add(o);
  }
  f.jobs += f.rejected;
  f.overall = all.stats();
  f.max_wait_s = f.overall.wait_max_s;
  f.gpu_hours = f.overall.gpu_hours;
  for (auto& [name, acc] : by_class) f.by_priority_class[name] = acc.stats();
  f.busy_span_s = std::max<double>(0, static_cast<double>(result.last_ns - result.first_ns) / kNs);
  if (f.busy_span_s > 0 && f.capacity_gpus > 0)
    f.utilisation = f.gpu_hours * 3600 / (f.busy_span_s * static_cast<double>(f.capacity_gpus));

  // Share over entitlement per queue, and Jain's index (sum x)^2 / (n * sum x^2) over the queues
  // that have a nominal GPU quota.
  double total_nominal = 0;
  for (const auto& cq : config.cluster_queues)
    total_nominal += static_cast<double>(nominal_gpu_milli(cq)) / kMilliPerGpu;
  double sx = 0, sxx = 0;
  int n = 0;
  for (size_t q = 0; q < config.cluster_queues.size(); ++q) {
    QueueFigures qf;
    qf.stats = by_queue[q].stats();
    qf.nominal_gpus = static_cast<double>(nominal_gpu_milli(config.cluster_queues[q])) / 1000;
    if (qf.nominal_gpus > 0 && total_nominal > 0) {
      const double share = f.gpu_hours > 0 ? qf.stats.gpu_hours / f.gpu_hours : 0;
      qf.share_over_entitlement = share / (qf.nominal_gpus / total_nominal);
      sx += qf.share_over_entitlement;
      sxx += qf.share_over_entitlement * qf.share_over_entitlement;
      ++n;
    }
    f.by_queue[config.cluster_queues[q].name] = qf;
  }
  f.jain_fairness = sxx > 0 ? sx * sx / (n * sxx) : 1;
  f.contended_s = result.contended_s;
  if (result.contended_s > 0)
    f.jain_fairness_contended = result.jain_contended_weighted_s / result.contended_s;
  f.prediction = prediction_figures(result.jobs);
  f.sim = result;  // the counters only: the outcomes are summarised above
  return f;
}

nlohmann::json to_json(const Figures& f) {
  nlohmann::json j;
  j["input"] = {{"trace_format", f.inputs.trace_format},
                {"trace", f.inputs.trace},
                {"seed", f.inputs.seed},
                {"rows", f.inputs.rows},
                {"bad_rows", f.inputs.bad_rows}};
  if (!f.inputs.bad_row_examples.empty())
    j["input"]["bad_row_examples"] = f.inputs.bad_row_examples;
  if (!f.inputs.variant.empty()) j["input"]["variant"] = f.inputs.variant;
  j["capacity_gpus"] = f.capacity_gpus;
  j["jobs"] = {{"total", f.jobs},
               {"rejected", f.rejected},
               {"never_started", f.never_started},
               {"finished", f.overall.finished}};
  j["busy_span_s"] = f.busy_span_s;
  j["utilisation"] = f.utilisation;
  j["gpu_hours"] = f.gpu_hours;
  j["lost_gpu_hours"] = f.overall.lost_gpu_hours;
  j["max_wait_s"] = f.max_wait_s;
  j["jain_fairness"] = f.jain_fairness;
  j["jain_fairness_contended"] = f.jain_fairness_contended;
  j["contended_s"] = f.contended_s;
  j["overall"] = stats_json(f.overall);
  nlohmann::json cls = nlohmann::json::object();
  for (const auto& [name, s] : f.by_priority_class) {
    cls[name] = stats_json(s);
    cls[name]["priority"] = f.class_value.at(name);
  }
  j["by_priority_class"] = cls;
  nlohmann::json q = nlohmann::json::object();
  for (const auto& [name, qf] : f.by_queue) {
    q[name] = stats_json(qf.stats);
    q[name]["nominal_gpus"] = qf.nominal_gpus;
    q[name]["share_over_entitlement"] = qf.share_over_entitlement;
  }
  j["by_queue"] = q;
  j["simulation"] = {{"events", f.sim.events},
                     {"cycles", f.sim.cycles},
                     {"incremental_cycles", f.sim.incremental_cycles},
                     {"jobs_evaluated", f.sim.evaluated},
                     {"requeued_by_node_failure", f.sim.requeued},
                     {"preemptions", f.sim.preemptions},
                     {"first_arrival_s", static_cast<double>(f.sim.first_ns) / kNs},
                     {"last_completion_s", static_cast<double>(f.sim.last_ns) / kNs},
                     {"decision_digest", digest_hex(f.sim.decision_digest)}};
  const PredictionFigures& pr = f.prediction;
  if (pr.predicted + pr.unpredicted > 0)
    j["start_prediction"] = {
        {"predicted", pr.predicted},
        {"unpredicted", pr.unpredicted},
        {"abs_error_s",
         {{"p50", pr.abs_error_p50_s}, {"p90", pr.abs_error_p90_s}, {"mean", pr.abs_error_mean_s}}},
        {"wait_p50_s", pr.wait_p50_s},
        {"within_10pct", pr.within_10pct},
        {"early_share", pr.early_share}};
  add_autoscale_json(f, j);
  if (f.sim.right_size_on)
    j["right_sizing"] = {{"right_sized_jobs", f.sim.right_sized},
                         {"retried_whole", f.sim.right_size_retries}};
  if (f.sim.checkpoint_every_ns > 0) {
    j["checkpoints"] = {{"interval_s", static_cast<double>(f.sim.checkpoint_every_ns) / kNs},
                        {"checkpointing_jobs", f.sim.checkpointing_jobs},
                        {"interrupted_runs", f.sim.interrupted_runs},
                        {"resumed_runs", f.sim.resumed_runs},
                        {"kept_gpu_hours", gpu_hours_of(f.sim.kept_gpu_milli_ns)},
                        {"lost_gpu_hours", gpu_hours_of(f.sim.lost_gpu_milli_ns)}};
  }
  return j;
}

std::string to_table(const Figures& f) {
  std::ostringstream out;
  out << "jobs " << f.jobs << " (rejected " << f.rejected << ", never started " << f.never_started
      << ", bad rows skipped " << f.inputs.bad_rows << ") on " << f.capacity_gpus << " GPUs\n";
  out << "utilisation " << fmt("%.1f%%", 100 * f.utilisation) << " over a busy span of "
      << short_dur(f.busy_span_s) << ", " << fmt("%.0f", f.gpu_hours) << " GPU-hours, max wait "
      << short_dur(f.max_wait_s) << "\nJain fairness of share/entitlement "
      << fmt("%.3f", f.jain_fairness) << " (whole run), " << fmt("%.3f", f.jain_fairness_contended)
      << " among waiting queues (" << short_dur(f.contended_s) << " contended)\n";
  for (const auto& e : f.inputs.bad_row_examples) out << "bad row skipped: " << e << "\n";
  out << "\n";
  char line[256];
  auto row = [&](const std::string& name, const JobStats& s, const std::string& extra) {
    std::snprintf(line, sizeof line, "%-14s %7lld %9s %9s %9s %9s %9s %9s%s\n", name.c_str(),
                  static_cast<long long>(s.jobs), short_dur(s.wait_mean_s).c_str(),
                  short_dur(s.wait_p50_s).c_str(), short_dur(s.wait_p99_s).c_str(),
                  short_dur(s.jct_mean_s).c_str(), short_dur(s.jct_p50_s).c_str(),
                  short_dur(s.jct_p99_s).c_str(), extra.c_str());
    out << line;
  };
  std::snprintf(line, sizeof line, "%-14s %7s %9s %9s %9s %9s %9s %9s\n", "CLASS", "JOBS",
                "WAIT avg", "p50", "p99", "JCT avg", "p50", "p99");
  out << line;
  // Highest priority first, then by name.
  std::vector<std::pair<int32_t, std::string>> classes;
  for (const auto& [name, s] : f.by_priority_class)
    classes.emplace_back(-f.class_value.at(name), name);
  std::sort(classes.begin(), classes.end());
  for (const auto& [v, name] : classes) row(name, f.by_priority_class.at(name), "");
  row("all", f.overall, "");
  out << "\n";
  std::snprintf(line, sizeof line, "%-14s %7s %9s %9s %9s %9s %9s %9s %8s %8s %9s\n", "QUEUE",
                "JOBS", "WAIT avg", "p50", "p99", "JCT avg", "p50", "p99", "NOMINAL", "GPU-h",
                "SHARE/ENT");
  out << line;
  for (const auto& [name, qf] : f.by_queue)
    row(name, qf.stats,
        fmt(" %8.0f", qf.nominal_gpus) + fmt(" %8.0f", qf.stats.gpu_hours) +
            fmt(" %9.2f", qf.share_over_entitlement));
  for (const auto& [v, name] : classes) {
    const std::string d = deadline_summary(f.by_priority_class.at(name));
    if (!d.empty()) out << "\ndeadlines " << name << ": " << d;
  }
  const PredictionFigures& pr = f.prediction;
  if (pr.predicted + pr.unpredicted > 0)
    out << "\nstart predictions: " << pr.predicted << " (" << pr.unpredicted
        << " without one), |error| p50 " << short_dur(pr.abs_error_p50_s) << ", p90 "
        << short_dur(pr.abs_error_p90_s) << " (wait p50 " << short_dur(pr.wait_p50_s) << "), "
        << fmt("%.1f%%", 100 * pr.within_10pct) << " within 10% of the wait\n";
  out << autoscale_table(f);
  if (f.sim.checkpoint_every_ns > 0)
    out << "\ncheckpoints every " << short_dur(static_cast<double>(f.sim.checkpoint_every_ns) / kNs)
        << ": " << f.sim.resumed_runs << " of " << f.sim.interrupted_runs
        << " interrupted runs resumed from one\n";
  if (f.sim.right_size_on)
    out << "\nright-sizing: " << f.sim.right_sized << " jobs right-sized, "
        << f.sim.right_size_retries << " retried whole after running out of GPU memory\n";
  return out.str();
}

}  // namespace sluice::sim
