// The control plane's state machine, driven directly (no sockets): submissions, cycles,
// agents' reports, node loss, reconfiguration (recovery from the store: state_recovery_test.cc).
#include "server/state.h"

#include <gtest/gtest.h>

#include "state_fixture.h"

namespace sluice::server {
namespace state_test {  // a namespace of its own: the unit tests build in unity batches
namespace {

using namespace testing_state;  // NOLINT(google-build-using-namespace)

TEST_F(ServerStateTest, GangRunsToSuccessAcrossNodes) {
  up(0);
  auto out = st.submit(jobs(*cfg, job_yaml("ddp", 2, 4)), 1 * kS);
  ASSERT_EQ(out.status, 202);
  const JobId id = out.ids.at(0);
  st.cycle(2 * kS);
  // Staged, not delivered, until the store has the decision.
  EXPECT_FALSE(st.has_outbox("n0"));
  st.release_staged();
  auto a0 = sync("n0", {}, 3 * kS), a1 = sync("n1", {}, 3 * kS);
  ASSERT_EQ(a0.assign.size() + a1.assign.size(), 2u);  // one pod per node (4 GPUs each)
  const auto& pod = a0.assign.empty() ? a1.assign[0] : a0.assign[0];
  EXPECT_EQ(pod.gang_size, 2);
  EXPECT_EQ(pod.peers.size(), 2u);
  EXPECT_EQ(pod.gpus.size(), 4u);
  EXPECT_EQ(st.find(id)->state, JobState::kRunning);
  // Both pods exit 0 -> succeeded; capacity is back.
  for (const auto* r : {&a0, &a1})
    for (const auto& a : r->assign) {
      proto::SyncRequest s;
      s.exits.push_back({a.job, a.pod, 0, 0, "exited", "", 4 * kS});
      sync(a.peers[static_cast<size_t>(a.pod)].node, s, 4 * kS);
    }
  EXPECT_EQ(st.find(id)->state, JobState::kSucceeded);
  EXPECT_EQ(st.scheduler().running_count(), 0u);
}

TEST_F(ServerStateTest, OnePodFailingStopsTheGangAndFailsTheJob) {
  up(0);
  const JobId id = st.submit(jobs(*cfg, job_yaml("ddp", 2, 4)), 1 * kS).ids.at(0);
  st.cycle(2 * kS);
  st.release_staged();
  auto a0 = sync("n0", {}, 3 * kS);
  auto a1 = sync("n1", {}, 3 * kS);
  ASSERT_EQ(a0.assign.size(), 1u);
  proto::SyncRequest s;
  s.exits.push_back({id, a0.assign[0].pod, 3, 0, "exited", "", 4 * kS});
  sync("n0", s, 4 * kS);
  EXPECT_EQ(st.find(id)->state, JobState::kFailed);
  EXPECT_EQ(*st.find(id)->exit_code, 3);
  auto stops = sync("n1", {}, 5 * kS).stop;  // the other pod is told to stop
  ASSERT_EQ(stops.size(), 1u);
  EXPECT_EQ(stops[0].reason, "gang-failed");
}

TEST_F(ServerStateTest, PreemptionStopsTheVictimWithItsGraceAndRequeuesIt) {
  up(0);
  const JobId low = st.submit(jobs(*cfg, job_yaml("low", 2, 4, "low", "30s")), 1 * kS).ids[0];
  st.cycle(2 * kS);
  st.release_staged();
  sync("n0", {}, 3 * kS);
  sync("n1", {}, 3 * kS);
  const JobId high = st.submit(jobs(*cfg, job_yaml("high", 1, 4, "high")), 10 * kS).ids[0];
  st.cycle(11 * kS);
  st.release_staged();
  EXPECT_EQ(st.find(low)->state, JobState::kPending);
  EXPECT_EQ(st.find(low)->preemptions, 1);
  EXPECT_EQ(st.find(high)->state, JobState::kRunning);
  auto r0 = sync("n0", {}, 12 * kS), r1 = sync("n1", {}, 12 * kS);
  ASSERT_EQ(r0.stop.size() + r1.stop.size(), 2u);  // both pods of the gang
  const auto& stop = r0.stop.empty() ? r1.stop[0] : r0.stop[0];
  EXPECT_EQ(stop.reason, "preempted");
  EXPECT_EQ(stop.grace_ms, 30'000);
  EXPECT_EQ(r0.assign.size() + r1.assign.size(), 1u);  // the preemptor's pod
  EXPECT_NE(st.metrics_text(12 * kS).find("sluice_preemptions_total{cluster_queue=\"cq\","
                                          "reason=\"within-cluster-queue\"} 1"),
            std::string::npos);
}

// A preempted job queues again only once its old run is gone (found by tests/chaos: it was
// admitted again at once, on the GPUs another job had left, while its old pods were still in
// their grace: two runs of one job alive together). Gated "stopping" until both stops are
// confirmed, then the scheduler may place it.
TEST_F(ServerStateTest, APreemptedJobWaitsForItsOldRunToStopBeforeItRunsAgain) {
  up(0);
  const JobId low = st.submit(jobs(*cfg, job_yaml("low", 1, 4, "low", "30s")), 1 * kS).ids[0];
  const JobId other = st.submit(jobs(*cfg, job_yaml("other", 1, 4, "low")), 1 * kS).ids[0];
  st.cycle(2 * kS);
  st.release_staged();
  const std::string low_node = st.find(low)->pods[0].node;
  const std::string other_node = st.find(other)->pods[0].node;
  sync("n0", {}, 3 * kS);
  sync("n1", {}, 3 * kS);
  // A high-priority job preempts low (both nodes are full); then `other` ends, and its node
  // is free for low.
  st.submit(jobs(*cfg, job_yaml("high", 1, 4, "high")), 10 * kS);
  st.cycle(11 * kS);
  st.release_staged();
  ASSERT_EQ(st.find(low)->state, JobState::kPending);
  ASSERT_EQ(st.find(low)->preemptions, 1);
  const uint64_t old_run = st.find(low)->pods[0].run;
  proto::SyncRequest done;
  done.exits.push_back({other, 0, 0, 0, "exited", "", 11 * kS, st.find(other)->pods[0].run});
  sync(other_node, done, 11 * kS);
  for (int t = 12; t <= 20; ++t) {  // its pod is in its 30 s grace: low stays out
    st.cycle(t * kS);
    st.release_staged();
    EXPECT_EQ(st.find(low)->state, JobState::kPending) << t;
    sync(other_node, {}, t * kS);
    sync(low_node, {}, t * kS);
  }
  EXPECT_TRUE(st.find(low)->gated);
  EXPECT_NE(st.find(low)->gate_reason.find("still stopping on node " + low_node), std::string::npos)
      << st.find(low)->gate_reason;
  // Its old pod confirms the stop: low may run again (on the free node).
  proto::SyncRequest stopped;
  stopped.exits.push_back({low, 0, 0, 15, "stopped", "", 21 * kS, old_run});
  sync(low_node, stopped, 21 * kS);
  st.cycle(22 * kS);
  st.release_staged();
  EXPECT_EQ(st.find(low)->state, JobState::kRunning);
  EXPECT_GT(st.find(low)->pods[0].run, old_run);
}

// A cycle over a backlog behind a full cluster summarises most of it (the scheduler's walk
// stops after the first failures); every pending job still has its reason, and a job that
// arrived after the cycle has none until the next one looks at it.
TEST_F(ServerStateTest, EveryPendingJobOfASummarisedBacklogHasItsReason) {
  up(0);
  std::string yaml;
  for (int i = 0; i < 52; ++i) yaml += "---\n" + job_yaml("j" + std::to_string(i), 1, 4);
  const auto ids = st.submit(jobs(*cfg, yaml), 1 * kS).ids;
  ASSERT_EQ(ids.size(), 52u);
  st.cycle(2 * kS);
  st.release_staged();
  std::optional<PendingDecision> first;
  for (size_t i = 2; i < ids.size(); ++i) {
    ASSERT_EQ(st.find(ids[i])->state, JobState::kPending);
    auto pd = st.pending_decision(ids[i]);
    ASSERT_TRUE(pd) << "job " << ids[i];
    EXPECT_EQ(pd->reason.code, PendingCode::kQuota);
    if (first) {
      EXPECT_EQ(pd->reason, first->reason);
    }
    first = pd;
  }
  EXPECT_NE(st.explain(ids.back(), 3 * kS).find("Why: ClusterQueue cq: quota for nvidia.com/gpu"),
            std::string::npos)
      << st.explain(ids.back(), 3 * kS);
  const JobId late = st.submit(jobs(*cfg, job_yaml("late", 1, 4)), 3 * kS).ids.at(0);
  EXPECT_FALSE(st.pending_decision(late));
  st.cycle(4 * kS);
  ASSERT_TRUE(st.pending_decision(late));
  EXPECT_EQ(st.pending_decision(late)->reason, first->reason);
  EXPECT_EQ(st.pending_decision(ids.back())->reason, first->reason);
}

// Fencing (docs/agent.md): a silent node is NotReady after the 10 s agent timeout, but its
// job goes back to the queue only once no pod of the run can be alive: the surviving pod
// confirmed its stop, and the silent node's lease + the job's grace (5 s) + the 2 s margin
// passed, by when its agent (or fencer) has killed the pod there.
TEST_F(ServerStateTest, SilentAgentsJobRequeuesOnlyOnceItsOldRunIsDeadEverywhere) {
  up(0);
  const JobId id = st.submit(jobs(*cfg, job_yaml("ddp", 2, 4, "low", "5s")), 1 * kS).ids[0];
  st.cycle(2 * kS);
  st.release_staged();
  sync("n0", {}, 3 * kS);
  sync("n1", {}, 3 * kS);
  // n1 keeps syncing, n0 goes silent past the 10 s timeout (last sync at 3 s).
  sync("n1", {}, 12 * kS);
  st.check_agents(14 * kS);
  EXPECT_EQ(st.find(id)->state, JobState::kRunning);  // fencing: not yet requeued
  // NotReady, and LAST-SEEN still tells when it was last heard of (11 s ago), not "never".
  const auto nodes = st.nodes_view(14 * kS);
  for (const auto& n : nodes["nodes"])
    if (n["name"] == "n0") {
      EXPECT_FALSE(n["ready"].get<bool>());
      EXPECT_DOUBLE_EQ(n["last_seen_s_ago"].get<double>(), 11.0);
    }
  // The LocalQueue shows its running job, with its ClusterQueue's usage (8 of 8 GPUs).
  const auto lqs = st.local_queues_view(14 * kS)["local_queues"];
  ASSERT_EQ(lqs.size(), 1u);
  EXPECT_EQ(lqs[0]["namespace"], "team");
  EXPECT_EQ(lqs[0]["name"], "q");
  EXPECT_EQ(lqs[0]["cluster_queue"], "cq");
  EXPECT_EQ(lqs[0]["running"], 1);
  EXPECT_EQ(lqs[0]["pending"], 0);
  EXPECT_EQ(lqs[0]["usage"][0]["used"], "8");
  auto r1 = sync("n1", {}, 14 * kS);
  ASSERT_EQ(r1.stop.size(), 1u);  // the surviving pod of the gang, with the job's grace
  EXPECT_EQ(r1.stop[0].reason, "node-lost");
  EXPECT_EQ(r1.stop[0].grace_ms, 5000);
  const int32_t n1_pod = static_cast<int32_t>(r1.stop[0].pod);
  proto::SyncRequest s;
  s.exits.push_back({id, n1_pod, 0, 15, "stopped", "", 16 * kS});
  sync("n1", s, 16 * kS);
  // 3 + 10 + 5 + 2 = 20 s: until then n0's pod may still be in its grace.
  st.check_agents(19 * kS);
  EXPECT_EQ(st.find(id)->state, JobState::kRunning);
  st.check_agents(21 * kS);
  EXPECT_EQ(st.find(id)->state, JobState::kPending);
  EXPECT_NE(st.find(id)->reason.find("n0 stopped heartbeating"), std::string::npos);
  // With one node left a 2 x 4-GPU gang cannot run.
  st.cycle(22 * kS);
  EXPECT_EQ(st.find(id)->state, JobState::kPending);
  // n0's agent comes back still running the old pod (it had no fencer): stopped with the
  // job's grace, never 0 ms.
  auto back = reg("n0");
  back.running.push_back({id, 1 - n1_pod, 4242, false});
  auto out = join(st, back, 23 * kS);
  ASSERT_EQ(out.status, 200);
  ASSERT_EQ(out.response.stop.size(), 1u);
  EXPECT_EQ(out.response.stop[0].grace_ms, 5000);
  EXPECT_EQ(out.response.lease_ms, 10'000);
}

// A survivor that never confirms its stop holds the requeue back: two live runs never overlap.
TEST_F(ServerStateTest, RequeueWaitsForTheSurvivorsStopToBeConfirmed) {
  up(0);
  const JobId id = st.submit(jobs(*cfg, job_yaml("ddp", 2, 4)), 1 * kS).ids[0];
  st.cycle(2 * kS);
  st.release_staged();
  sync("n0", {}, 3 * kS);
  sync("n1", {}, 3 * kS);
  for (int t = 5; t <= 40; t += 5) sync("n1", {}, t * kS);  // n1 alive, never reports the exit
  st.check_agents(40 * kS);
  EXPECT_EQ(st.find(id)->state, JobState::kRunning);
}

// An agent whose lease ran out reports its pods "fenced": the job is requeued, not failed.
TEST_F(ServerStateTest, FencedPodRequeuesItsJob) {
  up(0);
  const JobId id = st.submit(jobs(*cfg, job_yaml("one", 1, 4)), 1 * kS).ids[0];
  st.cycle(2 * kS);
  st.release_staged();
  const std::string node = st.find(id)->pods[0].node;
  proto::SyncRequest s;
  s.exits.push_back({id, 0, -1, 0, "fenced", "the agent lost the server", 3 * kS});
  sync(node, s, 3 * kS);
  EXPECT_EQ(st.find(id)->state, JobState::kPending);
  EXPECT_NE(st.find(id)->reason.find("fenced"), std::string::npos) << st.find(id)->reason;
}

// Run identity (issue 35, 3): the server froze past the lease. Its agents fenced their pods; on
// resume it requeues the job and places it again on the same node, and the agent's answer to
// the stale stop order of the old run ("does not run on this agent") must not end the new run.
// Before run numbers the job was marked failed while its new pod ran untracked.
TEST_F(ServerStateTest, AStaleStopAnswerNeverEndsTheNextRun) {
  up(0);
  const JobId id = st.submit(jobs(*cfg, job_yaml("one", 1, 4)), 1 * kS).ids[0];
  st.cycle(2 * kS);
  st.release_staged();
  const std::string node = st.find(id)->pods[0].node;
  const std::string other = node == "n0" ? "n1" : "n0";
  const auto first = sync(node, {}, 3 * kS).assign;
  ASSERT_EQ(first.size(), 1u);
  const uint64_t run1 = first[0].run;
  EXPECT_EQ(first[0].attempt, 1);
  EXPECT_GT(run1, 0u);
  // The server is frozen from 3 s to 30 s; on resume both nodes are silent past everything.
  st.check_agents(30 * kS);
  EXPECT_EQ(st.find(id)->state, JobState::kPending);
  // The agents register again; the job's agent reports its fenced exit with the old run.
  for (const auto& n : {node, other}) ASSERT_EQ(join(st, reg(n), 31 * kS).status, 200);
  proto::SyncRequest fenced;
  fenced.exits.push_back({id, 0, -1, 0, "fenced", "lease ran out", 13 * kS, run1});
  sync(node, fenced, 31 * kS);
  sync(other, {}, 31 * kS);
  // Keep the other node busy so the job lands where it ran before.
  submit(job_yaml("filler", 1, 4), 31 * kS);
  st.cycle(32 * kS);
  st.release_staged();
  ASSERT_EQ(st.find(id)->state, JobState::kRunning);
  ASSERT_EQ(st.find(id)->pods[0].node, node);
  sync(other, {}, 33 * kS);
  const auto again = sync(node, {}, 33 * kS);
  ASSERT_EQ(again.assign.size(), 1u);
  const uint64_t run2 = again.assign[0].run;
  EXPECT_GT(run2, run1);
  EXPECT_EQ(again.assign[0].attempt, 2);
  for (const auto& stop : again.stop) EXPECT_EQ(stop.run, run1);  // only ever the old run
  // The agent answers the stale order for run 1 and reports run 2 started.
  proto::SyncRequest s;
  s.exits.push_back({id, 0, -1, 0, "stopped", "does not run on this agent", 34 * kS, run1});
  s.started.push_back({id, 0, run2});
  s.running.push_back({id, 0, 4242, false, run2});
  sync(node, s, 34 * kS);
  EXPECT_EQ(st.find(id)->state, JobState::kRunning);  // the old run's answer changed nothing
  EXPECT_TRUE(st.find(id)->pods[0].started);
  // A checkpoint or exit that still names run 1 is ignored; run 2's own exit ends the job.
  proto::SyncRequest late;
  late.exits.push_back({id, 0, 1, 0, "exited", "", 35 * kS, run1});
  sync(node, late, 35 * kS);
  EXPECT_EQ(st.find(id)->state, JobState::kRunning);
  proto::SyncRequest done;
  done.exits.push_back({id, 0, 0, 0, "exited", "", 36 * kS, run2});
  sync(node, done, 36 * kS);
  EXPECT_EQ(st.find(id)->state, JobState::kSucceeded);
}

// An agent that comes back running another run of a pod than the server's (a frozen agent's
// old pod) is told to stop that run, and the server's run is not taken as running.
TEST_F(ServerStateTest, ARegisteredPodOfAnotherRunIsStoppedNotAdopted) {
  up(0);
  const JobId id = st.submit(jobs(*cfg, job_yaml("one", 1, 4)), 1 * kS).ids[0];
  st.cycle(2 * kS);
  st.release_staged();
  const std::string node = st.find(id)->pods[0].node;
  const uint64_t run = sync(node, {}, 3 * kS).assign.at(0).run;
  auto back = reg(node);
  back.agent_id = "agent-" + node;
  back.running.push_back({id, 0, 4242, false, run + 7});  // not the run the server placed
  auto out = join(st, back, 4 * kS);
  ASSERT_EQ(out.status, 200);
  ASSERT_EQ(out.response.stop.size(), 1u);
  EXPECT_EQ(out.response.stop[0].run, run + 7);
  EXPECT_FALSE(st.find(id)->pods[0].started);
}

// A pod an agent runs that is not the current run of its pod on that node is stopped at any
// sync, not only at registration (tests/chaos, etcd mode: a stale assignment started after the
// server had placed the job's next run elsewhere ran untracked until the node was drained).
TEST_F(ServerStateTest, ASyncReportingAStrayPodGetsItStopped) {
  up(0);
  const JobId id = st.submit(jobs(*cfg, job_yaml("one", 1, 4, "low", "7s")), 1 * kS).ids[0];
  st.cycle(2 * kS);
  st.release_staged();
  const std::string node = st.find(id)->pods[0].node;
  const uint64_t run = sync(node, {}, 3 * kS).assign.at(0).run;
  proto::SyncRequest s;
  s.running.push_back({id, 0, 4242, false, run});      // the current run: left alone
  s.running.push_back({id + 100, 0, 4343, false, 0});  // no such job
  s.running.push_back({id, 0, 4242, false, 0});        // (a duplicate entry is harmless)
  auto out = sync(node, s, 4 * kS);
  ASSERT_EQ(out.stop.size(), 1u);
  EXPECT_EQ(out.stop[0].job, id + 100);
  EXPECT_EQ(out.stop[0].reason, "unknown-job");
  // The same pod under another run than the server's: stopped with its job's grace.
  proto::SyncRequest stale;
  stale.running.push_back({id, 0, 4444, false, run + 5});
  out = sync(node, stale, 5 * kS);
  ASSERT_EQ(out.stop.size(), 1u);
  EXPECT_EQ(out.stop[0].run, run + 5);
  EXPECT_EQ(out.stop[0].grace_ms, 7000);
  // Ordered once: the next sync does not repeat it while the stop is under way.
  EXPECT_TRUE(sync(node, stale, 6 * kS).stop.empty());
}

// Node identity: a live node's name cannot be taken with the join token, another node's
// credential syncs nothing, and an admin's reset lets a reinstalled node join again.
TEST_F(ServerStateTest, NodeNamesBelongToTheirCredential) {
  const std::string join_token = "join-token-0123456789";
  auto n0 = reg("n0");
  EXPECT_EQ(st.register_agent(n0, "wrong", join_token, 0).status, 401);
  EXPECT_EQ(st.register_agent(n0, "wrong", join_token, 0).code, "no-node-credential");
  ASSERT_EQ(st.register_agent(n0, join_token, join_token, 0).status, 200);
  // An impostor with the join token and a credential of its own.
  auto impostor = reg("n0");
  impostor.credential = "impostor-credential-0123456789abcdef";
  impostor.address = "http://10.9.9.9:1";
  auto taken = st.register_agent(impostor, join_token, join_token, 1 * kS);
  EXPECT_EQ(taken.status, 403);
  EXPECT_EQ(taken.code, "node-has-credential");
  EXPECT_EQ(st.register_agent(impostor, impostor.credential, join_token, 1 * kS).status, 401);
  // The real agent, after a crash: its credential registers it again.
  EXPECT_EQ(st.register_agent(n0, n0.credential, join_token, 2 * kS).status, 200);
  // Syncs need the node's own credential: n1's (or the join token) is refused.
  proto::SyncRequest s;
  s.agent_id = n0.agent_id;
  ASSERT_EQ(st.register_agent(reg("n1"), join_token, join_token, 2 * kS).status, 200);
  EXPECT_EQ(st.sync_reports("n0", reg("n1").credential, s, 3 * kS).status, 401);
  EXPECT_EQ(st.sync_reports("n0", join_token, s, 3 * kS).status, 401);
  EXPECT_EQ(st.sync_reports("n0", n0.credential, s, 3 * kS).status, 200);
  // Reset: the next agent joins with the join token and its own credential.
  uint64_t ticket = 0;
  EXPECT_EQ(st.reset_node_credential("ghost", &ticket), 404);
  uint64_t checked = 0;  // as the HTTP layer checks a sync before it reads its body
  ASSERT_TRUE(st.node_admitted("n0", n0.credential, &checked));
  EXPECT_EQ(st.sync_reports("n0", n0.credential, s, 3 * kS, checked).status, 200);
  EXPECT_EQ(st.reset_node_credential("n0", &ticket), 200);
  EXPECT_EQ(st.sync_reports("n0", n0.credential, s, 4 * kS).status, 401);
  // Reset between the check and the reports: the version moved, the bearer is checked again.
  EXPECT_EQ(st.sync_reports("n0", n0.credential, s, 4 * kS, checked).status, 401);
  EXPECT_EQ(st.register_agent(impostor, join_token, join_token, 4 * kS).status, 200);
  EXPECT_EQ(st.sync_reports("n0", impostor.credential, s, 5 * kS).status, 200);  // it is n0 now
  EXPECT_EQ(st.sync_reports("n0", n0.credential, s, 5 * kS).status, 401);
}

// A long poll of an agent that was replaced meanwhile (it stopped, a new one registered) must
// not take the new agent's orders: they would go to a dead connection and the pod never start.
TEST_F(ServerStateTest, StalePollOfAReplacedAgentTakesNoOrders) {
  up(0);
  auto fresh = reg("n0");
  fresh.agent_id = "agent-n0-restarted";
  ASSERT_EQ(join(st, fresh, 1 * kS).status, 200);
  st.submit(jobs(*cfg, job_yaml("one", 1, 4) + "---\n" + job_yaml("two", 1, 4)), 2 * kS);
  st.cycle(3 * kS);  // one 4-GPU job on each node
  st.release_staged();
  EXPECT_TRUE(st.take_outbox("n0", "agent-n0").assign.empty());  // the old process's poll
  EXPECT_EQ(st.take_outbox("n0", "agent-n0-restarted").assign.size(), 1u);
  EXPECT_EQ(st.take_outbox("n1", "agent-n1").assign.size(), 1u);
}

// Gauges and views count pending and running jobs (from the scheduler), never finished ones.
TEST_F(ServerStateTest, GaugesAndViewsCountOnlyLiveJobs) {
  up(0);
  std::string yaml;
  for (int i = 0; i < 3; ++i) yaml += "---\n" + job_yaml("j" + std::to_string(i), 1, 4);
  const auto ids = st.submit(jobs(*cfg, yaml), 1 * kS).ids;
  st.cycle(2 * kS);
  st.release_staged();
  const JobId done = st.find(ids[0])->state == JobState::kRunning ? ids[0] : ids[1];
  proto::SyncRequest s;
  s.exits.push_back({done, 0, 0, 0, "exited", "", 3 * kS});
  sync(st.find(done)->pods[0].node, s, 3 * kS);
  ASSERT_EQ(st.find(done)->state, JobState::kSucceeded);
  const std::string m = st.metrics_text(4 * kS);
  EXPECT_NE(m.find("sluice_pending_jobs{cluster_queue=\"cq\",priority_class=\"low\","
                   "class=\"best-effort\"} 1"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("sluice_running_jobs{cluster_queue=\"cq\"} 1"), std::string::npos) << m;
  const auto q = st.queues_view(4 * kS)["queues"][0];
  EXPECT_EQ(q["pending"], 1);
  EXPECT_EQ(q["running"], 1);
  size_t busy = 0;
  const auto nodes = st.nodes_view(4 * kS);
  for (const auto& n : nodes["nodes"])
    for (const auto& g : n["gpus"]) busy += g["jobs"].size();
  EXPECT_EQ(busy, 4u) << nodes.dump();  // the running job's four GPUs
}

// A ClusterQueue's namespaceSelector: a namespace it does not select gets 403 and nothing.
TEST(ServerSubmit, NamespaceTheClusterQueueDoesNotSelectIsForbidden) {
  std::string text = kConfig;
  text.replace(text.find("namespaceSelector: {}"), 21,
               "namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: team}}");
  text.replace(text.find("namespace: team}"), 16, "namespace: '*'}");
  auto lc = load_server_config({Source{"test.yaml", text}});
  ASSERT_TRUE(lc.ok()) << (lc.ok() ? "" : lc.error());
  ServerState st{lc->config, nullptr, ServerOptions{}};
  auto job = [&](const std::string& ns) {
    std::string y = job_yaml("j", 1, 1);
    y.replace(y.find("namespace: team"), 15, "namespace: " + ns);
    return jobs(*lc->config, y);
  };
  EXPECT_EQ(st.submit(job("team"), kS).status, 202);
  const auto out = st.submit(job("other"), kS);
  EXPECT_EQ(out.status, 403);
  EXPECT_NE(out.error.find("does not select namespace \"other\""), std::string::npos) << out.error;
  EXPECT_EQ(st.scheduler().pending_count(), 1u);
  EXPECT_NE(st.metrics_text(kS).find("reason=\"namespace-not-selected\"} 1"), std::string::npos);
}

TEST_F(ServerStateTest, RegistrationChecksTheNodeAndItsGpus) {
  auto unknown = join(st, reg("ghost"), 0);
  EXPECT_EQ(unknown.status, 404);
  EXPECT_NE(unknown.details.at(0).find("n0, n1"), std::string::npos);
  EXPECT_EQ(join(st, reg("n0", 2), 0).status, 409);
  EXPECT_EQ(join(st, reg("n0", 4, "A100"), 0).status, 409);
  EXPECT_EQ(join(st, reg("n0", 4, "h100"), 0).status, 200);  // case does not matter
}

TEST_F(ServerStateTest, SubmissionErrorsMapToHttpStatusesAndKeepNothing) {
  auto bad = jobs(*cfg, job_yaml("a", 1, 1) + "---\n" + job_yaml("b", 1, 1));
  bad[1].queue = "nope";
  auto out = st.submit(bad, 1 * kS);
  EXPECT_EQ(out.status, 404);
  EXPECT_TRUE(st.records().empty());
  EXPECT_EQ(st.scheduler().pending_count(), 0u);  // all-or-nothing
}

TEST_F(ServerStateTest, ReconfigureRefusesToDropANodeInUse) {
  up(0);
  st.submit(jobs(*cfg, job_yaml("j", 1, 4)), 1 * kS);
  st.cycle(2 * kS);
  st.release_staged();
  std::string smaller = kConfig;
  smaller.replace(smaller.find("count: 2"), 8, "count: 1");
  auto lc = load_server_config({Source{"new.yaml", smaller}});
  ASSERT_TRUE(lc.ok());
  const auto& running = st.find(1)->pods.at(0).node;
  auto res = st.reconfigure(lc->config, lc->text, 3 * kS);
  if (running == "n1") {
    EXPECT_FALSE(res.ok());
  } else {
    EXPECT_TRUE(res.ok());  // n1 is unused: dropping it is fine
  }
}

// An admin's drain (Slurm's) or cordon: no new pods on the node, running ones run on; resume
// puts it back. The hold outlives the server (the store's meta).
TEST_F(ServerStateTest, GpuUtilisationFromTheAgentReachesMetricsAndNodes) {
  up(0);
  proto::SyncRequest s;
  s.gpu_utilization_pct = {35, 0, -1, 100};  // GPU 2: NVML could not say
  sync("n0", s, 1 * kS);
  const std::string m = st.metrics_text(1 * kS);
  EXPECT_NE(m.find("sluice_node_gpu_utilization_ratio{node=\"n0\",gpu=\"0\"} 0.35"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("sluice_node_gpu_utilization_ratio{node=\"n0\",gpu=\"3\"} 1"),
            std::string::npos);
  EXPECT_EQ(m.find("sluice_node_gpu_utilization_ratio{node=\"n0\",gpu=\"2\"}"), std::string::npos);
  EXPECT_EQ(m.find("sluice_node_gpu_utilization_ratio{node=\"n1\""), std::string::npos);
  const auto nodes = st.nodes_view(1 * kS)["nodes"];
  EXPECT_EQ(nodes[0]["gpus"][0]["utilization_pct"], 35);
  EXPECT_TRUE(nodes[0]["gpus"][2]["utilization_pct"].is_null());
  EXPECT_TRUE(nodes[1]["gpus"][0]["utilization_pct"].is_null());
  // A sample for another GPU count than the node has is dropped; so is an empty one.
  s.gpu_utilization_pct = {50, 50};
  sync("n0", s, 2 * kS);
  EXPECT_EQ(st.metrics_text(2 * kS).find("sluice_node_gpu_utilization_ratio{node="),
            std::string::npos);
}

}  // namespace
}  // namespace state_test
}  // namespace sluice::server
