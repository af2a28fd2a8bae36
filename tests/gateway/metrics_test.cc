#include "gateway/metrics.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "gateway/trace.h"

namespace sluice::gateway {
namespace {

TEST(GatewayMetrics, HistogramBucketsAreCumulativeInText) {
  Histogram h;
  h.observe_ns(200'000);          // 0.2 ms -> le=0.0005
  h.observe_ns(3'000'000);        // 3 ms   -> le=0.005
  h.observe_ns(120'000'000'000);  // 120 s -> +Inf only
  PromWriter w;
  w.family("x_seconds", "histogram", "test");
  w.histogram("x_seconds", {{"pool", "a"}}, h);
  const std::string& t = w.text();
  EXPECT_NE(t.find("x_seconds_bucket{pool=\"a\",le=\"0.0005\"} 1\n"), std::string::npos) << t;
  EXPECT_NE(t.find("x_seconds_bucket{pool=\"a\",le=\"0.0025\"} 1\n"), std::string::npos);
  EXPECT_NE(t.find("x_seconds_bucket{pool=\"a\",le=\"0.005\"} 2\n"), std::string::npos);
  EXPECT_NE(t.find("x_seconds_bucket{pool=\"a\",le=\"60\"} 2\n"), std::string::npos);
  EXPECT_NE(t.find("x_seconds_bucket{pool=\"a\",le=\"+Inf\"} 3\n"), std::string::npos);
  EXPECT_NE(t.find("x_seconds_count{pool=\"a\"} 3\n"), std::string::npos);
  EXPECT_NE(t.find("x_seconds_sum{pool=\"a\"} 120.0032\n"), std::string::npos) << t;
  EXPECT_EQ(t.rfind("# HELP x_seconds test\n# TYPE x_seconds histogram\n", 0), 0u);
  EXPECT_DOUBLE_EQ(h.quantile_upper_bound(0.5), 0.005);
}

TEST(GatewayMetrics, LabelValuesAreEscaped) {
  EXPECT_EQ(escape_label_value("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
  PromWriter w;
  w.sample("m", {{"k", "v\""}}, std::uint64_t{7});
  EXPECT_EQ(w.text(), "m{k=\"v\\\"\"} 7\n");
}

TEST(GatewayTrace, ParsesAzureFormatAndReportsBadLines) {
  std::string dir = ::testing::TempDir();
  std::string good = dir + "/trace_good.csv";
  {
    std::ofstream f(good);
    f << "TIMESTAMP,ContextTokens,GeneratedTokens\n"
         "2023-11-16 18:17:03.9799600,4808,10\n"
         "2023-11-16 18:17:04.0319600,3180,8\n"
         "2023-11-16 18:18:00.0000000,10,1\n";
  }
  auto r = load_inference_trace(good);
  ASSERT_TRUE(r.ok()) << r.error;
  ASSERT_EQ(r.requests.size(), 3u);
  EXPECT_EQ(r.requests[0].arrival_us, 0);
  EXPECT_EQ(r.requests[1].arrival_us, 52000);
  EXPECT_EQ(r.requests[2].arrival_us, 56020040);
  EXPECT_EQ(r.requests[0].context_tokens, 4808);
  ServiceModel m{1000, 10, 100};
  EXPECT_EQ(m.service_us(r.requests[0]), 1000 + 48080 + 1000);

  std::string bad = dir + "/trace_bad.csv";
  {
    std::ofstream f(bad);
    f << "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03.9,1,1\nnonsense\n";
  }
  r = load_inference_trace(bad);
  EXPECT_EQ(r.error, bad + ":3: expected TIMESTAMP,ContextTokens,GeneratedTokens");
  std::remove(good.c_str());
  std::remove(bad.c_str());
}

}  // namespace
}  // namespace sluice::gateway
