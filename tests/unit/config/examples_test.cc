// The manifests in examples/config/ load as they are.
#include <gtest/gtest.h>

#include "config_test_util.h"

namespace sluice {
namespace {

using testing_config::any_contains;
using testing_config::dump;
using testing_config::source_dir;

std::vector<Source> sources(std::initializer_list<const char*> names) {
  std::vector<Source> out;
  for (const char* n : names) {
    auto s = read_source(source_dir() + "/examples/config/" + n);
    EXPECT_TRUE(s.ok()) << s.error();
    if (s.ok()) out.push_back(*s);
  }
  return out;
}

TEST(ConfigExamples, PlaybookLoadsAsIs) {
  auto out = load(sources({"playbook.yaml"}), LoadOptions{});
  ASSERT_TRUE(out.ok()) << dump(out.errors);
  const Config& c = out.config;
  // Queue -> ClusterQueue + LocalQueue "*"; Kueue ClusterQueue as written.
  ASSERT_EQ(c.cluster_queues.size(), 2u);
  EXPECT_EQ(c.cluster_queues[0].name, "training-high-priority");
  EXPECT_DOUBLE_EQ(c.cluster_queues[0].fair_weight, 10);
  EXPECT_EQ(c.cluster_queues[1].name, "gpu-cluster-queue");
  EXPECT_EQ(c.cluster_queues[1].preemption.reclaim_within_cohort, ReclaimPolicy::kLowerPriority);
  // Flavors: "default" (Queue mapping), h100-spot, a100-reserved: all implied, no labels.
  ASSERT_EQ(c.flavors.size(), 3u);
  for (const auto& f : c.flavors) {
    EXPECT_TRUE(f.implied) << f.name;
    EXPECT_TRUE(f.node_labels.empty()) << f.name;
  }
  const auto& spot = c.cluster_queues[1].resource_groups[0].flavors[0];
  EXPECT_EQ(spot.find(kGpu)->nominal, 32000);
  EXPECT_EQ(spot.find(kGpu)->borrowing_limit, 64000);
  EXPECT_EQ(spot.find(kCpu), nullptr);  // covered, not listed: unlimited
  // The Pod: 8 GPUs, queue via the plain `queue` label, priority high (built-in 1000).
  ASSERT_EQ(out.jobs.size(), 1u);
  const Job& pod = out.jobs[0];
  EXPECT_EQ(pod.name, "llama-finetune-batch-42");
  EXPECT_EQ(pod.queue, "training-high-priority");
  EXPECT_EQ(pod.exec().priority_class, "high");
  EXPECT_EQ(pod.priority, 1000);
  EXPECT_EQ(pod.pod_sets.at(0).gpus, 8);
  EXPECT_EQ(pod.id, 1u);
  EXPECT_TRUE(any_contains(out.notes, {"playbook.yaml:", "ignored fields: spec.schedulerName"}))
      << dump(out.notes);
  // Warned: 3 implied flavors, 2 unlimited covered resources, borrowing without cohort,
  // built-in "high".
  EXPECT_EQ(c.warnings.size(), 7u) << dump(c.warnings);
  // ...which strict mode refuses.
  LoadOptions strict;
  strict.strict = true;
  EXPECT_FALSE(load(sources({"playbook.yaml"}), strict).ok());
}

TEST(ConfigExamples, MultiTeamConfigAndJobsLoadCleanly) {
  LoadOptions strict;
  strict.strict = true;  // not even a warning
  auto out = load(sources({"cluster.yaml", "queues.yaml", "jobs.yaml"}), strict);
  ASSERT_TRUE(out.ok()) << dump(out.errors);
  const Config& c = out.config;
  EXPECT_EQ(c.cluster.nodes.size(), 30u);
  EXPECT_EQ(c.cluster.total_gpus(), 216);
  EXPECT_EQ(c.cluster_queues.size(), 4u);
  EXPECT_EQ(c.cohorts.size(), 2u);
  EXPECT_EQ(c.local_queues.size(), 6u);
  EXPECT_EQ(c.policy.gpu_scoring, ScoringPolicy::kFgd);
  EXPECT_EQ(out.jobs.size(), 8u);
  // The jobs file also parses on its own against the loaded config (the server's path).
  auto jobs = parse_jobs(sources({"jobs.yaml"}).at(0), c);
  EXPECT_TRUE(jobs.errors.empty()) << dump(jobs.errors);
  EXPECT_EQ(jobs.jobs.size(), 8u);
  const std::string summary = summarize(c);
  EXPECT_NE(summary.find("cluster \"prod\": 30 nodes"), std::string::npos) << summary;
  EXPECT_NE(summary.find("research (parent org): team-nlp team-vision team-speech"),
            std::string::npos)
      << summary;
}

}  // namespace
}  // namespace sluice
