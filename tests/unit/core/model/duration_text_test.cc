// Durations as text (core/model/duration_text.h): the server's predictions and the command's
// ELAPSED and AGE columns.
#include "core/model/duration_text.h"

#include <gtest/gtest.h>

namespace sluice {
namespace duration_text_test {  // a namespace of its own: the unit tests build in unity batches
namespace {

TEST(DurationText, TwoUnitsFromDaysToSeconds) {
  EXPECT_EQ(duration_text(-5), "0s");  // never negative
  EXPECT_EQ(duration_text(0), "0s");
  EXPECT_EQ(duration_text(40), "40s");
  EXPECT_EQ(duration_text(59), "59s");
  EXPECT_EQ(duration_text(60), "1m00s");
  EXPECT_EQ(duration_text(590), "9m50s");
  EXPECT_EQ(duration_text(3600 + 120 + 59), "1h02m");  // seconds dropped, not rounded
  EXPECT_EQ(duration_text(86400 - 1), "23h59m");
  EXPECT_EQ(duration_text(86400 + 2 * 3600 + 59 * 60), "1d02h");
  EXPECT_EQ(duration_text(400 * 86400), "400d00h");
}

TEST(DurationText, LargestUnitOnceTheValueIsTwoOfIt) {
  const auto age = [](int64_t s) { return duration_text(s, DurationStyle::kLargestUnit); };
  EXPECT_EQ(age(-3), "0s");
  EXPECT_EQ(age(119), "119s");
  EXPECT_EQ(age(120), "2m");
  EXPECT_EQ(age(7199), "119m");
  EXPECT_EQ(age(7200), "2h");
  EXPECT_EQ(age(48 * 3600 - 1), "47h");
  EXPECT_EQ(age(48 * 3600), "2d");
}

}  // namespace
}  // namespace duration_text_test
}  // namespace sluice
