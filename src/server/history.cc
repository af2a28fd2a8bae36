#include "server/history.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "core/model/civil_date.h"

namespace sluice::server {

using nlohmann::json;

namespace {

constexpr TimeNs kDayNs = 86400 * kNsPerSec;

int64_t floor_div(int64_t a, int64_t b) {
  return a / b - (a % b != 0 && (a < 0) != (b < 0));
}

std::string date_text(TimeNs t) {
  const int64_t days = floor_div(t, kDayNs);
  int64_t y = 0, m = 0;
  civil_from_days(days, &y, &m);
  const int64_t d = days - days_from_civil(y, m, 1) + 1;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%04lld-%02lld-%02lld", static_cast<long long>(y),
                static_cast<long long>(m), static_cast<long long>(d));
  return buf;
}

double round3(double v) {
  return std::round(v * 1e3) / 1e3;
}

double round6(double v) {  // GPU-hours: a second of one GPU is 0.000278
  return std::round(v * 1e6) / 1e6;
}

bool matches(const HistoryRow& r, const HistoryQuery& q) {
  if (!q.user.empty() && r.user != q.user) return false;
  if (!q.namespace_.empty() && r.namespace_ != q.namespace_) return false;
  if (!q.queue.empty() && r.queue != q.queue) return false;
  if (!q.name.empty() && r.name != q.name) return false;
  if (!q.states.empty() && std::find(q.states.begin(), q.states.end(), r.state) == q.states.end())
    return false;
  // It lived in [since, until]: submitted by until, not ended before since.
  if (q.until_ns > 0 && r.submit_ns > q.until_ns) return false;
  if (q.since_ns > 0 && r.end_ns > 0 && r.end_ns < q.since_ns) return false;
  return true;
}

json time_or_null(TimeNs t) {
  return t > 0 ? json(static_cast<double>(t) / 1e9) : json(nullptr);
}

}  // namespace

std::optional<TimeNs> parse_time_param(const std::string& text) {
  if (text.empty() || text.size() > 32) return std::nullopt;
  if (text.find('-') == std::string::npos || text.find('-') == 0) {
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    if (end == text.c_str() || *end != '\0' || !std::isfinite(v) || v < 0 || v > 1e11)
      return std::nullopt;
    return static_cast<TimeNs>(v * 1e9);
  }
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0, n = 0;
  std::string t = text;
  if (t.back() == 'Z') t.pop_back();
  const int got = std::sscanf(t.c_str(), "%4d-%2d-%2d%n", &y, &mo, &d, &n);
  if (got != 3 || y < 1970 || mo < 1 || mo > 12 || d < 1 || d > 31) return std::nullopt;
  if (static_cast<size_t>(n) != t.size()) {
    int n2 = 0;
    const char* rest = t.c_str() + n;
    if (*rest != 'T' && *rest != ' ') return std::nullopt;
    if (std::sscanf(rest + 1, "%2d:%2d%n", &h, &mi, &n2) != 2) return std::nullopt;
    rest += 1 + n2;
    if (*rest == ':') {
      if (std::sscanf(rest + 1, "%2d%n", &s, &n2) != 1) return std::nullopt;
      rest += 1 + n2;
    }
    if (*rest != '\0' || h > 23 || mi > 59 || s > 60) return std::nullopt;
  }
  const int64_t days = days_from_civil(y, mo, d);
  return (days * 86400 + h * 3600 + mi * 60 + s) * kNsPerSec;
}

std::pair<TimeNs, TimeNs> period_bounds(TimeNs t, const std::string& period) {
  const int64_t days = floor_div(t, kDayNs);
  if (period == "day") return {days * kDayNs, (days + 1) * kDayNs};
  if (period == "week") {
    const int64_t monday = days - (days % 7 + 7 + 3) % 7;  // 1970-01-01 was a Thursday
    return {monday * kDayNs, (monday + 7) * kDayNs};
  }
  if (period == "month") {
    int64_t y = 0, m = 0;
    civil_from_days(days, &y, &m);
    const int64_t first = days_from_civil(y, m, 1);
    const int64_t next = m == 12 ? days_from_civil(y + 1, 1, 1) : days_from_civil(y, m + 1, 1);
    return {first * kDayNs, next * kDayNs};
  }
  return {0, std::numeric_limits<TimeNs>::max()};  // "all"
}

double HistoryRow::gpu_seconds_in(TimeNs from, TimeNs to, TimeNs now) const {
  double ns = 0;
  auto add = [&](TimeNs a, TimeNs b) {
    a = std::max(a, from);
    b = std::min(b, to);
    if (b > a) ns += static_cast<double>(b - a);
  };
  for (const auto& [a, b] : runs) add(a, b);
  if (running_since >= 0) add(running_since, now);
  return ns / 1e9 * static_cast<double>(gpu_milli) / 1000.0;
}

double HistoryRow::gpu_hours(TimeNs now) const {
  return gpu_seconds_in(0, std::numeric_limits<TimeNs>::max(), now) / 3600.0;
}

HistoryRow* History::row(JobId id) {
  auto it = rows_.find(id);
  return it == rows_.end() ? nullptr : &it->second;
}

const HistoryRow* History::find(JobId id) const {
  auto it = rows_.find(id);
  return it == rows_.end() ? nullptr : &it->second;
}

void History::submit(HistoryRow row) {
  const JobId id = row.id;
  rows_[id] = std::move(row);
  trim();
}

void History::start(JobId id, TimeNs t) {
  HistoryRow* r = row(id);
  if (!r) return;
  if (r->first_start_ns == 0) r->first_start_ns = t;
  r->running_since = t;
  r->state = "running";
}

void History::preempt(JobId id, TimeNs t) {
  HistoryRow* r = row(id);
  if (!r) return;
  if (r->running_since >= 0) r->runs.emplace_back(r->running_since, t);
  r->running_since = -1;
  r->preemptions += 1;
  r->state = "pending";
}

void History::end(JobId id, TimeNs t, const std::string& state, std::optional<int32_t> exit_code,
                  const std::string& reason) {
  HistoryRow* r = row(id);
  if (!r) return;
  if (r->running_since >= 0) r->runs.emplace_back(r->running_since, t);
  r->running_since = -1;
  r->state = state.empty() ? "ended" : state;
  r->end_ns = t;
  r->exit_code = exit_code;
  r->reason = reason;
  ended_.insert({t, id});
}

void History::reopen(JobId id, TimeNs) {
  HistoryRow* r = row(id);
  if (!r) return;
  ended_.erase({r->end_ns, id});
  r->end_ns = 0;
  r->exit_code.reset();
  r->state = "pending";
}

// Drops the rows of the jobs that ended first beyond max_rows_ (live jobs are kept).
void History::trim() {
  while (rows_.size() > max_rows_ && !ended_.empty()) {
    rows_.erase(ended_.begin()->second);
    ended_.erase(ended_.begin());
  }
}

bool History::replay(std::string_view line) {
  const json e = json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!e.is_object() || !e.contains("id") || !e["id"].is_number_unsigned()) return false;
  const JobId id = e["id"].get<JobId>();
  const double secs = e.contains("time") && e["time"].is_number() ? e["time"].get<double>() : 0;
  const auto t = static_cast<TimeNs>(secs * 1e9);
  auto text = [&](const char* k) {
    return e.contains(k) && e[k].is_string() ? e[k].get<std::string>() : std::string();
  };
  auto integer = [&](const char* k, int64_t dflt) {
    return e.contains(k) && e[k].is_number_integer() ? e[k].get<int64_t>() : dflt;
  };
  const std::string kind = text("event");
  if (kind == "submit") {
    HistoryRow r;
    r.id = id;
    r.name = text("name");
    r.user = text("user");
    r.namespace_ = text("namespace");
    r.queue = text("queue");
    r.submit_ns = t;
    // Logs written before job_gpu_milli: one pod set (pods x gpus x share).
    r.gpu_milli = integer("job_gpu_milli",
                          integer("pods", 1) * integer("gpus", 0) * integer("gpu_milli", 1000));
    r.array_job = static_cast<JobId>(integer("array_job", 0));
    r.array_task = static_cast<int32_t>(integer("array_task", -1));
    submit(std::move(r));
  } else if (kind == "start") {
    start(id, t);
  } else if (kind == "preempt") {
    preempt(id, t);
  } else if (kind == "requeue") {
    reopen(id, t);
  } else if (kind == "end") {
    std::optional<int32_t> code;
    if (e.contains("exit_code") && e["exit_code"].is_number_integer())
      code = e["exit_code"].get<int32_t>();
    end(id, t, text("state"), code, text("reason"));
  } else {
    return false;
  }
  return true;
}

json History::row_json(const HistoryRow& r, TimeNs now) {
  const TimeNs until = r.end_ns > 0 ? r.end_ns : now;
  const TimeNs elapsed = r.first_start_ns > 0 ? until - r.first_start_ns : 0;
  return {{"id", r.id},
          {"name", r.name},
          {"user", r.user},
          {"namespace", r.namespace_},
          {"queue", r.queue},
          {"state", r.state},
          {"timed_out", r.state == "failed" && reason_is_timeout(r.reason)},
          {"submit_time", time_or_null(r.submit_ns)},
          {"start_time", time_or_null(r.first_start_ns)},
          {"end_time", time_or_null(r.end_ns)},
          {"elapsed_s", round3(static_cast<double>(std::max<TimeNs>(elapsed, 0)) / 1e9)},
          {"gpus", static_cast<double>(r.gpu_milli) / 1000.0},
          {"gpu_hours", round6(r.gpu_hours(now))},
          {"exit_code", r.exit_code ? json(*r.exit_code) : json(nullptr)},
          {"preemptions", r.preemptions},
          {"reason", r.reason},
          {"array_job", r.array_task >= 0 ? json(r.array_job) : json(nullptr)},
          {"array_task", r.array_task >= 0 ? json(r.array_task) : json(nullptr)}};
}

json History::query(const HistoryQuery& q, TimeNs now,
                    const std::function<bool(const HistoryRow&)>& visible) const {
  json jobs = json::array();
  bool truncated = false;
  for (auto it = rows_.rbegin(); it != rows_.rend(); ++it) {  // newest first
    const HistoryRow& r = it->second;
    if (!matches(r, q) || !visible(r)) continue;
    if (jobs.size() == q.limit) {
      truncated = true;
      break;
    }
    jobs.push_back(row_json(r, now));
  }
  return {{"jobs", std::move(jobs)}, {"truncated", truncated}};
}

// Every run is split at period boundaries, so a job that ran across midnight is charged to
// both days. Groups and periods come out sorted (period start, then group name).
json History::usage(const HistoryQuery& q, const std::string& period, const std::string& by,
                    TimeNs now, const std::function<bool(const HistoryRow&)>& visible) const {
  const TimeNs lo = q.since_ns;
  const TimeNs hi = q.until_ns > 0 ? q.until_ns : now;
  std::map<std::pair<TimeNs, std::string>, std::pair<double, int64_t>> sums;  // -> (gpu-s, jobs)
  for (const auto& [id, r] : rows_) {
    if (!matches(r, q) || !visible(r)) continue;
    std::vector<std::pair<TimeNs, TimeNs>> spans = r.runs;
    if (r.running_since >= 0) spans.emplace_back(r.running_since, now);
    std::set<TimeNs> periods_of_job;
    for (auto [a, b] : spans) {
      a = std::max(a, lo);
      b = std::min(b, hi);
      for (TimeNs at = a; at < b;) {  // bounded: one step per period the span covers
        const auto [start, next] = period_bounds(at, period);
        const TimeNs stop = std::min(b, next);
        auto& s = sums[{start, by == "user" ? r.user : r.namespace_}];
        s.first += static_cast<double>(stop - at) / 1e9 * static_cast<double>(r.gpu_milli) / 1000.0;
        if (periods_of_job.insert(start).second) s.second += 1;
        at = stop;
      }
    }
  }
  json rows = json::array();
  for (const auto& [key, s] : sums) {
    const auto& [start, group] = key;
    rows.push_back({{"period", period == "all" ? json("all") : json(date_text(start))},
                    {by == "user" ? "user" : "namespace", group},
                    {"gpu_hours", round6(s.first / 3600.0)},
                    {"jobs", s.second}});
  }
  return {{"period", period}, {"by", by}, {"usage", std::move(rows)}};
}

}  // namespace sluice::server
