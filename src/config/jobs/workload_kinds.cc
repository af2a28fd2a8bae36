// Multi-role workloads as one gang (docs/workloads.md): jobset.x-k8s.io/v1alpha2 JobSet (one pod
// set per replicated job), kubeflow.org/v1 PyTorchJob (Master, Worker) and kubeflow.org/v2beta1
// MPIJob (Launcher, Worker). Kueue admits each of them as one workload with a pod set per role;
// sluice places and starts all their pods together, as Kueue's all-or-nothing admission does.
#include <algorithm>
#include <span>

#include "config/jobs/job_reader.h"

namespace sluice::config_detail {

namespace {

struct Role {
  const char* key;      // the replica type, as the operator spells it
  const char* pod_set;  // Kueue's pod set name
  bool single;          // the operator allows exactly one replica
};

constexpr Role kPyTorchRoles[] = {{"Master", "master", true}, {"Worker", "worker", false}};
constexpr Role kMpiRoles[] = {{"Launcher", "launcher", true}, {"Worker", "worker", false}};

}  // namespace

void JobReader::jobset(const YAML::Node& doc) {
  std::vector<std::string> ignored;
  const std::optional<YAML::Node> spec_node = k8s_head(doc, ignored);
  if (!spec_node) return;
  MapReader spec(r_, *spec_node, "spec", {"replicatedJobs"}, &ignored);
  const YAML::Node* rjobs = spec.is_map() ? spec.required("replicatedJobs") : nullptr;
  if (!rjobs || !r_.expect_seq(*rjobs, "spec.replicatedJobs")) return fail();
  if (rjobs->size() == 0) {
    r_.error(*rjobs, "spec.replicatedJobs", "must not be empty");
    return fail();
  }
  for (size_t i = 0; i < rjobs->size(); ++i) {
    const std::string path = index("spec.replicatedJobs", i);
    MapReader rj(r_, (*rjobs)[i], path, {"name", "replicas", "template"}, &ignored);
    const YAML::Node* name = rj.is_map() ? rj.required("name") : nullptr;
    auto n = name ? r_.str(*name, rj.path("name")) : std::nullopt;
    int64_t replicas = 1;
    if (const YAML::Node* r = rj.find("replicas")) {
      auto v = r_.integer(*r, rj.path("replicas"), 1, kMaxPodsPerSet);
      if (!v) fail();
      replicas = v.value_or(1);
    }
    const YAML::Node* tmpl = rj.is_map() ? rj.required("template") : nullptr;
    if (!n || !tmpl) {
      fail();
      continue;
    }
    // A JobTemplateSpec: the child Job's spec.
    MapReader jt(r_, *tmpl, rj.path("template"), {"spec"}, &ignored);
    const YAML::Node* job_spec_node = jt.is_map() ? jt.required("spec") : nullptr;
    if (!job_spec_node) {
      fail();
      continue;
    }
    auto set = job_spec(*job_spec_node, jt.path("spec"), /*as_child=*/true, ignored);
    if (!set) continue;
    if (static_cast<int64_t>(set->count) * replicas > kMaxPodsPerSet) {
      r_.error((*rjobs)[i], path,
               "replicas x parallelism is more than " + std::to_string(kMaxPodsPerSet) + " pods");
      fail();
      continue;
    }
    set->name = *n;
    set->count = static_cast<int32_t>(set->count * replicas);
    if (auto t = value_of(*job_spec_node, "template"))
      child_topology(*t, jt.path("spec") + ".template", set->count, ignored);
    for (const auto& other : d_.job.pod_sets)
      if (other.name == set->name) {
        r_.error(*name, rj.path("name"), "duplicate replicated job name " + quote(*n));
        fail();
      }
    d_.job.pod_sets.push_back(std::move(*set));
  }
  finish_child_topology();
  d_.job.exec_mut().gang_env = GangEnv::kTorch;
  hoist_commands();
  ignored_note(doc, ignored);
}

void JobReader::kubeflow_job(const YAML::Node& doc, DocKind kind) {
  const bool torch = kind == DocKind::kPyTorchJob;
  const char* specs_key = torch ? "pytorchReplicaSpecs" : "mpiReplicaSpecs";
  const auto roles =
      torch ? std::span<const Role>(kPyTorchRoles) : std::span<const Role>(kMpiRoles);
  std::vector<std::string> ignored;
  const std::optional<YAML::Node> spec_node = k8s_head(doc, ignored);
  if (!spec_node) return;
  MapReader spec(r_, *spec_node, "spec", {specs_key}, &ignored);
  const YAML::Node* specs = spec.is_map() ? spec.required(specs_key) : nullptr;
  if (!specs) return fail();
  const std::string specs_path = spec.path(specs_key);
  std::vector<const char*> keys;
  for (const Role& role : roles) keys.push_back(role.key);
  MapReader replica_specs(r_, *specs, specs_path, MapReader::Fields{keys});
  if (!replica_specs.is_map()) return fail();
  // Roles in the operator's rank order: Master (rank 0) before Workers; Launcher first.
  for (const Role& role : roles) {
    const YAML::Node* rs = replica_specs.find(role.key);
    if (!rs) continue;
    const std::string path = replica_specs.path(role.key);
    MapReader m(r_, *rs, path, {"replicas", "template"}, &ignored);
    if (!m.is_map()) return fail();
    int64_t replicas = 1;
    if (const YAML::Node* r = m.find("replicas")) {
      auto v =
          r_.integer(*r, m.path("replicas"), role.single ? 1 : 0, role.single ? 1 : kMaxPodsPerSet);
      if (!v) return fail();
      replicas = *v;
    }
    const YAML::Node* tmpl = m.required("template");
    if (!tmpl) return fail();
    PodSet set;
    set.name = role.pod_set;
    set.count = static_cast<int32_t>(replicas);
    if (!pod_template(*tmpl, m.path("template"), set, ignored)) return fail();
    if (set.count > 0) {
      child_topology(*tmpl, m.path("template"), set.count, ignored);
      d_.job.pod_sets.push_back(std::move(set));
    }
  }
  if (d_.job.pod_sets.empty()) {
    r_.error(*specs, specs_path,
             std::string("needs ") + roles[0].key + " or " + roles[1].key + " replicas");
    return fail();
  }
  finish_child_topology();
  d_.job.exec_mut().gang_env = torch ? GangEnv::kTorch : GangEnv::kMpi;
  hoist_commands();
  ignored_note(doc, ignored);
}

void JobReader::child_topology(const YAML::Node& pod_template, const std::string& path,
                               int32_t pods, std::vector<std::string>& ignored) {
  TopologyRequest t;
  Loc loc;
  const auto metadata = value_of(pod_template, "metadata");
  if (!read_topology_annotations(r_, metadata ? &*metadata : nullptr, path + ".metadata", c_, pods,
                                 &t, &loc, &ignored))
    return fail();
  child_topology_.emplace_back(std::move(t), std::move(loc));
}

void JobReader::finish_child_topology() {
  const auto asked = std::find_if(child_topology_.begin(), child_topology_.end(),
                                  [](const auto& c) { return !c.second.path.empty(); });
  if (asked == child_topology_.end()) return;
  for (const auto& [t, loc] : child_topology_)
    if (t != asked->first || loc.path.empty()) {
      if (child_topology_.size() == 1) break;
      error_at(loc.path.empty() ? asked->second : loc,
               "sluice holds one topology request per job: give every pod set the same "
               "kueue.x-k8s.io/podset-*-topology annotations (Kueue places each pod set by "
               "its own)");
      return fail();
    }
  d_.job.topology = asked->first;
  d_.topology_loc = asked->second;
}

}  // namespace sluice::config_detail
