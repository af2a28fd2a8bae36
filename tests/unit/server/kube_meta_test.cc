// A Job's own Kubernetes metadata (server/http/kube_meta.h): Kubernetes' rules for label keys
// and values and the annotations' size, what a create keeps, what kubectl label's patch
// changes, and the objects built from a record that carries it.
#include "server/http/kube_meta.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "server/http/kube.h"

namespace sluice::server {
namespace kube_meta_test {

using nlohmann::json;

// A job in namespace default with one pod set of `count` pods, in its last run.
JobRecord record(JobId id, const char* name, const char* pod_set, int32_t count) {
  JobRecord r;
  r.job.id = id;
  r.job.name = name;
  r.job.namespace_ = "default";
  PodSet ps;
  ps.name = pod_set;
  ps.count = count;
  r.job.pod_sets = {ps};
  r.pods.resize(static_cast<size_t>(count));
  return r;
}

TEST(KubeMeta, LabelKeysAndValuesAsKubernetesChecksThem) {
  const std::vector<std::string> valid = {
      "team", "a.b_c-d",           "example.com/team", "kueue.x-k8s.io/queue-name",
      "A1",   std::string(63, 'a')};
  for (const auto& ok : valid) EXPECT_EQ(kube::label_key_error(ok), "") << ok;
  EXPECT_NE(kube::label_key_error(""), "");
  EXPECT_NE(kube::label_key_error("-team"), "");
  EXPECT_NE(kube::label_key_error("team!"), "");
  EXPECT_NE(kube::label_key_error("a/b/c"), "");
  EXPECT_NE(kube::label_key_error("/team"), "");
  EXPECT_NE(kube::label_key_error("Example.com/team"), "");  // the prefix is lower case
  EXPECT_NE(kube::label_key_error("example..com/team"), "");
  EXPECT_NE(kube::label_key_error(std::string(64, 'a')), "");
  EXPECT_NE(kube::label_key_error(std::string(254, 'a') + "/x"), "");
  EXPECT_EQ(kube::label_key_error(std::string(63, 'a') + "/x"), "");
  EXPECT_EQ(kube::label_value_error(""), "");
  EXPECT_EQ(kube::label_value_error("v1.2_3-x"), "");
  EXPECT_NE(kube::label_value_error("bad value"), "");
  EXPECT_NE(kube::label_value_error("x-"), "");
  EXPECT_NE(kube::label_value_error(std::string(64, 'a')), "");
  EXPECT_NE(kube::label_value_error("a/b"), "");
}

TEST(KubeMeta, ACreateKeepsTheJobsAndItsTemplatesMetadata) {
  json doc = json::parse(R"({"apiVersion":"batch/v1","kind":"Job",
    "metadata":{"name":"x","labels":{"team":"a","kueue.x-k8s.io/queue-name":"q"},
                "annotations":{"note":"free text: anything"}},
    "spec":{"template":{"metadata":{"labels":{"role":"worker"}},"spec":{}}}})");
  kube::MetaCauses causes;
  auto kept = kube::read_job_meta(doc, &causes);
  ASSERT_TRUE(kept);
  EXPECT_EQ(*kept, R"({"annotations":{"note":"free text: anything"},)"
                   R"("labels":{"kueue.x-k8s.io/queue-name":"q","team":"a"},)"
                   R"("template":{"labels":{"role":"worker"}}})");
  EXPECT_EQ(kube::check_kept_meta(*kept), *kept);  // what the store reads back
  const kube::KeptMeta m = kube::kept_meta(*kept);
  EXPECT_EQ(m.labels["team"], "a");
  EXPECT_EQ(m.pod_labels["role"], "worker");
  EXPECT_TRUE(m.pod_annotations.empty());
  // Nothing to keep: "".
  EXPECT_EQ(kube::read_job_meta(json::parse(R"({"metadata":{"name":"x"}})"), &causes), "");
  EXPECT_TRUE(causes.empty());
}

TEST(KubeMeta, ACreateWithBadMetadataIsRefusedWithACausePerField) {
  kube::MetaCauses causes;
  json doc = {
      {"metadata", {{"labels", {{"team", "a b"}, {"-k", "v"}, {"n", 1}}}, {"annotations", "x"}}},
      {"spec", {{"template", {{"metadata", {{"labels", {{"ok", std::string(64, 'v')}}}}}}}}}};
  EXPECT_FALSE(kube::read_job_meta(doc, &causes));
  ASSERT_EQ(causes.size(), 5u);
  EXPECT_EQ(causes[0].first, "metadata.labels");
  EXPECT_NE(causes[0].second.find("Invalid value: \"-k\""), std::string::npos) << causes[0].second;
  EXPECT_EQ(causes[3].first, "metadata.annotations");
  EXPECT_EQ(causes[4].first, "spec.template.metadata.labels");
  EXPECT_NE(causes[4].second.find("no more than 63"), std::string::npos);
  // Annotations: 256 KiB in all, keys and values.
  causes.clear();
  doc = {{"metadata",
          {{"annotations",
            {{"a", std::string(kube::kMaxAnnotationBytes / 2, 'x')},
             {"b", std::string(kube::kMaxAnnotationBytes / 2, 'x')}}}}}};
  EXPECT_FALSE(kube::read_job_meta(doc, &causes));
  ASSERT_EQ(causes.size(), 1u);
  EXPECT_EQ(causes[0].second, "Too long: must have at most 262144 bytes");
  doc["metadata"]["annotations"]["b"] = std::string(kube::kMaxAnnotationBytes / 2 - 2, 'x');
  causes.clear();
  EXPECT_TRUE(kube::read_job_meta(doc, &causes));
}

TEST(KubeMeta, APatchAddsChangesAndRemovesLabelsButNotSluices) {
  const std::string kept = R"({"labels":{"kueue.x-k8s.io/queue-name":"q","team":"a"}})";
  kube::MetaCauses causes;
  auto next = kube::patch_meta(kept, {{"team", "b"}, {"tier", "gold"}}, {{"note", "hi"}}, &causes);
  ASSERT_TRUE(next);
  EXPECT_EQ(*next, R"({"annotations":{"note":"hi"},)"
                   R"("labels":{"kueue.x-k8s.io/queue-name":"q","team":"b","tier":"gold"}})");
  next = kube::patch_meta(*next, {{"team", std::nullopt}, {"tier", std::nullopt}},
                          {{"note", std::nullopt}}, &causes);
  ASSERT_TRUE(next);
  EXPECT_EQ(*next, R"({"labels":{"kueue.x-k8s.io/queue-name":"q"}})");
  // The same value of a label sluice reads is no change; another is refused, as a bad value is.
  EXPECT_TRUE(kube::patch_meta(kept, {{"kueue.x-k8s.io/queue-name", "q"}}, {}, &causes));
  EXPECT_FALSE(kube::patch_meta(kept, {{"kueue.x-k8s.io/queue-name", "other"}}, {}, &causes));
  ASSERT_EQ(causes.size(), 1u);
  EXPECT_NE(causes[0].second.find("Forbidden"), std::string::npos);
  causes.clear();
  EXPECT_FALSE(kube::patch_meta(kept, {{"sluice.dev/job-id", "9"}}, {}, &causes));
  EXPECT_FALSE(kube::patch_meta(kept, {{"team", "not valid"}}, {}, &causes));
  EXPECT_EQ(kube::patch_meta("", {{"a", std::nullopt}}, {}, &causes), "");
}

TEST(KubeMeta, AStoredTextIsCheckedBeforeItIsTrusted) {
  EXPECT_EQ(kube::check_kept_meta(""), "");
  EXPECT_FALSE(kube::check_kept_meta("[1]"));
  EXPECT_FALSE(kube::check_kept_meta(R"({"labels":{"a":"b"},"other":{}})"));
  EXPECT_FALSE(kube::check_kept_meta(R"({"labels":{"a":{"b":"c"}}})"));
  EXPECT_FALSE(kube::check_kept_meta(R"({"template":{"spec":{}}})"));
  EXPECT_FALSE(kube::check_kept_meta(R"({"labels":{"a b":"c"}})"));
  EXPECT_EQ(kube::check_kept_meta(R"({"template":{"annotations":{"a":"b c"}}})"),
            R"({"template":{"annotations":{"a":"b c"}}})");
}

TEST(KubeMeta, ObjectsCarryTheJobsLabelsAndSelectorsMatchThem) {
  Config cfg;
  JobRecord r = record(7, "sample", "main", 1);
  r.job.queue = "user-queue";
  r.state = JobState::kRunning;
  r.kube_meta = R"({"annotations":{"note":"hi"},"labels":{"sluice.dev/job-id":"1","team":"a"},)"
                R"("template":{"annotations":{"p":"q"},"labels":{"role":"worker"}}})";
  const json job = kube::job_object(r, cfg, 0);
  EXPECT_EQ(job["metadata"]["labels"]["team"], "a");
  EXPECT_EQ(job["metadata"]["labels"]["sluice.dev/job-id"], "7");  // sluice's wins
  EXPECT_EQ(job["metadata"]["annotations"]["note"], "hi");
  EXPECT_EQ(job["metadata"]["annotations"]["sluice.dev/state"], "running");
  EXPECT_EQ(job["spec"]["template"]["metadata"]["labels"]["role"], "worker");
  EXPECT_EQ(job["spec"]["template"]["metadata"]["labels"]["job-name"], "sample");
  EXPECT_EQ(job["spec"]["template"]["metadata"]["annotations"]["p"], "q");
  const json pod = kube::pod_objects(r, cfg).at(0);
  EXPECT_EQ(pod["metadata"]["labels"]["role"], "worker");
  EXPECT_EQ(pod["metadata"]["labels"]["batch.kubernetes.io/job-name"], "sample");
  EXPECT_FALSE(pod["metadata"]["labels"].contains("team"));  // the Job's, not its pods'
  EXPECT_EQ(pod["metadata"]["annotations"]["p"], "q");
  const json wl = kube::workload_object(r, cfg, "");
  EXPECT_EQ(wl["metadata"]["labels"]["team"], "a");
  EXPECT_EQ(wl["metadata"]["labels"]["kueue.x-k8s.io/job-uid"], "sluice-job-7");
  std::string error;
  auto team_a = kube::parse_selector("team=a", &error);
  ASSERT_TRUE(team_a) << error;
  EXPECT_TRUE(team_a->matches(job["metadata"]["labels"]));
  EXPECT_TRUE(team_a->matches(wl["metadata"]["labels"]));
  EXPECT_FALSE(team_a->matches(pod["metadata"]["labels"]));
  auto worker = kube::parse_selector("role=worker", &error);
  ASSERT_TRUE(worker);
  EXPECT_TRUE(worker->matches(pod["metadata"]["labels"]));
}

// A JobSet created through the API keeps its kind and spec; it shows as a JobSet with JobSet's
// status and printer columns, and a PyTorchJob with the training operator's conditions.
TEST(KubeMeta, AJobSetIsKeptWholeAndShownAsOne) {
  json doc = json::parse(R"({"apiVersion":"jobset.x-k8s.io/v1alpha2","kind":"JobSet",
    "metadata":{"name":"js","labels":{"team":"a"}},
    "spec":{"replicatedJobs":[{"name":"workers","replicas":2}]}})");
  kube::MetaCauses causes;
  auto kept = kube::read_job_meta(doc, &causes, /*whole=*/true);
  ASSERT_TRUE(kept);
  EXPECT_EQ(kube::check_kept_meta(*kept), *kept);
  const kube::KeptMeta m = kube::kept_meta(*kept);
  EXPECT_EQ(m.kind, "JobSet");
  EXPECT_EQ(m.spec["replicatedJobs"][0]["name"], "workers");
  // A label patch keeps the kind and spec.
  auto patched = kube::patch_meta(*kept, {{"team", "b"}}, {}, &causes);
  ASSERT_TRUE(patched);
  EXPECT_EQ(kube::kept_meta(*patched).kind, "JobSet");
  // Not a kind kept whole; a kept kind without its spec or with another apiVersion.
  EXPECT_FALSE(kube::read_job_meta(json{{"kind", "Deployment"}}, &causes, true));
  EXPECT_FALSE(
      kube::check_kept_meta(R"({"kind":"JobSet","apiVersion":"jobset.x-k8s.io/v1alpha2"})"));
  EXPECT_FALSE(kube::check_kept_meta(R"({"kind":"JobSet","apiVersion":"v1","spec":{}})"));

  Config cfg;
  JobRecord r = record(9, "js", "workers", 2);
  r.kube_meta = *kept;
  r.state = JobState::kSucceeded;
  r.attempts = 1;
  r.admit_ns = kNsPerSec;
  r.end_ns = 5 * kNsPerSec;
  for (auto& p : r.pods) p.started = p.exited = true;
  const auto& kinds = kube::kinds();
  const auto jobset = std::find_if(kinds.begin(), kinds.end(),
                                   [](const kube::Kind& k) { return k.kind == "JobSet"; });
  const auto torch = std::find_if(kinds.begin(), kinds.end(),
                                  [](const kube::Kind& k) { return k.kind == "PyTorchJob"; });
  ASSERT_NE(jobset, kinds.end());
  ASSERT_NE(torch, kinds.end());
  EXPECT_TRUE(kube::created_as(r, *jobset));
  EXPECT_FALSE(kube::created_as(r, *torch));
  const json o = kube::kind_object(r, *jobset);
  EXPECT_EQ(o["apiVersion"], "jobset.x-k8s.io/v1alpha2");
  EXPECT_EQ(o["metadata"]["labels"]["team"], "a");
  EXPECT_EQ(o["spec"]["replicatedJobs"][0]["replicas"], 2);  // as written
  EXPECT_EQ(o["spec"]["suspend"], false);
  EXPECT_EQ(o["status"]["terminalState"], "Completed");
  EXPECT_EQ(o["status"]["replicatedJobsStatus"][0]["succeeded"], 2);
  EXPECT_EQ(kube::kind_row(r, *jobset, o, 65 * kNsPerSec),
            json::array({"js", "Completed", "0", "True", "false", "65s"}));
  r.state = JobState::kPending;
  r.kube_meta = R"({"apiVersion":"kubeflow.org/v1","kind":"PyTorchJob","spec":{}})";
  const json t = kube::kind_object(r, *torch);
  EXPECT_EQ(t["spec"]["runPolicy"]["suspend"], true);
  EXPECT_EQ(t["status"]["conditions"].back()["type"], "Suspended");
  EXPECT_EQ(kube::kind_row(r, *torch, t, 65 * kNsPerSec)[1], "Suspended");
}

}  // namespace kube_meta_test
}  // namespace sluice::server
