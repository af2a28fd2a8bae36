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

TEST(KubeJobApply, LeavesEachKindsOwnSuspendFlagToThePatch) {
  const json kept = {{"spec", {{"runPolicy", {{"suspend", false}, {"backoffLimit", 1}}}}}};
  json next = kept;
  next["spec"]["runPolicy"]["suspend"] = true;
  EXPECT_TRUE(kube::applied_changes(kept, next, "spec.runPolicy.suspend").empty());
  EXPECT_EQ(kube::applied_changes(kept, next), std::vector<std::string>{"spec.runPolicy.suspend"});
  next["spec"]["runPolicy"]["backoffLimit"] = 2;
  EXPECT_EQ(kube::applied_changes(kept, next, "spec.runPolicy.suspend"),
            std::vector<std::string>{"spec.runPolicy.backoffLimit"});
}

TEST(KubeJobUpdate, NamesTheFieldsTheBodyChangesAndKeepsWhatItLeavesOut) {
  const json shown = job("a", false)["spec"];
  json body = shown;
  EXPECT_TRUE(kube::updated_fields(shown, body, "spec.suspend").empty());
  body["suspend"] = true;  // the suspend flag is the change's, not a refused field
  EXPECT_TRUE(kube::updated_fields(shown, body, "spec.suspend").empty());
  body.erase("parallelism");  // left out: keeps its value
  EXPECT_TRUE(kube::updated_fields(shown, body, "spec.suspend").empty());
  body["parallelism"] = "2";  // a quantity written as a string is the same
  EXPECT_TRUE(kube::updated_fields(shown, body, "spec.suspend").empty());
  body["parallelism"] = 3;
  body["template"]["spec"]["containers"][0]["command"][0] = "b";
  EXPECT_EQ(kube::updated_fields(shown, body, "spec.suspend"),
            (std::vector<std::string>{"spec.parallelism",
                                      "spec.template.spec.containers[0].command[0]"}));
  body = shown;
  body["template"]["spec"]["containers"].push_back({{"name", "side"}});  // another length
  EXPECT_EQ(kube::updated_fields(shown, body, "spec.suspend"),
            std::vector<std::string>{"spec.template.spec.containers"});
  body = shown;
  body["backoffLimit"] = 6;  // a field the job does not show
  EXPECT_EQ(kube::updated_fields(shown, body, "spec.suspend"),
            std::vector<std::string>{"spec.backoffLimit"});
}

TEST(KubeJobUpdate, ReplacesTheJobsOwnLabelsButLeavesSluicesShownOnes) {
  const json kept = {{"team", "a"}, {"stale", "x"}};
  const json shown = {{"team", "a"}, {"stale", "x"}, {"sluice.dev/job-id", "7"}};
  const json body = {{"team", "b"}, {"sluice.dev/job-id", "7"}, {"new", "y"}};
  const kube::MapPatch p = kube::replaced_map(kept, shown, body);
  const kube::MapPatch want = {{"stale", std::nullopt}, {"new", "y"}, {"team", "b"}};
  EXPECT_EQ(p, want);
  // No labels in the body: every one of the job's own is removed; sluice's stay.
  EXPECT_EQ(kube::replaced_map(kept, shown, json()),
            (kube::MapPatch{{"stale", std::nullopt}, {"team", std::nullopt}}));
  // sluice's own are left whatever the body says (the job's state may have moved on since it
  // was read); another label the job shows but does not keep is a change.
  EXPECT_TRUE(kube::replaced_map(json::object(), shown, {{"sluice.dev/job-id", "8"}}).empty());
  EXPECT_EQ(kube::replaced_map(json::object(), {{"a", "1"}}, {{"a", "2"}}),
            (kube::MapPatch{{"a", "2"}}));
}

TEST(KubeJobUpdate, FindsTheSuspendFlagWhereTheKindKeepsIt) {
  const kube::JobShape batch, kubeflow{.run_policy = true};
  EXPECT_EQ(kube::suspend_in(job("a", true), batch), json(true));
  EXPECT_FALSE(kube::suspend_in(job("a", true), kubeflow));
  EXPECT_EQ(kube::suspend_in({{"spec", {{"runPolicy", {{"suspend", false}}}}}}, kubeflow),
            json(false));
  EXPECT_FALSE(kube::suspend_in({{"spec", {{"runPolicy", 3}}}}, kubeflow));
  EXPECT_FALSE(kube::suspend_in(json::array(), batch));
}

}  // namespace kube_job_apply_test
}  // namespace sluice::server
