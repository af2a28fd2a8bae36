#include "core/cycle/predict.h"

#include <algorithm>
#include <set>
#include <unordered_map>

namespace sluice {

const char* outcome_name(PredictOutcome o) {
  switch (o) {
    case PredictOutcome::kStarts:
      return "starts";
    case PredictOutcome::kNever:
      return "never";
    case PredictOutcome::kBeyondBound:
      return "beyond-bound";
    case PredictOutcome::kNotPending:
      return "not-pending";
  }
  return "?";
}

TimeNs predicted_walltime(const Config& config, const Job& job, const PredictOptions& options) {
  if (job.walltime_ns > 0) return job.walltime_ns;
  const auto lq = config.local_queue_of(job);
  const TimeNs d =
      lq ? config.cluster_queues[config.local_queues[*lq].cluster_queue].default_walltime_ns : 0;
  return d > 0 ? d : options.unknown_walltime_ns;
}

PredictInput predict_input(const Scheduler& sched, TimeNs now) {
  PredictInput in;
  in.now = now;
  in.running.reserve(sched.running_count());
  for (const auto& [id, r] : sched.running()) {
    Scheduler::RunningJob copy = r;
    in.running.push_back({Scheduler::requested_job(std::move(copy)), r.admission, r.start_ns,
                          r.checkpoint_ns, sched.preemption_count(id)});
  }
  in.pending.reserve(sched.pending_count());
  sched.for_each_pending([&](const Scheduler::PendingJob& p) { in.pending.push_back(p.job); });
  std::sort(in.pending.begin(), in.pending.end(),
            [](const Job& a, const Job& b) { return a.id < b.id; });
  in.debts = sched.debts();
  in.waits = sched.recent_waits();
  in.budgets = sched.budget_snapshot(now);
  const ClusterAlloc& alloc = sched.alloc();
  for (NodeId n = 0; n < alloc.node_count(); ++n)
    if (!alloc.ready(n)) in.not_ready.push_back(n);
  return in;
}

namespace {

constexpr size_t kMaxArrivals = 100'000;  // expected arrivals one replay may plan

// The forward replay: a copy of the state, its end events (time, job id), and the starts seen.
class Forward {
 public:
  Forward(const std::shared_ptr<const Config>& config, const PredictOptions& options)
      : config_(*config), options_(options), sched_(config) {
    sched_.set_summarize_pending(true);
  }

  // 1. The copy: nodes that take no new pods, running jobs where they run (ending at start +
  //    walltime, or at once when they overran it), the queues' debt and budgets, then pending
  //    jobs in id order (submit() keeps their submit times).
  void copy(const PredictInput& in) {
    for (NodeId n : in.not_ready) sched_.set_node_ready(n, false);
    for (const auto& r : in.running) {
      std::string why;
      if (!sched_.restore_running(r.job, r.admission, r.start_ns, r.checkpoint_ns, r.preemptions,
                                  &why))
        continue;  // cannot happen for a consistent state; the job is then left out
      const TimeNs end =
          std::max(in.now, r.start_ns + predicted_walltime(config_, r.job, options_));
      ends_.insert({end, r.job.id});
      end_of_[r.job.id] = end;
    }
    sched_.restore_debts(in.debts);
    sched_.restore_recent_waits(in.waits);
    sched_.restore_budgets(in.budgets, in.now);
    for (const Job& j : in.pending) sched_.submit(j);
  }

  // 2. Expected arrivals (PredictOptions::arrival_window_ns): `recent` again, shifted by k
  //    windows, up to the horizon; fresh ids above every id of the copy.
  void plan_arrivals(const PredictInput& in) {
    const TimeNs w = options_.arrival_window_ns;
    if (w <= 0 || in.recent.empty()) return;
    recent_ = &in.recent;
    JobId top = 0;
    for (const auto& r : in.running) top = std::max(top, r.job.id);
    for (const Job& j : in.pending) top = std::max(top, j.id);
    for (const Job& j : in.recent) top = std::max(top, j.id);
    next_id_ = top + 1;
    const TimeNs until = in.now + options_.arrival_horizon_ns;
    for (TimeNs shift = w; in.now - w + shift < until && arrivals_.size() < kMaxArrivals;
         shift += w)
      for (size_t i = 0; i < in.recent.size(); ++i) {
        const TimeNs at = in.recent[i].submit_ns + shift;
        if (at > in.now && at <= until) arrivals_.push_back({at, i});
      }
    std::sort(arrivals_.begin(), arrivals_.end());
  }

  // 3. Cycles at `now`, then at each end or arrival time, until every wanted job started,
  //    nothing is left to end or arrive (the jobs left never start), or the bound.
  void run(TimeNs now, std::set<JobId> wanted, Prediction& out,
           std::unordered_map<JobId, TimeNs>& starts) {
    TimeNs t = now;
    out.horizon_ns = now;
    for (int64_t c = 0; !wanted.empty(); ++c) {
      if (c >= options_.max_cycles || (c > 0 && options_.stop && options_.stop())) {
        out.bounded = true;
        return;
      }
      const CycleResult r = sched_.run_cycle(t);
      sched_.apply(r, t);
      ++out.cycles;
      for (const Preemption& p : r.preempted) ends_.erase({end_of_[p.victim], p.victim});
      for (const Admission& a : r.admitted) {
        if (wanted.erase(a.job)) starts.emplace(a.job, t);
        const RunningRecord* rr = sched_.find_running(a.job);
        if (!rr) continue;
        const TimeNs end = t + predicted_walltime(config_, rr->job, options_);
        ends_.insert({end, a.job});
        end_of_[a.job] = end;
      }
      const bool arrivals = next_arrival_ < arrivals_.size();
      if ((ends_.empty() && !arrivals) || (sched_.pending_count() == 0 && !arrivals)) return;
      t = next_event();
      out.horizon_ns = t;
      advance_to(t);
    }
  }

 private:
  TimeNs next_event() const {
    TimeNs t = ends_.empty() ? arrivals_[next_arrival_].first : ends_.begin()->first;
    if (next_arrival_ < arrivals_.size()) t = std::min(t, arrivals_[next_arrival_].first);
    return t;
  }

  // Every job that ends at `t` ends, and every expected arrival at `t` is submitted.
  void advance_to(TimeNs t) {
    while (!ends_.empty() && ends_.begin()->first == t) {
      sched_.finish(ends_.begin()->second, t);
      ends_.erase(ends_.begin());
    }
    for (; next_arrival_ < arrivals_.size() && arrivals_[next_arrival_].first == t;
         ++next_arrival_) {
      Job j = (*recent_)[arrivals_[next_arrival_].second];
      j.id = next_id_++;
      j.submit_ns = t;
      sched_.submit(std::move(j));  // refused (a pending cap): it does not arrive
    }
  }

  const Config& config_;
  const PredictOptions& options_;
  Scheduler sched_;
  std::set<std::pair<TimeNs, JobId>> ends_;
  std::unordered_map<JobId, TimeNs> end_of_;  // running jobs' end (lookups only)
  const std::vector<Job>* recent_ = nullptr;
  std::vector<std::pair<TimeNs, size_t>> arrivals_;  // (time, index into recent), sorted
  size_t next_arrival_ = 0;
  JobId next_id_ = 0;
};

}  // namespace

Prediction predict_starts(const std::shared_ptr<const Config>& config, const PredictInput& input,
                          const std::vector<JobId>& wanted, const PredictOptions& options) {
  Prediction out;
  std::set<JobId> pending;
  for (const Job& j : input.pending) pending.insert(j.id);
  std::set<JobId> want;
  for (JobId id : wanted)
    if (pending.count(id)) want.insert(id);
  std::unordered_map<JobId, TimeNs> starts;
  if (!want.empty()) {
    Forward f(config, options);
    f.copy(input);
    f.plan_arrivals(input);
    f.run(input.now, std::move(want), out, starts);
  }
  out.starts.reserve(wanted.size());
  for (JobId id : wanted) {
    PredictedStart ps{id, -1, PredictOutcome::kNotPending};
    if (const auto it = starts.find(id); it != starts.end()) {
      ps.start_ns = it->second;
      ps.outcome = PredictOutcome::kStarts;
    } else if (pending.count(id)) {
      ps.outcome = out.bounded ? PredictOutcome::kBeyondBound : PredictOutcome::kNever;
    }
    out.starts.push_back(ps);
  }
  return out;
}

Prediction predict_starts(const std::shared_ptr<const Config>& config, const Scheduler& sched,
                          TimeNs now, const std::vector<JobId>& wanted,
                          const PredictOptions& options) {
  return predict_starts(config, predict_input(sched, now), wanted, options);
}

}  // namespace sluice
