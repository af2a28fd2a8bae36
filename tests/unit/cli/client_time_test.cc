#include "cli/client_time.h"

#include <gtest/gtest.h>

namespace sluice::cli {
namespace {

int64_t secs(const std::string& text) {
  auto t = parse_time_limit(text);
  EXPECT_TRUE(t) << text;
  return t ? t->seconds : -1;
}

TEST(ClientTime, SlurmFormatsMeanWhatSlurmMeans) {
  EXPECT_EQ(secs("2"), 120);                   // minutes, as sbatch --time=2
  EXPECT_EQ(secs("90"), 5400);                 // 90 minutes
  EXPECT_EQ(secs("5:30"), 330);                // MM:SS
  EXPECT_EQ(secs("01:30:00"), 5400);           // HH:MM:SS
  EXPECT_EQ(secs("1-00:00:00"), 86400);        // D-HH:MM:SS
  EXPECT_EQ(secs("2-12"), 2 * 86400 + 43200);  // D-HH
  EXPECT_EQ(secs("1-2:30"), 86400 + 9000);     // D-HH:MM
  EXPECT_EQ(secs("0-0:0:45"), 45);
}

TEST(ClientTime, UnitsKeepTheirMeaning) {
  EXPECT_EQ(secs("90s"), 90);
  EXPECT_EQ(secs("30m"), 1800);
  EXPECT_EQ(secs("2h"), 7200);
  EXPECT_EQ(secs("1h30m"), 5400);
  EXPECT_EQ(secs("1d"), 86400);
}

TEST(ClientTime, UnlimitedIsNoLimit) {
  EXPECT_EQ(secs("UNLIMITED"), 0);
  EXPECT_EQ(secs("infinite"), 0);
  EXPECT_EQ(time_limit_duration({0}), "");
  EXPECT_EQ(time_limit_duration({5400}), "5400s");
}

TEST(ClientTime, RefusesWhatIsNoTime) {
  for (const char* bad : {"", "0", "0:00", "-5", "1:2:3:4", "1-2:3:4:5", "a", "1.5", "5:", ":5",
                          "1--2", "x-1", "99999999999", "400-00", "2 h"})
    EXPECT_FALSE(parse_time_limit(bad)) << bad;
}

}  // namespace
}  // namespace sluice::cli
