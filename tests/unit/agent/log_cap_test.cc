// A pod's log held to its cap: cut back to its head and a marker, further output appended.
#include "agent/log_cap.h"

#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "test_util.h"

namespace sluice::agent {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(AgentLogCap, ALogWithinItsCapIsLeftAlone) {
  testing::TempDir dir;
  const std::string path = dir.path() + "/pod.log";
  std::ofstream(path, std::ios::binary) << std::string(1000, 'a');
  EXPECT_EQ(cap_log(path, 1000), 0);  // exactly the cap: nothing to do
  EXPECT_EQ(cap_log(path, 0), 0);     // no cap
  EXPECT_EQ(cap_log(dir.path() + "/missing.log", 10), 0);
  EXPECT_EQ(std::filesystem::file_size(path), 1000u);
}

TEST(AgentLogCap, ALogPastItsCapKeepsItsHeadAMarkerAndWhatComesNext) {
  testing::TempDir dir;
  const std::string path = dir.path() + "/pod.log";
  // The pod's own descriptor, as the agent opens it for the pod: O_APPEND.
  const int pod = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
  ASSERT_GE(pod, 0);
  const std::string first(3000, 'h');
  ASSERT_EQ(::write(pod, first.data(), first.size()), 3000);
  EXPECT_EQ(cap_log(path, 1000), 2500);  // cut back to the first 500 bytes
  const std::string later = "later output\n";
  ASSERT_EQ(::write(pod, later.data(), later.size()), static_cast<ssize_t>(later.size()));
  ::close(pod);
  const std::string text = slurp(path);
  EXPECT_EQ(text.substr(0, 500), std::string(500, 'h'));
  EXPECT_NE(text.find("this log passed its cap of 1000 bytes"), std::string::npos);
  EXPECT_NE(text.find("2500 bytes after the first 500 were dropped"), std::string::npos);
  EXPECT_EQ(text.substr(text.size() - later.size()), later);  // appended after the marker
  EXPECT_LT(text.size(), 1000u);
}

TEST(AgentLogCap, ALinkIsNotFollowed) {
  testing::TempDir dir;
  const std::string target = dir.path() + "/elsewhere";
  std::ofstream(target, std::ios::binary) << std::string(5000, 'x');
  const std::string path = dir.path() + "/pod.log";
  std::filesystem::create_symlink(target, path);
  EXPECT_EQ(cap_log(path, 1000), 0);  // a pod's link to another file is not cut through
  EXPECT_EQ(std::filesystem::file_size(target), 5000u);
}

}  // namespace
}  // namespace sluice::agent
