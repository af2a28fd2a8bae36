// kubectl apply of a Job (server/http/kube_job_apply.h): kubectl's annotation, bounded, and
// what two applied manifests differ in.
#include "server/http/kube_job_apply.h"

#include <gtest/gtest.h>

namespace sluice::server {
namespace kube_job_apply_test {

using nlohmann::json;

json job(const std::string& command, bool suspend) {
  return {{"apiVersion", "batch/v1"},
          {"kind", "Job"},
          {"metadata", {{"name", "x"}, {"labels", {{"kueue.x-k8s.io/queue-name", "q"}}}}},
          {"spec",
           {{"suspend", suspend},
            {"parallelism", 2},
            {"template",
             {{"spec",
               {{"containers", json::array({{{"name", "main"}, {"command", {command}}}})}}}}}}}};
}

TEST(KubeJobApply, ReadsKubectlsAnnotationWithinKubernetesBound) {
  json o = job("a", false);
  EXPECT_FALSE(kube::applied_annotation(o));
  o["metadata"]["annotations"][kube::kLastApplied] = o.dump();
  ASSERT_TRUE(kube::applied_annotation(o));
  EXPECT_EQ(kube::parse_bounded(*kube::applied_annotation(o))["spec"]["parallelism"], 2);
  o["metadata"]["annotations"][kube::kLastApplied] = std::string(kube::kMaxApplied + 1, 'x');
  EXPECT_FALSE(kube::applied_annotation(o));  // longer than Kubernetes allows: not kept
  o["metadata"]["annotations"][kube::kLastApplied] = 5;
  EXPECT_FALSE(kube::applied_annotation(o));
}

TEST(KubeJobApply, ParsesOnlyShallowJson) {
  EXPECT_EQ(kube::parse_bounded(R"({"a":[1]})")["a"][0], 1);
  EXPECT_TRUE(kube::parse_bounded(std::string(10000, '[') + std::string(10000, ']')).is_null());
  EXPECT_TRUE(kube::parse_bounded("{not json").is_null());
}

TEST(KubeJobApply, NamesTheChangedFieldsButSuspendAndTheTemplateWhole) {
  EXPECT_TRUE(kube::applied_changes(job("a", false), job("a", true)).empty());  // suspend
  EXPECT_EQ(kube::applied_changes(job("a", false), job("b", false)),
            std::vector<std::string>{"spec.template"});
  json more = job("a", false);
  more["spec"]["parallelism"] = 3;
  more["metadata"]["labels"]["team"] = "x";
  // Labels and annotations change as kubectl label and annotate change them: not named.
  EXPECT_EQ(kube::applied_changes(job("a", false), more),
            (std::vector<std::string>{"spec.parallelism"}));
  json annotated = job("a", false);
  annotated["metadata"]["annotations"][kube::kLastApplied] = "anything";
  annotated["metadata"]["annotations"]["note"] = "new";
  EXPECT_TRUE(kube::applied_changes(job("a", false), annotated).empty());
}

}  // namespace kube_job_apply_test
}  // namespace sluice::server
