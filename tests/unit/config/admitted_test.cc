// Admitted state as input (config/state/admitted.h): status.admission read with file:line errors,
// loaded into a scheduler through restore_running, and written back by write_state().
#include <gtest/gtest.h>

#include "config/state/admitted.h"
#include "config/state/state_writer.h"
#include "config_test_util.h"
#include "core/cycle/scheduler.h"

namespace sluice {
namespace {

using testing_config::any_contains;
using testing_config::dump;
using testing_config::load_one;
using testing_config::yaml;

// Two flavors (on-demand on n1-n2, spot on n3-n4), one queue with 16 GPUs of each.
const std::string kBase = yaml(R"(
apiVersion: sluice.dev/v1alpha1
kind: Cluster
metadata: {name: c}
spec:
  nodes:
  - {name: n1, cpu: 64, memory: 512Gi, gpus: {count: 8, model: H100}, labels: {tier: on-demand}}
  - {name: n2, cpu: 64, memory: 512Gi, gpus: {count: 8, model: H100}, labels: {tier: on-demand}}
  - {name: n3, cpu: 64, memory: 512Gi, gpus: {count: 8, model: H100}, labels: {tier: spot}}
  - {name: n4, cpu: 64, memory: 512Gi, gpus: {count: 8, model: H100}, labels: {tier: spot}}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: on-demand}
spec: {nodeLabels: {tier: on-demand}}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: spot}
spec: {nodeLabels: {tier: spot}}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: cq}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - {name: on-demand, resources: [{name: nvidia.com/gpu, nominalQuota: 16}]}
    - {name: spot, resources: [{name: nvidia.com/gpu, nominalQuota: 16}]}
  preemption: {withinClusterQueue: LowerPriority}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: other}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors: [{name: spot, resources: [{name: nvidia.com/gpu, nominalQuota: 4}]}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: q, namespace: default}
spec: {clusterQueue: cq}
)");

// A job document of `gpus` GPUs per pod with `status` appended (its lines start at 2 spaces).
std::string job(const std::string& name, int pods, int gpus, const std::string& status,
                const std::string& extra = "") {
  return "---\napiVersion: sluice.dev/v1alpha1\nkind: Job\nmetadata: {name: " + name +
         "}\nspec: {queue: q, pods: " + std::to_string(pods) + ", gpus: " + std::to_string(gpus) +
         extra + "}\n" + (status.empty() ? "" : "status:\n" + status);
}

const std::string kOnDemand =
    "  admission:\n"
    "    clusterQueue: cq\n"
    "    podSetAssignments:\n"
    "    - {name: main, flavors: {nvidia.com/gpu: on-demand}, count: 2}\n"
    "  admissionTime: 5\n";

TEST(AdmittedStatus, ReadsClusterQueueFlavorsNodesAndTime) {
  auto out = load_one(kBase + job("a", 2, 4, kOnDemand) +
                      job("b", 1, 8,
                          "  admission:\n"
                          "    clusterQueue: cq\n"
                          "    podSetAssignments:\n"
                          "    - flavors: {nvidia.com/gpu: spot}\n"
                          "      nodes: [n3]\n"
                          "      gpus: [[0, 1, 2, 3, 4, 5, 6, 7]]\n") +
                      job("c", 1, 1, ""));
  ASSERT_TRUE(out.ok()) << dump(out.errors);
  ASSERT_EQ(out.jobs.size(), 3u);
  ASSERT_EQ(out.admitted.size(), 2u);  // c is pending
  const AdmittedStatus& a = out.admitted.at(out.jobs[0].id);
  EXPECT_EQ(a.queue, *out.config.find_cluster_queue("cq"));
  EXPECT_EQ(a.admitted_ns, 5 * kNsPerSec);
  ASSERT_EQ(a.pod_sets.size(), 1u);
  EXPECT_EQ(a.pod_sets[0].flavor_of(kGpu), *out.config.find_flavor("on-demand"));
  EXPECT_TRUE(a.pod_sets[0].nodes.empty());  // placed when loaded
  const AdmittedStatus& b = out.admitted.at(out.jobs[1].id);
  EXPECT_EQ(b.admitted_ns, 0);  // default: its submit time
  ASSERT_EQ(b.pod_sets[0].nodes.size(), 1u);
  EXPECT_EQ(b.pod_sets[0].nodes[0], 2);  // n3
  EXPECT_EQ(b.pod_sets[0].gpus[0].size(), 8u);
  EXPECT_EQ(out.admitted.count(out.jobs[2].id), 0u);
}

// Each bad admission names its file, line and field.
TEST(AdmittedStatus, BadAdmissionsAreErrorsWithFileAndLine) {
  struct Case {
    std::string status;
    std::vector<std::string> fragments;
  };
  const int line = 52;  // the status.admission line of the job appended to kBase
  const auto at = [&](int offset) { return "test.yaml:" + std::to_string(line + offset) + ":"; };
  const std::vector<Case> cases = {
      {"  admission:\n    clusterQueue: nope\n    podSetAssignments: []\n",
       {at(1), "status.admission.clusterQueue", "unknown ClusterQueue \"nope\"", "cq, other"}},
      {"  admission:\n    clusterQueue: other\n    podSetAssignments: []\n",
       {at(1), "not the ClusterQueue of the job's LocalQueue \"q\" (cq)"}},
      {"  admission:\n    clusterQueue: cq\n    podSetAssignments:\n"
       "    - {flavors: {nvidia.com/gpu: h100}}\n",
       {at(3), "flavors.nvidia.com/gpu", "unknown ResourceFlavor \"h100\""}},
      {"  admission:\n    clusterQueue: cq\n    podSetAssignments:\n"
       "    - {flavors: {cpu: spot}}\n",
       {at(3), "does not request \"cpu\""}},
      {"  admission:\n    clusterQueue: cq\n    podSetAssignments:\n"
       "    - {flavors: {nvidia.com/gpu: spot}, nodes: [n9]}\n",
       {at(3), "nodes", "node \"n9\" is not in the cluster"}},
      {"  admission:\n    clusterQueue: cq\n    podSetAssignments:\n"
       "    - {flavors: {nvidia.com/gpu: spot}, nodes: [n1]}\n",
       {at(3), "does not carry the node labels of flavor spot"}},
      {"  admission:\n    clusterQueue: cq\n    podSetAssignments:\n"
       "    - {flavors: {nvidia.com/gpu: spot}, count: 3}\n",
       {at(3), "count", "3, but the pod set runs 1 pods"}},
      {"  admission:\n    clusterQueue: cq\n    podSetAssignments:\n"
       "    - {name: workers, flavors: {nvidia.com/gpu: spot}}\n",
       {at(3), "no pod set \"workers\" (pod sets: main)"}},
      {"  admission:\n    clusterQueue: cq\n    podSetAssignments: []\n",
       {at(2), "no assignment for pod set \"main\""}},
      {"  admission:\n    clusterQueue: cq\n    podSetAssignments:\n"
       "    - {flavors: {}}\n",
       {at(3), "no flavor for nvidia.com/gpu"}},
      {"  admission:\n    clusterQueue: cq\n    podSetAssignments:\n"
       "    - {flavors: {nvidia.com/gpu: spot}, nodes: [n3], gpus: [[0, 9]]}\n",
       {at(3), "node n3 has no GPU 9"}},
      {"  admission:\n    clusterQueue: cq\n    podSetAssignments:\n"
       "    - {flavors: {nvidia.com/gpu: spot}, nodes: [n3], gpus: [[0]]}\n",
       {at(3), "1 GPUs and 0 MIG slices, but each pod asks for 2"}},
      {"  admission:\n    clusterQueue: cq\n    podSetAssignments:\n"
       "    - {flavors: {nvidia.com/gpu: spot}, resourceUsage: {nvidia.com/gpu: 4}}\n",
       {at(3), "4, but the pod set requests 2 in all"}},
      {"  admission:\n    clusterQueue: cq\n    podSetAssignments: []\n  admissionTime: -3\n",
       {at(3), "status.admissionTime"}},
      {"  admission:\n    clusterQueue: cq\n    podSetAssignments: []\n    bogus: 1\n",
       {at(3), "bogus"}},
  };
  for (const auto& c : cases) {
    auto out = load_one(kBase + job("j", 1, 2, c.status));
    EXPECT_FALSE(out.ok()) << c.status;
    const bool found = std::any_of(out.errors.begin(), out.errors.end(), [&](const auto& m) {
      return std::all_of(c.fragments.begin(), c.fragments.end(),
                         [&](const auto& f) { return m.find(f) != std::string::npos; });
    });
    EXPECT_TRUE(found) << c.status << dump(out.errors);
  }
}

// A submission to the server cannot carry an admission.
TEST(AdmittedStatus, SubmissionsRefuseAdmissions) {
  auto cfg = load_one(kBase);
  ASSERT_TRUE(cfg.ok()) << dump(cfg.errors);
  auto out = parse_jobs(Source{"sub.yaml", job("a", 2, 4, kOnDemand).substr(4)}, cfg.config);
  EXPECT_TRUE(any_contains(out.errors, {"sub.yaml:6:", "cannot say where it runs"}))
      << dump(out.errors);
  EXPECT_TRUE(out.jobs.empty());
}

struct Loaded {
  LoadOutput out;
  std::shared_ptr<const Config> config;
  std::unique_ptr<Scheduler> s;
  std::vector<std::string> errors;
};

Loaded load_into_scheduler(const std::string& text) {
  Loaded l;
  l.out = load_one(text);
  EXPECT_TRUE(l.out.ok()) << dump(l.out.errors);
  l.config = std::make_shared<const Config>(l.out.config);
  l.s = std::make_unique<Scheduler>(l.config);
  l.errors = load_state(*l.s, l.out);
  return l;
}

TEST(AdmittedState, PlacesOnTheFlavorsNodesAndCountsQuota) {
  auto l = load_into_scheduler(kBase + job("a", 2, 4, kOnDemand) + job("p", 1, 8, ""));
  ASSERT_TRUE(l.errors.empty()) << dump(l.errors);
  ASSERT_EQ(l.s->running_count(), 1u);
  EXPECT_EQ(l.s->pending_count(), 1u);
  const auto* r = l.s->find_running(l.out.jobs[0].id);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->start_ns, 5 * kNsPerSec);
  for (const auto& pod : r->admission.placement.pods) EXPECT_LT(pod.node, 2);  // n1 or n2
  const auto q = *l.config->find_cluster_queue("cq");
  const auto od = *l.config->find_flavor("on-demand");
  EXPECT_EQ(l.s->quota().usage(q, od, kGpu), 8000);  // 2 pods x 4 GPUs
  std::string why;
  EXPECT_TRUE(l.s->check_invariants(&why)) << why;
}

TEST(AdmittedState, UsageOverQuotaOrCapacityIsAnError) {
  // 3 x 8 GPUs on on-demand: 24 > 16 nominal, and the queue has no cohort to borrow from.
  const std::string big =
      "  admission:\n    clusterQueue: cq\n    podSetAssignments:\n"
      "    - {flavors: {nvidia.com/gpu: on-demand}}\n";
  auto l = load_into_scheduler(kBase + job("a", 2, 8, big) + job("b", 1, 8, big));
  ASSERT_EQ(l.errors.size(), 1u) << dump(l.errors);
  EXPECT_TRUE(any_contains(l.errors,
                           {"test.yaml:63:", "status.admission: job default/b",
                            "uses more nvidia.com/gpu on flavor on-demand", "8 admitted, 0 left"}))
      << dump(l.errors);
  // Two jobs on the same GPUs of n3.
  const std::string pinned =
      "  admission:\n    clusterQueue: cq\n    podSetAssignments:\n"
      "    - {flavors: {nvidia.com/gpu: spot}, nodes: [n3], gpus: [[0, 1]]}\n";
  auto l2 = load_into_scheduler(kBase + job("a", 1, 2, pinned) + job("b", 1, 2, pinned));
  EXPECT_TRUE(any_contains(l2.errors, {"job default/b", "GPU 0 on n3 is not free"}))
      << dump(l2.errors);
}

// The export (write_state) loads back to the same jobs, admissions and scheduler state.
TEST(AdmittedState, WrittenStateLoadsBackTheSame) {
  auto l = load_into_scheduler(
      kBase +
      job("a", 2, 4, kOnDemand,
          ", priorityClassName: high, walltime: 2h, completeBy: \"1970-01-01T03:00:00Z\"") +
      job("b", 1, 8,
          "  admission:\n    clusterQueue: cq\n    podSetAssignments:\n"
          "    - {flavors: {nvidia.com/gpu: spot}, nodes: [n4]}\n") +
      job("p", 1, 8, "", ", submitTime: 7.25, completeWithin: 30s"));
  ASSERT_TRUE(l.errors.empty()) << dump(l.errors);
  std::vector<StateJob> jobs;
  for (const auto& [id, r] : l.s->running()) jobs.push_back({&r.job, &r.admission, r.start_ns});
  l.s->for_each_pending([&](const Scheduler::PendingJob& p) {
    jobs.push_back({&p.job, nullptr, 0});
  });
  const std::string text = write_state(kBase, {}, *l.config, jobs, 9 * kNsPerSec, "test");
  auto again = load_into_scheduler(text);
  ASSERT_TRUE(again.errors.empty()) << dump(again.errors) << text;
  EXPECT_EQ(again.out.snapshot_ns, 9 * kNsPerSec);
  EXPECT_EQ(state_time(again.out), 9 * kNsPerSec);
  ASSERT_EQ(again.s->running_count(), 2u);
  for (const auto& [id, r] : l.s->running()) {
    const auto* back = again.s->find_running(id);
    ASSERT_NE(back, nullptr) << text;
    EXPECT_EQ(back->admission.placement, r.admission.placement) << text;
    EXPECT_EQ(back->admission.usage, r.admission.usage);
    EXPECT_EQ(back->admission.flavors, r.admission.flavors);
    EXPECT_EQ(back->start_ns, r.start_ns);
    EXPECT_EQ(back->job.priority, r.job.priority);
    EXPECT_EQ(back->job.walltime_ns, r.job.walltime_ns);
    EXPECT_EQ(back->job.complete_by_ns, r.job.complete_by_ns);  // a: 3 h; b: none
  }
  EXPECT_EQ(again.s->find_running(1)->job.complete_by_ns, 3 * 3600 * kNsPerSec);
  EXPECT_EQ(l.s->run_cycle(9 * kNsPerSec).admitted, again.s->run_cycle(9 * kNsPerSec).admitted);
  ASSERT_NE(again.s->find_pending(3), nullptr);
  EXPECT_EQ(again.s->find_pending(3)->job.submit_ns, 7'250'000'000);
  // completeWithin 30 s became completeBy at submission (7.25 s) and was written as such.
  EXPECT_EQ(again.s->find_pending(3)->job.complete_by_ns, 37'250'000'000);
  EXPECT_NE(text.find("1970-01-01T00:00:37.25Z"), std::string::npos) << text;
}

// Partial admission: a pod set with a minCount admitted with fewer pods (Kueue's `count` in its
// podSetAssignments) runs that many, and the export keeps what it asked for and what it got.
TEST(AdmittedState, PartialAdmissionCountsLoadAndRoundTrip) {
  const auto doc = [](int count) {
    return "---\napiVersion: sluice.dev/v1alpha1\nkind: Job\nmetadata: {name: pa}\n"
           "spec: {queue: q, podSets: [{name: main, count: 4, minCount: 2, resources: "
           "{nvidia.com/gpu: 8}}]}\nstatus:\n  admission:\n    clusterQueue: cq\n"
           "    podSetAssignments:\n    - {name: main, flavors: {nvidia.com/gpu: on-demand}, "
           "count: " +
           std::to_string(count) + "}\n";
  };
  auto l = load_into_scheduler(kBase + doc(2));
  ASSERT_TRUE(l.errors.empty()) << dump(l.errors);
  ASSERT_EQ(l.s->running_count(), 1u);
  const auto& r = l.s->running().begin()->second;
  EXPECT_EQ(r.job.pod_sets[0].count, 2);
  EXPECT_EQ(r.admission.pod_set_counts, std::vector<int32_t>{2});
  EXPECT_EQ(r.admission.placement.pods.size(), 2u);
  Job asked = r.job;
  asked.pod_sets = r.requested_pod_sets;
  const std::string text =
      write_state(kBase, {}, *l.config, {{&asked, &r.admission, r.start_ns}}, 9 * kNsPerSec, "t");
  EXPECT_NE(text.find("minCount: 2"), std::string::npos) << text;
  auto again = load_into_scheduler(text);
  ASSERT_TRUE(again.errors.empty()) << dump(again.errors) << text;
  ASSERT_EQ(again.s->running_count(), 1u);
  EXPECT_EQ(again.s->running().begin()->second.admission.pod_set_counts, std::vector<int32_t>{2});
  EXPECT_EQ(again.s->running().begin()->second.requested_pod_sets.at(0).count, 4);

  auto below = load_one(kBase + doc(1));
  EXPECT_TRUE(any_contains(below.errors, {"count", "1, but the pod set runs 4 pods",
                                          "at least 2 when partially admitted"}))
      << dump(below.errors);
}

// A launcher and workers (Kueue assigns flavors pod set by pod set, each counting what earlier
// ones took): the launcher's 8 GPUs fit on-demand (16), the workers' 16 do not fit what is left
// (8) and go to spot. Each pod set runs on its flavor's nodes; the export writes the flavors per
// pod set and loads back the same.
TEST(AdmittedState, PodSetsOnDifferentFlavorsCycleAndRoundTrip) {
  const std::string gang =
      "---\napiVersion: sluice.dev/v1alpha1\nkind: Job\nmetadata: {name: g}\n"
      "spec: {queue: q, podSets: [{name: launcher, resources: {nvidia.com/gpu: 8}},"
      " {name: workers, count: 2, resources: {nvidia.com/gpu: 8}}]}\n";
  auto l = load_into_scheduler(kBase + gang);
  ASSERT_TRUE(l.errors.empty()) << dump(l.errors);
  const CycleResult r = l.s->run_cycle(0);
  ASSERT_EQ(r.admitted.size(), 1u);
  const Admission& a = r.admitted[0];
  const auto od = *l.config->find_flavor("on-demand");
  const auto spot = *l.config->find_flavor("spot");
  ASSERT_EQ(a.pod_set_flavors.size(), 2u);
  EXPECT_EQ(a.flavors_of(0), std::vector<FlavorId>{od});
  EXPECT_EQ(a.flavors_of(1), std::vector<FlavorId>{spot});
  EXPECT_EQ(a.flavors_used(), (std::vector<FlavorId>{od, spot}));
  EXPECT_EQ(describe_flavors(a, l.out.jobs[0], *l.config),
            "flavors launcher: on-demand, workers: spot");
  for (const auto& pod : a.placement.pods)
    EXPECT_EQ(pod.node < 2, pod.pod_set == 0) << "pod set " << pod.pod_set << " on n" << pod.node;
  const auto q = *l.config->find_cluster_queue("cq");
  EXPECT_EQ(a.usage, (std::vector<UsageEntry>{{od, kGpu, 8000}, {spot, kGpu, 16000}}));
  EXPECT_FALSE(a.borrowing);
  l.s->apply(r, 0);
  EXPECT_EQ(l.s->quota().usage(q, od, kGpu), 8000);
  EXPECT_EQ(l.s->quota().usage(q, spot, kGpu), 16000);

  std::vector<StateJob> jobs;
  for (const auto& [id, run] : l.s->running()) jobs.push_back({&run.job, &run.admission, 0});
  const std::string text = write_state(kBase, {}, *l.config, jobs, kNsPerSec, "test");
  EXPECT_NE(text.find("flavors: {nvidia.com/gpu: on-demand}"), std::string::npos) << text;
  EXPECT_NE(text.find("flavors: {nvidia.com/gpu: spot}"), std::string::npos) << text;
  auto again = load_into_scheduler(text);
  ASSERT_TRUE(again.errors.empty()) << dump(again.errors) << text;
  const auto* back = again.s->find_running(l.out.jobs[0].id);
  ASSERT_NE(back, nullptr) << text;
  EXPECT_EQ(back->admission.pod_set_flavors, a.pod_set_flavors);
  EXPECT_EQ(back->admission.placement, a.placement);
  EXPECT_EQ(again.s->quota().usage(q, spot, kGpu), 16000);
}

TEST(AdmittedState, SecondsText) {
  EXPECT_EQ(seconds_text(0), "0");
  EXPECT_EQ(seconds_text(7'250'000'000), "7.25");
  EXPECT_EQ(seconds_text(1'712'345'678'000'000'001), "1712345678.000000001");
}

}  // namespace
}  // namespace sluice
