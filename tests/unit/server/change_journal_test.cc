// The job records' change journal (server/change_journal.h): resourceVersions in order, one
// entry per job since a version, ADDED and DELETED, and the bound past which a watch is told
// that its version expired.
#include "server/change_journal.h"

#include <gtest/gtest.h>

namespace sluice::server {
namespace change_journal_test {

TEST(ChangeJournal, EachChangeTakesTheNextVersionAndSinceGivesEachJobsLast) {
  ChangeJournal j(1000);
  j.set_first_new_job(10);
  EXPECT_EQ(j.current(), 1000u);
  EXPECT_EQ(j.rv_of(3), 1000u);    // unchanged since the start: the first version
  j.record(10, "a", "x", false);   // 1001: new
  j.record(3, "a", "old", false);  // 1002: recovered, not new
  j.record(10, "a", "x", false);   // 1003
  EXPECT_EQ(j.current(), 1003u);
  EXPECT_EQ(j.rv_of(10), 1003u);
  auto all = j.since(1000);
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].id, 3u);
  EXPECT_EQ(all[0].rv, 1002u);
  EXPECT_FALSE(all[0].added);
  EXPECT_EQ(all[1].id, 10u);
  EXPECT_EQ(all[1].rv, 1003u);
  EXPECT_TRUE(all[1].added);  // its first change is after 1000
  auto later = j.since(1002);
  ASSERT_EQ(later.size(), 1u);
  EXPECT_FALSE(later[0].added);  // created before 1002: a MODIFIED
  EXPECT_TRUE(j.since(1003).empty());
}

TEST(ChangeJournal, AJobGoneOnceChangesNoMoreAndItsDropIsNoSecondDelete) {
  ChangeJournal j(0);
  j.record(1, "a", "x", false);
  j.record(1, "a", "x", true);   // cancelled
  j.record(1, "a", "x", false);  // its pods stopping: not a change of an object that is gone
  EXPECT_EQ(j.current(), 2u);
  j.erase(1, "a", "x");
  EXPECT_EQ(j.current(), 2u);
  j.record(2, "b", "y", false);
  j.erase(2, "b", "y");  // a finished job dropped: a DELETED change
  auto c = j.since(2);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].id, 2u);
  EXPECT_TRUE(c[0].gone);
  EXPECT_EQ(c[0].ns, "b");
  EXPECT_EQ(c[0].name, "y");
}

TEST(ChangeJournal, VersionsOlderThanTheKeptEntriesOrNewerThanTheLastAreNotValid) {
  ChangeJournal j(100, /*capacity=*/3);
  EXPECT_TRUE(j.valid(100));
  EXPECT_FALSE(j.valid(99));   // from before this server started
  EXPECT_FALSE(j.valid(101));  // not given out yet
  for (JobId id = 1; id <= 5; ++id) j.record(id, "a", "x", false);  // 101..105
  EXPECT_FALSE(j.valid(100));
  EXPECT_FALSE(j.valid(101));
  EXPECT_TRUE(j.valid(102));  // 103, 104, 105 kept: a watch from 102 misses nothing
  auto c = j.since(102);
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c.front().rv, 103u);
  EXPECT_EQ(c.back().rv, 105u);
}

TEST(ChangeJournal, BumpedVersionsLeaveGapsThatSinceReadsPast) {
  ChangeJournal j(100);
  j.record(1, "a", "x", false);  // 101
  EXPECT_EQ(j.bump(), 102u);     // a node's change: no entry
  EXPECT_EQ(j.bump(), 103u);
  j.record(2, "a", "y", false);  // 104
  EXPECT_EQ(j.current(), 104u);
  EXPECT_TRUE(j.valid(103));
  auto c = j.since(102);  // not the entry of 101, though 104 - 102 is two
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].id, 2u);
  EXPECT_EQ(j.since(100).size(), 2u);
  EXPECT_TRUE(j.since(104).empty());
}

}  // namespace change_journal_test
}  // namespace sluice::server
