// ServerState, Slurm's job control: a pending job is kept from the scheduler ("gated") while a
// user holds it, while its dependencies are not met, while its array has as many tasks in the
// scheduler or running as its throttle allows, or while an earlier job of its name and user
// (singleton) lives. open_gates() lets each go once nothing holds it, in id order, and cancels
// a job whose dependency can never be met (Slurm's kill_invalid_depend). hold, release and
// requeue are the users' verbs. Everything a gate reads is in the job's stored record.
#include <algorithm>

#include "core/model/job_control.h"
#include "server/job_codec.h"
#include "server/state.h"

namespace sluice::server {

using nlohmann::json;

namespace {

std::string job_word(JobId id) {
  return "job " + std::to_string(id);
}

}  // namespace

std::string gate_kind(const JobRecord& r) {
  if (r.held) return "held";
  if (!r.gate_kind.empty()) return r.gate_kind;
  return !r.deps_met                       ? "dependency"
         : r.job.exec().array_throttle > 0 ? "array-throttle"
                                           : "singleton";
}

// Arrays become one job per task, in task order; a task's array_job is a placeholder (its
// array's position in the submission, from 1) that submit() replaces with the first task's id.
std::vector<Job> ServerState::expand_arrays(std::vector<Job> jobs, std::string* error) {
  std::vector<Job> out;
  JobId group = 0;
  for (auto& job : jobs) {
    if (job.exec().array.empty()) {
      out.push_back(std::move(job));
      continue;
    }
    auto spec = parse_array_spec(job.exec().array);
    if (!spec) {
      *error = "job \"" + job.name + "\": " + spec.error();
      return {};
    }
    if (out.size() + spec->tasks.size() > kMaxArrayTasks) {
      *error = "more than " + std::to_string(kMaxArrayTasks) + " jobs in one submission";
      return {};
    }
    ++group;
    for (int32_t t : spec->tasks) {
      Job task = job;
      task.exec_mut().array_task = t;
      task.exec_mut().array_job = group;
      task.exec_mut().array_throttle = spec->throttle;
      out.push_back(std::move(task));
    }
  }
  return out;
}

// A dependency on a job this server never had is refused at submission, as Slurm does. A job
// of another namespace reads the same as one that does not exist: a dependency only names jobs
// of its own namespace, and tells nothing about other tenants' jobs (not even that they exist).
std::string ServerState::unknown_dependency(const std::vector<Job>& jobs) const {
  for (const Job& job : jobs) {
    if (job.exec().dependency.empty()) continue;
    auto deps = parse_dependency(job.exec().dependency);
    if (!deps) return "job \"" + job.name + "\": " + deps.error();
    for (const Dependency& d : *deps)
      for (const DepTarget& t : d.targets) {
        bool started = false;
        if (array_tasks(t.job, job.namespace_).empty() &&
            !dependency_state(t.job, job.namespace_, &started))
          return "job \"" + job.name + "\": spec.dependency names " + job_word(t.job) +
                 ", which this server does not know in namespace \"" + job.namespace_ + "\"";
      }
  }
  return {};
}

std::optional<JobState> ServerState::dependency_state(JobId id, const std::string& ns,
                                                      bool* started) const {
  if (const JobRecord* r = find(id)) {
    if (r->job.namespace_ != ns) return std::nullopt;
    *started = r->admit_ns > 0 || r->state == JobState::kRunning;
    return r->state;
  }
  if (const HistoryRow* h = history_.find(id)) {
    if (h->namespace_ != ns) return std::nullopt;
    *started = h->first_start_ns > 0;
    return parse_state(h->state);
  }
  return std::nullopt;
}

std::vector<JobId> ServerState::array_tasks(JobId array, const std::string& ns) const {
  std::vector<JobId> out;
  auto it = arrays_.find(array);
  if (it == arrays_.end()) return out;
  for (JobId task : it->second)
    if (const JobRecord* r = find(task); r && r->job.namespace_ == ns) out.push_back(task);
  return out;
}

// Whether every part of r's spec.dependency is met (singleton is judged in judge_gate).
ServerState::GateVerdict ServerState::judge_dependency(const JobRecord& r, std::string* why) const {
  auto deps = parse_dependency(r.job.exec().dependency);
  if (!deps) {  // checked at submission; a record from elsewhere may differ
    *why = deps.error();
    return GateVerdict::kNever;
  }
  for (const Dependency& d : *deps) {
    if (d.kind == DepKind::kSingleton) continue;
    for (const DepTarget& t : d.targets) {
      // The jobs the target names: a job, every task of an array, or one task.
      // Only jobs of r's own namespace (dependency_state): another's reads as unknown.
      std::vector<JobId> ids;
      const std::vector<JobId> tasks = array_tasks(t.job, r.job.namespace_);
      if (t.task >= 0 || !tasks.empty()) {
        for (JobId task : tasks)
          if (t.task < 0 || find(task)->job.exec().array_task == t.task) ids.push_back(task);
      } else {
        ids.push_back(t.job);
      }
      const std::string part = std::string(dep_kind_name(d.kind)) + ":" + std::to_string(t.job) +
                               (t.task >= 0 ? "_" + std::to_string(t.task) : "");
      if (ids.empty()) {
        *why = "its dependency " + part + " names no job this server knows";
        return GateVerdict::kNever;
      }
      for (JobId id : ids) {
        bool started = false;
        const auto st = dependency_state(id, r.job.namespace_, &started);
        const std::string what = job_word(id) + " is " + (st ? state_name(*st) : "unknown");
        if (!st) {
          *why = "its dependency " + part + " names " + job_word(id) + ", which is unknown";
          return GateVerdict::kNever;
        }
        const bool done = is_terminal(*st);
        const bool ok = *st == JobState::kSucceeded;
        bool met = false, never = false;
        switch (d.kind) {
          case DepKind::kAfter:
            met = started || done;
            break;
          case DepKind::kAfterAny:
            met = done;
            break;
          case DepKind::kAfterOk:
            met = ok;
            never = done && !ok;
            break;
          case DepKind::kAfterNotOk:
            met = done && !ok;
            never = ok;
            break;
          case DepKind::kSingleton:
            met = true;
            break;
        }
        if (never) {
          *why = "its dependency " + part + " can never be met (" + what + ")";
          return GateVerdict::kNever;
        }
        if (!met) {
          *why = "waiting for its dependency " + part + " (" + what + ")";
          return GateVerdict::kWait;
        }
      }
    }
  }
  return GateVerdict::kOpen;
}

int32_t ServerState::array_active(JobId array_job) const {
  auto it = arrays_.find(array_job);
  if (it == arrays_.end()) return 0;
  int32_t n = 0;
  for (JobId id : it->second)
    if (const JobRecord* r = find(id))
      n += r->state == JobState::kRunning || (r->state == JobState::kPending && !r->gated);
  return n;
}

// 1. held, 2. dependencies, 3. singleton, 4. the array's throttle: the first that holds it says
// why. `active`: tasks per array in the scheduler or running, counted once per pass.
ServerState::GateVerdict ServerState::judge_gate(JobRecord& r, std::map<JobId, int32_t>& active,
                                                 std::string* why, std::string* kind) const {
  *kind = "held";
  if (r.held) {
    *why = "held by a user (sluice release " + std::to_string(r.job.id) + ")";
    return GateVerdict::kWait;
  }
  *kind = "dependency";
  if (!r.deps_met && !r.job.exec().dependency.empty()) {
    const GateVerdict v = judge_dependency(r, why);
    if (v != GateVerdict::kOpen) return v;
    r.deps_met = true;
  }
  *kind = "singleton";
  if (r.job.exec().dependency.find("singleton") != std::string::npos)
    for (const auto& [id, o] : records_) {
      if (id >= r.job.id) break;
      if (!is_terminal(o.state) && o.job.name == r.job.name &&
          o.job.exec().user == r.job.exec().user) {
        *why =
            "singleton: " + job_word(id) + " of the same name and user is " + state_name(o.state);
        return GateVerdict::kWait;
      }
    }
  *kind = "array-throttle";
  if (r.job.exec().array_throttle > 0) {
    auto [it, fresh] = active.try_emplace(r.job.exec().array_job, 0);
    if (fresh) it->second = array_active(r.job.exec().array_job);
    if (it->second >= r.job.exec().array_throttle) {
      *why = "array throttle: " + std::to_string(it->second) + " of at most " +
             std::to_string(r.job.exec().array_throttle) + " tasks of array " +
             std::to_string(r.job.exec().array_job) + " are queued or running";
      return GateVerdict::kWait;
    }
  }
  return GateVerdict::kOpen;
}

void ServerState::gate_until_stopped(JobRecord& r, TimeNs now) {
  if (r.state != JobState::kPending || previous_run_alive(r, now).empty()) return;
  awaiting_stop_.insert(r.job.id);
  gate(r, now);
}

// A pod of the last run is gone when it exited, when its stop was confirmed (the node's
// stopping entry left with the exit), or when its node has been silent for the lease + the
// job's grace + the margin (its agent or fencer killed it: docs/agent.md, "Fencing"). A node
// not registered since this server started counts as silent from then.
bool ServerState::pod_may_be_alive(const JobRecord& r, size_t pod, TimeNs now) const {
  const PodRun& p = r.pods[pod];
  const NodeState* n = node_by_name(p.node);
  if (p.exited || !n) return false;
  const bool ordered = n->stopping.count({r.job.id, static_cast<int32_t>(pod)}) > 0;
  if (!ordered && n->registered) return false;
  const bool fenced = !n->registered && now - n->last_seen_ns > options_.agent_timeout_ns +
                                                                    r.job.checkpoint_grace_ns +
                                                                    options_.fence_margin_ns;
  return !fenced;
}

std::string ServerState::previous_run_alive(const JobRecord& r, TimeNs now) const {
  for (size_t i = 0; i < r.pods.size(); ++i)
    if (pod_may_be_alive(r, i, now)) return r.pods[i].node;
  return "";
}

void ServerState::gate(JobRecord& r, TimeNs now) {
  if (r.gated) return;
  sched_->cancel(r.job.id, now);
  pending_reasons_.forget(r.job.id);
  r.gated = true;
  gated_.insert(r.job.id);
  gates_dirty_ = true;
  dirty_ = true;
}

void ServerState::open_gates(TimeNs now) {
  gates_dirty_ = false;
  std::map<JobId, int32_t> active;
  for (auto it = gated_.begin(); it != gated_.end();) {  // bounded: the gated jobs
    auto rit = records_.find(*it);
    if (rit == records_.end() || rit->second.state != JobState::kPending || !rit->second.gated) {
      if (rit != records_.end()) rit->second.gated = false;
      awaiting_stop_.erase(*it);
      it = gated_.erase(it);
      continue;
    }
    JobRecord& r = rit->second;
    std::string why, kind;
    if (awaiting_stop_.count(r.job.id)) {
      if (const std::string node = previous_run_alive(r, now); !node.empty()) {
        r.gate_reason = "its previous run is still stopping on node " + node +
                        ": it queues again once no pod of that run can be alive";
        r.gate_kind = "stopping";
        ++it;
        continue;
      }
      awaiting_stop_.erase(r.job.id);
    }
    const bool deps_before = r.deps_met;
    const GateVerdict v = judge_gate(r, active, &why, &kind);
    if (r.deps_met != deps_before) touch(r);
    if (v == GateVerdict::kNever) {
      ++it;  // finish_job leaves the set to the next pass
      finish_job(r, JobState::kCancelled, why, now);
      continue;
    }
    if (v == GateVerdict::kOpen) {
      auto res = sched_->submit(scheduled_job(r, *config_));
      if (res.status == SubmitStatus::kAccepted) {
        r.gated = false;
        r.gate_reason.clear();
        r.gate_kind.clear();
        r.pending_since_cycle = cycles_;
        if (r.job.exec().array_throttle > 0) ++active[r.job.exec().array_job];
        touch(r);
        dirty_ = true;
        it = gated_.erase(it);
        continue;
      }
      why = "its queue cannot take it yet: " + res.message;
      kind = "queue";
      gates_dirty_ = true;  // try again at the next cycle
    }
    r.gate_reason = why;
    r.gate_kind = kind;
    ++it;
  }
}

// ---------------------------------------------------------------------------------------------
// hold, release, requeue

int ServerState::hold(JobId id, TimeNs now, std::string* error, uint64_t* ticket) {
  auto it = records_.find(id);
  if (it == records_.end()) return *error = "no " + job_word(id), 404;
  JobRecord& r = it->second;
  if (r.state != JobState::kPending) {
    *error = job_word(id) + " is " + state_name(r.state) +
             (r.state == JobState::kRunning
                  ? ": only a pending job can be held (`sluice requeue --hold` stops and holds it)"
                  : ": only a pending job can be held");
    return 409;
  }
  r.held = true;
  gate(r, now);
  open_gates(now);  // its reason now
  touch(r);
  *ticket = flush();
  return 200;
}

int ServerState::release(JobId id, TimeNs now, std::string* error, uint64_t* ticket) {
  auto it = records_.find(id);
  if (it == records_.end()) return *error = "no " + job_word(id), 404;
  JobRecord& r = it->second;
  if (r.state != JobState::kPending || !r.held) {
    *error = job_word(id) + " is not held (it is " + state_name(r.state) + ")";
    return 409;
  }
  r.held = false;
  touch(r);
  open_gates(now);
  *ticket = flush();
  return 200;
}

int ServerState::requeue(JobId id, bool hold_it, TimeNs now, std::string* error, uint64_t* ticket) {
  auto it = records_.find(id);
  if (it == records_.end()) return *error = "no " + job_word(id), 404;
  JobRecord& r = it->second;
  const std::string reason = "requeued by a user";
  if (r.state == JobState::kPending) {
    if (!hold_it) return *error = job_word(id) + " is already pending", 409;
  } else if (r.state == JobState::kRunning) {
    // As a preemption: its pods are stopped with its grace and it queues again, once they are
    // gone (gate_until_stopped).
    stop_pods(r, reason, r.job.checkpoint_grace_ns);
    requeue_lost(r, reason, now);
    gate_until_stopped(r, now);
  } else {
    // An ended job queues again as it was submitted (its id, its submit time, its age).
    finished_.erase({r.end_ns, id});
    set_state(r, JobState::kPending);
    r.aged_from_ns = 0;
    r.end_ns = 0;
    r.exit_code.reset();
    r.queued_ns = now;
    r.pending_since_cycle = cycles_;
    r.reason = reason;
    r.deps_met = true;  // they were met when it ran (or it never needed them again)
    event({{"event", "requeue"}, {"time", unix_s(now)}, {"id", id}});
    gate(r, now);  // open_gates() below gives it to the scheduler
    // A job cancelled a moment ago may still have pods in their grace: the new run waits for
    // them as a preempted one does (tests/chaos seed 18, noisy among the defaults: a cancel
    // and a requeue 23 ms apart ran two runs at once for 0.14 s).
    gate_until_stopped(r, now);
  }
  if (hold_it) {
    r.held = true;
    gate(r, now);
  }
  touch(r);
  open_gates(now);
  dirty_ = true;
  *ticket = flush();
  return 200;
}

}  // namespace sluice::server
