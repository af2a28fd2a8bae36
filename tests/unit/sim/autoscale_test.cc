// The simulator with a NodePool (sim/autoscale.h): nodes join after the provisioning delay,
// idle ones go after scaleDownAfter, node-hours and cost by hand, spot reclaims requeue work
// without counting as failures, and the same seed gives the same run.
#include "sim/autoscale.h"

#include <gtest/gtest.h>

#include "sim/report.h"
#include "sim/simulator.h"
#include "sim/trace_philly.h"
#include "sim_test_util.h"

namespace sluice::sim {
namespace autoscale_test {

using testing::load_config;

// No fixed node: a pool of 4-GPU nodes (at most `max`), queue `team` with 8 GPUs of quota.
std::string pool_config(const std::string& pool_spec) {
  return R"(apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: default}
---
apiVersion: sluice.dev/v1alpha1
kind: NodePool
metadata: {name: pool}
spec:
  flavor: default
  node: {cpu: 8, memory: 64Gi, gpus: {count: 4, model: T4}}
)" + pool_spec +
         R"(
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: team}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: default
      resources: [{name: nvidia.com/gpu, nominalQuota: 8}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: team, namespace: default}
spec: {clusterQueue: team}
)";
}

std::vector<TraceJob> trace(const Config& config, const char* csv) {
  TraceOutput t = read_philly("t.csv", csv, PhillyOptions{});
  check_against(t, config);
  EXPECT_TRUE(t.errors.empty());
  return t.jobs;
}

// job 1: 4 GPUs at 0 for 100 s -> asks for node 0 at 0; it joins at 60: runs 60..160.
// job 2: 4 GPUs at 10 for 50 s -> node 0 is taken (on its way): node 1 asked at 10, joins at
//        70: runs 70..120.
// Idle: node 1 from 120, gone at 220; node 0 from 160, gone at 260. Billed 260 + 210 s.
TEST(SimAutoscale, NodesJoinAfterTheDelayAndLeaveAfterIdleTime) {
  auto config = load_config(pool_config(
      "  maxNodes: 3\n  pricePerHour: 2\n  provisioningDelay: 60s\n  scaleDownAfter: 100s"));
  const auto jobs = trace(*config,
                          "job_id,user,num_gpu,submit_time,duration,best_effort\n"
                          "1,team,4,0,100,0\n"
                          "2,team,4,10,50,0\n");
  SimOptions o;
  o.check_invariants = true;
  const SimResult r = simulate(config, jobs, o);
  EXPECT_EQ(r.invariant_failure, "");
  ASSERT_EQ(r.jobs.size(), 2u);
  EXPECT_EQ(r.jobs[0].first_start_ns, 60 * kNsPerSec);
  EXPECT_EQ(r.jobs[1].first_start_ns, 70 * kNsPerSec);
  EXPECT_EQ(r.jobs[1].end_ns, 120 * kNsPerSec);
  ASSERT_EQ(r.pools.size(), 1u);
  const PoolFigures& p = r.pools[0];
  EXPECT_NEAR(p.node_hours, (260.0 + 210.0) / 3600, 1e-9);
  EXPECT_NEAR(p.cost, 2 * (260.0 + 210.0) / 3600, 1e-9);
  EXPECT_EQ(p.peak_nodes, 2);
  EXPECT_EQ(p.requests, 2);
  EXPECT_EQ(p.nodes_added, 2);
  EXPECT_EQ(p.nodes_removed, 2);
  const std::vector<TimeNs> t = {0, 10 * kNsPerSec, 220 * kNsPerSec, 260 * kNsPerSec};
  EXPECT_EQ(p.t_ns, t);
  EXPECT_EQ(p.nodes, (std::vector<int32_t>{1, 2, 1, 0}));

  const Figures f = compute_figures(r, *config, ReportInputs{});
  const nlohmann::json j = to_json(f);
  ASSERT_TRUE(j.contains("autoscaling"));
  EXPECT_NEAR(j["autoscaling"]["node_hours"].get<double>(), 470.0 / 3600, 1e-9);
  // 4 GPUs x 150 s used of 4 x 470 s paid.
  EXPECT_NEAR(j["autoscaling"]["paid_utilisation"].get<double>(), 150.0 / 470.0, 1e-9);
  EXPECT_NE(to_table(f).find("autoscaling:"), std::string::npos);
}

// The pool configuration with the trace's priority classes.
std::string with_classes(const std::string& yaml) {
  return yaml + "---\n" + testing::kPriorityClassesYaml;
}

// deferScaleUp: job 1 (strict) holds the initial node 0..100. Job 2 (best-effort, at 10) is held
// back until 310 and takes node 0 when job 1 leaves it (100..150): no node for it. Without
// deferScaleUp it asks at 10 and gets a second node, which joins at 70 (70..120).
TEST(SimAutoscale, DeferredBestEffortWorkTakesRoomThatFreesInsteadOfANewNode) {
  const char* csv =
      "job_id,user,num_gpu,submit_time,duration,best_effort\n"
      "1,team,4,0,100,0\n"
      "2,team,4,10,50,1\n";
  const std::string pool =
      "  maxNodes: 3\n  initialNodes: 1\n  provisioningDelay: 60s\n  scaleDownAfter: 100s";
  auto deferred = load_config(
      with_classes(pool_config(pool + "\n  deferScaleUp: {belowPriority: 1000, after: 300s}")));
  const SimResult r = simulate(deferred, trace(*deferred, csv), SimOptions{});
  ASSERT_EQ(r.jobs.size(), 2u);
  EXPECT_EQ(r.jobs[1].first_start_ns, 100 * kNsPerSec);
  ASSERT_EQ(r.pools.size(), 1u);
  EXPECT_EQ(r.pools[0].nodes_added, 1);

  auto eager = load_config(with_classes(pool_config(pool)));
  const SimResult e = simulate(eager, trace(*eager, csv), SimOptions{});
  ASSERT_EQ(e.jobs.size(), 2u);
  EXPECT_EQ(e.jobs[1].first_start_ns, 70 * kNsPerSec);
  ASSERT_EQ(e.pools.size(), 1u);
  EXPECT_EQ(e.pools[0].nodes_added, 2);
}

// A held-back job asks when its wait ends even if nothing else happens by then: job 2 waits
// until 310 (job 1 runs until 1000), its node joins at 370.
TEST(SimAutoscale, ADeferredJobAsksWhenItsWaitEnds) {
  auto config = load_config(
      with_classes(pool_config("  maxNodes: 2\n  initialNodes: 1\n  provisioningDelay: 60s\n"
                               "  deferScaleUp: {belowPriority: 1000, after: 300s}")));
  const auto jobs = trace(*config,
                          "job_id,user,num_gpu,submit_time,duration,best_effort\n"
                          "1,team,4,0,1000,0\n"
                          "2,team,4,10,50,1\n");
  const SimResult r = simulate(config, jobs, SimOptions{});
  ASSERT_EQ(r.jobs.size(), 2u);
  EXPECT_EQ(r.jobs[1].first_start_ns, 370 * kNsPerSec);
}

// A queue whose quota is spent starts no node: job 3 waits for quota, not for a node.
TEST(SimAutoscale, NoNodeBeyondTheQueuesQuota) {
  auto config = load_config(pool_config("  maxNodes: 5\n  provisioningDelay: 10s"));
  const auto jobs = trace(*config,
                          "job_id,user,num_gpu,submit_time,duration,best_effort\n"
                          "1,team,4,0,100,0\n"
                          "2,team,4,0,100,0\n"
                          "3,team,4,0,100,0\n");
  const SimResult r = simulate(config, jobs, SimOptions{});
  ASSERT_EQ(r.pools.size(), 1u);
  EXPECT_EQ(r.pools[0].peak_nodes, 2);  // 8 GPUs of quota: two nodes, never three
  EXPECT_EQ(r.jobs[2].first_start_ns, 110 * kNsPerSec);
}

TEST(SimAutoscale, SpotReclaimsRequeueWithoutFailuresAndTheSeedDecides) {
  auto config =
      load_config(pool_config("  maxNodes: 1\n  capacityType: spot\n  provisioningDelay: 5s\n"
                              "  spot: {meanLifetime: 1000s, notice: 30s}"));
  const auto jobs = trace(*config,
                          "job_id,user,num_gpu,submit_time,duration,best_effort\n"
                          "1,team,4,0,2000,0\n");
  SimOptions o;
  o.seed = 7;
  const SimResult a = simulate(config, jobs, o);
  const SimResult b = simulate(config, jobs, o);
  ASSERT_EQ(a.pools.size(), 1u);
  // A 2000 s job on nodes that live 1000 s on average: reclaimed, requeued, finished at last.
  EXPECT_GE(a.pools[0].reclaims, 1);
  EXPECT_GT(a.jobs[0].end_ns, 0);
  EXPECT_GE(a.spot_requeued, 1);
  EXPECT_EQ(a.requeued, 0);  // not node failures
  EXPECT_EQ(a.pools[0].reclaims, b.pools[0].reclaims);
  EXPECT_EQ(a.pools[0].node_hours, b.pools[0].node_hours);
  EXPECT_EQ(a.decision_digest, b.decision_digest);
  EXPECT_EQ(a.jobs[0].end_ns, b.jobs[0].end_ns);
}

// Consolidation: jobs 1 (strict, 2 GPUs until 1000 s) and 2 (strict, 2 GPUs until 100 s) fill
// node 0; job 3 (best-effort, 1 GPU for 600 s) gets node 1. When job 2 ends at 100 s, node 0
// has room until 1000 s, and job 3 restarted there would end at 700 s: node 1 is emptied and
// goes at 100 s. Without consolidation node 1 stays until job 3 ends (600 s) and its idle time.
TEST(SimAutoscale, ConsolidationEmptiesANodeWhoseWorkFitsElsewhere) {
  const char* csv =
      "job_id,user,num_gpu,submit_time,duration,best_effort\n"
      "1,team,2,0,1000,0\n"
      "2,team,2,0,100,0\n"
      "3,team,1,0,600,1\n";
  const std::string pool = "  maxNodes: 3\n  initialNodes: 2\n  scaleDownAfter: 100s";
  auto on = load_config(
      with_classes(pool_config(pool + "\n  consolidation: {after: 30s, interval: 30s}")));
  SimOptions o;
  o.check_invariants = true;
  const SimResult r = simulate(on, trace(*on, csv), o);
  EXPECT_EQ(r.invariant_failure, "");
  ASSERT_EQ(r.pools.size(), 1u);
  const PoolFigures& p = r.pools[0];
  EXPECT_EQ(p.consolidations, 1);
  EXPECT_EQ(p.moves, 1);
  EXPECT_EQ(p.moves_late, 0);                               // placed again at once
  EXPECT_NEAR(p.moved_lost_gpu_hours, 100.0 / 3600, 1e-9);  // 1 GPU x 100 s
  ASSERT_EQ(r.jobs.size(), 3u);
  EXPECT_EQ(r.jobs[2].end_ns, 700 * kNsPerSec);  // restarted at 100 s
  EXPECT_EQ(r.jobs[2].starts, 2);
  // Node 0: 0..1100 (job 1, then idle 100 s); node 1: 0..100.
  EXPECT_NEAR(p.node_hours, (1100.0 + 100.0) / 3600, 1e-9);
  const nlohmann::json j = to_json(compute_figures(r, *on, ReportInputs{}));
  EXPECT_EQ(j["autoscaling"]["pools"][0]["consolidation"]["jobs_moved"].get<int64_t>(), 1);
  // Same run twice: same decisions.
  EXPECT_EQ(simulate(on, trace(*on, csv), o).decision_digest, r.decision_digest);

  auto off = load_config(with_classes(pool_config(pool)));
  const SimResult w = simulate(off, trace(*off, csv), o);
  ASSERT_EQ(w.pools.size(), 1u);
  EXPECT_EQ(w.pools[0].consolidations, 0);
  EXPECT_EQ(w.jobs[2].end_ns, 600 * kNsPerSec);
  // Node 0: 0..1100; node 1: 0..700 (job 3 until 600, then idle 100 s).
  EXPECT_NEAR(w.pools[0].node_hours, (1100.0 + 700.0) / 3600, 1e-9);
  EXPECT_FALSE(
      to_json(compute_figures(w, *off, ReportInputs{}))["autoscaling"]["pools"][0].contains(
          "consolidation"));
}

// With checkpoints (SimOptions::checkpoint_every_ns) a long job moves too: job 3 (best-effort,
// 950 s) restarted from scratch after 100 s would end after node 0's 1000 s, so without
// checkpoints it never moves; checkpointing every 60 s it keeps its work, its restart runs only
// the rest, within node 0's run, and node 1 goes.
TEST(SimAutoscale, CheckpointsLetConsolidationMoveALongJob) {
  const char* csv =
      "job_id,user,num_gpu,submit_time,duration,best_effort\n"
      "1,team,2,0,1000,0\n"
      "2,team,2,0,100,0\n"
      "3,team,1,0,950,1\n";
  auto on = load_config(
      with_classes(pool_config("  maxNodes: 3\n  initialNodes: 2\n  scaleDownAfter: 100s\n"
                               "  consolidation: {after: 30s, interval: 30s}")));
  SimOptions o;
  o.check_invariants = true;
  const SimResult scratch = simulate(on, trace(*on, csv), o);
  EXPECT_EQ(scratch.invariant_failure, "");
  ASSERT_EQ(scratch.pools.size(), 1u);
  EXPECT_EQ(scratch.pools[0].moves, 0);
  EXPECT_EQ(scratch.jobs[2].end_ns, 950 * kNsPerSec);

  o.checkpoint_every_ns = 60 * kNsPerSec;
  const SimResult r = simulate(on, trace(*on, csv), o);
  EXPECT_EQ(r.invariant_failure, "");
  ASSERT_EQ(r.pools.size(), 1u);
  EXPECT_EQ(r.pools[0].moves, 1);
  const JobOutcome& j3 = r.jobs[2];
  EXPECT_EQ(j3.starts, 2);
  EXPECT_GT(j3.kept_run_ns, 0);
  EXPECT_LE(j3.end_ns, 1000 * kNsPerSec);  // within node 0's run
  // Its run: the first run until the move, then the rest (950 s less what it kept).
  const TimeNs moved_at = j3.run_ns - (950 * kNsPerSec - j3.kept_run_ns);
  EXPECT_EQ(j3.end_ns, moved_at + 950 * kNsPerSec - j3.kept_run_ns);
  EXPECT_NEAR(r.pools[0].moved_lost_gpu_hours,
              static_cast<double>(moved_at - j3.kept_run_ns) / kNsPerSec / 3600, 1e-9);
  EXPECT_LT(r.pools[0].node_hours, scratch.pools[0].node_hours);
  EXPECT_EQ(simulate(on, trace(*on, csv), o).decision_digest, r.decision_digest);
}

TEST(SimAutoscale, WithoutPoolsNothingChanges) {
  auto config = load_config(testing::tiny_config_yaml(4));
  const auto jobs = trace(*config,
                          "job_id,user,num_gpu,submit_time,duration,best_effort\n"
                          "1,team,4,0,100,0\n");
  const SimResult r = simulate(config, jobs, SimOptions{});
  EXPECT_TRUE(r.pools.empty());
  EXPECT_FALSE(to_json(compute_figures(r, *config, ReportInputs{})).contains("autoscaling"));
}

}  // namespace autoscale_test
}  // namespace sluice::sim
