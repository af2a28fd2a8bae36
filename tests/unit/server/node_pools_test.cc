// The node pools' bookkeeping (src/server/node_pools.cc): a slot from its create call to its
// agent's join, idle and deleted; a failed call waits out retryAfter; a node that never joins
// is deleted; a reclaim's notice; the calls' arguments, environment, metrics and view.
#include <gtest/gtest.h>

#include "server/node_pools.h"

namespace sluice::server {
namespace node_pools_test {  // a namespace of its own: the unit tests build in unity batches
namespace {

constexpr TimeNs kS = kNsPerSec;

NodePool pool_of(int32_t max_nodes) {
  NodePool p;
  p.name = "spot";
  p.name_prefix = "sp-";
  p.max_nodes = max_nodes;
  p.capacity = CapacityType::kSpot;
  p.node.cpu_milli = 4500;
  p.node.memory_mib = 8192;
  p.node.gpus.assign(2, Gpu{"H100", 81920});
  p.node.labels = {{"zone", "a"}};
  p.provisioner.command = {"/opt/provision", "--zone=a"};
  p.provisioner.timeout_ns = 20 * kS;
  p.provisioner.retry_after_ns = 5 * kS;
  p.provisioner.join_timeout_ns = 60 * kS;
  return p;
}

ProvisionResult result(const ProvisionCall& c, bool ok, bool timed_out = false) {
  ProvisionResult r;
  r.call = c;
  r.ok = ok;
  r.timed_out = timed_out;
  r.exit_code = ok ? 0 : timed_out ? -1 : 1;
  return r;
}

TEST(NodePools, ACreateCallCarriesThePoolTheNodeAndItsShape) {
  NodePools pools;
  pools.configure({pool_of(3)});
  ASSERT_TRUE(pools.active());
  auto calls = pools.create(0, 2, 1 * kS);
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0].argv,
            (std::vector<std::string>{"/opt/provision", "--zone=a", "create", "spot", "sp-0"}));
  EXPECT_EQ(calls[1].node, "sp-1");
  EXPECT_EQ(calls[0].timeout_ns, 20 * kS);
  for (const char* kv :
       {"SLUICE_POOL=spot", "SLUICE_NODE=sp-0", "SLUICE_OP=create", "SLUICE_CAPACITY_TYPE=spot",
        "SLUICE_NODE_GPUS=2", "SLUICE_NODE_GPU_MODEL=H100", "SLUICE_NODE_GPU_MEMORY_MIB=81920",
        "SLUICE_NODE_CPU=4.5", "SLUICE_NODE_MEMORY_MIB=8192", "SLUICE_NODE_LABELS=zone=a"})
    EXPECT_NE(std::find(calls[0].env.begin(), calls[0].env.end(), kv), calls[0].env.end()) << kv;
  // Both slots are on their way: core/scale sees them provisioning, the third absent.
  auto view = pools.scale_view(0, 1 * kS);
  ASSERT_EQ(view.size(), 3u);
  EXPECT_EQ(view[0].state, scale::NodeState::kProvisioning);
  EXPECT_EQ(view[2].state, scale::NodeState::kAbsent);
  EXPECT_EQ(pools.create(0, 5, 1 * kS).size(), 1u);  // one slot left
}

TEST(NodePools, ANodeJoinsGoesIdleAndIsDeleted) {
  NodePools pools;
  pools.configure({pool_of(2)});
  auto calls = pools.create(0, 1, 0);
  EXPECT_FALSE(pools.done(result(calls[0], true), 1 * kS));
  EXPECT_EQ(pools.phase(0, 0), SlotPhase::kJoining);
  EXPECT_TRUE(pools.observe(0, 0, {true, 2}, 2 * kS).empty());
  EXPECT_EQ(pools.phase(0, 0), SlotPhase::kReady);
  pools.observe(0, 0, {true, 0}, 5 * kS);  // its pods ended: idle from now
  auto view = pools.scale_view(0, 6 * kS);
  EXPECT_EQ(view[0].state, scale::NodeState::kReady);
  EXPECT_EQ(view[0].pods, 0);
  EXPECT_EQ(view[0].idle_since_ns, 5 * kS);
  pools.leave(0, 0, "idle", 20 * kS, 20 * kS);
  auto del = pools.observe(0, 0, {true, 0}, 20 * kS);
  ASSERT_EQ(del.size(), 1u);
  EXPECT_EQ(del[0].op, "delete");
  EXPECT_EQ(del[0].reason, "idle");
  EXPECT_EQ(del[0].argv[2], "delete");
  EXPECT_TRUE(pools.done(result(del[0], true), 21 * kS));  // gone
  EXPECT_EQ(pools.phase(0, 0), SlotPhase::kAbsent);
  EXPECT_EQ(pools.calls_total().at({"spot", "create", "ok"}), 1);
  EXPECT_EQ(pools.calls_total().at({"spot", "delete", "ok"}), 1);
}

TEST(NodePools, AFailedCreateFreesTheSlotAfterRetryAfter) {
  NodePools pools;
  pools.configure({pool_of(1)});
  auto calls = pools.create(0, 1, 0);
  pools.done(result(calls[0], false), 1 * kS);
  EXPECT_EQ(pools.phase(0, 0), SlotPhase::kAbsent);
  EXPECT_TRUE(pools.scale_view(0, 2 * kS).empty());  // waiting: the autoscaler has no room
  EXPECT_TRUE(pools.create(0, 1, 2 * kS).empty());
  ASSERT_EQ(pools.scale_view(0, 6 * kS).size(), 1u);  // 1 s + retryAfter
  calls = pools.create(0, 1, 6 * kS);
  ASSERT_EQ(calls.size(), 1u);
  pools.done(result(calls[0], false, true), 7 * kS);
  EXPECT_EQ(pools.calls_total().at({"spot", "create", "failed"}), 1);
  EXPECT_EQ(pools.calls_total().at({"spot", "create", "timeout"}), 1);
  const auto v = pools.view(8 * kS);
  EXPECT_EQ(v["calls"][0]["result"], "timeout");
  EXPECT_EQ(v["calls"][1]["result"], "failed");
  EXPECT_EQ(v["pools"][0]["slots"][0]["state"], "absent");  // shown while it waits
}

TEST(NodePools, ANodeThatNeverJoinsIsDeletedAndOneThatJoinsAnywayIsAdopted) {
  NodePools pools;
  pools.configure({pool_of(2)});
  auto calls = pools.create(0, 2, 0);
  pools.done(result(calls[0], true), 1 * kS);
  EXPECT_TRUE(pools.observe(0, 0, {false, 0}, 30 * kS).empty());
  auto del = pools.observe(0, 0, {false, 0}, 61 * kS);  // joinTimeout after the create answered
  ASSERT_EQ(del.size(), 1u);
  EXPECT_EQ(del[0].reason, "join-timeout");
  // A failed create whose agent registers all the same: the node is the pool's.
  pools.done(result(calls[1], false), 1 * kS);
  pools.observe(0, 1, {true, 0}, 2 * kS);
  EXPECT_EQ(pools.phase(0, 1), SlotPhase::kReady);
  // A failed delete is asked again after retryAfter.
  pools.done(result(del[0], false), 62 * kS);
  EXPECT_EQ(pools.phase(0, 0), SlotPhase::kLeaving);
  EXPECT_TRUE(pools.observe(0, 0, {false, 0}, 63 * kS).empty());
  EXPECT_EQ(pools.observe(0, 0, {false, 0}, 67 * kS).size(), 1u);
}

TEST(NodePools, AReclaimWaitsForThePodsUntilItsNoticeRunsOut) {
  NodePools pools;
  pools.configure({pool_of(1)});
  auto calls = pools.create(0, 1, 0);
  pools.done(result(calls[0], true), 1 * kS);
  pools.observe(0, 0, {true, 1}, 2 * kS);
  pools.leave(0, 0, "reclaim", 10 * kS, 40 * kS);
  EXPECT_EQ(pools.scale_view(0, 10 * kS)[0].state, scale::NodeState::kLeaving);
  EXPECT_TRUE(pools.observe(0, 0, {true, 1}, 20 * kS).empty());  // its pod is stopping
  auto del = pools.observe(0, 0, {true, 1}, 40 * kS);            // the notice ran out
  ASSERT_EQ(del.size(), 1u);
  EXPECT_EQ(del[0].reason, "reclaim");
  EXPECT_EQ(pools.count_phases(0).at("deleting"), 1);
}

TEST(NodePools, AWebhookCallCarriesTheSameAsAJsonBody) {
  NodePool pool = pool_of(2);
  pool.provisioner.command.clear();
  pool.provisioner.webhook_url = "http://127.0.0.1:9000/nodes";
  pool.provisioner.bearer_token_file = "/etc/prov.token";
  NodePools pools;
  pools.configure({pool});
  ASSERT_TRUE(pools.active());
  auto calls = pools.create(0, 1, 1 * kS);
  ASSERT_EQ(calls.size(), 1u);
  const ProvisionCall& c = calls[0];
  EXPECT_TRUE(c.argv.empty());  // no process
  EXPECT_EQ(c.url, "http://127.0.0.1:9000/nodes");
  EXPECT_EQ(c.token_file, "/etc/prov.token");
  EXPECT_EQ(c.timeout_ns, 20 * kS);
  // The command's environment, as JSON (the server adds "server"); never a token.
  const nlohmann::json want = nlohmann::json::parse(R"({
    "op": "create", "pool": "spot", "node": "sp-0", "reason": "scale-up",
    "capacity_type": "spot",
    "shape": {"gpus": 2, "gpu_model": "H100", "gpu_memory_mib": 81920, "cpu_milli": 4500,
              "memory_mib": 8192, "labels": {"zone": "a"}}})");
  EXPECT_EQ(c.body, want) << c.body.dump();
  EXPECT_EQ(webhook_body(pool, "sp-1", "delete", "idle")["reason"], "idle");
  // Its result is counted and listed as a command's is, with the HTTP status.
  ProvisionResult r = result(c, false);
  r.exit_code = -1;
  r.http_status = 503;
  r.output = "HTTP 503: no capacity";
  pools.done(r, 2 * kS);
  EXPECT_EQ((pools.calls_total().at({"spot", "create", "failed"})), 1);
  const nlohmann::json last = pools.view(2 * kS)["calls"][0];
  EXPECT_EQ(last["http_status"], 503);
  EXPECT_EQ(last["result"], "failed");
  EXPECT_EQ(last["output"], "HTTP 503: no capacity");
  EXPECT_EQ(pools.phase(0, 0), SlotPhase::kAbsent);  // waits out retryAfter
}

TEST(NodePools, ASlotIsFoundByItsNodeNameAndKeptAcrossAReconfiguration) {
  NodePools pools;
  pools.configure({pool_of(3)});
  size_t p = 9, k = 9;
  EXPECT_TRUE(pools.locate("sp-2", p, k));
  EXPECT_EQ(k, 2u);
  for (const char* other : {"sp-3", "sp-", "sp-01", "sp-x", "f1", "sp-99999999"})
    EXPECT_FALSE(pools.locate(other, p, k)) << other;
  pools.create(0, 1, 0);
  pools.configure({pool_of(2)});
  EXPECT_EQ(pools.phase(0, 0), SlotPhase::kCreating);
  NodePool plain = pool_of(2);
  plain.provisioner.command.clear();
  pools.configure({plain});
  EXPECT_FALSE(pools.active());
}

}  // namespace
}  // namespace node_pools_test
}  // namespace sluice::server
