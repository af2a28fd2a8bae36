// load_state(): a loaded state (admitted.h) into a scheduler, through the crash-recovery path.
#include <algorithm>
#include <map>
#include <tuple>

#include "config/loader.h"
#include "core/cycle/scheduler.h"

namespace sluice {

namespace {

class Restorer {
 public:
  explicit Restorer(Scheduler& s) : s_(s), c_(s.config()) {}

  // Restores one admitted job; false with *why set when it cannot be.
  bool restore(const Job& job, const AdmittedStatus& st, std::string* why) {
    // 1. The job as it runs (a fallback shape replaces its pod set).
    Job runs =
        st.shape >= 0 ? reshaped(job, job.fallback.shapes[static_cast<size_t>(st.shape)]) : job;
    if (!st.pod_set_counts.empty()) runs = with_counts(runs, st.pod_set_counts);
    Admission a;
    a.pod_set_counts = st.pod_set_counts;
    a.job = job.id;
    a.queue = st.queue;
    a.shape = st.shape;
    a.best_effort = st.best_effort;
    a.waited_ns = st.admitted_ns - job.submit_ns;
    // 2. Quota: what it uses of each (flavor, resource), within what its queue may use now.
    if (!charge(runs, st, a, why)) return false;
    // 3. Where its pods run: as given, or placed now.
    if (!place(runs, st, a.placement, why)) return false;
    return s_.restore_running(job, a, st.admitted_ns, st.admitted_ns, 0, why);
  }

 private:
  bool charge(const Job& runs, const AdmittedStatus& st, Admission& a, std::string* why) const {
    const QuotaTree& quota = s_.quota();
    const auto& groups = c_.cluster_queues[static_cast<size_t>(st.queue)].resource_groups;
    a.flavors.assign(groups.size(), -1);
    std::vector<std::vector<FlavorId>> per(runs.pod_sets.size(),
                                           std::vector<FlavorId>(groups.size(), -1));
    std::map<std::pair<FlavorId, ResourceId>, int64_t> use;
    for (size_t i = 0; i < runs.pod_sets.size(); ++i) {
      const PodSet& ps = runs.pod_sets[i];
      for (const auto& [r, f] : st.pod_sets[i].flavors) {
        const int g = quota.group_of(st.queue, r);
        if (g >= 0 && a.flavors[static_cast<size_t>(g)] < 0) a.flavors[static_cast<size_t>(g)] = f;
        if (g >= 0 && per[i][static_cast<size_t>(g)] < 0) per[i][static_cast<size_t>(g)] = f;
        if (quota.managed(st.queue, f, r)) use[{f, r}] += ps.requests[r] * ps.count;
      }
    }
    // Pod sets on different flavors (Kueue's per-pod-set assignment) keep them.
    if (pod_sets_differ(per)) a.pod_set_flavors = std::move(per);
    for (const auto& [fr, amount] : use) {
      const auto [f, r] = fr;
      const int64_t avail = quota.available(st.queue, f, r);
      if (amount > avail) {
        *why = "ClusterQueue " + c_.cluster_queues[static_cast<size_t>(st.queue)].name +
               " uses more " + c_.resources.name(r) + " on flavor " +
               c_.flavors[static_cast<size_t>(f)].name +
               " than it may: " + format_canonical(r, amount) + " admitted, " +
               format_canonical(r, std::max<int64_t>(0, avail)) +
               " left including borrowing (after the jobs restored before it)";
        return false;
      }
      if (quota.usage(st.queue, f, r) + amount > quota.nominal(st.queue, f, r)) a.borrowing = true;
      a.usage.push_back({f, r, amount});
    }
    return true;
  }

  // Pods with devices given are taken as they are; pods with a node get devices on it; pod sets
  // without nodes are placed on their flavors' nodes (the whole job at once when no pod set names
  // nodes and all share their flavors, so a gang's topology request holds across pod sets).
  bool place(const Job& runs, const AdmittedStatus& st, Placement& out, std::string* why) const {
    ClusterAlloc alloc = s_.alloc();
    bool any_nodes = false, same_flavors = true;
    for (const auto& ps : st.pod_sets) {
      any_nodes = any_nodes || !ps.nodes.empty();
      same_flavors = same_flavors && ps.flavors == st.pod_sets.front().flavors;
    }
    if (!any_nodes && same_flavors)
      return place_on(runs, -1, nodes_of(st.pod_sets.front()), alloc, out, why);
    for (size_t i = 0; i < runs.pod_sets.size(); ++i) {
      const AdmittedPodSet& ps = st.pod_sets[i];
      const auto set = static_cast<int32_t>(i);
      if (ps.nodes.empty()) {
        if (!place_on(runs, set, nodes_of(ps), alloc, out, why)) return false;
        continue;
      }
      for (size_t k = 0; k < ps.nodes.size(); ++k) {
        if (ps.gpus.empty()) {
          const NodeSet one(static_cast<int32_t>(c_.cluster.nodes.size()), {ps.nodes[k]});
          if (!place_on(runs, set, one, alloc, out, why, static_cast<int32_t>(k))) return false;
          continue;
        }
        PodPlacement pp{ps.nodes[k], set, static_cast<int32_t>(k), ps.gpus[k]};
        alloc.commit(runs, Placement{{pp}});  // restore_running checks that it was free
        out.pods.push_back(std::move(pp));
      }
    }
    std::sort(out.pods.begin(), out.pods.end(), [](const PodPlacement& x, const PodPlacement& y) {
      return std::tie(x.pod_set, x.pod_index) < std::tie(y.pod_set, y.pod_index);
    });
    return true;
  }

  // Places pod set `set` of `runs` (-1: the whole job; pod `pod` only when >= 0) on `nodes`
  // against `alloc`, committing it there and appending its pods to `out`.
  // The nodes that carry the labels of every flavor a pod set is assigned, as the scheduler
  // selects them (none when two flavors want different values of one label).
  const NodeSet& nodes_of(const AdmittedPodSet& ps) const {
    std::vector<FlavorId> flavors;
    for (const auto& [r, f] : ps.flavors) flavors.push_back(f);
    return s_.assigner().nodes_for(flavors, scratch_);
  }

  bool place_on(const Job& runs, int32_t set, const NodeSet& nodes, ClusterAlloc& alloc,
                Placement& out, std::string* why, int32_t pod = -1) const {
    Job part = runs;
    if (set >= 0) {
      part.pod_sets = {runs.pod_sets[static_cast<size_t>(set)]};
      if (pod >= 0) part.pod_sets.front().count = 1;
    }
    auto placed = s_.placer().place(part, nodes, alloc);
    if (auto* f = std::get_if<PlaceFailure>(&placed)) {
      *why = std::string("does not fit the nodes") +
             (pod >= 0        ? " given"
              : nodes.empty() ? ""
                              : " of its flavors") +
             ": " + f->detail;
      return false;
    }
    Placement p = std::get<Placement>(std::move(placed));
    for (auto& pp : p.pods) {
      if (set >= 0) pp.pod_set = set;
      if (pod >= 0) pp.pod_index = pod;
    }
    alloc.commit(runs, p);
    for (auto& pp : p.pods) out.pods.push_back(std::move(pp));
    return true;
  }

  Scheduler& s_;
  const Config& c_;
  mutable NodeSet scratch_;  // nodes_of()'s, for flavors of several resource groups
};

// Restore order: pods with devices first (they hold exactly those), then pods with nodes, then
// the rest; within each, by admission time and id, as a cycle would have admitted them.
int rank_of(const AdmittedStatus& st) {
  int rank = 0;
  for (const auto& ps : st.pod_sets) {
    if (ps.nodes.empty()) return 2;
    if (ps.gpus.empty()) rank = 1;
  }
  return rank;
}

std::string who(const Job& job) {
  return "job " + job.namespace_ + "/" + job.name;
}

}  // namespace

std::vector<std::string> restore_admitted(Scheduler& s, const LoadOutput& out) {
  std::vector<std::string> errors;
  std::vector<std::tuple<int, TimeNs, JobId, const Job*, const AdmittedStatus*>> admitted;
  for (const Job& job : out.jobs)
    if (auto it = out.admitted.find(job.id); it != out.admitted.end())
      admitted.emplace_back(rank_of(it->second), it->second.admitted_ns, job.id, &job, &it->second);
  std::sort(admitted.begin(), admitted.end());
  Restorer restorer(s);
  for (const auto& [rank, at, id, job, st] : admitted) {
    std::string why;
    if (restorer.restore(*job, *st, &why)) continue;
    const std::string own = "job " + std::to_string(id) + ": ";  // restore_running's prefix
    if (why.starts_with(own)) why.erase(0, own.size());
    errors.push_back(st->where + ": status.admission: " + who(*job) + ": " + why);
  }
  return errors;
}

std::vector<std::string> load_state(Scheduler& s, const LoadOutput& out) {
  std::vector<std::string> errors = restore_admitted(s, out);
  for (const Job& job : out.jobs) {
    if (out.admitted.count(job.id)) continue;
    SubmitResult r = s.submit(job);
    if (r.status != SubmitStatus::kAccepted) errors.push_back(who(job) + ": " + r.message);
  }
  return errors;
}

TimeNs state_time(const LoadOutput& out) {
  if (out.snapshot_ns) return *out.snapshot_ns;
  TimeNs t = 0;
  for (const Job& job : out.jobs) t = std::max(t, job.submit_ns);
  for (const auto& [id, st] : out.admitted) t = std::max(t, st.admitted_ns);
  return t;
}

}  // namespace sluice
