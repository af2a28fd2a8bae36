// Stage 2: names to indices. Implied cohorts and flavors, cohort cycles, duplicate names,
// unknown references, default priority classes, flavors that match no node.
#include <algorithm>

#include "config/internal.h"

namespace sluice::config_detail {

namespace {

std::string loc_message(const Loc& loc, const std::string& message) {
  return format(loc.where, loc.path, message);
}

template <class V, class F>
std::string names_of(const V& v, F name) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + name(x);
  return s.empty() ? "none defined" : s;
}

class Resolver {
 public:
  Resolver(Builder& b, Sink& sink) : b_(b), c_(b.config), sink_(sink) {}

  void run() {
    resolve_topologies(b_, sink_);
    cohorts();
    cluster_queues();
    cohort_groups();
    local_queues();
    flavors_vs_nodes();
  }

 private:
  // 1. Cohorts: defined ones first (document order), then implied ones as first referenced.
  void cohorts() {
    std::vector<Where> where;
    for (auto& raw : b_.cohorts) {
      if (auto i = c_.find_cohort(raw.cohort.name)) {
        sink_.error(loc_message(raw.name_loc, "duplicate Cohort " + quote(raw.cohort.name) +
                                                  " (first defined at " +
                                                  where[static_cast<size_t>(*i)].str() + ")"));
        raw.cohort.name.clear();  // skipped below
        continue;
      }
      c_.cohorts.push_back(raw.cohort);
      where.push_back(raw.name_loc.where);
    }
    for (const auto& raw : b_.cohorts) {
      if (raw.cohort.name.empty() || raw.parent.empty()) continue;
      CohortId self = *c_.find_cohort(raw.cohort.name);
      CohortId parent = cohort_id(raw.parent);
      c_.cohorts[static_cast<size_t>(self)].parent = parent;
    }
    // Cycles (A -> B -> A): reported once, at the cohort with the smallest index in the cycle,
    // and broken there so no later stage can loop.
    for (size_t start = 0; start < c_.cohorts.size(); ++start) {
      std::vector<CohortId> path = {static_cast<CohortId>(start)};
      std::optional<CohortId> cur = c_.cohorts[start].parent;
      for (size_t steps = 0; cur && steps <= c_.cohorts.size(); ++steps) {
        if (*cur == static_cast<CohortId>(start)) {
          if (*std::min_element(path.begin(), path.end()) == static_cast<CohortId>(start)) {
            std::string cycle;
            for (CohortId id : path) cycle += c_.cohorts[static_cast<size_t>(id)].name + " -> ";
            cycle += c_.cohorts[start].name;
            const RawCohort* raw = raw_cohort(c_.cohorts[start].name);
            sink_.error(loc_message(raw->parent_loc, "cohort cycle: " + cycle));
            c_.cohorts[start].parent.reset();
          }
          break;
        }
        if (std::count(path.begin(), path.end(), *cur)) break;  // a cycle not through start
        path.push_back(*cur);
        cur = c_.cohorts[static_cast<size_t>(*cur)].parent;
      }
    }
  }

  const RawCohort* raw_cohort(const std::string& name) const {
    for (const auto& raw : b_.cohorts)
      if (raw.cohort.name == name) return &raw;
    return nullptr;
  }

  CohortId cohort_id(const std::string& name) {
    if (auto i = c_.find_cohort(name)) return *i;
    Cohort implied;
    implied.name = name;
    implied.implied = true;  // Kueue creates cohorts that are only named
    c_.cohorts.push_back(implied);
    return static_cast<CohortId>(c_.cohorts.size() - 1);
  }

  // 2. Flavors named by quotas: defined, or implied (no node labels) with a warning. A Kueue
  // ClusterQueue (cq) naming one is inactive, as in Kueue: *inactive says why.
  std::vector<ResourceGroup> groups(const std::vector<RawGroup>& raw, const std::string& cq = "",
                                    std::string* inactive = nullptr) {
    std::vector<ResourceGroup> out;
    for (const auto& g : raw) {
      ResourceGroup group;
      group.covered = g.covered;
      for (const auto& f : g.flavors) {
        if (f.flavor.empty()) continue;
        FlavorQuotas fq;
        fq.flavor = flavor_id(f, f.implied_ok ? nullptr : inactive, cq);
        fq.resources = f.resources;
        group.flavors.push_back(std::move(fq));
      }
      out.push_back(std::move(group));
    }
    return out;
  }

  FlavorId flavor_id(const RawFlavorQuotas& f, std::string* inactive, const std::string& cq) {
    std::optional<FlavorId> id = c_.find_flavor(f.flavor);
    const bool undefined = !id || c_.flavors[static_cast<size_t>(*id)].implied;
    if (undefined && inactive) {
      if (inactive->empty())
        inactive->assign("ResourceFlavor " + quote(f.flavor) + " is not defined");
      sink_.warning(loc_message(f.loc, "ResourceFlavor " + quote(f.flavor) +
                                           " is not defined: ClusterQueue " + quote(cq) +
                                           " is inactive and its jobs wait until it is (as in "
                                           "Kueue)"));
    }
    if (id) return *id;
    ResourceFlavor implied;
    implied.name = f.flavor;
    implied.implied = true;
    c_.flavors.push_back(implied);
    b_.flavor_where.push_back(f.loc.where);
    if (!inactive)
      sink_.warning(loc_message(f.loc, "ResourceFlavor " + quote(f.flavor) +
                                           " is not defined; implied with no node labels "
                                           "(it matches every node)"));
    return static_cast<FlavorId>(c_.flavors.size() - 1);
  }

  // 3. ClusterQueues.
  void cluster_queues() {
    std::vector<Where> where;
    for (auto& raw : b_.cluster_queues) {
      if (auto i = c_.find_cluster_queue(raw.cq.name)) {
        sink_.error(loc_message(raw.name_loc, "duplicate ClusterQueue " + quote(raw.cq.name) +
                                                  " (first defined at " +
                                                  where[static_cast<size_t>(*i)].str() + ")"));
        raw.cq.name.clear();
        continue;
      }
      ClusterQueue cq = raw.cq;
      if (!raw.cohort.empty()) cq.cohort = cohort_id(raw.cohort);
      cq.resource_groups = groups(raw.groups, cq.name, &cq.inactive);
      if (!raw.default_priority.empty()) {
        if (priority(raw.default_priority, raw.priority_loc))
          cq.default_priority_class = raw.default_priority;
      }
      c_.cluster_queues.push_back(std::move(cq));
      where.push_back(raw.name_loc.where);
    }
  }

  // A cohort's own quota (after the queues, so flavor order follows first use by queues).
  void cohort_groups() {
    for (const auto& raw : b_.cohorts) {
      if (raw.cohort.name.empty()) continue;
      CohortId id = *c_.find_cohort(raw.cohort.name);
      c_.cohorts[static_cast<size_t>(id)].resource_groups = groups(raw.groups);
    }
  }

  // A priority class by name: defined, built-in (added, with a warning), or an error.
  bool priority(const std::string& name, const Loc& loc) {
    if (c_.find_priority_class(name)) return true;
    if (auto v = builtin_priority(name)) {
      c_.priority_classes.push_back(PriorityClass{name, *v});
      b_.priority_where.push_back(loc.where);
      sink_.warning(loc_message(loc, "WorkloadPriorityClass " + quote(name) +
                                         " is not defined; using the built-in value " +
                                         std::to_string(*v)));
      return true;
    }
    sink_.error(
        loc_message(loc, "unknown priority class " + quote(name) + " (defined: " +
                             names_of(c_.priority_classes, [](const auto& p) { return p.name; }) +
                             "; built-in: low, normal, medium, high, critical)"));
    return false;
  }

  // 4. LocalQueues.
  void local_queues() {
    std::vector<Where> where;
    for (const auto& raw : b_.local_queues) {
      if (auto i = find_local_exact(raw.lq.namespace_, raw.lq.name)) {
        sink_.error(loc_message(
            raw.name_loc, "duplicate LocalQueue " + quote(raw.lq.namespace_ + "/" + raw.lq.name) +
                              " (first defined at " + where[static_cast<size_t>(*i)].str() + ")"));
        continue;
      }
      auto cq = c_.find_cluster_queue(raw.cluster_queue);
      if (!cq) {
        sink_.error(loc_message(
            raw.cq_loc, "ClusterQueue " + quote(raw.cluster_queue) + " not found (defined: " +
                            names_of(c_.cluster_queues, [](const auto& q) { return q.name; }) +
                            ")"));
        continue;
      }
      LocalQueue lq = raw.lq;
      lq.cluster_queue = *cq;
      const ClusterQueue& target = c_.cluster_queues[static_cast<size_t>(*cq)];
      if (lq.namespace_ != "*" && !selects_namespace(target.namespace_selector, lq.namespace_))
        sink_.warning(loc_message(
            raw.name_loc, "LocalQueue " + quote(lq.namespace_ + "/" + lq.name) +
                              ": the namespaceSelector of ClusterQueue " + quote(target.name) +
                              " does not select namespace " + quote(lq.namespace_) +
                              " (its labels are {kubernetes.io/metadata.name: " + lq.namespace_ +
                              "}): submissions to it are refused"));
      c_.local_queues.push_back(std::move(lq));
      where.push_back(raw.name_loc.where);
    }
  }

  std::optional<LocalQueueId> find_local_exact(const std::string& ns, const std::string& name) {
    for (size_t i = 0; i < c_.local_queues.size(); ++i)
      if (c_.local_queues[i].name == name && c_.local_queues[i].namespace_ == ns)
        return static_cast<LocalQueueId>(i);
    return std::nullopt;
  }

  // 5. A flavor whose labels match no node can never be used.
  void flavors_vs_nodes() {
    if (c_.cluster.nodes.empty()) return;
    for (size_t i = 0; i < c_.flavors.size(); ++i) {
      const ResourceFlavor& f = c_.flavors[i];
      bool any = std::any_of(c_.cluster.nodes.begin(), c_.cluster.nodes.end(), [&](const Node& n) {
        return std::all_of(f.node_labels.begin(), f.node_labels.end(), [&](const auto& kv) {
          const std::string* v = find_label(n.labels, kv.first);
          return v && *v == kv.second;
        });
      });
      if (!any)
        sink_.warning(format(b_.flavor_where[i], "spec.nodeLabels",
                             "ResourceFlavor " + quote(f.name) + " matches no node"));
    }
  }

  Builder& b_;
  Config& c_;
  Sink& sink_;
};

}  // namespace

void resolve(Builder& b, Sink& sink) {
  Resolver(b, sink).run();
  resolve_node_pools(b, sink);
}

}  // namespace sluice::config_detail
