#include "agent/state_file.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "test_util.h"

namespace sluice::agent {
namespace {

using testing::TempDir;
namespace fs = std::filesystem;

TEST(StateFile, SavesAndLoadsTheNewestDocument) {
  TempDir dir;
  const std::string path = dir.path() + "/pods.json";
  std::string why;
  {
    StateFile f(path);
    EXPECT_FALSE(f.load(&why));
    EXPECT_EQ(why, "");  // nothing there is not an error
    for (int i = 1; i <= 5; ++i) ASSERT_TRUE(f.save({{"n", i}}, &why)) << why;
  }
  StateFile g(path);
  auto doc = g.load(&why);
  ASSERT_TRUE(doc);
  EXPECT_EQ((*doc)["n"], 5);
  // Two slots, overwritten in turn: no file per save.
  EXPECT_TRUE(fs::exists(path + ".0"));
  EXPECT_TRUE(fs::exists(path + ".1"));
  EXPECT_FALSE(fs::exists(path));
  // A reloaded file continues the sequence: the next save is the newest.
  ASSERT_TRUE(g.save({{"n", 6}}, &why));
  EXPECT_EQ((*StateFile(path).load(&why))["n"], 6);
}

TEST(StateFile, ATornSaveFallsBackToThePreviousOne) {
  TempDir dir;
  const std::string path = dir.path() + "/exits.json";
  std::string why;
  StateFile f(path);
  ASSERT_TRUE(f.save({{"n", 1}}, &why));  // slot 1
  ASSERT_TRUE(f.save({{"n", 2}}, &why));  // slot 0
  // A crash in the middle of the second save: slot 0 holds half a document.
  { std::ofstream(path + ".0", std::ios::trunc) << R"({"seq":2,"doc":{"n")"; }
  StateFile g(path);
  auto doc = g.load(&why);
  ASSERT_TRUE(doc);
  EXPECT_EQ((*doc)["n"], 1);
  EXPECT_NE(why.find(path + ".0"), std::string::npos) << why;  // said what it skipped
  // Both slots unreadable: nothing, and why names both.
  { std::ofstream(path + ".1", std::ios::trunc) << "not json"; }
  StateFile h(path);
  EXPECT_FALSE(h.load(&why));
  EXPECT_NE(why.find(path + ".1"), std::string::npos) << why;
}

TEST(StateFile, ReadsAnOlderAgentsSingleFileAndReplacesIt) {
  TempDir dir;
  const std::string path = dir.path() + "/pods.json";
  { std::ofstream(path) << R"({"version":1,"pods":[]})"; }
  StateFile f(path);
  std::string why;
  auto doc = f.load(&why);
  ASSERT_TRUE(doc);
  EXPECT_EQ((*doc)["version"], 1);
  ASSERT_TRUE(f.save({{"version", 1}, {"pods", {1}}}, &why));
  EXPECT_FALSE(fs::exists(path));  // the slots carry the state from now on
  EXPECT_EQ((*StateFile(path).load(&why))["pods"].size(), 1u);
}

TEST(StateFile, AnUnwritableDirectoryIsAnError) {
  StateFile f("/nonexistent-dir/pods.json");
  std::string why;
  EXPECT_FALSE(f.save({{"n", 1}}, &why));
  EXPECT_NE(why.find("/nonexistent-dir/pods.json.1"), std::string::npos) << why;
}

}  // namespace
}  // namespace sluice::agent
