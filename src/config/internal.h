#pragma once
// Internal to the loader: what the document readers accumulate (names not yet resolved to
// indices) and the functions of each stage. load() in loader.cc drives them:
//   1. read every document of every source (kueue_kinds.cc, cluster_kind.cc, policy_kind.cc)
//   2. resolve cross references (resolve.cc)
//   3. read the job documents against the resolved config (jobs.cc)
#include <yaml-cpp/yaml.h>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "config/reader.h"
#include "config/state/admitted.h"
#include "core/model/config.h"

namespace sluice::config_detail {

// Kinds by apiVersion.
enum class DocKind {
  kUnknown,
  kResourceFlavor,
  kClusterQueue,
  kLocalQueue,
  kWorkloadPriorityClass,
  kCohort,
  kTopology,
  kBatchQueue,
  kCluster,
  kSchedulerPolicy,
  kBudget,
  kNodePool,
  kSluiceJob,
  kPod,
  kBatchJob,
  kJobSet,      // jobset.x-k8s.io/v1alpha2
  kPyTorchJob,  // kubeflow.org/v1
  kMpiJob,      // kubeflow.org/v2beta1
  kSnapshot,
  kIgnored,  // Kueue kinds sluice reads past with a warning (AdmissionCheck, ...):
             // ignored_kind_note
};

// Where a field was written, for messages issued after reading.
struct Loc {
  Where where;
  std::string path;
};

struct RawFlavorQuotas {
  std::string flavor;
  Loc loc;  // the flavor's name field
  std::vector<ResourceQuota> resources;
  // A playbook Queue's flavor "default": implied (every node) when not defined, the queue
  // stays active. A Kueue ClusterQueue naming an undefined flavor is inactive, as in Kueue.
  bool implied_ok = false;
};

struct RawGroup {
  std::vector<ResourceId> covered;
  std::vector<RawFlavorQuotas> flavors;
};

struct RawClusterQueue {
  ClusterQueue cq;
  Loc name_loc;
  std::string cohort;  // "" = none
  Loc cohort_loc;
  std::vector<RawGroup> groups;
  std::string default_priority;  // spec.sluice.defaultPriorityClass or Queue.priorityClassName
  Loc priority_loc;
};

struct RawCohort {
  Cohort cohort;
  Loc name_loc;
  std::string parent;
  Loc parent_loc;
  std::vector<RawGroup> groups;
};

// A Kueue Topology and where its fields were written.
struct RawTopology {
  KueueTopology topology;
  Loc name_loc;
  std::vector<Loc> label_locs;  // parallel to topology.node_labels
};

struct RawLocalQueue {
  LocalQueue lq;
  Loc name_loc;
  std::string cluster_queue;
  Loc cq_loc;
};

// A job document kept for stage 3.
struct JobDoc {
  std::string file;
  YAML::Node doc;
  DocKind kind = DocKind::kUnknown;
};

// Everything stage 1 read.
struct Builder {
  Config config;
  std::vector<Where> flavor_where;  // parallel to config.flavors
  // parallel to config.flavors: spec.topologyName ("" = none) and where it was written
  std::vector<std::pair<std::string, Loc>> flavor_topology;
  std::vector<RawTopology> topologies;
  std::vector<Where> priority_where;  // parallel to config.priority_classes
  std::vector<RawClusterQueue> cluster_queues;
  std::vector<RawCohort> cohorts;
  std::vector<RawLocalQueue> local_queues;
  std::optional<Where> policy_where;
  // Cluster documents: the first one's place and name; nodes by name; topology domains.
  std::optional<Where> cluster_where;
  bool levels_set = false;
  std::map<std::string, Where> node_where;
  std::vector<std::map<std::string, int32_t>> domain_ids;  // [level][name] -> id
  // [level][id] -> parent domain id at level-1 and the node that set it (consistency check)
  std::vector<std::vector<std::pair<int32_t, std::string>>> domain_parent;
  std::vector<JobDoc> jobs;
  std::optional<TimeNs> snapshot_ns;  // a Snapshot document's time
  std::vector<Loc> pool_flavor_loc;   // parallel to config.node_pools: spec.flavor's value
};

// Interns a resource name (error when the catalog is full).
std::optional<ResourceId> intern_resource(Reader& r, ResourceCatalog& catalog, const YAML::Node& at,
                                          const std::string& path, const std::string& name);

// Metadata of any kind: name (required unless allow_generate and generateName is set),
// namespace ("default" when absent), labels, annotations.
struct Metadata {
  std::string name;           // "" when only generateName is given
  std::string generate_name;  // metadata.generateName (jobs only)
  std::string namespace_ = "default";
  Labels labels;
  Labels annotations;  // jobs only
  bool ok = false;
};
Metadata read_metadata(Reader& r, const YAML::Node& doc_map_node, const YAML::Node* metadata,
                       std::vector<std::string>* ignored = nullptr);

// The fields of a Kueue object's top level, and what read_top learned of them.
inline const std::vector<const char*> kTopFields = {"apiVersion", "kind", "metadata", "spec",
                                                    "status"};
struct Top {
  Metadata meta;
  std::optional<YAML::Node> spec;
  Loc name_loc;  // metadata.name's value
};
// Metadata (required) and spec (an error when required and absent) of a Kueue object.
Top read_top(Reader& r, const YAML::Node& doc, const MapReader& top, bool spec_required);

// Which Kueue API a document is written in (its apiVersion; v1alpha1 reads like v1beta1).
enum class KueueApi : uint8_t { kV1beta1, kV1beta2 };
KueueApi kueue_api(const YAML::Node& doc);

// ", "-separated.
std::string join_list(const std::vector<std::string>& v);
// The node label of a Kueue Topology level that is the node itself (sluice's `node` level).
inline constexpr const char* kHostnameLabel = "kubernetes.io/hostname";

// Stage 1 readers; `doc` is the document (a map with apiVersion and kind checked).
void read_resource_flavor(Reader& r, const YAML::Node& doc, Builder& b);
void read_cluster_queue(Reader& r, const YAML::Node& doc, Builder& b);
void read_local_queue(Reader& r, const YAML::Node& doc, Builder& b);
void read_priority_class(Reader& r, const YAML::Node& doc, Builder& b);
void read_cohort(Reader& r, const YAML::Node& doc, Builder& b);
void read_topology(Reader& r, const YAML::Node& doc, Builder& b);     // Kueue Topology (TAS)
void read_batch_queue(Reader& r, const YAML::Node& doc, Builder& b);  // scheduling.x-k8s.io Queue
void read_cluster(Reader& r, const YAML::Node& doc, Builder& b);
void read_policy(Reader& r, const YAML::Node& doc, Builder& b);
void read_budget(Reader& r, const YAML::Node& doc, Builder& b);     // sluice.dev Budget
void read_node_pool(Reader& r, const YAML::Node& doc, Builder& b);  // sluice.dev NodePool
// A node's labels, cpu, memory, gpus and ready (a Cluster's node or node group, a NodePool).
bool read_node_common(Reader& r, MapReader& m, Node& node, ResourceCatalog& catalog);
void resolve_node_pools(Builder& b, Sink& sink);
void read_snapshot(Reader& r, const YAML::Node& doc, Builder& b);  // sluice.dev Snapshot

// Stage 2.
void resolve(Builder& b, Sink& sink);
// Part of stage 2 (topology_kind.cc): Kueue Topologies onto the Cluster's levels (deriving the
// levels from node labels when the Cluster declares none) and flavors' topologyName.
void resolve_topologies(Builder& b, Sink& sink);

// Stage 3: job documents against a resolved config.
struct JobContext {
  const Config& config;
  // Built-in priority classes used by jobs but not defined in the config (name -> value).
  std::map<std::string, int32_t> builtin_priorities;
  std::set<std::pair<std::string, std::string>> names;  // (namespace, name) seen
  // generateName: suffixes derive from this seed and how many names were generated before, so
  // one input and seed give the same names (the server passes its clock).
  uint64_t name_seed = 0;
  uint64_t generated = 0;
  std::string default_namespace = "default";  // metadata.namespace when a document has none
  std::optional<AdmittedStatus> admitted;     // the last job's status.admission (admitted.h)
  size_t unknown_queues = 0;  // errors that are a named LocalQueue not found (JobsOutput)
};

// A plain Pod of a Kueue pod group (kueue.x-k8s.io/pod-group-name label, pod-group-total-count
// annotation); name "" when the pod is not in a group.
struct PodGroupMember {
  std::string name;
  int32_t total = 0;
  Loc loc;  // the label
};
struct ReadJob {
  Job job;
  Where where;  // the document
  PodGroupMember group;
  std::optional<AdmittedStatus> admitted;  // its status.admission (admitted.h)
};
std::optional<ReadJob> read_job(Reader& r, const YAML::Node& doc, DocKind kind, JobContext& ctx);
// The pods of each pod group become one job (a gang), in place of the group's first pod; a
// group must be complete in one submission. Errors go to the sink.
void merge_pod_groups(std::vector<ReadJob>& jobs, Sink& sink);
// The jobs and their places, for assign_job_ids.
void split_read_jobs(std::vector<ReadJob>& read, std::vector<Job>& jobs, std::vector<Where>& where);
// Kueue's pod-set topology annotations (kueue.x-k8s.io/podset-*-topology, podset-slice-*) in a
// pod template's `metadata` (may be null) at `path` -> *out; pod_count: pods of the pod set.
// *annotated: where the first was given (path empty: none); the metadata then leaves the
// `ignored` list (it was read). False after reporting an error. topology_annotations.cc.
// The value node of `key` in a map node, if any (a copy: yaml-cpp's iterators yield
// temporaries). jobs.cc.
std::optional<YAML::Node> value_of(const YAML::Node* map, const char* key);
inline std::optional<YAML::Node> value_of(const YAML::Node& map, const char* key) {
  return value_of(&map, key);
}
bool read_topology_annotations(Reader& r, const YAML::Node* metadata, const std::string& path,
                               const Config& config, int32_t pod_count, TopologyRequest* out,
                               Loc* annotated, std::vector<std::string>* ignored);
// A pod spec's nodeSelector, affinity (required node affinity; the rest is listed in *ignored)
// and tolerations -> set.node; false after reporting an error. node_constraints.cc.
bool read_node_constraints(Reader& r, const MapReader& spec, PodSet& set,
                           std::vector<std::string>* ignored);
// A ResourceFlavor's spec.nodeTaints.
bool read_node_taints(Reader& r, const YAML::Node& node, const std::string& path,
                      std::vector<Taint>& out);
// Kueue admits a pod set with a topology annotation only on a flavor whose Topology has that
// level: a warning (sluice honours it on the Cluster's levels) when no flavor of `queue` has.
void warn_topology_flavors(Sink& sink, const Config& config, const ClusterQueue& queue,
                           const TopologyRequest& request, const Loc& annotated);
// Reads a resolved job's status.admission into ctx.admitted (reset when there is none); false
// after reporting an error (admitted_status.cc).
bool read_admitted_status(Reader& r, const YAML::Node& doc, DocKind kind, const Job& job,
                          JobContext& ctx);
// Gives ids 1, 2, 3... (skipping explicit ones) to jobs with id 0; duplicates are errors.
void assign_job_ids(std::vector<Job>& jobs, std::vector<Where>& where, Sink& sink);

// Conventional priority class names and their built-in values (low=100, normal=500,
// medium=500, high=1000, critical=10000).
std::optional<int32_t> builtin_priority(const std::string& name);

// Classifies (apiVersion, kind); on failure *why names the field and the problem.
DocKind classify(const std::string& api_version, const std::string& kind, std::string* field,
                 std::string* why);
bool is_job_kind(DocKind k);

}  // namespace sluice::config_detail
