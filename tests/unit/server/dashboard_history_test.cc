// The web dashboard's history ring (src/server/dashboard_history.h): bounded, oldest first,
// and the wait p99 of a recent window from cumulative histogram counts.
#include "server/dashboard_history.h"

#include <gtest/gtest.h>

#include <cmath>

namespace sluice::server {
namespace {

using nlohmann::json;

const std::vector<double> kBounds = {1, 5, 15, 60};

DashboardSample sample(double t, std::vector<uint64_t> counts = {}) {
  DashboardSample s;
  s.t = t;
  s.data = {{"classes", json::object()}, {"preemptions_total", t}};
  if (!counts.empty()) s.wait_counts["high"] = std::move(counts);
  return s;
}

TEST(HistogramQuantile, InterpolatesWithinTheBucketLikePrometheus) {
  // 100 observations: 50 in (0,1], 50 in (1,5]. p50 = 1 (end of the first bucket); p99: rank
  // 99 is 49/50 of the way through (1,5] -> 1 + 4 * 0.98 = 4.92.
  EXPECT_DOUBLE_EQ(histogram_quantile(kBounds, {50, 50, 0, 0, 0}, 0.5), 1.0);
  EXPECT_NEAR(histogram_quantile(kBounds, {50, 50, 0, 0, 0}, 0.99), 4.92, 1e-9);
  // Everything above the last bound: the +Inf bucket answers the last bound.
  EXPECT_DOUBLE_EQ(histogram_quantile(kBounds, {0, 0, 0, 0, 3}, 0.99), 60.0);
  EXPECT_TRUE(std::isnan(histogram_quantile(kBounds, {0, 0, 0, 0, 0}, 0.99)));
}

TEST(DashboardHistory, KeepsTheLastCapacitySamplesOldestFirst) {
  DashboardHistory h(3, 1.0, kBounds);
  for (int t = 1; t <= 5; ++t) h.add(sample(t));
  EXPECT_EQ(h.size(), 3u);
  const json all = h.since(0);
  ASSERT_EQ(all["samples"].size(), 3u);
  EXPECT_EQ(all["samples"][0]["t"], 3.0);  // 1 and 2 fell off
  EXPECT_EQ(all["samples"][2]["t"], 5.0);
  EXPECT_EQ(all["capacity"], 3);
  // since: only the newer ones (a page that polls gets what it has not seen).
  const json newer = h.since(4.0);
  ASSERT_EQ(newer["samples"].size(), 1u);
  EXPECT_EQ(newer["samples"][0]["t"], 5.0);
}

TEST(DashboardHistory, WaitP99CoversTheAdmissionsOfTheLastWindowOnly) {
  DashboardHistory h(100, 10.0, kBounds, /*window_s=*/60);
  // t=1000: 10 long waits (15-60 s). t=1030: still those. t=1070: 10 more, all short (<= 1 s).
  h.add(sample(1000, {0, 0, 0, 10, 0}));
  h.add(sample(1030, {0, 0, 0, 10, 0}));
  h.add(sample(1070, {10, 0, 0, 10, 0}));
  const json s = h.since(0)["samples"];
  ASSERT_EQ(s.size(), 3u);
  // t=1000 and t=1030: no sample a window older -> everything since the start: the long ones.
  EXPECT_GT(s[0]["classes"]["high"]["wait_p99_s"].get<double>(), 15.0);
  EXPECT_GT(s[1]["classes"]["high"]["wait_p99_s"].get<double>(), 15.0);
  // t=1070: against t=1000 (the newest sample at least 60 s older): only the 10 short ones -> p99
  // within (0, 1].
  EXPECT_LE(s[2]["classes"]["high"]["wait_p99_s"].get<double>(), 1.0);
}

TEST(DashboardHistory, NoAdmissionsInTheWindowIsNullNotZero) {
  DashboardHistory h(100, 10.0, kBounds, 60);
  h.add(sample(1000, {5, 0, 0, 0, 0}));
  h.add(sample(1100, {5, 0, 0, 0, 0}));  // nothing new since t=1000
  const json s = h.since(1050)["samples"];
  ASSERT_EQ(s.size(), 1u);
  EXPECT_TRUE(s[0]["classes"]["high"]["wait_p99_s"].is_null());
}

}  // namespace
}  // namespace sluice::server
