// Slurm's --array and --dependency as sluice reads them (core/model/job_control.h).
#include "core/model/job_control.h"

#include <gtest/gtest.h>

namespace sluice {
namespace {

std::vector<int32_t> tasks(const std::string& text) {
  auto a = parse_array_spec(text);
  EXPECT_TRUE(a.ok()) << text << ": " << (a.ok() ? "" : a.error());
  return a.ok() ? a->tasks : std::vector<int32_t>{};
}

TEST(ArraySpec, RangesListsStepsAndThrottle) {
  EXPECT_EQ(tasks("0-3"), (std::vector<int32_t>{0, 1, 2, 3}));
  EXPECT_EQ(tasks("1,3,5-7"), (std::vector<int32_t>{1, 3, 5, 6, 7}));
  EXPECT_EQ(tasks("0-15:4"), (std::vector<int32_t>{0, 4, 8, 12}));
  EXPECT_EQ(tasks("7"), (std::vector<int32_t>{7}));
  EXPECT_EQ(tasks("3,1,3"), (std::vector<int32_t>{1, 3}));  // sorted, distinct
  auto a = parse_array_spec("0-99%10");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->tasks.size(), 100u);
  EXPECT_EQ(a->throttle, 10);
}

TEST(ArraySpec, BadInputSaysWhat) {
  for (const char* bad : {"", "%3", "0-", "5-2", "a-b", "0-9%0", "0-9%x", "1,,2", "3:2", "-1",
                          "0-15:0", "0-2000000"}) {
    auto a = parse_array_spec(bad);
    EXPECT_FALSE(a.ok()) << bad;
    if (!a.ok()) {
      EXPECT_NE(a.error().find("--array"), std::string::npos) << a.error();
    }
  }
  auto big = parse_array_spec("0-20000");
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.error().find("more than 10000 tasks"), std::string::npos) << big.error();
}

TEST(Dependency, Parts) {
  auto d = parse_dependency("afterok:12:13,afterany:14_2,singleton");
  ASSERT_TRUE(d.ok()) << d.error();
  ASSERT_EQ(d->size(), 3u);
  EXPECT_EQ((*d)[0].kind, DepKind::kAfterOk);
  ASSERT_EQ((*d)[0].targets.size(), 2u);
  EXPECT_EQ((*d)[0].targets[1].job, 13u);
  EXPECT_EQ((*d)[1].kind, DepKind::kAfterAny);
  EXPECT_EQ((*d)[1].targets[0].job, 14u);
  EXPECT_EQ((*d)[1].targets[0].task, 2);
  EXPECT_EQ((*d)[2].kind, DepKind::kSingleton);
  EXPECT_TRUE(parse_dependency("afternotok:5").ok());
  EXPECT_TRUE(parse_dependency("after:5").ok());
}

TEST(Dependency, BadInputSaysWhat) {
  const std::pair<const char*, const char*> cases[] = {{"afterok:1?afterany:2", "'?'"},
                                                       {"afterok", "needs job ids"},
                                                       {"afterok:x", "is not a job id"},
                                                       {"afterok:0", "is not a job id"},
                                                       {"aftercorr:3", "not a dependency type"},
                                                       {"singleton:3", "takes no job ids"},
                                                       {"", "empty"},
                                                       {"afterok:3_x", "JOB_TASK"}};
  for (const auto& [text, words] : cases) {
    auto d = parse_dependency(text);
    ASSERT_FALSE(d.ok()) << text;
    EXPECT_NE(d.error().find(words), std::string::npos) << text << ": " << d.error();
  }
}

}  // namespace
}  // namespace sluice
