// The pure pieces of the Kubernetes API (server/http/kube.h): paths, names, Status, Tables,
// label selectors, logs' tails, and the objects a job record is.
#include "server/http/kube.h"

#include <gtest/gtest.h>

namespace sluice::server {
namespace kube_test {

using kube::json;

TEST(KubePath, ReadsTheCoreGroupNamedGroupsNamespacesAndSubresources) {
  auto p = kube::parse_path("/api/v1/namespaces/team-a/pods/train-0/log");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->group, "");
  EXPECT_EQ(p->version, "v1");
  EXPECT_EQ(p->ns, "team-a");
  EXPECT_EQ(p->resource, "pods");
  EXPECT_EQ(p->name, "train-0");
  EXPECT_EQ(p->sub, "log");
  p = kube::parse_path("/apis/kueue.x-k8s.io/v1beta1/clusterqueues/cq");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->group, "kueue.x-k8s.io");
  EXPECT_EQ(p->ns, "");
  EXPECT_EQ(p->resource, "clusterqueues");
  EXPECT_EQ(p->name, "cq");
  p = kube::parse_path("/apis/batch/v1/jobs");  // across namespaces
  ASSERT_TRUE(p);
  EXPECT_EQ(p->resource, "jobs");
  EXPECT_EQ(p->ns, "");
  p = kube::parse_path("/api/v1/namespaces/team-a");  // the Namespace object itself
  ASSERT_TRUE(p);
  EXPECT_TRUE(p->namespaces);
  EXPECT_EQ(p->name, "team-a");
  p = kube::parse_path("/apis/batch/v1");  // the group-version's resource list
  ASSERT_TRUE(p);
  EXPECT_EQ(p->resource, "");
  EXPECT_FALSE(kube::parse_path("/apis/batch/v1/namespaces/ns"));  // no resource
  EXPECT_FALSE(kube::parse_path("/api/v1//pods"));
  EXPECT_FALSE(kube::parse_path("/api/v1/pods/"));
  EXPECT_FALSE(kube::parse_path("/api/v1/namespaces/a/pods/b/log/extra"));
  EXPECT_FALSE(kube::parse_path("/v1/jobs"));
}

TEST(KubeNames, PodAndWorkloadNamesFindTheirJob) {
  EXPECT_EQ(kube::pod_name("train-1", 0), "train-1-0");
  auto s = kube::split_pod_name("train-1-0");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->first, "train-1");  // always split at the last dash: unique per job name
  EXPECT_EQ(s->second, 0u);
  EXPECT_FALSE(kube::split_pod_name("train"));
  EXPECT_FALSE(kube::split_pod_name("train-x"));
  EXPECT_FALSE(kube::split_pod_name("train-"));
  JobRecord r;
  r.job.id = 42;
  r.job.name = "sample-job-abc";
  EXPECT_EQ(kube::workload_name(r), "job-sample-job-abc-42");
  EXPECT_EQ(kube::workload_job_id("job-sample-job-abc-42"), JobId{42});
  EXPECT_FALSE(kube::workload_job_id("sample-job-abc-42"));
  EXPECT_FALSE(kube::workload_job_id("job-abc-"));
}

TEST(KubeStatus, ErrorsAreStatusObjectsWithKubernetesReasons) {
  const json s = kube::status_object(404, "jobs.batch \"x\" not found");
  EXPECT_EQ(s["kind"], "Status");
  EXPECT_EQ(s["apiVersion"], "v1");
  EXPECT_EQ(s["status"], "Failure");
  EXPECT_EQ(s["reason"], "NotFound");
  EXPECT_EQ(s["code"], 404);
  EXPECT_EQ(kube::status_object(409, "", "AlreadyExists")["reason"], "AlreadyExists");
  EXPECT_EQ(kube::status_object(429, "")["reason"], "TooManyRequests");
  EXPECT_EQ(kube::status_object(403, "")["reason"], "Forbidden");
  EXPECT_EQ(kube::status_object(200, "")["status"], "Success");
  EXPECT_FALSE(kube::status_object(200, "").contains("reason"));
  // A native error body becomes a Status with its details in the message.
  net::Response res;
  res.status = 400;
  res.body = R"({"error":"the body is not a valid job submission","details":["request:3: x"]})";
  kube::to_status(res);
  const json t = json::parse(res.body);
  EXPECT_EQ(t["reason"], "BadRequest");
  EXPECT_EQ(t["message"], "the body is not a valid job submission\nrequest:3: x");
}

TEST(KubeTable, HumanDurationsAsKubectlPrintsThem) {
  constexpr TimeNs s = kNsPerSec;
  EXPECT_EQ(kube::human_duration(5 * s), "5s");
  EXPECT_EQ(kube::human_duration(119 * s), "119s");
  EXPECT_EQ(kube::human_duration(200 * s), "3m20s");
  EXPECT_EQ(kube::human_duration(600 * s), "10m");
  EXPECT_EQ(kube::human_duration((3 * 3600 + 5 * 60) * s), "3h5m");
  EXPECT_EQ(kube::human_duration(10 * 3600 * s), "10h");
  EXPECT_EQ(kube::human_duration((2 * 24 + 4) * 3600 * s), "2d4h");
  EXPECT_EQ(kube::human_duration(-5 * s), "<invalid>");
}

TEST(KubeTable, RowsCarryMetadataUnlessTheWholeObjectIsAsked) {
  const json obj = {{"kind", "Job"}, {"metadata", {{"name", "a"}}}, {"spec", {{"x", 1}}}};
  const json row = kube::table_row(json::array({"a"}), obj, "Metadata");
  EXPECT_EQ(row["object"]["kind"], "PartialObjectMetadata");
  EXPECT_EQ(row["object"]["metadata"]["name"], "a");
  EXPECT_FALSE(row["object"].contains("spec"));
  EXPECT_EQ(kube::table_row(json::array({"a"}), obj, "Object")["object"], obj);
  EXPECT_FALSE(kube::table_row(json::array({"a"}), obj, "None").contains("object"));
  const json t = kube::table({{"Name", "string", "name", ""}, {"Age", "string", "", "", 1}},
                             json::array({row}), "Metadata");
  EXPECT_EQ(t["apiVersion"], "meta.k8s.io/v1");
  EXPECT_EQ(t["columnDefinitions"][0]["format"], "name");
  EXPECT_EQ(t["columnDefinitions"][1]["priority"], 1);
}

TEST(KubeSelector, EqualityTermsOnlyAndTheRestRefused) {
  std::string why;
  auto s = kube::parse_selector("job-name=a, app!=web,tier==gpu", &why);
  ASSERT_TRUE(s) << why;
  EXPECT_TRUE(s->matches({{"job-name", "a"}, {"tier", "gpu"}}));
  EXPECT_FALSE(s->matches({{"job-name", "a"}, {"tier", "gpu"}, {"app", "web"}}));
  EXPECT_FALSE(s->matches({{"job-name", "b"}, {"tier", "gpu"}}));
  EXPECT_TRUE(kube::parse_selector("", &why)->matches(json::object()));
  EXPECT_FALSE(kube::parse_selector("env in (a,b)", &why));
  EXPECT_NE(why.find("equality terms only"), std::string::npos);
  EXPECT_FALSE(kube::parse_selector("app", &why));  // existence: not read
}

TEST(KubeLogs, TailLinesAndLimitBytes) {
  EXPECT_EQ(kube::last_lines("a\nb\nc\n", 2), "b\nc\n");
  EXPECT_EQ(kube::last_lines("a\nb\nc", 1), "c");
  EXPECT_EQ(kube::last_lines("a\nb\n", 5), "a\nb\n");
  EXPECT_EQ(kube::last_lines("a\nb\n", 0), "");
  net::Response res;
  res.body = "one\ntwo\nthree\n";
  kube::shape_log(res, 2, 5);
  EXPECT_EQ(res.body, "two\nt");
}

// A 3-pod batch Job, running: one pod done, one running, one starting.
JobRecord running_job(Config& cfg) {
  JobRecord r;
  r.job.id = 7;
  r.job.name = "sample";
  r.job.namespace_ = "default";
  r.job.queue = "user-queue";
  r.cluster_queue = "cluster-queue";
  PodSet ps;
  ps.name = "main";
  ps.count = 3;
  ps.requests[kCpu] = 1000;
  ps.requests[kMemory] = 200;
  ps.exec_mut().image = "busybox";
  r.job.pod_sets = {ps};
  r.job.exec_mut().completions.total = 3;
  r.job.submit_ns = 1'000 * kNsPerSec;
  r.admit_ns = 1'010 * kNsPerSec;
  r.state = JobState::kRunning;
  r.pods.resize(3);
  for (auto& p : r.pods) p.node = "n0";
  r.pods[0].started = r.pods[0].exited = true;
  r.pods[1].started = true;
  r.completed = {0};
  (void)cfg;
  return r;
}

TEST(KubeObjects, AJobItsPodsAndItsWorkload) {
  Config cfg;
  JobRecord r = running_job(cfg);
  const TimeNs now = 1'070 * kNsPerSec;
  const json job = kube::job_object(r, cfg, now);
  EXPECT_EQ(job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"], "user-queue");
  EXPECT_EQ(job["spec"]["suspend"], false);
  EXPECT_EQ(job["status"]["active"], 1 + 1);  // one running, one starting: both active
  EXPECT_EQ(job["status"]["succeeded"], 1);   // completions that succeeded
  EXPECT_EQ(job["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"], "1");
  EXPECT_EQ(kube::job_row(r, job, now),
            json::array({"sample", "Running", "1/3", "60s", "70s", "main", "busybox",
                         "batch.kubernetes.io/controller-uid=sluice-job-7"}));
  const auto pods = kube::pod_objects(r, cfg);
  ASSERT_EQ(pods.size(), 3u);
  EXPECT_EQ(pods[0]["metadata"]["name"], "sample-0");
  EXPECT_EQ(pods[0]["status"]["phase"], "Succeeded");
  EXPECT_EQ(pods[1]["status"]["phase"], "Running");
  EXPECT_EQ(pods[2]["status"]["phase"], "Pending");
  EXPECT_EQ(pods[1]["spec"]["nodeName"], "n0");
  EXPECT_EQ(pods[1]["metadata"]["labels"]["batch.kubernetes.io/controller-uid"],
            job["spec"]["selector"]["matchLabels"]["batch.kubernetes.io/controller-uid"]);
  EXPECT_EQ(kube::pod_row(r, pods[0], now)[2], "Completed");
  EXPECT_EQ(kube::pod_row(r, pods[2], now)[2], "ContainerCreating");
  const json wl = kube::workload_object(r, cfg, "");
  EXPECT_EQ(wl["metadata"]["name"], "job-sample-7");
  EXPECT_EQ(wl["status"]["admission"]["clusterQueue"], "cluster-queue");
  EXPECT_EQ(wl["status"]["admission"]["podSetAssignments"][0]["count"], 3);
  EXPECT_EQ(kube::workload_row(r, wl, now),
            json::array({"job-sample-7", "user-queue", "cluster-queue", "True", "", "70s"}));
}

TEST(KubeObjects, APendingJobIsSuspendedAndItsWorkloadSaysWhy) {
  Config cfg;
  JobRecord r = running_job(cfg);
  r.state = JobState::kPending;
  r.pods.clear();
  r.admit_ns = 0;
  const json job = kube::job_object(r, cfg, 0);
  EXPECT_EQ(job["spec"]["suspend"], true);
  EXPECT_EQ(job["status"]["conditions"][0]["type"], "Suspended");
  EXPECT_TRUE(kube::pod_objects(r, cfg).empty());
  const json wl = kube::workload_object(r, cfg, "insufficient quota");
  EXPECT_FALSE(wl["status"].contains("admission"));
  EXPECT_EQ(wl["status"]["conditions"][0]["type"], "QuotaReserved");
  EXPECT_EQ(wl["status"]["conditions"][0]["status"], "False");
  EXPECT_EQ(wl["status"]["conditions"][0]["reason"], "Pending");
  EXPECT_EQ(wl["status"]["conditions"][0]["message"], "insufficient quota");
  r.state = JobState::kSucceeded;
  r.admit_ns = 1'010 * kNsPerSec;
  r.end_ns = 1'050 * kNsPerSec;
  const json done = kube::workload_object(r, cfg, "");
  EXPECT_EQ(done["status"]["conditions"].back()["type"], "Finished");
  EXPECT_EQ(done["status"]["conditions"].back()["reason"], "Succeeded");
  EXPECT_EQ(kube::job_object(r, cfg, 0)["status"]["conditions"].back()["type"], "Complete");
}

TEST(KubeDiscovery, ResourceListsNameVerbsAndShortNames) {
  const auto batch = kube::resource_list("batch", "v1");
  ASSERT_TRUE(batch);
  EXPECT_EQ((*batch)["groupVersion"], "batch/v1");
  EXPECT_EQ((*batch)["resources"][0]["name"], "jobs");
  EXPECT_EQ((*batch)["resources"][0]["verbs"],
            json({"create", "delete", "get", "list", "patch", "update", "watch"}));
  const auto kueue = kube::resource_list("kueue.x-k8s.io", "v1beta1");
  ASSERT_TRUE(kueue);
  bool wl = false;
  for (const auto& r : (*kueue)["resources"])
    wl = wl || (r["name"] == "workloads" && r["shortNames"] == json({"wl"}));
  EXPECT_TRUE(wl);
  EXPECT_FALSE(kube::resource_list("apps", "v1"));
  // kubectl create reads fieldValidation off the Job's operations.
  const auto doc = kube::openapi_document("apis/batch/v1");
  ASSERT_TRUE(doc);
  const json& post = (*doc)["paths"]["/apis/batch/v1/namespaces/{namespace}/jobs"]["post"];
  EXPECT_EQ(post["parameters"][0]["name"], "fieldValidation");
  EXPECT_EQ(post["x-kubernetes-group-version-kind"]["kind"], "Job");
}

}  // namespace kube_test
}  // namespace sluice::server
