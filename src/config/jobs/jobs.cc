// Stage 3: job documents against a resolved config. This file: the dispatch by kind, what every
// kind shares (metadata: name, generateName, queue, priority; resource requests), validation
// and resolution. The kinds themselves: job_reader.h.
#include <algorithm>
#include <cctype>

#include "config/jobs/job_reader.h"
#include "core/model/splitmix.h"

namespace sluice::config_detail {

namespace {

const char* kQueueLabel = "kueue.x-k8s.io/queue-name";  // label, or annotation (older Kueue)
const char* kPlainQueueLabel = "queue";
const char* kPriorityLabel = "kueue.x-k8s.io/priority-class";
const char* kPodGroupLabel = "kueue.x-k8s.io/pod-group-name";
const char* kPodGroupTotal = "kueue.x-k8s.io/pod-group-total-count";

// Kubernetes resources a pod may request that no scheduler quota manages: listed as ignored.
bool kubernetes_unmanaged(const std::string& name) {
  return name == "ephemeral-storage" || name == "storage" || name == "pods" ||
         name.starts_with("hugepages-") || name.starts_with("attachable-volumes-");
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] != b[j - 1] ? 1 : 0)});
      diag = up;
    }
  }
  return row[b.size()];
}

// Kubernetes' alphabet for generated names (no vowels, no look-alikes).
constexpr std::string_view kNameAlphabet = "bcdfghjklmnpqrstvwxz2456789";
constexpr size_t kGeneratedSuffix = 5;

std::string generated_name(const std::string& prefix, uint64_t seed, uint64_t n) {
  uint64_t h = splitmix64(seed ^ splitmix64(n));
  for (char c : prefix) h = splitmix64(h ^ static_cast<unsigned char>(c));
  std::string out = prefix.substr(0, 253 - kGeneratedSuffix);
  for (size_t i = 0; i < kGeneratedSuffix; ++i) {
    out += kNameAlphabet[h % kNameAlphabet.size()];
    h /= kNameAlphabet.size();
  }
  return out;
}

// Opt-in to right-sizing on Kubernetes kinds (spec.rightSize on a sluice Job).
const char* kRightSizeAnnotation = "sluice.dev/right-size";

}  // namespace

std::optional<YAML::Node> value_of(const YAML::Node* map, const char* key) {
  if (map && map->IsMap())
    for (auto it = map->begin(); it != map->end(); ++it)
      if (it->first.IsScalar() && it->first.Scalar() == key) return it->second;
  return std::nullopt;
}

std::optional<ReadJob> JobReader::read(const YAML::Node& doc, DocKind kind) {
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
    case DocKind::kJobSet:
      jobset(doc);
      break;
    case DocKind::kPyTorchJob:
    case DocKind::kMpiJob:
      kubeflow_job(doc, kind);
      break;
    default:
      return std::nullopt;
  }
  if (kind != DocKind::kPod) d_.group = PodGroupMember{};  // Kueue groups plain Pods only
  // Any error while reading (an unknown field, say) stops here: no cascade of follow-ups.
  if (r_.sink().errors.size() + r_.sink().dropped_errors != errors_before) d_.ok = false;
  if (!d_.ok) return std::nullopt;
  if (!validate() || !resolve()) return std::nullopt;
  if (!read_admitted_status(r_, doc, kind, d_.job, ctx_)) return std::nullopt;
  return ReadJob{std::move(d_.job), d_.doc_loc.where, std::move(d_.group),
                 std::exchange(ctx_.admitted, std::nullopt)};
}

bool JobReader::right_size_value(const std::optional<std::string>& text, const Loc& loc) {
  if (!text) return false;
  if (*text != "auto" && *text != "off") {
    error_at(loc, quote(*text) + " is not a right-sizing mode (want auto or off)");
    return false;
  }
  d_.job.right_size = *text == "auto";
  return true;
}

void JobReader::metadata(const YAML::Node& doc, const YAML::Node* node,
                         std::vector<std::string>* ignored) {
  Metadata m = read_metadata(r_, doc, node, ignored);
  if (!m.ok) return fail();
  d_.job.name = m.name;
  d_.generate_name = m.generate_name;
  d_.job.namespace_ = value_of(node, "namespace") ? m.namespace_ : ctx_.default_namespace;
  d_.annotations = m.annotations;
  for (const char* key : {"generateName", "name"})
    if (auto v = value_of(node, key))
      d_.name_loc = Loc{r_.where(*v), std::string("metadata.") + key};
  if (!ignored) return;
  d_.job.unique_name = !m.name.empty();
  // Kubernetes kinds: queue, priority and pod group from labels and annotations.
  auto loc_of = [&](const char* key) {
    auto v = value_of(node, key);
    return Loc{r_.where(v ? *v : *node), std::string("metadata.") + key};
  };
  queue_from_metadata(m, loc_of("labels"), loc_of("annotations"));
  deadline_annotations(m, loc_of("annotations"));
  if (const std::string* v = find_label(m.annotations, kRightSizeAnnotation))
    if (!right_size_value(*v, Loc{loc_of("annotations").where,
                                  child("metadata.annotations", kRightSizeAnnotation)}))
      fail();
  const Loc labels_loc = loc_of("labels");
  if (const std::string* p = find_label(m.labels, kPriorityLabel)) {
    d_.priority = *p;
    d_.priority_loc = Loc{labels_loc.where, child("metadata.labels", kPriorityLabel)};
  }
  if (const std::string* g = find_label(m.labels, kPodGroupLabel)) {
    d_.group.name = *g;
    d_.group.loc = Loc{labels_loc.where, child("metadata.labels", kPodGroupLabel)};
    const Loc total_loc{loc_of("annotations").where, child("metadata.annotations", kPodGroupTotal)};
    const std::string* total = find_label(m.annotations, kPodGroupTotal);
    auto n = total ? parse_scaled_decimal(*total, 1) : std::nullopt;
    if (!total) {
      error_at(total_loc, "required for a pod of group " + quote(*g) + " (as in Kueue)");
    } else if (!n || *n < 1 || *n > kMaxPodsPerSet) {
      error_at(total_loc, quote(*total) + " must be a whole number from 1 to " +
                              std::to_string(kMaxPodsPerSet));
    } else {
      d_.group.total = static_cast<int32_t>(*n);
    }
  }
}

// Kueue's order: the queue-name label, then the annotation older Kueue used; sluice also reads
// a plain `queue` label (playbooks).
void JobReader::queue_from_metadata(const Metadata& m, const Loc& labels_loc,
                                    const Loc& annotations_loc) {
  if (const std::string* q = find_label(m.labels, kQueueLabel)) {
    d_.queue = *q;
    d_.queue_loc = Loc{labels_loc.where, child("metadata.labels", kQueueLabel)};
  } else if (const std::string* a = find_label(m.annotations, kQueueLabel)) {
    d_.queue = *a;
    d_.queue_loc = Loc{annotations_loc.where, child("metadata.annotations", kQueueLabel)};
  } else if (const std::string* q2 = find_label(m.labels, kPlainQueueLabel)) {
    d_.queue = *q2;
    d_.queue_loc = Loc{labels_loc.where, child("metadata.labels", kPlainQueueLabel)};
  } else {
    d_.queue_loc = labels_loc;
  }
}

void JobReader::error_at(const Loc& loc, const std::string& message) {
  r_.sink().error(format(loc.where, loc.path, message));
  fail();
}

// Adds one `name: quantity` request to `req` (canonical units; GPUs in milli, whole GPUs
// only). `ignored` non-null: a Kubernetes kind, where resources no scheduler quota manages
// (ephemeral-storage, hugepages-*) are listed as ignored. Any other unknown name is an error:
// a typo (`nvidia.com/gpus`) would otherwise run the job without what it asked for.
void JobReader::request(const YAML::Node& value, const std::string& path, const std::string& name,
                        ResourceVec& req, std::vector<std::string>* ignored) {
  auto id = c_.resources.find(name);
  if (!id) {
    if (ignored && kubernetes_unmanaged(name)) {
      ignored->push_back(path);
      return;
    }
    std::vector<std::string> known;
    std::string nearest;
    size_t best = 4;  // suggest only a close name
    for (int i = 0; i < c_.resources.size(); ++i) {
      known.push_back(c_.resources.name(static_cast<ResourceId>(i)));
      const size_t d = edit_distance(name, known.back());
      if (d < best) best = d, nearest = known.back();
    }
    r_.error(value, path,
             "unknown resource " + quote(name) +
                 (nearest.empty() ? "" : " (did you mean " + quote(nearest) + "?)") +
                 ": no ClusterQueue covers it (known: " + join_list(known) + ")");
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

// Requests that make no sense whatever the cluster.
bool JobReader::validate() {
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
    error_at(d_.spec_loc, "the job asks for " + std::to_string(gpus) + " GPUs in total; at most " +
                              std::to_string(kMaxGpusPerJob));
    return false;
  }
  return true;
}

// Queue, priority, defaults from the ClusterQueue, resources covered by its groups.
bool JobReader::resolve() {
  // 1. The name: generateName expanded; unique within the namespace.
  if (!resolve_name()) return false;
  // 2. LocalQueue (default: "default" in the job's namespace) and its ClusterQueue.
  if (!resolve_queue()) return false;
  const auto lq = d_.job.local_queue;
  const ClusterQueue& cq = c_.cluster_queues[static_cast<size_t>(
      c_.local_queues[static_cast<size_t>(lq)].cluster_queue)];
  // 3. Priority: the job's class, else the queue's default class, else none (0).
  if (!resolve_priority(cq)) return false;
  warn_topology_flavors(r_.sink(), c_, cq, d_.job.topology, d_.topology_loc);
  // 4. Defaults from the ClusterQueue.
  d_.job.preemptible = d_.preemptible.value_or(cq.preemptible);
  d_.job.interactive = d_.interactive.value_or(cq.interactive);
  // 5. Every requested resource is covered by one of the queue's resource groups.
  if (!check_resources(cq)) return false;
  // 6. Allowed GPU models that no node has (a warning: the cluster may be described elsewhere).
  check_models();
  return true;
}

// Kubernetes appends five random characters to generateName; here they derive from the seed
// (the server's clock; 0 for check and plan) and the count of names generated before, so the
// same input gives the same names, and two in one submission never collide.
bool JobReader::resolve_name() {
  Job& job = d_.job;
  if (job.name.empty() && !d_.generate_name.empty()) {
    do {
      job.name = generated_name(d_.generate_name, ctx_.name_seed, ctx_.generated++);
    } while (ctx_.names.count({job.namespace_, job.name}));
  }
  if (!ctx_.names.emplace(job.namespace_, job.name).second) {
    error_at(d_.name_loc, "duplicate job " + quote(job.namespace_ + "/" + job.name));
    return false;
  }
  return true;
}

bool JobReader::resolve_queue() {
  Job& job = d_.job;
  const std::string queue = d_.queue.empty() ? "default" : d_.queue;
  const auto lq = c_.find_local_queue(job.namespace_, queue);
  if (!lq) {
    // Only the namespace's own queues: other tenants' names are not the submitter's business.
    const std::vector<std::string> known = c_.local_queue_names(job.namespace_);
    std::string what = d_.queue.empty() ? "no queue given (spec.queue, or label or annotation " +
                                              std::string(kQueueLabel) +
                                              ", or label queue) and no LocalQueue "
                                              "\"default\""
                                        : "LocalQueue " + quote(queue) + " not found";
    error_at(d_.queue_loc, what + " in namespace " + quote(job.namespace_) + " (its queues: " +
                               (known.empty() ? "none" : join_list(known)) + ")");
    if (!d_.queue.empty()) ++ctx_.unknown_queues;
    return false;
  }
  // Kueue leaves a job without a queue name alone; sluice queues it in "default", and says so.
  if (d_.queue.empty())
    r_.sink().note(format(
        d_.queue_loc.where, d_.queue_loc.path,
        "no queue given; using LocalQueue \"default\" of namespace " + quote(job.namespace_)));
  job.queue = queue;
  job.local_queue = *lq;
  return true;
}

bool JobReader::resolve_priority(const ClusterQueue& cq) {
  Job& job = d_.job;
  std::string pc = d_.priority;
  Loc pc_loc = d_.priority_loc;
  if (pc.empty()) pc = cq.default_priority_class;
  if (pc.empty()) return true;
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
                         " (defined: " + (known.empty() ? "none" : join_list(known)) +
                         "; built-in: low, normal, medium, high, critical)");
    return false;
  }
  job.exec_mut().priority_class = pc;
  return true;
}

// Every resource covered by a group of the queue (with ordering: kueue, a warning: as in Kueue,
// the job is kept and stays pending, NoMatchingFlavor); an extended resource (not GPUs, CPU,
// memory or MIG slices) is counted against quota only: nodes describe no capacity for it (a
// warning).
bool JobReader::check_resources(const ClusterQueue& cq) {
  std::vector<ResourceId> warned;
  for (const auto& [res, loc] : d_.resource_locs) {
    bool covered = std::any_of(cq.resource_groups.begin(), cq.resource_groups.end(),
                               [&, res = res](const auto& g) {
                                 return std::count(g.covered.begin(), g.covered.end(), res) > 0;
                               });
    if (!covered) {
      std::vector<std::string> names;
      for (const auto& g : cq.resource_groups)
        for (ResourceId id : g.covered) names.push_back(c_.resources.name(id));
      const std::string what = "no resource group of ClusterQueue " + quote(cq.name) + " covers " +
                               c_.resources.name(res) +
                               " (covered: " + (names.empty() ? "nothing" : join_list(names)) + ")";
      if (c_.policy.ordering != OrderingMode::kKueue) {
        error_at(loc, what);
        return false;
      }
      r_.sink().warning(format(loc.where, loc.path,
                               what + ": the job stays pending (NoMatchingFlavor), as in Kueue"));
      continue;
    }
    const bool placed = res == kGpu || res == kCpu || res == kMemory || c_.resources.is_mig(res);
    if (placed || std::count(warned.begin(), warned.end(), res)) continue;
    warned.push_back(res);
    r_.sink().warning(format(loc.where, loc.path,
                             c_.resources.name(res) + " is counted against ClusterQueue " +
                                 quote(cq.name) +
                                 "'s quota only: no node describes it, so placement does not "
                                 "honour it"));
  }
  return true;
}

// A model is named in any case (Slurm's types are lower case: --gpus=a100:1) and stored as the
// cluster spells it; one no node has is warned about (the job would wait for such a node).
void JobReader::check_models() {
  Job& job = d_.job;
  if (job.allowed_models.empty() || c_.cluster.total_gpus() == 0) return;
  std::vector<std::string> models;
  for (const auto& n : c_.cluster.nodes)
    for (const auto& g : n.gpus)
      if (std::find(models.begin(), models.end(), g.model) == models.end())
        models.push_back(g.model);
  auto same = [](const std::string& a, const std::string& b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
             return std::tolower(static_cast<unsigned char>(x)) ==
                    std::tolower(static_cast<unsigned char>(y));
           });
  };
  for (auto& m : job.allowed_models) {
    auto it = std::find_if(models.begin(), models.end(), [&](const auto& x) { return same(x, m); });
    if (it != models.end()) m = *it;
  }
  for (const auto& m : job.allowed_models)
    if (std::find(models.begin(), models.end(), m) == models.end())
      r_.sink().warning(
          format(d_.models_loc.where, d_.models_loc.path,
                 "no node has GPU model " + quote(m) + " (models: " + join_list(models) + ")"));
}

std::optional<ReadJob> read_job(Reader& r, const YAML::Node& doc, DocKind kind, JobContext& ctx) {
  return JobReader(r, ctx).read(doc, kind);
}

void split_read_jobs(std::vector<ReadJob>& read, std::vector<Job>& jobs,
                     std::vector<Where>& where) {
  for (auto& rj : read) {
    jobs.push_back(std::move(rj.job));
    where.push_back(std::move(rj.where));
  }
  read.clear();
}

void assign_job_ids(std::vector<Job>& jobs, std::vector<Where>& where, Sink& sink) {
  std::set<JobId> used;
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (jobs[i].id == 0) continue;
    if (!used.insert(jobs[i].id).second)
      sink.error(format(where[i], "spec.id", "duplicate job id " + std::to_string(jobs[i].id)));
  }
  // After the largest id given (as a server numbers new submissions): a job added to a saved
  // state does not take a finished job's number or sort before the jobs already there.
  JobId next = used.empty() ? 1 : *used.rbegin() + 1;
  for (auto& job : jobs)
    if (job.id == 0) job.id = next++;
}

}  // namespace sluice::config_detail
