#include "sim/simulator.h"

#include <algorithm>
#include <map>
#include <optional>
#include <unordered_map>

#include "core/cycle/predict.h"
#include "core/cycle/scheduler.h"
#include "core/model/deadline.h"
#include "core/scale/autoscaler.h"
#include "sim/event_queue.h"
#include "sim/right_size.h"

namespace sluice::sim {

namespace {

// FNV-1a over 64-bit words, folded into the running digest.
class Digest {
 public:
  explicit Digest(uint64_t h) : h_(h) {}
  void add(uint64_t v) {
    for (int i = 0; i < 8; ++i, v >>= 8) h_ = (h_ ^ (v & 0xff)) * 0x100000001b3ULL;
  }
  uint64_t value() const { return h_; }

 private:
  uint64_t h_;
};

uint64_t fold_decisions(uint64_t digest, const CycleResult& r) {
  Digest d(digest == 0 ? 0xcbf29ce484222325ULL : digest);
  const auto u = [](auto v) { return static_cast<uint64_t>(v); };
  d.add(u(r.now));
  d.add(r.admitted.size());
  for (const Admission& a : r.admitted) {
    d.add(a.job);
    d.add(u(a.queue));
    for (FlavorId f : a.flavors) d.add(u(f));
    for (const auto& per : a.pod_set_flavors)
      for (FlavorId f : per) d.add(u(f));
    for (int32_t c : a.pod_set_counts) d.add(u(c));
    d.add(u(a.shape) ^ (u(a.best_effort) << 32) ^ (u(a.borrowing) << 33));
    for (const PodPlacement& pod : a.placement.pods) {
      d.add(u(pod.node) ^ (u(pod.pod_set) << 32));
      for (const GpuShare& g : pod.gpus)
        d.add(u(g.gpu) ^ (u(g.mig_slice) << 16) ^ (u(g.milli) << 32));
    }
  }
  d.add(r.preempted.size());
  for (const Preemption& p : r.preempted) {
    d.add(p.victim);
    d.add(p.preemptor ^ (u(p.reason) << 56));
  }
  d.add(r.rejected.size());
  for (const Rejection& rj : r.rejected) d.add(rj.job);
  d.add(r.pending.size());
  for (const PendingDecision& pd : r.pending) d.add(pd.job ^ (u(pd.reason.code) << 56));
  d.add(r.reservation.job);
  d.add(u(r.reservation.start_ns));
  for (const Reservation& later : r.later_reservations) {  // backfillDepth > 1 only
    d.add(later.job);
    d.add(u(later.start_ns));
  }
  return d.value();
}

class Run {
 public:
  Run(std::shared_ptr<const Config> config, const std::vector<TraceJob>& jobs,
      const SimOptions& options, std::vector<NodeId> pool_first)
      : config_(std::move(config)),
        jobs_(jobs),
        options_(options),
        sched_(config_),
        fleet_(*config_, std::move(pool_first), options.seed) {
    sched_.set_summarize_pending(true);  // pending reasons are not reported
    if (options.right_size) {
      sizer_.emplace(*config_, jobs, options.right_size_headroom, options.seed);
      res_.right_size_on = true;
    }
  }

  SimResult go() {
    // 1. Outcomes and the arrival events, in trace order (the sequence number breaks ties of
    //    equal submit times in that order).
    add_arrivals();
    if (options_.record_series) index_classes();
    add_failures();
    for (uint8_t c : ckpt_) res_.checkpointing_jobs += c;
    if (!jobs_.empty()) {
      res_.first_ns = jobs_.front().job.submit_ns;
      for (const auto& tj : jobs_) res_.first_ns = std::min(res_.first_ns, tj.job.submit_ns);
    }
    if (fleet_.active()) fleet_.start(res_.first_ns, sched_, events_);
    // 2. The loop. Bounded: every iteration pops at least one event; arrivals and failures are
    //    finite, each start schedules one completion, and a job starts again only after a
    //    failure requeued it.
    for (QueueId q = 0; q < static_cast<QueueId>(config_->cluster_queues.size()); ++q) {
      int64_t n = 0;
      for (FlavorId f = 0; f < sched_.quota().num_flavors(); ++f)
        n += sched_.quota().nominal(q, f, kGpu);
      nominal_gpu_.push_back(n);
    }
    while (!events_.empty()) batch();
    if (fleet_.active()) res_.pools = fleet_.finish(last_event_ns_);
    return std::move(res_);
  }

 private:
  // Step 1 of go(): every trace job's outcome and checkpointing, and its arrival event.
  void add_arrivals() {
    res_.capacity_gpu_milli = config_->cluster.total_gpus() * kMilliPerGpu;
    res_.jobs.resize(jobs_.size());
    ckpt_.assign(jobs_.size(), 0);
    kept_.assign(jobs_.size(), 0);
    ckpt_at_.assign(jobs_.size(), 0);
    res_.checkpoint_every_ns = options_.checkpoint_every_ns;
    down_count_.assign(config_->cluster.nodes.size(), 0);
    index_.reserve(jobs_.size());
    std::vector<Event> arrivals;
    arrivals.reserve(jobs_.size());
    for (size_t i = 0; i < jobs_.size(); ++i) {
      const Job& j = jobs_[i].job;
      JobOutcome& o = res_.jobs[i];
      o.id = j.id;
      o.priority_class = j.exec().priority_class;
      o.priority = j.priority;
      o.gpu_milli = j.total_requests()[kGpu];
      o.submit_ns = j.submit_ns;
      o.complete_by_ns = jobs_[i].complete_by_ns;
      o.utility = jobs_[i].utility;
      index_.emplace(j.id, i);
      if (options_.checkpoint_every_ns > 0 && checkpoints(o.priority_class)) ckpt_[i] = 1;
      arrivals.push_back({j.submit_ns, 0, EventKind::kArrival, i, 0});
    }
    events_.push_all(std::move(arrivals));
  }
  // Step 1 of go() with a series: the series' classes (the priority classes, "none" for jobs
  // without one, sorted) and each trace job's index among them.
  void index_classes() {
    std::map<std::string, int32_t> names;
    for (const auto& tj : jobs_)
      names.emplace(tj.job.exec().priority_class.empty() ? "none" : tj.job.exec().priority_class,
                    0);
    for (auto& [name, idx] : names) {
      idx = static_cast<int32_t>(res_.series.classes.size());
      res_.series.classes.push_back(name);
    }
    class_of_.resize(jobs_.size());
    for (size_t i = 0; i < jobs_.size(); ++i) {
      const std::string& c = jobs_[i].job.exec().priority_class;
      class_of_[i] = names.at(c.empty() ? "none" : c);
    }
    pending_by_class_.assign(names.size(), 0);
  }
  // Step 1 of go(): the node failures' down and repair events.
  void add_failures() {
    for (const auto& f : options_.failures) {
      events_.push(f.down_ns, EventKind::kNodeDown, static_cast<uint64_t>(f.node));
      if (f.up_ns > f.down_ns)
        events_.push(f.up_ns, EventKind::kNodeUp, static_cast<uint64_t>(f.node));
    }
  }
  // Step 2 of go(), one iteration: the events of the next time, then a cycle when one is due
  // (or the next one scheduled), the autoscaler, the fairness measure and the series.
  void batch() {
    const TimeNs now = events_.top().time_ns;
    account_fairness(now);
    bool cycle_due = options_.cycle_interval_ns == 0;
    fleet_event_ = false;
    while (!events_.empty() && events_.top().time_ns == now) {
      const Event e = events_.pop();
      ++res_.events;
      cycle_due |= handle(e, now);
    }
    last_event_ns_ = now;
    if (sched_.pending_count() == 0) {
      scale(now, false);
      measure_fairness(now);
      record(now);
      return;
    }
    if (cycle_due) {
      cycle(now);
      predict(now);
      scale(now, true);
    } else if (!cycle_scheduled_) {
      // Interval mode: the next cycle at the next multiple of the interval after the last one.
      const TimeNs at = cycled_ ? std::max(now, last_cycle_ns_ + options_.cycle_interval_ns) : now;
      events_.push(at, EventKind::kCycle);
      cycle_scheduled_ = true;
    }
    if (!cycle_due) scale(now, false);
    measure_fairness(now);
    record(now);
  }

  // The node pools after a batch: the autoscaler decides when a cycle ran or a pool event came.
  void scale(TimeNs now, bool cycled) {
    if (!fleet_.active()) return;
    report_checkpoints(now);
    fleet_.step(now, sched_, events_, cycled || fleet_event_,
                [&](JobId id) { requeue_running(id, now); });
  }

  // Running jobs with a pod on `node` go back to pending (they restart from scratch): a node
  // failure (counted as requeued) or a spot reclaim (counted apart: not a failure).
  void evict_node(NodeId node, TimeNs now, bool failure) {
    std::vector<JobId> hit;
    for (const auto& [id, r] : sched_.running())
      for (const auto& p : r.admission.placement.pods)
        if (p.node == node) {
          hit.push_back(id);
          break;
        }
    for (JobId id : hit) {
      requeue_running(id, now);
      ++(failure ? res_.requeued : res_.spot_requeued);
    }
  }
  // A running job goes back to pending (a node failure, a reclaim, a consolidation's move):
  // its run so far counts as run time, and it restarts from its last checkpoint (from scratch
  // without one).
  void requeue_running(JobId id, TimeNs now) {
    sched_.requeue(id, now);
    const size_t i = index_.at(id);
    const TimeNs ran = now - started_at_[id];
    res_.jobs[i].run_ns += ran;
    sched_.shorten_pending(id, interrupted(i, ran));
    started_at_.erase(id);
    stopped(i);
    pending_delta(i, 1);
  }

  // Whether jobs of priority class `c` checkpoint (SimOptions::checkpoint_classes).
  bool checkpoints(const std::string& c) const {
    const auto& cs = options_.checkpoint_classes;
    return cs.empty() || std::find(cs.begin(), cs.end(), c.empty() ? "none" : c) != cs.end();
  }
  // The work a run of `ran` keeps: up to its last checkpoint, within what it had left to do.
  TimeNs saved(size_t i, TimeNs ran) const {
    if (!ckpt_[i]) return 0;
    const TimeNs every = options_.checkpoint_every_ns;
    return std::min(ran / every * every, std::max<TimeNs>(0, jobs_[i].duration_ns - kept_[i]));
  }
  // Trace job `i`'s run of `ran` was interrupted: what it kept is added to its progress and
  // the counters; returns it.
  TimeNs interrupted(size_t i, TimeNs ran) {
    const TimeNs keep = saved(i, ran);
    kept_[i] += keep;
    JobOutcome& o = res_.jobs[i];
    o.kept_run_ns += keep;
    ++res_.interrupted_runs;
    res_.resumed_runs += keep > 0 ? 1 : 0;
    res_.kept_gpu_milli_ns += static_cast<double>(o.gpu_milli) * static_cast<double>(keep);
    res_.lost_gpu_milli_ns += static_cast<double>(o.gpu_milli) * static_cast<double>(ran - keep);
    return keep;
  }
  // Tells the scheduler of the running jobs' checkpoints up to `now` (what its preemption cost
  // and the consolidation's moves read): each checkpointing run's last multiple of the interval.
  void report_checkpoints(TimeNs now) {
    if (options_.checkpoint_every_ns <= 0) return;
    const TimeNs every = options_.checkpoint_every_ns;
    for (const auto& [id, start] : started_at_) {
      const size_t i = index_.at(id);
      if (!ckpt_[i] || now - start < every) continue;
      const TimeNs at = start + (now - start) / every * every;
      if (at == ckpt_at_[i]) continue;
      ckpt_at_[i] = at;
      sched_.report_checkpoint(id, at);
    }
  }

  // Credits the fairness index measured at the previous batch for the time since.
  void account_fairness(TimeNs now) {
    if (fair_since_ns_ >= 0 && fair_index_ >= 0) {
      const double dt = static_cast<double>(now - fair_since_ns_) / 1e9;
      res_.jain_contended_weighted_s += fair_index_ * dt;
      res_.contended_s += dt;
    }
  }
  // Jain's index (sum x)^2 / (n sum x^2) of usage / nominal over queues with pending jobs and a
  // nominal GPU quota; -1 when fewer than two such queues.
  void measure_fairness(TimeNs now) {
    double sx = 0, sxx = 0;
    int n = 0;
    for (QueueId q = 0; q < static_cast<QueueId>(nominal_gpu_.size()); ++q) {
      if (nominal_gpu_[q] <= 0 || sched_.pending_in_queue_count(q) == 0) continue;
      int64_t used = 0;
      for (FlavorId f = 0; f < sched_.quota().num_flavors(); ++f)
        used += sched_.quota().usage(q, f, kGpu);
      const double x = static_cast<double>(used) / static_cast<double>(nominal_gpu_[q]);
      sx += x;
      sxx += x * x;
      ++n;
    }
    fair_since_ns_ = now;
    fair_index_ = n < 2 ? -1 : sxx > 0 ? sx * sx / (n * sxx) : 1;
  }

  // Appends a point to the series when a value changed since the last one.
  void record(TimeNs now) {
    if (!options_.record_series) return;
    Series& s = res_.series;
    const size_t k = pending_by_class_.size();
    if (!s.t_ns.empty() && s.used_gpu_milli.back() == used_gpu_milli_ &&
        std::equal(pending_by_class_.begin(), pending_by_class_.end(), s.pending.end() - k))
      return;
    if (!s.t_ns.empty() && s.t_ns.back() == now) {  // same time: overwrite
      s.used_gpu_milli.back() = used_gpu_milli_;
      std::copy(pending_by_class_.begin(), pending_by_class_.end(), s.pending.end() - k);
      return;
    }
    s.t_ns.push_back(now);
    s.used_gpu_milli.push_back(used_gpu_milli_);
    s.pending.insert(s.pending.end(), pending_by_class_.begin(), pending_by_class_.end());
  }
  void pending_delta(size_t i, int32_t d) {
    if (options_.record_series) pending_by_class_[class_of_[i]] += d;
  }
  // A running job stops (completion, preemption, node failure): its GPUs are free again.
  void stopped(size_t i) { used_gpu_milli_ -= res_.jobs[i].gpu_milli; }

  // Applies one event; true when it asks for a cycle now.
  bool handle(const Event& e, TimeNs now) {
    switch (e.kind) {
      case EventKind::kArrival: {
        const TraceJob& tj = jobs_[e.a];
        JobOutcome& o = res_.jobs[e.a];
        Job job = trace_job(tj);
        if (sizer_) job = right_size(e.a, std::move(job));
        const SubmitResult s = sched_.submit(std::move(job));
        o.queue = s.queue;
        if (s.status != SubmitStatus::kAccepted) {
          o.rejected = true;
          o.reject_reason = s.message;
        } else {
          pending_delta(e.a, 1);
          if (options_.predict_arrival_window_ns > 0) arrived_.push_back(e.a);
          if (options_.predict_every > 0 &&
              e.a % static_cast<uint64_t>(options_.predict_every) == 0)
            to_predict_.push_back(e.a);
        }
        return false;
      }
      case EventKind::kCompletion: {
        const size_t i = index_.at(e.a);
        JobOutcome& o = res_.jobs[i];
        // Stale when the job was requeued or preempted after this completion was scheduled.
        if (static_cast<uint64_t>(o.starts) != e.b || !started_at_.count(e.a)) return false;
        if (!sched_.finish(e.a, now)) return false;
        if (sizer_ && sizer_->runs_out(i)) {
          retry_whole(i, now);
          return false;
        }
        if (sizer_) sizer_->completed(i);
        o.end_ns = now;
        o.run_ns += now - started_at_[e.a];
        started_at_.erase(e.a);
        stopped(i);
        res_.last_ns = std::max(res_.last_ns, now);
        return false;
      }
      case EventKind::kNodeDown: {
        const NodeId node = static_cast<NodeId>(e.a);
        if (node < 0 || node >= static_cast<NodeId>(config_->cluster.nodes.size())) return false;
        // Overlapping failures of one node: it is back only when the last one is repaired.
        if (down_count_[node]++ > 0) return false;
        sched_.set_node_ready(node, false);
        evict_node(node, now, true);
        return false;
      }
      case EventKind::kNodeUp: {
        const NodeId node = static_cast<NodeId>(e.a);
        if (node < 0 || node >= static_cast<NodeId>(config_->cluster.nodes.size())) return false;
        if (down_count_[node] == 0 || --down_count_[node] > 0) return false;
        sched_.set_node_ready(node, true);
        return false;
      }
      case EventKind::kCycle:
        cycle_scheduled_ = false;
        return true;
      case EventKind::kNodeJoin:
      case EventKind::kSpotNotice:
      case EventKind::kSpotReclaim:
      case EventKind::kScaleCheck:
        fleet_event_ = true;
        return fleet_.handle(e, now, sched_, events_, [&](NodeId n) { evict_node(n, now, false); });
    }
    return false;
  }

  // Preemptions and interactive rejections, when the core's CycleResult has them (the fields
  // land with the preemption work; the `requires` keeps this file compiling before and after).
  // apply() has already sent victims back to pending and dropped rejected jobs.
  template <class R>
  void apply_evictions(const R& r, TimeNs now) {
    if constexpr (requires { r.preempted; }) {
      for (const auto& pr : r.preempted) {
        const auto it = started_at_.find(pr.victim);
        if (it == started_at_.end()) continue;
        const size_t i = index_.at(pr.victim);
        JobOutcome& o = res_.jobs[i];
        const TimeNs ran = now - it->second;
        const TimeNs keep = interrupted(i, ran);
        o.run_ns += ran;
        o.preempted_run_ns += ran - keep;
        sched_.shorten_pending(pr.victim, keep);
        ++o.preemptions;
        stopped(i);
        pending_delta(i, 1);
        ++res_.preemptions;
        started_at_.erase(it);
      }
    }
    if constexpr (requires { r.rejected; }) {
      for (const auto& rj : r.rejected) {
        const size_t i = index_.at(rj.job);
        JobOutcome& o = res_.jobs[i];
        pending_delta(i, -1);
        o.rejected = true;
        o.reject_reason = "interactive timeout: " + describe(rj.reason, *config_);
      }
    }
  }

  // Predicts the start of the sampled jobs that arrived in this batch and are still pending (in
  // interval mode, those that arrived since the last cycle).
  void predict(TimeNs now) {
    std::vector<JobId> want;
    for (size_t i : to_predict_)
      if (sched_.find_pending(jobs_[i].job.id)) want.push_back(jobs_[i].job.id);
    to_predict_.clear();
    if (want.empty()) return;
    PredictInput in = predict_input(sched_, now);
    PredictOptions po;
    po.arrival_window_ns = options_.predict_arrival_window_ns;
    po.arrival_horizon_ns = options_.predict_arrival_horizon_ns;
    if (po.arrival_window_ns > 0) {
      // The accepted arrivals of (now - window, now], oldest first.
      size_t from = arrived_.size();
      while (from > 0 && jobs_[arrived_[from - 1]].job.submit_ns > now - po.arrival_window_ns)
        --from;
      for (size_t k = from; k < arrived_.size(); ++k) in.recent.push_back(jobs_[arrived_[k]].job);
    }
    for (const PredictedStart& ps : predict_starts(config_, in, want, po).starts) {
      JobOutcome& o = res_.jobs[index_.at(ps.job)];
      o.predicted = true;
      o.predicted_start_ns = ps.start_ns;
    }
  }

  // The trace's deadline goes into the job (the scheduler's deadline term acts on it), unless
  // the scheduler would refuse it (the report still counts it).
  static Job trace_job(const TraceJob& tj) {
    Job job = tj.job;
    if (tj.complete_by_ns > 0) {
      job.complete_by_ns = tj.complete_by_ns;
      if (!deadline_error(job).empty()) job.complete_by_ns = 0;
    }
    return job;
  }
  // Trace job `i` as right-sizing submits it; its GPUs counted as its slice's share.
  Job right_size(size_t i, Job job) {
    QueueId q = sched_.resolve(job).queue;
    job = sizer_->submit(i, job, q);
    if (!sizer_->right_sized(i)) return job;
    ++res_.right_sized;
    if (sizer_->slice_milli(i) >= 0)
      res_.jobs[i].gpu_milli = sizer_->slice_milli(i) * job.pod_count();
    return job;
  }
  // A right-sized run of trace job `i` ran out of memory (its run has been finished): it is
  // submitted again as requested; its wait counts to the start of that run.
  void retry_whole(size_t i, TimeNs now) {
    JobOutcome& o = res_.jobs[i];
    const JobId id = jobs_[i].job.id;
    o.run_ns += now - started_at_[id];
    started_at_.erase(id);
    stopped(i);
    ++res_.right_size_retries;
    kept_[i] = 0;  // submitted again whole (its walltime too)
    sizer_->retried(i);
    o.gpu_milli = jobs_[i].job.total_requests()[kGpu];
    o.first_start_ns = -1;
    if (sched_.submit(trace_job(jobs_[i])).status == SubmitStatus::kAccepted) {
      pending_delta(i, 1);
    } else {
      o.rejected = true;
      o.reject_reason = "could not be submitted again after running out of GPU memory";
    }
  }

  void cycle(TimeNs now) {
    report_checkpoints(now);
    const CycleResult r = sched_.run_cycle(now);
    res_.decision_digest = fold_decisions(res_.decision_digest, r);
    sched_.apply(r, now);
    apply_evictions(r, now);
    last_cycle_ns_ = now;
    cycled_ = true;
    ++res_.cycles;
    res_.incremental_cycles += r.incremental ? 1 : 0;
    res_.evaluated += r.evaluated;
    for (const Admission& a : r.admitted) {
      const size_t i = index_.at(a.job);
      JobOutcome& o = res_.jobs[i];
      if (o.first_start_ns < 0) o.first_start_ns = now;
      ++o.starts;
      if (fleet_.active()) fleet_.started(a.job, now);
      started_at_[a.job] = now;
      used_gpu_milli_ += o.gpu_milli;
      pending_delta(i, -1);
      // Right-sized above its peak: out of memory a minute in (sim/right_size.h). After a
      // checkpointed interruption only the rest of its work is left.
      const TimeNs left = jobs_[i].duration_ns - kept_[i];
      const TimeNs run = sizer_ && sizer_->runs_out(i) ? std::min(left, kOutOfMemoryAfterNs) : left;
      ckpt_at_[i] = now;
      events_.push(now + run, EventKind::kCompletion, a.job, static_cast<uint64_t>(o.starts));
    }
    if (options_.check_invariants && res_.invariant_failure.empty()) {
      std::string why;
      if (!sched_.check_invariants(&why))
        res_.invariant_failure = "at " + std::to_string(now) + " ns: " + why;
    }
  }

  std::shared_ptr<const Config> config_;
  const std::vector<TraceJob>& jobs_;
  const SimOptions& options_;
  Scheduler sched_;
  EventQueue events_;
  SimResult res_;
  std::unordered_map<JobId, size_t> index_;       // job id -> trace index (lookups only)
  std::unordered_map<JobId, TimeNs> started_at_;  // running jobs' current start (lookups only)
  TimeNs last_cycle_ns_ = 0;
  std::vector<int64_t> nominal_gpu_;  // per ClusterQueue, milli-GPU
  std::vector<int32_t> down_count_;   // per node: failures not yet repaired
  TimeNs fair_since_ns_ = -1;
  double fair_index_ = -1;
  int64_t used_gpu_milli_ = 0;             // running jobs' GPUs
  std::vector<int32_t> class_of_;          // trace index -> Series::classes index
  std::vector<int32_t> pending_by_class_;  // per Series::classes
  std::vector<size_t> to_predict_;         // trace indices of sampled arrivals not yet predicted
  std::vector<size_t> arrived_;  // accepted arrivals, in order (with expected arrivals only)
  bool cycled_ = false;
  bool cycle_scheduled_ = false;
  static constexpr TimeNs kOutOfMemoryAfterNs = 60 * kNsPerSec;
  // Checkpoints, per trace index: whether the job checkpoints, the work its interrupted runs
  // kept, and the last checkpoint reported to the scheduler (its run's start when none).
  std::vector<uint8_t> ckpt_;
  std::vector<TimeNs> kept_;
  std::vector<TimeNs> ckpt_at_;
  std::optional<RightSizer> sizer_;  // SimOptions::right_size
  Fleet fleet_;                      // the node pools (inactive without)
  bool fleet_event_ = false;         // a pool event came in this batch
  TimeNs last_event_ns_ = 0;
};

}  // namespace

SimResult simulate(std::shared_ptr<const Config> config, const std::vector<TraceJob>& jobs,
                   const SimOptions& options) {
  // Node pools: their slots become nodes of the cluster, not ready until the autoscaler asks
  // for them. Without pools the configuration is used as it is.
  std::vector<NodeId> first;
  if (!config->node_pools.empty()) {
    auto expanded = std::make_shared<Config>(*config);
    first = scale::add_pool_nodes(expanded->node_pools, expanded->cluster);
    config = std::move(expanded);
  }
  Run run(std::move(config), jobs, options, std::move(first));
  return run.go();
}

}  // namespace sluice::sim
