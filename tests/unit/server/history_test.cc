// The job history and GPU-hour accounting (server/history.h), fed as the server feeds it and
// rebuilt from event-log lines.
#include "server/history.h"

#include <gtest/gtest.h>

namespace sluice::server {
namespace {

constexpr TimeNs kS = kNsPerSec;
constexpr TimeNs kDay = 86400 * kS;
// 2026-12-01T00:00:00Z, a Tuesday.
constexpr TimeNs kDec1 = 1'796'083'200 * kS;

auto all = [](const HistoryRow&) { return true; };

HistoryRow row(JobId id, const std::string& ns, const std::string& user, int64_t gpu_milli,
               TimeNs submit) {
  HistoryRow r;
  r.id = id;
  r.name = "j" + std::to_string(id);
  r.namespace_ = ns;
  r.user = user;
  r.queue = "q";
  r.gpu_milli = gpu_milli;
  r.submit_ns = submit;
  return r;
}

TEST(History, RowsFollowTheEvents) {
  History h;
  h.submit(row(1, "a", "alice", 2000, kDec1));
  h.start(1, kDec1 + 10 * kS);
  h.preempt(1, kDec1 + 1810 * kS);  // 30 min on 2 GPUs: 1 GPU-hour
  h.start(1, kDec1 + 2000 * kS);
  h.end(1, kDec1 + 3800 * kS, "failed", 3, "pod 0 exited with code 3");
  const HistoryRow* r = h.find(1);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->state, "failed");
  EXPECT_EQ(r->preemptions, 1);
  EXPECT_NEAR(r->gpu_hours(0), 2.0, 1e-9);  // two runs of 30 min on 2 GPUs
  const auto q = h.query(HistoryQuery{}, kDec1 + 4000 * kS, all);
  ASSERT_EQ(q["jobs"].size(), 1u);
  EXPECT_EQ(q["jobs"][0]["exit_code"], 3);
  EXPECT_EQ(q["jobs"][0]["elapsed_s"], 3790.0);  // first start to end
  EXPECT_EQ(q["jobs"][0]["gpu_hours"], 2.0);
}

TEST(History, FiltersAndLimit) {
  History h;
  h.submit(row(1, "a", "alice", 1000, kDec1));
  h.submit(row(2, "b", "bob", 1000, kDec1 + kDay));
  h.end(2, kDec1 + kDay + kS, "cancelled", std::nullopt, "");
  h.submit(row(3, "a", "bob", 1000, kDec1 + 2 * kDay));
  auto ids = [&](HistoryQuery q) {
    std::vector<JobId> out;
    const auto reply = h.query(q, kDec1 + 3 * kDay, all);
    for (const auto& j : reply["jobs"]) out.push_back(j["id"]);
    return out;
  };
  HistoryQuery q;
  EXPECT_EQ(ids(q), (std::vector<JobId>{3, 2, 1}));  // newest first
  q.user = "bob";
  EXPECT_EQ(ids(q), (std::vector<JobId>{3, 2}));
  q = {};
  q.states = {"cancelled"};
  EXPECT_EQ(ids(q), (std::vector<JobId>{2}));
  q = {};
  q.since_ns = kDec1 + 2 * kDay;  // job 2 ended before: out
  EXPECT_EQ(ids(q), (std::vector<JobId>{3, 1}));
  q = {};
  q.until_ns = kDec1 + kDay / 2;  // only job 1 was submitted by then
  EXPECT_EQ(ids(q), (std::vector<JobId>{1}));
  q = {};
  q.limit = 2;
  EXPECT_TRUE(h.query(q, 0, all)["truncated"].get<bool>());
}

TEST(History, UsageSplitsRunsAtPeriodBoundaries) {
  History h;
  h.submit(row(1, "a", "alice", 4000, kDec1));
  h.start(1, kDec1 + kDay - 1800 * kS);                    // 30 min before midnight on 4 GPUs...
  h.end(1, kDec1 + kDay + 3600 * kS, "succeeded", 0, "");  // ...then 1 h after
  h.submit(row(2, "b", "bob", 1000, kDec1));
  h.start(2, kDec1);
  const auto u = h.usage(HistoryQuery{}, "day", "namespace", kDec1 + kDay + 7200 * kS, all);
  ASSERT_EQ(u["usage"].size(), 4u) << u.dump();
  EXPECT_EQ(u["usage"][0]["period"], "2026-12-01");
  EXPECT_EQ(u["usage"][0]["namespace"], "a");
  EXPECT_EQ(u["usage"][0]["gpu_hours"], 2.0);  // 0.5 h x 4 GPUs
  EXPECT_EQ(u["usage"][1]["namespace"], "b");
  EXPECT_EQ(u["usage"][1]["gpu_hours"], 24.0);  // still running: accrues to `now`
  EXPECT_EQ(u["usage"][2]["period"], "2026-12-02");
  EXPECT_EQ(u["usage"][2]["gpu_hours"], 4.0);
  EXPECT_EQ(u["usage"][3]["gpu_hours"], 2.0);
  const auto m = h.usage(HistoryQuery{}, "month", "user", kDec1 + kDay + 7200 * kS, all);
  ASSERT_EQ(m["usage"].size(), 2u);
  EXPECT_EQ(m["usage"][0]["period"], "2026-12-01");
  EXPECT_EQ(m["usage"][0]["user"], "alice");
  EXPECT_EQ(m["usage"][0]["gpu_hours"], 6.0);
}

TEST(History, PeriodsAndTimes) {
  EXPECT_EQ(period_bounds(kDec1 + 5 * kS, "week").first, kDec1 - kDay);  // Monday Nov 30
  EXPECT_EQ(period_bounds(kDec1 + 5 * kS, "month").second, kDec1 + 31 * kDay);
  EXPECT_EQ(parse_time_param("2026-12-01"), kDec1);
  EXPECT_EQ(parse_time_param("2026-12-01T01:00"), kDec1 + 3600 * kS);
  EXPECT_EQ(parse_time_param("2026-12-01T01:00:30Z"), kDec1 + 3630 * kS);
  EXPECT_EQ(parse_time_param("1796083200"), kDec1);
  EXPECT_EQ(parse_time_param("1796083200.5"), kDec1 + kS / 2);
  for (const char* bad : {"", "yesterday", "2026-13-01", "2026-12-01T25:00", "-5", "2026-12-01x"})
    EXPECT_FALSE(parse_time_param(bad)) << bad;
}

TEST(History, ReplaysTheEventLog) {
  History h;
  for (
      const char* line :
      {R"({"event":"submit","time":10,"id":5,"name":"a","namespace":"n","queue":"q","user":"u","pods":2,"gpus":4,"gpu_milli":1000})",
       R"({"event":"start","time":20,"id":5})",
       R"({"event":"end","time":3620,"id":5,"state":"succeeded","exit_code":0})",
       R"({"event":"requeue","time":4000,"id":5})"})
    EXPECT_TRUE(h.replay(line)) << line;
  EXPECT_FALSE(h.replay("not json"));
  EXPECT_FALSE(h.replay(R"({"event":"nope","time":1,"id":5})"));
  const HistoryRow* r = h.find(5);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->gpu_milli, 8000);   // pods x gpus without job_gpu_milli
  EXPECT_EQ(r->state, "pending");  // requeued after its end
  EXPECT_NEAR(r->gpu_hours(0), 8.0, 1e-9);
}

TEST(History, DropsTheFirstEndedBeyondItsBound) {
  History h(2);
  h.submit(row(1, "a", "u", 0, 0));
  h.submit(row(2, "a", "u", 0, 0));
  h.end(2, 5, "succeeded", 0, "");
  h.submit(row(3, "a", "u", 0, 0));
  EXPECT_EQ(h.size(), 2u);
  EXPECT_EQ(h.find(2), nullptr);  // ended first; job 1 still lives
  EXPECT_NE(h.find(1), nullptr);
}

}  // namespace
}  // namespace sluice::server
