// process_* metrics from /proc (src/server/process_metrics.cc) and sluice_build_info.
#include "server/process_metrics.h"

#include <gtest/gtest.h>

#include <ctime>

#include "build_info.h"

namespace sluice::server {
namespace {

// A /proc/<pid>/stat line whose command name holds spaces and parentheses (proc(5): fields are
// counted from the last ')'). utime 250 + stime 150 ticks, starttime 1000 ticks, vsize
// 123456789 bytes, rss 2048 pages.
const char* kStat =
    "4242 (my (odd) name) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 150 0 0 20 0 9 0 1000 "
    "123456789 2048 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 3 0 0 0 0 0\n";

TEST(ProcessMetrics, ParsesProcStatPastAParenthesisedName) {
  auto s = parse_proc_stat(kStat, 100, 4096, 1'700'000'000);
  ASSERT_TRUE(s);
  EXPECT_DOUBLE_EQ(s->cpu_seconds, 4.0);                 // (250 + 150) / 100
  EXPECT_DOUBLE_EQ(s->start_time_s, 1'700'000'010.0);    // boot + 1000 / 100
  EXPECT_DOUBLE_EQ(s->virtual_bytes, 123456789.0);       //
  EXPECT_DOUBLE_EQ(s->resident_bytes, 2048.0 * 4096.0);  // pages x page size
}

TEST(ProcessMetrics, RefusesTextThatIsNotAStatLine) {
  EXPECT_FALSE(parse_proc_stat("", 100, 4096, 0));
  EXPECT_FALSE(parse_proc_stat("12 (x) S 1 2 3", 100, 4096, 0));  // too few fields
  EXPECT_FALSE(parse_proc_stat("no parenthesis at all", 100, 4096, 0));
  std::string bad = kStat;
  bad.replace(bad.find(" 250 "), 5, " x50 ");
  EXPECT_FALSE(parse_proc_stat(bad, 100, 4096, 0));
}

TEST(ProcessMetrics, BootTimeFromProcStat) {
  EXPECT_EQ(parse_boot_time("cpu  1 2 3\nintr 5\nbtime 1700000000\nprocesses 9\n"), 1700000000.0);
  EXPECT_FALSE(parse_boot_time("cpu  1 2 3\n"));
  EXPECT_FALSE(parse_boot_time("btime soon\n"));
}

TEST(ProcessMetrics, ThisProcessLooksLikeOne) {
  auto s = sample_process();
  ASSERT_TRUE(s) << "/proc/self unreadable";
  const double now = static_cast<double>(std::time(nullptr));
  EXPECT_GT(s->resident_bytes, 1 << 20);
  EXPECT_GE(s->virtual_bytes, s->resident_bytes);
  EXPECT_GE(s->open_fds, 3);  // stdin, stdout, stderr at least
  EXPECT_GE(s->max_fds, s->open_fds);
  EXPECT_LE(s->start_time_s, now + 2);  // clock ticks round; the test started in the last day
  EXPECT_GT(s->start_time_s, now - 86400);
  EXPECT_GE(s->cpu_seconds, 0);
}

TEST(ProcessMetrics, TextHasTheClientLibraryFamiliesAndBuildInfo) {
  const std::string t = process_metrics_text();
  for (const char* f :
       {"process_cpu_seconds_total counter", "process_resident_memory_bytes gauge",
        "process_virtual_memory_bytes gauge", "process_open_fds gauge", "process_max_fds gauge",
        "process_start_time_seconds gauge", "sluice_build_info gauge"})
    EXPECT_NE(t.find(std::string("# TYPE ") + f + "\n"), std::string::npos) << f << "\n" << t;
  const std::string info = std::string("sluice_build_info{commit=\"") + build_commit() +
                           "\",version=\"" + build_version() + "\"} 1\n";
  EXPECT_NE(t.find(info), std::string::npos) << t;
  EXPECT_FALSE(std::string(build_version()).empty());
  EXPECT_FALSE(std::string(build_commit()).empty());
}

}  // namespace
}  // namespace sluice::server
