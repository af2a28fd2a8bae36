// Kueue's kinds (ResourceFlavor, ClusterQueue, LocalQueue, WorkloadPriorityClass, Cohort) in
// kueue.x-k8s.io/v1beta1 and v1beta2, and the kube-batch style Queue that playbooks carry.
// Stage 1: names stay names; resolve.cc links them. v1beta2 renames ClusterQueue's `cohort` to
// `cohortName`, drops `admissionChecks` and the fungibility values Borrow / Preempt, and adds
// fields sluice warns about (kueue_api_versions.cc: the field tables and values per version).
#include <algorithm>
#include <limits>

#include "config/kinds/kueue_api_versions.h"

namespace sluice::config_detail {

namespace {

Loc loc_of(Reader& r, const YAML::Node& node, const std::string& path) {
  return Loc{r.where(node), path};
}

// What the groups read so far hold: the group that covers each resource and the group that uses
// each flavor (a resource belongs to one group, a flavor to one group).
struct GroupClaims {
  std::vector<std::pair<ResourceId, size_t>> covered_by;  // resource -> group index
  std::vector<std::pair<std::string, size_t>> flavor_in;  // flavor -> group index
};

// A resource group while it is read: its index, the group, the names of the resources it covers
// (in the order of group.covered) and those names as one list for messages.
struct GroupRead {
  size_t index = 0;
  RawGroup group;
  std::vector<std::string> covered_names;
  std::string covered_list;
};

// coveredResources: interned; a resource is covered by one group only.
void read_covered_resources(Reader& r, MapReader& g, Config& config, GroupClaims& claims,
                            GroupRead& gr) {
  const YAML::Node* cov = g.required("coveredResources");
  if (!cov) return;
  const std::string cpath = g.path("coveredResources");
  auto names = r.str_list(*cov, cpath);
  if (!names) return;
  if (names->empty()) r.error(*cov, cpath, "must not be empty");
  for (size_t i = 0; i < names->size(); ++i) {
    const std::string& name = (*names)[i];
    auto id = intern_resource(r, config.resources, (*cov)[i], index(cpath, i), name);
    if (!id) continue;
    if (std::count(gr.group.covered.begin(), gr.group.covered.end(), *id)) {
      r.error((*cov)[i], index(cpath, i), quote(name) + " is listed twice");
      continue;
    }
    for (const auto& [res, other] : claims.covered_by)
      if (res == *id)
        r.error((*cov)[i], index(cpath, i),
                quote(name) + " is already covered by resourceGroups[" + std::to_string(other) +
                    "] (a resource belongs to one group)");
    claims.covered_by.emplace_back(*id, gr.index);
    gr.group.covered.push_back(*id);
    gr.covered_names.push_back(name);
  }
}

// A flavor's name, which one group only may use, and once there.
void read_flavor_name(Reader& r, MapReader& f, size_t gi, GroupClaims& claims,
                      RawFlavorQuotas& fq) {
  const YAML::Node* name = f.required("name");
  if (!name) return;
  auto s = r.str(*name, f.path("name"));
  if (!s) return;
  fq.flavor = *s;
  fq.loc = loc_of(r, *name, f.path("name"));
  for (const auto& [other, other_group] : claims.flavor_in) {
    if (other != *s) continue;
    r.error(*name, f.path("name"),
            "flavor " + quote(*s) +
                (other_group == gi
                     ? " is listed twice in this group"
                     : " is already used by resourceGroups[" + std::to_string(other_group) + "]"));
  }
  claims.flavor_in.emplace_back(*s, gi);
}

// A quota's nominalQuota (required), borrowingLimit and lendingLimit; false when one is missing
// or wrong.
bool read_quota_amounts(Reader& r, MapReader& q, ResourceId id, ResourceQuota& quota) {
  bool ok = true;
  if (const YAML::Node* n = q.required("nominalQuota")) {
    auto v = r.quantity(*n, q.path("nominalQuota"), id);
    ok = ok && v;
    if (v) quota.nominal = *v;
  } else {
    ok = false;
  }
  if (const YAML::Node* n = q.find("borrowingLimit")) {
    auto v = r.quantity(*n, q.path("borrowingLimit"), id);
    ok = ok && v;
    if (v) quota.borrowing_limit = *v;
  }
  if (const YAML::Node* n = q.find("lendingLimit")) {
    auto v = r.quantity(*n, q.path("lendingLimit"), id);
    ok = ok && v;
    if (v) quota.lending_limit = *v;
    if (v && *v > quota.nominal)
      r.error(*n, q.path("lendingLimit"),
              quote(n->Scalar()) + " must not exceed nominalQuota (" +
                  format_canonical(id, quota.nominal) + ")");
  }
  return ok;
}

// One entry of a flavor's resources: the quota of a covered resource the flavor has not given
// one yet (nullopt when the entry is wrong).
std::optional<ResourceQuota> read_quota(Reader& r, const YAML::Node& node, const std::string& rpath,
                                        const Config& config, const GroupRead& gr,
                                        const RawFlavorQuotas& fq) {
  MapReader q(r, node, rpath, {{"name", "nominalQuota", "borrowingLimit", "lendingLimit"}});
  if (!q.is_map()) return std::nullopt;
  const YAML::Node* rn = q.required("name");
  if (!rn) return std::nullopt;
  auto rname = r.str(*rn, q.path("name"));
  if (!rname) return std::nullopt;
  auto id = config.resources.find(*rname);
  if (!id || !std::count(gr.group.covered.begin(), gr.group.covered.end(), *id)) {
    r.error(*rn, q.path("name"),
            quote(*rname) + " is not in coveredResources (" + gr.covered_list + ")");
    return std::nullopt;
  }
  if (fq.resources.end() != std::find_if(fq.resources.begin(), fq.resources.end(),
                                         [&](auto& x) { return x.resource == *id; })) {
    r.error(*rn, q.path("name"), quote(*rname) + " is listed twice");
    return std::nullopt;
  }
  ResourceQuota quota;
  quota.resource = *id;
  if (!read_quota_amounts(r, q, *id, quota)) return std::nullopt;
  return quota;
}

// A covered resource this flavor sets no quota for is not quota-managed in it (unlimited).
// Kueue would reject the manifest; playbooks rely on it (docs/config.md).
void warn_unset_quotas(Reader& r, const YAML::Node& node, const std::string& ppath,
                       const GroupRead& gr, const RawFlavorQuotas& fq) {
  std::string missing;
  for (size_t ci = 0; ci < gr.group.covered.size(); ++ci) {
    ResourceId c = gr.group.covered[ci];
    if (std::none_of(fq.resources.begin(), fq.resources.end(),
                     [&](auto& x) { return x.resource == c; }))
      missing += (missing.empty() ? "" : ", ") + gr.covered_names[ci];
  }
  if (!missing.empty())
    r.warning(node, ppath,
              "flavor " + quote(fq.flavor) + " sets no quota for " + missing +
                  " (covered by the group); treated as unlimited (not quota-managed)");
}

// One of a group's flavors with its quotas; nullopt when it is not a map.
std::optional<RawFlavorQuotas> read_flavor(Reader& r, const YAML::Node& node,
                                           const std::string& ppath, const Config& config,
                                           GroupClaims& claims, const GroupRead& gr) {
  MapReader f(r, node, ppath, {{"name", "resources"}});
  if (!f.is_map()) return std::nullopt;
  RawFlavorQuotas fq;
  read_flavor_name(r, f, gr.index, claims, fq);
  const YAML::Node* res = f.required("resources");
  if (res && r.expect_seq(*res, f.path("resources"))) {
    for (size_t ri = 0; ri < res->size(); ++ri)
      if (auto quota = read_quota(r, (*res)[ri], index(f.path("resources"), ri), config, gr, fq))
        fq.resources.push_back(*quota);
    warn_unset_quotas(r, node, ppath, gr, fq);
  }
  return fq;
}

// The group's flavors, each with quotas for (some of) the resources it covers.
void read_group_flavors(Reader& r, MapReader& g, const Config& config, GroupClaims& claims,
                        GroupRead& gr) {
  const YAML::Node* fl = g.required("flavors");
  if (!fl) return;
  const std::string fpath = g.path("flavors");
  if (!r.expect_seq(*fl, fpath)) return;
  if (fl->size() == 0) r.error(*fl, fpath, "must not be empty");
  for (size_t fi = 0; fi < fl->size(); ++fi)
    if (auto fq = read_flavor(r, (*fl)[fi], index(fpath, fi), config, claims, gr))
      gr.group.flavors.push_back(std::move(*fq));
}

// spec.resourceGroups of a ClusterQueue or Cohort.
std::vector<RawGroup> read_resource_groups(Reader& r, const YAML::Node& node,
                                           const std::string& path, Config& config) {
  std::vector<RawGroup> groups;
  if (!r.expect_seq(node, path)) return groups;
  GroupClaims claims;
  for (size_t gi = 0; gi < node.size(); ++gi) {
    MapReader g(r, node[gi], index(path, gi), {{"coveredResources", "flavors"}});
    if (!g.is_map()) continue;
    GroupRead gr{.index = gi};
    read_covered_resources(r, g, config, claims, gr);
    for (const auto& n : gr.covered_names)
      gr.covered_list += (gr.covered_list.empty() ? "" : ", ") + n;
    read_group_flavors(r, g, config, claims, gr);
    groups.push_back(std::move(gr.group));
  }
  return groups;
}

std::optional<NamespaceSelector> read_namespace_selector(Reader& r, const YAML::Node& node,
                                                         const std::string& path) {
  MapReader m(r, node, path, {{"matchLabels", "matchExpressions"}});
  if (!m.is_map()) return std::nullopt;
  NamespaceSelector sel;
  if (const YAML::Node* e = m.find("matchExpressions")) {
    if (!(e->IsSequence() && e->size() == 0) && !e->IsNull())
      r.error(*e, m.path("matchExpressions"), "not supported (use matchLabels)");
  }
  if (const YAML::Node* l = m.find("matchLabels")) {
    if (auto labels = r.labels(*l, m.path("matchLabels"))) sel.match_labels = *labels;
    for (const auto& [key, value] : sel.match_labels)
      if (key != "kubernetes.io/metadata.name")
        r.warning(*l, m.path("matchLabels"),
                  "label " + key +
                      " selects no namespace: sluice has no Namespace objects and sees only "
                      "kubernetes.io/metadata.name (the namespace's name)");
  }
  sel.match_all = sel.match_labels.empty();  // an empty selector selects everything
  return sel;
}

void read_preemption(Reader& r, const YAML::Node& node, const std::string& path,
                     PreemptionConfig& p) {
  MapReader m(r, node, path, {{"withinClusterQueue", "reclaimWithinCohort", "borrowWithinCohort"}});
  if (!m.is_map()) return;
  if (const YAML::Node* n = m.find("withinClusterQueue")) {
    if (auto v = r.choice<WithinQueuePolicy>(
            *n, m.path("withinClusterQueue"),
            {{"Never", WithinQueuePolicy::kNever},
             {"LowerPriority", WithinQueuePolicy::kLowerPriority},
             {"LowerOrNewerEqualPriority", WithinQueuePolicy::kLowerOrNewerEqualPriority}}))
      p.within_cluster_queue = *v;
  }
  if (const YAML::Node* n = m.find("reclaimWithinCohort")) {
    if (auto v = r.choice<ReclaimPolicy>(*n, m.path("reclaimWithinCohort"),
                                         {{"Never", ReclaimPolicy::kNever},
                                          {"LowerPriority", ReclaimPolicy::kLowerPriority},
                                          {"Any", ReclaimPolicy::kAny}}))
      p.reclaim_within_cohort = *v;
  }
  if (const YAML::Node* n = m.find("borrowWithinCohort")) {
    const std::string bpath = m.path("borrowWithinCohort");
    MapReader b(r, *n, bpath, {{"policy", "maxPriorityThreshold"}});
    if (b.is_map()) {
      if (const YAML::Node* pol = b.find("policy")) {
        if (auto v = r.choice<BorrowWithinCohortPolicy>(
                *pol, b.path("policy"),
                {{"Never", BorrowWithinCohortPolicy::kNever},
                 {"LowerPriority", BorrowWithinCohortPolicy::kLowerPriority}}))
          p.borrow_within_cohort = *v;
      }
      if (const YAML::Node* t = b.find("maxPriorityThreshold")) {
        if (auto v =
                r.integer(*t, b.path("maxPriorityThreshold"), std::numeric_limits<int32_t>::min(),
                          std::numeric_limits<int32_t>::max()))
          p.max_priority_threshold = static_cast<int32_t>(*v);
      }
      if (p.borrow_within_cohort != BorrowWithinCohortPolicy::kNever &&
          p.reclaim_within_cohort == ReclaimPolicy::kNever)
        r.error(*n, bpath, "policy LowerPriority requires reclaimWithinCohort other than Never");
    }
  }
}

// Kueue's fairSharing.weight is a quantity ("1", "0.5", "500m").
void read_fair_sharing(Reader& r, const YAML::Node& node, const std::string& path, double* weight) {
  MapReader m(r, node, path, {{"weight"}});
  if (!m.is_map()) return;
  if (const YAML::Node* w = m.find("weight")) {
    if (auto milli = r.quantity(*w, m.path("weight"), kCpu)) *weight = *milli / 1000.0;
  }
}

const char* kKueueOnly = "sluice does not implement this Kueue feature";

}  // namespace

Top read_top(Reader& r, const YAML::Node& doc, const MapReader& top, bool spec_required) {
  Top t;
  const YAML::Node* metadata = top.find("metadata");
  t.meta = read_metadata(r, doc, metadata);
  t.name_loc = Loc{r.where(metadata ? *metadata : doc), "metadata.name"};
  if (metadata && metadata->IsMap()) {
    for (auto it = metadata->begin(); it != metadata->end(); ++it)
      if (it->first.IsScalar() && it->first.Scalar() == "name")
        t.name_loc = Loc{r.where(it->second), "metadata.name"};
  }
  if (const YAML::Node* spec = top.find("spec")) {
    t.spec = *spec;
  } else if (spec_required) {
    r.error(doc, "spec", "required field missing");
  }
  return t;
}

void read_resource_flavor(Reader& r, const YAML::Node& doc, Builder& b) {
  MapReader top(r, doc, "", {kTopFields});
  Top t = read_top(r, doc, top, /*spec_required=*/false);
  ResourceFlavor f;
  f.name = t.meta.name;
  std::pair<std::string, Loc> topology;  // spec.topologyName, resolved in topology_kind.cc
  if (t.spec) {
    MapReader spec(r, *t.spec, "spec",
                   {{"nodeLabels", "topologyName", "nodeTaints"},
                    {"tolerations", "resourceWeights"},
                    "sluice does not add a flavor's tolerations to its pods or implement "
                    "fair-sharing resource weights"});
    if (const YAML::Node* l = spec.find("nodeLabels")) {
      if (auto labels = r.labels(*l, "spec.nodeLabels")) f.node_labels = *labels;
    }
    if (const YAML::Node* n = spec.find("nodeTaints"))
      read_node_taints(r, *n, "spec.nodeTaints", f.node_taints);
    if (const YAML::Node* n = spec.find("topologyName")) {
      if (auto s = r.str(*n, "spec.topologyName"))
        topology = {*s, loc_of(r, *n, "spec.topologyName")};
    }
  }
  if (!t.meta.ok) return;
  if (auto i = b.config.find_flavor(f.name)) {
    r.sink().error(format(t.name_loc.where, t.name_loc.path,
                          "duplicate ResourceFlavor " + quote(f.name) + " (first defined at " +
                              b.flavor_where[*i].str() + ")"));
    return;
  }
  b.config.flavors.push_back(std::move(f));
  b.flavor_where.push_back(t.name_loc.where);
  b.flavor_topology.push_back(std::move(topology));
}

// spec.sluice.fallback: after how long a pending job may leave its preferred flavors.
void read_fallback(Reader& r, const YAML::Node& v, const std::string& path, FallbackPolicy* out) {
  MapReader f(r, v, path, {{"after", "preferredFlavors"}});
  if (f.is_map()) {
    if (const YAML::Node* a = f.find("after")) {
      if (auto x = r.duration(*a, f.path("after"))) out->after_ns = *x;
    } else {
      r.error(v, f.path("after"), "required field missing");
    }
    if (const YAML::Node* n = f.find("preferredFlavors")) {
      if (auto x = r.integer(*n, f.path("preferredFlavors"), 1, 64))
        out->preferred = static_cast<int32_t>(*x);
    }
  }
}

// spec.sluice: what sluice adds to a ClusterQueue (docs/config.md).
void read_cluster_queue_sluice(Reader& r, const YAML::Node& n, RawClusterQueue& raw) {
  MapReader s(
      r, n, "spec.sluice",
      {{"preemptible", "interactive", "defaultWalltime", "minRuntime", "maxPending",
        "defaultPriorityClass", "fallback", "overBudget", "allowRootPods", "runImagesOnHost"}});
  std::optional<bool> preemptible;
  if (const YAML::Node* v = s.find("preemptible"))
    preemptible = r.boolean(*v, s.path("preemptible"));
  if (const YAML::Node* v = s.find("interactive")) {
    if (auto x = r.boolean(*v, s.path("interactive"))) raw.cq.interactive = *x;
  }
  // Interactive queues hold work a person waits for: not preemptible unless said so.
  raw.cq.preemptible = preemptible.value_or(!raw.cq.interactive);
  if (const YAML::Node* v = s.find("defaultWalltime")) {
    if (auto x = r.duration(*v, s.path("defaultWalltime"))) raw.cq.default_walltime_ns = *x;
  }
  if (const YAML::Node* v = s.find("minRuntime")) {
    if (auto x = r.duration(*v, s.path("minRuntime"))) raw.cq.min_runtime_ns = *x;
  }
  if (const YAML::Node* v = s.find("maxPending")) {
    if (auto x = r.integer(*v, s.path("maxPending"), 0, std::numeric_limits<int32_t>::max()))
      raw.cq.max_pending = static_cast<int32_t>(*x);
  }
  if (const YAML::Node* v = s.find("allowRootPods")) {
    if (auto x = r.boolean(*v, s.path("allowRootPods"))) raw.cq.allow_root_pods = *x;
  }
  if (const YAML::Node* v = s.find("runImagesOnHost")) {
    if (auto x = r.boolean(*v, s.path("runImagesOnHost"))) raw.cq.run_images_on_host = *x;
  }
  if (const YAML::Node* v = s.find("fallback"))
    read_fallback(r, *v, s.path("fallback"), &raw.cq.fallback);
  if (const YAML::Node* v = s.find("overBudget")) {
    if (auto x = r.choice<OverBudgetPolicy>(
            *v, s.path("overBudget"),
            {{"BestEffort", OverBudgetPolicy::kBestEffort}, {"Reject", OverBudgetPolicy::kReject}}))
      raw.cq.over_budget = *x;
  }
  if (const YAML::Node* v = s.find("defaultPriorityClass")) {
    if (auto x = r.str(*v, s.path("defaultPriorityClass"))) {
      raw.default_priority = *x;
      raw.priority_loc = loc_of(r, *v, s.path("defaultPriorityClass"));
    }
  }
}

void read_cluster_queue(Reader& r, const YAML::Node& doc, Builder& b) {
  MapReader top(r, doc, "", {kTopFields});
  Top t = read_top(r, doc, top, /*spec_required=*/true);
  const KueueApi api = kueue_api(doc);
  RawClusterQueue raw;
  raw.cq.name = t.meta.name;
  raw.name_loc = t.name_loc;
  bool any_borrowing_or_lending_limit = false;
  YAML::Node limit_at;
  if (t.spec) {
    MapReader spec(r, *t.spec, "spec", cluster_queue_fields(api));
    check_renamed_fields(r, spec, api);
    const std::string cohort_path = child("spec", cohort_field(api));
    if (const YAML::Node* n = spec.find(cohort_field(api))) {
      if (auto s = r.str(*n, cohort_path)) {
        raw.cohort = *s;
        raw.cohort_loc = loc_of(r, *n, cohort_path);
      }
    }
    if (const YAML::Node* n = spec.find("namespaceSelector")) {
      raw.cq.namespace_selector = read_namespace_selector(r, *n, "spec.namespaceSelector");
    } else if (spec.is_map()) {
      r.warning(*t.spec, "spec.namespaceSelector",
                "not set: Kueue would admit workloads from no namespace; sluice admits all");
    }
    if (const YAML::Node* n = spec.find("queueingStrategy")) {
      if (auto v =
              r.choice<QueueingStrategy>(*n, "spec.queueingStrategy",
                                         {{"StrictFIFO", QueueingStrategy::kStrictFIFO},
                                          {"BestEffortFIFO", QueueingStrategy::kBestEffortFIFO}}))
        raw.cq.strategy = *v;
    }
    if (const YAML::Node* n = spec.find("resourceGroups")) {
      raw.groups = read_resource_groups(r, *n, "spec.resourceGroups", b.config);
      for (const auto& g : raw.groups)
        for (const auto& f : g.flavors)
          for (const auto& q : f.resources)
            if (q.borrowing_limit || q.lending_limit) any_borrowing_or_lending_limit = true;
      limit_at = *n;
    }
    if (const YAML::Node* n = spec.find("preemption"))
      read_preemption(r, *n, "spec.preemption", raw.cq.preemption);
    if (const YAML::Node* n = spec.find("fairSharing"))
      read_fair_sharing(r, *n, "spec.fairSharing", &raw.cq.fair_weight);
    if (const YAML::Node* n = spec.find("flavorFungibility"))
      read_flavor_fungibility(r, *n, "spec.flavorFungibility", api, &raw.cq.flavor_fungibility);
    if (const YAML::Node* n = spec.find("concurrentAdmissionPolicy"))
      read_concurrent_admission(r, *n, "spec.concurrentAdmissionPolicy");
    if (const YAML::Node* n = spec.find("admissionScope"))
      read_admission_scope(r, *n, "spec.admissionScope");
    if (const YAML::Node* n = spec.find("sluice")) read_cluster_queue_sluice(r, *n, raw);
  }
  // Kueue rejects limits without a cohort; they are merely meaningless, so warn.
  if (raw.cohort.empty() && any_borrowing_or_lending_limit)
    r.warning(limit_at, "spec.resourceGroups",
              "borrowingLimit/lendingLimit have no effect: the ClusterQueue has no " +
                  std::string(cohort_field(api)));
  if (t.meta.ok) b.cluster_queues.push_back(std::move(raw));
}

void read_local_queue(Reader& r, const YAML::Node& doc, Builder& b) {
  MapReader top(r, doc, "", {kTopFields});
  Top t = read_top(r, doc, top, /*spec_required=*/true);
  RawLocalQueue raw;
  raw.lq.name = t.meta.name;
  raw.lq.namespace_ = t.meta.namespace_;
  raw.name_loc = t.name_loc;
  if (t.spec) {
    // v1beta2 adds wallTimePolicy (wall-time budgets; sluice's are Budget objects).
    MapReader::Fields fields{{"clusterQueue", "sluice"}, {"stopPolicy", "fairSharing"}, kKueueOnly};
    if (kueue_api(doc) == KueueApi::kV1beta2) fields.ignored.push_back("wallTimePolicy");
    MapReader spec(r, *t.spec, "spec", fields);
    if (const YAML::Node* n = spec.required("clusterQueue")) {
      if (auto s = r.str(*n, "spec.clusterQueue")) {
        raw.cluster_queue = *s;
        raw.cq_loc = loc_of(r, *n, "spec.clusterQueue");
      }
    }
    if (const YAML::Node* n = spec.find("sluice")) {
      MapReader s(r, *n, "spec.sluice", {{"maxPending"}});
      if (const YAML::Node* v = s.find("maxPending")) {
        if (auto x = r.integer(*v, s.path("maxPending"), 0, std::numeric_limits<int32_t>::max()))
          raw.lq.max_pending = static_cast<int32_t>(*x);
      }
    }
  }
  if (t.meta.ok && !raw.cluster_queue.empty()) b.local_queues.push_back(std::move(raw));
}

void read_priority_class(Reader& r, const YAML::Node& doc, Builder& b) {
  // Kubernetes' own PriorityClass (what a Pod's priorityClassName names) reads the same way;
  // sluice keeps one set of priority class names for both.
  const bool kube =
      doc["apiVersion"].IsScalar() && doc["apiVersion"].Scalar() == "scheduling.k8s.io/v1";
  MapReader::Fields fields{{"apiVersion", "kind", "metadata", "value", "description", "status"}};
  if (kube) fields.known.insert(fields.known.end(), {"globalDefault", "preemptionPolicy"});
  MapReader top(r, doc, "", fields);
  Top t = read_top(r, doc, top, /*spec_required=*/false);
  if (const YAML::Node* g = top.find("globalDefault")) {
    if (r.boolean(*g, "globalDefault").value_or(false))
      r.warning(*g, "globalDefault",
                "ignored: a job without a priority class gets its ClusterQueue's "
                "spec.sluice.defaultPriorityClass, else priority 0");
  }
  if (const YAML::Node* p = top.find("preemptionPolicy")) {
    if (r.choice<bool>(*p, "preemptionPolicy",
                       {{"PreemptLowerPriority", true}, {"Never", false}}) == false)
      r.warning(*p, "preemptionPolicy",
                "ignored: whether a job may preempt is its ClusterQueue's preemption policy");
  }
  PriorityClass pc;
  pc.name = t.meta.name;
  bool ok = t.meta.ok;
  if (const YAML::Node* v = top.required("value")) {
    auto x = r.integer(*v, "value", std::numeric_limits<int32_t>::min(),
                       std::numeric_limits<int32_t>::max());
    ok = ok && x;
    if (x) pc.value = static_cast<int32_t>(*x);
  } else {
    ok = false;
  }
  if (const YAML::Node* d = top.find("description")) r.str(*d, "description", true);
  if (!ok) return;
  if (const PriorityClass* other = b.config.find_priority_class(pc.name)) {
    size_t i = static_cast<size_t>(other - b.config.priority_classes.data());
    r.sink().error(format(t.name_loc.where, t.name_loc.path,
                          "duplicate WorkloadPriorityClass " + quote(pc.name) +
                              " (first defined at " + b.priority_where[i].str() + ")"));
    return;
  }
  b.config.priority_classes.push_back(pc);
  b.priority_where.push_back(t.name_loc.where);
}

void read_cohort(Reader& r, const YAML::Node& doc, Builder& b) {
  MapReader top(r, doc, "", {kTopFields});
  Top t = read_top(r, doc, top, /*spec_required=*/false);
  RawCohort raw;
  raw.cohort.name = t.meta.name;
  raw.name_loc = t.name_loc;
  if (t.spec) {
    // The parent is spec.parent in v1alpha1 and v1beta1, spec.parentName in v1beta2; the other
    // version's name is read too, with a warning (sluice's files before this used parentName).
    const bool v2 = kueue_api(doc) == KueueApi::kV1beta2;
    const char* own = v2 ? "parentName" : "parent";
    const char* other = v2 ? "parent" : "parentName";
    MapReader spec(r, *t.spec, "spec", {{own, "resourceGroups", "fairSharing", other}});
    const YAML::Node* given = spec.find(own);
    const char* used = own;
    if (const YAML::Node* o = spec.find(other)) {
      if (given) {
        r.error(*o, spec.path(other), std::string("give the parent once, as ") + own);
      } else {
        r.warning(*o, spec.path(other),
                  std::string(v2 ? "kueue.x-k8s.io/v1beta2 calls this field parentName"
                                 : "kueue.x-k8s.io/v1beta1 and v1alpha1 call this field parent "
                                   "(parentName is v1beta2's)") +
                      "; read as it");
        given = o;
        used = other;
      }
    }
    if (given) {
      if (auto s = r.str(*given, spec.path(used))) {
        raw.parent = *s;
        raw.parent_loc = loc_of(r, *given, spec.path(used));
      }
    }
    if (const YAML::Node* n = spec.find("resourceGroups"))
      raw.groups = read_resource_groups(r, *n, "spec.resourceGroups", b.config);
    if (const YAML::Node* n = spec.find("fairSharing"))
      read_fair_sharing(r, *n, "spec.fairSharing", &raw.cohort.fair_weight);
  }
  if (t.meta.ok) b.cohorts.push_back(std::move(raw));
}

// scheduling.x-k8s.io/v1alpha1 Queue (kube-batch / Volcano style, found in playbooks). Mapped to
// the closest Kueue model: a ClusterQueue and a LocalQueue of the same name serving every
// namespace ("*"); resourceQuota becomes the nominal quota of flavor "default"; gpu, cpu and
// memory are always covered (what the quota does not list is unlimited). docs/config.md.
void read_batch_queue(Reader& r, const YAML::Node& doc, Builder& b) {
  MapReader top(r, doc, "", {kTopFields});
  Top t = read_top(r, doc, top, /*spec_required=*/false);
  RawClusterQueue raw;
  raw.cq.name = t.meta.name;
  raw.name_loc = t.name_loc;
  raw.cq.namespace_selector = NamespaceSelector{.match_all = true};
  RawGroup group;
  group.covered = {kGpu, kCpu, kMemory};
  RawFlavorQuotas fq;
  fq.flavor = "default";
  fq.loc = t.name_loc;
  fq.implied_ok = true;
  if (t.spec) {
    MapReader spec(r, *t.spec, "spec",
                   {{"priorityClassName", "weight", "preemptionPolicy", "resourceQuota"}});
    if (const YAML::Node* n = spec.find("priorityClassName")) {
      if (auto s = r.str(*n, "spec.priorityClassName")) {
        raw.default_priority = *s;
        raw.priority_loc = loc_of(r, *n, "spec.priorityClassName");
      }
    }
    if (const YAML::Node* n = spec.find("weight")) {
      if (auto w = r.number(*n, "spec.weight", 0, 1e9)) raw.cq.fair_weight = *w;
    }
    if (const YAML::Node* n = spec.find("preemptionPolicy")) {
      if (auto v = r.choice<WithinQueuePolicy>(
              *n, "spec.preemptionPolicy",
              {{"PreemptLowerPriority", WithinQueuePolicy::kLowerPriority},
               {"Never", WithinQueuePolicy::kNever}}))
        raw.cq.preemption.within_cluster_queue = *v;
    }
    if (const YAML::Node* n = spec.find("resourceQuota")) {
      std::vector<std::string> unused;  // every key is a resource name: none is unknown
      MapReader q(r, *n, "spec.resourceQuota", {}, &unused);
      if (q.is_map() && n->IsMap()) {
        for (const auto& [key, value] : q.entries()) {
          const std::string name = key == "gpu" ? std::string(kGpuResourceName) : key;
          auto id = intern_resource(r, b.config.resources, value, q.path(key), name);
          if (!id) continue;
          auto v = r.quantity(value, q.path(key), *id);
          if (!v) continue;
          if (!std::count(group.covered.begin(), group.covered.end(), *id))
            group.covered.push_back(*id);
          fq.resources.push_back(ResourceQuota{.resource = *id, .nominal = *v});
        }
      }
    }
  }
  group.flavors.push_back(std::move(fq));
  raw.groups.push_back(std::move(group));
  if (!t.meta.ok) return;
  RawLocalQueue lq;
  lq.lq.name = raw.cq.name;
  lq.lq.namespace_ = "*";
  lq.name_loc = raw.name_loc;
  lq.cluster_queue = raw.cq.name;
  lq.cq_loc = raw.name_loc;
  b.cluster_queues.push_back(std::move(raw));
  b.local_queues.push_back(std::move(lq));
}

}  // namespace sluice::config_detail
