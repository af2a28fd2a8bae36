#pragma once
// Internal to the loader: the reader of one job document. Its parts live in one file per kind
// family (docs/workloads.md says what each kind means in sluice):
//   jobs.cc             dispatch, metadata (queue, priority, generateName), resource requests,
//                       validation, resolution against the configuration
//   sluice_job_kind.cc  sluice.dev/v1alpha1 Job
//   pod_kinds.cc        v1 Pod and batch/v1 Job, and the pod templates every Kubernetes kind has
//   workload_kinds.cc   jobset.x-k8s.io JobSet, kubeflow.org PyTorchJob and MPIJob
//   pod_groups.cc       Kueue's plain-pod groups: the pods of a group merged into one job
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "config/internal.h"

namespace sluice::config_detail {

inline constexpr int64_t kMaxGpusPerJob = 1'000'000;
inline constexpr int64_t kMaxPodsPerSet = 100'000;

// The pod sets' commands and env, when they are all the same, become the job's (pod_kinds.cc).
void hoist_pod_commands(Job& job);

// What a reader learned besides the Job itself, for resolution.
struct Draft {
  Job job;
  bool ok = true;
  bool has_id = false;
  std::string queue;  // "" = none given
  Loc queue_loc;
  std::string priority;  // "" = none given
  Loc priority_loc;
  std::optional<bool> preemptible, interactive;
  std::vector<std::pair<ResourceId, Loc>> resource_locs;  // where each resource was requested
  Loc models_loc;
  Loc fallback_loc;
  Loc doc_loc;
  Loc spec_loc;  // "spec" at the spec map's line (for whole-job errors)
  Loc name_loc;
  Loc topology_loc;           // Kueue's topology annotations (path empty: none)
  std::string generate_name;  // metadata.generateName when no name is given
  PodGroupMember group;       // a plain Pod of a Kueue pod group
  Labels annotations;
};

class JobReader {
 public:
  JobReader(Reader& r, JobContext& ctx) : r_(r), ctx_(ctx), c_(ctx.config) {}
  std::optional<ReadJob> read(const YAML::Node& doc, DocKind kind);

 private:
  void fail() { d_.ok = false; }
  void error_at(const Loc& loc, const std::string& message);

  // sluice_job_kind.cc
  void sluice_job(const YAML::Node& doc);
  void sluice_spec(MapReader& spec, const YAML::Node& spec_node);
  void sluice_pod_sets(MapReader& spec, const YAML::Node& spec_node);
  void sluice_run_fields(MapReader& spec);
  void sluice_control_fields(MapReader& spec);
  void pod_set(MapReader& m, const char* count_key, const char* resources_key, const char* gpus_key,
               PodSet& set);
  void fallback(const YAML::Node& node);
  void topology(const YAML::Node& node);

  // pod_kinds.cc
  void pod(const YAML::Node& doc);
  void batch_job(const YAML::Node& doc);
  void min_parallelism(const YAML::Node& doc, PodSet& set);
  void min_count(const YAML::Node& node, const std::string& path, PodSet& set);
  // A batch/v1 JobSpec: parallelism, completions, completionMode, template. `as_child`: a
  // JobSet's replicated job (completions must equal parallelism there); else the whole job.
  std::optional<PodSet> job_spec(const YAML::Node& node, const std::string& path, bool as_child,
                                 std::vector<std::string>& ignored);
  // A PodTemplateSpec (metadata ignored but for the listing, spec read) into `set`.
  bool pod_template(const YAML::Node& node, const std::string& path, PodSet& set,
                    std::vector<std::string>& ignored);
  void pod_spec(const YAML::Node& node, const std::string& path, PodSet& set,
                std::vector<std::string>& ignored);
  // Kueue's topology annotations on a pod set's template of a JobSet or a Kubeflow job
  // (workload_kinds.cc): sluice holds one topology request per job, so they apply to the job
  // when every pod set asks the same, or when the job has one pod set; else an error.
  void child_topology(const YAML::Node& pod_template, const std::string& path, int32_t pods,
                      std::vector<std::string>& ignored);
  void finish_child_topology();
  std::vector<std::pair<TopologyRequest, Loc>> child_topology_;
  ResourceVec container(const YAML::Node& node, const std::string& path, bool first, PodSet& set,
                        std::vector<std::string>& ignored);
  void container_env(const YAML::Node& env, const std::string& path, PodSet& set,
                     std::vector<std::string>& ignored);
  void security_context(const YAML::Node& node, const std::string& path,
                        std::vector<std::string>* ignored);
  void ignored_note(const YAML::Node& doc, const std::vector<std::string>& ignored);
  // Commands and env the pod sets share become the job's (one pod set: always).
  void hoist_commands();

  // workload_kinds.cc
  void jobset(const YAML::Node& doc);
  // PyTorchJob (pytorchReplicaSpecs: Master, Worker) and MPIJob (mpiReplicaSpecs: Launcher,
  // Worker): the replica specs, in that order, as the pod sets of one gang.
  void kubeflow_job(const YAML::Node& doc, DocKind kind);
  // A head (Kubernetes kind, top-level fields): metadata read; the spec node, or nullptr after
  // reporting.
  std::optional<YAML::Node> k8s_head(const YAML::Node& doc, std::vector<std::string>& ignored);

  // deadline_fields.cc
  void deadline(const std::string& text, bool absolute, const Loc& loc);
  void sluice_deadline(MapReader& spec);
  void deadline_annotations(const Metadata& m, const Loc& annotations_loc);

  // jobs.cc
  // spec.rightSize or the annotation sluice.dev/right-size: "auto" (right-size) or "off"; false
  // after reporting anything else (nullopt: reported already).
  bool right_size_value(const std::optional<std::string>& text, const Loc& loc);
  void metadata(const YAML::Node& doc, const YAML::Node* node, std::vector<std::string>* ignored);
  void queue_from_metadata(const Metadata& m, const Loc& labels_loc, const Loc& annotations_loc);
  void request(const YAML::Node& value, const std::string& path, const std::string& name,
               ResourceVec& req, std::vector<std::string>* ignored);
  bool validate();
  bool resolve();
  bool resolve_name();
  bool resolve_queue();
  bool resolve_priority(const ClusterQueue& cq);
  bool check_resources(const ClusterQueue& cq);
  void check_models();

  Reader& r_;
  JobContext& ctx_;
  const Config& c_;
  Draft d_;
  std::vector<std::string> unused_;  // maps whose keys are data (env, resources)
};

}  // namespace sluice::config_detail
