// Long polls parked without a thread (ServerState::park_poll, state_agents.cc): work for a node
// wakes each of its parked polls once, and only its own; a poll forgotten first never wakes; a
// server that stops wakes every one left.
#include <gtest/gtest.h>

#include "state_fixture.h"

namespace sluice::server {
namespace state_agents_test {

using namespace testing_state;  // NOLINT(google-build-using-namespace)

struct ParkedPollTest : ServerStateTest {
  std::map<std::string, int> woken;  // by poll name
  uint64_t park(const std::string& node, const std::string& name) {
    return st.park_poll(node, [this, name] { ++woken[name]; });
  }
};

TEST_F(ParkedPollTest, WorkForANodeWakesItsOwnParkedPollsOnce) {
  up(0);
  park("n0", "n0-a");
  park("n0", "n0-b");
  const uint64_t forgotten = park("n0", "n0-forgotten");
  park("n1", "n1-a");
  EXPECT_NE(forgotten, 0u);
  st.unpark_poll("n0", forgotten);
  st.unpark_poll("n0", forgotten);  // twice: nothing happens
  EXPECT_TRUE(woken.empty());
  const JobId id = submit(job_yaml("one", 1, 1), 1 * kS);
  st.cycle(2 * kS);
  st.release_staged();
  const std::string node = st.find(id)->pods.front().node;
  const std::string other = node == "n0" ? "n1" : "n0";
  ASSERT_TRUE(st.has_outbox(node));
  EXPECT_EQ(woken[node + "-a"], 1);
  EXPECT_EQ(woken["n0-b"], node == "n0" ? 1 : 0);
  EXPECT_EQ(woken[other + "-a"], 0);
  EXPECT_EQ(woken["n0-forgotten"], 0);
  // Stopping wakes what is left, once; polls woken before are gone and stay at one.
  st.unpark_poll(node, park(node, "late-forgotten"));
  st.wake_polls();
  st.wake_polls();
  EXPECT_EQ(woken[node + "-a"], 1);
  EXPECT_EQ(woken[other + "-a"], 1);
  EXPECT_EQ(woken["late-forgotten"], 0);
  EXPECT_EQ(woken["n0-b"], 1);
  EXPECT_EQ(woken["n0-forgotten"], 0);
}

}  // namespace state_agents_test
}  // namespace sluice::server
