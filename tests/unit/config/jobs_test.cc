// Job submissions: sluice Job (full and shorthand), v1 Pod, batch/v1 Job, JSON, parse_jobs.
#include <gtest/gtest.h>

#include "config_test_util.h"

namespace sluice {
namespace jobs_test {  // a namespace of its own: the unit tests build in unity batches
namespace {

using testing_config::any_contains;
using testing_config::dump;
using testing_config::has;
using testing_config::load_one;
using testing_config::yaml;

// Two teams' queues on a small cluster with racks.
const char* kBase = R"(
apiVersion: sluice.dev/v1alpha1
kind: Cluster
metadata: {name: c}
spec:
  topology: {levels: [rack]}
  nodeGroups:
  - {namePrefix: n, count: 4, cpu: 64, memory: 512Gi, gpus: {count: 8, model: H100}, topology: {rack: {every: 2}}}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: WorkloadPriorityClass
metadata: {name: urgent}
value: 1000
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: cq}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu, cpu, memory]
    flavors:
    - name: any
      resources:
      - {name: nvidia.com/gpu, nominalQuota: 32}
      - {name: cpu, nominalQuota: 256}
      - {name: memory, nominalQuota: 2Ti}
  sluice: {defaultPriorityClass: urgent}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: gpu-only}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors: [{name: any, resources: [{name: nvidia.com/gpu, nominalQuota: 8}]}]
  sluice: {interactive: true}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: train, namespace: team-a}
spec: {clusterQueue: cq}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: default, namespace: team-a}
spec: {clusterQueue: cq}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: gpus, namespace: team-a}
spec: {clusterQueue: gpu-only}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: any}
)";

Config base_config() {
  auto out = load_one(yaml(kBase), "base.yaml");
  EXPECT_TRUE(out.ok()) << dump(out.errors);
  EXPECT_TRUE(out.config.warnings.empty()) << dump(out.config.warnings);
  return out.config;
}

JobsOutput jobs(const char* text) {
  static const Config config = base_config();
  return parse_jobs(Source{"jobs.yaml", yaml(text)}, config);
}

// GPU models are named in any case (Slurm's --gpus=h100:1) and kept as the cluster spells
// them; one no node has is a warning, listed apart from the other notes.
TEST(ConfigJobs, GpuModelsInAnyCaseAndUnknownOnesWarned) {
  auto out = jobs(R"(
apiVersion: sluice.dev/v1alpha1
kind: Job
metadata: {name: m, namespace: team-a}
spec: {queue: train, gpus: 1, gpuModels: [h100], command: ["true"]}
---
apiVersion: sluice.dev/v1alpha1
kind: Job
metadata: {name: n, namespace: team-a}
spec: {queue: train, gpus: 1, gpuModels: [a100], command: ["true"]}
)");
  ASSERT_TRUE(out.errors.empty()) << dump(out.errors);
  ASSERT_EQ(out.jobs.size(), 2u);
  EXPECT_EQ(out.jobs[0].allowed_models, std::vector<std::string>{"H100"});
  EXPECT_EQ(out.jobs[1].allowed_models, std::vector<std::string>{"a100"});
  ASSERT_EQ(out.warnings.size(), 1u) << dump(out.warnings);
  EXPECT_TRUE(any_contains(out.warnings, {"no node has GPU model \"a100\"", "H100"}))
      << dump(out.warnings);
}

// spec.spot: false keeps every pod set off spot nodes (docs/autoscaling.md): NotIn [spot] on
// the capacity-type label, which a node without the label satisfies.
TEST(ConfigJobs, SpotFalseRefusesSpotNodes) {
  auto out = jobs(R"(
apiVersion: sluice.dev/v1alpha1
kind: Job
metadata: {name: m, namespace: team-a}
spec: {queue: train, gpus: 1, spot: false, command: ["true"]}
---
apiVersion: sluice.dev/v1alpha1
kind: Job
metadata: {name: n, namespace: team-a}
spec: {queue: train, gpus: 1, spot: true, command: ["true"]}
)");
  ASSERT_TRUE(out.errors.empty()) << dump(out.errors);
  ASSERT_EQ(out.jobs.size(), 2u);
  const PodSet& ps = out.jobs[0].pod_sets.at(0);
  ASSERT_TRUE(ps.node);
  EXPECT_FALSE(node_matches(*ps.node, {{"sluice.dev/capacity-type", "spot"}}));
  EXPECT_TRUE(node_matches(*ps.node, {{"sluice.dev/capacity-type", "on-demand"}}));
  EXPECT_TRUE(node_matches(*ps.node, {}));  // a Cluster node
  EXPECT_FALSE(out.jobs[1].pod_sets.at(0).node);
  out = jobs(R"(
apiVersion: sluice.dev/v1alpha1
kind: Job
metadata: {name: m, namespace: team-a}
spec: {queue: train, gpus: 1, spot: maybe, command: ["true"]}
)");
  EXPECT_TRUE(any_contains(out.errors, {"spec.spot"})) << dump(out.errors);
}

// A pod spec's terminationGracePeriodSeconds is the job's stop grace (SIGTERM, then SIGKILL).
TEST(ConfigJobs, TerminationGracePeriodIsTheStopGrace) {
  auto with_grace = [](const char* seconds) {
    return parse_jobs(
        Source{"jobs.yaml",
               std::string("apiVersion: batch/v1\nkind: Job\nmetadata: {name: g, namespace: "
                           "team-a, labels: {kueue.x-k8s.io/queue-name: train}}\nspec:\n  "
                           "template:\n    spec:\n      terminationGracePeriodSeconds: ") +
                   seconds +
                   "\n      containers: [{name: c, image: busybox, command: [\"true\"], "
                   "resources: {limits: {cpu: 1}}}]\n"},
        base_config());
  };
  auto ok = with_grace("45");
  ASSERT_TRUE(ok.errors.empty()) << dump(ok.errors);
  EXPECT_EQ(ok.jobs.at(0).checkpoint_grace_ns, 45 * kNsPerSec);
  auto bad = with_grace("-1");
  ASSERT_EQ(bad.errors.size(), 1u) << dump(bad.errors);
  EXPECT_TRUE(
      any_contains(bad.errors, {"jobs.yaml:7", "terminationGracePeriodSeconds", "negative"}))
      << dump(bad.errors);
}

TEST(ConfigJobs, SluiceJobEveryField) {
  auto out = jobs(R"(
apiVersion: sluice.dev/v1alpha1
kind: Job
metadata: {name: train-1, namespace: team-a}
spec:
  queue: train
  priorityClassName: urgent
  preemptible: false
  interactive: true
  podSets:
  - name: workers
    count: 4
    resources: {nvidia.com/gpu: 8, cpu: 32, memory: 256Gi}
  - name: ps
    resources: {cpu: "500m", memory: 1Gi}
  gpuModels: [H100]
  topology: {required: rack}
  gpuLocality: nvlink
  walltime: 2h
  checkpointGrace: 90s
  command: [python, train.py]
  env: {A: "1", B: two}
  submitTime: 12.5
  id: 77
)");
  ASSERT_TRUE(out.errors.empty()) << dump(out.errors);
  ASSERT_EQ(out.jobs.size(), 1u);
  const Job& j = out.jobs[0];
  EXPECT_EQ(j.id, 77u);
  EXPECT_EQ(j.name, "train-1");
  EXPECT_EQ(j.namespace_, "team-a");
  EXPECT_EQ(j.queue, "train");
  EXPECT_EQ(j.exec().priority_class, "urgent");
  EXPECT_EQ(j.priority, 1000);
  EXPECT_FALSE(j.preemptible);
  EXPECT_TRUE(j.interactive);
  ASSERT_EQ(j.pod_sets.size(), 2u);
  EXPECT_EQ(j.pod_sets[0].name, "workers");
  EXPECT_EQ(j.pod_sets[0].count, 4);
  EXPECT_EQ(j.pod_sets[0].gpus, 8);
  EXPECT_EQ(j.pod_sets[0].gpu_milli, 1000);
  EXPECT_EQ(j.pod_sets[0].requests[kGpu], 8000);
  EXPECT_EQ(j.pod_sets[0].requests[kCpu], 32000);
  EXPECT_EQ(j.pod_sets[0].requests[kMemory], 256 * 1024);
  EXPECT_EQ(j.pod_sets[1].count, 1);
  EXPECT_EQ(j.pod_sets[1].requests[kCpu], 500);
  EXPECT_EQ(j.total_requests()[kGpu], 32000);
  EXPECT_EQ(j.allowed_models, (std::vector<std::string>{"H100"}));
  EXPECT_EQ(j.topology.level, 0);  // rack
  EXPECT_TRUE(j.topology.required);
  EXPECT_EQ(j.gpu_locality, GpuLocality::kRequireNvlink);
  EXPECT_EQ(j.walltime_ns, 7200 * kNsPerSec);
  EXPECT_EQ(j.checkpoint_grace_ns, 90 * kNsPerSec);
  EXPECT_EQ(j.exec().command, (std::vector<std::string>{"python", "train.py"}));
  EXPECT_EQ(j.exec().env,
            (std::vector<std::pair<std::string, std::string>>{{"A", "1"}, {"B", "two"}}));
  EXPECT_EQ(j.submit_ns, 12'500'000'000);
}

TEST(ConfigJobs, ShorthandDefaultsAndIds) {
  auto out = jobs(R"(
apiVersion: sluice.dev/v1alpha1
kind: Job
metadata: {name: a, namespace: team-a}
spec: {queue: train, gpus: 8, pods: 4, cpu: 16, memory: 64Gi, topology: {preferred: node}}
---
apiVersion: sluice.dev/v1alpha1
kind: Job
metadata: {name: b, namespace: team-a}
spec: {gpus: 1, id: 1}
---
apiVersion: sluice.dev/v1alpha1
kind: Job
metadata: {name: c, namespace: team-a}
spec: {queue: gpus, gpus: 1, gpuFraction: "250m"}
)");
  ASSERT_TRUE(out.errors.empty()) << dump(out.errors);
  ASSERT_EQ(out.jobs.size(), 3u);
  const Job& a = out.jobs[0];
  ASSERT_EQ(a.pod_sets.size(), 1u);
  EXPECT_EQ(a.pod_sets[0].name, "main");
  EXPECT_EQ(a.pod_sets[0].count, 4);  // gang of 4
  EXPECT_EQ(a.pod_sets[0].gpus, 8);
  EXPECT_EQ(a.pod_sets[0].requests[kMemory], 65536);
  EXPECT_EQ(a.topology.level, 1);  // "node" = levels.size()
  EXPECT_FALSE(a.topology.required);
  EXPECT_EQ(a.exec().priority_class, "urgent");  // the ClusterQueue's defaultPriorityClass
  EXPECT_TRUE(a.preemptible);
  EXPECT_EQ(a.submit_ns, 0);
  // Ids: b asked for 1, so a and c get 2 and 3 in document order.
  EXPECT_EQ(a.id, 2u);
  EXPECT_EQ(out.jobs[1].id, 1u);
  EXPECT_EQ(out.jobs[2].id, 3u);
  EXPECT_EQ(out.jobs[1].queue, "default");  // no queue: LocalQueue "default" of the namespace
  // Fraction of one GPU; the interactive queue makes it interactive and not preemptible.
  const Job& c = out.jobs[2];
  EXPECT_EQ(c.pod_sets[0].gpus, 1);
  EXPECT_EQ(c.pod_sets[0].gpu_milli, 250);
  EXPECT_EQ(c.pod_sets[0].requests[kGpu], 250);
  EXPECT_TRUE(c.interactive);
  EXPECT_FALSE(c.preemptible);
}

TEST(ConfigJobs, RequestErrors) {
  auto out = jobs(R"(
apiVersion: sluice.dev/v1alpha1
kind: Job
metadata: {name: frac-two, namespace: team-a}
spec: {gpus: 2, gpuFraction: 0.5}
---
apiVersion: sluice.dev/v1alpha1
kind: Job
metadata: {name: frac-big, namespace: team-a}
spec: {gpus: 1, gpuFraction: 1.5}
---
apiVersion: sluice.dev/v1alpha1
kind: Job
metadata: {name: zero, namespace: team-a}
spec: {podSets: [{count: 0, resources: {nvidia.com/gpu: 1}}]}
---
apiVersion: sluice.dev/v1alpha1
kind: Job
metadata: {name: negative, namespace: team-a}
spec: {gpus: -1}
---
apiVersion: sluice.dev/v1alpha1
kind: Job
metadata: {name: absurd, namespace: team-a}
spec: {gpus: 2000000}
---
apiVersion: sluice.dev/v1alpha1
kind: Job
metadata: {name: absurd-total, namespace: team-a}
spec: {gpus: 8, pods: 100000, cpu: 1}
---
apiVersion: sluice.dev/v1alpha1
kind: Job
metadata: {name: half, namespace: team-a}
spec: {gpus: 0.5}
---
apiVersion: sluice.dev/v1alpha1
kind: Job
metadata: {name: nothing, namespace: team-a}
spec: {pods: 2}
---
apiVersion: sluice.dev/v1alpha1
kind: Job
metadata: {name: level, namespace: team-a}
spec: {gpus: 1, topology: {required: blok}}
---
apiVersion: sluice.dev/v1alpha1
kind: Job
metadata: {name: fpga, namespace: team-a}
spec: {podSets: [{resources: {example.com/fpga: 1}}]}
---
apiVersion: sluice.dev/v1alpha1
kind: Job
metadata: {name: uncovered, namespace: team-a}
spec: {queue: gpus, gpus: 1, cpu: 4}
)");
  ASSERT_EQ(out.jobs.size(), 1u);  // only absurd-total: 8 x 100000 = 800000 GPUs is allowed
  EXPECT_EQ(out.jobs[0].name, "absurd-total");
  const auto& e = out.errors;
  EXPECT_TRUE(has(e,
                  "jobs.yaml:4: spec.gpuFraction: a fraction needs exactly 1 GPU per pod (this "
                  "pod set asks for 2)"))
      << dump(e);
  EXPECT_TRUE(has(e, "jobs.yaml:9: spec.gpuFraction: \"1.5\" must be in (0, 1]"));
  EXPECT_TRUE(has(e, "jobs.yaml:14: spec.podSets[0].count: \"0\" must be at least 1"));
  EXPECT_TRUE(has(e, "jobs.yaml:19: spec.gpus: \"-1\" must not be negative"));
  EXPECT_TRUE(has(e, "jobs.yaml:24: spec.gpus: \"2000000\" is more than 1000000 GPUs"));
  EXPECT_TRUE(has(e,
                  "jobs.yaml:34: spec.gpus: \"0.5\" must be a whole number of GPUs (use "
                  "gpuFraction for a share of one GPU)"));
  EXPECT_TRUE(has(e,
                  "jobs.yaml:39: spec: the job requests no resources (set nvidia.com/gpu, cpu "
                  "or memory)"));
  EXPECT_TRUE(has(e,
                  "jobs.yaml:44: spec.topology.required: unknown topology level \"blok\" "
                  "(known: rack, node)"));
  EXPECT_TRUE(has(e,
                  "jobs.yaml:49: spec.podSets[0].resources.example.com/fpga: unknown resource "
                  "\"example.com/fpga\": no ClusterQueue covers it (known: nvidia.com/gpu, "
                  "cpu, memory)"));
  EXPECT_TRUE(has(e,
                  "jobs.yaml:54: spec.cpu: no resource group of ClusterQueue \"gpu-only\" "
                  "covers cpu (covered: nvidia.com/gpu)"));
}

TEST(ConfigJobs, AbsurdGangTotal) {
  auto out = jobs(R"(
apiVersion: sluice.dev/v1alpha1
kind: Job
metadata: {name: huge, namespace: team-a}
spec: {gpus: 64, pods: 20000}
)");
  EXPECT_TRUE(has(out.errors,
                  "jobs.yaml:4: spec: the job asks for 1280000 GPUs in total; at most "
                  "1000000"))
      << dump(out.errors);
}

// A walltime of 100,000 days parsed, and start + walltime overflowed int64 nanoseconds in the
// scheduler (undefined behaviour, found with UBSan). Durations are at most 10 years.
TEST(ConfigJobs, DurationsOverTenYearsAreRejected) {
  auto out = jobs(R"(
apiVersion: sluice.dev/v1alpha1
kind: Job
metadata: {name: forever, namespace: team-a}
spec: {gpus: 1, walltime: 100000d}
---
apiVersion: sluice.dev/v1alpha1
kind: Job
metadata: {name: grace, namespace: team-a}
spec: {gpus: 1, checkpointGrace: 3661d}
---
apiVersion: sluice.dev/v1alpha1
kind: Job
metadata: {name: ten-years, namespace: team-a}
spec: {gpus: 1, walltime: 3660d}
---
apiVersion: sluice.dev/v1alpha1
kind: Job
metadata: {name: late, namespace: team-a}
spec: {gpus: 1, submitTime: 7258118401}
)");
  ASSERT_EQ(out.jobs.size(), 1u) << dump(out.errors);
  EXPECT_EQ(out.jobs[0].name, "ten-years");
  EXPECT_EQ(out.jobs[0].walltime_ns, kMaxDurationNs);
  EXPECT_TRUE(has(out.errors, "jobs.yaml:4: spec.walltime: \"100000d\" is more than 10 years"))
      << dump(out.errors);
  EXPECT_TRUE(has(out.errors, "jobs.yaml:9: spec.checkpointGrace: \"3661d\" is more than 10 years"))
      << dump(out.errors);
  EXPECT_TRUE(has(out.errors, "jobs.yaml:19: spec.submitTime: \"7258118401\" is after 2200-01-01"))
      << dump(out.errors);
}

TEST(ConfigJobs, QueueAndPriorityResolution) {
  auto out = jobs(R"(
apiVersion: sluice.dev/v1alpha1
kind: Job
metadata: {name: a, namespace: team-b}
spec: {gpus: 1}
---
apiVersion: sluice.dev/v1alpha1
kind: Job
metadata: {name: b, namespace: team-a}
spec: {queue: nope, gpus: 1}
---
apiVersion: sluice.dev/v1alpha1
kind: Job
metadata: {name: c, namespace: team-a}
spec: {queue: train, gpus: 1, priorityClassName: vip}
---
apiVersion: sluice.dev/v1alpha1
kind: Job
metadata: {name: d, namespace: team-a}
spec: {queue: train, gpus: 1, priorityClassName: critical}
---
apiVersion: sluice.dev/v1alpha1
kind: Job
metadata: {name: d, namespace: team-a}
spec: {queue: train, gpus: 1}
)");
  const auto& e = out.errors;
  EXPECT_TRUE(has(e,
                  "jobs.yaml:4: spec.queue: no queue given (spec.queue, or label or annotation "
                  "kueue.x-k8s.io/queue-name, or label queue) and no LocalQueue \"default\" in "
                  "namespace \"team-b\" (its queues: none)"))
      << dump(e);
  EXPECT_TRUE(has(e,
                  "jobs.yaml:9: spec.queue: LocalQueue \"nope\" not found in namespace "
                  "\"team-a\" (its queues: train, default, gpus)"));
  EXPECT_TRUE(has(e,
                  "jobs.yaml:14: spec.priorityClassName: unknown priority class \"vip\" "
                  "(defined: urgent; built-in: low, normal, medium, high, critical)"));
  EXPECT_TRUE(has(e, "jobs.yaml:23: metadata.name: duplicate job \"team-a/d\""));
  ASSERT_EQ(out.jobs.size(), 1u);
  EXPECT_EQ(out.jobs[0].priority, 10000);  // built-in "critical", noted
  EXPECT_TRUE(any_contains(out.notes, {"jobs.yaml:19: spec.priorityClassName: "
                                       "WorkloadPriorityClass \"critical\" is not defined"}))
      << dump(out.notes);
}

TEST(ConfigJobs, PodConversionWithIgnoredFieldsNote) {
  auto out = jobs(R"(
apiVersion: v1
kind: Pod
metadata:
  name: p
  namespace: team-a
  labels: {kueue.x-k8s.io/queue-name: train, app: x}
  annotations: {note: hi}
spec:
  schedulerName: volcano
  priorityClassName: urgent
  initContainers:
  - name: fetch
    image: busybox
    resources: {requests: {cpu: "8", memory: 1Gi}}
  containers:
  - name: main
    image: trainer:v1
    command: [python]
    args: [train.py, --lr, "0.1"]
    env: [{name: A, value: "1"}, {name: B, valueFrom: {secretKeyRef: {name: s, key: k}}}]
    resources:
      limits: {nvidia.com/gpu: 2, cpu: "4", ephemeral-storage: 10Gi}
      requests: {cpu: "2", memory: 8Gi}
  - name: sidecar
    image: logger
    resources: {limits: {cpu: 500m, memory: 256Mi}}
)");
  ASSERT_TRUE(out.errors.empty()) << dump(out.errors);
  ASSERT_EQ(out.jobs.size(), 1u);
  const Job& j = out.jobs[0];
  EXPECT_EQ(j.queue, "train");
  EXPECT_EQ(j.priority, 1000);
  ASSERT_EQ(j.pod_sets.size(), 1u);
  const PodSet& ps = j.pod_sets[0];
  EXPECT_EQ(ps.count, 1);
  EXPECT_EQ(ps.gpus, 2);
  // cpu: limits win (4) + sidecar 0.5 = 4.5 CPUs; init container 8 CPUs is the max.
  EXPECT_EQ(ps.requests[kCpu], 8000);
  // memory: requests (no limit) 8Gi + sidecar 256Mi; init 1Gi is smaller.
  EXPECT_EQ(ps.requests[kMemory], 8 * 1024 + 256);
  EXPECT_EQ(j.exec().command, (std::vector<std::string>{"python", "train.py", "--lr", "0.1"}));
  EXPECT_EQ(j.exec().env,
            (std::vector<std::pair<std::string, std::string>>{{"A", "1"}, {"B", ""}}));
  ASSERT_EQ(out.notes.size(), 1u) << dump(out.notes);
  EXPECT_EQ(out.notes[0],
            "jobs.yaml:1: ignored fields: spec.schedulerName, "
            "spec.containers[0].resources.limits.ephemeral-storage, "
            "spec.containers[0].env[1].valueFrom, spec.containers[1].image, "
            "spec.initContainers[0].image");
}

TEST(ConfigJobs, SecurityContextRunAsUserAndGroup) {
  // Pod level, then the first container's: the container wins (as in Kubernetes).
  auto pod = jobs(R"(
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: team-a, labels: {queue: train}}
spec:
  securityContext: {runAsUser: 1000, runAsGroup: 100, fsGroup: 5}
  containers:
  - name: main
    command: [python]
    resources: {limits: {cpu: "1"}}
    securityContext: {runAsUser: 1001, allowPrivilegeEscalation: false}
)");
  ASSERT_TRUE(pod.errors.empty()) << dump(pod.errors);
  EXPECT_EQ(pod.jobs[0].exec().run_as_uid, 1001);
  EXPECT_EQ(pod.jobs[0].exec().run_as_gid, 100);
  ASSERT_EQ(pod.notes.size(), 1u);  // fields sluice does not act on are named
  EXPECT_NE(pod.notes[0].find("spec.securityContext.fsGroup"), std::string::npos) << pod.notes[0];
  auto batch = jobs(R"(
apiVersion: batch/v1
kind: Job
metadata: {name: b, namespace: team-a, labels: {queue: train}}
spec:
  template:
    spec:
      securityContext: {runAsUser: 2000}
      containers: [{name: main, command: ["true"], resources: {limits: {cpu: "1"}}}]
)");
  ASSERT_TRUE(batch.errors.empty()) << dump(batch.errors);
  EXPECT_EQ(batch.jobs[0].exec().run_as_uid, 2000);
  EXPECT_EQ(batch.jobs[0].exec().run_as_gid, -1);  // none asked: resolved by the server
  auto sluice = jobs(R"(
apiVersion: sluice.dev/v1alpha1
kind: Job
metadata: {name: s, namespace: team-a}
spec: {queue: train, gpus: 1, securityContext: {runAsUser: 3000, runAsGroup: 3000}}
)");
  ASSERT_TRUE(sluice.errors.empty()) << dump(sluice.errors);
  EXPECT_EQ(sluice.jobs[0].exec().run_as_uid, 3000);
  EXPECT_EQ(sluice.jobs[0].exec().run_as_gid, 3000);
  auto none = jobs(R"(
apiVersion: sluice.dev/v1alpha1
kind: Job
metadata: {name: s, namespace: team-a}
spec: {queue: train, gpus: 1}
)");
  EXPECT_EQ(none.jobs[0].exec().run_as_uid, -1);
  // Errors: a negative id, runAsNonRoot with uid 0, an unknown field in a sluice Job.
  auto bad = jobs(R"(
apiVersion: sluice.dev/v1alpha1
kind: Job
metadata: {name: s, namespace: team-a}
spec: {queue: train, gpus: 1, securityContext: {runAsUser: -1}}
---
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: team-a, labels: {queue: train}}
spec:
  securityContext: {runAsUser: 0, runAsNonRoot: true}
  containers: [{name: main, resources: {limits: {cpu: "1"}}}]
---
apiVersion: sluice.dev/v1alpha1
kind: Job
metadata: {name: s2, namespace: team-a}
spec: {queue: train, gpus: 1, securityContext: {privileged: true}}
)");
  ASSERT_EQ(bad.errors.size(), 3u) << dump(bad.errors);
  EXPECT_NE(bad.errors[0].find("spec.securityContext.runAsUser"), std::string::npos)
      << bad.errors[0];
  EXPECT_NE(bad.errors[1].find("runAsNonRoot: true, but runAsUser is 0"), std::string::npos)
      << bad.errors[1];
  EXPECT_NE(bad.errors[2].find("privileged"), std::string::npos) << bad.errors[2];
}

TEST(ConfigJobs, BatchJobParallelismPodsRunTheCompletions) {
  auto out = jobs(R"(
apiVersion: batch/v1
kind: Job
metadata:
  name: bj
  namespace: team-a
  labels: {queue: train, kueue.x-k8s.io/priority-class: urgent}
spec:
  parallelism: 4
  completions: 8
  backoffLimit: 3
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: w
        resources: {limits: {nvidia.com/gpu: 8}}
)");
  ASSERT_TRUE(out.errors.empty()) << dump(out.errors);
  ASSERT_EQ(out.jobs.size(), 1u);
  EXPECT_EQ(out.jobs[0].pod_sets[0].count, 4);
  EXPECT_EQ(out.jobs[0].pod_count(), 4);
  EXPECT_EQ(out.jobs[0].total_requests()[kGpu], 32000);
  EXPECT_EQ(out.jobs[0].exec().priority_class, "urgent");
  EXPECT_EQ(out.jobs[0].exec().completions, (Completions{8, false}));  // 8 runs on the 4 pods
  EXPECT_EQ(out.notes.size(), 1u) << dump(out.notes);
  EXPECT_TRUE(has(out.notes,
                  "jobs.yaml:1: ignored fields: spec.backoffLimit, "
                  "spec.template.spec.restartPolicy"))
      << dump(out.notes);
}

TEST(ConfigJobs, PodWithoutQueueLabelNeedsDefaultQueue) {
  auto out = jobs(R"(
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: elsewhere}
spec:
  containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1}}}]
)");
  EXPECT_TRUE(any_contains(
      out.errors, {"jobs.yaml:3: metadata.labels: no queue given",
                   "no LocalQueue \"default\" in namespace \"elsewhere\"", "(its queues: none)"}))
      << dump(out.errors);
}

// A member token's one namespace stands in for a document that names none (the server passes
// it); a document's own namespace stays.
TEST(ConfigJobs, DefaultNamespaceIsTheCallersWhenGiven) {
  const char* text = R"(
apiVersion: sluice.dev/v1alpha1
kind: Job
metadata: {name: a}
spec: {queue: train, gpus: 1}
---
apiVersion: sluice.dev/v1alpha1
kind: Job
metadata: {name: b, namespace: team-a}
spec: {queue: train, gpus: 1}
)";
  const Config config = base_config();
  auto out = parse_jobs(Source{"jobs.yaml", yaml(text)}, config, 0, "team-a");
  ASSERT_TRUE(out.errors.empty()) << dump(out.errors);
  ASSERT_EQ(out.jobs.size(), 2u);
  EXPECT_EQ(out.jobs[0].namespace_, "team-a");
  EXPECT_EQ(out.jobs[1].namespace_, "team-a");
  out = parse_jobs(Source{"jobs.yaml", yaml(text)}, config);
  ASSERT_FALSE(out.errors.empty());
  EXPECT_TRUE(any_contains(out.errors, {"namespace \"default\""})) << dump(out.errors);
}

TEST(ConfigJobs, JsonInput) {
  auto out = jobs(R"(
{"apiVersion": "v1", "kind": "Pod",
 "metadata": {"name": "json-pod", "namespace": "team-a", "labels": {"queue": "train"}},
 "spec": {"containers": [{"name": "c", "image": "x",
                          "resources": {"limits": {"nvidia.com/gpu": "4", "cpu": 2}}}]}}
)");
  ASSERT_TRUE(out.errors.empty()) << dump(out.errors);
  ASSERT_EQ(out.jobs.size(), 1u);
  EXPECT_EQ(out.jobs[0].name, "json-pod");
  EXPECT_EQ(out.jobs[0].pod_sets[0].gpus, 4);
  EXPECT_EQ(out.jobs[0].pod_sets[0].requests[kCpu], 2000);
  EXPECT_TRUE(out.notes.empty()) << dump(out.notes);  // the image is read (docs/workloads.md)
  EXPECT_FALSE(out.jobs[0].pod_sets[0].exec().image.empty());
}

// Several jobs in one document: a JSON array (or YAML sequence) of job documents, or a
// Kubernetes List. Errors name the item's line; lists do not nest.
TEST(ConfigJobs, ArraysAndListsOfJobs) {
  auto out = jobs(R"(
[{"apiVersion": "sluice.dev/v1alpha1", "kind": "Job",
  "metadata": {"name": "a", "namespace": "team-a"}, "spec": {"queue": "train", "gpus": 1}},
 {"apiVersion": "sluice.dev/v1alpha1", "kind": "Job",
  "metadata": {"name": "b", "namespace": "team-a"}, "spec": {"queue": "train", "gpus": 2}}]
)");
  ASSERT_TRUE(out.errors.empty()) << dump(out.errors);
  ASSERT_EQ(out.jobs.size(), 2u);
  EXPECT_EQ(out.jobs[1].name, "b");
  EXPECT_EQ(out.jobs[1].pod_sets[0].gpus, 2);

  out = jobs(R"(
apiVersion: v1
kind: List
items:
- {apiVersion: sluice.dev/v1alpha1, kind: Job, metadata: {name: c, namespace: team-a}, spec: {queue: train, gpus: 1}}
- apiVersion: v1
  kind: Pod
  metadata: {name: d, namespace: team-a, labels: {queue: train}}
  spec: {containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1}}}]}
)");
  ASSERT_TRUE(out.errors.empty()) << dump(out.errors);
  ASSERT_EQ(out.jobs.size(), 2u);
  EXPECT_EQ(out.jobs[0].name, "c");
  EXPECT_EQ(out.jobs[1].name, "d");

  out = jobs(R"(
apiVersion: v1
kind: List
items:
- {apiVersion: sluice.dev/v1alpha1, kind: Job, metadata: {name: e, namespace: team-a}, spec: {queue: train, gpus: -1}}
- [{apiVersion: sluice.dev/v1alpha1, kind: Job, metadata: {name: f}}]
)");
  EXPECT_TRUE(out.jobs.empty());
  EXPECT_TRUE(any_contains(out.errors, {"jobs.yaml:4: spec.gpus"})) << dump(out.errors);
  EXPECT_TRUE(any_contains(out.errors, {"jobs.yaml:5: a list inside a list"})) << dump(out.errors);

  out = jobs("apiVersion: v1\nkind: List\nitems: {a: 1}\n");
  EXPECT_TRUE(any_contains(out.errors, {"items: must be a list of job documents"}))
      << dump(out.errors);
}

TEST(ConfigJobs, ParseJobsRejectsConfigurationKinds) {
  auto out = jobs(R"(
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: q}
spec: {clusterQueue: cq}
)");
  EXPECT_TRUE(has(out.errors,
                  "jobs.yaml:2: kind: LocalQueue is configuration, not a job (expected a "
                  "sluice.dev/v1alpha1 Job, v1 Pod, batch/v1 Job, JobSet, PyTorchJob or "
                  "MPIJob)"))
      << dump(out.errors);
}

TEST(ConfigJobs, LoadResolvesJobsAgainstAllSources) {
  // The Pod comes before the Queue it names, in another file.
  const char* pod = R"(
apiVersion: v1
kind: Pod
metadata: {name: p, labels: {queue: q}}
spec: {containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1}}}]}
)";
  const char* queue = R"(
apiVersion: scheduling.x-k8s.io/v1alpha1
kind: Queue
metadata: {name: q}
spec: {resourceQuota: {gpu: 8}}
)";
  LoadOptions options;
  auto out = load({Source{"pod.yaml", yaml(pod)}, Source{"queue.yaml", yaml(queue)}}, options);
  ASSERT_TRUE(out.ok()) << dump(out.errors);
  ASSERT_EQ(out.jobs.size(), 1u);
  EXPECT_EQ(out.jobs[0].id, 1u);
  EXPECT_EQ(out.jobs[0].namespace_, "default");
  EXPECT_EQ(out.jobs[0].queue, "q");
}

// A JSON array or a `kind: List` of documents loads as its items (a saved `kubectl get -o json`
// or a list of jobs next to the configuration); a job without an id gets the next after the
// largest id given, as a server numbers a new submission.
TEST(ConfigJobs, LoadReadsListsAndNumbersNewJobsAfterTheLargestId) {
  const char* config = R"(
apiVersion: v1
kind: List
items:
- {apiVersion: scheduling.x-k8s.io/v1alpha1, kind: Queue, metadata: {name: q}, spec: {resourceQuota: {gpu: 8}}}
)";
  const char* jobs = R"([
  {"apiVersion": "sluice.dev/v1alpha1", "kind": "Job", "metadata": {"name": "old"},
   "spec": {"queue": "q", "gpus": 1, "id": 41}},
  {"apiVersion": "sluice.dev/v1alpha1", "kind": "Job", "metadata": {"name": "new"},
   "spec": {"queue": "q", "gpus": 1}}
])";
  auto out = load({Source{"config.yaml", yaml(config)}, Source{"jobs.json", jobs}}, LoadOptions{});
  ASSERT_TRUE(out.ok()) << dump(out.errors);
  ASSERT_EQ(out.jobs.size(), 2u);
  EXPECT_EQ(out.jobs[0].name, "old");
  EXPECT_EQ(out.jobs[0].id, 41u);
  EXPECT_EQ(out.jobs[1].name, "new");
  EXPECT_EQ(out.jobs[1].id, 42u);

  out = load({Source{"config.yaml", yaml(config)},
              Source{"bad.yaml", "- [{kind: Job}]\n---\n{apiVersion: v1, kind: List, items: 3}\n"}},
             LoadOptions{});
  EXPECT_TRUE(any_contains(out.errors, {"bad.yaml:1: a list inside a list"})) << dump(out.errors);
  EXPECT_TRUE(any_contains(out.errors, {"bad.yaml:3: items: must be a list of documents"}))
      << dump(out.errors);
}

}  // namespace
}  // namespace jobs_test
}  // namespace sluice
