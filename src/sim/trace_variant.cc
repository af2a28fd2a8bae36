#include "sim/trace_variant.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <sstream>

#include "sim/parse_num.h"

namespace sluice::sim {

namespace {

std::optional<double> parse_double(const std::string& s) {
  double v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty() || !std::isfinite(v))
    return std::nullopt;
  return v;
}

// A whole number in [0, max], or none.
std::optional<uint64_t> parse_count(const std::string& s, double max) {
  const auto n = parse_double(s);
  if (!n || *n < 0 || *n != std::floor(*n) || *n > max) return std::nullopt;
  return static_cast<uint64_t>(*n);
}

void resample(TraceOutput& t, Rng& rng) {
  const std::vector<TraceJob> from = std::move(t.jobs);
  t.jobs.clear();
  t.jobs.reserve(from.size());
  for (size_t k = 0; k < from.size(); ++k) {
    TraceJob tj = from[rng.below(from.size())];
    tj.job.id = static_cast<JobId>(k + 1);
    tj.job.name += "~" + std::to_string(k + 1);
    t.jobs.push_back(std::move(tj));
  }
}

// A new submit time; the deadline keeps its distance from it.
void move_submit(TraceJob& tj, TimeNs submit_ns) {
  if (tj.complete_by_ns > 0) tj.complete_by_ns += submit_ns - tj.job.submit_ns;
  tj.job.submit_ns = submit_ns;
}

std::pair<TimeNs, TimeNs> arrival_span(const TraceOutput& t) {
  TimeNs lo = t.jobs.front().job.submit_ns, hi = lo;
  for (const auto& tj : t.jobs) {
    lo = std::min(lo, tj.job.submit_ns);
    hi = std::max(hi, tj.job.submit_ns);
  }
  return {lo, hi};
}

// Each queue's arrivals rotate within [lo, hi] by an offset drawn per queue (queues in name
// order, so the draws do not depend on the trace's row order).
void shift_vcs(TraceOutput& t, Rng& rng) {
  const auto [lo, hi] = arrival_span(t);
  const TimeNs span = hi - lo + 1;
  std::map<std::string, TimeNs> offset;
  for (const auto& tj : t.jobs) offset.emplace(tj.job.queue, 0);
  for (auto& [q, off] : offset)
    off = static_cast<TimeNs>(rng.uniform() * static_cast<double>(span));
  for (auto& tj : t.jobs) {
    const TimeNs rel = tj.job.submit_ns - lo + offset.at(tj.job.queue);
    move_submit(tj, lo + rel % span);
  }
}

// A job that becomes best-effort loses its deadline and utility (best-effort work has none);
// one that becomes strict has none to get. (A utility counts from the submission: moving the
// submit time leaves it alone.)
void set_class(TraceJob& tj, bool best_effort, const VariantClasses& c) {
  tj.job.exec_mut().priority_class = best_effort ? c.best_effort : c.strict;
  tj.job.preemptible = best_effort;
  if (best_effort) {
    tj.complete_by_ns = 0;
    tj.utility.clear();
  }
}

// Flips jobs at random so that the expected best-effort share is `p`; one draw per job.
void best_effort_share(TraceOutput& t, double p, const VariantClasses& c, Rng& rng) {
  size_t be = 0;
  for (const auto& tj : t.jobs) be += tj.job.exec().priority_class == c.best_effort ? 1 : 0;
  const double cur = static_cast<double>(be) / static_cast<double>(t.jobs.size());
  // Probability that a job of the majority-to-shrink class flips.
  const double up = cur < 1 ? std::max(0.0, (p - cur) / (1 - cur)) : 0;  // strict -> BE
  const double down = cur > 0 ? std::max(0.0, (cur - p) / cur) : 0;      // BE -> strict
  for (auto& tj : t.jobs) {
    const bool is_be = tj.job.exec().priority_class == c.best_effort;
    const double u = rng.uniform();
    if (!is_be && u < up) set_class(tj, true, c);
    if (is_be && u < down) set_class(tj, false, c);
  }
}

// A time `within` after the submission, for a job that runs `run`: its slack beyond the run
// time times f (a time shorter than the run time, which no schedule meets, stays).
TimeNs scaled_within(TimeNs within, TimeNs run, double f) {
  if (within < run) return within;
  return run + static_cast<TimeNs>(std::llround(std::min(static_cast<double>(within - run) * f,
                                                         static_cast<double>(kMaxTraceNs))));
}

// Every deadline's and utility step's slack beyond the job's run time multiplied by f.
void scale_slack(TraceOutput& t, double f) {
  for (auto& tj : t.jobs) {
    if (tj.complete_by_ns > 0) {
      const TimeNs within = tj.complete_by_ns - tj.job.submit_ns;
      tj.complete_by_ns = tj.job.submit_ns + scaled_within(within, tj.duration_ns, f);
    }
    for (auto& step : tj.utility) step.within_ns = scaled_within(step.within_ns, tj.duration_ns, f);
  }
}

// Arrival gaps divided by x; no submit time moves past kMaxTraceNs (parse_num.h).
void scale_load(TraceOutput& t, double x) {
  const TimeNs lo = arrival_span(t).first;
  for (auto& tj : t.jobs)
    move_submit(tj, lo + static_cast<TimeNs>(
                             std::llround(std::min(static_cast<double>(tj.job.submit_ns - lo) / x,
                                                   static_cast<double>(kMaxTraceNs - lo)))));
}

// A step's own generator: one draw of the variant's, mixed with `salt` (from the replica
// number), so replicas differ in that step's draws only.
Rng own_rng(Rng& variant_rng, uint64_t salt) {
  const uint64_t seed = static_cast<uint64_t>(variant_rng.uniform() * 0x1.0p53);
  return Rng(seed ^ salt);
}

// Each submit time moves by a uniform draw in [-j, j], clamped to the arrival span (one draw per
// job, in trace order), from a generator of its own (own_rng).
void jitter(TraceOutput& t, TimeNs j, uint64_t replica, Rng& variant_rng) {
  Rng rng = own_rng(variant_rng, replica * 0x9E3779B97F4A7C15ULL);
  const auto [lo, hi] = arrival_span(t);
  for (auto& tj : t.jobs) {
    const auto d =
        static_cast<TimeNs>(std::llround((2 * rng.uniform() - 1) * static_cast<double>(j)));
    move_submit(tj, std::clamp(tj.job.submit_ns + d, lo, hi));
  }
}

// Each walltime estimate (jobs that have one) becomes the job's run time times a log-uniform
// draw in [1/f, f] (one draw per job, in trace order), from a generator of its own (own_rng).
void walltime_error(TraceOutput& t, double f, uint64_t replica, Rng& variant_rng) {
  Rng rng = own_rng(variant_rng, (replica + 1) * 0xC2B2AE3D27D4EB4FULL);
  const double log_f = std::log(f);
  for (auto& tj : t.jobs) {
    const double factor = std::exp((2 * rng.uniform() - 1) * log_f);
    if (tj.job.walltime_ns > 0)
      tj.job.walltime_ns = std::max<TimeNs>(
          1, static_cast<TimeNs>(std::llround(std::min(static_cast<double>(tj.duration_ns) * factor,
                                                       static_cast<double>(kMaxTraceNs)))));
  }
}

}  // namespace

std::optional<TraceVariant> parse_variant(const std::string& spec, std::string* error) {
  TraceVariant v;
  std::istringstream in(spec);
  std::string step;
  auto fail = [&](const std::string& why) -> std::optional<TraceVariant> {
    if (error) *error = "--variant '" + spec + "': " + why;
    return std::nullopt;
  };
  while (std::getline(in, step, ',')) {
    const auto eq = step.find('=');
    const std::string key = step.substr(0, eq);
    const std::string val = eq == std::string::npos ? "" : step.substr(eq + 1);
    if (eq == std::string::npos && (key == "base" || key.empty())) continue;
    if (eq == std::string::npos && key == "resample") {
      v.resample = true;
    } else if (eq == std::string::npos && key == "shift-vcs") {
      v.shift_vcs = true;
    } else if (eq == std::string::npos && key == "strict") {
      v.best_effort_share = 0;
    } else if (key == "best-effort") {
      const auto p = parse_double(val);
      if (!p || *p < 0 || *p > 1) return fail("best-effort: '" + val + "' is not in [0, 1]");
      v.best_effort_share = *p;
    } else if (key == "slack") {
      const auto x = parse_double(val);
      if (!x || *x < 0 || *x > 10) return fail("slack: '" + val + "' is not in [0, 10]");
      v.slack = *x;
    } else if (key == "seed") {
      const auto n = parse_count(val, 1e15);
      if (!n) return fail("seed: '" + val + "' is not a non-negative integer");
      v.seed = *n;
    } else if (key == "load") {
      const auto x = parse_double(val);
      if (!x || *x < 0.1 || *x > 10) return fail("load: '" + val + "' is not in [0.1, 10]");
      v.load = *x;
    } else if (key == "jitter") {
      const auto x = parse_double(val);
      if (!x || *x < 0 || *x > 3600)
        return fail("jitter: '" + val + "' is not in [0, 3600] seconds");
      v.jitter_ns = static_cast<TimeNs>(std::llround(*x * static_cast<double>(kNsPerSec)));
    } else if (key == "walltime-error") {
      const auto x = parse_double(val);
      if (!x || *x < 1 || *x > 100) return fail("walltime-error: '" + val + "' is not in [1, 100]");
      v.walltime_error = *x;
    } else if (key == "replica") {
      const auto n = parse_count(val, 1e6);
      if (!n) return fail("replica: '" + val + "' is not an integer in [0, 1000000]");
      v.replica = *n;
    } else {
      return fail("unknown step '" + step +
                  "' (expected base, resample, shift-vcs, strict, best-effort=P, slack=F, "
                  "load=X, jitter=S, walltime-error=F, replica=K, seed=N)");
    }
  }
  return v;
}

void apply_variant(TraceOutput& trace, const TraceVariant& v, const VariantClasses& classes,
                   Rng& rng) {
  if (trace.jobs.empty()) return;
  // 1. Which jobs, 2. when each queue's arrivals come, 3. their classes and deadlines, 4. the
  // load, 5. jitter, 6. walltime estimates.
  if (v.resample) resample(trace, rng);
  if (v.shift_vcs) shift_vcs(trace, rng);
  if (v.best_effort_share) best_effort_share(trace, *v.best_effort_share, classes, rng);
  if (v.slack != 1.0) scale_slack(trace, v.slack);
  if (v.load != 1.0) scale_load(trace, v.load);
  if (v.jitter_ns > 0) jitter(trace, v.jitter_ns, v.replica, rng);
  if (v.walltime_error > 1) walltime_error(trace, v.walltime_error, v.replica, rng);
}

}  // namespace sluice::sim
