// The Prometheus text of the control plane's state (src/server/state_metrics.cc): every series a
// dashboard or an alert selects is there from the first scrape, at 0.
#include <gtest/gtest.h>

#include <set>
#include <sstream>

#include "config/loader.h"
#include "server/server.h"
#include "server/state.h"

namespace sluice::server {
namespace state_metrics_test {  // a namespace of its own: the unit tests build in unity batches
namespace {

constexpr TimeNs kS = kNsPerSec;

// Two queues: "busy" (default priority class "low") and "idle" (none: jobs may name no class);
// two priority classes; a budget for namespace "team".
const char* kConfig = R"(
apiVersion: sluice.dev/v1alpha1
kind: Cluster
metadata: {name: t}
spec:
  nodeGroups:
  - {namePrefix: n, count: 1, cpu: 16, memory: 64Gi, gpus: {count: 4, model: H100}}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: h100}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: WorkloadPriorityClass
metadata: {name: low}
value: 1
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: WorkloadPriorityClass
metadata: {name: high}
value: 100
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: busy}
spec:
  namespaceSelector: {}
  sluice: {defaultPriorityClass: low}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors: [{name: h100, resources: [{name: nvidia.com/gpu, nominalQuota: 4}]}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: idle}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors: [{name: h100, resources: [{name: nvidia.com/gpu, nominalQuota: 0}]}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: q, namespace: team}
spec: {clusterQueue: busy}
---
apiVersion: sluice.dev/v1alpha1
kind: Budget
metadata: {name: team}
spec: {gpuHours: 100, period: 720h}
)";

struct StateMetricsTest : ::testing::Test {
  std::shared_ptr<const Config> cfg;
  std::unique_ptr<ServerState> st;
  void SetUp() override {
    auto lc = load_server_config({Source{"test.yaml", kConfig}});
    ASSERT_TRUE(lc.ok()) << (lc.ok() ? "" : lc.error());
    cfg = lc->config;
    st = std::make_unique<ServerState>(cfg, nullptr, ServerOptions{});
  }
  // A job that never fits (64 GPUs on 4): it waits in busy for good.
  JobsOutput big_job() {
    auto parsed = parse_jobs(Source{"jobs.yaml",
                                    "apiVersion: sluice.dev/v1alpha1\nkind: Job\nmetadata: {name: "
                                    "big, namespace: team}\nspec: {queue: q, gpus: 64, command: "
                                    "[sleep, '1']}\n"},
                             *cfg);
    EXPECT_TRUE(parsed.errors.empty()) << (parsed.errors.empty() ? "" : parsed.errors.front());
    return parsed;
  }
  // The sample lines of one family.
  std::vector<std::string> samples(const std::string& text, const std::string& family) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
      if (line.rfind(family + "{", 0) == 0 || line.rfind(family + " ", 0) == 0) out.push_back(line);
    return out;
  }
  bool has(const std::string& text, const std::string& line) {
    return text.find("\n" + line + "\n") != std::string::npos;
  }
};

TEST_F(StateMetricsTest, EveryQueuePriorityAndWorkloadClassHasAPendingSeriesAtZero) {
  const std::string m = st->metrics_text(1 * kS);
  // busy: classes low, high (its default is low, so no ""); idle: "", low, high; x 3 classes.
  EXPECT_EQ(samples(m, "sluice_pending_jobs").size(), (2u + 3u) * 3u) << m;
  EXPECT_TRUE(has(m,
                  "sluice_pending_jobs{cluster_queue=\"idle\",priority_class=\"high\","
                  "class=\"interactive\"} 0"))
      << m;
  EXPECT_TRUE(has(m,
                  "sluice_pending_jobs{cluster_queue=\"idle\",priority_class=\"\","
                  "class=\"batch\"} 0"))
      << m;
  EXPECT_TRUE(has(m, "sluice_running_jobs{cluster_queue=\"idle\"} 0")) << m;
}

TEST_F(StateMetricsTest, CountersStartAtZeroForEveryQueueAndReason) {
  const std::string m = st->metrics_text(1 * kS);
  for (const char* r : {"invalid", "unknown-queue", "duplicate", "pending-cap",
                        "namespace-not-selected", "interactive-timeout", "budget"})
    EXPECT_TRUE(has(m, std::string("sluice_jobs_rejected_total{reason=\"") + r + "\"} 0"))
        << r << "\n"
        << m;
  // 2 queues x 3 reasons; 2 queues x 3 end states; one per queue.
  EXPECT_EQ(samples(m, "sluice_preemptions_total").size(), 6u) << m;
  EXPECT_EQ(samples(m, "sluice_jobs_finished_total").size(), 6u) << m;
  EXPECT_TRUE(has(m,
                  "sluice_preemptions_total{cluster_queue=\"idle\",reason=\"reclaim-within-"
                  "cohort\"} 0"))
      << m;
  EXPECT_TRUE(has(m, "sluice_jobs_finished_total{cluster_queue=\"busy\",state=\"failed\"} 0")) << m;
  EXPECT_TRUE(has(m, "sluice_jobs_submitted_total{cluster_queue=\"idle\"} 0")) << m;
  EXPECT_TRUE(has(m, "sluice_preempted_gpu_seconds_total{cluster_queue=\"idle\"} 0")) << m;
}

TEST_F(StateMetricsTest, EventsCountOnTopOfTheZeroSeries) {
  auto parsed = big_job();
  ASSERT_EQ(st->submit(parsed.jobs, 1 * kS).ids.size(), 1u);
  auto lost = parsed.jobs;
  lost[0].queue = "nope";  // no such LocalQueue: refused
  EXPECT_EQ(st->submit(lost, 2 * kS).status, 404);
  const std::string m = st->metrics_text(3 * kS);
  // The never-fitting job waits in busy with the queue's default class, batch-preemptible.
  EXPECT_EQ(samples(m, "sluice_pending_jobs").size(), 15u) << m;
  EXPECT_TRUE(has(m, "sluice_jobs_submitted_total{cluster_queue=\"busy\"} 1")) << m;
  EXPECT_TRUE(has(m, "sluice_jobs_rejected_total{reason=\"unknown-queue\"} 1")) << m;
  EXPECT_TRUE(has(m, "sluice_jobs_rejected_total{reason=\"invalid\"} 0")) << m;
  int pending_one = 0;
  for (const auto& line : samples(m, "sluice_pending_jobs"))
    if (line.ends_with("} 1")) {
      ++pending_one;
      EXPECT_NE(line.find("cluster_queue=\"busy\",priority_class=\"low\""), std::string::npos)
          << line;
    }
  EXPECT_EQ(pending_one, 1) << m;
}

// A job that is never admitted never reaches the admission-wait histogram: the age of each
// queue's oldest pending job is a gauge of its own (the alert SluiceJobStarving reads it).
TEST_F(StateMetricsTest, TheOldestPendingJobsAgeIsAGaugePerQueueAndClass) {
  std::string m = st->metrics_text(1 * kS);
  EXPECT_EQ(samples(m, "sluice_oldest_pending_seconds").size(), 2u * 3u) << m;
  EXPECT_TRUE(has(m, "sluice_oldest_pending_seconds{cluster_queue=\"busy\",class=\"batch\"} 0"))
      << m;
  ASSERT_EQ(st->submit(big_job().jobs, 1 * kS).ids.size(), 1u);
  ASSERT_EQ(st->submit(big_job().jobs, 5 * kS).ids.size(), 1u);
  st->cycle(6 * kS);
  m = st->metrics_text(61 * kS);
  // The older of the two waited 60 s; the job is preemptible (busy's default): best-effort.
  EXPECT_TRUE(has(m,
                  "sluice_oldest_pending_seconds{cluster_queue=\"busy\",class=\"best-effort\"} "
                  "60"))
      << m;
  EXPECT_TRUE(has(m, "sluice_oldest_pending_seconds{cluster_queue=\"idle\",class=\"batch\"} 0"))
      << m;
}

TEST_F(StateMetricsTest, BudgetsAndTheirUseAreGauges) {
  const std::string m = st->metrics_text(1 * kS);
  EXPECT_TRUE(has(m, "sluice_namespace_budget_gpu_hours{namespace=\"team\"} 100")) << m;
  EXPECT_TRUE(has(m, "sluice_namespace_budget_used_gpu_hours{namespace=\"team\"} 0")) << m;
}

TEST_F(StateMetricsTest, EachFamilyHasOneHelpAndTypeBeforeItsSamples) {
  const std::string m = st->metrics_text(1 * kS);
  std::set<std::string> typed;
  std::string current;
  std::istringstream in(m);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("# TYPE ", 0) == 0) {
      current = line.substr(7, line.find(' ', 7) - 7);
      EXPECT_TRUE(typed.insert(current).second) << "family twice: " << current;
      continue;
    }
    if (line.empty() || line[0] == '#') continue;
    const std::string name = line.substr(0, line.find_first_of("{ "));
    EXPECT_TRUE(name == current || name.rfind(current + "_", 0) == 0)
        << name << " outside its family " << current;
  }
  EXPECT_GE(typed.size(), 20u);
}

// The web dashboard's sample (src/server/state_dashboard.cc) reads the same state: every
// configured priority class and queue is there while empty, and a waiting job shows.
TEST_F(StateMetricsTest, DashboardSampleHasEveryClassAndQueueAndTheWaitingJob) {
  ASSERT_EQ(st->submit(big_job().jobs, 1 * kS).ids.size(), 1u);
  const auto s = st->dashboard_sample(11 * kS);
  const auto& d = s.data;
  EXPECT_DOUBLE_EQ(s.t, 11.0);
  // classes: low (the waiting job, 10 s so far) and high (none).
  EXPECT_EQ(d["classes"]["low"]["pending"], 1) << d.dump();
  EXPECT_DOUBLE_EQ(d["classes"]["low"]["pending_wait_p99_s"].get<double>(), 10.0);
  EXPECT_EQ(d["classes"]["high"]["pending"], 0);
  EXPECT_TRUE(d["classes"]["high"]["pending_wait_p99_s"].is_null());
  // queues: both, with their GPU quota (busy: 4 nominal, none used).
  EXPECT_EQ(d["queues"]["busy"]["gpu_nominal"], 4.0);
  EXPECT_EQ(d["queues"]["busy"]["gpu_used"], 0.0);
  EXPECT_EQ(d["queues"]["busy"]["pending"], 1);
  EXPECT_TRUE(d["queues"].contains("idle"));
  // nodes: n0 with 4 GPUs, nothing allocated, no NVML sample.
  ASSERT_EQ(d["nodes"].size(), 1u) << d.dump();
  const auto& n = d["nodes"].begin().value();
  EXPECT_EQ(n["gpus"], 4);
  EXPECT_EQ(n["gpu_allocated"], 0.0);
  EXPECT_TRUE(n["gpu_util_pct"].is_null());
  // namespaces: team's budget of 100 GPU-hours, none used.
  EXPECT_EQ(d["namespaces"]["team"]["budget_gpu_hours"], 100.0);
  EXPECT_EQ(d["namespaces"]["team"]["gpu_hours"], 0.0);
  EXPECT_EQ(d["preemptions_total"], 0.0);
}
// Held jobs and jobs waiting for a dependency are pending but not the scheduler's: they have
// their own gauge, per ClusterQueue and what gates them, at 0 from the first scrape.
TEST_F(StateMetricsTest, GatedJobsAreCountedByWhatHoldsThem) {
  std::string m = st->metrics_text(1 * kS);
  EXPECT_EQ(samples(m, "sluice_gated_jobs").size(), 2u * std::size(kGateKinds)) << m;  // 6 kinds
  EXPECT_TRUE(has(m, "sluice_gated_jobs{cluster_queue=\"idle\",reason=\"held\"} 0")) << m;
  auto job = [&](const std::string& name, const std::string& extra) {
    auto parsed = parse_jobs(
        Source{"jobs.yaml", "apiVersion: sluice.dev/v1alpha1\nkind: Job\nmetadata: {name: " + name +
                                ", namespace: team}\nspec: {queue: q, gpus: 64, " +
                                "command: [sleep, '1']" + extra + "}\n"},
        *cfg);
    EXPECT_TRUE(parsed.errors.empty()) << (parsed.errors.empty() ? "" : parsed.errors.front());
    auto out = st->submit(std::move(parsed.jobs), 1 * kS);
    EXPECT_EQ(out.status, 202) << out.error;
    return out.ids.empty() ? JobId{0} : out.ids.front();
  };
  const JobId first = job("first", "");
  job("held", ", hold: true");
  job("after", ", dependency: 'afterok:" + std::to_string(first) + "'");
  job("after2", ", dependency: 'afterany:" + std::to_string(first) + "'");
  m = st->metrics_text(2 * kS);  // before the gates' first pass: known from the records
  EXPECT_TRUE(has(m, "sluice_gated_jobs{cluster_queue=\"busy\",reason=\"held\"} 1")) << m;
  EXPECT_TRUE(has(m, "sluice_gated_jobs{cluster_queue=\"busy\",reason=\"dependency\"} 2")) << m;
  st->cycle(3 * kS);  // the gates look at them: still gated, same reasons
  m = st->metrics_text(3 * kS);
  EXPECT_TRUE(has(m, "sluice_gated_jobs{cluster_queue=\"busy\",reason=\"held\"} 1")) << m;
  EXPECT_TRUE(has(m, "sluice_gated_jobs{cluster_queue=\"busy\",reason=\"dependency\"} 2")) << m;
  // The scheduler's pending depth counts only the job it can look at.
  int64_t pending = 0;
  for (const auto& line : samples(m, "sluice_pending_jobs"))
    pending += std::stoll(line.substr(line.rfind(' ') + 1));
  EXPECT_EQ(pending, 1) << m;
}

}  // namespace
}  // namespace state_metrics_test
}  // namespace sluice::server
