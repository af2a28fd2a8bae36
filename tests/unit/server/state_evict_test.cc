// The Kubernetes API's eviction in the state machine (state_evict.cc; kubectl drain): a running
// job's pod evicted sends the whole gang back to its queue, its pods stopping until they are
// gone; an ended pod is deleted from view; a pod already gone is 404.
#include <gtest/gtest.h>

#include "state_fixture.h"

namespace sluice::server {
namespace state_evict_test {  // a namespace of its own: the unit tests build in unity batches
namespace {

using namespace testing_state;  // NOLINT(google-build-using-namespace)

struct EvictTest : ServerStateTest {
  void run_cycle(TimeNs now) {
    st.cycle(now);
    st.release_staged();
    for (const char* n : {"n0", "n1"}) sync(n, {}, now);
  }
  // The pod's start, as its agent reports it.
  void started(JobId id, int32_t pod, TimeNs now) {
    const PodRun& p = st.find(id)->pods[static_cast<size_t>(pod)];
    proto::SyncRequest s;
    s.started.push_back({id, pod, p.run});
    s.running.push_back({id, pod, 100 + pod, false, p.run});
    sync(p.node, s, now);
  }
  void exited(JobId id, int32_t pod, int code, TimeNs now) {
    const PodRun& p = st.find(id)->pods[static_cast<size_t>(pod)];
    proto::SyncRequest s;
    proto::PodExit e = pod_exit(id, code);
    e.pod = pod;
    e.run = p.run;
    e.at_unix_ns = now;
    if (code != 0) e.reason = "signaled", e.signal = 15, e.exit_code = 0;
    s.exits.push_back(e);
    sync(p.node, s, now);
  }
  std::string err;
  uint64_t ticket = 0;
};

TEST_F(EvictTest, EvictingARunningPodRequeuesTheWholeGangUntilItsPodsAreGone) {
  up(0);
  const JobId a = submit(job_yaml("a", 2, 4), 1 * kS);  // a gang of two whole nodes
  run_cycle(2 * kS);
  ASSERT_EQ(st.find(a)->state, JobState::kRunning);
  started(a, 0, 2 * kS);
  started(a, 1, 2 * kS);
  const std::string n0 = st.find(a)->pods[0].node, n1 = st.find(a)->pods[1].node;
  ASSERT_EQ(st.evict_pod(a, 0, "its pod a-0 was evicted", 3 * kS, &err, &ticket), 200) << err;
  const JobRecord* r = st.find(a);
  EXPECT_EQ(r->state, JobState::kPending);
  EXPECT_EQ(r->reason, "its pod a-0 was evicted");
  EXPECT_TRUE(st.pod_may_be_alive(*r, 0, 3 * kS));
  EXPECT_TRUE(st.pod_may_be_alive(*r, 1, 3 * kS));
  // Both pods of the gang are told to stop, with the eviction's reason.
  auto stops = sync(n0, {}, 3 * kS).stop;
  ASSERT_EQ(stops.size(), 1u);
  EXPECT_EQ(stops[0].reason, "its pod a-0 was evicted");
  EXPECT_EQ(sync(n1, {}, 3 * kS).stop.size(), 1u);
  // The other pod of the gang, evicted while it stops: nothing more to do.
  EXPECT_EQ(st.evict_pod(a, 1, "x", 3 * kS, &err, &ticket), 200);
  exited(a, 0, 143, 4 * kS);
  EXPECT_FALSE(st.pod_may_be_alive(*st.find(a), 0, 4 * kS));
  EXPECT_EQ(st.evict_pod(a, 0, "x", 4 * kS, &err, &ticket), 404);  // gone: kubectl is done
  exited(a, 1, 143, 4 * kS);
  run_cycle(5 * kS);
  EXPECT_EQ(st.find(a)->state, JobState::kRunning);  // it runs again (no node is cordoned)
  EXPECT_EQ(st.history().find(a)->preemptions, 1);
}

TEST_F(EvictTest, AnEndedPodIsDeletedFromViewAndANewRunShowsAgain) {
  up(0);
  const JobId a = submit(job_yaml("a", 1, 1), 1 * kS);
  run_cycle(2 * kS);
  started(a, 0, 2 * kS);
  exited(a, 0, 0, 3 * kS);
  ASSERT_EQ(st.find(a)->state, JobState::kSucceeded);
  EXPECT_EQ(st.evict_pod(a, 0, "x", 4 * kS, &err, &ticket), 200);
  EXPECT_TRUE(st.find(a)->pods[0].deleted);
  EXPECT_EQ(st.find(a)->state, JobState::kSucceeded);  // the job is left as it ended
  EXPECT_EQ(st.evict_pod(a, 0, "x", 4 * kS, &err, &ticket), 404);
  EXPECT_EQ(st.evict_pod(a, 7, "x", 4 * kS, &err, &ticket), 404);
  EXPECT_EQ(st.evict_pod(999, 0, "x", 4 * kS, &err, &ticket), 404);
  ASSERT_EQ(st.requeue(a, false, 5 * kS, &err, &ticket), 200) << err;
  run_cycle(6 * kS);
  ASSERT_EQ(st.find(a)->state, JobState::kRunning);
  EXPECT_FALSE(st.find(a)->pods[0].deleted);  // the new run's pod
}

TEST_F(EvictTest, NodeHoldSaysCordonOrDrain) {
  up(0);
  EXPECT_EQ(st.node_hold("n0"), "");
  ASSERT_EQ(st.set_node_hold("n0", "cordon", "kubectl cordon", &ticket), 200);
  EXPECT_EQ(st.node_hold("n0"), "cordon");
  ASSERT_EQ(st.set_node_hold("n0", "drain", "kubectl drain", &ticket), 200);
  EXPECT_EQ(st.node_hold("n0"), "drain");
  EXPECT_EQ(st.node_hold("nope"), "");
}

}  // namespace
}  // namespace state_evict_test
}  // namespace sluice::server
