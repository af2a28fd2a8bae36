// summarize(): the human summary `sluice check` prints.
#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>

#include "config/loader.h"
#include "core/place/scorer.h"

namespace sluice {

namespace {

std::string duration(TimeNs ns) {
  if (ns == 0) return "0s";
  struct Unit {
    TimeNs ns;
    const char* name;
  };
  const Unit units[] = {{86400 * kNsPerSec, "d"},
                        {3600 * kNsPerSec, "h"},
                        {60 * kNsPerSec, "m"},
                        {kNsPerSec, "s"},
                        {1000'000, "ms"}};
  std::string s;
  for (const auto& u : units) {
    if (ns >= u.ns) {
      s += std::to_string(ns / u.ns) + u.name;
      ns %= u.ns;
    }
  }
  if (ns > 0) s += std::to_string(ns) + "ns";
  return s;
}

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

std::string labels(const Labels& l) {
  if (l.empty()) return "(any node)";
  std::string s;
  for (const auto& [k, v] : l) s += (s.empty() ? "" : ",") + k + "=" + v;
  return s;
}

void groups(std::ostringstream& o, const Config& c, const std::vector<ResourceGroup>& gs,
            const char* indent) {
  for (const auto& g : gs) {
    o << indent << "[";
    for (size_t i = 0; i < g.covered.size(); ++i)
      o << (i ? ", " : "") << c.resources.name(g.covered[i]);
    o << "]\n";
    for (const auto& f : g.flavors) {
      o << indent << "  " << c.flavors[static_cast<size_t>(f.flavor)].name << ":";
      for (ResourceId r : g.covered) {
        o << " " << c.resources.name(r) << " ";
        const ResourceQuota* q = f.find(r);
        if (!q) {
          o << "unlimited";
        } else {
          o << format_canonical(r, q->nominal);
          if (q->borrowing_limit) o << " (borrow <= " << format_canonical(r, *q->borrowing_limit);
          if (q->lending_limit)
            o << (q->borrowing_limit ? ", " : " (")
              << "lend <= " << format_canonical(r, *q->lending_limit);
          if (q->borrowing_limit || q->lending_limit) o << ")";
        }
        o << ";";
      }
      o << "\n";
    }
  }
}

const char* within(WithinQueuePolicy p) {
  switch (p) {
    case WithinQueuePolicy::kNever:
      return "Never";
    case WithinQueuePolicy::kLowerPriority:
      return "LowerPriority";
    case WithinQueuePolicy::kLowerOrNewerEqualPriority:
      return "LowerOrNewerEqualPriority";
  }
  return "?";
}
const char* reclaim(ReclaimPolicy p) {
  switch (p) {
    case ReclaimPolicy::kNever:
      return "Never";
    case ReclaimPolicy::kLowerPriority:
      return "LowerPriority";
    case ReclaimPolicy::kAny:
      return "Any";
  }
  return "?";
}

// The cluster: nodes, GPUs by model, node pools, topology levels.
void summarize_cluster(std::ostringstream& o, const Config& c) {
  const Cluster& cl = c.cluster;
  std::map<std::string, int64_t> models;
  int64_t mig = 0, cpu = 0, mem = 0, ready = 0;
  for (const auto& n : cl.nodes) {
    cpu += n.cpu_milli;
    mem += n.memory_mib;
    ready += n.ready ? 1 : 0;
    for (const auto& g : n.gpus) {
      ++models[g.model];
      mig += static_cast<int64_t>(g.mig.size());
    }
  }
  o << "cluster " << (cl.name.empty() ? "(none)" : "\"" + cl.name + "\"") << ": " << cl.nodes.size()
    << " nodes (" << ready << " ready), " << cl.total_gpus() << " GPUs";
  if (!models.empty()) {
    o << " (";
    bool first = true;
    for (const auto& [m, k] : models) {
      o << (first ? "" : ", ") << m << " x" << k;
      first = false;
    }
    if (mig) o << "; " << mig << " MIG slices";
    o << ")";
  }
  o << ", cpu " << format_canonical(kCpu, cpu) << ", memory " << format_canonical(kMemory, mem)
    << "\n";
  for (const NodePool& p : c.node_pools)
    o << "  node pool " << p.name << " (flavor " << p.flavor << ", "
      << (p.capacity == CapacityType::kSpot ? "spot" : "on-demand") << "): " << p.min_nodes << "-"
      << p.max_nodes << " nodes of " << p.node.gpus.size() << " GPUs\n";
  if (!cl.levels.empty()) {
    o << "  topology:";
    for (size_t i = 0; i < cl.levels.size(); ++i)
      o << (i ? " >" : "") << " " << cl.levels[i] << " ("
        << (i < cl.domain_names.size() ? cl.domain_names[i].size() : 0) << ")";
    o << " > node\n";
  }
}

// The flavors and how many nodes each selects.
void summarize_flavors(std::ostringstream& o, const Config& c) {
  o << "flavors: " << c.flavors.size() << "\n";
  for (const auto& f : c.flavors) {
    int64_t nodes = 0;
    for (const auto& n : c.cluster.nodes)
      if (std::all_of(f.node_labels.begin(), f.node_labels.end(), [&](const auto& kv) {
            const std::string* v = find_label(n.labels, kv.first);
            return v && *v == kv.second;
          }))
        ++nodes;
    o << "  " << f.name << ": " << labels(f.node_labels) << ", " << nodes << " nodes"
      << (f.implied ? " (implied)" : "") << "\n";
  }
}

// The cohorts, their members and their own quota.
void summarize_cohorts(std::ostringstream& o, const Config& c) {
  o << "cohorts: " << c.cohorts.size() << "\n";
  for (const auto& co : c.cohorts) {
    o << "  " << co.name;
    if (co.parent) o << " (parent " << c.cohorts[static_cast<size_t>(*co.parent)].name << ")";
    if (co.implied) o << " (implied)";
    std::vector<std::string> members;
    for (const auto& q : c.cluster_queues)
      if (q.cohort && c.cohorts[static_cast<size_t>(*q.cohort)].name == co.name)
        members.push_back(q.name);
    o << ":";
    for (const auto& m : members) o << " " << m;
    o << "\n";
    groups(o, c, co.resource_groups, "    ");
  }
}

// The ClusterQueues: cohort, weight, strategy, preemption, the rest of their settings.
void summarize_cluster_queues(std::ostringstream& o, const Config& c) {
  o << "cluster queues: " << c.cluster_queues.size() << "\n";
  for (const auto& q : c.cluster_queues) {
    o << "  " << q.name;
    if (q.cohort) o << " cohort " << c.cohorts[static_cast<size_t>(*q.cohort)].name;
    o << ", weight " << number(q.fair_weight) << ", "
      << (q.strategy == QueueingStrategy::kStrictFIFO ? "StrictFIFO" : "BestEffortFIFO")
      << ", preemption within=" << within(q.preemption.within_cluster_queue)
      << " reclaim=" << reclaim(q.preemption.reclaim_within_cohort) << " borrow="
      << (q.preemption.borrow_within_cohort == BorrowWithinCohortPolicy::kNever ? "Never"
                                                                                : "LowerPriority");
    if (q.interactive) o << ", interactive";
    if (!q.preemptible) o << ", not preemptible";
    if (!q.default_priority_class.empty()) o << ", default priority " << q.default_priority_class;
    if (q.max_pending) o << ", max pending " << q.max_pending;
    if (q.flavor_fungibility.when_can_borrow == FungibilityPolicy::kTryNextFlavor)
      o << ", whenCanBorrow TryNextFlavor";
    if (q.flavor_fungibility.when_can_preempt == FungibilityPolicy::kMayStopSearch)
      o << ", whenCanPreempt MayStopSearch";
    if (!q.inactive.empty()) o << ", INACTIVE (" << q.inactive << ")";
    if (q.fallback.after_ns > 0)
      o << ", fallback after " << duration(q.fallback.after_ns) << " (preferred flavors "
        << q.fallback.preferred << ")";
    if (q.over_budget == OverBudgetPolicy::kReject) o << ", over budget: Reject";
    o << "\n";
    groups(o, c, q.resource_groups, "    ");
  }
}

// The LocalQueues and where they point.
void summarize_local_queues(std::ostringstream& o, const Config& c) {
  o << "local queues: " << c.local_queues.size() << "\n";
  for (const auto& l : c.local_queues) {
    o << "  " << (l.namespace_ == "*" ? "(every namespace)" : l.namespace_) << "/" << l.name
      << " -> " << c.cluster_queues[static_cast<size_t>(l.cluster_queue)].name;
    if (l.max_pending) o << " (max pending " << l.max_pending << ")";
    o << "\n";
  }
}

// The priority classes, lowest first.
void summarize_priorities(std::ostringstream& o, const Config& c) {
  std::vector<PriorityClass> pcs = c.priority_classes;
  std::sort(pcs.begin(), pcs.end(), [](const auto& a, const auto& b) {
    return a.value != b.value ? a.value < b.value : a.name < b.name;
  });
  o << "priority classes:";
  for (const auto& p : pcs) o << " " << p.name << "=" << p.value;
  o << (pcs.empty() ? " none\n" : "\n");
}

// The scheduler's policy: scoring, weights, horizons, modes.
void summarize_policy(std::ostringstream& o, const Config& c) {
  const SchedulerPolicy& p = c.policy;
  o << "policy: scoring " << scoring_policy_name(p.gpu_scoring) << "; weights priority "
    << number(p.weights.priority) << " age " << number(p.weights.age) << " drf "
    << number(p.weights.drf) << " debt " << number(p.weights.debt) << " deadline "
    << number(p.weights.deadline) << "; aging horizon " << duration(p.aging_horizon_ns)
    << "; debt half-life " << duration(p.debt_half_life_ns) << "; interactive timeout "
    << duration(p.interactive_timeout_ns);
  if (p.max_pending_total) o << "; max pending " << p.max_pending_total;
  if (p.cycle_start_flavors) o << "; flavors chosen at the cycle's start";
  if (p.fairness_yield_percentile)
    o << "; fairness yields past the class's recent p" << p.fairness_yield_percentile << " wait";
  if (p.fairness_within_nominal < 1)
    o << "; fairness within nominal quota x" << number(p.fairness_within_nominal);
  if (p.acts_without_victims()) {
    o << "; while nothing is preemptible: ordering "
      << (p.arrival_without_victims ? "by arrival" : "as the policy");
    if (p.align_ends && !p.align_without_victims)
      o << ", no end alignment";
    else if (p.align_ends && p.align_without_victims_after_ns >= 0)
      o << ", ends aligned after " << duration(p.align_without_victims_after_ns);
  }
  if (p.ordering == OrderingMode::kKueue) o << "; ordering kueue";
  if (p.fair_sharing.enable) {
    o << "; Kueue fair sharing, preemption";
    for (FairStrategy st : p.fair_sharing.strategies)
      o << (st == FairStrategy::kLessThanOrEqualToFinalShare ? " LessThanOrEqualToFinalShare"
                                                             : " LessThanInitialShare");
  }
  o << "\n";
}

}  // namespace

std::string summarize(const Config& c) {
  std::ostringstream o;
  summarize_cluster(o, c);
  summarize_flavors(o, c);
  summarize_cohorts(o, c);
  summarize_cluster_queues(o, c);
  summarize_local_queues(o, c);
  summarize_priorities(o, c);
  summarize_policy(o, c);
  if (!c.budgets.empty()) {
    o << "budgets: " << c.budgets.size() << "\n";
    for (const auto& b : c.budgets)
      o << "  " << b.namespace_ << ": " << number(b.gpu_hours_milli / 1000.0) << " GPU-hours per "
        << duration(b.period_ns) << "\n";
  }
  o << "warnings: " << c.warnings.size() << "\n";
  return o.str();
}

}  // namespace sluice
