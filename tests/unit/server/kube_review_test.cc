// The third slice of the Kubernetes API's pure pieces (server/http/kube.h, kube_bodies.h):
// an Eviction's and the access reviews' bodies, what a token may do (kubectl auth can-i), the
// field selectors kubectl drain and describe send, the pods a job shows (Terminating while a
// requeued run stops, deleted by an eviction) and the events derived from a job.
#include <gtest/gtest.h>

#include <set>

#include "server/http/kube.h"
#include "server/http/kube_bodies.h"

namespace sluice::server {
namespace kube_review_test {  // a namespace of its own: the unit tests build in unity batches

using kube::json;

constexpr const char* kJson = "application/json";
constexpr const char* kProtobuf = "application/vnd.kubernetes.protobuf";

// What kubectl 1.32 sent for `kubectl auth can-i create jobs -n default` and `kubectl auth
// can-i --list -n default` (its typed clients encode built-in kinds in protobuf).
std::string kubectl_access_review() {
  return std::string(
      "k8s\x00\x0a"
      "2\x0a\x17"
      "authorization.k8s.io/v1\x12\x17SelfSubjectAccessReview\x12"
      "D\x0a\x10\x0a\x00\x12\x00\x1a\x00\x22\x00*\x00"
      "2\x00"
      "8\x00"
      "B\x00\x12&\x0a$\x0a\x07"
      "default\x12\x06"
      "create\x1a\x05"
      "batch\x22\x00*\x04jobs2\x00:\x00\x1a\x08\x08\x00\x12\x00"
      "\x1a\x00 \x00\x1a\x00\x22\x00",
      130);
}
std::string kubectl_rules_review() {
  return std::string(
      "k8s\x00\x0a"
      "1\x0a\x17"
      "authorization.k8s.io/v1\x12\x16SelfSubjectRulesReview\x12#\x0a"
      "\x10\x0a\x00\x12\x00\x1a\x00\x22\x00*\x00"
      "2\x00"
      "8\x00"
      "B\x00\x12\x09\x0a\x07"
      "default\x1a\x04\x18\x00\x22\x00\x1a\x00\x22\x00",
      96);
}

// Protobuf's wire format, to build bodies: a length-delimited field, a varint field.
std::string pb(int number, const std::string& bytes) {
  std::string out(1, static_cast<char>(number << 3 | 2));
  for (size_t n = bytes.size();; n >>= 7) {
    out += static_cast<char>((n & 0x7f) | (n > 0x7f ? 0x80 : 0));
    if (n <= 0x7f) break;
  }
  return out + bytes;
}
std::string pb_varint(int number, uint64_t v) {
  std::string out(1, static_cast<char>(number << 3));
  for (; v > 0x7f; v >>= 7) out += static_cast<char>((v & 0x7f) | 0x80);
  return out + static_cast<char>(v);
}
std::string envelope(const std::string& api_version, const std::string& kind,
                     const std::string& raw) {
  return std::string("k8s\0", 4) + pb(1, pb(1, api_version) + pb(2, kind)) + pb(2, raw) +
         pb(3, "") + pb(4, "");
}

TEST(KubeEvictionBody, ReadsKubectlsEvictionAndRefusesAnotherName) {
  kube::BodyRefusal why;
  const std::string kubectl =
      R"({"kind":"Eviction","apiVersion":"policy/v1","metadata":{"name":"x-0","namespace":"ns",)"
      R"("creationTimestamp":null},"deleteOptions":{"gracePeriodSeconds":30}})";
  auto e = kube::read_eviction(kJson, kubectl, "x-0", "ns", &why);
  ASSERT_TRUE(e) << why.message;
  EXPECT_EQ(e->grace_seconds, 30);
  EXPECT_FALSE(e->dry_run);
  e = kube::read_eviction(kJson,
                          R"({"metadata":{"name":"x-0"},"deleteOptions":{"dryRun":["All"],)"
                          R"("preconditions":{"uid":"u1"},"unknown":1}})",
                          "x-0", "ns", &why);
  ASSERT_TRUE(e) << why.message;  // unknown fields are ignored, as the API server warns of them
  EXPECT_TRUE(e->dry_run);
  EXPECT_EQ(e->uid, "u1");
  EXPECT_FALSE(kube::read_eviction(kJson, R"({"metadata":{"name":"y-0"}})", "x-0", "ns", &why));
  EXPECT_EQ(why.code, 400);
  EXPECT_NE(why.message.find("does not match"), std::string::npos);
  EXPECT_FALSE(kube::read_eviction(kJson, R"({"metadata":{"name":"x-0","namespace":"other"}})",
                                   "x-0", "ns", &why));
  EXPECT_EQ(why.code, 400);
  EXPECT_FALSE(
      kube::read_eviction(kJson, R"({"kind":"Pod","metadata":{"name":"x-0"}})", "x-0", "ns", &why));
  EXPECT_FALSE(kube::read_eviction(kJson,
                                   R"({"metadata":{"name":"x-0"},"deleteOptions":)"
                                   R"({"gracePeriodSeconds":"5"}})",
                                   "x-0", "ns", &why));
  EXPECT_EQ(why.code, 400);
  EXPECT_FALSE(kube::read_eviction(kJson,
                                   R"({"metadata":{"name":"x-0"},"deleteOptions":)"
                                   R"({"gracePeriodSeconds":-1}})",
                                   "x-0", "ns", &why));
  EXPECT_EQ(why.code, 422);
  EXPECT_FALSE(kube::read_eviction(kJson,
                                   R"({"metadata":{"name":"x-0"},"deleteOptions":)"
                                   R"({"dryRun":["Some"]}})",
                                   "x-0", "ns", &why));
  EXPECT_EQ(why.code, 422);
  EXPECT_FALSE(kube::read_eviction(kJson, "[]", "x-0", "ns", &why));
  EXPECT_FALSE(
      kube::read_eviction(kJson, std::string(64, '[') + std::string(64, ']'), "x", "ns", &why));
  EXPECT_EQ(why.code, 400);
}

TEST(KubeProtobufBody, ReadsKubectlsReviewsAndEvictionsInProtobuf) {
  kube::BodyRefusal why;
  auto q = kube::read_access_review(kProtobuf, kubectl_access_review(), &why);
  ASSERT_TRUE(q) << why.message;
  EXPECT_FALSE(q->non_resource);
  EXPECT_EQ(q->ns, "default");
  EXPECT_EQ(q->verb, "create");
  EXPECT_EQ(q->group, "batch");
  EXPECT_EQ(q->resource, "jobs");
  auto ns = kube::read_rules_review("application/vnd.kubernetes.protobuf; charset=x",
                                    kubectl_rules_review(), &why);
  ASSERT_TRUE(ns) << why.message;
  EXPECT_EQ(*ns, "default");
  // An Eviction as drain's typed client encodes it: metadata {name, namespace},
  // deleteOptions {gracePeriodSeconds, preconditions {uid}, dryRun}.
  const std::string meta = pb(1, "x-0") + pb(2, "") + pb(3, "ns") + pb_varint(7, 0);
  std::string opts = pb_varint(1, 30) + pb(2, pb(1, "u1"));
  auto e = kube::read_eviction(
      kProtobuf, envelope("policy/v1", "Eviction", pb(1, meta) + pb(2, opts)), "x-0", "ns", &why);
  ASSERT_TRUE(e) << why.message;
  EXPECT_EQ(e->grace_seconds, 30);
  EXPECT_EQ(e->uid, "u1");
  EXPECT_FALSE(e->dry_run);
  opts += pb(5, "All");
  e = kube::read_eviction(kProtobuf, envelope("policy/v1", "Eviction", pb(1, meta) + pb(2, opts)),
                          "x-0", "ns", &why);
  ASSERT_TRUE(e) << why.message;
  EXPECT_TRUE(e->dry_run);
  // A negative grace period is a 10-byte varint: read, and refused as the JSON one is.
  e = kube::read_eviction(kProtobuf,
                          envelope("policy/v1", "Eviction",
                                   pb(1, meta) + pb(2, pb_varint(1, static_cast<uint64_t>(-1)))),
                          "x-0", "ns", &why);
  EXPECT_FALSE(e);
  EXPECT_EQ(why.code, 422);
  // Cut short, the wrong wire type, no magic, not UTF-8, another kind: 400.
  const std::string good = kubectl_access_review();
  for (const std::string& bad :
       {good.substr(0, 60), std::string("{\"spec\":{}}"), good.substr(4),
        envelope("authorization.k8s.io/v1", "SelfSubjectAccessReview",
                 pb(2, pb(1, pb(2, "\xff\xfe")))),
        envelope("authorization.k8s.io/v1", "SelfSubjectAccessReview", pb_varint(2, 1)),
        envelope("v1", "Pod", pb(2, pb(1, pb(2, "get"))))}) {
    EXPECT_FALSE(kube::read_access_review(kProtobuf, bad, &why));
    EXPECT_EQ(why.code, 400) << why.message;
  }
}

TEST(KubeAccessReviewBody, ReadsResourceOrNonResourceAttributes) {
  kube::BodyRefusal why;
  auto q = kube::read_access_review(
      kJson,
      R"({"kind":"SelfSubjectAccessReview","apiVersion":"authorization.k8s.io/v1",)"
      R"("metadata":{"creationTimestamp":null},"spec":{"resourceAttributes":{"namespace":"a",)"
      R"("verb":"create","group":"batch","resource":"jobs"}},"status":{"allowed":false}})",
      &why);
  ASSERT_TRUE(q) << why.message;
  EXPECT_FALSE(q->non_resource);
  EXPECT_EQ(q->ns, "a");
  EXPECT_EQ(q->verb, "create");
  EXPECT_EQ(q->group, "batch");
  EXPECT_EQ(q->resource, "jobs");
  q = kube::read_access_review(
      kJson, R"({"spec":{"nonResourceAttributes":{"path":"/api","verb":"get"}}})", &why);
  ASSERT_TRUE(q) << why.message;
  EXPECT_TRUE(q->non_resource);
  EXPECT_EQ(q->path, "/api");
  EXPECT_FALSE(kube::read_access_review(kJson, R"({"spec":{}})", &why));
  EXPECT_EQ(why.code, 422);
  EXPECT_FALSE(kube::read_access_review(
      kJson, R"({"spec":{"resourceAttributes":{},"nonResourceAttributes":{}}})", &why));
  EXPECT_EQ(why.code, 422);
  EXPECT_FALSE(
      kube::read_access_review(kJson, R"({"spec":{"resourceAttributes":{"verb":1}}})", &why));
  EXPECT_EQ(why.code, 400);
  auto ns = kube::read_rules_review(kJson, R"({"spec":{"namespace":"team-a"}})", &why);
  ASSERT_TRUE(ns) << why.message;
  EXPECT_EQ(*ns, "team-a");
  EXPECT_FALSE(kube::read_rules_review(kJson, R"({"spec":{"namespace":3}})", &why));
}

kube::AccessQuestion ask(const std::string& verb, const std::string& group,
                         const std::string& resource, const std::string& ns,
                         const std::string& sub = "") {
  kube::AccessQuestion q;
  q.verb = verb;
  q.group = group;
  q.resource = resource;
  q.ns = ns;
  q.subresource = sub;
  return q;
}

TEST(KubeAccess, AnAdminMayDoEverythingAMemberActsInItsNamespaces) {
  Caller admin;
  Caller alice{.name = "alice", .admin = false, .namespaces = {"team-a"}};
  EXPECT_TRUE(kube::decide_access(admin, ask("delete", "", "nodes", "")).allowed);
  EXPECT_TRUE(kube::decide_access(admin, ask("*", "*", "*", "x")).allowed);
  EXPECT_TRUE(kube::decide_access(alice, ask("create", "batch", "jobs", "team-a")).allowed);
  EXPECT_TRUE(kube::decide_access(alice, ask("delete", "batch", "jobs", "team-a")).allowed);
  EXPECT_TRUE(kube::decide_access(alice, ask("create", "", "pods", "team-a", "eviction")).allowed);
  EXPECT_TRUE(kube::decide_access(alice, ask("list", "", "events", "team-a")).allowed);
  const auto other = kube::decide_access(alice, ask("create", "batch", "jobs", "team-b"));
  EXPECT_FALSE(other.allowed);
  EXPECT_NE(other.reason.find("team-a"), std::string::npos) << other.reason;
  // Across namespaces: reads show its own namespaces; writes are refused.
  EXPECT_TRUE(kube::decide_access(alice, ask("list", "batch", "jobs", "")).allowed);
  EXPECT_FALSE(kube::decide_access(alice, ask("create", "batch", "jobs", "")).allowed);
  // Cluster-scoped: reads, not writes (cordon is an admin's).
  EXPECT_TRUE(kube::decide_access(alice, ask("get", "", "nodes", "")).allowed);
  EXPECT_FALSE(kube::decide_access(alice, ask("patch", "", "nodes", "")).allowed);
  EXPECT_TRUE(
      kube::decide_access(alice, ask("list", "kueue.x-k8s.io", "clusterqueues", "")).allowed);
  EXPECT_FALSE(
      kube::decide_access(alice, ask("create", "kueue.x-k8s.io", "clusterqueues", "")).allowed);
  EXPECT_TRUE(
      kube::decide_access(alice, ask("get", "kueue.x-k8s.io", "localqueues", "team-a")).allowed);
  EXPECT_FALSE(
      kube::decide_access(alice, ask("create", "kueue.x-k8s.io", "localqueues", "team-a")).allowed);
  // Kueue's visibility API: a ClusterQueue's pending workloads, its own LocalQueues'.
  const std::string vis = "visibility.kueue.x-k8s.io";
  EXPECT_TRUE(
      kube::decide_access(alice, ask("get", vis, "clusterqueues", "", "pendingworkloads")).allowed);
  EXPECT_TRUE(
      kube::decide_access(alice, ask("get", vis, "localqueues", "team-a", "pendingworkloads"))
          .allowed);
  EXPECT_FALSE(
      kube::decide_access(alice, ask("get", vis, "localqueues", "team-b", "pendingworkloads"))
          .allowed);
  EXPECT_FALSE(kube::decide_access(alice, ask("*", "*", "*", "team-a")).allowed);
  EXPECT_FALSE(kube::decide_access(alice, ask("get", "", "secrets", "team-a")).allowed);
  kube::AccessQuestion path;
  path.non_resource = true;
  path.verb = "get";
  path.path = "/apis/batch/v1";
  EXPECT_TRUE(kube::decide_access(alice, path).allowed);
  path.path = "/v1/config";
  EXPECT_FALSE(kube::decide_access(alice, path).allowed);
}

TEST(KubeAccess, TheRulesListAgreesWithTheAnswers) {
  Caller alice{.name = "alice", .admin = false, .namespaces = {"team-a"}};
  const json mine = kube::rules_review_status(alice, "team-a");
  const json theirs = kube::rules_review_status(alice, "team-b");
  const auto names = [](const json& status) {
    std::set<std::string> out;
    for (const auto& r : status["resourceRules"])
      for (const auto& res : r["resources"]) out.insert(res.get<std::string>());
    return out;
  };
  EXPECT_TRUE(names(mine).count("jobs"));
  EXPECT_TRUE(names(mine).count("pods/eviction"));
  EXPECT_FALSE(names(theirs).count("jobs"));
  EXPECT_TRUE(names(theirs).count("nodes"));
  // Every rule it lists, asked verb by verb, is allowed; in the namespace it lists them for.
  for (const auto& r : mine["resourceRules"])
    for (const auto& v : r["verbs"])
      for (const auto& g : r["apiGroups"])
        for (const auto& res : r["resources"]) {
          std::string resource = res, sub;
          if (const auto slash = resource.find('/'); slash != std::string::npos) {
            sub = resource.substr(slash + 1);
            resource.resize(slash);
          }
          EXPECT_TRUE(kube::decide_access(alice, ask(v, g, resource, "team-a", sub)).allowed)
              << v << " " << g << " " << res;
        }
  Caller admin;
  EXPECT_EQ(kube::rules_review_status(admin, "x")["resourceRules"][0]["verbs"][0], "*");
}

TEST(KubeFields, DrainsAndDescribesFieldSelectors) {
  EXPECT_TRUE(kube::field_supported("pods", "spec.nodeName"));
  EXPECT_TRUE(kube::field_supported("pods", "status.phase"));
  EXPECT_TRUE(kube::field_supported("events", "involvedObject.uid"));
  EXPECT_TRUE(kube::field_supported("jobs", "metadata.name"));
  EXPECT_FALSE(kube::field_supported("jobs", "spec.nodeName"));
  EXPECT_FALSE(kube::field_supported("pods", "spec.containers"));
  const json pod = {{"metadata", {{"name", "a-0"}}},
                    {"spec", {{"nodeName", "n0"}}},
                    {"status", {{"phase", "Running"}}}};
  EXPECT_EQ(kube::field_value(pod, "spec.nodeName"), "n0");
  EXPECT_EQ(kube::field_value(pod, "spec.missing"), "");
  EXPECT_EQ(kube::field_value(json{{"source", {{"component", "sluice"}}}}, "source"), "sluice");
  std::string why;
  auto sel = kube::parse_selector("spec.nodeName=n0,status.phase!=Succeeded", &why);
  ASSERT_TRUE(sel) << why;
  EXPECT_TRUE(kube::fields_match(*sel, pod));
  sel = kube::parse_selector("spec.nodeName=n1", &why);
  EXPECT_FALSE(kube::fields_match(*sel, pod));
}

// A 2-pod job on n0 that ran, with the given state.
JobRecord job_on_n0(JobState state) {
  JobRecord r;
  r.job.id = 9;
  r.job.name = "train";
  r.job.namespace_ = "team-a";
  r.job.queue = "q";
  r.cluster_queue = "cq";
  PodSet ps;
  ps.name = "main";
  ps.count = 2;
  r.job.pod_sets = {ps};
  r.job.submit_ns = 100 * kNsPerSec;
  r.admit_ns = 110 * kNsPerSec;
  r.state = state;
  r.pods.resize(2);
  for (size_t i = 0; i < 2; ++i) {
    r.pods[i].node = "n0";
    r.pods[i].started = true;
    r.pods[i].run = 3 + i;
  }
  return r;
}

TEST(KubePods, ARequeuedRunTerminatesAnEvictedEndedPodIsGone) {
  Config cfg;
  JobRecord r = job_on_n0(JobState::kRunning);
  auto pods = kube::pod_objects(r, cfg);
  ASSERT_EQ(pods.size(), 2u);
  EXPECT_EQ(pods[1]["metadata"]["uid"], "sluice-pod-9-1-4");  // its run in its uid
  EXPECT_EQ(pods[0]["spec"]["nodeName"], "n0");
  EXPECT_FALSE(pods[0]["metadata"].contains("deletionTimestamp"));
  // Sent back to its queue: the pods still stopping show Terminating, none once gone.
  r.state = JobState::kPending;
  r.queued_ns = 120 * kNsPerSec;
  EXPECT_TRUE(kube::pod_objects(r, cfg).empty());
  pods = kube::pod_objects(r, cfg, [](size_t i) { return i == 1; });
  ASSERT_EQ(pods.size(), 1u);
  EXPECT_EQ(pods[0]["metadata"]["name"], "train-1");
  EXPECT_EQ(pods[0]["metadata"]["deletionTimestamp"], kube::timestamp(r.queued_ns));
  EXPECT_EQ(kube::pod_row(r, pods[0], 130 * kNsPerSec)[2], "Terminating");
  // Ended, one pod evicted: the other shows.
  r.state = JobState::kSucceeded;
  r.pods[0].deleted = true;
  pods = kube::pod_objects(r, cfg);
  ASSERT_EQ(pods.size(), 1u);
  EXPECT_EQ(pods[0]["metadata"]["name"], "train-1");
  EXPECT_FALSE(kube::pod_shown(r, 0, {}));
  EXPECT_FALSE(kube::pod_shown(r, 5, {}));
}

std::vector<std::string> reasons(const std::vector<kube::Event>& events, const std::string& kind) {
  std::vector<std::string> out;
  for (const auto& e : events)
    if (e.object["involvedObject"]["kind"] == kind) out.push_back(e.object["reason"]);
  return out;
}

TEST(KubeEvents, APendingJobSaysWhyAndARequeuedOneWhatHappened) {
  JobRecord r = job_on_n0(JobState::kPending);
  r.admit_ns = 0;
  r.pods.clear();
  r.queued_ns = r.job.submit_ns;
  auto events = kube::job_events(r, nullptr, "insufficient quota for nvidia.com/gpu in cq");
  EXPECT_EQ(reasons(events, "Job"), (std::vector<std::string>{"CreatedWorkload", "Pending"}));
  EXPECT_EQ(reasons(events, "Workload"), (std::vector<std::string>{"Pending"}));
  const json& pending = events.back().object;
  EXPECT_EQ(pending["message"], "insufficient quota for nvidia.com/gpu in cq");
  EXPECT_EQ(pending["involvedObject"]["uid"], "sluice-job-9");
  EXPECT_EQ(pending["involvedObject"]["namespace"], "team-a");
  EXPECT_EQ(pending["type"], "Normal");
  // Ran, was preempted, waits again: its history row has the run, its record why it stopped.
  HistoryRow h;
  h.runs = {{110 * kNsPerSec, 150 * kNsPerSec}};
  r.admit_ns = 110 * kNsPerSec;
  r.queued_ns = 150 * kNsPerSec;
  r.reason = "preempted by job 12";
  events = kube::job_events(r, &h, "insufficient quota");
  EXPECT_EQ(reasons(events, "Workload"),
            (std::vector<std::string>{"QuotaReserved", "Admitted", "Preempted", "Pending"}));
  EXPECT_EQ(reasons(events, "Job"),
            (std::vector<std::string>{"CreatedWorkload", "Started", "Stopped", "Pending"}));
  bool said = false;
  for (const auto& e : events)
    said |= e.object["reason"] == "Preempted" &&
            e.object["message"].get<std::string>().find("preempted by job 12; requeued") == 0;
  EXPECT_TRUE(said);
  // Running again: a new run clears the record's reason; the stop is still there, in general.
  h.running_since = 170 * kNsPerSec;
  r.state = JobState::kRunning;
  r.admit_ns = 170 * kNsPerSec;
  r.reason.clear();
  events = kube::job_events(r, &h, "");
  EXPECT_EQ(reasons(events, "Workload"),
            (std::vector<std::string>{"QuotaReserved", "Admitted", "Evicted", "QuotaReserved",
                                      "Admitted"}));
  EXPECT_EQ(reasons(events, "Job"),
            (std::vector<std::string>{"CreatedWorkload", "Started", "Stopped", "Started"}));
  // Finished: the last run ended with it.
  h.runs.push_back({170 * kNsPerSec, 200 * kNsPerSec});
  h.running_since = -1;
  r.state = JobState::kSucceeded;
  r.end_ns = 200 * kNsPerSec;
  events = kube::job_events(r, &h, "");
  EXPECT_EQ(reasons(events, "Job").back(), "Completed");
  EXPECT_EQ(reasons(events, "Workload").back(), "Finished");
  size_t stopped = 0;
  for (const auto& e : events) stopped += e.object["reason"] == "Stopped";
  EXPECT_EQ(stopped, 1u);
  // Names find the event again; they are unique.
  std::set<std::string> names;
  for (size_t i = 0; i < events.size(); ++i) {
    const std::string name = events[i].object["metadata"]["name"];
    names.insert(name);
    const auto split = kube::split_event_name(name);
    ASSERT_TRUE(split) << name;
    EXPECT_EQ(split->first, 9u);
    EXPECT_EQ(split->second, i);
  }
  EXPECT_EQ(names.size(), events.size());
  EXPECT_FALSE(kube::split_event_name("train.xyz"));
  const json row = kube::event_row(events.back(), 260 * kNsPerSec);
  EXPECT_EQ(row[0], "60s");
  EXPECT_EQ(row[3], "job/train");
}

}  // namespace kube_review_test
}  // namespace sluice::server
