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

// The bytes a save of `doc` writes as the slot's first save (seq 1).
std::string text_of(const nlohmann::json& doc) {
  TempDir dir;
  StateFile f(dir.path() + "/s.json");
  std::string why;
  EXPECT_TRUE(f.save(doc, &why)) << why;
  std::ifstream in(dir.path() + "/s.json.1", std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

TEST(StateFile, AnInPlaceSaveTornHalfWayIsCaughtByTheHash) {
  TempDir dir;
  const std::string path = dir.path() + "/pods.json";
  std::string why;
  StateFile f(path);
  const std::string a(200, 'a'), b(200, 'b');
  ASSERT_TRUE(f.save({{"s", a}}, &why));  // slot 1
  ASSERT_TRUE(f.save({{"s", a}}, &why));  // slot 0
  // The third save goes over slot 1 in place; a crash after its first half leaves the new
  // text's head over the old text's tail. Same lengths: the mix is well-formed JSON with a
  // higher seq ({"seq":3,...,"doc":{"s":"bbb...aaa"}}), only the hash tells it apart.
  std::string torn = text_of({{"s", b}});
  torn.replace(torn.find("\"seq\":1"), 7, "\"seq\":3");
  const std::string old = read_all(path + ".1");
  ASSERT_EQ(torn.size(), old.size());
  const std::string mix = torn.substr(0, torn.size() / 2) + old.substr(torn.size() / 2);
  EXPECT_TRUE(nlohmann::json::accept(mix));
  { std::ofstream(path + ".1", std::ios::binary | std::ios::trunc) << mix; }
  StateFile g(path);
  auto doc = g.load(&why);
  ASSERT_TRUE(doc);
  EXPECT_EQ((*doc)["s"], a);  // the save before
  EXPECT_NE(why.find("torn"), std::string::npos) << why;
}

TEST(StateFile, AShorterSaveIsPaddedOrCutAndLoads) {
  TempDir dir;
  const std::string path = dir.path() + "/exits.json";
  std::string why;
  StateFile f(path);
  ASSERT_TRUE(f.save({{"s", std::string(100, 'x')}}, &why));   // slot 1
  ASSERT_TRUE(f.save({{"s", std::string(9000, 'x')}}, &why));  // slot 0: long
  ASSERT_TRUE(f.save({{"s", "y"}}, &why));                     // slot 1: padded to its length
  const std::string padded = read_all(path + ".1");
  EXPECT_EQ(padded.size(), text_of({{"s", std::string(100, 'x')}}).size());
  EXPECT_EQ(padded.back(), ' ');
  EXPECT_EQ((*StateFile(path).load(&why))["s"], "y") << why;
  // Slot 0 would stay more than twice as long as the text: cut to it.
  ASSERT_TRUE(f.save({{"s", "z"}}, &why));
  EXPECT_EQ(read_all(path + ".0"), text_of({{"s", "z"}}).replace(7, 1, "4"));
  EXPECT_EQ((*StateFile(path).load(&why))["s"], "z") << why;
  EXPECT_EQ(why, "");
}

TEST(StateFile, AnOlderAgentsSlotIsTruncatedBeforeItIsOverwritten) {
  TempDir dir;
  const std::string path = dir.path() + "/pods.json";
  // An older agent's slots: no hash, so not safe to overwrite in place.
  {
    std::ofstream(path + ".0") << R"({"doc":{"n":1,"pad":")" << std::string(300, 'p')
                               << R"("},"seq":8})";
  }
  { std::ofstream(path + ".1") << R"({"doc":{"n":2},"seq":9})"; }
  StateFile f(path);
  std::string why;
  ASSERT_EQ((*f.load(&why))["n"], 2) << why;
  ASSERT_TRUE(f.save({{"n", 3}}, &why));  // seq 10: slot 0, truncated first
  EXPECT_EQ(read_all(path + ".0").find('p'), std::string::npos);
  EXPECT_EQ((*StateFile(path).load(&why))["n"], 3) << why;
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
