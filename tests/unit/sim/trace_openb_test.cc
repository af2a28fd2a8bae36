// The openb reader (Alibaba GPU cluster trace 2023): pods into jobs, the node list into a
// Cluster, bad rows with file:line, and `sluice sim run --trace-format openb` end to end (on
// inline CSV text; the real trace only when present).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "sim/run_cli.h"
#include "sim/trace_openb.h"
#include "sim_test_util.h"

namespace sluice::sim {
namespace {

using testing::TempDir;

constexpr const char* kHeader =
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
    "deletion_time,scheduled_time\n";

TEST(OpenbTrace, PodsBecomeOnePodJobs) {
  const std::string csv = std::string(kHeader) +
                          "p0,12000,16384,1,1000,,LS,Running,0,100,0\n"
                          "p1,6000,12288,1,460,V100M16|V100M32,BE,Running,10,200,15\n"
                          "p2,4000,8192,0,0,,Burstable,Running,20,50,20\n"
                          "p3,32000,65536,4,1000,,Guaranteed,Pending,30,90,\n";
  const TraceOutput t = read_openb("pods.csv", csv, OpenbOptions{});
  ASSERT_TRUE(t.errors.empty()) << t.errors.front();
  ASSERT_EQ(t.jobs.size(), 4u);
  EXPECT_EQ(t.rows, 4);
  const Job& a = t.jobs[0].job;
  EXPECT_EQ(a.id, 1u);
  EXPECT_EQ(a.name, "p0");
  EXPECT_EQ(a.queue, "openb");
  EXPECT_EQ(a.namespace_, "default");
  EXPECT_EQ(a.exec().priority_class, "high");
  EXPECT_FALSE(a.preemptible);
  EXPECT_EQ(a.pod_sets.size(), 1u);
  EXPECT_EQ(a.pod_sets[0].count, 1);
  EXPECT_EQ(a.pod_sets[0].gpus, 1);
  EXPECT_EQ(a.pod_sets[0].requests[kGpu], 1000);
  EXPECT_EQ(a.pod_sets[0].requests[kCpu], 12000);
  EXPECT_EQ(a.pod_sets[0].requests[kMemory], 16384);
  EXPECT_EQ(t.jobs[0].duration_ns, 100 * kNsPerSec);
  EXPECT_EQ(t.jobs[0].where, "pods.csv:2");
  // A shared fraction with a model constraint; run time from scheduled_time.
  const Job& b = t.jobs[1].job;
  EXPECT_EQ(b.exec().priority_class, "low");
  EXPECT_TRUE(b.preemptible);
  EXPECT_EQ(b.pod_sets[0].gpu_milli, 460);
  EXPECT_EQ(b.pod_sets[0].requests[kGpu], 460);
  EXPECT_EQ(b.allowed_models, (std::vector<std::string>{"V100M16", "V100M32"}));
  EXPECT_EQ(b.submit_ns, 10 * kNsPerSec);
  EXPECT_EQ(t.jobs[1].duration_ns, 185 * kNsPerSec);
  EXPECT_EQ(b.walltime_ns, 185 * kNsPerSec);
  // CPU-only.
  const Job& c = t.jobs[2].job;
  EXPECT_EQ(c.exec().priority_class, "normal");
  EXPECT_EQ(c.pod_sets[0].gpus, 0);
  EXPECT_EQ(c.pod_sets[0].requests[kGpu], 0);
  EXPECT_EQ(c.pod_sets[0].requests[kCpu], 4000);
  // Never scheduled in the original cluster: its whole life (deletion - creation).
  EXPECT_EQ(t.jobs[3].duration_ns, 60 * kNsPerSec);
  EXPECT_EQ(t.jobs[3].job.pod_sets[0].requests[kGpu], 4000);
}

TEST(OpenbTrace, WithoutTimesPodsArriveOnePerSecond) {
  const std::string csv =
      "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"
      "a,1000,1024,1,500\n"
      "b,1000,1024,2,1000\n";
  OpenbOptions o;
  o.default_duration_ns = 7 * kNsPerSec;
  const TraceOutput t = read_openb("p.csv", csv, o);
  ASSERT_TRUE(t.errors.empty()) << t.errors.front();
  ASSERT_EQ(t.jobs.size(), 2u);
  EXPECT_EQ(t.jobs[0].job.submit_ns, 0);
  EXPECT_EQ(t.jobs[1].job.submit_ns, kNsPerSec);
  EXPECT_EQ(t.jobs[1].duration_ns, 7 * kNsPerSec);
  EXPECT_EQ(t.jobs[0].job.exec().priority_class, "high");  // no qos column
}

TEST(OpenbTrace, BadRowsNameFileAndLine) {
  const std::string csv = std::string(kHeader) +
                          "ok,1000,1024,1,1000,,LS,Running,0,10,0\n"     // 2
                          "short,1000,1024,1\n"                          // 3
                          "neg,1000,1024,1,1000,,LS,Running,50,10,\n"    // 4: deleted before
                          "frac,1000,1024,2,500,,LS,Running,0,10,0\n"    // 5: fraction of 2 GPUs
                          "qos,1000,1024,1,1000,,XX,Running,0,10,0\n"    // 6
                          "milli,1000,1024,1,1500,,LS,Running,0,10,0\n"  // 7
                          "cpu,abc,1024,1,1000,,LS,Running,0,10,0\n"     // 8
                          "sched,1000,1024,1,1000,,LS,Running,9,10,3\n"  // 9: before creation
                          "none,0,0,0,0,,LS,Running,0,10,0\n";           // 10
  const TraceOutput t = read_openb("pods.csv", csv, OpenbOptions{});
  EXPECT_EQ(t.jobs.size(), 1u);
  EXPECT_EQ(t.rows, 9);
  ASSERT_EQ(t.errors.size(), 8u);
  EXPECT_EQ(t.errors[0], "pods.csv:3: expected 11 columns, got 4");
  EXPECT_NE(t.errors[1].find("pods.csv:4: deletion_time: 10 is before the pod was created"),
            std::string::npos)
      << t.errors[1];
  EXPECT_NE(t.errors[2].find("pods.csv:5: gpu_milli: 500 with num_gpu 2"), std::string::npos);
  EXPECT_NE(t.errors[3].find("pods.csv:6: qos: 'XX'"), std::string::npos);
  EXPECT_NE(t.errors[4].find("pods.csv:7: gpu_milli"), std::string::npos);
  EXPECT_NE(t.errors[5].find("pods.csv:8: cpu_milli"), std::string::npos);
  EXPECT_NE(t.errors[6].find("pods.csv:9: scheduled_time"), std::string::npos);
  EXPECT_NE(t.errors[7].find("pods.csv:10: the pod requests nothing"), std::string::npos);
}

TEST(OpenbTrace, MissingHeaderColumn) {
  const TraceOutput t = read_openb("p.csv", "name,cpu_milli\nx,1\n", OpenbOptions{});
  ASSERT_EQ(t.errors.size(), 1u);
  EXPECT_EQ(t.errors[0], "p.csv:1: header lacks column(s) memory_mib, num_gpu, gpu_milli");
}

constexpr const char* kNodes =
    "sn,cpu_milli,memory_mib,gpu,model\n"
    "node-a,8000,32768,2,T4\n"
    "node-b,8000,32768,1,V100M16\n";

TEST(OpenbNodes, NodeListBecomesACluster) {
  EXPECT_TRUE(is_openb_node_list(kNodes));
  EXPECT_FALSE(is_openb_node_list("apiVersion: v1\n"));
  std::vector<std::string> errors;
  const std::string yaml = openb_nodes_to_cluster_yaml("nodes.csv", kNodes, errors);
  ASSERT_TRUE(errors.empty()) << errors.front();
  LoadOutput out = load({Source{"nodes.csv", yaml}}, LoadOptions{});
  ASSERT_TRUE(out.ok()) << (out.errors.empty() ? "" : out.errors.front());
  const Cluster& c = out.config.cluster;
  ASSERT_EQ(c.nodes.size(), 2u);
  EXPECT_EQ(c.nodes[0].name, "node-a");
  EXPECT_EQ(c.nodes[0].cpu_milli, 8000);
  EXPECT_EQ(c.nodes[0].memory_mib, 32768);
  ASSERT_EQ(c.nodes[0].gpus.size(), 2u);
  EXPECT_EQ(c.nodes[0].gpus[0].model, "T4");
  EXPECT_EQ(c.nodes[1].gpus[0].model, "V100M16");
  EXPECT_EQ(c.total_gpus(), 3);
}

TEST(OpenbNodes, BadNodeRowsNameFileAndLine) {
  std::vector<std::string> errors;
  openb_nodes_to_cluster_yaml("n.csv",
                              "sn,cpu_milli,memory_mib,gpu,model\n"
                              "a,8000,1024,2,T4\n"
                              "b,-1,1024,2,T4\n"
                              "c,8000,1024,2,\n",
                              errors);
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_NE(errors[0].find("n.csv:3: cpu_milli"), std::string::npos);
  EXPECT_NE(errors[1].find("n.csv:4: model: empty"), std::string::npos);
}

class OpenbRun : public TempDir {};

// Two nodes (2 x T4, 1 x V100M16); a model-constrained pod waits for the V100 although T4s
// are free.
TEST_F(OpenbRun, EndToEndOnInlineCsv) {
  const std::string root = SLUICE_SOURCE_DIR;
  RunArgs a;
  a.config = {root + "/examples/openb/queues.yaml"};
  a.cluster = {write("nodes.csv", kNodes)};
  a.trace_format = "openb";
  a.trace = write("pods.csv", std::string(kHeader) +
                                  "p0,1000,1024,1,1000,V100M16,LS,Running,0,100,0\n"
                                  "p1,1000,1024,1,1000,V100M16,LS,Running,10,110,10\n"
                                  "p2,1000,1024,1,500,,BE,Running,10,60,10\n"
                                  "p3,1000,1024,1,bad,,BE,Running,10,60,10\n");
  a.report = (dir_ / "r.json").string();
  a.quiet = true;
  std::ostringstream out, err;
  EXPECT_EQ(run_sim(a, out, err), 1);
  EXPECT_NE(err.str().find("pods.csv:5: gpu_milli"), std::string::npos) << err.str();
  a.skip_bad_rows = true;
  std::ostringstream out2, err2;
  ASSERT_EQ(run_sim(a, out2, err2), 0) << err2.str();
  const auto j = nlohmann::json::parse(slurp(a.report));
  EXPECT_EQ(j["capacity_gpus"], 3);
  EXPECT_EQ(j["input"]["bad_rows"], 1);
  EXPECT_EQ(j["jobs"]["finished"], 3);
  // p1 waits for p0's V100 (ends at 100): 90 s.
  EXPECT_DOUBLE_EQ(j["max_wait_s"].get<double>(), 90.0);
  EXPECT_EQ(j["by_priority_class"]["low"]["jobs"], 1);
}

// The real trace, when present: every pod is read, none is bad.
TEST_F(OpenbRun, RealTraceWhenPresent) {
  const std::string root = SLUICE_SOURCE_DIR;
  const std::string dir = traces_dir(root) + "/alibaba-openb";
  if (!std::filesystem::exists(dir + "/openb_pod_list_default.csv"))
    GTEST_SKIP() << "openb trace not found in " << dir << " (set SLUICE_TRACES)";
  RunArgs a;
  a.config = {root + "/examples/openb/queues.yaml"};
  a.cluster = {dir + "/openb_node_list_gpu_node.csv"};
  a.trace_format = "openb";
  a.trace = dir + "/openb_pod_list_default.csv";
  a.report = (dir_ / "r.json").string();
  a.quiet = true;
  std::ostringstream out, err;
  ASSERT_EQ(run_sim(a, out, err), 0) << err.str();
  const auto j = nlohmann::json::parse(slurp(a.report));
  EXPECT_EQ(j["capacity_gpus"], 6212);
  EXPECT_EQ(j["input"]["rows"], 8152);
  EXPECT_EQ(j["input"]["bad_rows"], 0);
  EXPECT_EQ(j["jobs"]["total"], 8152);
  EXPECT_GT(j["jobs"]["finished"].get<int>(), 8000);
}

}  // namespace
}  // namespace sluice::sim
