#include "agent/log_slice.h"

#include <gtest/gtest.h>

#include <fstream>

#include "test_util.h"

namespace sluice::agent {
namespace {

class LogSliceTest : public ::testing::Test {
 protected:
  std::string write(const std::string& text) {
    const std::string path = dir_.path() + "/pod.log";
    std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
    return path;
  }
  // "line 0\n" ... "line N-1\n"
  static std::string lines(int n) {
    std::string out;
    for (int i = 0; i < n; ++i) out += "line " + std::to_string(i) + "\n";
    return out;
  }
  testing::TempDir dir_;
};

TEST_F(LogSliceTest, ALogWithinTheCapComesWhole) {
  const std::string text = lines(100);
  auto out = read_log(write(text), {0, -1, 4096});
  ASSERT_TRUE(out);
  EXPECT_EQ(out->text, text);
  EXPECT_EQ(out->size, static_cast<int64_t>(text.size()));
}

TEST_F(LogSliceTest, ALongLogKeepsItsHeadAndEndAndSaysWhatWasCut) {
  const std::string text = lines(20000);  // 20,000 lines, ~229 KB
  auto out = read_log(write(text), {0, -1, 64 << 10});
  ASSERT_TRUE(out);
  // The head starts at line 0 and ends with a whole line; the end is the last line, whole.
  EXPECT_EQ(out->text.rfind("line 0\nline 1\n", 0), 0u);
  EXPECT_EQ(out->text.substr(out->text.size() - 11), "line 19999\n");
  const auto marker = out->text.find("[... ");
  ASSERT_NE(marker, std::string::npos);
  EXPECT_EQ(out->text[marker - 1], '\n');
  const auto marker_end = out->text.find(" bytes cut ...]\n", marker);
  ASSERT_NE(marker_end, std::string::npos);
  const int64_t cut = std::stoll(out->text.substr(marker + 5, marker_end - marker - 5));
  const std::string rest = out->text.substr(marker_end + 16);
  EXPECT_EQ(rest.rfind("line ", 0), 0u);  // the end starts on a line boundary
  // head + end + cut == the whole file: nothing is lost without being counted.
  EXPECT_EQ(static_cast<int64_t>(marker + rest.size()) + cut, static_cast<int64_t>(text.size()));
  EXPECT_LE(out->text.size(), (64u << 10) + 40);
}

TEST_F(LogSliceTest, ATailStartsOnALineAndIsMarked) {
  const std::string text = lines(1000);
  auto out = read_log(write(text), {100, -1, 1 << 20});
  ASSERT_TRUE(out);
  const auto nl = out->text.find('\n');
  const std::string tail = out->text.substr(nl + 1);
  EXPECT_EQ(out->text.substr(0, nl + 1),
            cut_marker(static_cast<int64_t>(text.size() - tail.size())));
  EXPECT_EQ(tail.rfind("line ", 0), 0u);
  EXPECT_EQ(tail.substr(tail.size() - 9), "line 999\n");
  // A tail longer than the file: the file, unmarked.
  EXPECT_EQ(read_log(write("a\nb\n"), {100, -1, 1 << 20})->text, "a\nb\n");
}

TEST_F(LogSliceTest, FollowingReadsRawBytesFromAnOffset) {
  const std::string path = write("hello\nwor");
  auto out = read_log(path, {0, 6, 1 << 20});
  ASSERT_TRUE(out);
  EXPECT_EQ(out->text, "wor");
  EXPECT_EQ(out->size, 9);
  out = read_log(path, {0, 9, 1 << 20});
  EXPECT_EQ(out->text, "");
  // Past the end (the log started again): nothing, and the size says so.
  out = read_log(path, {0, 100, 1 << 20});
  EXPECT_EQ(out->text, "");
  EXPECT_EQ(out->size, 9);
  // At most the cap per answer; the next one goes on from there.
  out = read_log(path, {0, 0, 4});
  EXPECT_EQ(out->text, "hell");
  EXPECT_EQ(out->size, 4);
}

TEST_F(LogSliceTest, AMissingLogIsNone) {
  EXPECT_FALSE(read_log(dir_.path() + "/nope.log", {0, -1, 100}));
}

}  // namespace
}  // namespace sluice::agent
