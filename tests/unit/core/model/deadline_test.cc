// Job deadlines (core/model/deadline.h): RFC 3339 times, completeWithin resolution, the checks
// at submission and the met / missed verdict.
#include "core/model/deadline.h"

#include <gtest/gtest.h>

namespace sluice {
namespace deadline_test {  // a namespace of its own: the unit tests build in unity batches
namespace {

constexpr TimeNs kSec = kNsPerSec;
constexpr int64_t k2026Dec02 = 1796169600;  // 2026-12-02T00:00:00Z, Unix seconds

TEST(Deadline, ParsesRfc3339Times) {
  EXPECT_EQ(parse_rfc3339_ns("1970-01-01T00:00:00Z"), 0);
  EXPECT_EQ(parse_rfc3339_ns("2026-12-02T00:00:00Z"), k2026Dec02 * kSec);
  EXPECT_EQ(parse_rfc3339_ns("2026-12-02T18:30:05Z"), (k2026Dec02 + 18 * 3600 + 1805) * kSec);
  // Offsets: 19:00 at +01:00 is 18:00 UTC; lower-case t and z as RFC 3339 allows.
  EXPECT_EQ(parse_rfc3339_ns("2026-12-02T19:00:00+01:00"), (k2026Dec02 + 18 * 3600) * kSec);
  EXPECT_EQ(parse_rfc3339_ns("2026-12-01T22:00:00-02:00"), k2026Dec02 * kSec);
  EXPECT_EQ(parse_rfc3339_ns("2026-12-02t00:00:00z"), k2026Dec02 * kSec);
  // Fractions down to the nanosecond; a leap second counts as :59.
  EXPECT_EQ(parse_rfc3339_ns("2026-12-02T00:00:00.5Z"), k2026Dec02 * kSec + kSec / 2);
  EXPECT_EQ(parse_rfc3339_ns("2026-12-02T00:00:00.000000001Z"), k2026Dec02 * kSec + 1);
  EXPECT_EQ(parse_rfc3339_ns("2016-12-31T23:59:60Z"), parse_rfc3339_ns("2016-12-31T23:59:59Z"));
  EXPECT_EQ(parse_rfc3339_ns("2024-02-29T00:00:00Z").has_value(), true);  // leap year
}

TEST(Deadline, RefusesMalformedTimes) {
  for (const char* bad : {"",
                          "2026-12-02",
                          "2026-12-02T18:00:00",
                          "2026-12-02 18:00:00Z",
                          "2026-13-01T00:00:00Z",
                          "2026-02-29T00:00:00Z",
                          "2026-04-31T00:00:00Z",
                          "2026-12-02T24:00:00Z",
                          "2026-12-02T18:60:00Z",
                          "2026-12-02T18:00:00.Z",
                          "2026-12-02T18:00:00.0000000001Z",
                          "2026-12-02T18:00:00+0100",
                          "2026-12-02T18:00:00Z junk",
                          "1969-12-31T23:59:59Z",
                          "2200-01-01T00:00:00Z",
                          "99999-01-01T00:00:00Z",
                          "-2026-12-02T00:00:00Z",
                          "2h",
                          "tomorrow",
                          "1970-01-01T00:00:00+00:01"})
    EXPECT_FALSE(parse_rfc3339_ns(bad).has_value()) << bad;
}

TEST(Deadline, FormatsWhatItParses) {
  for (const char* t : {"1970-01-01T00:00:00Z", "2026-12-02T18:30:05Z", "2024-02-29T23:59:59Z",
                        "2026-12-02T18:30:05.25Z", "2199-12-31T23:59:59.000000001Z"}) {
    auto ns = parse_rfc3339_ns(t);
    ASSERT_TRUE(ns) << t;
    EXPECT_EQ(format_rfc3339(*ns), t);
  }
}

TEST(Deadline, CompleteWithinCountsFromSubmission) {
  Job j;
  j.submit_ns = 100 * kSec;
  j.complete_within_ns = 7200 * kSec;
  EXPECT_EQ(deadline_error(j), "");
  resolve_deadline(j);
  EXPECT_EQ(j.complete_by_ns, 7300 * kSec);
  EXPECT_EQ(j.complete_within_ns, 0);
  resolve_deadline(j);  // idempotent
  EXPECT_EQ(j.complete_by_ns, 7300 * kSec);
}

TEST(Deadline, SubmissionChecksNameTheField) {
  Job j;
  j.submit_ns = k2026Dec02 * kSec;
  EXPECT_EQ(deadline_error(j), "");  // none
  j.complete_by_ns = j.submit_ns - kSec;
  EXPECT_EQ(deadline_error(j),
            "spec.completeBy (2026-12-01T23:59:59Z) is not after the job's submission "
            "(2026-12-02T00:00:00Z)");
  j.complete_by_ns = j.submit_ns;  // at submission: nothing left to meet it
  EXPECT_NE(deadline_error(j).find("is not after the job's submission"), std::string::npos);
  j.complete_by_ns = j.submit_ns + kMaxDeadlineAheadNs + 1;
  EXPECT_NE(deadline_error(j).find("spec.completeBy"), std::string::npos);
  EXPECT_NE(deadline_error(j).find("more than 10 years"), std::string::npos);
  j.complete_by_ns = j.submit_ns + 3600 * kSec;
  EXPECT_EQ(deadline_error(j), "");
  j.complete_by_ns = 0;
  j.complete_within_ns = -kSec;
  EXPECT_EQ(deadline_error(j), "spec.completeWithin must not be negative");
  j.complete_within_ns = kMaxDeadlineAheadNs + 1;
  EXPECT_EQ(deadline_error(j), "spec.completeWithin is further ahead than 10 years");
}

TEST(Deadline, VerdictWhenTheJobEnds) {
  Job j;
  EXPECT_EQ(deadline_outcome(j, true, false, 5 * kSec), nullptr);  // no deadline
  j.complete_by_ns = 10 * kSec;
  EXPECT_STREQ(deadline_outcome(j, true, false, 10 * kSec), "met");      // at the deadline
  EXPECT_STREQ(deadline_outcome(j, true, false, 11 * kSec), "missed");   // late
  EXPECT_STREQ(deadline_outcome(j, false, false, 11 * kSec), "missed");  // failed after it
  EXPECT_EQ(deadline_outcome(j, false, false, 9 * kSec), nullptr);  // failed before: no verdict
  EXPECT_EQ(deadline_outcome(j, false, true, 11 * kSec), nullptr);  // rejected
  // Slack: deadline - now - walltime.
  j.walltime_ns = 3 * kSec;
  EXPECT_EQ(deadline_slack(j, 2 * kSec), 5 * kSec);
}

}  // namespace
}  // namespace deadline_test
}  // namespace sluice
