#pragma once
// Job history and accounting (Slurm's sacct, and GPU-hours per namespace or user per period):
// one compact row per job, fed by the same events the server writes to its event log, and
// rebuilt from that log at startup. So it answers for jobs that were dropped from memory
// (--keep-finished-jobs) and across restarts. Bounded: beyond max_rows, the rows of the jobs
// that ended first are dropped. No clock: times are passed in.
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/model/job.h"

namespace sluice::server {

// What a job's reason says of a pod killed past its walltime (exit_text, state.cc): a failed job
// with it timed out (Slurm's TIMEOUT; the views' and rows' "timed_out").
inline constexpr const char* kPastWalltime = "was killed after running past its walltime";
inline bool reason_is_timeout(const std::string& reason) {
  return reason.find(kPastWalltime) != std::string::npos;
}

struct HistoryRow {
  JobId id = 0;
  std::string name, user, namespace_, queue;
  std::string state = "pending";  // state_name() of the job
  TimeNs submit_ns = 0;
  TimeNs first_start_ns = 0;  // 0: never started
  TimeNs end_ns = 0;          // 0: not ended
  int64_t gpu_milli = 0;      // the job's GPUs (milli) while it runs
  // Its runs: closed spans, and the open one (running_since >= 0).
  std::vector<std::pair<TimeNs, TimeNs>> runs;
  TimeNs running_since = -1;
  int32_t preemptions = 0;
  std::optional<int32_t> exit_code;
  std::string reason;
  JobId array_job = 0;
  int32_t array_task = -1;

  double gpu_hours(TimeNs now) const;
  // GPU-seconds of its runs within [from, to).
  double gpu_seconds_in(TimeNs from, TimeNs to, TimeNs now) const;
};

struct HistoryQuery {
  std::string user, namespace_, queue, name;
  std::vector<std::string> states;  // empty: all
  TimeNs since_ns = 0;              // 0: no bound; a job matches if it lived in [since, until]
  TimeNs until_ns = 0;
  size_t limit = 1000;
};

class History {
 public:
  explicit History(size_t max_rows = 1'000'000) : max_rows_(max_rows) {}

  void submit(HistoryRow row);
  void start(JobId id, TimeNs t);
  void preempt(JobId id, TimeNs t);  // also a user's requeue of a running job
  void end(JobId id, TimeNs t, const std::string& state, std::optional<int32_t> exit_code,
           const std::string& reason);
  void reopen(JobId id, TimeNs t);  // an ended job requeued by a user
  // One line of the event log (startup replay). False: not JSON, or an event it does not know.
  bool replay(std::string_view line);

  const HistoryRow* find(JobId id) const;
  size_t size() const { return rows_.size(); }

  // Rows matching `q` that `visible` allows, newest first; "truncated" when more matched.
  nlohmann::json query(const HistoryQuery& q, TimeNs now,
                       const std::function<bool(const HistoryRow&)>& visible) const;
  // GPU-hours of the matching jobs' runs per period ("day", "week" (from Monday), "month",
  // "all"; UTC) and per group ("namespace" or "user"), within [since, until] (0: no bound).
  nlohmann::json usage(const HistoryQuery& q, const std::string& period, const std::string& by,
                       TimeNs now, const std::function<bool(const HistoryRow&)>& visible) const;

  static nlohmann::json row_json(const HistoryRow& r, TimeNs now);

 private:
  HistoryRow* row(JobId id);
  void trim();

  size_t max_rows_;
  std::map<JobId, HistoryRow> rows_;
  std::set<std::pair<TimeNs, JobId>> ended_;  // (end, id): the first to drop
};

// A time as the history API takes it: unix seconds ("1764633600", decimals allowed), or a UTC
// date "2026-12-01" or date-time "2026-12-01T10:00" / "2026-12-01T10:00:00" (a trailing "Z" is
// allowed). nullopt: neither.
std::optional<TimeNs> parse_time_param(const std::string& text);

// The start of the period that holds `t` (unix ns, UTC), and the start of the next one.
std::pair<TimeNs, TimeNs> period_bounds(TimeNs t, const std::string& period);

}  // namespace sluice::server
