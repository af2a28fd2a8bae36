// ServerState, the agents' side: registration and node identity, syncs and their reports,
// silent nodes and fencing, and logs fetched through the agents' own channel.
#include <algorithm>

#include <limits>

#include "server/state.h"

namespace sluice::server {

namespace {

constexpr size_t kMaxLogFetches = 256;  // log requests in flight, all nodes together

}  // namespace

std::shared_ptr<std::condition_variable> ServerState::outbox_cv(const std::string& node) {
  auto& cv = outbox_cv_[node];
  if (!cv) cv = std::make_shared<std::condition_variable>();
  return cv;
}

void ServerState::notify_outbox(const std::string& node) {
  if (auto it = outbox_cv_.find(node); it != outbox_cv_.end()) it->second->notify_all();
  if (auto it = parked_polls_.find(node); it != parked_polls_.end() && !it->second.empty())
    for (auto& [id, wake] : std::exchange(it->second, {})) wake();
}

void ServerState::wake_polls() {
  for (auto& [node, cv] : outbox_cv_) cv->notify_all();
  for (auto& [node, polls] : parked_polls_)
    for (auto& [id, wake] : std::exchange(polls, {})) wake();
}

uint64_t ServerState::park_poll(const std::string& node, std::function<void()> wake) {
  parked_polls_[node].emplace_back(++next_park_id_, std::move(wake));
  return next_park_id_;
}

void ServerState::unpark_poll(const std::string& node, uint64_t id) {
  auto it = parked_polls_.find(node);
  if (it == parked_polls_.end()) return;
  std::erase_if(it->second, [id](const auto& p) { return p.first == id; });
}

void ServerState::drop_staged() {
  staged_.clear();
}

// ---------------------------------------------------------------------------------------------
// Silent nodes and fencing (docs/agent.md, "Fencing")
//
// Timeline of a node whose agent falls silent at T (its last sync the server received):
//   T + agent_timeout          NotReady: no new work; its jobs' other pods are told to stop
//                              (each job's checkpoint grace). The agent, counting its lease
//                              from a request it sent no later than T, stops its pods now.
//   T + timeout + grace        the agent (or, when the agent is dead, its fencer) has SIGKILLed
//                              whatever was left.
//   T + timeout + grace + margin   the job is requeued (finish_requeues): no pod of the old
//                              run can be alive, so two runs never overlap.

uint64_t ServerState::check_agents(TimeNs now) {
  credit_stall(now);
  // 1. Nodes that just fell silent: NotReady once, and their jobs start their requeue.
  for (auto& n : nodes_) {
    if (n.lost || now - n.last_seen_ns <= options_.agent_timeout_ns) continue;
    n.lost = true;
    n.registered = false;
    if (n.ready) {
      n.ready = false;
      sched_->set_node_ready(n.id, false);
      dirty_ = true;
    }
    std::vector<JobId> hit;
    for (const auto& [id, r] : records_)
      if (r.state == JobState::kRunning && !requeueing_.count(id))
        for (const auto& p : r.pods)
          if (p.node == n.name && !p.exited) {
            hit.push_back(id);
            break;
          }
    for (JobId id : hit) begin_requeue(rec(id), "node " + n.name + " stopped heartbeating", now);
  }
  // 2. Jobs whose old run is over everywhere go back to their queues.
  finish_requeues(now);
  if (!awaiting_stop_.empty()) gates_dirty_ = true;  // a silent node's lease may have run out
  return flush();
}

// The loop looks at the agents every tick (200 ms). A longer gap is the server's own stall (a
// frozen or paused process, a disk whose fsync hangs, a lock held long): the agents' syncs of
// that time waited too, so it is not their silence, and the nodes get the time back instead of
// being declared lost on the spot. Only ever later than without it, so never before the agents'
// own leases ran out (docs/agent.md, "Fencing").
void ServerState::credit_stall(TimeNs now) {
  constexpr TimeNs kTick = kNsPerSec / 5, kStall = kNsPerSec;
  const TimeNs gap = last_check_ns_ > 0 ? now - last_check_ns_ : 0;
  last_check_ns_ = now;
  if (gap <= kStall) return;
  const TimeNs credit = gap - kTick;
  metrics_.stalled_seconds += static_cast<double>(credit) / 1e9;
  for (auto& n : nodes_)
    if (!n.lost && n.last_seen_ns > 0) n.last_seen_ns = std::min(now, n.last_seen_ns + credit);
}

void ServerState::begin_requeue(JobRecord& r, const std::string& reason, TimeNs now,
                                const char* stop_reason) {
  if (r.state != JobState::kRunning || !requeueing_.emplace(r.job.id, reason).second) return;
  stop_pods(r, stop_reason, r.job.checkpoint_grace_ns);
  finish_requeues(now);  // nothing left alive (e.g. a one-pod job whose pod was fenced): now
}

bool ServerState::pod_gone(const JobRecord& r, size_t pod, TimeNs now) const {
  const PodRun& p = r.pods[pod];
  if (p.exited) return true;
  const NodeState* n = node_by_name(p.node);
  if (!n) return true;
  // Ordered to stop, and its exit came back (or it was withdrawn before it was delivered).
  if (p.stop_ordered && !n->stopping.count({r.job.id, static_cast<int32_t>(pod)})) return true;
  // On a silent node: its agent stopped it when its lease ran out, SIGKILL after the grace.
  return n->lost && now - n->last_seen_ns > options_.agent_timeout_ns + r.job.checkpoint_grace_ns +
                                                options_.fence_margin_ns;
}

void ServerState::finish_requeues(TimeNs now) {
  for (auto it = requeueing_.begin(); it != requeueing_.end();) {
    auto rit = records_.find(it->first);
    if (rit == records_.end() || rit->second.state != JobState::kRunning) {
      it = requeueing_.erase(it);  // ended meanwhile (cancelled)
      continue;
    }
    JobRecord& r = rit->second;
    bool gone = true;
    for (size_t i = 0; i < r.pods.size() && gone; ++i) gone = pod_gone(r, i, now);
    if (!gone) {
      ++it;
      continue;
    }
    const std::string reason = it->second;
    it = requeueing_.erase(it);
    requeue_lost(r, reason, now);
  }
}

void ServerState::requeue_lost(JobRecord& r, const std::string& reason, TimeNs now) {
  if (r.right_size && r.right_size->resubmit) return requeue_whole(r, reason, now);
  sched_->requeue(r.job.id, now);
  end_run(r, now, "requeued: " + reason);
  set_state(r, JobState::kPending);
  r.queued_ns = now;
  r.pending_since_cycle = cycles_;
  r.reason = reason;
  event({{"event", "preempt"}, {"time", unix_s(now)}, {"id", r.job.id}, {"reason", reason}});
  trace_preempt(r, reason, now);
  touch(r);
  dirty_ = true;
}

// ---------------------------------------------------------------------------------------------
// Registration and node identity

ServerState::RegisterOutcome ServerState::register_agent(const proto::RegisterRequest& req,
                                                         const std::string& bearer,
                                                         const std::string& join_token,
                                                         TimeNs now) {
  RegisterOutcome out;
  // 1. Who is asking: the node's credential, or the join token for a node without one. Before
  //    anything else, so that an unauthenticated caller learns nothing about the cluster.
  const NodeAdmission admitted =
      node_creds_.admit_register(req.node, bearer, req.credential, join_token);
  if (admitted.status != 200) {
    out.status = admitted.status;
    out.error = admitted.error;
    out.code = admitted.code;
    return out;
  }
  // 2. The node must be configured, with the GPUs the configuration promises.
  NodeState* n = node_by_name(req.node);
  if (!n) {
    out.status = 404;
    out.error = "node \"" + req.node + "\" is not in the cluster configuration";
    std::string known;
    for (const auto& x : nodes_) known += (known.empty() ? "" : ", ") + x.name;
    out.details.push_back("configured nodes: " + (known.empty() ? "none" : known));
    return out;
  }
  const auto& cn = config_->cluster.nodes[static_cast<size_t>(n->id)];
  std::string mismatch;
  if (cn.gpus.size() != req.gpus.size()) {
    mismatch = "the configuration gives " + std::to_string(cn.gpus.size()) +
               " GPUs, the agent found " + std::to_string(req.gpus.size());
  } else {
    for (size_t i = 0; i < cn.gpus.size(); ++i)
      if (lower(cn.gpus[i].model) != lower(req.gpus[i].model)) {
        mismatch = "GPU " + std::to_string(i) + " is " + cn.gpus[i].model +
                   " in the configuration, " + req.gpus[i].model + " on the node";
        break;
      }
  }
  if (!mismatch.empty()) {
    out.status = 409;
    out.error = "node " + req.node + ": " + mismatch;
    return out;
  }
  // 3. A new node's credential becomes its identity (durable before the reply goes out).
  if (admitted.issued) {
    std::lock_guard lk(creds_mu_);
    node_creds_.set(n->name, req.credential);
    write_.meta.push_back({NodeCredentials::kMetaPrefix + n->name, node_creds_.entry(n->name)});
  }
  n->registered = true;
  n->lost = false;
  n->agent_id = req.agent_id;
  n->address = req.address;  // informational only: the server never dials it
  n->container_runtime = req.container_runtime;
  n->last_seen_ns = now;
  if (!n->ready) {
    n->ready = true;
    sched_->set_node_ready(n->id, schedulable(*n));
    dirty_ = true;
  }
  reconcile_registered(*n, req, now, &out.response);
  out.response.node = n->name;
  out.response.heartbeat_ms = options_.heartbeat_ms;
  out.response.lease_ms = options_.agent_timeout_ns / 1'000'000;
  out.ticket = flush();
  return out;
}

// What the agent runs against what the server placed there.
void ServerState::reconcile_registered(NodeState& n, const proto::RegisterRequest& req, TimeNs now,
                                       proto::RegisterResponse* resp) {
  std::map<proto::PodRef, uint64_t> reported;  // pod -> the run the agent has of it
  for (const auto& rp : req.running) reported[{rp.job, rp.pod}] = rp.run;
  std::set<proto::PodRef> expected;
  for (const auto& [id, r] : records_)
    if (r.state == JobState::kRunning)
      for (size_t i = 0; i < r.pods.size(); ++i)
        if (r.pods[i].node == n.name && !r.pods[i].exited)
          expected.insert({id, static_cast<int32_t>(i)});
  for (const auto& [key, run] : reported) {
    if (expected.count(key) && !n.stopping.count(key)) {
      auto& p = records_.at(key.job).pods[static_cast<size_t>(key.pod)];
      if (same_run(p.run, run)) {
        if (!p.started) p.started_ns = now;  // e.g. after a server restart: the pod runs
        p.started = true;
        continue;
      }
    }
    // Not ours (any more), another run than ours, or being stopped: stop that run.
    resp->stop.push_back(stop_unknown(n, key, run));
  }
  // Expected pods the agent does not run are checked at its next sync, after it has sent the
  // exits it still holds; pods whose assignment is still queued here are not missing.
  n.check_missing.clear();
  for (const auto& key : expected) {
    if (reported.count(key) &&
        same_run(records_.at(key.job).pods[static_cast<size_t>(key.pod)].run, reported[key]))
      continue;
    bool queued = false;
    for (const auto* v : {&n.assign, &n.held})
      for (const auto& a : *v) queued |= a.job == key.job && a.pod == key.pod;
    if (!queued) n.check_missing.insert(key);
  }
  n.first_sync = true;
}

bool ServerState::node_admitted(const std::string& node, const std::string& bearer,
                                uint64_t* version) const {
  std::lock_guard lk(creds_mu_);
  if (version) *version = node_creds_.version();
  return node_creds_.admit(node, bearer);
}

// Admitted at `version` and no credential changed since, or admitted now.
bool ServerState::still_admitted(const std::string& node, const std::string& bearer,
                                 uint64_t version) const {
  {
    std::lock_guard lk(creds_mu_);
    if (version != 0 && version == node_creds_.version()) return true;
  }
  return node_admitted(node, bearer);
}

int ServerState::reset_node_credential(const std::string& node, uint64_t* ticket) {
  if (!node_by_name(node)) return 404;
  {
    std::lock_guard lk(creds_mu_);
    node_creds_.reset(node);
    write_.meta.push_back({NodeCredentials::kMetaPrefix + node, ""});
  }
  *ticket = flush();
  return 200;
}

// ---------------------------------------------------------------------------------------------
// Syncs

ServerState::SyncOutcome ServerState::sync_reports(const std::string& node,
                                                   const std::string& bearer,
                                                   const proto::SyncRequest& req, TimeNs now,
                                                   uint64_t admitted) {
  SyncOutcome out;
  if (!still_admitted(node, bearer, admitted)) {
    out.status = 401;
    out.error = "missing or wrong credential for node \"" + node + "\"";
    return out;
  }
  NodeState* n = node_by_name(node);
  if (!n || !n->registered) {
    out.status = 404;
    out.error = "node \"" + node + "\" is not registered; register first";
    return out;
  }
  if (!req.agent_id.empty() && !n->agent_id.empty() && req.agent_id != n->agent_id) {
    out.status = 404;  // a different agent process: it must register (and reconcile) first
    out.error = "agent " + req.agent_id + " is not the registered agent of node " + node;
    return out;
  }
  n->last_seen_ns = now;
  // A sample for another GPU count than the configuration's is dropped, not guessed at.
  if (req.gpu_utilization_pct.size() ==
      config_->cluster.nodes[static_cast<size_t>(n->id)].gpus.size())
    n->gpu_util_pct = req.gpu_utilization_pct;
  else
    n->gpu_util_pct.clear();
  // 1. Starts first: a pod that started and ended between two syncs reports both at once.
  for (const auto& s : req.started) {
    auto rit = records_.find(s.job);
    if (rit == records_.end() || rit->second.state != JobState::kRunning) continue;
    auto& r = rit->second;
    const proto::PodRef key{s.job, s.pod};
    if (s.pod >= 0 && static_cast<size_t>(s.pod) < r.pods.size() &&
        r.pods[static_cast<size_t>(s.pod)].node == node && !n->stopping.count(key) &&
        same_run(r.pods[static_cast<size_t>(s.pod)].run, s.run)) {
      auto& p = r.pods[static_cast<size_t>(s.pod)];
      if (!p.started) {
        p.started_ns = now;
        trace_pod_started(r, s.pod, now);
      }
      p.started = true;
      touch(r);
    }
  }
  // 2. GPU use, before the exits that may end its jobs; then exits (at-least-once: repeats find
  // nothing to do).
  apply_gpu_use(*n, req.gpu_use);
  for (const auto& e : req.exits) apply_exit(*n, e, now);
  for (const auto& c : req.checkpoints) {
    auto rit = records_.find(c.job);
    if (rit == records_.end() || rit->second.state != JobState::kRunning) continue;
    const auto& pods = rit->second.pods;
    // A checkpoint of an earlier run says nothing of this one's progress.
    if (c.pod >= 0 && static_cast<size_t>(c.pod) < pods.size() &&
        !same_run(pods[static_cast<size_t>(c.pod)].run, c.run))
      continue;
    sched_->report_checkpoint(c.job, c.at_unix_ns);
  }
  // 3. After a register: expected pods the agent neither runs nor reported ending are lost.
  if (n->first_sync) check_first_sync(*n, req, now);
  // 4. Pods it runs that are not a current run of this node: stopped.
  stop_strays(*n, req.running);
  finish_requeues(now);
  out.ticket = flush();
  return out;
}

// A report is believed only about a pod this node runs (or ran last), and only within bounds
// that keep the totals from overflowing; anything else is dropped. The record is stored again
// only when its peak grows (not on every sample): a restart may lose some samples of a mean.
void ServerState::apply_gpu_use(const NodeState& n, const std::vector<proto::PodGpuUse>& uses) {
  constexpr int64_t kMaxMib = int64_t{1} << 30;
  constexpr int64_t kMaxSamples = int64_t{1} << 20;
  for (const auto& u : uses) {
    if (u.samples <= 0 || u.samples > kMaxSamples || u.peak_mib < 0 || u.peak_mib > kMaxMib ||
        u.mib_sum < 0 || u.mib_sum > u.peak_mib * u.samples || u.util_sum < 0 ||
        u.util_sum > 100 * u.samples)
      continue;
    auto rit = records_.find(u.job);
    if (rit == records_.end()) continue;
    auto& r = rit->second;
    if (u.pod < 0 || static_cast<size_t>(u.pod) >= r.pods.size() ||
        r.pods[static_cast<size_t>(u.pod)].node != n.name)
      continue;
    auto& t = r.gpu_use;
    constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
    if (t.mib_sum > kMax - u.mib_sum || t.util_sum > kMax - u.util_sum) continue;  // saturated
    t.samples += u.samples;
    t.mib_sum += u.mib_sum;
    t.util_sum += u.util_sum;
    if (u.peak_mib > t.peak_mib) {
      t.peak_mib = u.peak_mib;
      touch(r);
    }
  }
}

// Every sync, not only a registration: a pod the agent runs that is not the current run of
// its pod on this node (an assignment from a reply that arrived after the server had declared
// that run lost and placed the job elsewhere; found by tests/chaos, etcd mode, seed 5) is told
// to stop, with its job's grace, never 0 ms. Pods already being stopped are left to that.
void ServerState::stop_strays(NodeState& n, const std::vector<proto::RunningPod>& running) {
  for (const auto& rp : running) {
    const proto::PodRef key{rp.job, rp.pod};
    if (n.stopping.count(key)) continue;
    const JobRecord* r = find(rp.job);
    if (r && r->state == JobState::kRunning && rp.pod >= 0 &&
        static_cast<size_t>(rp.pod) < r->pods.size()) {
      const PodRun& p = r->pods[static_cast<size_t>(rp.pod)];
      if (p.node == n.name && !p.exited && same_run(p.run, rp.run)) continue;  // ours
    }
    n.stop.push_back(stop_unknown(n, key, rp.run));
    notify_outbox(n.name);
  }
}

proto::StopOrder ServerState::stop_unknown(NodeState& n, const proto::PodRef& key, uint64_t run) {
  // With its job's grace, never 0 ms: it may be a run that can still checkpoint.
  const auto* r = find(key.job);
  const TimeNs grace = r ? r->job.checkpoint_grace_ns : 0;
  n.stopping[key] = run;
  return {key.job, key.pod, options_.stop_signal, grace / 1'000'000, "unknown-job", run};
}

void ServerState::release_held(NodeState& n, const proto::PodRef& key) {
  auto it = std::find_if(n.held.begin(), n.held.end(), [&](const proto::Assignment& a) {
    return a.job == key.job && a.pod == key.pod;
  });
  if (it == n.held.end()) return;
  n.assign.push_back(std::move(*it));
  n.held.erase(it);
  notify_outbox(n.name);
}

void ServerState::apply_exit(NodeState& n, const proto::PodExit& e, TimeNs now) {
  const proto::PodRef key{e.job, e.pod};
  if (auto st = n.stopping.find(key); st != n.stopping.end()) {
    // The run we ordered to stop ended (an earlier run of this pod, or one we stopped): its
    // GPUs are free now. The end of another run than the one ordered is stale: ignored.
    if (!same_run(st->second, e.run)) return;
    n.stopping.erase(st);
    release_held(n, key);
    if (awaiting_stop_.count(e.job)) {  // its job may queue again now
      gates_dirty_ = true;
      dirty_ = true;
    }
    return;
  }
  auto rit = records_.find(e.job);
  if (rit == records_.end()) return;
  JobRecord& r = rit->second;
  if (r.state != JobState::kRunning || e.pod < 0 || static_cast<size_t>(e.pod) >= r.pods.size())
    return;
  PodRun& p = r.pods[static_cast<size_t>(e.pod)];
  // An exit of another run (the answer to a stale stop order, a report an agent held while it
  // was frozen) says nothing of this one.
  if (p.node != n.name || p.exited || !same_run(p.run, e.run)) return;
  // A later run of a completion slot: a clean exit before its start is a repeat of the
  // previous run's (the agent resends exits until a sync succeeds; a run's start is applied
  // before its exit, even in one sync). Start failures and fencing come unstarted.
  if (p.rerun && !p.started && e.reason == "exited") return;
  p.exited = true;
  p.exit = e;
  touch(r);
  // Stopped by its agent's lease (fencing), or gone while its agent was down: the node lost
  // it, the job did not fail. It runs again once the rest of this run is gone.
  if (e.reason == "fenced" || e.reason == "lost") {
    begin_requeue(r, exit_text(e) + " on node " + n.name, now);
    return;
  }
  const bool ok = e.reason == "exited" && e.exit_code == 0;
  if (!ok && retry_whole(r, e, now)) return;
  if (!ok) {
    r.exit_code = e.reason == "exited" ? e.exit_code : (e.signal ? 128 + e.signal : -1);
    stop_pods(r, "gang-failed", 0);
    finish_job(r, JobState::kFailed, exit_text(e), now);
    return;
  }
  if (run_next_completion(r, static_cast<size_t>(e.pod))) {
    touch(r);
    return;
  }
  if (std::all_of(r.pods.begin(), r.pods.end(), [](const PodRun& x) { return x.exited; })) {
    r.exit_code = 0;
    finish_job(r, JobState::kSucceeded, "every pod exited 0", now);
  }
}

void ServerState::check_first_sync(NodeState& n, const proto::SyncRequest& req, TimeNs now) {
  n.first_sync = false;
  std::map<proto::PodRef, uint64_t> running;  // pod -> the run the agent has of it
  for (const auto& rp : req.running) running[{rp.job, rp.pod}] = rp.run;
  std::set<JobId> lost;
  for (const auto& key : n.check_missing) {
    auto rit = records_.find(key.job);
    if (rit == records_.end() || rit->second.state != JobState::kRunning) continue;
    auto& p = rit->second.pods[static_cast<size_t>(key.pod)];
    if (auto at = running.find(key); at != running.end() && same_run(p.run, at->second)) continue;
    if (p.node == n.name && !p.exited) {
      p.exited = true;  // it does not run there, and nothing will report it
      lost.insert(key.job);
    }
  }
  n.check_missing.clear();
  // Pods ordered to stop that the agent neither runs nor reported ending are gone: an exit
  // lost with an agent's state directory must not hold a later run back for ever.
  for (auto it = n.stopping.begin(); it != n.stopping.end();) {
    const proto::PodRef key = it->first;
    if (auto at = running.find(key); at != running.end() && same_run(it->second, at->second)) {
      ++it;
      continue;
    }
    it = n.stopping.erase(it);
    release_held(n, key);
  }
  for (JobId id : lost)
    begin_requeue(rec(id), "its pod on node " + n.name + " was lost when the agent restarted", now);
}

bool ServerState::has_outbox(const std::string& node) const {
  const NodeState* n = node_by_name(node);
  return n && (!n->assign.empty() || !n->stop.empty() || !n->logs.empty() || !n->tty.empty());
}

proto::SyncResponse ServerState::take_outbox(const std::string& node, const std::string& agent_id) {
  proto::SyncResponse resp;
  resp.heartbeat_ms = options_.heartbeat_ms;
  NodeState* n = node_by_name(node);
  if (!n || !n->registered) return resp;
  if (!agent_id.empty() && !n->agent_id.empty() && agent_id != n->agent_id) return resp;
  resp.assign = std::move(n->assign);
  resp.stop = std::move(n->stop);
  resp.logs = std::move(n->logs);
  resp.tty = std::move(n->tty);
  n->assign.clear();
  n->stop.clear();
  n->logs.clear();
  n->tty.clear();
  n->tty_bytes = 0;
  return resp;
}

// ---------------------------------------------------------------------------------------------
// Logs: asked for in a node's sync reply, posted back by its agent on its authenticated channel

ServerState::LogAsk ServerState::request_log(JobId id, int32_t pod, LogPart part) {
  LogAsk out;
  const JobRecord* r = find(id);
  if (!r || pod < 0 || static_cast<size_t>(pod) >= r->pods.size()) {
    out.status = 404;
    out.error = "job " + std::to_string(id) + " has no pod " + std::to_string(pod);
    return out;
  }
  const std::string& node = r->pods[static_cast<size_t>(pod)].node;
  NodeState* n = node_by_name(node);
  if (!n || !n->registered) {
    out.status = 503;
    out.error = "node " + node +
                " is NotReady (its agent is not syncing): the log stays on that node until its "
                "agent is back";
    return out;
  }
  if (log_fetches_.size() >= kMaxLogFetches) {
    out.status = 503;
    out.error = "too many log requests in flight; try again";
    return out;
  }
  out.id = next_log_id_++;
  log_fetches_[out.id].node = node;
  n->logs.push_back({out.id, id, pod, part.tail_bytes, part.offset, part.max_bytes});
  notify_outbox(node);
  return out;
}

std::optional<ServerState::LogFetch> ServerState::deliver_log(const std::string& node, uint64_t id,
                                                              int status, std::string body,
                                                              std::string content_type,
                                                              int64_t size) {
  auto it = log_fetches_.find(id);
  if (it == log_fetches_.end() || it->second.node != node) return std::nullopt;
  LogFetch out = std::move(it->second);
  forget_log(id);
  out.status = status;
  out.body = std::move(body);
  out.content_type = std::move(content_type);
  out.size = size;
  return out;
}

void ServerState::forget_log(uint64_t id) {
  auto it = log_fetches_.find(id);
  if (it == log_fetches_.end()) return;
  if (NodeState* n = node_by_name(it->second.node))
    std::erase_if(n->logs, [&](const proto::LogRequest& l) { return l.id == id; });
  log_fetches_.erase(it);
}

// The holds, kept as one JSON object {node: {"hold", "reason"}} in the store's meta.
int ServerState::set_node_hold(const std::string& node, const std::string& hold,
                               const std::string& reason, uint64_t* ticket) {
  NodeState* n = node_by_name(node);
  if (!n) return 404;
  n->hold = hold;
  n->hold_reason = hold.empty() ? std::string() : reason;
  sched_->set_node_ready(n->id, schedulable(*n));
  dirty_ = true;  // resumed capacity: the next cycle looks at the queue again
  nlohmann::json all = nlohmann::json::object();
  for (const auto& x : nodes_)
    if (!x.hold.empty()) all[x.name] = {{"hold", x.hold}, {"reason", x.hold_reason}};
  write_.meta.push_back({"node-holds", proto::dump_json(all)});
  *ticket = flush();
  return 200;
}

std::string ServerState::node_hold(const std::string& node) const {
  const NodeState* n = node_by_name(node);
  return n ? n->hold : std::string();
}

void ServerState::load_node_holds() {
  if (!store_) return;
  const auto text = store_->get_meta("node-holds");
  if (!text) return;
  const auto all = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (!all.is_object()) return;
  for (auto& n : nodes_) {
    const auto it = all.find(n.name);
    if (it == all.end() || !it->is_object()) continue;
    n.hold = it->value("hold", "");
    n.hold_reason = it->value("reason", "");
    sched_->set_node_ready(n.id, schedulable(n));
  }
}

}  // namespace sluice::server
