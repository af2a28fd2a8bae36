// A Job's PATCH body through the Kubernetes API (server/http/kube_patch.h): spec.suspend in a
// merge or strategic merge patch, metadata.labels and annotations, and every other field
// refused by name.
#include "server/http/kube_patch.h"

#include <gtest/gtest.h>

namespace sluice::server {
namespace kube_patch_test {

constexpr const char* kMerge = "application/merge-patch+json";
constexpr const char* kStrategic = "application/strategic-merge-patch+json";

TEST(KubeJobPatch, ReadsSpecSuspendInAMergeOrStrategicPatch) {
  kube::PatchRefusal why;
  auto p = kube::read_job_patch(kMerge, R"({"spec":{"suspend":true}})", "x", &why);
  ASSERT_TRUE(p) << why.message;
  EXPECT_EQ(p->suspend, true);
  p = kube::read_job_patch("application/strategic-merge-patch+json; charset=utf-8",
                           R"({"spec":{"suspend":false}})", "x", &why);
  ASSERT_TRUE(p) << why.message;
  EXPECT_EQ(p->suspend, false);
  p = kube::read_job_patch(kMerge, R"({"spec":{"suspend":null}})", "x", &why);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->suspend, false);  // merge patch's null deletes: the default, false
  p = kube::read_job_patch(
      kStrategic, R"({"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"x"}})", "x", &why);
  ASSERT_TRUE(p) << why.message;
  EXPECT_FALSE(p->suspend);  // nothing to change
}

TEST(KubeJobPatch, RefusesOtherFieldsByNameAndOtherPatchTypes) {
  kube::PatchRefusal why;
  EXPECT_FALSE(kube::read_job_patch(
      kMerge, R"({"spec":{"suspend":true,"parallelism":2},"metadata":{"finalizers":["a"]}})", "x",
      &why));
  EXPECT_EQ(why.code, 422);
  ASSERT_EQ(why.causes.size(), 2u);
  EXPECT_EQ(why.causes[0].first, "metadata.finalizers");
  EXPECT_EQ(why.causes[1].first, "spec.parallelism");
  // Labels are a map of strings (null removes one).
  EXPECT_FALSE(kube::read_job_patch(kMerge, R"({"metadata":{"labels":{"a":1}}})", "x", &why));
  EXPECT_EQ(why.code, 422);
  EXPECT_FALSE(kube::read_job_patch(kMerge, R"({"metadata":{"labels":null}})", "x", &why));
  EXPECT_EQ(why.code, 422);
  EXPECT_FALSE(kube::read_job_patch(kMerge, R"({"metadata":{"name":"other"}})", "x", &why));
  EXPECT_EQ(why.code, 422);
  EXPECT_FALSE(kube::read_job_patch(kMerge, R"({"spec":{"suspend":"yes"}})", "x", &why));
  EXPECT_EQ(why.code, 422);
  EXPECT_FALSE(kube::read_job_patch("application/json-patch+json",
                                    R"([{"op":"replace","path":"/spec/suspend","value":true}])",
                                    "x", &why));
  EXPECT_EQ(why.code, 415);
  EXPECT_FALSE(kube::read_job_patch("application/apply-patch+yaml", "spec: {}", "x", &why));
  EXPECT_EQ(why.code, 415);
  EXPECT_FALSE(kube::read_job_patch(kMerge, "[1]", "x", &why));
  EXPECT_EQ(why.code, 400);
  EXPECT_FALSE(kube::read_job_patch(kMerge, "{\"spec\":", "x", &why));
  EXPECT_EQ(why.code, 400);
  EXPECT_FALSE(
      kube::read_job_patch(kMerge, std::string(100, '[') + std::string(100, ']'), "x", &why));
  EXPECT_EQ(why.code, 400);
}

TEST(KubeJobPatch, ReadsLabelsAndAnnotationsAsKubectlLabelSendsThem) {
  kube::PatchRefusal why;
  // kubectl label job x team=a stale-: a merge patch of metadata.labels.
  auto p = kube::read_job_patch(kMerge, R"({"metadata":{"labels":{"team":"a","stale":null}}})", "x",
                                &why);
  ASSERT_TRUE(p) << why.message;
  EXPECT_FALSE(p->suspend);
  ASSERT_EQ(p->labels.size(), 2u);
  EXPECT_EQ(p->labels[0], (std::pair<std::string, std::optional<std::string>>{"stale", {}}));
  EXPECT_EQ(p->labels[1], (std::pair<std::string, std::optional<std::string>>{"team", "a"}));
  p = kube::read_job_patch(
      kStrategic,
      R"({"metadata":{"name":"x","annotations":{"note":"hi"}},"spec":{"suspend":true}})", "x",
      &why);
  ASSERT_TRUE(p) << why.message;
  EXPECT_EQ(p->suspend, true);
  ASSERT_EQ(p->annotations.size(), 1u);
  EXPECT_EQ(p->annotations[0].second, "hi");
  // A Node's labels are not changed through a patch.
  EXPECT_FALSE(kube::read_node_patch(kMerge, R"({"metadata":{"labels":{"a":"b"}}})", "n0", &why));
  EXPECT_EQ(why.code, 422);
  ASSERT_EQ(why.causes.size(), 1u);
  EXPECT_EQ(why.causes[0].first, "metadata.labels.a");
}

TEST(KubeJobPatch, ReadsEachKindsSuspendFlagWhereItKeepsIt) {
  kube::PatchRefusal why;
  const kube::JobShape pytorch{
      .api_version = "kubeflow.org/v1", .kind = "PyTorchJob", .run_policy = true};
  auto p = kube::read_job_patch(kMerge, R"({"spec":{"runPolicy":{"suspend":true}}})", "x", &why,
                                pytorch);
  ASSERT_TRUE(p) << why.message;
  EXPECT_EQ(p->suspend, true);
  // spec.suspend is a batch/v1 Job's (and a JobSet's), not a PyTorchJob's; a PyTorchJob's other
  // fields are named.
  EXPECT_FALSE(kube::read_job_patch(kMerge, R"({"spec":{"suspend":true}})", "x", &why, pytorch));
  EXPECT_EQ(why.code, 422);
  ASSERT_EQ(why.causes.size(), 1u);
  EXPECT_EQ(why.causes[0].first, "spec.suspend");
  EXPECT_FALSE(kube::read_job_patch(
      kMerge, R"({"spec":{"runPolicy":{"suspend":false,"backoffLimit":3},"nprocPerNode":"2"}})",
      "x", &why, pytorch));
  ASSERT_EQ(why.causes.size(), 2u);
  EXPECT_EQ(why.causes[0].first, "spec.nprocPerNode");
  EXPECT_EQ(why.causes[1].first, "spec.runPolicy.backoffLimit");
  EXPECT_NE(why.message.find("PyTorchJob's spec.runPolicy.suspend"), std::string::npos)
      << why.message;
  // The kind's apiVersion and kind may be repeated; another's are a change.
  const kube::JobShape jobset{.api_version = "jobset.x-k8s.io/v1alpha2", .kind = "JobSet"};
  EXPECT_TRUE(kube::read_job_patch(
      kMerge,
      R"({"apiVersion":"jobset.x-k8s.io/v1alpha2","kind":"JobSet","spec":{"suspend":true}})", "x",
      &why, jobset));
  EXPECT_FALSE(
      kube::read_job_patch(kMerge, R"({"kind":"Job","spec":{"suspend":true}})", "x", &why, jobset));
}

TEST(KubeJobPatch, TakesAResourceVersionAsAPrecondition) {
  kube::PatchRefusal why;
  auto p = kube::read_job_patch(kMerge, R"({"metadata":{"resourceVersion":"17"}})", "x", &why);
  ASSERT_TRUE(p) << why.message;
  EXPECT_EQ(p->resource_version, "17");
  p = kube::read_job_patch(kMerge, R"({"spec":{"suspend":true}})", "x", &why);
  ASSERT_TRUE(p);
  EXPECT_FALSE(p->resource_version);
  // Not a string: a field sluice does not change, as before.
  EXPECT_FALSE(kube::read_job_patch(kMerge, R"({"metadata":{"resourceVersion":17}})", "x", &why));
  EXPECT_EQ(why.code, 422);
  // A Node's patch takes none.
  EXPECT_FALSE(
      kube::read_node_patch(kMerge, R"({"metadata":{"resourceVersion":"17"}})", "n0", &why));
}

TEST(KubeNodePatch, ReadsSpecUnschedulableAsCordonAndUncordonSendIt) {
  kube::PatchRefusal why;
  auto p = kube::read_node_patch(kStrategic, R"({"spec":{"unschedulable":true}})", "n0", &why);
  ASSERT_TRUE(p) << why.message;
  EXPECT_EQ(p->unschedulable, true);
  p = kube::read_node_patch(kStrategic, R"({"spec":{"unschedulable":null}})", "n0", &why);
  ASSERT_TRUE(p) << why.message;
  EXPECT_EQ(p->unschedulable, false);  // kubectl uncordon
  EXPECT_FALSE(kube::read_node_patch(
      kStrategic, R"({"spec":{"unschedulable":true,"taints":[{"key":"a"}]}})", "n0", &why));
  EXPECT_EQ(why.code, 422);
  ASSERT_EQ(why.causes.size(), 1u);
  EXPECT_EQ(why.causes[0].first, "spec.taints");
  // A Job's field is not a Node's.
  EXPECT_FALSE(kube::read_node_patch(kMerge, R"({"spec":{"suspend":true}})", "n0", &why));
  EXPECT_EQ(why.code, 422);
}

}  // namespace kube_patch_test
}  // namespace sluice::server
