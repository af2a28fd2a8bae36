// core/scale's decide(): scale-up per gang within quota and pool limits, nodes on their way
// counted first, scale-down of idle nodes past the pool's time, minNodes, determinism.
#include "core/scale/autoscaler.h"

#include <gtest/gtest.h>

namespace sluice::scale {
namespace autoscaler_test {

constexpr TimeNs kS = kNsPerSec;

// A pool of 8-GPU nodes serving flavor 0, up to `max` nodes.
NodePool pool8(int32_t max, int32_t min = 0) {
  NodePool p;
  p.name = "p";
  p.flavor_id = 0;
  p.name_prefix = "p-";
  p.node.cpu_milli = 64000;
  p.node.memory_mib = 512 * 1024;
  p.node.gpus.assign(8, Gpu{"P100", 16384, 0, 0, 0, {}});
  p.min_nodes = min;
  p.max_nodes = max;
  p.scale_down_after_ns = 600 * kS;
  return p;
}

// A gang of `pods` pods of `gpus` GPUs each, queue 0, flavor 0.
PendingGang gang(JobId id, int32_t pods, int32_t gpus) {
  PendingGang g;
  g.job = id;
  g.queue = 0;
  g.flavors = {0};
  g.pods.push_back(PodNeed{pods, gpus, 1000, 1000, 1024, nullptr});
  g.gpu_milli = static_cast<int64_t>(pods) * gpus * 1000;
  return g;
}

std::vector<PoolNode> slots(int32_t n, NodeId first = 0) {
  std::vector<PoolNode> v;
  for (int32_t k = 0; k < n; ++k) v.push_back(PoolNode{first + k, NodeState::kAbsent, 0, 0});
  return v;
}

struct Fixture {
  std::vector<NodePool> pools;
  ScaleInput in;
  explicit Fixture(NodePool p) {
    pools.push_back(std::move(p));
    in.pools = &pools;
    in.nodes.push_back(slots(pools[0].max_nodes));
    in.now = 1000 * kS;
  }
};

TEST(Autoscaler, AGangGetsTheNodesItNeedsInOneRequest) {
  Fixture f(pool8(10));
  f.in.pending = {gang(7, 3, 4)};  // 12 GPUs in pods of 4: two 8-GPU nodes
  const ScaleDecision d = decide(f.in);
  ASSERT_EQ(d.up.size(), 1u);
  EXPECT_EQ(d.up[0].pool, 0);
  EXPECT_EQ(d.up[0].nodes, 2);
  EXPECT_EQ(d.up[0].job, 7);
  EXPECT_TRUE(d.down.empty());
}

TEST(Autoscaler, GangsShareTheRoomOfNodesAskedForAndOnTheirWay) {
  Fixture f(pool8(10));
  f.in.pending = {gang(1, 1, 4), gang(2, 1, 4), gang(3, 1, 4)};
  ScaleDecision d = decide(f.in);
  // 1 and 2 share one new node; 3 needs a second one.
  ASSERT_EQ(d.up.size(), 2u);
  EXPECT_EQ(d.up[0].job, 1);
  EXPECT_EQ(d.up[0].nodes, 1);
  EXPECT_EQ(d.up[1].job, 3);
  EXPECT_EQ(d.up[1].nodes, 1);
  // With those two nodes on their way, the same work asks for nothing more.
  f.in.nodes[0][0].state = NodeState::kProvisioning;
  f.in.nodes[0][1].state = NodeState::kProvisioning;
  d = decide(f.in);
  EXPECT_TRUE(d.up.empty());
}

TEST(Autoscaler, AnEmptyReadyNodeCountsAsRoom) {
  Fixture f(pool8(10));
  f.in.nodes[0][0] = PoolNode{0, NodeState::kReady, 0, f.in.now};
  f.in.pending = {gang(1, 2, 8)};  // needs two whole nodes: one more
  const ScaleDecision d = decide(f.in);
  ASSERT_EQ(d.up.size(), 1u);
  EXPECT_EQ(d.up[0].nodes, 1);
}

TEST(Autoscaler, NoNodeForAQueueWithoutQuotaLeft) {
  Fixture f(pool8(10));
  f.in.pending = {gang(1, 1, 8), gang(2, 1, 8)};
  f.in.gpu_headroom = {{8000}};  // queue 0, flavor 0: room for one of them
  ScaleDecision d = decide(f.in);
  ASSERT_EQ(d.up.size(), 1u);
  EXPECT_EQ(d.up[0].job, 1);
  f.in.gpu_headroom = {{0}};
  d = decide(f.in);
  EXPECT_TRUE(d.up.empty());
}

TEST(Autoscaler, NeverPastMaxNodesAndNeverPartOfAGang) {
  Fixture f(pool8(2));
  f.in.pending = {gang(1, 3, 8), gang(2, 1, 8)};  // 3 nodes cannot be had; 1 can
  const ScaleDecision d = decide(f.in);
  ASSERT_EQ(d.up.size(), 1u);
  EXPECT_EQ(d.up[0].job, 2);
  EXPECT_EQ(d.up[0].nodes, 1);
}

TEST(Autoscaler, OnlyPoolsOfTheGangsFlavors) {
  NodePool p = pool8(4);
  p.flavor_id = 1;
  Fixture f(p);
  f.in.pending = {gang(1, 1, 8)};  // flavor 0 only
  EXPECT_TRUE(decide(f.in).up.empty());
  f.in.pending[0].flavors = {0, 1};
  EXPECT_EQ(decide(f.in).up.size(), 1u);
}

TEST(Autoscaler, APodLargerThanANodeAsksForNothing) {
  Fixture f(pool8(4));
  f.in.pending = {gang(1, 1, 16)};
  EXPECT_TRUE(decide(f.in).up.empty());
}

TEST(Autoscaler, IdleNodesGoAfterTheirTimeLongestIdleFirstNeverBelowMin) {
  Fixture f(pool8(4, 1));
  const TimeNs now = f.in.now;
  f.in.nodes[0][0] = PoolNode{0, NodeState::kReady, 0, now - 700 * kS};  // idle long enough
  f.in.nodes[0][1] = PoolNode{1, NodeState::kReady, 0, now - 900 * kS};  // longest idle
  f.in.nodes[0][2] = PoolNode{2, NodeState::kReady, 3, now - 900 * kS};  // running pods
  f.in.nodes[0][3] = PoolNode{3, NodeState::kReady, 0, now - 100 * kS};  // not idle long
  ScaleDecision d = decide(f.in);
  ASSERT_EQ(d.down.size(), 2u);
  EXPECT_EQ(d.down[0].node, 1);
  EXPECT_EQ(d.down[1].node, 0);
  // minNodes 3: only one may go.
  f.pools[0].min_nodes = 3;
  d = decide(f.in);
  ASSERT_EQ(d.down.size(), 1u);
  EXPECT_EQ(d.down[0].node, 1);
}

TEST(Autoscaler, MinNodesAreAskedFor) {
  Fixture f(pool8(4, 2));
  const ScaleDecision d = decide(f.in);
  ASSERT_EQ(d.up.size(), 1u);
  EXPECT_EQ(d.up[0].nodes, 2);
  EXPECT_EQ(d.up[0].job, 0);
}

TEST(Autoscaler, SpareNodesAreKeptEmptyBesideThePendingWork) {
  NodePool p = pool8(10);
  p.spare_nodes = 2;
  Fixture f(p);
  ScaleDecision d = decide(f.in);
  ASSERT_EQ(d.up.size(), 1u);
  EXPECT_EQ(d.up[0].nodes, 2);
  EXPECT_EQ(d.up[0].job, 0);
  // One empty ready node, one coming: enough. A gang that takes one of them: one more.
  f.in.nodes[0][0] = PoolNode{0, NodeState::kReady, 0, f.in.now};
  f.in.nodes[0][1].state = NodeState::kProvisioning;
  EXPECT_TRUE(decide(f.in).up.empty());
  f.in.pending = {gang(1, 1, 8)};
  d = decide(f.in);
  ASSERT_EQ(d.up.size(), 1u);
  EXPECT_EQ(d.up[0].nodes, 1);
  EXPECT_EQ(d.up[0].job, 0);
}

// deferScaleUp: a gang below the priority asks only once it has waited; one above asks at once;
// the decision says when the held-back gang asks.
TEST(Autoscaler, DeferScaleUpHoldsLowerPriorityGangsBackUntilTheyHaveWaited) {
  NodePool p = pool8(10);
  p.defer_scale_up = DeferScaleUp{1000, 600 * kS};
  Fixture f(p);
  PendingGang low = gang(1, 1, 8);
  low.priority = 100;
  low.submit_ns = f.in.now - 100 * kS;
  PendingGang high = gang(2, 1, 8);
  high.priority = 1000;
  high.submit_ns = f.in.now;
  f.in.pending = {high, low};
  ScaleDecision d = decide(f.in);
  ASSERT_EQ(d.up.size(), 1u);
  EXPECT_EQ(d.up[0].job, 2);
  EXPECT_EQ(d.up[0].nodes, 1);
  EXPECT_EQ(d.recheck_ns, f.in.now + 500 * kS);
  // Its wait is over: it asks too, and nothing is held back.
  f.in.now += 500 * kS;
  d = decide(f.in);
  ASSERT_EQ(d.up.size(), 2u);
  EXPECT_EQ(d.up[1].job, 1);
  EXPECT_EQ(d.recheck_ns, 0);
  // Off (the default): the same gang asks at once.
  f.pools[0].defer_scale_up = DeferScaleUp{};
  f.in.now -= 500 * kS;
  EXPECT_EQ(decide(f.in).up.size(), 2u);
}

TEST(Autoscaler, ScaleDownKeepsTheSpareNodes) {
  NodePool p = pool8(4);
  p.spare_nodes = 2;
  Fixture f(p);
  for (NodeId k = 0; k < 3; ++k) f.in.nodes[0][k] = PoolNode{k, NodeState::kReady, 0, 0};
  const ScaleDecision d = decide(f.in);
  EXPECT_TRUE(d.up.empty());
  ASSERT_EQ(d.down.size(), 1u);
  EXPECT_EQ(d.down[0].node, 0);
}

TEST(Autoscaler, ALeavingNodeHoldsItsSlot) {
  Fixture f(pool8(1));
  f.in.nodes[0][0].state = NodeState::kLeaving;
  f.in.pending = {gang(1, 1, 8)};
  EXPECT_TRUE(decide(f.in).up.empty());
}

TEST(Autoscaler, SameInputSameDecision) {
  Fixture f(pool8(8));
  f.in.pending = {gang(1, 2, 4), gang(2, 1, 8), gang(3, 5, 2)};
  f.in.nodes[0][5] = PoolNode{5, NodeState::kReady, 0, 0};
  const ScaleDecision a = decide(f.in), b = decide(f.in);
  ASSERT_EQ(a.up.size(), b.up.size());
  for (size_t i = 0; i < a.up.size(); ++i) {
    EXPECT_EQ(a.up[i].nodes, b.up[i].nodes);
    EXPECT_EQ(a.up[i].job, b.up[i].job);
  }
  EXPECT_EQ(a.down.size(), b.down.size());
}

TEST(Autoscaler, GangOfReadsPodSetsAndTheQueuesGpuFlavors) {
  Job j;
  j.id = 9;
  PodSet ps;
  ps.count = 2;
  ps.gpus = 4;
  ps.requests[kGpu] = 4000;
  ps.requests[kCpu] = 8000;
  j.pod_sets = {ps};
  ClusterQueue cq;
  ResourceGroup rg;
  rg.covered = {kGpu};
  rg.flavors = {FlavorQuotas{2, {}}, FlavorQuotas{0, {}}};
  cq.resource_groups = {rg};
  const PendingGang g = gang_of(j, 3, cq);
  EXPECT_EQ(g.job, 9);
  EXPECT_EQ(g.queue, 3);
  EXPECT_EQ(g.flavors, (std::vector<FlavorId>{2, 0}));
  ASSERT_EQ(g.pods.size(), 1u);
  EXPECT_EQ(g.pods[0].count, 2);
  EXPECT_EQ(g.pods[0].gpus, 4);
  EXPECT_EQ(g.pods[0].cpu_milli, 8000);
}

TEST(Autoscaler, PoolNodesAreAppendedNotReady) {
  Cluster c;
  c.nodes.resize(3);
  std::vector<NodePool> pools = {pool8(2), pool8(3)};
  pools[1].name_prefix = "q-";
  const std::vector<NodeId> first = add_pool_nodes(pools, c);
  EXPECT_EQ(first, (std::vector<NodeId>{3, 5}));
  ASSERT_EQ(c.nodes.size(), 8u);
  EXPECT_EQ(c.nodes[4].name, "p-1");
  EXPECT_EQ(c.nodes[7].name, "q-2");
  EXPECT_FALSE(c.nodes[7].ready);
  EXPECT_EQ(c.nodes[7].gpus.size(), 8u);
}

}  // namespace autoscaler_test
}  // namespace sluice::scale
