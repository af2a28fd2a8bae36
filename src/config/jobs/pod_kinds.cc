// v1 Pod and batch/v1 Job, and what every Kubernetes workload kind shares: the head (apiVersion,
// kind, metadata, spec), pod templates, pod specs and containers. docs/workloads.md says what
// each means in sluice.
#include <algorithm>

#include "config/jobs/job_reader.h"

namespace sluice::config_detail {

namespace {

constexpr size_t kMaxIgnoredListed = 20;
constexpr int64_t kMaxUnixId = 0x7fffffff;  // uid/gid: the kernel's are 32-bit, -1 reserved
constexpr int64_t kMaxDeadlineS = 100LL * 365 * 24 * 3600;

}  // namespace

// (A copy of the spec node: `top`, which holds the map's entries, ends here.)
std::optional<YAML::Node> JobReader::k8s_head(const YAML::Node& doc,
                                              std::vector<std::string>& ignored) {
  MapReader top(r_, doc, "", {"apiVersion", "kind", "metadata", "spec", "status"}, &ignored);
  metadata(doc, top.find("metadata"), &ignored);
  const YAML::Node* spec = top.required("spec");
  if (!spec) {
    fail();
    return std::nullopt;
  }
  d_.spec_loc = Loc{r_.where(*spec), "spec"};
  return *spec;
}

void JobReader::pod(const YAML::Node& doc) {
  std::vector<std::string> ignored;
  const std::optional<YAML::Node> spec = k8s_head(doc, ignored);
  if (!spec) return;
  PodSet set;
  pod_spec(*spec, "spec", set, ignored);
  const auto metadata = value_of(doc, "metadata");
  if (!read_topology_annotations(r_, metadata ? &*metadata : nullptr, "metadata", c_, set.count,
                                 &d_.job.topology, &d_.topology_loc, &ignored))
    fail();
  d_.job.pod_sets.push_back(std::move(set));
  hoist_commands();
  ignored_note(doc, ignored);
}

// Kubernetes semantics (docs/workloads.md, "batch/v1 Job"): `parallelism` pods (default 1) are
// admitted and placed together; with `completions`, they run that many pod runs in all, each
// pod starting the next run as its previous one succeeds (Indexed: run i has
// JOB_COMPLETION_INDEX=i). Without `completions`, every pod runs once and all must succeed.
void JobReader::batch_job(const YAML::Node& doc) {
  std::vector<std::string> ignored;
  const std::optional<YAML::Node> spec = k8s_head(doc, ignored);
  if (!spec) return;
  if (auto set = job_spec(*spec, "spec", /*as_child=*/false, ignored)) {
    min_parallelism(doc, *set);
    d_.job.pod_sets.push_back(std::move(*set));
    hoist_commands();
  }
  ignored_note(doc, ignored);
}

// Kueue's partial admission of a batch Job: kueue.x-k8s.io/job-min-parallelism, the fewest
// pods (1 .. parallelism - 1) it may start with when it does not fit whole.
void JobReader::min_parallelism(const YAML::Node& doc, PodSet& set) {
  static const char* kKey = "kueue.x-k8s.io/job-min-parallelism";
  const std::string* v = find_label(d_.annotations, kKey);
  if (!v) return;
  const auto metadata = value_of(doc, "metadata");
  const auto annotations = metadata ? value_of(*metadata, "annotations") : std::nullopt;
  const Loc loc{r_.where(annotations ? *annotations : doc), child("metadata.annotations", kKey)};
  auto n = parse_scaled_decimal(*v, 1);
  if (set.count < 2) {
    error_at(loc, "needs parallelism of at least 2 (this Job runs " + std::to_string(set.count) +
                      " pod at a time)");
  } else if (!n || *n < 1 || *n >= set.count) {
    error_at(loc, quote(*v) + " must be a whole number from 1 to " + std::to_string(set.count - 1) +
                      " (below the Job's parallelism)");
  } else {
    set.min_count = static_cast<int32_t>(*n);
  }
}

std::optional<PodSet> JobReader::job_spec(const YAML::Node& node, const std::string& path,
                                          bool as_child, std::vector<std::string>& ignored) {
  MapReader spec(
      r_, node, path,
      {"parallelism", "completions", "completionMode", "template", "activeDeadlineSeconds"},
      &ignored);
  if (!spec.is_map()) {
    fail();
    return std::nullopt;
  }
  PodSet set;
  auto count = [&](const char* key) -> std::optional<int32_t> {
    const YAML::Node* n = spec.find(key);
    if (!n) return std::nullopt;
    auto v = r_.integer(*n, spec.path(key), 1, kMaxPodsPerSet);
    if (!v) fail();
    return v ? std::optional<int32_t>(static_cast<int32_t>(*v)) : std::nullopt;
  };
  const int32_t parallelism = count("parallelism").value_or(1);
  const std::optional<int32_t> completions = count("completions");
  bool indexed = false;
  if (const YAML::Node* n = spec.find("completionMode")) {
    auto v = r_.choice<bool>(*n, spec.path("completionMode"),
                             {{"NonIndexed", false}, {"Indexed", true}});
    if (!v) fail();
    indexed = v.value_or(false);
    if (indexed && !completions) {
      r_.error(*n, spec.path("completionMode"), "Indexed needs completions (as in Kubernetes)");
      fail();
    }
  }
  if (const YAML::Node* n = spec.find("activeDeadlineSeconds")) {
    if (auto v = r_.integer(*n, spec.path("activeDeadlineSeconds"), 1, kMaxDeadlineS)) {
      if (!as_child) d_.job.walltime_ns = *v * kNsPerSec;
    } else {
      fail();
    }
  }
  if (as_child) {
    // A JobSet's child Jobs run their pods once, together with the other replicated jobs.
    if (completions && *completions != parallelism) {
      r_.error(*spec.find("completions"), spec.path("completions"),
               "must equal parallelism (" + std::to_string(parallelism) +
                   ") in a JobSet: sluice runs a JobSet's pods once, as one gang");
      fail();
    }
    set.count = parallelism;
    if (indexed) set.indexed_group = parallelism;
  } else {
    set.count = completions ? std::min(parallelism, *completions) : parallelism;
    if (completions) d_.job.exec_mut().completions = Completions{*completions, indexed};
  }
  const YAML::Node* tmpl = spec.required("template");
  if (!tmpl || !pod_template(*tmpl, spec.path("template"), set, ignored)) {
    fail();
    return std::nullopt;
  }
  // Kueue's pod-set topology annotations: one topology request per job (a batch Job's).
  const auto metadata = value_of(*tmpl, "metadata");
  if (!as_child && !read_topology_annotations(r_, metadata ? &*metadata : nullptr,
                                              spec.path("template") + ".metadata", c_, set.count,
                                              &d_.job.topology, &d_.topology_loc, &ignored))
    fail();
  return set;
}

bool JobReader::pod_template(const YAML::Node& node, const std::string& path, PodSet& set,
                             std::vector<std::string>& ignored) {
  MapReader t(r_, node, path, {"spec"}, &ignored);
  const YAML::Node* pod_spec_node = t.is_map() ? t.required("spec") : nullptr;
  if (!pod_spec_node) return false;
  pod_spec(*pod_spec_node, t.path("spec"), set, ignored);
  return true;
}

void JobReader::hoist_commands() {
  hoist_pod_commands(d_.job);
}

void hoist_pod_commands(Job& job) {
  auto& sets = job.pod_sets;
  if (sets.empty()) return;
  const bool same = std::all_of(sets.begin(), sets.end(), [&](const PodSet& s) {
    return s.exec().command == sets.front().exec().command &&
           s.exec().env == sets.front().exec().env;
  });
  if (!same) return;
  job.exec_mut().command = std::move(sets.front().exec_mut().command);
  job.exec_mut().env = std::move(sets.front().exec_mut().env);
  for (auto& s : sets) {
    s.exec_mut().command.clear();
    s.exec_mut().env.clear();
  }
}

// Containers' resources (limits, else requests) summed; init containers: the max of them.
void JobReader::pod_spec(const YAML::Node& node, const std::string& path, PodSet& set,
                         std::vector<std::string>& ignored) {
  MapReader spec(r_, node, path,
                 {"containers", "initContainers", "priorityClassName", "securityContext",
                  "nodeSelector", "affinity", "tolerations", "terminationGracePeriodSeconds"},
                 &ignored);
  if (!spec.is_map()) return fail();
  // The time between SIGTERM and SIGKILL when a pod is stopped (cancel, preemption, walltime):
  // the job's grace (the longest of its pod sets'). Kubernetes' default of 30 s is not applied:
  // without the field the grace is sluice's (spec.checkpointGrace, default 0).
  if (const YAML::Node* n = spec.find("terminationGracePeriodSeconds")) {
    if (auto v = r_.integer(*n, spec.path("terminationGracePeriodSeconds"), 0, 86'400))
      d_.job.checkpoint_grace_ns = std::max(d_.job.checkpoint_grace_ns, *v * kNsPerSec);
    else
      fail();
  }
  if (!read_node_constraints(r_, spec, set, &ignored)) return fail();
  if (const YAML::Node* n = spec.find("securityContext"))  // the first container's wins
    security_context(*n, spec.path("securityContext"), &ignored);
  if (const YAML::Node* n = spec.find("priorityClassName")) {
    if (auto s = r_.str(*n, spec.path("priorityClassName"))) {
      if (d_.priority.empty()) {  // the kueue.x-k8s.io/priority-class label wins
        d_.priority = *s;
        d_.priority_loc = Loc{r_.where(*n), spec.path("priorityClassName")};
      }
    } else {
      fail();
    }
  }
  ResourceVec sum, init_max;
  const YAML::Node* containers = spec.required("containers");
  if (!containers) return fail();
  if (!r_.expect_seq(*containers, spec.path("containers"))) return fail();
  if (containers->size() == 0) {
    r_.error(*containers, spec.path("containers"), "must not be empty");
    return fail();
  }
  for (size_t i = 0; i < containers->size(); ++i)
    sum += container((*containers)[i], index(spec.path("containers"), i), i == 0, set, ignored);
  if (const YAML::Node* inits = spec.find("initContainers")) {
    if (r_.expect_seq(*inits, spec.path("initContainers"))) {
      for (size_t i = 0; i < inits->size(); ++i) {
        ResourceVec v =
            container((*inits)[i], index(spec.path("initContainers"), i), false, set, ignored);
        for (ResourceId r = 0; r < kMaxResources; ++r) init_max[r] = std::max(init_max[r], v[r]);
      }
    } else {
      fail();
    }
  }
  for (ResourceId r = 0; r < kMaxResources; ++r) sum[r] = std::max(sum[r], init_max[r]);
  set.requests = sum;
  set.gpus = static_cast<int32_t>(sum[kGpu] / kMilliPerGpu);
  set.gpu_milli = static_cast<int32_t>(kMilliPerGpu);
}

ResourceVec JobReader::container(const YAML::Node& node, const std::string& path, bool first,
                                 PodSet& set, std::vector<std::string>& ignored) {
  static const std::vector<const char*> kFirst = {"name", "image", "resources",      "command",
                                                  "args", "env",   "securityContext"};
  static const std::vector<const char*> kOther = {"name", "resources"};
  MapReader c(r_, node, path, first ? kFirst : kOther, &ignored);
  ResourceVec limits, requests;
  if (!c.is_map()) {
    fail();
    return limits;
  }
  if (const YAML::Node* res = c.find("resources")) {
    MapReader rm(r_, *res, c.path("resources"), {"limits", "requests"}, &ignored);
    auto read = [&](const char* key, ResourceVec& out) {
      if (const YAML::Node* n = rm.find(key)) {
        MapReader m(r_, *n, rm.path(key), {}, &unused_);
        for (const auto& [name, value] : m.entries())
          request(value, m.path(name), name, out, &ignored);
      }
    };
    read("limits", limits);
    read("requests", requests);
  }
  // A limit, where given, is what the container may use; a request alone stands for itself.
  for (ResourceId r = 0; r < kMaxResources; ++r)
    if (limits[r] == 0) limits[r] = requests[r];
  if (first) {
    auto list = [&](const char* key) {
      std::vector<std::string> out;
      if (const YAML::Node* n = c.find(key)) {
        if (auto v = r_.str_list(*n, c.path(key))) {
          out = *v;
        } else {
          fail();
        }
      }
      return out;
    };
    if (const YAML::Node* n = c.find("securityContext"))
      security_context(*n, c.path("securityContext"), &ignored);
    if (const YAML::Node* n = c.find("image")) {
      if (auto v = r_.str(*n, c.path("image")))
        set.exec_mut().image = *v;
      else
        fail();
    }
    set.exec_mut().command = list("command");
    set.exec_mut().image_args_only = set.exec().command.empty() && c.find("args");
    for (auto& a : list("args")) set.exec_mut().command.push_back(std::move(a));
    if (const YAML::Node* env = c.find("env")) container_env(*env, c.path("env"), set, ignored);
  }
  return limits;
}

// env of a container: name and value (valueFrom and the like are listed as ignored).
void JobReader::container_env(const YAML::Node& env, const std::string& path, PodSet& set,
                              std::vector<std::string>& ignored) {
  if (!r_.expect_seq(env, path)) return fail();
  for (size_t i = 0; i < env.size(); ++i) {
    MapReader e(r_, env[i], index(path, i), {"name", "value"}, &ignored);
    const YAML::Node* name = e.required("name");
    auto n = name ? r_.str(*name, e.path("name")) : std::nullopt;
    if (!n) {
      fail();
      continue;
    }
    std::string value;
    if (const YAML::Node* v = e.find("value")) {
      auto s = r_.str(*v, e.path("value"), /*allow_empty=*/true);
      if (s) value = *s;
    }
    set.exec_mut().env.emplace_back(*n, value);
  }
}

// runAsUser / runAsGroup (the server checks them against the submitter's token) and
// runAsNonRoot. Kubernetes fields sluice does not act on (capabilities, seccomp, ...) are
// noted as ignored in Pods and batch Jobs (`ignored`), errors in a sluice Job (nullptr).
void JobReader::security_context(const YAML::Node& node, const std::string& path,
                                 std::vector<std::string>* ignored) {
  std::vector<std::string> unknown;
  MapReader sc(r_, node, path, {"runAsUser", "runAsGroup", "runAsNonRoot"},
               ignored ? ignored : &unknown);
  if (!sc.is_map()) return fail();
  for (const auto& u : unknown) {
    r_.error(node, u, "unknown field (sluice reads runAsUser, runAsGroup, runAsNonRoot)");
    fail();
  }
  for (auto [key, out] : {std::pair{"runAsUser", &d_.job.exec_mut().run_as_uid},
                          std::pair{"runAsGroup", &d_.job.exec_mut().run_as_gid}}) {
    if (const YAML::Node* n = sc.find(key)) {
      if (auto v = r_.integer(*n, sc.path(key), 0, kMaxUnixId)) {
        *out = *v;
      } else {
        fail();
      }
    }
  }
  if (const YAML::Node* n = sc.find("runAsNonRoot")) {
    if (r_.boolean(*n, sc.path("runAsNonRoot")).value_or(false) && d_.job.exec().run_as_uid == 0) {
      r_.error(*n, sc.path("runAsNonRoot"), "true, but runAsUser is 0");
      fail();
    }
  }
}

void JobReader::ignored_note(const YAML::Node& doc, const std::vector<std::string>& ignored) {
  if (ignored.empty()) return;
  std::string list;
  for (size_t i = 0; i < ignored.size() && i < kMaxIgnoredListed; ++i)
    list += (i ? ", " : "") + ignored[i];
  if (ignored.size() > kMaxIgnoredListed)
    list += " and " + std::to_string(ignored.size() - kMaxIgnoredListed) + " more";
  r_.note(doc, "", "ignored fields: " + list);
}

}  // namespace sluice::config_detail
