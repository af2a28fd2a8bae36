// Discovery (docs/kubernetes.md): /version, /api, /apis and each group-version's resource
// list, which kubectl reads to map `kubectl get wl` to /apis/kueue.x-k8s.io/v1beta1/.../
// workloads. kubectl asks for aggregated discovery first (apidiscovery.k8s.io/v2); these are
// answered as plain application/json, so it falls back to the documents below.
#include <algorithm>

#include "build_info.h"
#include "server/http/kube.h"
#include "server/http/kube_schemas.h"
#include "server/http/kube_visibility.h"

namespace sluice::server::kube {

namespace {

const std::vector<std::string> kRead = {"get", "list"};
const std::vector<std::string> kWatched = {"get", "list", "watch"};
// JobSets, PyTorchJobs, MPIJobs (kube_job_kinds.cc).
const std::vector<std::string> kJobKinds = {"create", "delete", "get",  "list",
                                            "patch",  "update", "watch"};
// Kueue's configuration kinds (kube_kueue_write.cc).
const std::vector<std::string> kWritten = {"create", "delete", "get", "list", "patch", "update"};
// ... and watched (kube_watch_kinds.cc): ClusterQueues and LocalQueues.
const std::vector<std::string> kWrittenWatched = {"create", "delete", "get",  "list",
                                                  "patch",  "update", "watch"};

std::vector<Kind> make_kinds() {
  const std::string kq = kKueueGroup, kv = kKueueVersion;
  // One kind a line (a table: left as written).
  // clang-format off
  return {
      {"", "v1", "namespaces", "namespace", "Namespace", false, kRead, {"ns"}, {}},
      {"", "v1", "nodes", "node", "Node", false, {"get", "list", "patch", "watch"}, {"no"}, {}},
      {"", "v1", "pods", "pod", "Pod", true, kWatched, {"po"}, {"all"}},
      {"", "v1", "pods/log", "", "Pod", true, {"get"}, {}, {}},
      {"", "v1", "pods/eviction", "", "Eviction", true, {"create"}, {}, {}, "policy", "v1"},
      {"", "v1", "events", "event", "Event", true, kRead, {"ev"}, {}},
      {"authorization.k8s.io", "v1", "selfsubjectaccessreviews", "", "SelfSubjectAccessReview", false, {"create"}, {}, {}},
      {"authorization.k8s.io", "v1", "selfsubjectrulesreviews", "", "SelfSubjectRulesReview", false, {"create"}, {}, {}},
      {"batch", "v1", "jobs", "job", "Job", true, kJobKinds, {}, {"all"}},
      {kq, kv, "workloads", "workload", "Workload", true, kWatched, {"wl"}, {"kueue"}},
      // kube_job_kinds.cc: created through the batch/v1 Job's path, shown as written.
      {"jobset.x-k8s.io", "v1alpha2", "jobsets", "jobset", "JobSet", true, kJobKinds, {}, {}},
      {"kubeflow.org", "v1", "pytorchjobs", "pytorchjob", "PyTorchJob", true, kJobKinds, {}, {}},
      {"kubeflow.org", "v2beta1", "mpijobs", "mpijob", "MPIJob", true, kJobKinds, {}, {}},
      {kq, kv, "clusterqueues", "clusterqueue", "ClusterQueue", false, kWrittenWatched, {"cq"}, {"kueue"}},
      {kq, kv, "localqueues", "localqueue", "LocalQueue", true, kWrittenWatched, {"queue", "queues", "lq"}, {"kueue"}},
      {kq, kv, "resourceflavors", "resourceflavor", "ResourceFlavor", false, kWritten, {"flavor", "flavors", "rf"}, {"kueue"}},
      {kq, kv, "workloadpriorityclasses", "workloadpriorityclass", "WorkloadPriorityClass", false, kWritten, {}, {"kueue"}},
      {kq, kv, "cohorts", "cohort", "Cohort", false, kWritten, {}, {"kueue"}},
      {kq, kv, "topologies", "topology", "Topology", false, kWritten, {}, {"kueue"}},
      // Kueue's visibility API (kube_visibility.cc): GET .../NAME/pendingworkloads.
      {kVisibilityGroup, kv, "clusterqueues", "clusterqueue", "ClusterQueue", false, {"get"}, {}, {}},
      {kVisibilityGroup, kv, "clusterqueues/pendingworkloads", "", "PendingWorkloadsSummary", false, {"get"}, {}, {}},
      {kVisibilityGroup, kv, "localqueues", "localqueue", "LocalQueue", true, {"get"}, {}, {}},
      {kVisibilityGroup, kv, "localqueues/pendingworkloads", "", "PendingWorkloadsSummary", true, {"get"}, {}, {}},
  };
  // clang-format on
}

// A group's versions, the preferred first.
std::vector<std::string> group_versions(const std::string& g) {
  if (g == kKueueGroup || g == kVisibilityGroup) return {kKueueVersion};
  if (g == "jobset.x-k8s.io") return {"v1alpha2"};
  if (g == "kubeflow.org") return {"v1", "v2beta1"};  // PyTorchJob's, MPIJob's
  return {"v1"};
}

json group_version(const std::string& gv, const std::string& v) {
  return {{"groupVersion", gv}, {"version", v}};
}

}  // namespace

const std::vector<Kind>& kinds() {
  static const std::vector<Kind> all = make_kinds();
  return all;
}

const Kind* find_kind(const std::string& group, const std::string& version,
                      const std::string& resource) {
  for (const auto& k : kinds())
    if (k.group == group && k.version == version && k.resource == resource) return &k;
  return nullptr;
}

json version_info() {
  return {{"major", "1"},
          {"minor", "32"},
          {"gitVersion", std::string("v1.32.0+sluice-") + build_version()},
          {"gitCommit", build_commit()},
          {"gitTreeState", "clean"},
          {"buildDate", ""},
          {"goVersion", ""},
          {"compiler", "sluice"},
          {"platform", "linux/amd64"}};
}

json api_versions(const std::string& host) {
  return {{"kind", "APIVersions"},
          {"versions", {"v1"}},
          {"serverAddressByClientCIDRs",
           json::array({{{"clientCIDR", "0.0.0.0/0"}, {"serverAddress", host}}})}};
}

json group_list() {
  json groups = json::array();
  // Kueue's group before its visibility group: kubectl maps `clusterqueues` to the first.
  for (const std::string& g : {std::string("batch"), std::string(kKueueGroup),
                               std::string(kVisibilityGroup), std::string("authorization.k8s.io"),
                               std::string("jobset.x-k8s.io"), std::string("kubeflow.org")}) {
    json versions = json::array();
    for (const auto& v : group_versions(g)) versions.push_back(group_version(g + "/" + v, v));
    groups.push_back({{"name", g}, {"versions", versions}, {"preferredVersion", versions[0]}});
  }
  return {{"kind", "APIGroupList"}, {"apiVersion", "v1"}, {"groups", groups}};
}

std::optional<json> resource_list(const std::string& group, const std::string& version) {
  json resources = json::array();
  for (const auto& k : kinds()) {
    if (k.group != group || k.version != version) continue;
    json r = {{"name", k.resource},
              {"singularName", k.singular},
              {"namespaced", k.namespaced},
              {"kind", k.kind},
              {"verbs", k.verbs}};
    if (!k.short_names.empty()) r["shortNames"] = k.short_names;
    if (!k.categories.empty()) r["categories"] = k.categories;
    if (!k.sub_group.empty()) r["group"] = k.sub_group;
    if (!k.sub_version.empty()) r["version"] = k.sub_version;
    resources.push_back(std::move(r));
  }
  if (resources.empty()) return std::nullopt;
  return json{{"kind", "APIResourceList"},
              {"apiVersion", "v1"},
              {"groupVersion", group.empty() ? version : group + "/" + version},
              {"resources", resources}};
}

namespace {

// "api/v1", "apis/batch/v1", ...: the group-versions served.
std::vector<std::string> group_version_paths() {
  return {"api/v1",
          "apis/batch/v1",
          std::string("apis/") + kKueueGroup + "/" + kKueueVersion,
          "apis/jobset.x-k8s.io/v1alpha2",
          "apis/kubeflow.org/v1",
          "apis/kubeflow.org/v2beta1"};
}

// The operation kubectl's query-parameter check looks for: the kind's, with fieldValidation.
json operation(const Kind& k, const std::string& action, const std::string& note) {
  return {{"operationId", action + k.kind},
          {"description", note},
          {"parameters", json::array({{{"name", "fieldValidation"},
                                       {"in", "query"},
                                       {"schema", {{"type", "string"}}},
                                       {"uniqueItems", true}}})},
          {"responses", {{"201", {{"description", "Created"}}}}},
          {"x-kubernetes-action", action},
          {"x-kubernetes-group-version-kind",
           {{"group", k.group}, {"version", k.version}, {"kind", k.kind}}}};
}

}  // namespace

json openapi_index() {
  json paths = json::object();
  for (const auto& p : group_version_paths())
    paths[p] = {{"serverRelativeURL", "/openapi/v3/" + p + "?hash=" + build_commit()}};
  return {{"paths", paths}};
}

std::optional<json> openapi_document(const std::string& gv_path) {
  const auto all = group_version_paths();
  if (std::find(all.begin(), all.end(), gv_path) == all.end()) return std::nullopt;
  json paths = json::object();
  std::string group, version;  // of gv_path: "api/v1", "apis/G/V"
  for (const auto& k : kinds()) {
    const std::string prefix = k.group.empty() ? "api/" + k.version : "apis/" + k.api_version();
    if (prefix != gv_path || k.resource.find('/') != std::string::npos) continue;
    group = k.group, version = k.version;
    json& path =
        paths["/" + prefix + (k.namespaced ? "/namespaces/{namespace}/" : "/") + k.resource];
    // kubectl explain finds a resource's kind on its path's operations, then the schema with
    // that x-kubernetes-group-version-kind.
    path["get"] = {{"operationId", "list" + k.kind},
                   {"responses", {{"200", {{"description", "OK"}}}}},
                   {"x-kubernetes-action", "list"},
                   {"x-kubernetes-group-version-kind",
                    {{"group", k.group}, {"version", k.version}, {"kind", k.kind}}}};
    if (std::find(k.verbs.begin(), k.verbs.end(), "create") == k.verbs.end()) continue;
    // kubectl (1.32) reads the fieldValidation parameter off the kind's PATCH operation; sluice
    // validates creations; a job's patch and update change its suspend flag and its
    // metadata.labels and annotations only, a Kueue object's is validated as the configuration
    // (docs/kubernetes.md).
    const bool config = k.group == kKueueGroup;  // the configuration's kinds
    path["post"] = operation(k, "post",
                             config ? "create: validated by sluice's configuration loader"
                                    : "create: validated by sluice's job reader");
    const std::string job_change =
        "the suspend flag (" +
        JobShape{.run_policy = k.kind == "PyTorchJob" || k.kind == "MPIJob"}.suspend_field() +
        ": hold and release), metadata.labels and metadata.annotations only";
    path["patch"] =
        operation(k, "patch", config ? "merge patch, validated as the configuration" : job_change);
  }
  return json{{"openapi", "3.0.0"},
              {"info", {{"title", "sluice"}, {"version", build_version()}}},
              {"paths", paths},
              {"components", {{"schemas", openapi_schemas(group, version)}}}};
}

}  // namespace sluice::server::kube
