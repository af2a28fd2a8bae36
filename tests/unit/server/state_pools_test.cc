// The node pools in the state machine (state_pools.cc): a pending gang gets the pool nodes it
// needs and no more; they join as agents, run it, and go when idle past scaleDownAfter (taken
// out of scheduling first; a new agent may join the name again); a reclaim requeues the job on
// the node with the notice as its grace and deletes the node once its pod is gone.
#include <gtest/gtest.h>

#include "state_fixture.h"

namespace sluice::server {
namespace state_pools_test {  // a namespace of its own: the unit tests build in unity batches
namespace {

using namespace testing_state;  // NOLINT(google-build-using-namespace)

const char* kPool = R"(
---
apiVersion: sluice.dev/v1alpha1
kind: NodePool
metadata: {name: spot}
spec:
  flavor: h100
  namePrefix: sp-
  node: {cpu: 16, memory: 64Gi, gpus: {count: 4, model: H100}}
  maxNodes: 3
  capacityType: spot
  scaleDownAfter: 10s
  provisioner: {command: [/opt/provision], retryAfter: 5s}
)";

std::shared_ptr<const Config> pool_config() {
  auto lc = load_server_config({Source{"test.yaml", std::string(kConfig) + kPool}});
  EXPECT_TRUE(lc.ok()) << (lc.ok() ? "" : lc.error());
  return lc->config;
}

ProvisionResult answered(const ProvisionCall& c, bool ok) {
  ProvisionResult r;
  r.call = c;
  r.ok = ok;
  r.exit_code = ok ? 0 : 1;
  return r;
}

// The fixed nodes n0 and n1 never join: only pool nodes take work.
struct PoolsTest : ::testing::Test {
  std::shared_ptr<const Config> cfg = pool_config();
  ServerState st{cfg, nullptr, ServerOptions{}};
  JobId submit(const std::string& yaml, TimeNs now) {
    auto out = st.submit(jobs(*cfg, yaml), now);
    EXPECT_EQ(out.status, 202) << out.error;
    return out.ids.empty() ? 0 : out.ids[0];
  }
  void cycle(TimeNs now) {
    st.cycle(now);
    st.release_staged();
  }
  proto::SyncResponse sync(const std::string& node, proto::SyncRequest s, TimeNs now) {
    s.agent_id = "agent-" + node;
    EXPECT_EQ(sync_as(st, node, s, now).status, 200);
    return st.take_outbox(node);
  }
  // The create calls answered, their agents joined and synced.
  void bring_up(const std::vector<ProvisionCall>& calls, TimeNs now) {
    for (const auto& c : calls) {
      st.pool_done(answered(c, true), now);
      ASSERT_EQ(join(st, reg(c.node), now).status, 200);
      sync(c.node, {}, now);
    }
  }
  void report(JobId id, int32_t pod, bool exited, int code, TimeNs now) {
    const PodRun& p = st.find(id)->pods[static_cast<size_t>(pod)];
    proto::SyncRequest s;
    if (exited) {
      proto::PodExit e = pod_exit(id, code);
      e.pod = pod;
      e.run = p.run;
      e.at_unix_ns = now;
      s.exits.push_back(e);
    } else {
      s.started.push_back({id, pod, p.run});
      s.running.push_back({id, pod, 100 + pod, false, p.run});
    }
    sync(p.node, s, now);
  }
};

TEST_F(PoolsTest, APendingGangGetsTheNodesItNeedsAndTheyGoWhenIdle) {
  const JobId a = submit(job_yaml("a", 2, 4), 1 * kS);  // two whole pool nodes
  cycle(1 * kS);
  ASSERT_EQ(st.find(a)->state, JobState::kPending);
  auto calls = st.pool_step(2 * kS);
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0].argv, (std::vector<std::string>{"/opt/provision", "create", "spot", "sp-0"}));
  EXPECT_EQ(calls[1].node, "sp-1");
  EXPECT_TRUE(st.pool_step(3 * kS).empty());  // on their way: nothing more is asked
  bring_up(calls, 4 * kS);
  EXPECT_TRUE(st.pool_step(4 * kS).empty());
  cycle(4 * kS);
  ASSERT_EQ(st.find(a)->state, JobState::kRunning);
  std::set<std::string> nodes;
  for (const auto& p : st.find(a)->pods) nodes.insert(p.node);
  EXPECT_EQ(nodes, (std::set<std::string>{"sp-0", "sp-1"}));
  std::map<std::string, nlohmann::json> by_name;
  const nlohmann::json listed = st.nodes_view(4 * kS);
  for (const auto& n : listed["nodes"]) by_name[n["name"].get<std::string>()] = n;
  EXPECT_EQ(by_name.at("sp-0")["pool_state"], "ready");
  EXPECT_EQ(by_name.at("sp-2")["pool_state"], "absent");
  EXPECT_EQ(by_name.at("sp-2")["pool"], "spot");
  EXPECT_FALSE(by_name.at("n0").contains("pool"));
  for (int32_t pod : {0, 1}) report(a, pod, false, 0, 5 * kS);
  EXPECT_TRUE(st.pool_step(12 * kS).empty());  // busy
  for (int32_t pod : {0, 1}) report(a, pod, true, 0, 13 * kS);
  ASSERT_EQ(st.find(a)->state, JobState::kSucceeded);
  EXPECT_TRUE(st.pool_step(14 * kS).empty());  // idle, not yet for scaleDownAfter
  auto del = st.pool_step(24 * kS);
  ASSERT_EQ(del.size(), 2u);
  EXPECT_EQ(del[0].op, "delete");
  EXPECT_EQ(del[0].reason, "idle");
  // Out of scheduling from the decision on: a new job finds no room on them.
  const JobId b = submit(job_yaml("b", 1, 4), 24 * kS);
  cycle(24 * kS);
  EXPECT_EQ(st.find(b)->state, JobState::kPending);
  for (const auto& c : del) st.pool_done(answered(c, true), 25 * kS);
  const auto view = st.pools_view(25 * kS);
  EXPECT_EQ(view["pools"][0]["nodes"]["ready"], 0);
  EXPECT_EQ(view["calls"][0]["op"], "delete");
  // The name is free again: an agent with another credential joins as sp-0.
  proto::RegisterRequest again = reg("sp-0");
  again.credential = "another-credential-of-a-new-machine-0123456789";
  EXPECT_EQ(st.register_agent(again, again.credential, "", 26 * kS).status, 200);
  const std::string metrics = st.metrics_text(26 * kS);
  EXPECT_NE(
      metrics.find("sluice_provisioner_calls_total{pool=\"spot\",op=\"create\",result=\"ok\"} 2"),
      std::string::npos);
  EXPECT_NE(metrics.find("sluice_pool_nodes{pool=\"spot\",state=\"ready\"}"), std::string::npos);
}

TEST_F(PoolsTest, AFailedCreateIsAskedAgainAfterRetryAfter) {
  const JobId a = submit(job_yaml("a", 1, 4), 1 * kS);
  cycle(1 * kS);
  auto calls = st.pool_step(2 * kS);
  ASSERT_EQ(calls.size(), 1u);
  st.pool_done(answered(calls[0], false), 3 * kS);
  // The slot waits out retryAfter; the pool's other slots may serve the gang meanwhile.
  calls = st.pool_step(4 * kS);
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].node, "sp-1");
  st.pool_done(answered(calls[0], false), 4 * kS);
  calls = st.pool_step(5 * kS);
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].node, "sp-2");
  st.pool_done(answered(calls[0], false), 5 * kS);
  EXPECT_TRUE(st.pool_step(6 * kS).empty());  // every slot waits
  calls = st.pool_step(8 * kS);               // sp-0: 3 s + retryAfter
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].node, "sp-0");
  EXPECT_EQ(st.find(a)->state, JobState::kPending);
}

TEST_F(PoolsTest, AJobThatRefusesSpotStartsNoSpotNode) {
  const JobId a = submit(job_yaml_with("careful", 4, "spot: false"), 1 * kS);
  cycle(1 * kS);
  ASSERT_EQ(st.find(a)->state, JobState::kPending);
  EXPECT_TRUE(st.pool_step(2 * kS).empty());
  // A spot node that is up anyway (adopted) is not for it either.
  ASSERT_EQ(join(st, reg("sp-2"), 3 * kS).status, 200);
  sync("sp-2", {}, 3 * kS);
  st.pool_step(3 * kS);
  cycle(3 * kS);
  EXPECT_EQ(st.find(a)->state, JobState::kPending);
  // Any other job takes it.
  const JobId b = submit(job_yaml("b", 1, 4), 4 * kS);
  cycle(4 * kS);
  EXPECT_EQ(st.find(b)->state, JobState::kRunning);
  EXPECT_EQ(st.find(b)->pods[0].node, "sp-2");
}

TEST_F(PoolsTest, AReclaimRequeuesTheJobWithTheNoticeAsGraceAndDeletesTheNode) {
  const JobId a = submit(job_yaml("a", 1, 4), 1 * kS);
  cycle(1 * kS);
  bring_up(st.pool_step(2 * kS), 3 * kS);
  st.pool_step(3 * kS);
  cycle(3 * kS);
  ASSERT_EQ(st.find(a)->state, JobState::kRunning);
  ASSERT_EQ(st.find(a)->pods[0].node, "sp-0");
  report(a, 0, false, 0, 4 * kS);
  std::string err;
  uint64_t ticket = 0;
  EXPECT_EQ(st.reclaim_node("nope", 30 * kS, 10 * kS, &err, &ticket), 404);
  ASSERT_EQ(st.reclaim_node("sp-0", 30 * kS, 10 * kS, &err, &ticket), 200) << err;
  const JobRecord* r = st.find(a);
  EXPECT_EQ(r->state, JobState::kPending);  // back in its queue, not failed
  EXPECT_NE(r->reason.find("reclaimed"), std::string::npos) << r->reason;
  auto stops = sync("sp-0", {}, 10 * kS).stop;
  ASSERT_EQ(stops.size(), 1u);
  EXPECT_EQ(stops[0].grace_ms, 30'000);
  EXPECT_EQ(stops[0].reason, "reclaimed");
  EXPECT_TRUE(st.pool_step(11 * kS).empty());  // its pod is stopping
  report(a, 0, true, 143, 12 * kS);
  auto calls = st.pool_step(12 * kS);
  ASSERT_FALSE(calls.empty());
  EXPECT_EQ(calls[0].op, "delete");
  EXPECT_EQ(calls[0].node, "sp-0");
  EXPECT_EQ(calls[0].reason, "reclaim");
  // The job runs again on a new node of the pool.
  cycle(13 * kS);
  calls = st.pool_step(14 * kS);
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].node, "sp-1");
  bring_up(calls, 15 * kS);
  st.pool_step(15 * kS);
  cycle(15 * kS);
  EXPECT_EQ(st.find(a)->state, JobState::kRunning);
  EXPECT_EQ(st.find(a)->pods[0].node, "sp-1");
  EXPECT_EQ(st.history().find(a)->preemptions, 1);
}

// The server does not act on consolidation (the simulator does): it says so when it loads a
// pool that has it, and otherwise loads it as before.
TEST(PoolsConfig, ConsolidationIsAcceptedWithAWarningThatOnlyTheSimulatorActs) {
  auto lc = load_server_config({Source{"test.yaml", std::string(kConfig) + kPool}});
  ASSERT_TRUE(lc.ok());
  EXPECT_TRUE(lc->warnings.empty());
  lc = load_server_config(
      {Source{"test.yaml", std::string(kConfig) + kPool + "  consolidation: {after: 10m}\n"}});
  ASSERT_TRUE(lc.ok()) << lc.error();
  ASSERT_EQ(lc->warnings.size(), 1u);
  EXPECT_NE(lc->warnings[0].find("NodePool spot: spec.consolidation acts in the simulator only"),
            std::string::npos)
      << lc->warnings[0];
}

}  // namespace
}  // namespace state_pools_test
}  // namespace sluice::server
