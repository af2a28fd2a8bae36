#include "core/cycle/reservation.h"

#include <algorithm>
#include <optional>
#include <tuple>

#include "core/place/pod_room.h"

namespace sluice {

namespace {

// (at, id) order; a closure, not a function, so that std::sort inlines it.
constexpr auto earlier = [](const JobEnd& a, const JobEnd& b) {
  return std::tie(a.at, a.id) < std::tie(b.at, b.id);
};

// The cluster after the first k job ends, for any k: the cycle's admissions merged, in (at, id)
// order, with the running jobs' ends (already in that order) as far as the walk asks. One
// working copy moves between k values by releasing / re-committing jobs (exact inverses).
class EndWalk {
 public:
  EndWalk(const Job& job, const NodeSet& nodes, const Placer& placer, const ClusterAlloc& alloc,
          const RunningEnds& running_ends, std::vector<JobEnd> admitted_now)
      : job_(job),
        nodes_(nodes),
        placer_(placer),
        running_ends_(running_ends),
        run_it_(running_ends.begin()),
        admitted_now_(std::move(admitted_now)),
        trial_(alloc),
        room_(job, trial_) {
    std::sort(admitted_now_.begin(), admitted_now_.end(), earlier);
  }

  size_t size() const { return running_ends_.size() + admitted_now_.size(); }
  const JobEnd& end(size_t k) const { return ends_[k]; }  // once walked past

  // The first k ends released into the working copy (and no more).
  void move_to(size_t k) {
    materialise(k);
    for (; at_ < k; ++at_) {
      trial_.release(*ends_[at_].job, *ends_[at_].placement);
      room_.touch(*ends_[at_].placement);
    }
    while (at_ > k) {
      --at_;
      trial_.commit(*ends_[at_].job, *ends_[at_].placement);
      room_.touch(*ends_[at_].placement);
    }
  }
  // Whether the pod-room bound allows a fit after the first k ends (cheap).
  bool may_fit(size_t k) {
    move_to(k);
    return room_.may_fit();
  }
  // The job's placement after the first k ends; the placer is asked only where the bound
  // allows a fit.
  std::optional<Placement> probe(size_t k) {
    if (!may_fit(k)) return std::nullopt;
    auto placed = placer_.place(job_, nodes_, trial_);
    if (auto* pl = std::get_if<Placement>(&placed)) return std::move(*pl);
    return std::nullopt;
  }

 private:
  void materialise(size_t k) {
    while (ends_.size() < k) {
      if (run_it_ != running_ends_.end()) {
        const RunningRecord& r = *run_it_->second;
        JobEnd e{run_it_->first.first, run_it_->first.second, &r.job, &r.admission.placement};
        if (now_i_ == admitted_now_.size() || earlier(e, admitted_now_[now_i_])) {
          ends_.push_back(e);
          ++run_it_;
          continue;
        }
      }
      ends_.push_back(admitted_now_[now_i_++]);
    }
  }

  const Job& job_;
  const NodeSet& nodes_;
  const Placer& placer_;
  const RunningEnds& running_ends_;
  RunningEnds::const_iterator run_it_;
  std::vector<JobEnd> admitted_now_;
  size_t now_i_ = 0;
  std::vector<JobEnd> ends_;  // the first ends in order, materialised on demand
  ClusterAlloc trial_;
  PodRoom room_;
  size_t at_ = 0;  // ends released into trial_
};

// The fewest ends after which the job fits (0: none does), and its placement then. Placement
// after k ends is monotone in k: a linear walk while the bound fails (cheap), then galloping
// probes, then a binary search between the last failure and the first fit.
std::pair<size_t, std::optional<Placement>> first_fit(EndWalk& walk) {
  const size_t n = walk.size();
  size_t lo = 0, hi = 0;  // probe(lo) fails (it failed now); probe(hi) fits once hi > 0
  std::optional<Placement> best;
  for (size_t k = 1, step = 1; k <= n;) {
    if (walk.may_fit(k)) {
      if ((best = walk.probe(k))) {
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
  if (!best) return {0, std::nullopt};  // does not fit even when everything ends
  while (lo + 1 < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (auto pl = walk.probe(mid)) {
      hi = mid;
      best = std::move(pl);
    } else {
      lo = mid;
    }
  }
  return {hi, std::move(best)};
}

}  // namespace

Reservation reserve(const Job& job, const NodeSet& nodes, const Placer& placer,
                    const ClusterAlloc& alloc, const RunningEnds& running_ends,
                    std::vector<JobEnd> admitted_now, TimeNs now) {
  EndWalk walk(job, nodes, placer, alloc, running_ends, std::move(admitted_now));
  auto [hi, best] = first_fit(walk);
  Reservation res;
  // Nothing to reserve: it does not fit even when everything ends, or it fits now (cannot
  // happen for a failed job; be safe).
  if (!best || hi == 0) return res;
  res.job = job.id;
  res.start_ns = std::max(now, walk.end(hi - 1).at);
  for (const auto& pod : best->pods) res.nodes.push_back(pod.node);
  std::sort(res.nodes.begin(), res.nodes.end());
  res.nodes.erase(std::unique(res.nodes.begin(), res.nodes.end()), res.nodes.end());
  return res;
}

}  // namespace sluice
