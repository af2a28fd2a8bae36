// A job document's status.admission (admitted.h), read after the job itself resolved: every
// name checked against the configuration and the job, errors with file:line.
#include <algorithm>

#include "config/internal.h"

namespace sluice::config_detail {

namespace {

std::string names_of(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s.empty() ? "none" : s;
}

bool carries(const Node& node, const Labels& labels) {
  for (const auto& kv : labels)
    if (std::find(node.labels.begin(), node.labels.end(), kv) == node.labels.end()) return false;
  return true;
}

class StatusReader {
 public:
  StatusReader(Reader& r, const Config& c, const Job& job) : r_(r), c_(c), job_(job) {}

  // Reads status (its `admission` and `admissionTime`); nullopt with ok() true when there is
  // no admission.
  std::optional<AdmittedStatus> read(const YAML::Node& status, bool strict) {
    std::vector<std::string> lenient;  // a Pod's or batch Job's own status fields
    std::optional<MapReader> top;
    if (strict) {
      top.emplace(r_, status, "status",
                  MapReader::Fields{{"admission", "admissionTime", "conditions"}});
    } else {
      top.emplace(r_, status, "status", std::vector<const char*>{"admission", "admissionTime"},
                  &lenient);
    }
    if (!top->is_map()) return fail();
    const YAML::Node* adm = top->find("admission");
    if (const YAML::Node* t = top->find("admissionTime")) {
      if (!adm) {
        r_.error(*t, "status.admissionTime", "given without status.admission");
        return fail();
      }
      admission_time(*t);
    }
    if (!adm) return std::nullopt;
    out_.where = r_.where(*adm).str();
    admission(*adm);
    if (!ok_) return std::nullopt;
    return std::move(out_);
  }

  bool ok() const { return ok_; }

 private:
  std::nullopt_t fail() {
    ok_ = false;
    return std::nullopt;
  }

  void admission_time(const YAML::Node& n) {
    auto v = n.IsScalar() ? parse_scaled_decimal(n.Scalar(), kNsPerSec) : std::nullopt;
    if (!v || *v < 0 || *v > kMaxTimePointNs) {
      r_.error(n, "status.admissionTime", "must be a number of seconds, like spec.submitTime");
      fail();
      return;
    }
    if (*v < job_.submit_ns) {
      r_.error(n, "status.admissionTime", "is before the job's submitTime");
      fail();
      return;
    }
    time_ = *v;
  }

  void admission(const YAML::Node& node) {
    MapReader m(r_, node, "status.admission",
                {{"clusterQueue", "podSetAssignments", "bestEffort", "fallbackShape"}});
    if (!m.is_map()) return (void)fail();
    out_.admitted_ns = time_.value_or(job_.submit_ns);
    // 1. The ClusterQueue: the one the job's LocalQueue points at.
    const YAML::Node* cq = m.required("clusterQueue");
    auto name = cq ? r_.str(*cq, "status.admission.clusterQueue") : std::nullopt;
    if (!name) return (void)fail();
    auto q = c_.find_cluster_queue(*name);
    auto lq = c_.find_local_queue(job_.namespace_, job_.queue);
    if (!q) {
      std::vector<std::string> known;
      for (const auto& x : c_.cluster_queues) known.push_back(x.name);
      r_.error(*cq, "status.admission.clusterQueue",
               "unknown ClusterQueue " + quote(*name) + " (defined: " + names_of(known) + ")");
      return (void)fail();
    }
    if (lq && c_.local_queues[static_cast<size_t>(*lq)].cluster_queue != *q) {
      const auto& mine = c_.cluster_queues[static_cast<size_t>(
          c_.local_queues[static_cast<size_t>(*lq)].cluster_queue)];
      r_.error(*cq, "status.admission.clusterQueue",
               quote(*name) + " is not the ClusterQueue of the job's LocalQueue " +
                   quote(job_.queue) + " (" + mine.name + ")");
      return (void)fail();
    }
    out_.queue = *q;
    // 2. How it runs: best-effort, a fallback shape.
    if (const YAML::Node* n = m.find("bestEffort")) {
      auto v = r_.boolean(*n, "status.admission.bestEffort");
      if (!v) return (void)fail();
      out_.best_effort = *v;
    }
    Job runs = job_;
    if (const YAML::Node* n = m.find("fallbackShape")) {
      const int64_t shapes = static_cast<int64_t>(job_.fallback.shapes.size());
      if (shapes == 0) {
        r_.error(*n, "status.admission.fallbackShape", "the job declares no spec.fallback.shapes");
        return (void)fail();
      }
      auto v = r_.integer(*n, "status.admission.fallbackShape", 1, shapes);
      if (!v) return (void)fail();
      out_.shape = static_cast<int32_t>(*v - 1);
      runs = reshaped(job_, job_.fallback.shapes[static_cast<size_t>(out_.shape)]);
    }
    // 3. One assignment per pod set.
    const YAML::Node* list = m.required("podSetAssignments");
    if (!list) return (void)fail();
    if (!r_.expect_seq(*list, "status.admission.podSetAssignments")) return (void)fail();
    out_.pod_sets.resize(runs.pod_sets.size());
    std::vector<bool> seen(runs.pod_sets.size(), false);
    for (size_t i = 0; i < list->size(); ++i) {
      const std::string path = index("status.admission.podSetAssignments", i);
      const auto ps = pod_set_index((*list)[i], path, runs, i, list->size());
      if (!ps) continue;
      if (seen[*ps]) {
        r_.error((*list)[i], path, "pod set " + quote(runs.pod_sets[*ps].name) + " assigned twice");
        fail();
        continue;
      }
      seen[*ps] = true;
      assignment((*list)[i], path, runs.pod_sets[*ps], out_.pod_sets[*ps]);
    }
    for (size_t i = 0; i < seen.size() && ok_; ++i)
      if (!seen[i]) {
        r_.error(*list, "status.admission.podSetAssignments",
                 "no assignment for pod set " + quote(runs.pod_sets[i].name));
        fail();
      }
    // Partially admitted: the counts it runs with.
    bool partial = false;
    for (size_t i = 0; i < runs.pod_sets.size() && i < job_.pod_sets.size(); ++i)
      partial = partial || (out_.shape < 0 && runs.pod_sets[i].count != job_.pod_sets[i].count);
    if (partial)
      for (const auto& ps : runs.pod_sets) out_.pod_set_counts.push_back(ps.count);
  }

  // Which pod set an assignment is for: by name, or the only one.
  std::optional<size_t> pod_set_index(const YAML::Node& node, const std::string& path,
                                      const Job& runs, size_t i, size_t n) {
    if (!node.IsMap()) return std::nullopt;  // assignment() says so
    const YAML::Node name = node["name"];
    if (!name) {
      if (runs.pod_sets.size() == 1 && n == 1) return 0;
      r_.error(node, child(path, "name"), "required: the job has several pod sets");
      fail();
      return std::nullopt;
    }
    auto s = r_.str(name, child(path, "name"));
    if (!s) return fail();
    std::vector<std::string> known;
    for (size_t k = 0; k < runs.pod_sets.size(); ++k) {
      if (runs.pod_sets[k].name == *s) return k;
      known.push_back(runs.pod_sets[k].name);
    }
    r_.error(name, child(path, "name"),
             "the job has no pod set " + quote(*s) + " (pod sets: " + names_of(known) + ")");
    (void)i;
    return fail();
  }

  // `ps` is the pod set as it runs: a count below its own (partial admission) is set on it.
  void assignment(const YAML::Node& node, const std::string& path, PodSet& ps,
                  AdmittedPodSet& out) {
    MapReader m(r_, node, path, {{"name", "flavors", "count", "nodes", "gpus", "resourceUsage"}});
    if (!m.is_map()) return (void)fail();
    if (const YAML::Node* n = m.find("count")) {
      auto v = r_.integer(*n, m.path("count"), 0, INT32_MAX);
      if (!v) return (void)fail();
      const bool partial = ps.min_count > 0 && *v >= ps.min_count && *v < ps.count;
      if (*v != ps.count && !partial) {
        r_.error(
            *n, m.path("count"),
            std::to_string(*v) + ", but the pod set runs " + std::to_string(ps.count) + " pods" +
                (ps.min_count > 0
                     ? " (at least " + std::to_string(ps.min_count) + " when partially admitted)"
                     : " (it has no minCount: no partial admission)"));
        return (void)fail();
      }
      ps.count = static_cast<int32_t>(*v);
    }
    const YAML::Node* fl = m.required("flavors");
    if (!fl) return (void)fail();
    flavors(*fl, m.path("flavors"), ps, out);
    if (const YAML::Node* n = m.find("resourceUsage")) usage(*n, m.path("resourceUsage"), ps);
    if (const YAML::Node* n = m.find("nodes")) nodes(*n, m.path("nodes"), ps, out);
    if (const YAML::Node* n = m.find("gpus")) {
      if (out.nodes.empty()) {
        r_.error(*n, m.path("gpus"), "devices need the pods' nodes (nodes: [...])");
        return (void)fail();
      }
      gpus(*n, m.path("gpus"), ps, out);
    }
  }

  void flavors(const YAML::Node& node, const std::string& path, const PodSet& ps,
               AdmittedPodSet& out) {
    const ClusterQueue& cq = c_.cluster_queues[static_cast<size_t>(out_.queue)];
    MapReader m(r_, node, path, {}, &unused_);
    if (!m.is_map()) return (void)fail();
    std::vector<FlavorId> group_flavor(cq.resource_groups.size(), -1);
    for (const auto& [rname, value] : m.entries()) {
      const std::string p = m.path(rname);
      auto r = c_.resources.find(rname);
      if (!r || ps.requests[*r] <= 0) {
        r_.error(value, p, "the pod set does not request " + quote(rname));
        fail();
        continue;
      }
      auto fname = r_.str(value, p);
      if (!fname) {
        fail();
        continue;
      }
      auto f = c_.find_flavor(*fname);
      if (!f) {
        std::vector<std::string> known;
        for (const auto& x : c_.flavors) known.push_back(x.name);
        r_.error(value, p,
                 "unknown ResourceFlavor " + quote(*fname) + " (defined: " + names_of(known) + ")");
        fail();
        continue;
      }
      const int g = group_covering(cq, *r);
      if (g < 0) {
        r_.error(value, p, "ClusterQueue " + cq.name + " covers no " + rname);
        fail();
        continue;
      }
      const auto& group = cq.resource_groups[static_cast<size_t>(g)];
      std::vector<std::string> listed;
      bool in_group = false;
      for (const auto& fq : group.flavors) {
        listed.push_back(c_.flavors[static_cast<size_t>(fq.flavor)].name);
        in_group = in_group || fq.flavor == *f;
      }
      if (!in_group) {
        r_.error(value, p,
                 "flavor " + quote(*fname) + " is not one of ClusterQueue " + cq.name +
                     "'s flavors for " + rname + " (" + names_of(listed) + ")");
        fail();
        continue;
      }
      if (group_flavor[static_cast<size_t>(g)] >= 0 && group_flavor[static_cast<size_t>(g)] != *f) {
        r_.error(value, p, "resources of one resource group share one flavor per pod set");
        fail();
        continue;
      }
      group_flavor[static_cast<size_t>(g)] = *f;
      out.flavors.emplace_back(*r, *f);
    }
    std::sort(out.flavors.begin(), out.flavors.end());
    // Every requested resource the queue covers has its flavor.
    for (int r = 0; r < c_.resources.size() && ok_; ++r) {
      const auto id = static_cast<ResourceId>(r);
      if (ps.requests[id] <= 0 || group_covering(cq, id) < 0 || out.flavor_of(id) >= 0) continue;
      r_.error(node, path,
               "no flavor for " + c_.resources.name(id) + ", which the pod set requests");
      fail();
    }
  }

  // Kueue writes each resource's total for the pod set: checked against the request.
  void usage(const YAML::Node& node, const std::string& path, const PodSet& ps) {
    MapReader m(r_, node, path, {}, &unused_);
    if (!m.is_map()) return (void)fail();
    for (const auto& [rname, value] : m.entries()) {
      auto r = c_.resources.find(rname);
      if (!r) {
        r_.error(value, m.path(rname), "the pod set does not request " + quote(rname));
        fail();
        continue;
      }
      auto v = r_.quantity(value, m.path(rname), *r);
      if (!v) {
        fail();
        continue;
      }
      const int64_t want = ps.requests[*r] * ps.count;
      if (*v != want) {
        r_.error(value, m.path(rname),
                 format_canonical(*r, *v) + ", but the pod set requests " +
                     format_canonical(*r, want) + " in all");
        fail();
      }
    }
  }

  void nodes(const YAML::Node& node, const std::string& path, const PodSet& ps,
             AdmittedPodSet& out) {
    auto names = r_.str_list(node, path);
    if (!names) return (void)fail();
    if (names->size() != static_cast<size_t>(ps.count)) {
      r_.error(node, path,
               std::to_string(names->size()) + " nodes for " + std::to_string(ps.count) +
                   " pods (one node per pod)");
      return (void)fail();
    }
    const auto& cn = c_.cluster.nodes;
    for (const auto& n : *names) {
      auto it = std::find_if(cn.begin(), cn.end(), [&](const Node& x) { return x.name == n; });
      if (it == cn.end()) {
        r_.error(node, path, "node " + quote(n) + " is not in the cluster");
        return (void)fail();
      }
      for (const auto& [r, f] : out.flavors) {
        const auto& flavor = c_.flavors[static_cast<size_t>(f)];
        if (carries(*it, flavor.node_labels)) continue;
        r_.error(node, path,
                 "node " + quote(n) + " does not carry the node labels of flavor " + flavor.name);
        return (void)fail();
      }
      out.nodes.push_back(static_cast<NodeId>(it - cn.begin()));
    }
  }

  void gpus(const YAML::Node& node, const std::string& path, const PodSet& ps,
            AdmittedPodSet& out) {
    if (!r_.expect_seq(node, path)) return (void)fail();
    if (node.size() != out.nodes.size()) {
      r_.error(node, path, "one device list per pod (" + std::to_string(out.nodes.size()) + ")");
      return (void)fail();
    }
    int64_t mig_wanted = 0;
    for (int r = 0; r < c_.resources.size(); ++r)
      if (c_.resources.is_mig(static_cast<ResourceId>(r)))
        mig_wanted += ps.requests[static_cast<ResourceId>(r)] / 1000;
    for (size_t i = 0; i < node.size(); ++i) {
      const std::string p = index(path, i);
      if (!r_.expect_seq(node[i], p)) return (void)fail();
      const Node& n = c_.cluster.nodes[static_cast<size_t>(out.nodes[i])];
      std::vector<GpuShare> shares;
      int64_t whole = 0, mig = 0;
      for (size_t k = 0; k < node[i].size(); ++k) {
        auto share = device(node[i][k], index(p, k), n, ps);
        if (!share) return (void)fail();
        (share->mig_slice >= 0 ? mig : whole) += 1;
        shares.push_back(*share);
      }
      if (whole != ps.gpus || mig != mig_wanted) {
        r_.error(node[i], p,
                 std::to_string(whole) + " GPUs and " + std::to_string(mig) +
                     " MIG slices, but each pod asks for " + std::to_string(ps.gpus) + " and " +
                     std::to_string(mig_wanted));
        return (void)fail();
      }
      out.gpus.push_back(std::move(shares));
    }
  }

  // 3 (GPU index) or "3/1" (MIG slice 1 of GPU 3).
  std::optional<GpuShare> device(const YAML::Node& v, const std::string& path, const Node& n,
                                 const PodSet& ps) {
    const std::string text = v.IsScalar() ? v.Scalar() : "";
    const auto slash = text.find('/');
    auto gpu = parse_scaled_decimal(text.substr(0, slash), 1);
    std::optional<int64_t> slice;
    if (slash != std::string::npos) slice = parse_scaled_decimal(text.substr(slash + 1), 1);
    if (!gpu || *gpu < 0 || (slash != std::string::npos && (!slice || *slice < 0))) {
      r_.error(v, path, "a device is a GPU index (3) or a MIG slice (\"3/1\")");
      return fail();
    }
    if (*gpu >= static_cast<int64_t>(n.gpus.size())) {
      r_.error(v, path, "node " + n.name + " has no GPU " + std::to_string(*gpu));
      return fail();
    }
    const Gpu& g = n.gpus[static_cast<size_t>(*gpu)];
    if (slice && *slice >= static_cast<int64_t>(g.mig.size())) {
      r_.error(v, path,
               "GPU " + std::to_string(*gpu) + " of " + n.name + " has no MIG slice " +
                   std::to_string(*slice));
      return fail();
    }
    GpuShare s;
    s.gpu = static_cast<int16_t>(*gpu);
    s.mig_slice = slice ? static_cast<int16_t>(*slice) : int16_t{-1};
    s.milli = slice ? 1000 : ps.gpu_milli;
    return s;
  }

  static int group_covering(const ClusterQueue& cq, ResourceId r) {
    for (size_t g = 0; g < cq.resource_groups.size(); ++g) {
      const auto& cov = cq.resource_groups[g].covered;
      if (std::find(cov.begin(), cov.end(), r) != cov.end()) return static_cast<int>(g);
    }
    return -1;
  }

  Reader& r_;
  const Config& c_;
  const Job& job_;
  AdmittedStatus out_;
  std::optional<TimeNs> time_;
  bool ok_ = true;
  std::vector<std::string> unused_;  // maps whose keys are data
};

}  // namespace

bool read_admitted_status(Reader& r, const YAML::Node& doc, DocKind kind, const Job& job,
                          JobContext& ctx) {
  ctx.admitted.reset();
  if (!doc.IsMap() || !doc["status"]) return true;
  StatusReader sr(r, ctx.config, job);
  ctx.admitted = sr.read(doc["status"], kind == DocKind::kSluiceJob);
  return sr.ok();
}

}  // namespace sluice::config_detail

namespace sluice {

FlavorId AdmittedPodSet::flavor_of(ResourceId r) const {
  for (const auto& [res, f] : flavors)
    if (res == r) return f;
  return -1;
}

}  // namespace sluice
