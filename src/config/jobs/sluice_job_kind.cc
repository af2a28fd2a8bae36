// sluice.dev/v1alpha1 Job: sluice's own job kind (docs/config.md, "Job").
#include <algorithm>
#include <limits>

#include "config/jobs/job_reader.h"
#include "core/model/job_control.h"
#include "core/model/node_pool.h"

namespace sluice::config_detail {

namespace {

// spec.spot: false: every pod set keeps off spot nodes (docs/autoscaling.md, "Reclaims"): a
// required `sluice.dev/capacity-type NotIn [spot]` in each of its affinity's terms (a node
// without the label, a Cluster node, matches). The autoscaler then starts no spot node for it.
void refuse_spot(std::vector<PodSet>& sets) {
  const NodeRequirement no_spot{kCapacityTypeLabel, NodeOp::kNotIn, {"spot"}};
  for (PodSet& set : sets) {
    NodeAffinity a = set.node ? *set.node : NodeAffinity{};
    if (a.terms.empty()) a.terms.emplace_back();
    for (auto& term : a.terms) term.push_back(no_spot);
    set.node = std::make_shared<const NodeAffinity>(std::move(a));
  }
}

}  // namespace

void JobReader::sluice_job(const YAML::Node& doc) {
  MapReader top(r_, doc, "", {{"apiVersion", "kind", "metadata", "spec", "status"}});
  metadata(doc, top.find("metadata"), nullptr);
  const YAML::Node* spec_node = top.required("spec");
  if (!spec_node) return fail();
  d_.spec_loc = Loc{r_.where(*spec_node), "spec"};
  MapReader spec(r_, *spec_node, "spec",
                 {{"queue",
                   "priorityClassName",
                   "preemptible",
                   "interactive",
                   "podSets",
                   "gpuModels",
                   "topology",
                   "gpuLocality",
                   "walltime",
                   "checkpointGrace",
                   "completeBy",
                   "completeWithin",
                   "command",
                   "env",
                   "submitTime",
                   "id",
                   "gpus",
                   "pods",
                   "maxPodsPerNode",
                   "cpu",
                   "memory",
                   "gpuFraction",
                   "resources",
                   "fallback",
                   "securityContext",
                   "distributedEnv",
                   "workingDir",
                   "dependency",
                   "hold",
                   "array",
                   "output",
                   "error",
                   "tty",
                   "spot",
                   "rightSize"}});
  if (!spec.is_map()) return fail();
  sluice_spec(spec, *spec_node);
}

// The fields of a sluice Job's spec.
void JobReader::sluice_spec(MapReader& spec, const YAML::Node& spec_node) {
  Job& job = d_.job;
  if (const YAML::Node* n = spec.find("queue")) {
    if (auto s = r_.str(*n, "spec.queue")) {
      d_.queue = *s;
      d_.queue_loc = Loc{r_.where(*n), "spec.queue"};
    } else {
      fail();
    }
  } else {
    d_.queue_loc = Loc{r_.where(spec_node), "spec.queue"};
  }
  if (const YAML::Node* n = spec.find("priorityClassName")) {
    if (auto s = r_.str(*n, "spec.priorityClassName")) {
      d_.priority = *s;
      d_.priority_loc = Loc{r_.where(*n), "spec.priorityClassName"};
    } else {
      fail();
    }
  }
  if (const YAML::Node* n = spec.find("preemptible")) {
    d_.preemptible = r_.boolean(*n, "spec.preemptible");
    if (!d_.preemptible) fail();
  }
  if (const YAML::Node* n = spec.find("interactive")) {
    d_.interactive = r_.boolean(*n, "spec.interactive");
    if (!d_.interactive) fail();
  }
  if (const YAML::Node* n = spec.find("id")) {
    if (auto v = r_.integer(*n, "spec.id", 1, std::numeric_limits<int64_t>::max())) {
      job.id = static_cast<JobId>(*v);
      d_.has_id = true;
    } else {
      fail();
    }
  }
  sluice_pod_sets(spec, spec_node);
  if (!d_.ok) return;
  if (const YAML::Node* n = spec.find("gpuModels")) {
    if (auto v = r_.str_list(*n, "spec.gpuModels")) {
      job.allowed_models = *v;
      d_.models_loc = Loc{r_.where(*n), "spec.gpuModels"};
    } else {
      fail();
    }
  }
  if (const YAML::Node* n = spec.find("topology")) topology(*n);
  if (const YAML::Node* n = spec.find("gpuLocality")) {
    if (auto v = r_.choice<GpuLocality>(
            *n, "spec.gpuLocality",
            {{"preferred", GpuLocality::kPreferred}, {"nvlink", GpuLocality::kRequireNvlink}})) {
      job.gpu_locality = *v;
    } else {
      fail();
    }
  }
  if (const YAML::Node* n = spec.find("spot")) {
    const auto v = r_.boolean(*n, "spec.spot");
    if (!v) return fail();
    if (!*v) refuse_spot(job.pod_sets);
  }
  if (const YAML::Node* n = spec.find("fallback")) fallback(*n);
  if (const YAML::Node* n = spec.find("securityContext"))
    security_context(*n, "spec.securityContext", nullptr);
  sluice_run_fields(spec);
}

// What a sluice Job's pods run and for how long: walltime, checkpointGrace, command, env,
// distributedEnv, submitTime.
void JobReader::sluice_run_fields(MapReader& spec) {
  Job& job = d_.job;
  if (const YAML::Node* n = spec.find("distributedEnv")) {
    if (auto v = r_.choice<GangEnv>(
            *n, "spec.distributedEnv",
            {{"none", GangEnv::kNone}, {"torch", GangEnv::kTorch}, {"mpi", GangEnv::kMpi}})) {
      job.exec_mut().gang_env = *v;
    } else {
      fail();
    }
  }
  auto duration = [&](const char* key, TimeNs* out) {
    if (const YAML::Node* n = spec.find(key)) {
      if (auto v = r_.duration(*n, spec.path(key))) {
        *out = *v;
      } else {
        fail();
      }
    }
  };
  duration("walltime", &job.walltime_ns);
  duration("checkpointGrace", &job.checkpoint_grace_ns);
  sluice_deadline(spec);
  if (const YAML::Node* n = spec.find("command")) {
    if (n->IsScalar()) {
      job.exec_mut().command = {n->Scalar()};
    } else if (auto v = r_.str_list(*n, "spec.command")) {
      job.exec_mut().command = *v;
    } else {
      fail();
    }
  }
  if (const YAML::Node* n = spec.find("env")) {
    MapReader env(r_, *n, "spec.env", {}, &unused_);
    for (const auto& [key, value] : env.entries()) {
      auto v = r_.str(value, env.path(key), /*allow_empty=*/true);
      if (v) {
        job.exec_mut().env.emplace_back(key, *v);
      } else {
        fail();
      }
    }
  }
  // spec.workingDir: where the pods start, on nodes that have it (docs/config.md).
  if (const YAML::Node* n = spec.find("workingDir")) {
    const auto v = r_.str(*n, "spec.workingDir");
    const std::string dir = v.value_or("");
    if (!v) {
      fail();
    } else if (dir.empty() || dir.front() != '/' || dir.size() > 4096) {
      r_.error(*n, "spec.workingDir",
               quote(dir) + " must be an absolute path (at most 4096 bytes)");
      fail();
    } else {
      job.exec_mut().working_dir = dir;
    }
  }
  sluice_control_fields(spec);
  if (const YAML::Node* n = spec.find("submitTime")) {
    auto v = n->IsScalar() ? parse_scaled_decimal(n->Scalar(), kNsPerSec) : std::nullopt;
    if (!v) {
      r_.error(*n, "spec.submitTime",
               (n->IsScalar() ? quote(n->Scalar()) + " is" : std::string("is")) +
                   " not a number of seconds");
      fail();
    } else if (*v < 0) {
      r_.error(*n, "spec.submitTime", quote(n->Scalar()) + " must not be negative");
      fail();
    } else if (*v > kMaxTimePointNs) {
      r_.error(*n, "spec.submitTime", quote(n->Scalar()) + " is after 2200-01-01");
      fail();
    } else {
      job.submit_ns = *v;
    }
  }
}

// Slurm-style job control (docs/config.md, "Job"): dependency, hold, array, output, error.
void JobReader::sluice_control_fields(MapReader& spec) {
  Job& job = d_.job;
  auto text = [&](const char* key, std::string* out) -> const YAML::Node* {
    const YAML::Node* n = spec.find(key);
    if (!n) return nullptr;
    auto v = r_.str(*n, spec.path(key));
    if (!v) {
      fail();
      return nullptr;
    }
    if (v->size() > 4096) {
      r_.error(*n, spec.path(key), "longer than 4096 bytes");
      fail();
      return nullptr;
    }
    *out = *v;
    return n;
  };
  if (const YAML::Node* n = text("dependency", &job.exec_mut().dependency))
    if (auto d = parse_dependency(job.exec().dependency); !d) {
      r_.error(*n, "spec.dependency", d.error());
      fail();
    }
  if (const YAML::Node* n = text("array", &job.exec_mut().array))
    if (auto a = parse_array_spec(job.exec().array); !a) {
      r_.error(*n, "spec.array", a.error());
      fail();
    }
  text("output", &job.exec_mut().output);
  text("error", &job.exec_mut().error);
  if (const YAML::Node* n = spec.find("hold")) {
    auto v = r_.boolean(*n, "spec.hold");
    if (v)
      job.exec_mut().hold = *v;
    else
      fail();
  }
  if (const YAML::Node* n = spec.find("rightSize")) {
    if (!right_size_value(r_.str(*n, "spec.rightSize"), Loc{r_.where(*n), "spec.rightSize"}))
      return fail();
  }
  if (const YAML::Node* n = spec.find("tty")) {
    auto v = r_.boolean(*n, "spec.tty");
    if (!v) return fail();
    job.exec_mut().tty = *v;
    // One terminal: one pod, writing to it (not to files), not a task of an array.
    if (job.exec().tty && (job.pod_count() != 1 || !job.exec().array.empty() ||
                           !job.exec().output.empty() || !job.exec().error.empty())) {
      r_.error(*n, "spec.tty",
               "an interactive job (tty) has one pod, no array and no output or error file");
      fail();
    }
  }
}

// Pod sets: the list, or the single-pod-set shorthand (gpus, pods, cpu, memory, ...).
void JobReader::sluice_pod_sets(MapReader& spec, const YAML::Node& spec_node) {
  Job& job = d_.job;
  const char* shorthand[] = {"gpus",   "pods",        "maxPodsPerNode", "cpu",
                             "memory", "gpuFraction", "resources"};
  bool has_shorthand = std::any_of(std::begin(shorthand), std::end(shorthand),
                                   [&](const char* k) { return spec.has(k); });
  if (const YAML::Node* n = spec.find("podSets")) {
    if (has_shorthand) {
      r_.error(*n, "spec.podSets",
               "use either podSets or the single-pod-set shorthand (gpus, pods, cpu, memory, "
               "gpuFraction, resources), not both");
      return fail();
    }
    if (!r_.expect_seq(*n, "spec.podSets")) return fail();
    if (n->size() == 0) {
      r_.error(*n, "spec.podSets", "must not be empty");
      return fail();
    }
    for (size_t i = 0; i < n->size(); ++i) {
      const std::string path = index("spec.podSets", i);
      MapReader ps(r_, (*n)[i], path,
                   {{"name", "count", "minCount", "maxPodsPerNode", "resources", "gpuFraction"}});
      if (!ps.is_map()) {
        fail();
        continue;
      }
      PodSet set;
      if (const YAML::Node* name = ps.find("name")) {
        if (auto s = r_.str(*name, ps.path("name"))) {
          set.name = *s;
        } else {
          fail();
        }
      } else if (n->size() > 1) {
        set.name = "set-" + std::to_string(i);
      }
      pod_set(ps, "count", "resources", "gpus", set);
      if (const YAML::Node* mc = ps.find("minCount")) min_count(*mc, ps.path("minCount"), set);
      for (const auto& other : job.pod_sets)
        if (other.name == set.name) {
          r_.error((*n)[i], ps.path("name"), "duplicate pod set name " + quote(set.name));
          fail();
        }
      job.pod_sets.push_back(std::move(set));
    }
  } else if (has_shorthand) {
    PodSet set;
    pod_set(spec, "pods", "resources", "gpus", set);
    job.pod_sets.push_back(std::move(set));
  } else {
    r_.error(spec_node, "spec.podSets",
             "required field missing (or the shorthand: gpus, pods, cpu, memory)");
    return fail();
  }
}

// count / resources / gpuFraction of one pod set (also the spec-level shorthand, where the
// GPU count is `gpus` and cpu/memory sit beside it).
void JobReader::pod_set(MapReader& m, const char* count_key, const char* resources_key,
                        const char* gpus_key, PodSet& set) {
  if (const YAML::Node* n = m.find(count_key)) {
    if (auto v = r_.integer(*n, m.path(count_key), 1, kMaxPodsPerSet)) {
      set.count = static_cast<int32_t>(*v);
    } else {
      fail();
    }
  }
  // At most this many pods of the set on one node (1: each on a node of its own).
  if (const YAML::Node* n = m.find("maxPodsPerNode")) {
    if (auto v = r_.integer(*n, m.path("maxPodsPerNode"), 1, kMaxPodsPerSet))
      set.max_per_node = static_cast<int32_t>(*v);
    else
      fail();
  }
  ResourceVec req;
  if (const YAML::Node* n = m.find(resources_key)) {
    MapReader res(r_, *n, m.path(resources_key), {}, &unused_);
    for (const auto& [name, value] : res.entries())
      request(value, res.path(name), name, req, nullptr);
  }
  // Shorthand fields (only present at spec level).
  bool shorthand = std::string_view(count_key) == "pods";
  if (shorthand) {
    if (const YAML::Node* n = m.find(gpus_key))
      request(*n, m.path(gpus_key), std::string(kGpuResourceName), req, nullptr);
    if (const YAML::Node* n = m.find("cpu")) request(*n, m.path("cpu"), "cpu", req, nullptr);
    if (const YAML::Node* n = m.find("memory"))
      request(*n, m.path("memory"), "memory", req, nullptr);
  }
  set.requests = req;
  set.gpus = static_cast<int32_t>(req[kGpu] / kMilliPerGpu);
  set.gpu_milli = static_cast<int32_t>(kMilliPerGpu);
  if (const YAML::Node* n = m.find("gpuFraction")) {
    const std::string path = m.path("gpuFraction");
    auto milli = n->IsScalar() ? parse_quantity_milli(n->Scalar()) : std::nullopt;
    if (!milli) {
      r_.error(*n, path, "must be a fraction of one GPU (e.g. 0.5 or 500m)");
      return fail();
    }
    if (*milli <= 0 || *milli > kMilliPerGpu) {
      r_.error(*n, path, quote(n->Scalar()) + " must be in (0, 1]");
      return fail();
    }
    if (set.gpus > 1) {
      r_.error(*n, path,
               "a fraction needs exactly 1 GPU per pod (this pod set asks for " +
                   std::to_string(set.gpus) + ")");
      return fail();
    }
    set.gpus = 1;
    set.gpu_milli = static_cast<int32_t>(*milli);
    set.requests[kGpu] = *milli;
    d_.resource_locs.emplace_back(kGpu, Loc{r_.where(*n), path});
  }
}

// A pod set's minCount (Kueue's partial admission): 1 .. count.
void JobReader::min_count(const YAML::Node& node, const std::string& path, PodSet& set) {
  if (auto v = r_.integer(node, path, 1, set.count)) {
    set.min_count = static_cast<int32_t>(*v);
  } else {
    fail();
  }
}

// spec.fallback: {after: 10m, shapes: [{pods: 2, gpus: 4, cpu: 16, memory: 64Gi}]}.
void JobReader::fallback(const YAML::Node& node) {
  MapReader f(r_, node, "spec.fallback", {{"after", "shapes"}});
  if (!f.is_map()) return fail();
  d_.fallback_loc = Loc{r_.where(node), "spec.fallback"};
  if (const YAML::Node* a = f.find("after")) {
    if (auto v = r_.duration(*a, "spec.fallback.after")) {
      d_.job.fallback.after_ns = *v;
    } else {
      fail();
    }
  }
  const YAML::Node* shapes = f.find("shapes");
  if (!shapes) return;
  if (!r_.expect_seq(*shapes, "spec.fallback.shapes")) return fail();
  for (size_t i = 0; i < shapes->size(); ++i) {
    const std::string path = index("spec.fallback.shapes", i);
    MapReader s(r_, (*shapes)[i], path, {{"pods", "gpus", "cpu", "memory"}});
    if (!s.is_map()) {
      fail();
      continue;
    }
    FallbackShape shape;
    if (const YAML::Node* n = s.find("pods")) {
      if (auto v = r_.integer(*n, s.path("pods"), 1, kMaxPodsPerSet)) {
        shape.pods = static_cast<int32_t>(*v);
      } else {
        fail();
      }
    }
    if (const YAML::Node* n = s.required("gpus")) {
      if (auto v = r_.integer(*n, s.path("gpus"), 1, 64)) {
        shape.gpus = static_cast<int32_t>(*v);
      } else {
        fail();
      }
    } else {
      fail();
    }
    if (const YAML::Node* n = s.find("cpu")) {
      if (auto v = r_.quantity(*n, s.path("cpu"), kCpu)) {
        shape.cpu_milli = *v;
      } else {
        fail();
      }
    }
    if (const YAML::Node* n = s.find("memory")) {
      if (auto v = r_.quantity(*n, s.path("memory"), kMemory)) {
        shape.memory_mib = *v;
      } else {
        fail();
      }
    }
    d_.job.fallback.shapes.push_back(shape);
  }
}

void JobReader::topology(const YAML::Node& node) {
  MapReader t(r_, node, "spec.topology", {{"required", "preferred"}});
  if (!t.is_map()) return fail();
  const YAML::Node* req = t.find("required");
  const YAML::Node* pref = t.find("preferred");
  if (req && pref) {
    r_.error(node, "spec.topology", "set either required or preferred, not both");
    return fail();
  }
  if (!req && !pref) return;
  const std::string path = req ? "spec.topology.required" : "spec.topology.preferred";
  auto level = r_.str(req ? *req : *pref, path);
  if (!level) return fail();
  int li = c_.cluster.level_index(*level);
  if (li < 0) {
    std::vector<std::string> known = c_.cluster.levels;
    known.push_back("node");
    r_.error(req ? *req : *pref, path,
             "unknown topology level " + quote(*level) + " (known: " + join_list(known) + ")");
    return fail();
  }
  d_.job.topology = TopologyRequest{li, req != nullptr};
}

}  // namespace sluice::config_detail
