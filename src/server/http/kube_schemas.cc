// OpenAPI v3 schemas of the kinds sluice serves (docs/kubernetes.md "Schemas"), for
// `kubectl explain`: generated from one table of fields (a dotted path, a type, a description)
// per kind, not written as JSON per kind. They describe the fields sluice's objects carry and
// the fields its readers take, in Kubernetes' and Kueue's words.
#include "server/http/kube_schemas.h"

#include <string_view>

namespace sluice::server::kube {

namespace {

struct Field {
  std::string path;       // "spec.podSets[].name": [] steps into an array's items
  std::string_view type;  // string, integer, boolean, object, []object, []string, map, quantity
  std::string_view description;
};

struct KindSchema {
  std::string_view group, version, kind, name;  // name: the components.schemas key
  std::string_view description;
  std::vector<Field> fields;
};

constexpr std::string_view kMeta =
    "Standard object's metadata. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

// The fields every object's metadata has (a Table's and a list's too).
const std::vector<Field> kMetaFields = {
    {"metadata", "object", kMeta},
    {"metadata.name", "string", "Name must be unique within a namespace."},
    {"metadata.generateName", "string",
     "An optional prefix the server uses to generate a unique name (create only)."},
    {"metadata.namespace", "string", "The namespace of a namespaced object."},
    {"metadata.uid", "string", "The object's unique id."},
    {"metadata.resourceVersion", "string",
     "The version of the object's last change (sluice: its change journal's)."},
    {"metadata.creationTimestamp", "string", "When the object was created (RFC 3339)."},
    {"metadata.labels", "map", "Map of string keys and values."},
    {"metadata.annotations", "map", "Map of string keys and values."},
    {"metadata.ownerReferences", "[]object", "The objects this object depends on."},
};

const std::vector<Field> kContainer = {
    {"name", "string", "Name of the container (sluice: its pod set's name)."},
    {"image", "string", "Container image name."},
    {"command", "[]string", "Entrypoint array."},
    {"args", "[]string", "Arguments to the entrypoint."},
    {"resources", "object", "Compute resources required by this container."},
    {"resources.requests", "map",
     "The resources the container asks for: cpu, memory, nvidia.com/gpu (quantities)."},
};

std::vector<Field> under(const std::string& prefix, const std::vector<Field>& fields) {
  std::vector<Field> out;
  for (const auto& f : fields) out.push_back({prefix + "." + f.path, f.type, f.description});
  return out;
}

std::vector<Field> join(std::vector<std::vector<Field>> parts) {
  std::vector<Field> out;
  for (auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

// A pod's spec at `at` (a Pod's, a Job's template's, a Workload's pod set's).
std::vector<Field> pod_spec(const std::string& at) {
  return join(
      {{{at, "object", "Specification of the desired behavior of the pod."},
        {at + ".containers", "[]object", "The containers of the pod (sluice: one per pod set)."},
        {at + ".restartPolicy", "string",
         "Restart policy for all containers within the pod: Never."}},
       under(at + ".containers[]", kContainer)});
}

KindSchema job_schema() {
  return {
      "batch",
      "v1",
      "Job",
      "io.k8s.api.batch.v1.Job",
      "Job represents the configuration of a single job (sluice: any job it holds).",
      join({{{"spec", "object", "Specification of the desired behavior of a job."},
             {"spec.parallelism", "integer", "The number of pods that run at once."},
             {"spec.completions", "integer", "The number of successful pods the job needs."},
             {"spec.completionMode", "string", "NonIndexed or Indexed."},
             {"spec.suspend", "boolean",
              "Whether the Job's pods should be held back. sluice: true while the job waits for "
              "admission (as Kueue suspends a queued Job); PATCH it true to hold the job "
              "(a running one goes back to its queue, held) and false to release it."},
             {"spec.backoffLimit", "integer", "Retries before the job fails (sluice: 0)."},
             {"spec.selector", "object", "A label query over the job's pods."},
             {"spec.template", "object", "The pods' template."},
             {"spec.template.metadata", "object", kMeta}},
            pod_spec("spec.template.spec"),
            {{"status", "object", "Current status of a job."},
             {"status.active", "integer", "The number of pending and running pods."},
             {"status.ready", "integer", "The number of running pods."},
             {"status.succeeded", "integer", "The number of succeeded pods (completions)."},
             {"status.failed", "integer", "The number of failed pods."},
             {"status.startTime", "string", "When the job was admitted (RFC 3339)."},
             {"status.completionTime", "string", "When the job completed (RFC 3339)."},
             {"status.conditions", "[]object",
              "Suspended, Complete, SuccessCriteriaMet, Failed, FailureTarget."}}})};
}

KindSchema workload_schema() {
  const std::vector<Field> pod_set = join(
      {{{"name", "string", "The pod set's name."},
        {"count", "integer", "The number of pods of the pod set."},
        {"minCount", "integer", "The fewest pods the pod set may run with (partial admission)."},
        {"template", "object", "The pods' template."}},
       pod_spec("template.spec")});
  return {
      "kueue.x-k8s.io",
      "v1beta1",
      "Workload",
      "sigs.k8s.io.kueue.apis.kueue.v1beta1.Workload",
      "Workload is the Schema for the workloads API (sluice: one per job).",
      join({{{"spec", "object", "WorkloadSpec defines the desired state of Workload."},
             {"spec.queueName", "string", "The name of the LocalQueue the Workload is queued in."},
             {"spec.priority", "integer", "The workload's priority (its priority class's value)."},
             {"spec.priorityClassName", "string", "The WorkloadPriorityClass of the workload."},
             {"spec.priorityClassSource", "string", "Where the priority class comes from."},
             {"spec.active", "boolean",
              "Whether the workload may be admitted (sluice: false while a user holds it)."},
             {"spec.podSets", "[]object", "The sets of homogeneous pods of the workload."}},
            under("spec.podSets[]", pod_set),
            {{"status", "object", "WorkloadStatus defines the observed state of Workload."},
             {"status.admission", "object", "Where and how the workload was admitted."},
             {"status.admission.clusterQueue", "string", "The ClusterQueue that admitted it."},
             {"status.admission.podSetAssignments", "[]object",
              "Per pod set: its flavors per resource, count and resourceUsage."},
             {"status.conditions", "[]object",
              "QuotaReserved, Admitted, Evicted, Finished, with Kueue's reasons."}}})};
}

KindSchema cluster_queue_schema() {
  const std::vector<Field> flavor_quotas = {
      {"name", "string", "The ResourceFlavor's name."},
      {"resources", "[]object", "The quota of each covered resource in this flavor."},
      {"resources[].name", "string", "The resource's name (cpu, memory, nvidia.com/gpu)."},
      {"resources[].nominalQuota", "quantity", "The quantity available for admission."},
      {"resources[].borrowingLimit", "quantity", "The most the queue may borrow from its cohort."},
      {"resources[].lendingLimit", "quantity", "The most the queue lends to its cohort."}};
  return {"kueue.x-k8s.io",
          "v1beta1",
          "ClusterQueue",
          "sigs.k8s.io.kueue.apis.kueue.v1beta1.ClusterQueue",
          "ClusterQueue is the Schema for the clusterQueue API.",
          join({{{"spec", "object", "ClusterQueueSpec defines the desired state of ClusterQueue."},
                 {"spec.cohort", "string", "The cohort the ClusterQueue borrows and lends within."},
                 {"spec.queueingStrategy", "string", "StrictFIFO or BestEffortFIFO."},
                 {"spec.namespaceSelector", "object", "The namespaces that may use the queue."},
                 {"spec.resourceGroups", "[]object",
                  "The resources the queue covers, grouped, with their flavors and quotas."},
                 {"spec.resourceGroups[].coveredResources", "[]string",
                  "The resources this group covers."},
                 {"spec.resourceGroups[].flavors", "[]object",
                  "The flavors of the group, in the order they are tried, with their quotas."}},
                under("spec.resourceGroups[].flavors[]", flavor_quotas),
                {{"status", "object", "ClusterQueueStatus defines the observed state."},
                 {"status.pendingWorkloads", "integer", "The number of pending workloads."},
                 {"status.reservingWorkloads", "integer", "The number of workloads holding quota."},
                 {"status.admittedWorkloads", "integer", "The number of admitted workloads."},
                 {"status.flavorsUsage", "[]object", "The quota used per flavor and resource."},
                 {"status.conditions", "[]object", "Active."}}})};
}

// The kinds whose fields are few: Kueue's LocalQueue, ResourceFlavor, Cohort, Topology,
// WorkloadPriorityClass;
// the core group's Pod, Node, Namespace.
std::vector<KindSchema> small_schemas() {
  std::vector<KindSchema> t;
  t.push_back({"kueue.x-k8s.io",
               "v1beta1",
               "LocalQueue",
               "sigs.k8s.io.kueue.apis.kueue.v1beta1.LocalQueue",
               "LocalQueue is the Schema for the localQueues API.",
               {{"spec", "object", "LocalQueueSpec defines the desired state of LocalQueue."},
                {"spec.clusterQueue", "string", "The ClusterQueue that backs this queue."},
                {"status", "object", "LocalQueueStatus defines the observed state."},
                {"status.pendingWorkloads", "integer", "The number of pending workloads."},
                {"status.reservingWorkloads", "integer", "The number holding quota."},
                {"status.admittedWorkloads", "integer", "The number of admitted workloads."},
                {"status.conditions", "[]object", "Active."}}});
  t.push_back({"kueue.x-k8s.io",
               "v1beta1",
               "ResourceFlavor",
               "sigs.k8s.io.kueue.apis.kueue.v1beta1.ResourceFlavor",
               "ResourceFlavor is the Schema for the resourceflavors API.",
               {{"spec", "object", "ResourceFlavorSpec defines the desired state."},
                {"spec.nodeLabels", "map", "The labels of the nodes of this flavor."},
                {"spec.topologyName", "string", "The Topology of the flavor's nodes."}}});
  t.push_back({"kueue.x-k8s.io",
               "v1beta1",
               "Cohort",
               "sigs.k8s.io.kueue.apis.kueue.v1beta1.Cohort",
               "Cohort defines the Cohorts API (a node of the cohort tree, with its own quota).",
               {{"spec", "object", "CohortSpec defines the desired state of Cohort."},
                {"spec.parent", "string", "The Cohort's parent in the tree; unset: a root."},
                {"spec.resourceGroups", "[]object",
                 "The Cohort's own quota, as a ClusterQueue's resourceGroups."},
                {"spec.fairSharing", "object", "Fair sharing: the Cohort's weight."},
                {"spec.fairSharing.weight", "quantity", "The Cohort's weight (default 1)."}}});
  t.push_back({"kueue.x-k8s.io",
               "v1beta1",
               "Topology",
               "sigs.k8s.io.kueue.apis.kueue.v1beta1.Topology",
               "Topology is the Schema for the topology API (topology-aware scheduling).",
               {{"spec", "object", "TopologySpec defines the desired state of Topology."},
                {"spec.levels", "[]object", "The levels, outermost first, the last the node."},
                {"spec.levels[].nodeLabel", "string",
                 "The node label of the level (kubernetes.io/hostname: the node)."}}});
  t.push_back({"kueue.x-k8s.io",
               "v1beta1",
               "WorkloadPriorityClass",
               "sigs.k8s.io.kueue.apis.kueue.v1beta1.WorkloadPriorityClass",
               "WorkloadPriorityClass is the Schema for the workloadPriorityClass API.",
               {{"value", "integer", "The priority of the workloads of this class."}}});
  t.push_back(
      {"", "v1", "Pod", "io.k8s.api.core.v1.Pod",
       "Pod is a collection of containers (sluice: one pod of a job's run).",
       join({pod_spec("spec"),
             {{"spec.nodeName", "string", "The node the pod runs on."},
              {"status", "object", "The most recently observed status of the pod."},
              {"status.phase", "string", "Pending, Running, Succeeded or Failed."},
              {"status.startTime", "string", "When the pod started (RFC 3339)."},
              {"status.containerStatuses", "[]object", "The container's state and exit code."}}})});
  t.push_back({"",
               "v1",
               "Node",
               "io.k8s.api.core.v1.Node",
               "Node is a worker node (sluice: an agent's node).",
               {{"spec", "object", "Spec defines the behavior of a node."},
                {"spec.unschedulable", "boolean",
                 "Cordoned: no new pods (sluice's cordon; kubectl cordon, uncordon)."},
                {"spec.taints", "[]object", "The node's taints."},
                {"status", "object", "Most recently observed status of the node."},
                {"status.capacity", "map", "cpu, memory, nvidia.com/gpu, pods."},
                {"status.allocatable", "map", "What is available for scheduling."},
                {"status.conditions", "[]object", "Ready: whether the agent syncs."}}});
  t.push_back({"",
               "v1",
               "Namespace",
               "io.k8s.api.core.v1.Namespace",
               "Namespace provides a scope for Names.",
               {{"status", "object", "Status describes the current status of a Namespace."},
                {"status.phase", "string", "Active."}}});
  return t;
}

std::vector<KindSchema> make_table() {
  std::vector<KindSchema> t = {job_schema(), workload_schema(), cluster_queue_schema()};
  for (auto& k : small_schemas()) t.push_back(std::move(k));
  return t;
}

const std::vector<KindSchema>& table() {
  static const std::vector<KindSchema> t = make_table();
  return t;
}

json leaf(std::string_view type, std::string_view description) {
  json s = {{"description", std::string(description)}};
  if (type == "map") {
    s["type"] = "object";
    s["additionalProperties"] = {{"type", "string"}, {"default", ""}};
  } else if (type == "quantity") {
    s["x-kubernetes-int-or-string"] = true;
    s["anyOf"] = json::array({{{"type", "integer"}}, {{"type", "string"}}});
  } else if (type == "[]object" || type == "[]string") {
    s["type"] = "array";
    s["items"] = {{"type", type == "[]object" ? "object" : "string"}};
  } else {
    s["type"] = std::string(type);
  }
  return s;
}

// The schema node at `path` under `root`, created as objects (or arrays' items) on the way.
json& node_at(json& root, std::string_view path) {
  json* at = &root;
  while (!path.empty()) {
    const size_t dot = path.find('.');
    std::string_view part = path.substr(0, dot);
    const bool items = part.ends_with("[]");
    if (items) part.remove_suffix(2);
    json& props = (*at)["properties"];
    json& child = props[std::string(part)];
    if (child.is_null()) child = {{"type", items ? "array" : "object"}};
    at = &child;
    if (items) {
      json& it = child["items"];
      if (it.is_null() || !it.contains("type")) it["type"] = "object";
      at = &it;
    }
    path = dot == std::string_view::npos ? std::string_view() : path.substr(dot + 1);
  }
  return *at;
}

json schema_of(const KindSchema& k) {
  json root = {
      {"type", "object"},
      {"description", std::string(k.description)},
      {"x-kubernetes-group-version-kind", json::array({{{"group", std::string(k.group)},
                                                        {"version", std::string(k.version)},
                                                        {"kind", std::string(k.kind)}}})}};
  root["properties"]["apiVersion"] = leaf("string", "APIVersion defines the versioned schema.");
  root["properties"]["kind"] = leaf("string", "Kind is a string value of the object's REST kind.");
  for (const auto& fields : {std::cref(kMetaFields), std::cref(k.fields)})
    for (const auto& f : fields.get()) {
      json& n = node_at(root, f.path);
      json l = leaf(f.type, f.description);
      // An object or array already holding fields keeps them: only its words and type.
      if (n.contains("properties") || (n.contains("items") && n["items"].contains("properties")))
        l.erase("items");
      for (auto it = l.begin(); it != l.end(); ++it) n[it.key()] = it.value();
    }
  return root;
}

}  // namespace

json openapi_schemas(const std::string& group, const std::string& version) {
  json out = json::object();
  for (const auto& k : table())
    if (k.group == group && k.version == version) out[std::string(k.name)] = schema_of(k);
  return out;
}

}  // namespace sluice::server::kube
