#pragma once
// Job deadlines (docs/config.md, "Job": spec.completeBy / spec.completeWithin). A deadline is
// the time by which a job should have finished; the ordering term (core/order/score.h) and the
// victim choice (core/preempt) favour jobs with little slack, and the server counts deadlines
// met and missed (/metrics). Times are on the scheduler's clock: Unix nanoseconds in the server.
#include <optional>
#include <string>
#include <string_view>

#include "core/model/job.h"

namespace sluice {

// The furthest a deadline may lie: completeWithin at most this long, completeBy at most this
// long after its submission.
inline constexpr TimeNs kMaxDeadlineAheadNs = kMaxDurationNs;  // 10 years

// RFC 3339 date-time ("2026-12-02T18:00:00Z", "2026-12-02T19:00:00.5+01:00") as Unix ns;
// nullopt when malformed or outside the years 1970-2199.
std::optional<TimeNs> parse_rfc3339_ns(std::string_view text);
// Unix ns as RFC 3339 UTC ("2026-12-02T18:00:00Z"; a fraction only where there is one).
std::string format_rfc3339(TimeNs unix_ns);

// Turns completeWithin into completeBy once submit_ns is known (idempotent).
void resolve_deadline(Job& job);

// Why the job's deadline cannot be accepted ("" when it can, or when it has none): before or
// at its submission, or further ahead than kMaxDeadlineAheadNs. Names the field.
std::string deadline_error(const Job& job);

// The job's slack at `now`: complete_by - now - walltime (walltime 0: unknown, counted as 0).
// Only meaningful when complete_by_ns > 0.
inline TimeNs deadline_slack(const Job& job, TimeNs now) {
  return job.complete_by_ns - now - job.walltime_ns;
}

// The verdict on a job's deadline when it ends at `end_ns`: "met" (it succeeded by its
// deadline), "missed" (it ended after the deadline, whatever the state), or nullptr (no
// deadline, rejected, or failed/cancelled before it: no verdict).
const char* deadline_outcome(const Job& job, bool succeeded, bool rejected, TimeNs end_ns);

}  // namespace sluice
