// Error messages (file:line: field.path: what is wrong), strict mode, and garbage that must not
// crash.
#include <gtest/gtest.h>

#include <random>

#include "config_test_util.h"

namespace sluice {
namespace {

using testing_config::any_contains;
using testing_config::dump;
using testing_config::has;
using testing_config::load_one;
using testing_config::yaml;

TEST(ConfigErrors, NegativeNominalQuotaExactMessage) {
  auto out = load_one(yaml(R"(
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata:
  name: team-a
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: h100
      resources:
      - {name: nvidia.com/gpu, nominalQuota: 8}
    - name: a100
      resources: [{name: nvidia.com/gpu, nominalQuota: "-4"}]
)"),
                      "queues.yaml");
  EXPECT_TRUE(has(out.errors,
                  "queues.yaml:14: spec.resourceGroups[0].flavors[1].resources[0]."
                  "nominalQuota: \"-4\" must not be negative"))
      << dump(out.errors);
}

TEST(ConfigErrors, UnknownFieldListsKnownOnes) {
  auto out = load_one(yaml(R"(
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: q}
spec:
  namespaceSelector: {}
  resourceGroupz: []
)"));
  EXPECT_TRUE(has(out.errors,
                  "test.yaml:6: spec.resourceGroupz: unknown field (known: cohort, "
                  "namespaceSelector, queueingStrategy, resourceGroups, preemption, "
                  "fairSharing, flavorFungibility, concurrentAdmissionPolicy, admissionScope, "
                  "sluice, cohortName)"))
      << dump(out.errors);
}

TEST(ConfigErrors, UnknownFieldsInEveryKind) {
  auto out = load_one(yaml(R"(
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: f, colour: red}
spec: {nodeLabelz: {}}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: l}
spec: {clusterQueue: q, sluice: {maxPendingz: 1}}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: WorkloadPriorityClass
metadata: {name: p}
value: 1
spec: {}
---
apiVersion: sluice.dev/v1alpha1
kind: Job
metadata: {name: j}
spec: {gpus: 1, gpuz: 2}
---
apiVersion: sluice.dev/v1alpha1
kind: Cluster
metadata: {name: c}
spec: {nodes: [{name: n, cpu: 1, memory: 1Gi, gpu: 8}]}
)"));
  const auto& e = out.errors;
  EXPECT_TRUE(any_contains(e, {"test.yaml:3: metadata.colour: unknown field"})) << dump(e);
  EXPECT_TRUE(any_contains(e, {"test.yaml:4: spec.nodeLabelz: unknown field (known: nodeLabels, "
                               "topologyName, nodeTaints)"}));
  EXPECT_TRUE(any_contains(e, {"test.yaml:9: spec.sluice.maxPendingz: unknown field (known: "
                               "maxPending)"}));
  EXPECT_TRUE(any_contains(e, {"test.yaml:15: spec: unknown field (known: apiVersion, kind, "
                               "metadata, value, description, status)"}));
  EXPECT_TRUE(any_contains(e, {"test.yaml:20: spec.gpuz: unknown field"}));
  EXPECT_TRUE(any_contains(e, {"test.yaml:25: spec.nodes[0].gpu: unknown field"}));
}

TEST(ConfigErrors, UnknownApiVersionAndKind) {
  auto out = load_one(yaml(R"(
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueues
metadata: {name: q}
---
apiVersion: example.com/v1
kind: Widget
---
apiVersion: kueue.x-k8s.io/v1alpha1
kind: ClusterQueue
---
kind: Pod
---
- just
- a list
)"));
  const auto& e = out.errors;
  EXPECT_TRUE(has(e,
                  "test.yaml:2: kind: unknown kind \"ClusterQueues\" for apiVersion "
                  "kueue.x-k8s.io/v1beta1 (known: ResourceFlavor, ClusterQueue, LocalQueue, "
                  "WorkloadPriorityClass, Cohort, Topology)"))
      << dump(e);
  EXPECT_TRUE(any_contains(e, {"test.yaml:5: apiVersion: unknown apiVersion \"example.com/v1\" "
                               "(known: kueue.x-k8s.io/v1beta1, kueue.x-k8s.io/v1alpha1, "}));
  EXPECT_TRUE(has(e,
                  "test.yaml:8: apiVersion: kind ClusterQueue needs apiVersion "
                  "kueue.x-k8s.io/v1beta1 or kueue.x-k8s.io/v1beta2, not "
                  "\"kueue.x-k8s.io/v1alpha1\""));
  EXPECT_TRUE(has(e, "test.yaml:11: apiVersion: required field missing"));
  EXPECT_TRUE(has(e, "test.yaml:13: a document must be a map with apiVersion and kind"));
}

TEST(ConfigErrors, MalformedYamlGivesParserMessageAndLine) {
  auto out = load_one("apiVersion: v1\nkind: Pod\nmetadata: {name: [unclosed\n", "bad.yaml");
  ASSERT_EQ(out.errors.size(), 1u) << dump(out.errors);
  EXPECT_EQ(out.errors[0].rfind("bad.yaml:", 0), 0u) << out.errors[0];
  EXPECT_NE(out.errors[0].find("malformed YAML: "), std::string::npos) << out.errors[0];
  auto tab = load_one("a: b\n\tc: d\n", "tab.yaml");
  EXPECT_TRUE(any_contains(tab.errors, {"tab.yaml:2: malformed YAML"})) << dump(tab.errors);
}

// yaml-cpp 0.7's LoadAll never returns on a token that starts no node (yaml_documents.h): the
// loader reports it instead (found by tests/fuzz, fuzz_config_load and fuzz_jobs_json).
TEST(ConfigErrors, TokenThatStartsNoNodeIsAnErrorNotAHang) {
  auto out = load_one(",\"gpus\":1", "comma.yaml");
  EXPECT_TRUE(any_contains(out.errors, {"comma.yaml:1: malformed YAML: unexpected token"}))
      << dump(out.errors);
  auto later = load_one("apiVersion: v1\nkind: Pod\n---\n- a\n,\n", "later.yaml");
  EXPECT_TRUE(any_contains(later.errors, {"later.yaml:5: malformed YAML"})) << dump(later.errors);
  // Empty documents still load as before: `---` twice is two empty documents, no error.
  EXPECT_TRUE(load_one("---\n---\n", "empty.yaml").errors.empty());
  Config config;
  auto jobs = parse_jobs({"body", ","}, config);
  EXPECT_TRUE(any_contains(jobs.errors, {"body:1: malformed YAML"})) << dump(jobs.errors);
}

TEST(ConfigErrors, WrongTypesAndBadValues) {
  auto out = load_one(yaml(R"(
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: q}
spec:
  cohort: [a, b]
  namespaceSelector: {matchExpressions: [{key: team, operator: In, values: [a]}]}
  queueingStrategy: FIFO
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: f
      resources:
      - {name: cpu, nominalQuota: 1}
      - {name: nvidia.com/gpu, nominalQuota: lots, lendingLimit: 2}
  preemption: {withinClusterQueue: Sometimes}
  sluice: {preemptible: maybe, defaultWalltime: soon}
)"));
  const auto& e = out.errors;
  EXPECT_TRUE(has(e, "test.yaml:5: spec.cohort: must be a string")) << dump(e);
  EXPECT_TRUE(has(e,
                  "test.yaml:6: spec.namespaceSelector.matchExpressions: not supported (use "
                  "matchLabels)"));
  EXPECT_TRUE(has(e,
                  "test.yaml:7: spec.queueingStrategy: \"FIFO\" must be one of StrictFIFO, "
                  "BestEffortFIFO"));
  EXPECT_TRUE(has(e,
                  "test.yaml:13: spec.resourceGroups[0].flavors[0].resources[0].name: \"cpu\" "
                  "is not in coveredResources (nvidia.com/gpu)"));
  EXPECT_TRUE(has(e,
                  "test.yaml:14: spec.resourceGroups[0].flavors[0].resources[1].nominalQuota: "
                  "\"lots\" is not a quantity (e.g. 8, 500m, 64Gi)"));
  EXPECT_TRUE(has(e,
                  "test.yaml:15: spec.preemption.withinClusterQueue: \"Sometimes\" must be one "
                  "of Never, LowerPriority, LowerOrNewerEqualPriority"));
  EXPECT_TRUE(has(e, "test.yaml:16: spec.sluice.preemptible: \"maybe\" must be true or false"));
  EXPECT_TRUE(has(e,
                  "test.yaml:16: spec.sluice.defaultWalltime: \"soon\" is not a duration (e.g. "
                  "90s, 30m, 1h)"));
}

TEST(ConfigErrors, LimitsAndGroups) {
  auto out = load_one(yaml(R"(
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: q}
spec:
  cohort: c
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu, nvidia.com/gpu]
    flavors:
    - {name: f, resources: [{name: nvidia.com/gpu, nominalQuota: 4, lendingLimit: 8}]}
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - {name: f, resources: [{name: nvidia.com/gpu}]}
  preemption: {borrowWithinCohort: {policy: LowerPriority}}
)"));
  const auto& e = out.errors;
  EXPECT_TRUE(has(e,
                  "test.yaml:8: spec.resourceGroups[0].coveredResources[1]: \"nvidia.com/gpu\" "
                  "is listed twice"))
      << dump(e);
  EXPECT_TRUE(has(e,
                  "test.yaml:10: spec.resourceGroups[0].flavors[0].resources[0].lendingLimit: "
                  "\"8\" must not exceed nominalQuota (4)"));
  EXPECT_TRUE(has(e,
                  "test.yaml:11: spec.resourceGroups[1].coveredResources[0]: "
                  "\"nvidia.com/gpu\" is already covered by resourceGroups[0] (a resource "
                  "belongs to one group)"));
  EXPECT_TRUE(has(e,
                  "test.yaml:13: spec.resourceGroups[1].flavors[0].name: flavor \"f\" is "
                  "already used by resourceGroups[0]"));
  EXPECT_TRUE(has(e,
                  "test.yaml:13: spec.resourceGroups[1].flavors[0].resources[0].nominalQuota: "
                  "required field missing"));
  EXPECT_TRUE(has(e,
                  "test.yaml:14: spec.preemption.borrowWithinCohort: policy LowerPriority "
                  "requires reclaimWithinCohort other than Never"));
}

TEST(ConfigErrors, DuplicatesAndUnknownReferences) {
  auto out = load_one(yaml(R"(
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: q}
spec: {namespaceSelector: {}}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: q}
spec: {namespaceSelector: {}}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: f}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: f}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: l, namespace: ns}
spec: {clusterQueue: missing}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: l2, namespace: ns}
spec: {clusterQueue: q}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: l2, namespace: ns}
spec: {clusterQueue: q}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: q3}
spec: {namespaceSelector: {}, sluice: {defaultPriorityClass: gold}}
)"));
  const auto& e = out.errors;
  EXPECT_TRUE(has(e,
                  "test.yaml:8: metadata.name: duplicate ClusterQueue \"q\" (first defined at "
                  "test.yaml:3)"))
      << dump(e);
  EXPECT_TRUE(has(e,
                  "test.yaml:17: metadata.name: duplicate ResourceFlavor \"f\" (first defined "
                  "at test.yaml:13)"));
  EXPECT_TRUE(has(e,
                  "test.yaml:22: spec.clusterQueue: ClusterQueue \"missing\" not found "
                  "(defined: q, q3)"));
  EXPECT_TRUE(has(e,
                  "test.yaml:31: metadata.name: duplicate LocalQueue \"ns/l2\" (first defined "
                  "at test.yaml:26)"));
  EXPECT_TRUE(has(e,
                  "test.yaml:37: spec.sluice.defaultPriorityClass: unknown priority class "
                  "\"gold\" (defined: none defined; built-in: low, normal, medium, high, "
                  "critical)"));
}

TEST(ConfigErrors, CohortCycle) {
  auto out = load_one(yaml(R"(
apiVersion: kueue.x-k8s.io/v1alpha1
kind: Cohort
metadata: {name: a}
spec: {parent: b}
---
apiVersion: kueue.x-k8s.io/v1alpha1
kind: Cohort
metadata: {name: b}
spec: {parent: a}
---
apiVersion: kueue.x-k8s.io/v1alpha1
kind: Cohort
metadata: {name: self}
spec: {parent: self}
)"));
  EXPECT_TRUE(has(out.errors, "test.yaml:4: spec.parent: cohort cycle: a -> b -> a"))
      << dump(out.errors);
  EXPECT_TRUE(has(out.errors, "test.yaml:14: spec.parent: cohort cycle: self -> self"));
  EXPECT_EQ(out.errors.size(), 2u) << dump(out.errors);  // each cycle reported once
  // Broken where reported, so walking parents always ends.
  for (const auto& c : out.config.cohorts) {
    std::optional<CohortId> p = c.parent;
    for (int steps = 0; p; ++steps) {
      ASSERT_LT(steps, 10);
      p = out.config.cohorts[static_cast<size_t>(*p)].parent;
    }
  }
}

TEST(ConfigErrors, TooManyResourceNames) {
  std::string covered;
  for (int i = 0; i < 20; ++i) covered += (i ? ", " : "") + ("example.com/r" + std::to_string(i));
  auto out = load_one(
      "apiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\nmetadata: {name: q}\n"
      "spec:\n  namespaceSelector: {}\n  resourceGroups:\n  - coveredResources: [" +
      covered + "]\n    flavors: [{name: f, resources: []}]\n");
  EXPECT_TRUE(any_contains(out.errors, {"test.yaml:7: spec.resourceGroups[0].coveredResources[13]: "
                                        "too many distinct resource names: \"example.com/r13\" "
                                        "would be number 17 (at most 16: nvidia.com/gpu, cpu, "
                                        "memory, example.com/r0"}))
      << dump(out.errors);
}

TEST(ConfigErrors, DuplicateKeys) {
  auto out = load_one(yaml(R"(
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: f}
spec:
  nodeLabels: {a: b}
  nodeLabels: {a: c}
)"));
  EXPECT_TRUE(has(out.errors, "test.yaml:6: spec.nodeLabels: duplicate key (first at line 5)"))
      << dump(out.errors);
}

TEST(ConfigErrors, StrictTurnsWarningsIntoErrors) {
  const std::string text = yaml(R"(
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: q}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors: [{name: undefined-flavor, resources: [{name: nvidia.com/gpu, nominalQuota: 1}]}]
)");
  auto lenient = load_one(text);
  EXPECT_TRUE(lenient.ok()) << dump(lenient.errors);
  ASSERT_EQ(lenient.config.warnings.size(), 1u);
  auto strict = load_one(text, "test.yaml", /*strict=*/true);
  EXPECT_FALSE(strict.ok());
  EXPECT_TRUE(has(strict.errors, lenient.config.warnings[0] + " (strict)")) << dump(strict.errors);
}

TEST(ConfigErrors, ErrorsAreCollectedUpToABound) {
  std::string text;
  for (int i = 0; i < 300; ++i) text += "apiVersion: v9\nkind: Nothing\n---\n";
  auto out = load_one(text);
  // 100 kept, then one line saying how many more.
  ASSERT_EQ(out.errors.size(), 101u);
  EXPECT_EQ(out.errors.back(), "... more errors not shown: stopped after 100 (fix these first)");
}

TEST(ConfigErrors, ReadSourceNamesThePath) {
  auto missing = read_source("/nonexistent/dir/queues.yaml");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().rfind("/nonexistent/dir/queues.yaml: cannot read: ", 0), 0u)
      << missing.error();
}

TEST(ConfigErrors, IgnoreKinds) {
  LoadOptions options;
  options.ignore_kinds = {"Deployment"};
  auto out = load({Source{"x.yaml", "apiVersion: apps/v1\nkind: Deployment\nspec: {}\n"}}, options);
  EXPECT_TRUE(out.ok()) << dump(out.errors);
}

// 1,000 lines of garbage of several kinds: every run returns (errors, no crash, no exception).
TEST(ConfigErrors, GarbageNeverCrashes) {
  const uint32_t seed = 20240611;
  std::mt19937 rng(seed);
  const std::vector<std::string> tokens = {
      "apiVersion: kueue.x-k8s.io/v1beta1",
      "kind: ClusterQueue",
      "kind: Pod",
      "kind: Cluster",
      "apiVersion: sluice.dev/v1alpha1",
      "apiVersion: v1",
      "metadata:",
      "  name: x",
      "spec:",
      "  resourceGroups:",
      "  - coveredResources: [nvidia.com/gpu]",
      "    flavors:",
      "    - name: f",
      "      resources: [{name: nvidia.com/gpu, nominalQuota: 8}]",
      "---",
      "- ",
      "  nodes: [{name: n, cpu: 1, memory: 1Gi, gpus: {count: 99999}}]",
      "{",
      "}",
      "[",
      "]",
      "&a [*a]",
      "*a",
      "? [complex]: key",
      "'",
      "\"",
      "\t",
      "%YAML 1.2",
      "!!binary x",
      ":",
      "- -",
      "  containers: [{resources: {limits: {nvidia.com/gpu: 1e30}}}]",
      "spec: {gpus: -0}",
      "<<: *a",
      "  topology: {rack: {every: 0}}",
      "value: 99999999999999999999"};
  for (int variant = 0; variant < 6; ++variant) {
    std::string text;
    for (int line = 0; line < 1000; ++line) {
      switch (variant) {
        case 0:  // random bytes
          for (int k = 0; k < 40; ++k) text += static_cast<char>(rng() % 256);
          break;
        case 1:  // random YAML-ish tokens
        case 2:
          text += tokens[rng() % tokens.size()];
          break;
        case 3:  // deep nesting
          text += std::string(200, '[');
          break;
        case 4:  // a long multi-document stream of near-valid pieces
          text += tokens[static_cast<size_t>(line) % tokens.size()];
          break;
        default:  // deep block nesting
          text += std::string(static_cast<size_t>(line % 200), ' ') + "- a:";
      }
      text += '\n';
    }
    LoadOutput out;
    ASSERT_NO_THROW(out = load_one(text, "garbage.yaml"))
        << "seed " << seed << " variant " << variant;
    EXPECT_LE(out.errors.size(), 101u);
    JobsOutput jobs;
    ASSERT_NO_THROW(jobs = parse_jobs(Source{"garbage.yaml", text}, out.config))
        << "seed " << seed << " variant " << variant;
    (void)summarize(out.config);
  }
}

}  // namespace
}  // namespace sluice
