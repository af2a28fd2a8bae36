#include "server/state.h"

#include <algorithm>
#include <cctype>
#include <chrono>

#include "core/model/deadline.h"
#include "server/job_codec.h"
#include "server/run_as.h"

namespace sluice::server {

using nlohmann::json;

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string exit_text(const proto::PodExit& e) {
  const std::string pod = "pod " + std::to_string(e.pod);
  if (e.reason == "exited") return pod + " exited with code " + std::to_string(e.exit_code);
  if (e.reason == "signaled") return pod + " was killed by signal " + std::to_string(e.signal);
  if (e.reason == "walltime") return pod + " " + kPastWalltime;
  if (e.reason == "start-failed") return pod + " could not start: " + e.message;
  if (e.reason == "lost") return pod + " disappeared (agent restarted; exit status unknown)";
  return pod + " ended (" + e.reason + (e.message.empty() ? "" : ": " + e.message) + ")";
}

namespace {

const char* preempt_reason_name(PreemptReason r) {
  switch (r) {
    case PreemptReason::kWithinClusterQueue:
      return "within-cluster-queue";
    case PreemptReason::kReclaimWithinCohort:
      return "reclaim-within-cohort";
  }
  return "other";
}

}  // namespace

const char* state_name(JobState s) {
  switch (s) {
    case JobState::kPending:
      return "pending";
    case JobState::kRunning:
      return "running";
    case JobState::kSucceeded:
      return "succeeded";
    case JobState::kFailed:
      return "failed";
    case JobState::kCancelled:
      return "cancelled";
    case JobState::kRejected:
      return "rejected";
  }
  return "?";
}

std::optional<JobState> parse_state(const std::string& s) {
  for (auto st : {JobState::kPending, JobState::kRunning, JobState::kSucceeded, JobState::kFailed,
                  JobState::kCancelled, JobState::kRejected})
    if (s == state_name(st)) return st;
  return std::nullopt;
}

std::optional<JobState> parse_state_filter(const std::string& text) {
  if (auto st = parse_state(text)) return st;
  // Slurm's codes and names (squeue -t PD,R; sacct -s CD), in any case.
  static const std::pair<const char*, JobState> kSlurm[] = {
      {"pd", JobState::kPending},       {"pending", JobState::kPending},
      {"r", JobState::kRunning},        {"running", JobState::kRunning},
      {"cd", JobState::kSucceeded},     {"completed", JobState::kSucceeded},
      {"f", JobState::kFailed},         {"failed", JobState::kFailed},
      {"to", JobState::kFailed},        {"timeout", JobState::kFailed},
      {"ca", JobState::kCancelled},     {"cancelled", JobState::kCancelled},
      {"rejected", JobState::kRejected}};
  const std::string l = lower(text);
  for (const auto& [name, st] : kSlurm)
    if (l == name) return st;
  return std::nullopt;
}

const char* workload_class(const Job& job, const Config&) {
  if (job.interactive) return "interactive";
  return job.preemptible ? "best-effort" : "batch";
}

ServerState::ServerState(std::shared_ptr<const Config> config, Store* store, ServerOptions options)
    : journal_(static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                         std::chrono::system_clock::now().time_since_epoch())
                                         .count())),
      config_(std::move(config)),
      store_(store),
      options_(options),
      backpressure_(BackpressureLimits{options.namespace_max_pending, options.namespace_submit_rate,
                                       options.namespace_submit_burst}),
      history_(options.history_max_jobs) {
  sched_ = std::make_unique<Scheduler>(config_);
  sched_->set_summarize_pending(true);  // pending_decision() reads summaries
  rebuild_nodes({});
  if (store_) {
    if (auto creds = store_->get_meta("node-credentials")) node_creds_.load(*creds);
    const std::string prefix = NodeCredentials::kMetaPrefix;
    for (const auto& [key, sha] : store_->meta_with_prefix(prefix))
      node_creds_.load_entry(key.substr(prefix.size()), sha);
  }
  load_node_holds();
  pools_.configure(config_->node_pools);
}

void ServerState::rebuild_nodes(const std::map<std::string, NodeState>& old) {
  nodes_.clear();
  node_at_.clear();
  for (size_t i = 0; i < config_->cluster.nodes.size(); ++i) {
    NodeState n;
    n.id = static_cast<NodeId>(i);
    n.name = config_->cluster.nodes[i].name;
    if (auto it = old.find(n.name); it != old.end()) {
      const NodeId id = n.id;
      n = it->second;
      n.id = id;
    }
    // A node takes work only while its agent is registered and syncing, and not held.
    sched_->set_node_ready(n.id, schedulable(n));
    node_at_[n.name] = nodes_.size();
    nodes_.push_back(std::move(n));
  }
}

// Every sync looks its node up: a hash lookup, not a scan (10,000 nodes, docs/benchmarks.md).
ServerState::NodeState* ServerState::node_by_name(const std::string& name) {
  auto it = node_at_.find(name);
  return it == node_at_.end() ? nullptr : &nodes_[it->second];
}
const ServerState::NodeState* ServerState::node_by_name(const std::string& name) const {
  auto it = node_at_.find(name);
  return it == node_at_.end() ? nullptr : &nodes_[it->second];
}

// ---------------------------------------------------------------------------------------------
// Recovery and reconfiguration

Job aged_job(const JobRecord& r) {
  Job job = r.job;
  job.submit_ns = std::max(job.submit_ns, r.aged_from_ns);
  return job;
}

std::unique_ptr<Scheduler> ServerState::build_scheduler(
    std::shared_ptr<const Config> config,
    const std::function<bool(JobRecord&, const std::string&)>& refuse) {
  auto s = std::make_unique<Scheduler>(config);
  s->set_summarize_pending(true);
  // Running jobs first (they hold their GPUs), by id; then pending ones in submit order.
  for (auto& [id, r] : records_) {
    if (r.state != JobState::kRunning) continue;
    if (!r.admission) {
      if (!refuse(r, "no admission stored")) return nullptr;
      continue;
    }
    // Re-encoded by name: the new configuration may number queues, flavors and nodes anew.
    auto a = decode_admission(json::parse(encode_admission(*r.admission, *config_)), *config);
    std::string why;
    if (!a) {
      why = a.error();
    } else {
      a->job = id;
      s->restore_running(scheduled_job(r, *config), *a, r.admit_ns, r.admit_ns, r.preemptions,
                         &why);
    }
    if (!why.empty() && !refuse(r, why)) return nullptr;
  }
  std::vector<JobRecord*> pending;
  for (auto& [id, r] : records_)
    if (r.state == JobState::kPending && !r.gated) pending.push_back(&r);
  auto aged = [](const JobRecord* r) { return std::max(r->job.submit_ns, r->aged_from_ns); };
  std::sort(pending.begin(), pending.end(), [&](const JobRecord* a, const JobRecord* b) {
    return std::pair(aged(a), a->job.id) < std::pair(aged(b), b->job.id);
  });
  for (JobRecord* r : pending) {
    auto res = s->submit(scheduled_job(*r, *config));
    if (res.status != SubmitStatus::kAccepted && !refuse(*r, res.message)) return nullptr;
  }
  return s;
}

std::vector<std::string> ServerState::recover(const std::vector<StoredJob>& stored, TimeNs now) {
  std::vector<std::string> problems;
  for (const auto& sj : stored) {
    // A row left out below stays in the store: no new job may take its id and overwrite it,
    // also where the id counters in the store's meta are lost.
    next_id_ = std::max<JobId>(next_id_, sj.id + 1);
    std::string why;
    json j = json::parse(sj.record, nullptr, false);
    if (j.is_discarded()) {
      problems.push_back("job " + std::to_string(sj.id) + ": unreadable record");
      continue;
    }
    auto r = decode_record(j, &why);
    if (!r) {
      problems.push_back(why);
      continue;
    }
    next_id_ = std::max(next_id_, r->job.id + 1);
    if (r->job.exec().array_task >= 0) arrays_[r->job.exec().array_job].push_back(r->job.id);
    if (r->gated && r->state == JobState::kPending) gated_.insert(r->job.id);
    history_recovered(*r);
    add_record(std::move(*r));
  }
  // Ids of dropped finished jobs (trim_finished), and those counted by submissions (next_id),
  // are not given out again.
  if (store_)
    for (const char* key : {"next_job_id", "next_id"})
      if (auto next = store_->get_meta(key))
        next_id_ = std::max<JobId>(next_id_, std::strtoull(next->c_str(), nullptr, 10));
  // Admit what was running at the crash where it ran; what cannot be carried over fails.
  auto s = build_scheduler(config_, [&](JobRecord& r, const std::string& why) {
    const bool running = r.state == JobState::kRunning;
    const std::string what = running ? "restored" : "requeued";
    problems.push_back("job " + std::to_string(r.job.id) + " could not be " + what + ": " + why);
    set_state(r, JobState::kFailed);
    r.reason = "could not be " + what + " after a restart: " + why;
    r.end_ns = now;
    r.admission.reset();
    touch(r);
    return true;
  });
  sched_ = std::move(s);
  sched_->restore_budgets(stored_budgets(), now);
  rebuild_nodes({});  // every node NotReady until its agent registers
  for (auto& n : nodes_)
    n.last_seen_ns = now;  // agents get one timeout to come back before their jobs are requeued
  // A gated job whose last run may still be stopping (a victim the crash caught in its grace)
  // waits for it again: its node's agent reports it, or the node's lease runs out.
  for (const auto& [id, r] : records_)
    if (r.state == JobState::kPending && r.gated && !previous_run_alive(r, now).empty())
      awaiting_stop_.insert(id);
  std::vector<const JobRecord*> done;
  for (const auto& [id, r] : records_)
    if (r.state != JobState::kPending && r.state != JobState::kRunning) done.push_back(&r);
  for (const JobRecord* r : done) retire(*r);  // flush() below trims
  recount_pending();
  gates_dirty_ = true;
  dirty_ = true;
  flush();
  journal_.set_first_new_job(next_id_);
  for (auto& [id, r] : records_) r.rv = journal_.rv_of(id);
  return problems;
}

Result<bool> ServerState::reconfigure(std::shared_ptr<const Config> config, const std::string& text,
                                      TimeNs now) {
  // Nodes in use must survive.
  for (const auto& [id, r] : records_) {
    if (r.state != JobState::kRunning) continue;
    for (const auto& p : r.pods) {
      bool found = false;
      for (const auto& n : config->cluster.nodes) found |= n.name == p.node;
      if (!found)
        return Error{"node " + p.node + " runs job " + std::to_string(id) +
                     " but is not in the new configuration"};
    }
  }
  std::string problem;
  auto s = build_scheduler(config, [&](JobRecord& r, const std::string& why) {
    problem = "job " + std::to_string(r.job.id) + ": " + why;
    return false;
  });
  if (!s) return Error{"the new configuration cannot carry the current jobs: " + problem};
  std::map<std::string, NodeState> old;
  for (auto& n : nodes_) old.emplace(n.name, std::move(n));
  // Records keep the jobs as resolved; re-encode admissions with the new ids.
  for (auto& [id, r] : records_) {
    r.job_json.clear();  // encoded against the old configuration's names
    if (r.admission) {
      auto a = decode_admission(json::parse(encode_admission(*r.admission, *config_)), *config);
      if (a) {
        r.admission = std::move(*a);
        r.admission->job = id;
      }
    }
  }
  s->restore_budgets(sched_->budget_snapshot(now), now);  // usage carries over by namespace
  {
    std::lock_guard lk(config_ptr_mu_);
    config_ = std::move(config);
  }
  sched_ = std::move(s);
  rebuild_nodes(old);
  pools_.configure(config_->node_pools);
  pending_reasons_.clear();
  dirty_ = true;
  persist_config(text);
  return true;
}

// ---------------------------------------------------------------------------------------------
// Jobs

// The submission's write failed, so it was never acknowledged: it must not run or be listed.
// Its jobs may have been admitted by a cycle meanwhile, but that cycle's write came after the
// failed one and failed too (the store fails every later write), so no agent was told.
void ServerState::withdraw(const std::vector<JobId>& ids, TimeNs now) {
  for (JobId id : ids) {
    if (!records_.count(id)) continue;
    sched_->cancel(id, now);
    staged_.erase(std::remove_if(staged_.begin(), staged_.end(),
                                 [&](const auto& s) { return s.second.job == id; }),
                  staged_.end());
    const JobRecord& r = records_.at(id);
    if (r.state == JobState::kPending) backpressure_.count_pending(r.job.namespace_, -1);
    finished_.erase({r.end_ns, id});
    erase_record(id);
    pending_reasons_.forget(id);
    touched_.erase(id);
  }
  dirty_ = true;
}

const JobRecord* ServerState::find(JobId id) const {
  auto it = records_.find(id);
  return it == records_.end() ? nullptr : &it->second;
}

const std::set<JobId>* ServerState::jobs_named(const std::string& ns,
                                               const std::string& name) const {
  auto it = named_.find({ns, name});
  return it == named_.end() ? nullptr : &it->second;
}

void ServerState::add_record(JobRecord r) {
  const JobId id = r.job.id;
  named_[{r.job.namespace_, r.job.name}].insert(id);
  records_.emplace(id, std::move(r));
}

void ServerState::erase_record(JobId id) {
  auto it = records_.find(id);
  if (it == records_.end()) return;
  auto n = named_.find({it->second.job.namespace_, it->second.job.name});
  if (n != named_.end() && n->second.erase(id) && n->second.empty()) named_.erase(n);
  journal_.erase(id, it->second.job.namespace_, it->second.job.name);
  journal_changed();
  records_.erase(it);
}

std::optional<PendingDecision> ServerState::pending_decision(JobId id) const {
  auto r = records_.find(id);
  const Scheduler::PendingJob* p = r != records_.end() ? sched_->find_pending(id) : nullptr;
  return pending_reasons_.find(id, p, p ? r->second.pending_since_cycle : 0, config_->policy);
}

int ServerState::cancel(JobId id, TimeNs now, std::string* error, uint64_t* ticket) {
  auto it = records_.find(id);
  if (it == records_.end()) {
    *error = "no job " + std::to_string(id);
    return 404;
  }
  JobRecord& r = it->second;
  if (is_terminal(r.state)) {
    *error = "job " + std::to_string(id) + " already " + state_name(r.state);
    return 409;
  }
  if (r.state == JobState::kRunning) stop_pods(r, "cancelled", r.job.checkpoint_grace_ns);
  finish_job(r, JobState::kCancelled, "cancelled by a user", now);
  *ticket = flush();
  return 200;
}

void ServerState::deliver(NodeState& n, proto::Assignment a) {
  if (n.stopping.count({a.job, a.pod}))
    n.held.push_back(std::move(a));  // the previous run of this pod is still stopping here
  else
    n.assign.push_back(std::move(a));
}

void ServerState::stop_pods(JobRecord& r, const std::string& reason, TimeNs grace_ns) {
  for (size_t i = 0; i < r.pods.size(); ++i) {
    auto& p = r.pods[i];
    if (p.exited) continue;
    NodeState* n = node_by_name(p.node);
    if (!n) continue;
    const proto::PodRef key{r.job.id, static_cast<int32_t>(i)};
    auto undelivered = [&](std::vector<proto::Assignment>& v) {
      auto before = v.size();
      std::erase_if(
          v, [&](const proto::Assignment& a) { return a.job == key.job && a.pod == key.pod; });
      return v.size() != before;
    };
    // Not delivered yet: withdraw it instead of stopping it.
    bool withdrawn = undelivered(n->assign) || undelivered(n->held);
    const auto before = staged_.size();
    std::erase_if(staged_, [&](const auto& s) {
      return s.first == n->name && s.second.job == key.job && s.second.pod == key.pod;
    });
    withdrawn |= staged_.size() != before;
    p.stop_ordered = true;
    if (withdrawn) continue;
    n->stop.push_back(
        {key.job, key.pod, options_.stop_signal, grace_ns / 1'000'000, reason, p.run});
    n->stopping[key] = p.run;
    notify_outbox(n->name);
  }
}

void ServerState::end_run(JobRecord& r, TimeNs now, const std::string& why) {
  if (r.admit_ns > 0 && now > r.admit_ns) {
    const double secs = static_cast<double>(job_gpu_milli(r.job, *config_)) / 1000.0 *
                        static_cast<double>(now - r.admit_ns) / 1e9;
    gpu_seconds_[r.job.namespace_] += secs;
    if (r.gpu_use.samples > 0) {
      auto& [measured, used] = gpu_use_seconds_[r.job.namespace_];
      measured += secs;
      used += secs * r.gpu_use.mean_util_pct() / 100.0;
    }
  }
  r.admission.reset();
  // A run that ends with the job still to run again (preempted, requeued) is kept; the last
  // one stays in the record's own fields (runs_view), so a finished job keeps nothing more.
  if (why.empty()) return;
  PastRun run{.admit_ns = r.admit_ns, .end_ns = now, .why = why};
  bool started = !r.pods.empty();
  for (const auto& p : r.pods) {
    run.nodes.push_back(p.node);
    started = started && p.started;
    run.start_ns = std::max(run.start_ns, p.started_ns);
  }
  if (!started) run.start_ns = 0;
  r.past_runs.push_back(std::move(run));
  if (r.past_runs.size() > kMaxPastRuns) r.past_runs.erase(r.past_runs.begin());
}

void ServerState::finish_job(JobRecord& r, JobState state, const std::string& reason, TimeNs now) {
  if (r.state == JobState::kRunning) {
    sched_->finish(r.job.id, now);
    end_run(r, now, "");  // the job's own fields say how its last run ended
  } else if (r.state == JobState::kPending) {
    sched_->cancel(r.job.id, now);
  }
  pending_reasons_.forget(r.job.id);
  set_state(r, state);
  r.reason = reason;
  r.end_ns = now;
  if (state != JobState::kRejected)
    metrics_.finished[{{"cluster_queue", r.cluster_queue}, {"state", state_name(state)}}] += 1;
  if (const char* outcome =
          deadline_outcome(r.job, state == JobState::kSucceeded, state == JobState::kRejected, now))
    metrics_.deadlines[{{"cluster_queue", r.cluster_queue},
                        {"priority_class", r.job.exec().priority_class},
                        {"outcome", outcome}}] += 1;
  end_event(r, now);
  trace_end(r, now);
  touch(r);
  dirty_ = true;
  gates_dirty_ = true;
  retire(r);
}

// The log's end event, with what the history (history.h) keeps of the job's end.
void ServerState::end_event(const JobRecord& r, TimeNs now) {
  json e = {
      {"event", "end"}, {"time", unix_s(now)}, {"id", r.job.id}, {"state", state_name(r.state)}};
  if (r.exit_code) e["exit_code"] = *r.exit_code;
  if (!r.reason.empty()) e["reason"] = r.reason;
  event(std::move(e));
}

// ---------------------------------------------------------------------------------------------
// Scheduling

uint64_t ServerState::cycle(TimeNs now, bool full) {
  if (gates_dirty_) open_gates(now);
  CycleResult res =
      sched_->run_cycle(now, full ? Scheduler::CycleMode::kFull : Scheduler::CycleMode::kAuto);
  const uint64_t seq = ++cycles_;
  dirty_ = false;
  last_incremental_ = res.incremental;
  // Records first (they read the running state the scheduler is about to change).
  for (const auto& pr : res.preempted) {
    JobRecord& r = rec(pr.victim);
    stop_pods(r, "preempted", pr.grace_ns);
    end_run(r, now, "preempted by job " + std::to_string(pr.preemptor));
    set_state(r, JobState::kPending);
    r.preemptions += 1;
    r.queued_ns = now;
    r.pending_since_cycle = seq;
    r.reason = "preempted by job " + std::to_string(pr.preemptor);
    metrics_.preemptions[{{"cluster_queue", r.cluster_queue},
                          {"reason", pr.borrow_within_cohort ? "borrow-within-cohort"
                                                             : preempt_reason_name(pr.reason)}}] +=
        1;
    metrics_.preempted_gpu_seconds[r.cluster_queue] +=
        static_cast<double>(pr.lost_gpu_milli_ns) / 1000.0 / 1e9;
    event({{"event", "preempt"}, {"time", unix_s(now)}, {"id", pr.victim}});
    trace_preempt(r, r.reason, now);
    touch(r);
  }
  for (const auto& rj : res.rejected) {
    JobRecord& r = rec(rj.job);
    const bool budget = rj.reason.code == PendingCode::kOverBudget;
    metrics_.rejected[budget ? "budget" : "interactive-timeout"] += 1;
    set_state(r, JobState::kRejected);
    r.reason = budget ? describe(rj.reason, *config_)
                      : "interactive job could not start within the interactive timeout: " +
                            describe(rj.reason, *config_);
    r.end_ns = now;
    pending_reasons_.forget(rj.job);
    end_event(r, now);
    gates_dirty_ = true;
    trace_end(r, now);
    touch(r);
    retire(r);
  }
  // apply() reads neither the pending reasons nor the summary.
  pending_reasons_.record(std::move(res.pending), res.incremental ? nullptr : &res.summary, seq,
                          now);
  sched_->apply(res, now);
  for (const auto& pr : res.preempted) {  // apply() restarted their age: a restart must too
    if (const auto* p = sched_->find_pending(pr.victim))
      rec(pr.victim).aged_from_ns = p->job.submit_ns;
    // Not admitted again while its pods are in their grace: its two runs would overlap.
    gate_until_stopped(rec(pr.victim), now);
  }
  for (const auto& a : res.admitted) {
    pending_reasons_.forget(a.job);
    start_run(rec(a.job), a, now);
  }
  // Admissions may meet `after` dependencies, and waiting jobs' reasons name their state.
  if (!res.admitted.empty() && !gated_.empty()) gates_dirty_ = true;
  if (gates_dirty_) open_gates(now);
  if (!res.admitted.empty() || !res.preempted.empty()) dirty_ = true;  // follow-up cycle
  persist_budgets(now);
  return flush();
}

// GPU-hour budgets survive a restart: their usage goes to the store with every cycle (at
// least once a second), and recover() hands it back to the new scheduler.
void ServerState::persist_budgets(TimeNs now) {
  if (config_->budgets.empty()) return;
  json out = json::array();
  for (const auto& b : sched_->budget_snapshot(now))
    out.push_back({{"namespace", b.namespace_}, {"at_ns", b.at_ns}, {"used", b.used}});
  write_.meta.push_back({"budgets", proto::dump_json(out)});
}

std::vector<Scheduler::BudgetSnapshot> ServerState::stored_budgets() const {
  std::vector<Scheduler::BudgetSnapshot> out;
  if (!store_) return out;
  auto text = store_->get_meta("budgets");
  if (!text) return out;
  const json j = json::parse(*text, nullptr, false);
  if (!j.is_array()) return out;
  for (const auto& e : j)
    if (e.is_object() && e.value("namespace", json()).is_string() &&
        e.value("at_ns", json()).is_number_integer() && e.value("used", json()).is_string())
      out.push_back({e["namespace"].get<std::string>(), e["at_ns"].get<TimeNs>(),
                     e["used"].get<std::string>()});
  return out;
}

void ServerState::release_staged() {
  const std::string* last = nullptr;  // staged in placement order: mostly runs of one node
  for (auto& [node, a] : staged_) {
    NodeState* n = node_by_name(node);
    if (!n) continue;
    deliver(*n, std::move(a));
    if (!last || *last != node) notify_outbox(node);
    last = &node;
  }
  staged_.clear();
}

}  // namespace sluice::server
