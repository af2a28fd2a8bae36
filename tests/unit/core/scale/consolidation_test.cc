// core/scale's consolidation (part of decide()): a busy node whose preemptible work fits now on
// the pool's other busy nodes, without keeping them up longer, is emptied; off by default;
// never non-preemptible work, never a job younger than `after`, never onto an empty or a new
// node, at most one node per `interval`, nothing while pending work could take the room, gangs
// whole, the node expected busy longest first.
#include "core/scale/consolidation.h"

#include <gtest/gtest.h>

#include "core/scale/autoscaler.h"

namespace sluice::scale {
namespace consolidation_test {

constexpr TimeNs kS = kNsPerSec;

NodePool pool8(bool on) {
  NodePool p;
  p.name = "p";
  p.flavor_id = 0;
  p.node.cpu_milli = 64000;
  p.node.memory_mib = 512 * 1024;
  p.node.gpus.assign(8, Gpu{"P100", 16384, 0, 0, 0, {}});
  p.max_nodes = 4;
  p.scale_down_after_ns = 600 * kS;
  if (on) p.consolidation = Consolidation{60 * kS, 60 * kS};
  return p;
}

// A pod of `gpus` whole devices from device `first` on `node`.
RunningPod pod(NodeId node, int16_t first, int16_t gpus) {
  RunningPod p;
  p.node = node;
  p.cpu_milli = 1000;
  p.memory_mib = 1024;
  for (int16_t g = 0; g < gpus; ++g) p.gpus.push_back(GpuUse{static_cast<int16_t>(first + g)});
  return p;
}

RunningGang job(JobId id, bool preemptible, TimeNs start_s, TimeNs walltime_s,
                std::vector<RunningPod> pods) {
  RunningGang g;
  g.job = id;
  g.preemptible = preemptible;
  g.start_ns = start_s * kS;
  g.checkpoint_ns = g.start_ns;
  g.walltime_ns = walltime_s * kS;
  for (const RunningPod& p : pods) g.gpu_milli += 1000 * static_cast<int64_t>(p.gpus.size());
  g.pods = std::move(pods);
  return g;
}

// Four ready slots, nodes 0-3, at t = 1000 s. Node 0: job 1 (not preemptible, 4 GPUs, until
// 10000 s); node 1: job 2 (preemptible, 2 GPUs, started at 100 s for 2000 s: until 2100 s).
struct Fixture {
  std::vector<NodePool> pools;
  ScaleInput in;
  explicit Fixture(bool on = true) {
    pools.push_back(pool8(on));
    in.pools = &pools;
    in.now = 1000 * kS;
    std::vector<PoolNode> nodes;
    for (NodeId n = 0; n < 4; ++n) nodes.push_back(PoolNode{n, NodeState::kReady, 0, 0});
    nodes[0].pods = nodes[1].pods = 1;
    in.nodes.push_back(nodes);
    in.running = {job(1, false, 0, 10000, {pod(0, 0, 4)}), job(2, true, 100, 2000, {pod(1, 0, 2)})};
  }
};

TEST(Consolidation, EmptiesANodeWhoseWorkFitsOnOneBusyLonger) {
  Fixture f;
  const ScaleDecision d = decide(f.in);
  ASSERT_EQ(d.consolidate.size(), 1u);
  EXPECT_EQ(d.consolidate[0].pool, 0);
  EXPECT_EQ(d.consolidate[0].node, 1);
  EXPECT_EQ(d.consolidate[0].jobs, std::vector<JobId>{2});
  // 2 GPUs x 900 s of work thrown away; the node was expected busy until 2100 s.
  EXPECT_EQ(d.consolidate[0].lost_gpu_milli_ns, 2000 * 900 * kS);
  EXPECT_EQ(d.consolidate[0].expected_remaining_ns, 1100 * kS);
  EXPECT_EQ(d.consolidation_looked, std::vector<int32_t>{0});
  EXPECT_FALSE(d.empty());
  // Same input, same decision.
  EXPECT_EQ(decide(f.in).consolidate[0].node, 1);
}

TEST(Consolidation, OffByDefault) {
  Fixture f(false);
  const ScaleDecision d = decide(f.in);
  EXPECT_TRUE(d.consolidate.empty());
  EXPECT_TRUE(d.consolidation_looked.empty());
  EXPECT_FALSE(d.down.empty());  // (nodes 2 and 3 are idle past scaleDownAfter: they go)
}

TEST(Consolidation, NeverMovesWorkThatIsNotPreemptible) {
  Fixture f;
  f.in.running[1].preemptible = false;
  EXPECT_TRUE(decide(f.in).consolidate.empty());
}

TEST(Consolidation, NeverMovesAJobYoungerThanAfter) {
  Fixture f;
  f.in.running[1].start_ns = f.in.running[1].checkpoint_ns = 950 * kS;  // 50 s < 60 s
  EXPECT_TRUE(decide(f.in).consolidate.empty());
  f.in.running[1].start_ns = f.in.running[1].checkpoint_ns = 940 * kS;  // 60 s: may move
  EXPECT_EQ(decide(f.in).consolidate.size(), 1u);
}

TEST(Consolidation, OnlyWhenTheWorkFitsOnABusyNode) {
  Fixture f;
  f.in.running[0].pods[0] = pod(0, 0, 7);  // node 0: one GPU free, job 2 needs two
  // Nodes 2 and 3 are ready and empty: they take nothing (they are about to go).
  EXPECT_TRUE(decide(f.in).consolidate.empty());
}

TEST(Consolidation, NeverOntoANodeExpectedToEndSooner) {
  Fixture f;
  // Job 1 ends at 2500 s; job 2 restarted at 1000 s would run until 3000 s.
  f.in.running[0].walltime_ns = 2500 * kS;
  EXPECT_TRUE(decide(f.in).consolidate.empty());
  // With a checkpoint at 700 s it keeps 600 s of its work: until 2400 s, inside job 1's run.
  f.in.running[1].checkpoint_ns = 700 * kS;
  const ScaleDecision d = decide(f.in);
  ASSERT_EQ(d.consolidate.size(), 1u);
  EXPECT_EQ(d.consolidate[0].lost_gpu_milli_ns, 2000 * 300 * kS);  // since the checkpoint
}

TEST(Consolidation, AtMostOnceAnInterval) {
  Fixture f;
  f.in.consolidation_looked_ns = {970 * kS};  // looked 30 s ago
  ScaleDecision d = decide(f.in);
  EXPECT_TRUE(d.consolidate.empty());
  EXPECT_TRUE(d.consolidation_looked.empty());
  f.in.consolidation_looked_ns = {940 * kS};  // 60 s ago
  d = decide(f.in);
  EXPECT_EQ(d.consolidate.size(), 1u);
}

TEST(Consolidation, NothingMovesWhilePendingWorkCouldTakeTheRoom) {
  Fixture f;
  PendingGang g;
  g.job = 9;
  g.flavors = {0};
  g.pods.push_back(PodNeed{1, 8, 1000, 1000, 1024, nullptr});
  g.gpu_milli = 8000;
  f.in.pending = {g};
  f.in.gpu_headroom = {{0}};  // its queue has no quota left: it could not take the room
  EXPECT_EQ(decide(f.in).consolidate.size(), 1u);
  f.in.gpu_headroom = {{8000}};  // it could (and asks for a node): nothing moves
  const ScaleDecision d = decide(f.in);
  EXPECT_TRUE(d.consolidate.empty());
  EXPECT_EQ(d.consolidation_looked, std::vector<int32_t>{0});
}

TEST(Consolidation, AGangMovesWhole) {
  Fixture f;
  // Job 3 has a pod on node 2 and one on node 3; node 3 also runs job 4 (not preemptible).
  f.in.running.push_back(job(3, true, 200, 1500, {pod(2, 0, 2), pod(3, 0, 2)}));
  f.in.running.push_back(job(4, false, 0, 20000, {pod(3, 2, 2)}));
  f.in.running[1].preemptible = false;  // node 1 stays
  f.in.nodes[0][2].pods = f.in.nodes[0][3].pods = 1;
  const ScaleDecision d = decide(f.in);
  ASSERT_EQ(d.consolidate.size(), 1u);
  EXPECT_EQ(d.consolidate[0].node, 2);
  EXPECT_EQ(d.consolidate[0].jobs, std::vector<JobId>{3});
  EXPECT_EQ(d.consolidate[0].lost_gpu_milli_ns, 4000 * 800 * kS);  // both pods' work
}

TEST(Consolidation, EmptiesTheNodeExpectedBusyLongestOneAtATime) {
  Fixture f;
  // Node 2: job 5 (preemptible, 1 GPU, until 1400 s); node 1's job 2 runs until 2100 s.
  f.in.running.push_back(job(5, true, 800, 600, {pod(2, 0, 1)}));
  f.in.nodes[0][2].pods = 1;
  const ScaleDecision d = decide(f.in);
  ASSERT_EQ(d.consolidate.size(), 1u);
  EXPECT_EQ(d.consolidate[0].node, 1);
}

}  // namespace consolidation_test
}  // namespace sluice::scale
