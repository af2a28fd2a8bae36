#include "sim/predict.h"

#include <algorithm>
#include <set>
#include <unordered_map>

namespace sluice::sim {

namespace {

// The forward replay: a copy of the state, its end events (time, job id), and the starts seen.
class Forward {
 public:
  Forward(const std::shared_ptr<const Config>& config, const PredictOptions& options)
      : config_(*config), options_(options), sched_(config) {
    sched_.set_summarize_pending(true);
  }

  // 1. The copy: running jobs where they run (ending at start + walltime, or at once when they
  //    overran it), then pending jobs in id order (submit() keeps their submit times).
  void copy(const Scheduler& from, TimeNs now) {
    for (const auto& [id, r] : from.running()) {
      std::string why;
      if (!sched_.restore_running(r.job, r.admission, r.start_ns, r.checkpoint_ns,
                                  from.preemption_count(id), &why))
        continue;  // cannot happen for a consistent state; the job is then left out
      const TimeNs end = std::max(now, r.start_ns + walltime(r.job));
      ends_.insert({end, id});
      end_of_[id] = end;
    }
    std::vector<const Job*> pending;
    from.for_each_pending([&](const Scheduler::PendingJob& p) { pending.push_back(&p.job); });
    std::sort(pending.begin(), pending.end(),
              [](const Job* a, const Job* b) { return a->id < b->id; });
    for (const Job* j : pending) sched_.submit(*j);
  }

  // 2. Cycles at `now`, then at each end time, until every wanted job started.
  void run(TimeNs now, std::set<JobId> wanted, std::unordered_map<JobId, TimeNs>& starts) {
    TimeNs t = now;
    for (int64_t c = 0; c < options_.max_cycles && !wanted.empty(); ++c) {
      const CycleResult r = sched_.run_cycle(t);
      sched_.apply(r, t);
      for (const Preemption& p : r.preempted) ends_.erase({end_of_[p.victim], p.victim});
      for (const Admission& a : r.admitted) {
        if (wanted.erase(a.job)) starts.emplace(a.job, t);
        const RunningRecord* rr = sched_.find_running(a.job);
        if (!rr) continue;
        const TimeNs end = t + walltime(rr->job);
        ends_.insert({end, a.job});
        end_of_[a.job] = end;
      }
      if (ends_.empty() || sched_.pending_count() == 0) return;
      // Every job that ends at the next end time ends, then the next cycle.
      t = ends_.begin()->first;
      while (!ends_.empty() && ends_.begin()->first == t) {
        sched_.finish(ends_.begin()->second, t);
        ends_.erase(ends_.begin());
      }
    }
  }

 private:
  TimeNs walltime(const Job& job) const {
    if (job.walltime_ns > 0) return job.walltime_ns;
    const auto lq = config_.find_local_queue(job.namespace_, job.queue);
    const TimeNs d =
        lq ? config_.cluster_queues[config_.local_queues[*lq].cluster_queue].default_walltime_ns
           : 0;
    return d > 0 ? d : options_.unknown_walltime_ns;
  }

  const Config& config_;
  const PredictOptions& options_;
  Scheduler sched_;
  std::set<std::pair<TimeNs, JobId>> ends_;
  std::unordered_map<JobId, TimeNs> end_of_;  // running jobs' end (lookups only)
};

}  // namespace

std::vector<PredictedStart> predict_starts(const std::shared_ptr<const Config>& config,
                                           const Scheduler& sched, TimeNs now,
                                           const std::vector<JobId>& wanted,
                                           const PredictOptions& options) {
  std::vector<PredictedStart> out;
  std::set<JobId> want;
  for (JobId id : wanted)
    if (sched.find_pending(id)) want.insert(id);
  std::unordered_map<JobId, TimeNs> starts;
  if (!want.empty()) {
    Forward f(config, options);
    f.copy(sched, now);
    f.run(now, std::move(want), starts);
  }
  for (JobId id : wanted) {
    const auto it = starts.find(id);
    out.push_back({id, it == starts.end() ? -1 : it->second});
  }
  return out;
}

}  // namespace sluice::sim
