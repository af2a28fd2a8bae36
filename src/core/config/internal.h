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

#include "core/config/admitted.h"
#include "core/config/reader.h"
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
  kBatchQueue,
  kCluster,
  kSchedulerPolicy,
  kBudget,
  kSluiceJob,
  kPod,
  kBatchJob,
  kSnapshot,
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
  std::vector<Where> flavor_where;    // parallel to config.flavors
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
};

// Interns a resource name (error when the catalog is full).
std::optional<ResourceId> intern_resource(Reader& r, ResourceCatalog& catalog, const YAML::Node& at,
                                          const std::string& path, const std::string& name);

// Metadata of any kind: name (required unless allow_generate and generateName is set),
// namespace ("default" when absent), labels, annotations.
struct Metadata {
  std::string name;
  std::string namespace_ = "default";
  Labels labels;
  bool ok = false;
};
Metadata read_metadata(Reader& r, const YAML::Node& doc_map_node, const YAML::Node* metadata,
                       std::vector<std::string>* ignored = nullptr);

// Stage 1 readers; `doc` is the document (a map with apiVersion and kind checked).
void read_resource_flavor(Reader& r, const YAML::Node& doc, Builder& b);
void read_cluster_queue(Reader& r, const YAML::Node& doc, Builder& b);
void read_local_queue(Reader& r, const YAML::Node& doc, Builder& b);
void read_priority_class(Reader& r, const YAML::Node& doc, Builder& b);
void read_cohort(Reader& r, const YAML::Node& doc, Builder& b);
void read_batch_queue(Reader& r, const YAML::Node& doc, Builder& b);  // scheduling.x-k8s.io Queue
void read_cluster(Reader& r, const YAML::Node& doc, Builder& b);
void read_policy(Reader& r, const YAML::Node& doc, Builder& b);
void read_budget(Reader& r, const YAML::Node& doc, Builder& b);    // sluice.dev Budget
void read_snapshot(Reader& r, const YAML::Node& doc, Builder& b);  // sluice.dev Snapshot

// Stage 2.
void resolve(Builder& b, Sink& sink);

// Stage 3: job documents against a resolved config.
struct JobContext {
  const Config& config;
  // Built-in priority classes used by jobs but not defined in the config (name -> value).
  std::map<std::string, int32_t> builtin_priorities;
  std::set<std::pair<std::string, std::string>> names;  // (namespace, name) seen
  std::optional<AdmittedStatus> admitted;  // the last job's status.admission (admitted.h)
};
std::optional<Job> read_job(Reader& r, const YAML::Node& doc, DocKind kind, JobContext& ctx);
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
