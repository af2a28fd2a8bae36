#include "core/cycle/reservation.h"

#include <algorithm>
#include <optional>
#include <tuple>

#include "core/place/pod_room.h"

namespace sluice {

Reservation reserve(const Job& job, const NodeSet& nodes, const Placer& placer,
                    const ClusterAlloc& alloc, const RunningEnds& running_ends,
                    std::vector<JobEnd> admitted_now, TimeNs now) {
  // The cycle's admissions are merged, in (at, id) order, with the running jobs' ends (already
  // in that order) as far as the walk below asks.
  auto earlier = [](const JobEnd& a, const JobEnd& b) {
    return std::tie(a.at, a.id) < std::tie(b.at, b.id);
  };
  std::sort(admitted_now.begin(), admitted_now.end(), earlier);
  std::vector<JobEnd> ends;  // the first ends in order, materialised on demand
  auto run_it = running_ends.begin();
  size_t now_i = 0;
  auto materialise = [&](size_t k) {
    while (ends.size() < k) {
      if (run_it != running_ends.end()) {
        const RunningRecord& r = *run_it->second;
        JobEnd e{run_it->first.first, run_it->first.second, &r.job, &r.admission.placement};
        if (now_i == admitted_now.size() || earlier(e, admitted_now[now_i])) {
          ends.push_back(e);
          ++run_it;
          continue;
        }
      }
      ends.push_back(admitted_now[now_i++]);
    }
  };
  // Placement after the first k jobs ended; monotone in k. One working copy moves between k
  // values by releasing / re-committing jobs (exact inverses), and the placer is asked only
  // where the pod-room bound allows a fit: a linear walk while the bound fails (cheap), then
  // galloping probes, then a binary search between the last failure and the first fit.
  ClusterAlloc trial = alloc;
  PodRoom room(job, trial);
  size_t at = 0;  // ends released into `trial`
  auto move_to = [&](size_t k) {
    materialise(k);
    for (; at < k; ++at) {
      trial.release(*ends[at].job, *ends[at].placement);
      room.touch(*ends[at].placement);
    }
    while (at > k) {
      --at;
      trial.commit(*ends[at].job, *ends[at].placement);
      room.touch(*ends[at].placement);
    }
  };
  auto probe = [&](size_t k) -> std::optional<Placement> {
    move_to(k);
    if (!room.may_fit()) return std::nullopt;
    auto placed = placer.place(job, nodes, trial);
    if (auto* pl = std::get_if<Placement>(&placed)) return std::move(*pl);
    return std::nullopt;
  };
  Reservation res;
  const size_t n = running_ends.size() + admitted_now.size();
  size_t lo = 0, hi = 0;  // probe(lo) fails (it failed now); probe(hi) fits once hi > 0
  std::optional<Placement> best;
  for (size_t k = 1, step = 1; k <= n;) {
    move_to(k);
    if (room.may_fit()) {
      if ((best = probe(k))) {
        hi = k;
        break;
      }
      lo = k;
      k = k + step > n && k < n ? n : k + step;
      step *= 2;
    } else {
      lo = k++;
    }
  }
  if (!best) return res;  // does not fit even when everything ends: nothing to reserve
  while (lo + 1 < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (auto pl = probe(mid)) {
      hi = mid;
      best = std::move(pl);
    } else {
      lo = mid;
    }
  }
  if (hi == 0) return res;  // fits now (cannot happen for a failed job; be safe)
  res.job = job.id;
  res.start_ns = std::max(now, ends[hi - 1].at);
  for (const auto& pod : best->pods) res.nodes.push_back(pod.node);
  std::sort(res.nodes.begin(), res.nodes.end());
  res.nodes.erase(std::unique(res.nodes.begin(), res.nodes.end()), res.nodes.end());
  return res;
}

}  // namespace sluice
