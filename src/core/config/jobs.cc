// Stage 3: job documents (sluice Job, v1 Pod, batch/v1 Job) against a resolved config.
#include <algorithm>
#include <limits>

#include "core/config/internal.h"

namespace sluice::config_detail {

namespace {

constexpr int64_t kMaxGpusPerJob = 1'000'000;
constexpr int64_t kMaxPodsPerSet = 100'000;
constexpr size_t kMaxIgnoredListed = 20;
constexpr int64_t kMaxUnixId = 0x7fffffff;  // uid/gid: the kernel's are 32-bit, -1 reserved

const char* kQueueLabel = "kueue.x-k8s.io/queue-name";
const char* kPlainQueueLabel = "queue";
const char* kPriorityLabel = "kueue.x-k8s.io/priority-class";

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

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
};

class JobReader {
 public:
  JobReader(Reader& r, JobContext& ctx) : r_(r), ctx_(ctx), c_(ctx.config) {}

  std::optional<Job> read(const YAML::Node& doc, DocKind kind) {
    d_ = Draft{};
    const size_t errors_before = r_.sink().errors.size() + r_.sink().dropped_errors;
    d_.doc_loc = Loc{r_.where(doc), ""};
    d_.spec_loc = Loc{d_.doc_loc.where, "spec"};
    d_.name_loc = Loc{d_.doc_loc.where, "metadata.name"};
    r_.set_fallback_line(d_.doc_loc.where.line);
    switch (kind) {
      case DocKind::kSluiceJob:
        sluice_job(doc);
        break;
      case DocKind::kPod:
        pod(doc);
        break;
      case DocKind::kBatchJob:
        batch_job(doc);
        break;
      default:
        return std::nullopt;
    }
    // Any error while reading (an unknown field, say) stops here: no cascade of follow-ups.
    if (r_.sink().errors.size() + r_.sink().dropped_errors != errors_before) d_.ok = false;
    if (!d_.ok) return std::nullopt;
    if (!validate() || !resolve()) return std::nullopt;
    if (!read_admitted_status(r_, doc, kind, d_.job, ctx_)) return std::nullopt;
    return std::move(d_.job);
  }

 private:
  void fail() { d_.ok = false; }

  // ---- sluice.dev/v1alpha1 Job -------------------------------------------------------------

  void sluice_job(const YAML::Node& doc) {
    MapReader top(r_, doc, "", {{"apiVersion", "kind", "metadata", "spec", "status"}});
    metadata(doc, top.find("metadata"), nullptr);
    const YAML::Node* spec_node = top.required("spec");
    if (!spec_node) return fail();
    d_.spec_loc = Loc{r_.where(*spec_node), "spec"};
    MapReader spec(r_, *spec_node, "spec", {{"queue",       "priorityClassName",
                                             "preemptible", "interactive",
                                             "podSets",     "gpuModels",
                                             "topology",    "gpuLocality",
                                             "walltime",    "checkpointGrace",
                                             "command",     "env",
                                             "submitTime",  "id",
                                             "gpus",        "pods",
                                             "cpu",         "memory",
                                             "gpuFraction", "resources",
                                             "fallback",    "securityContext"}});
    if (!spec.is_map()) return fail();
    Job& job = d_.job;
    if (const YAML::Node* n = spec.find("queue")) {
      if (auto s = r_.str(*n, "spec.queue")) {
        d_.queue = *s;
        d_.queue_loc = Loc{r_.where(*n), "spec.queue"};
      } else {
        fail();
      }
    } else {
      d_.queue_loc = Loc{r_.where(*spec_node), "spec.queue"};
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
    // Pod sets: the list, or the single-pod-set shorthand (gpus, pods, cpu, memory, ...).
    const char* shorthand[] = {"gpus", "pods", "cpu", "memory", "gpuFraction", "resources"};
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
        MapReader ps(r_, (*n)[i], path, {{"name", "count", "resources", "gpuFraction"}});
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
      r_.error(*spec_node, "spec.podSets",
               "required field missing (or the shorthand: gpus, pods, cpu, memory)");
      return fail();
    }
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
    if (const YAML::Node* n = spec.find("fallback")) fallback(*n);
    if (const YAML::Node* n = spec.find("securityContext"))
      security_context(*n, "spec.securityContext", nullptr);
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
    if (const YAML::Node* n = spec.find("command")) {
      if (n->IsScalar()) {
        job.command = {n->Scalar()};
      } else if (auto v = r_.str_list(*n, "spec.command")) {
        job.command = *v;
      } else {
        fail();
      }
    }
    if (const YAML::Node* n = spec.find("env")) {
      MapReader env(r_, *n, "spec.env", {}, &unused_);
      for (const auto& [key, value] : env.entries()) {
        auto v = r_.str(value, env.path(key), /*allow_empty=*/true);
        if (v) {
          job.env.emplace_back(key, *v);
        } else {
          fail();
        }
      }
    }
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
      } else {
        job.submit_ns = *v;
      }
    }
  }

  // count / resources / gpuFraction of one pod set (also the spec-level shorthand, where the
  // GPU count is `gpus` and cpu/memory sit beside it).
  void pod_set(MapReader& m, const char* count_key, const char* resources_key, const char* gpus_key,
               PodSet& set) {
    if (const YAML::Node* n = m.find(count_key)) {
      if (auto v = r_.integer(*n, m.path(count_key), 1, kMaxPodsPerSet)) {
        set.count = static_cast<int32_t>(*v);
      } else {
        fail();
      }
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

  // Adds one `name: quantity` request to `req` (canonical units; GPUs in milli, whole GPUs
  // only). `ignored` non-null: Pod mode, where a resource sluice does not know is listed.
  void request(const YAML::Node& value, const std::string& path, const std::string& name,
               ResourceVec& req, std::vector<std::string>* ignored) {
    auto id = c_.resources.find(name);
    if (!id) {
      if (ignored) {
        ignored->push_back(path);
        return;
      }
      std::vector<std::string> known;
      for (int i = 0; i < c_.resources.size(); ++i)
        known.push_back(c_.resources.name(static_cast<ResourceId>(i)));
      r_.error(value, path,
               "unknown resource " + quote(name) +
                   " (no ClusterQueue covers it; known: " + join(known) + ")");
      return fail();
    }
    auto milli = value.IsScalar() ? parse_quantity_milli(value.Scalar()) : std::nullopt;
    if (!milli) {
      r_.error(value, path,
               (value.IsScalar() ? quote(value.Scalar()) + " is not" : std::string("must be")) +
                   " a quantity (e.g. 8, 500m, 64Gi)");
      return fail();
    }
    if (*milli < 0) {
      r_.error(value, path, quote(value.Scalar()) + " must not be negative");
      return fail();
    }
    if (*id == kGpu || c_.resources.is_mig(*id)) {
      const char* what = *id == kGpu ? "GPUs" : "MIG slices";
      if (*milli % 1000 != 0) {
        r_.error(value, path,
                 quote(value.Scalar()) + " must be a whole number of " + what +
                     (*id == kGpu ? " (use gpuFraction for a share of one GPU)" : ""));
        return fail();
      }
      if (*milli / 1000 > kMaxGpusPerJob) {
        r_.error(
            value, path,
            quote(value.Scalar()) + " is more than " + std::to_string(kMaxGpusPerJob) + " " + what);
        return fail();
      }
    }
    int64_t amount = milli_to_canonical(*id, *milli);
    if (__builtin_add_overflow(req[*id], amount, &req[*id])) {
      r_.error(value, path, "total request overflows");
      return fail();
    }
    if (amount > 0) d_.resource_locs.emplace_back(*id, Loc{r_.where(value), path});
  }

  // spec.fallback: {after: 10m, shapes: [{pods: 2, gpus: 4, cpu: 16, memory: 64Gi}]}.
  void fallback(const YAML::Node& node) {
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

  void topology(const YAML::Node& node) {
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
               "unknown topology level " + quote(*level) + " (known: " + join(known) + ")");
      return fail();
    }
    d_.job.topology = TopologyRequest{li, req != nullptr};
  }

  // ---- v1 Pod and batch/v1 Job ---------------------------------------------------------------

  void pod(const YAML::Node& doc) {
    std::vector<std::string> ignored;
    MapReader top(r_, doc, "", {"apiVersion", "kind", "metadata", "spec", "status"}, &ignored);
    metadata(doc, top.find("metadata"), &ignored);
    const YAML::Node* spec = top.required("spec");
    if (!spec) return fail();
    d_.spec_loc = Loc{r_.where(*spec), "spec"};
    PodSet set;
    pod_spec(*spec, "spec", set, ignored);
    d_.job.pod_sets.push_back(std::move(set));
    ignored_note(doc, ignored);
  }

  void batch_job(const YAML::Node& doc) {
    std::vector<std::string> ignored;
    MapReader top(r_, doc, "", {"apiVersion", "kind", "metadata", "spec", "status"}, &ignored);
    metadata(doc, top.find("metadata"), &ignored);
    const YAML::Node* spec_node = top.required("spec");
    if (!spec_node) return fail();
    d_.spec_loc = Loc{r_.where(*spec_node), "spec"};
    MapReader spec(r_, *spec_node, "spec", {"parallelism", "completions", "template"}, &ignored);
    PodSet set;
    if (const YAML::Node* n = spec.find("parallelism")) {
      if (auto v = r_.integer(*n, "spec.parallelism", 1, kMaxPodsPerSet)) {
        set.count = static_cast<int32_t>(*v);
      } else {
        fail();
      }
    }
    if (const YAML::Node* n = spec.find("completions"))
      r_.note(*n, "spec.completions", "ignored: sluice runs `parallelism` pods once, as one gang");
    const YAML::Node* tmpl = spec.required("template");
    if (!tmpl) return fail();
    MapReader t(r_, *tmpl, "spec.template", {"spec"}, &ignored);
    const YAML::Node* pod_spec_node = t.required("spec");
    if (!pod_spec_node) return fail();
    pod_spec(*pod_spec_node, "spec.template.spec", set, ignored);
    d_.job.pod_sets.push_back(std::move(set));
    ignored_note(doc, ignored);
  }

  // Containers' resources (limits, else requests) summed; init containers: the max of them.
  void pod_spec(const YAML::Node& node, const std::string& path, PodSet& set,
                std::vector<std::string>& ignored) {
    MapReader spec(r_, node, path,
                   {"containers", "initContainers", "priorityClassName", "securityContext"},
                   &ignored);
    if (!spec.is_map()) return fail();
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
      sum += container((*containers)[i], index(spec.path("containers"), i), i == 0, ignored);
    if (const YAML::Node* inits = spec.find("initContainers")) {
      if (r_.expect_seq(*inits, spec.path("initContainers"))) {
        for (size_t i = 0; i < inits->size(); ++i) {
          ResourceVec v =
              container((*inits)[i], index(spec.path("initContainers"), i), false, ignored);
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

  ResourceVec container(const YAML::Node& node, const std::string& path, bool first,
                        std::vector<std::string>& ignored) {
    static const std::vector<const char*> kFirst = {"name", "resources", "command",
                                                    "args", "env",       "securityContext"};
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
      d_.job.command = list("command");
      for (auto& a : list("args")) d_.job.command.push_back(std::move(a));
      if (const YAML::Node* env = c.find("env")) {
        if (r_.expect_seq(*env, c.path("env"))) {
          for (size_t i = 0; i < env->size(); ++i) {
            MapReader e(r_, (*env)[i], index(c.path("env"), i), {"name", "value"}, &ignored);
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
            d_.job.env.emplace_back(*n, value);
          }
        } else {
          fail();
        }
      }
    }
    return limits;
  }

  // runAsUser / runAsGroup (the server checks them against the submitter's token) and
  // runAsNonRoot. Kubernetes fields sluice does not act on (capabilities, seccomp, ...) are
  // noted as ignored in Pods and batch Jobs (`ignored`), errors in a sluice Job (nullptr).
  void security_context(const YAML::Node& node, const std::string& path,
                        std::vector<std::string>* ignored) {
    std::vector<std::string> unknown;
    MapReader sc(r_, node, path, {"runAsUser", "runAsGroup", "runAsNonRoot"},
                 ignored ? ignored : &unknown);
    if (!sc.is_map()) return fail();
    for (const auto& u : unknown) {
      r_.error(node, u, "unknown field (sluice reads runAsUser, runAsGroup, runAsNonRoot)");
      fail();
    }
    for (auto [key, out] : {std::pair{"runAsUser", &d_.job.run_as_uid},
                            std::pair{"runAsGroup", &d_.job.run_as_gid}}) {
      if (const YAML::Node* n = sc.find(key)) {
        if (auto v = r_.integer(*n, sc.path(key), 0, kMaxUnixId)) {
          *out = *v;
        } else {
          fail();
        }
      }
    }
    if (const YAML::Node* n = sc.find("runAsNonRoot")) {
      if (r_.boolean(*n, sc.path("runAsNonRoot")).value_or(false) && d_.job.run_as_uid == 0) {
        r_.error(*n, sc.path("runAsNonRoot"), "true, but runAsUser is 0");
        fail();
      }
    }
  }

  void ignored_note(const YAML::Node& doc, const std::vector<std::string>& ignored) {
    if (ignored.empty()) return;
    std::string list;
    for (size_t i = 0; i < ignored.size() && i < kMaxIgnoredListed; ++i)
      list += (i ? ", " : "") + ignored[i];
    if (ignored.size() > kMaxIgnoredListed)
      list += " and " + std::to_string(ignored.size() - kMaxIgnoredListed) + " more";
    r_.note(doc, "", "ignored fields: " + list);
  }

  // ---- shared ----------------------------------------------------------------------------

  void metadata(const YAML::Node& doc, const YAML::Node* node, std::vector<std::string>* ignored) {
    Metadata m = read_metadata(r_, doc, node, ignored);
    if (!m.ok) return fail();
    d_.job.name = m.name;
    d_.job.namespace_ = m.namespace_;
    if (node && node->IsMap())
      for (auto it = node->begin(); it != node->end(); ++it)
        if (it->first.IsScalar() && it->first.Scalar() == "name")
          d_.name_loc = Loc{r_.where(it->second), "metadata.name"};
    if (!ignored) return;
    // Pods and batch Jobs: queue and priority from labels.
    std::optional<YAML::Node> labels;  // a copy: yaml-cpp's iterator yields temporaries
    if (node && node->IsMap())
      for (auto it = node->begin(); it != node->end(); ++it)
        if (it->first.IsScalar() && it->first.Scalar() == "labels") labels = it->second;
    Loc labels_loc{r_.where(labels ? *labels : *node), "metadata.labels"};
    if (const std::string* q = find_label(m.labels, kQueueLabel)) {
      d_.queue = *q;
      d_.queue_loc = Loc{labels_loc.where, child("metadata.labels", kQueueLabel)};
    } else if (const std::string* q2 = find_label(m.labels, kPlainQueueLabel)) {
      d_.queue = *q2;
      d_.queue_loc = Loc{labels_loc.where, child("metadata.labels", kPlainQueueLabel)};
    } else {
      d_.queue_loc = labels_loc;
    }
    if (const std::string* p = find_label(m.labels, kPriorityLabel)) {
      d_.priority = *p;
      d_.priority_loc = Loc{labels_loc.where, child("metadata.labels", kPriorityLabel)};
    }
  }

  void error_at(const Loc& loc, const std::string& message) {
    r_.sink().error(format(loc.where, loc.path, message));
    fail();
  }

  // Requests that make no sense whatever the cluster.
  bool validate() {
    Job& job = d_.job;
    int64_t gpus = 0;
    bool any = false;
    for (const auto& set : job.pod_sets) {
      gpus += static_cast<int64_t>(set.count) * set.gpus;
      any = any || !set.requests.is_zero();
    }
    if (!any) {
      error_at(d_.spec_loc, "the job requests no resources (set nvidia.com/gpu, cpu or memory)");
      return false;
    }
    // A fallback shape replaces the job's one pod set of whole GPUs.
    if (!job.fallback.shapes.empty() &&
        (job.pod_sets.size() != 1 || job.pod_sets[0].gpus < 1 ||
         job.pod_sets[0].gpu_milli != static_cast<int32_t>(kMilliPerGpu))) {
      error_at(d_.fallback_loc,
               "fallback shapes need a job of one pod set with whole GPUs (this one has " +
                   std::to_string(job.pod_sets.size()) + " pod sets)");
      return false;
    }
    if (gpus > kMaxGpusPerJob) {
      error_at(d_.spec_loc, "the job asks for " + std::to_string(gpus) +
                                " GPUs in total; at most " + std::to_string(kMaxGpusPerJob));
      return false;
    }
    return true;
  }

  // Queue, priority, defaults from the ClusterQueue, resources covered by its groups.
  bool resolve() {
    Job& job = d_.job;
    // 1. Unique name within the namespace.
    if (!ctx_.names.emplace(job.namespace_, job.name).second) {
      error_at(d_.name_loc, "duplicate job " + quote(job.namespace_ + "/" + job.name));
      return false;
    }
    // 2. LocalQueue (default: "default" in the job's namespace) and its ClusterQueue.
    const std::string queue = d_.queue.empty() ? "default" : d_.queue;
    auto lq = c_.find_local_queue(job.namespace_, queue);
    if (!lq) {
      std::vector<std::string> known;
      for (const auto& q : c_.local_queues) known.push_back(q.namespace_ + "/" + q.name);
      std::string what = d_.queue.empty()
                             ? "no queue given (spec.queue, or label " + std::string(kQueueLabel) +
                                   " or queue) and no LocalQueue \"default\""
                             : "LocalQueue " + quote(queue) + " not found";
      error_at(d_.queue_loc, what + " in namespace " + quote(job.namespace_) + " (queues: " +
                                 (known.empty() ? "none defined" : join(known)) + ")");
      return false;
    }
    job.queue = queue;
    const ClusterQueue& cq = c_.cluster_queues[static_cast<size_t>(
        c_.local_queues[static_cast<size_t>(*lq)].cluster_queue)];
    // 3. Priority: the job's class, else the queue's default class, else none (0).
    std::string pc = d_.priority;
    Loc pc_loc = d_.priority_loc;
    if (pc.empty()) pc = cq.default_priority_class;
    if (!pc.empty()) {
      if (const PriorityClass* p = c_.find_priority_class(pc)) {
        job.priority = p->value;
      } else if (auto it = ctx_.builtin_priorities.find(pc); it != ctx_.builtin_priorities.end()) {
        job.priority = it->second;
      } else if (auto v = builtin_priority(pc)) {
        ctx_.builtin_priorities.emplace(pc, *v);
        job.priority = *v;
        r_.sink().warning(format(pc_loc.where, pc_loc.path,
                                 "WorkloadPriorityClass " + quote(pc) +
                                     " is not defined; using the built-in value " +
                                     std::to_string(*v)));
      } else {
        std::vector<std::string> known;
        for (const auto& p : c_.priority_classes) known.push_back(p.name);
        error_at(pc_loc, "unknown priority class " + quote(pc) +
                             " (defined: " + (known.empty() ? "none" : join(known)) +
                             "; built-in: low, normal, medium, high, critical)");
        return false;
      }
      job.priority_class = pc;
    }
    // 4. Defaults from the ClusterQueue.
    job.preemptible = d_.preemptible.value_or(cq.preemptible);
    job.interactive = d_.interactive.value_or(cq.interactive);
    // 5. Every requested resource is covered by one of the queue's resource groups.
    bool ok = true;
    for (const auto& [res, loc] : d_.resource_locs) {
      bool covered = std::any_of(cq.resource_groups.begin(), cq.resource_groups.end(),
                                 [&, res = res](const auto& g) {
                                   return std::count(g.covered.begin(), g.covered.end(), res) > 0;
                                 });
      if (covered) continue;
      std::vector<std::string> names;
      for (const auto& g : cq.resource_groups)
        for (ResourceId id : g.covered) names.push_back(c_.resources.name(id));
      error_at(loc, "no resource group of ClusterQueue " + quote(cq.name) + " covers " +
                        c_.resources.name(res) +
                        " (covered: " + (names.empty() ? "nothing" : join(names)) + ")");
      ok = false;
      break;
    }
    // 6. Allowed GPU models that no node has: the job could never run (a warning: the cluster
    // may not be described in this configuration).
    if (!job.allowed_models.empty() && c_.cluster.total_gpus() > 0) {
      std::vector<std::string> models;
      for (const auto& n : c_.cluster.nodes)
        for (const auto& g : n.gpus)
          if (std::find(models.begin(), models.end(), g.model) == models.end())
            models.push_back(g.model);
      for (const auto& m : job.allowed_models)
        if (std::find(models.begin(), models.end(), m) == models.end())
          r_.sink().warning(
              format(d_.models_loc.where, d_.models_loc.path,
                     "no node has GPU model " + quote(m) + " (models: " + join(models) + ")"));
    }
    return ok;
  }

  Reader& r_;
  JobContext& ctx_;
  const Config& c_;
  Draft d_;
  std::vector<std::string> unused_;  // maps whose keys are data (env, resources)
};

}  // namespace

std::optional<Job> read_job(Reader& r, const YAML::Node& doc, DocKind kind, JobContext& ctx) {
  return JobReader(r, ctx).read(doc, kind);
}

void assign_job_ids(std::vector<Job>& jobs, std::vector<Where>& where, Sink& sink) {
  std::set<JobId> used;
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (jobs[i].id == 0) continue;
    if (!used.insert(jobs[i].id).second)
      sink.error(format(where[i], "spec.id", "duplicate job id " + std::to_string(jobs[i].id)));
  }
  JobId next = 1;
  for (auto& job : jobs) {
    if (job.id != 0) continue;
    while (used.count(next)) ++next;
    job.id = next++;
  }
}

}  // namespace sluice::config_detail
