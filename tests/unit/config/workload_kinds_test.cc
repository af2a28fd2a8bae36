// Workload kinds with their Kubernetes meaning (docs/workloads.md): batch/v1 Job completions and
// Indexed mode, generateName, unknown resources, the queue-name annotation, JobSet, PyTorchJob,
// MPIJob and Kueue pod groups.
#include <gtest/gtest.h>

#include "config_test_util.h"

namespace sluice {
namespace {

using testing_config::any_contains;
using testing_config::dump;
using testing_config::has;
using testing_config::load_one;
using testing_config::yaml;

const char* kBase = R"(
apiVersion: sluice.dev/v1alpha1
kind: Cluster
metadata: {name: c}
spec:
  nodeGroups:
  - {namePrefix: n, count: 4, cpu: 64, memory: 512Gi, gpus: {count: 8, model: H100}}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: any}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: cq}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu, cpu, memory, example.com/fpga]
    flavors:
    - name: any
      resources:
      - {name: nvidia.com/gpu, nominalQuota: 32}
      - {name: cpu, nominalQuota: 256}
      - {name: memory, nominalQuota: 2Ti}
      - {name: example.com/fpga, nominalQuota: 4}
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
)";

JobsOutput jobs(const char* text, uint64_t seed = 0) {
  static const Config config = [] {
    auto out = load_one(yaml(kBase), "base.yaml");
    EXPECT_TRUE(out.ok()) << dump(out.errors);
    return out.config;
  }();
  return parse_jobs(Source{"jobs.yaml", yaml(text)}, config, seed);
}

TEST(WorkloadKinds, BatchJobCompletionsRunOnParallelismSlots) {
  auto out = jobs(R"(
apiVersion: batch/v1
kind: Job
metadata:
  name: bj
  namespace: team-a
  labels: {kueue.x-k8s.io/queue-name: train}
spec:
  parallelism: 2
  completions: 4
  template:
    spec:
      containers: [{name: w, resources: {limits: {nvidia.com/gpu: 1}}}]
)");
  ASSERT_TRUE(out.errors.empty()) << dump(out.errors);
  ASSERT_EQ(out.jobs.size(), 1u);
  // 2 slots admitted together (Kueue's pod set count); 4 runs in all, none indexed.
  EXPECT_EQ(out.jobs[0].pod_count(), 2);
  EXPECT_EQ(out.jobs[0].exec().completions, (Completions{4, false}));
  EXPECT_TRUE(out.notes.empty()) << dump(out.notes);
}

TEST(WorkloadKinds, BatchJobMinParallelismIsPartialAdmission) {
  auto out = jobs(R"(
apiVersion: batch/v1
kind: Job
metadata:
  name: pa
  namespace: team-a
  labels: {kueue.x-k8s.io/queue-name: train}
  annotations: {kueue.x-k8s.io/job-min-parallelism: "2"}
spec:
  parallelism: 5
  completions: 10
  template:
    spec:
      containers: [{name: w, resources: {limits: {cpu: 1}}}]
)");
  ASSERT_TRUE(out.errors.empty()) << dump(out.errors);
  ASSERT_EQ(out.jobs.size(), 1u);
  EXPECT_EQ(out.jobs[0].pod_sets[0].count, 5);
  EXPECT_EQ(out.jobs[0].pod_sets[0].min_count, 2);
  EXPECT_TRUE(partially_admissible(out.jobs[0]));

  for (const char* value : {"\"5\"", "\"0\"", "\"two\""}) {
    auto bad = jobs((std::string(R"(
apiVersion: batch/v1
kind: Job
metadata:
  name: pa
  namespace: team-a
  labels: {kueue.x-k8s.io/queue-name: train}
  annotations: {kueue.x-k8s.io/job-min-parallelism: )") +
                     value + R"(}
spec:
  parallelism: 5
  template:
    spec:
      containers: [{name: w, resources: {limits: {cpu: 1}}}]
)")
                        .c_str());
    EXPECT_TRUE(any_contains(bad.errors, {"metadata.annotations.kueue.x-k8s.io/job-min-parallelism",
                                          "must be a whole number from 1 to 4"}))
        << value << ": " << dump(bad.errors);
  }
}

TEST(WorkloadKinds, IndexedJobAndItsLimits) {
  auto out = jobs(R"(
apiVersion: batch/v1
kind: Job
metadata: {name: ix, namespace: team-a, labels: {kueue.x-k8s.io/queue-name: train}}
spec:
  completions: 6
  parallelism: 8
  completionMode: Indexed
  activeDeadlineSeconds: 600
  template:
    spec:
      containers: [{name: w, resources: {limits: {cpu: 1}}}]
)");
  ASSERT_TRUE(out.errors.empty()) << dump(out.errors);
  // parallelism above completions: only 6 pods (as Kueue counts them), one index each.
  EXPECT_EQ(out.jobs[0].pod_count(), 6);
  EXPECT_EQ(out.jobs[0].exec().completions, (Completions{6, true}));
  EXPECT_EQ(out.jobs[0].walltime_ns, 600 * kNsPerSec);

  auto bad = jobs(R"(
apiVersion: batch/v1
kind: Job
metadata: {name: ix, namespace: team-a}
spec:
  completionMode: Indexed
  template:
    spec:
      containers: [{name: w, resources: {limits: {cpu: 1}}}]
)");
  EXPECT_TRUE(has(bad.errors,
                  "jobs.yaml:5: spec.completionMode: Indexed needs completions (as in "
                  "Kubernetes)"))
      << dump(bad.errors);
}

TEST(WorkloadKinds, GenerateNameIsUniqueAndDeterministic) {
  const char* text = R"(
apiVersion: v1
kind: Pod
metadata: {generateName: cuda-smoke-, namespace: team-a, labels: {kueue.x-k8s.io/queue-name: train}}
spec:
  containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1}}}]
---
apiVersion: v1
kind: Pod
metadata: {generateName: cuda-smoke-, namespace: team-a, labels: {kueue.x-k8s.io/queue-name: train}}
spec:
  containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1}}}]
)";
  auto a = jobs(text, 7);
  ASSERT_TRUE(a.errors.empty()) << dump(a.errors);
  ASSERT_EQ(a.jobs.size(), 2u);
  // Two in one file: different names, the prefix and five of Kubernetes' characters.
  EXPECT_NE(a.jobs[0].name, a.jobs[1].name);
  for (const Job& j : a.jobs) {
    ASSERT_EQ(j.name.size(), std::string("cuda-smoke-").size() + 5) << j.name;
    EXPECT_EQ(j.name.rfind("cuda-smoke-", 0), 0u) << j.name;
    EXPECT_EQ(j.name.substr(11).find_first_not_of("bcdfghjklmnpqrstvwxz2456789"), std::string::npos)
        << j.name;
  }
  // Same input and seed: same names; another seed (another submission): others.
  auto again = jobs(text, 7);
  EXPECT_EQ(again.jobs[0].name, a.jobs[0].name);
  EXPECT_EQ(again.jobs[1].name, a.jobs[1].name);
  auto other = jobs(text, 8);
  EXPECT_NE(other.jobs[0].name, a.jobs[0].name);
}

TEST(WorkloadKinds, UnknownResourceIsAnErrorWithASuggestion) {
  auto out = jobs(R"(
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: team-a, labels: {kueue.x-k8s.io/queue-name: train}}
spec:
  containers:
  - name: c
    resources:
      limits: {nvidia.com/gpus: 1, ephemeral-storage: 1Gi}
)");
  EXPECT_TRUE(any_contains(out.errors, {"jobs.yaml:8: spec.containers[0].resources.limits."
                                        "nvidia.com/gpus: unknown resource \"nvidia.com/gpus\" "
                                        "(did you mean \"nvidia.com/gpu\"?)",
                                        "no ClusterQueue covers it"}))
      << dump(out.errors);
  EXPECT_EQ(out.errors.size(), 1u) << dump(out.errors);  // ephemeral-storage: only ignored
}

TEST(WorkloadKinds, ExtendedResourceCoveredByAFlavorIsAcceptedWithAWarning) {
  auto out = jobs(R"(
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: team-a, labels: {kueue.x-k8s.io/queue-name: train}}
spec:
  containers:
  - name: c
    resources: {limits: {example.com/fpga: 1, cpu: 1}}
)");
  ASSERT_TRUE(out.errors.empty()) << dump(out.errors);
  EXPECT_TRUE(any_contains(out.notes, {"jobs.yaml:7: spec.containers[0].resources.limits."
                                       "example.com/fpga: example.com/fpga is counted against "
                                       "ClusterQueue \"cq\"'s quota only"}))
      << dump(out.notes);
}

TEST(WorkloadKinds, QueueFromLabelOrAnnotationAndTheDefaultSaysSo) {
  auto annotated = jobs(R"(
apiVersion: batch/v1
kind: Job
metadata:
  name: a
  namespace: team-a
  annotations: {kueue.x-k8s.io/queue-name: train}
spec:
  template:
    spec:
      containers: [{name: w, resources: {limits: {cpu: 1}}}]
)");
  ASSERT_TRUE(annotated.errors.empty()) << dump(annotated.errors);
  EXPECT_EQ(annotated.jobs[0].queue, "train");
  EXPECT_TRUE(annotated.notes.empty()) << dump(annotated.notes);

  auto none = jobs(R"(
apiVersion: batch/v1
kind: Job
metadata: {name: a, namespace: team-a}
spec:
  template:
    spec:
      containers: [{name: w, resources: {limits: {cpu: 1}}}]
)");
  ASSERT_TRUE(none.errors.empty()) << dump(none.errors);
  EXPECT_EQ(none.jobs[0].queue, "default");
  EXPECT_TRUE(any_contains(none.notes, {"jobs.yaml:3: metadata.labels: no queue given; using "
                                        "LocalQueue \"default\" of namespace \"team-a\""}))
      << dump(none.notes);
}

TEST(WorkloadKinds, PyTorchJobIsOneGangMasterFirst) {
  auto out = jobs(R"(
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: pt, namespace: team-a, labels: {kueue.x-k8s.io/queue-name: train}}
spec:
  pytorchReplicaSpecs:
    Worker:
      replicas: 3
      restartPolicy: OnFailure
      template:
        spec:
          containers:
          - {name: pytorch, image: img, command: [python, train.py], resources: {limits: {nvidia.com/gpu: 2}}}
    Master:
      replicas: 1
      template:
        spec:
          containers:
          - {name: pytorch, image: img, command: [python, train.py], resources: {limits: {nvidia.com/gpu: 2}}}
)");
  ASSERT_TRUE(out.errors.empty()) << dump(out.errors);
  ASSERT_EQ(out.jobs.size(), 1u);
  const Job& j = out.jobs[0];
  ASSERT_EQ(j.pod_sets.size(), 2u);
  EXPECT_EQ(j.pod_sets[0].name, "master");  // rank 0, whatever the order in the file
  EXPECT_EQ(j.pod_sets[0].count, 1);
  EXPECT_EQ(j.pod_sets[1].name, "worker");
  EXPECT_EQ(j.pod_sets[1].count, 3);
  EXPECT_EQ(j.total_requests()[kGpu], 8000);
  EXPECT_EQ(j.exec().gang_env, GangEnv::kTorch);
  EXPECT_EQ(j.exec().command,
            (std::vector<std::string>{"python", "train.py"}));  // shared: the job's
  EXPECT_TRUE(j.pod_sets[0].exec().command.empty());

  auto bad = jobs(R"(
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: pt, namespace: team-a}
spec:
  pytorchReplicaSpecs:
    Master: {replicas: 2, template: {spec: {containers: [{name: c, resources: {limits: {cpu: 1}}}]}}}
    Chief: {replicas: 1}
)");
  EXPECT_TRUE(any_contains(bad.errors, {"jobs.yaml:7: spec.pytorchReplicaSpecs.Chief"}))
      << dump(bad.errors);
  EXPECT_TRUE(any_contains(bad.errors, {"jobs.yaml:6: spec.pytorchReplicaSpecs.Master.replicas"}))
      << dump(bad.errors);
}

TEST(WorkloadKinds, MpiJobLauncherAndWorkersWithTheirOwnCommands) {
  auto out = jobs(R"(
apiVersion: kubeflow.org/v2beta1
kind: MPIJob
metadata: {name: mpi, namespace: team-a, labels: {kueue.x-k8s.io/queue-name: train}}
spec:
  slotsPerWorker: 1
  mpiReplicaSpecs:
    Launcher:
      replicas: 1
      template:
        spec:
          containers: [{name: l, command: [mpirun, hostname], resources: {limits: {cpu: 1}}}]
    Worker:
      replicas: 2
      template:
        spec:
          containers: [{name: w, command: [/usr/sbin/sshd, -De], resources: {limits: {nvidia.com/gpu: 1}}}]
)");
  ASSERT_TRUE(out.errors.empty()) << dump(out.errors);
  const Job& j = out.jobs[0];
  ASSERT_EQ(j.pod_sets.size(), 2u);
  EXPECT_EQ(j.pod_sets[0].name, "launcher");
  EXPECT_EQ(j.pod_sets[0].exec().command, (std::vector<std::string>{"mpirun", "hostname"}));
  EXPECT_EQ(j.pod_sets[1].name, "worker");
  EXPECT_EQ(j.pod_sets[1].count, 2);
  EXPECT_EQ(j.pod_sets[1].exec().command, (std::vector<std::string>{"/usr/sbin/sshd", "-De"}));
  EXPECT_EQ(j.exec().gang_env, GangEnv::kMpi);
  EXPECT_TRUE(any_contains(out.notes, {"ignored fields: spec.slotsPerWorker"})) << dump(out.notes);
}

TEST(WorkloadKinds, JobSetReplicatedJobsAreOneGang) {
  auto out = jobs(R"(
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: js, namespace: team-a, labels: {kueue.x-k8s.io/queue-name: train}}
spec:
  replicatedJobs:
  - name: leader
    template:
      spec:
        template:
          spec:
            containers: [{name: c, command: [run], resources: {limits: {cpu: 1}}}]
  - name: workers
    replicas: 2
    template:
      spec:
        parallelism: 3
        completions: 3
        completionMode: Indexed
        template:
          spec:
            containers: [{name: c, command: [run], resources: {limits: {nvidia.com/gpu: 1}}}]
)");
  ASSERT_TRUE(out.errors.empty()) << dump(out.errors);
  const Job& j = out.jobs[0];
  ASSERT_EQ(j.pod_sets.size(), 2u);
  EXPECT_EQ(j.pod_sets[0].name, "leader");
  EXPECT_EQ(j.pod_sets[0].count, 1);
  EXPECT_EQ(j.pod_sets[1].name, "workers");
  EXPECT_EQ(j.pod_sets[1].count, 6);          // 2 child Jobs x parallelism 3
  EXPECT_EQ(j.pod_sets[1].indexed_group, 3);  // JOB_COMPLETION_INDEX 0..2 in each child
  EXPECT_EQ(j.exec().gang_env, GangEnv::kTorch);
  EXPECT_EQ(j.exec().completions.total, 0);

  auto bad = jobs(R"(
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: js, namespace: team-a}
spec:
  replicatedJobs:
  - name: w
    template:
      spec:
        parallelism: 2
        completions: 4
        template: {spec: {containers: [{name: c, resources: {limits: {cpu: 1}}}]}}
)");
  EXPECT_TRUE(any_contains(bad.errors, {"jobs.yaml:10: spec.replicatedJobs[0].template.spec."
                                        "completions: must equal parallelism (2) in a JobSet"}))
      << dump(bad.errors);
}

const char* kGroupPod = R"(
apiVersion: v1
kind: Pod
metadata:
  name: %s
  namespace: team-a
  labels: {kueue.x-k8s.io/queue-name: train, kueue.x-k8s.io/pod-group-name: g}
  annotations: {kueue.x-k8s.io/pod-group-total-count: "%d"}
spec:
  containers: [{name: c, command: [%s], resources: {limits: {nvidia.com/gpu: 1}}}]
)";

std::string group_pod(const char* name, int total, const char* command) {
  char buf[1024];
  std::snprintf(buf, sizeof buf, kGroupPod, name, total, command);
  return buf;
}

TEST(WorkloadKinds, PodGroupIsOneGangOnceComplete) {
  const std::string text = group_pod("driver", 3, "drive") + "---" + group_pod("w-0", 3, "work") +
                           "---" + group_pod("w-1", 3, "work");
  auto out = jobs(text.c_str());
  ASSERT_TRUE(out.errors.empty()) << dump(out.errors);
  ASSERT_EQ(out.jobs.size(), 1u);
  const Job& j = out.jobs[0];
  EXPECT_EQ(j.name, "g");
  ASSERT_EQ(j.pod_sets.size(), 2u);  // two shapes: the driver, the workers
  EXPECT_EQ(j.pod_sets[0].count, 1);
  EXPECT_EQ(j.pod_sets[0].exec().command, (std::vector<std::string>{"drive"}));
  EXPECT_EQ(j.pod_sets[1].count, 2);
  EXPECT_EQ(j.pod_sets[1].name, "w-0");

  const std::string partial = group_pod("w-0", 3, "work") + "---" + group_pod("w-1", 3, "work");
  auto waiting = jobs(partial.c_str());
  EXPECT_TRUE(any_contains(waiting.errors,
                           {"jobs.yaml:6: metadata.labels.kueue.x-k8s.io/pod-group-name: pod "
                            "group \"g\" has 2 of its 3 pods in this submission"}))
      << dump(waiting.errors);
}

TEST(WorkloadKinds, SubmitAndCheckSayTheSameNotes) {
  // One reader for both: `check` (load) and `submit` (parse_jobs) give the same messages.
  const char* job = R"(
apiVersion: batch/v1
kind: Job
metadata: {name: a, namespace: team-a}
spec:
  backoffLimit: 2
  template:
    spec:
      containers: [{name: w, image: x, resources: {limits: {cpu: 1}}}]
)";
  auto submitted = jobs(job);
  auto checked = load({Source{"base.yaml", yaml(kBase)}, Source{"jobs.yaml", yaml(job)}}, {});
  ASSERT_TRUE(checked.ok()) << dump(checked.errors);
  EXPECT_EQ(submitted.notes, checked.notes);
  EXPECT_EQ(submitted.notes.size(), 2u) << dump(submitted.notes);
}

TEST(WorkloadKinds, ImageAndWhetherArgsFollowItsEntrypoint) {
  auto out = jobs(R"(
apiVersion: batch/v1
kind: Job
metadata: {name: a, namespace: team-a, labels: {kueue.x-k8s.io/queue-name: train}}
spec:
  template:
    spec:
      containers:
      - {name: w, image: "reg.example/x:1", args: [hello, world], resources: {limits: {cpu: 1}}}
      - {name: side, image: "reg.example/side:1"}
---
apiVersion: batch/v1
kind: Job
metadata: {name: b, namespace: team-a, labels: {kueue.x-k8s.io/queue-name: train}}
spec:
  template:
    spec:
      containers:
      - {name: w, image: "reg.example/x:1", command: [run], args: [fast], resources: {limits: {cpu: 1}}}
)");
  ASSERT_TRUE(out.errors.empty()) << dump(out.errors);
  ASSERT_EQ(out.jobs.size(), 2u);
  const PodSet& a = out.jobs[0].pod_sets[0];
  EXPECT_EQ(a.exec().image, "reg.example/x:1");  // the first container's
  EXPECT_TRUE(a.exec().image_args_only);
  EXPECT_EQ(out.jobs[0].exec().command, (std::vector<std::string>{"hello", "world"}));
  const PodSet& b = out.jobs[1].pod_sets[0];
  EXPECT_FALSE(b.exec().image_args_only);
  EXPECT_EQ(out.jobs[1].exec().command, (std::vector<std::string>{"run", "fast"}));
  EXPECT_TRUE(any_contains(out.notes, {"containers[1].image"})) << dump(out.notes);
}

}  // namespace
}  // namespace sluice
