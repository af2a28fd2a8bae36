#pragma once
// The control plane's state machine: job records around the core Scheduler, node agents, and
// what each agent must start and stop. No sockets and no clock: every call takes `now`, so the
// whole daemon logic is unit-testable and deterministic. The HTTP layer (server/http/) and the
// loop (server.cc) hold mu() around every call and wait for the returned store ticket before
// they acknowledge anything.
#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/cycle/scheduler.h"
#include "proto/protocol.h"
#include "server/change_journal.h"
#include "server/dashboard_history.h"
#include "server/history.h"
#include "server/metrics.h"
#include "server/namespace_backpressure.h"
#include "server/node_auth.h"
#include "server/node_pools.h"
#include "server/pending_reasons.h"
#include "server/store.h"
#include "server/tracing.h"

namespace sluice::server {

enum class JobState : uint8_t { kPending, kRunning, kSucceeded, kFailed, kCancelled, kRejected };
const char* state_name(JobState s);
inline double unix_s(TimeNs ns) {
  return static_cast<double>(ns) / 1e9;
}
std::optional<JobState> parse_state(const std::string& s);
// A state as a filter names it: ours, or Slurm's code or name in any case (PD, R, CD, F, CA;
// TO and TIMEOUT are failed: a walltime kill fails the job).
std::optional<JobState> parse_state_filter(const std::string& text);
inline constexpr const char* kStateFilterHelp =
    "pending, running, succeeded, failed, cancelled, rejected, or Slurm's PD, R, CD, F, CA, TO";
inline bool is_terminal(JobState s) {
  return s != JobState::kPending && s != JobState::kRunning;
}
// Whether a new job waits outside the scheduler (state_gates.cc) until something lets it go.
inline bool gated_at_submit(const Job& job) {
  return job.exec().hold || !job.exec().dependency.empty() || job.exec().array_throttle > 0;
}

std::string lower(std::string s);
// "pod 2 exited with code 3", for a job's reason.
std::string exit_text(const proto::PodExit& e);
// A failed job whose reason is a walltime kill (history.h: kPastWalltime) timed out.
inline bool timed_out(JobState state, const std::string& reason) {
  return state == JobState::kFailed && reason_is_timeout(reason);
}

// Workload class for metrics and alerts: interactive, best-effort (preemptible batch), batch.
const char* workload_class(const Job& job, const Config& config);

struct PodRun {
  std::string node;
  std::vector<int32_t> gpus;  // device indices on the node
  int32_t gpu_milli = 1000;
  bool started = false;
  TimeNs started_ns = 0;  // when the server learned that the process runs
  bool exited = false;
  proto::PodExit exit;
  bool stop_ordered = false;  // a stop went out for this run (requeue, preemption, cancel)
  // A batch Job with completions (Job::completions): the completion this slot runs now (-1:
  // none), and whether it is a later run of the slot (its previous run succeeded).
  int32_t completion = -1;
  bool rerun = false;
  // This run's number (JobRecord::launches when it was staged; proto::RunningPod): orders and
  // reports about any other run of the pod are not applied to it. 0: a record from before runs.
  uint64_t run = 0;
  // The Kubernetes API evicted this pod after it ended (kubectl drain): the API shows it no
  // more, as the API server deletes an evicted pod. Not stored: a restart shows it again.
  bool deleted = false;
};

// Whether a message about run `b` of a pod is about its run `a` (0 on either side: a record or
// a peer from before run numbers, matched by job and pod alone).
inline bool same_run(uint64_t a, uint64_t b) {
  return a == 0 || b == 0 || a == b;
}

// One run of a job that ended with the job requeued (GET /v1/jobs/ID's "runs", with the last
// run; the dashboard's job page lists them): where its pods ran, when, and why it ended. Kept
// in memory only: after a restart of the server a job shows its current (or last) run alone.
struct PastRun {
  std::vector<std::string> nodes;  // its pods' nodes, in pod order
  TimeNs admit_ns = 0;
  TimeNs start_ns = 0;  // every pod running (0: never got that far)
  TimeNs end_ns = 0;
  std::string why;  // "preempted by job 7", "succeeded", "failed: ..."
};
inline constexpr size_t kMaxPastRuns = 32;  // the newest kept, per job

// A job's measured GPU use (JobRecord::gpu_use): what its agents reported, added up.
struct GpuUseTotals {
  int64_t samples = 0;
  int64_t peak_mib = 0;
  int64_t mib_sum = 0;
  int64_t util_sum = 0;
  int64_t mean_mib() const { return samples > 0 ? mib_sum / samples : 0; }
  int32_t mean_util_pct() const {
    return samples > 0 ? static_cast<int32_t>(util_sum / samples) : 0;
  }
};

// Right-sizing (state_right_size.cc; docs/scheduling.md, "Right-sizing"): what the server
// decided for a job with spec.rightSize: auto when it found a measured history. The job itself
// (JobRecord::job) keeps the request as submitted; the scheduler gets it right-sized
// (scheduled_job()) until `retried`. Stored with the record.
struct RightSizing {
  std::string shape;       // the GPU model or MIG profile it is placed on ("L4", "1g.10gb")
  bool mig = false;        // shape is a MIG profile (nvidia.com/mig-<shape>)
  int64_t memory_mib = 0;  // the shape's memory
  int32_t runs = 0;        // the earlier measured runs it was decided from
  int64_t peak_mib = 0;    // the largest peak of those runs
  bool retried = false;    // its right-sized run failed: it was queued again as requested
  bool resubmit = false;   // it failed; it queues again as requested once its pods are gone
                           // (requeue_whole; not stored: a restart before then keeps it sized)
};

struct JobRecord {
  Job job;
  uint64_t rv = 0;  // the Kubernetes resourceVersion of its last change (ChangeJournal); not stored
  std::string cluster_queue;
  JobState state = JobState::kPending;
  TimeNs queued_ns = 0;  // submit or last requeue: admission wait is measured from here
  // The scheduler ranks the job's age from here when it is later than its submission: an
  // eviction restarts the age (Scheduler::apply). Stored, so that a restart or a reload ranks
  // the job as before (aged_job()); 0: from the submission.
  TimeNs aged_from_ns = 0;
  TimeNs admit_ns = 0;
  TimeNs end_ns = 0;
  std::optional<Admission> admission;  // while running
  std::vector<PodRun> pods;            // current (or last) run, in placement order
  int32_t preemptions = 0;
  int32_t attempts = 0;
  // Its runs that ended with it requeued (preempted, lost), oldest first (the newest
  // kMaxPastRuns; in memory only: PastRun). The last run is in the fields above.
  std::vector<PastRun> past_runs;
  uint64_t launches = 0;  // pods staged so far, every run: the last PodRun::run given out
  std::string reason;     // why it ended, or why it was requeued last
  uint64_t pending_since_cycle = 0;  // ServerState's cycle count when it last became pending
  std::optional<int32_t> exit_code;
  std::vector<int32_t> completed;  // completions that succeeded (kept across runs), ascending
  int32_t master_port = 0;         // a gang's MASTER_PORT (pod_launch.h); 0: none
  // The job's stored JSON: a job never changes after submission, so it is encoded once (empty:
  // not yet, or dropped by a reconfiguration that may rename what it refers to).
  mutable std::string job_json;
  // Slurm-style job control (state_gates.cc). A pending job is "gated" while it may not go to
  // the scheduler yet: held by a user, waiting for its dependencies, behind its array's
  // throttle or its singleton name. Stored: held, deps_met, gated; gate_reason is recomputed.
  bool held = false;
  bool deps_met = true;  // spec.dependency met once (then never looked at again)
  bool gated = false;
  std::string gate_reason;
  // What gates it, for sluice_gated_jobs (kGateKinds); "" until the gates' first pass.
  std::string gate_kind;
  // Its measured GPU use, every run and pod together (proto::PodGpuUse; `sluice advise`):
  // samples, the peak per GPU, and the sums the means come from. Stored.
  GpuUseTotals gpu_use;
  // Right-sizing's decision (spec.rightSize: auto with a history); null: placed as requested.
  std::shared_ptr<RightSizing> right_size;
  // Its own Kubernetes metadata, as the Kubernetes API created or labelled it
  // (http/kube_meta.h): compact JSON {"labels", "annotations", "template": {"labels",
  // "annotations"}}; "" none. Stored. Here, not in the core's Job: the scheduler never reads it.
  std::string kube_meta;
};

// The job as the scheduler ranks it: submitted at aged_from_ns if that is later.
Job aged_job(const JobRecord& r);
// What the scheduler gets of a record: aged_job(), right-sized while right-sizing placed it on
// a shape `config` still has (state_right_size.cc).
Job scheduled_job(const JobRecord& r, const Config& config);
// `job` on right-sizing's shape (`rs` null: as it is).
Job right_sized_job(const Job& job, const RightSizing* rs, const Config& config);

// The reasons a pending job is kept from the scheduler (sluice_gated_jobs, docs/api.md): a
// user's hold, unmet dependencies, its singleton name, its array's throttle, or a queue that
// could not take it yet (its pending cap).
inline constexpr const char* kGateKinds[] = {"held",           "dependency", "singleton",
                                             "array-throttle", "queue",      "stopping"};
// A gated record's kind: its hold and unmet dependencies are known before the first pass.
std::string gate_kind(const JobRecord& r);

struct SubmitOutcome {
  int status = 202;
  std::string error;
  std::vector<std::string> details;
  std::vector<JobId> ids;
  uint64_t ticket = 0;    // wait for it before acknowledging
  int retry_after_s = 0;  // a 429's Retry-After (0: the default)
};

// The encoding of a submission's records and events, done before the state lock is taken
// (ServerState::prepare); used under the lock only if the configuration is still the same.
struct PreparedSubmission {
  std::shared_ptr<const Config> config;
  std::vector<std::string> job_bodies;    // encode_job_body() per job
  std::vector<std::string> event_bodies;  // the submit event without time, id and name
  // Per job, its JobRecord::kube_meta (the Kubernetes API's create); empty: none for any.
  std::vector<std::string> kube_meta;
};

struct ServerOptions {
  int64_t heartbeat_ms = 1000;
  // A node whose agent has not synced for this long is NotReady. It is also the agents' lease:
  // an agent that has not synced for this long stops its pods (docs/agent.md, "Fencing").
  TimeNs agent_timeout_ns = 10 * kNsPerSec;
  // A silent node's jobs are requeued only agent_timeout + the job's checkpoint grace + this
  // after the node's last sync: by then its agent has stopped them, or its fencer has.
  TimeNs fence_margin_ns = 2 * kNsPerSec;
  std::string stop_signal = "SIGTERM";
  // Finished jobs (succeeded, failed, cancelled, rejected) kept in memory and in the store for
  // job views; beyond this many, those that ended first are dropped from both (their events
  // stay in the event log). 0: keep all.
  int64_t keep_finished_jobs = 100'000;
  // Rows of the job history (history.h; `sluice history`): beyond this many, those of the jobs
  // that ended first are dropped (the event log keeps them).
  size_t history_max_jobs = 1'000'000;
  // Where the jobs' trace spans go as they end (tracing.h; an OtlpExporter): none, no tracing.
  // Called with the state's lock held: it must only queue them.
  std::function<void(std::vector<Span>)> span_sink;
  // Backpressure per namespace (state_admission.cc): at most this many pending jobs (0: no
  // cap), and jobs submitted at this rate a second with bursts of up to `burst` jobs (rate 0:
  // no limit). Beyond: 429 with a Retry-After, nothing submitted.
  int64_t namespace_max_pending = 10'000;
  double namespace_submit_rate = 200;
  int64_t namespace_submit_burst = 5'000;
};

// Which namespaces a reader may see (the caller's token); empty: every one.
using NamespaceFilter = std::function<bool(const std::string& ns)>;

class ServerState {
 public:
  ServerState(std::shared_ptr<const Config> config, Store* store, ServerOptions options);

  std::mutex& mu() { return mu_; }
  const Config& config() const { return *config_; }
  // Without the state lock (its own small one): a submission parses against the configuration
  // in force before it queues for the state lock, not after waiting for it twice.
  std::shared_ptr<const Config> config_ptr() const {
    std::lock_guard lk(config_ptr_mu_);
    return config_;
  }
  const Scheduler& scheduler() const { return *sched_; }
  Metrics& metrics() { return metrics_; }
  const ServerOptions& options() const { return options_; }

  // Restores records read from the store (startup). Jobs that cannot be restored (their queue,
  // node or GPUs are gone) are marked failed, with the reason; the messages are returned.
  std::vector<std::string> recover(const std::vector<StoredJob>& stored, TimeNs now);

  // --- Jobs -----------------------------------------------------------------------------------
  // Admits documents already parsed against config(); ids and submit times are assigned here.
  // All-or-nothing: if one job is refused, none is kept.
  SubmitOutcome submit(std::vector<Job> jobs, TimeNs now,
                       const PreparedSubmission* prepared = nullptr);
  // Without the lock: the part of submit() that only reads the jobs and `config`.
  static PreparedSubmission prepare(const std::vector<Job>& jobs,
                                    std::shared_ptr<const Config> config);
  std::string image_refusal(const std::vector<Job>& jobs) const;
  // Takes back jobs whose submission could not be written (never acknowledged).
  void withdraw(const std::vector<JobId>& ids, TimeNs now);
  // 200 with the record, 404 unknown, 409 already ended.
  int cancel(JobId id, TimeNs now, std::string* error, uint64_t* ticket);
  // Drops a finished job's record now, as keep_finished_jobs drops the oldest (the Kubernetes
  // API's delete of a finished Job); its events stay in the event log and the history. 200,
  // 404 unknown, 409 not finished.
  int forget_finished(JobId id, std::string* error, uint64_t* ticket);
  const JobRecord* find(JobId id) const;
  // Replaces a job's JobRecord::kube_meta (kubectl label, annotate) and writes it: 200, 404.
  int set_kube_meta(JobId id, std::string meta, uint64_t* ticket);
  // Slurm's hold / release / requeue (state_gates.cc): 200, 404 unknown, 409 not possible in
  // its state (the error says why). requeue: a running job is stopped and queued again, an
  // ended one queued again; `hold` keeps it held (Slurm's requeuehold).
  int hold(JobId id, TimeNs now, std::string* error, uint64_t* ticket);
  int release(JobId id, TimeNs now, std::string* error, uint64_t* ticket);
  int requeue(JobId id, bool hold, TimeNs now, std::string* error, uint64_t* ticket);
  // Job history and accounting (history.h). Replay the store's event log into it at startup.
  const History& history() const { return history_; }
  void replay_history_line(const std::string& line) { history_.replay(line); }
  const std::map<JobId, JobRecord>& records() const { return records_; }
  // The jobs named `name` in namespace `ns` (the Kubernetes API finds a Job by its name), in
  // id order; null: none.
  const std::set<JobId>* jobs_named(const std::string& ns, const std::string& name) const;
  std::string explain(JobId id, TimeNs now) const;
  std::string explain_state(JobId id, const JobRecord* r, TimeNs now) const;
  std::string held_nodes_text() const;  // explain_state: cordoned and drained nodes
  std::optional<PendingDecision> pending_decision(JobId id) const;

  // --- Scheduling -----------------------------------------------------------------------------
  // One cycle at `now`: decisions applied to the records, persisted (ticket returned, 0 when
  // nothing changed). Assignments are staged; release_staged() hands them to the agents once
  // the ticket committed, so no agent runs a decision that is not on disk.
  uint64_t cycle(TimeNs now, bool full = false);
  void release_staged();
  void drop_staged();
  bool wants_cycle() const { return dirty_; }
  bool last_cycle_incremental() const { return last_incremental_; }
  uint64_t cycles_run() const { return cycles_; }  // start predictions are cached per cycle
  // Marks agents that stopped syncing NotReady and requeues their jobs. Returns a ticket or 0.
  // A gap since the last call longer than a tick is the server's own stall, given back to
  // every node (credit_stall).
  uint64_t check_agents(TimeNs now);

  // --- Agents ---------------------------------------------------------------------------------
  struct RegisterOutcome {
    int status = 200;
    std::string error;
    std::string code;  // NodeAdmission::code, for the agent
    std::vector<std::string> details;
    proto::RegisterResponse response;
    uint64_t ticket = 0;  // wait for it before answering (a new node's credential)
  };
  // `bearer`: the request's bearer token (the node's credential, or the join token for a node
  // with none yet); `join_token`: the server's ("" = agents join without one).
  RegisterOutcome register_agent(const proto::RegisterRequest& req, const std::string& bearer,
                                 const std::string& join_token, TimeNs now);
  struct SyncOutcome {
    int status = 200;
    std::string error;
    uint64_t ticket = 0;
  };
  // Applies what an agent reports. The reply is taken with take_outbox() (after a long poll).
  // `admitted`: the credentials' version at which node_admitted() accepted this bearer (0: not
  // asked); while no credential changed since, the bearer is not hashed again.
  SyncOutcome sync_reports(const std::string& node, const std::string& bearer,
                           const proto::SyncRequest& req, TimeNs now, uint64_t admitted = 0);
  bool has_outbox(const std::string& node) const;
  // The node's orders, for the agent process `agent_id` (its sync's). A long poll of an agent
  // that has been replaced since (it stopped, a new one registered) gets none: they are for
  // the new agent, and its old connection is likely gone.
  proto::SyncResponse take_outbox(const std::string& node, const std::string& agent_id = "");
  // Whether `bearer` is the credential of `node` (syncs, log uploads). Thread-safe without
  // mu(): the HTTP layer asks before it reads a body, on its I/O thread.
  // *version (when given): the credentials' version it was checked against (sync_reports).
  bool node_admitted(const std::string& node, const std::string& bearer,
                     uint64_t* version = nullptr) const;
  // Forgets a node's credential (an admin, after the node's state directory was lost). 404
  // for a node that is not configured. The ticket makes it durable.
  int reset_node_credential(const std::string& node, uint64_t* ticket);
  // Takes a node out of scheduling (Slurm's drain, Kubernetes' cordon): no new pods; running
  // pods run on. hold: "cordon" or "drain" (the view then says draining, and drained once the
  // node runs nothing), or "" to resume. Durable (the store's meta). 404 for an unknown node.
  int set_node_hold(const std::string& node, const std::string& hold, const std::string& reason,
                    uint64_t* ticket);
  // The node's hold: "cordon", "drain", or "" (none, or no such node).
  std::string node_hold(const std::string& node) const;

  // --- Node pools (state_pools.cc; docs/autoscaling.md) ---------------------------------------
  // Follows the pools' nodes, asks core/scale's decide() what to do, and returns the
  // provisioner calls to run off the scheduling thread; none without a pool's provisioner.
  std::vector<ProvisionCall> pool_step(TimeNs now);
  // A call's result: its slot moves on, an event and a metric; a deleted node's agent and
  // credential are forgotten (a new agent may join under its name). Ticket or 0.
  uint64_t pool_done(const ProvisionResult& r, TimeNs now);
  // A reclaim (a spot provider's notice, or an admin): the node takes no new pods, its pods
  // get SIGTERM with the notice as their grace and their jobs go back to their queues (not a
  // failure; a checkpointing job resumes from its checkpoint elsewhere). A pool's node is then
  // deleted, once its pods are gone or at the notice's end; any other node stays drained. 200,
  // 404 unknown node.
  int reclaim_node(const std::string& node, TimeNs notice_ns, TimeNs now, std::string* error,
                   uint64_t* ticket);
  nlohmann::json pools_view(TimeNs now) const { return pools_.view(now); }
  const NodePools& node_pools() const { return pools_; }

  // --- The Kubernetes API's eviction (state_evict.cc; kubectl drain) -------------------------
  // Evicts pod `pod` of job `id`. A gang runs whole or not at all: a running job whose pod is
  // evicted goes back to its queue as a preempted one does (every pod stopped with its grace;
  // it queues again once none can be alive), with `reason`. A pod that ended (of an ended job,
  // or a completed pod of a running one) holds nothing and is deleted from the API's view
  // (PodRun::deleted). A pending job's pod still stopping is left to stop. 200; 404 when the
  // pod is gone already (or never was).
  int evict_pod(JobId id, size_t pod, const std::string& reason, TimeNs now, std::string* error,
                uint64_t* ticket);
  // Whether pod `pod` of a pending job's last run may still be alive: ordered to stop and not
  // confirmed gone, or on a node silent for less than the lease and the grace (the test
  // previous_run_alive makes for each pod). The Kubernetes API shows such a pod Terminating.
  bool pod_may_be_alive(const JobRecord& r, size_t pod, TimeNs now) const;

  // --- Logs through the agents' own channel (the server never dials an agent) ----------------
  struct LogFetch {
    std::string node;
    int status = 0;
    std::string body;
    std::string content_type;
    int64_t size = -1;  // the log's size on the node (X-Sluice-Log-Size); -1: not said
  };
  // Asks the agent of pod `pod` of job `id` for its log with the node's next sync reply:
  // the request's id, or (id 0) the status and error to answer (404, 503 NotReady or busy).
  struct LogAsk {
    uint64_t id = 0;
    int status = 200;
    std::string error;
  };
  // Which part of the log (proto::LogRequest): the last tail_bytes, or from offset on, or
  // (both unset) all of it up to max_bytes, cut in the middle and marked where longer.
  struct LogPart {
    int64_t tail_bytes = 0;
    int64_t offset = -1;
    int64_t max_bytes = 0;
  };
  LogAsk request_log(JobId id, int32_t pod, LogPart part);
  // `sluice run --pty` (state_tty.cc): keystrokes (raw bytes) and a window size (rows and cols
  // > 0: a new size) for interactive job `id`'s pod, sent with its node's next sync reply.
  // 200, or the status and why not: 409 not interactive or not running, 503 its node is
  // NotReady or has too much queued (kMaxTtyQueued).
  static constexpr size_t kMaxTtyQueued = 64 << 10;
  int send_tty(JobId id, const std::string& data, int32_t rows, int32_t cols, std::string* error);
  // The agent's answer, taken out of the requests in flight; nullopt when `node` did not get
  // request `id` (or its reader gave up: forget_log()).
  std::optional<LogFetch> deliver_log(const std::string& node, uint64_t id, int status,
                                      std::string body, std::string content_type,
                                      int64_t size = -1);
  void forget_log(uint64_t id);

  // --- Configuration --------------------------------------------------------------------------
  // Swaps in a new configuration, carrying every pending and running job over. On failure the
  // old one stays and the reason is returned (409: something in use would disappear).
  Result<bool> reconfigure(std::shared_ptr<const Config> config, const std::string& text,
                           TimeNs now);
  uint64_t persist_config(const std::string& text);

  // --- Views ----------------------------------------------------------------------------------
  nlohmann::json job_view(const JobRecord& r, TimeNs now) const;
  nlohmann::json reason_view(const JobRecord& r) const;  // job_view's "reason"
  nlohmann::json queues_view(TimeNs now) const;
  // {"local_queues": [{namespace, name, cluster_queue, pending, running,
  // cluster_queue_pending, cluster_queue_running, usage}]}: every LocalQueue, in config order.
  nlohmann::json local_queues_view(TimeNs now) const;
  nlohmann::json nodes_view(TimeNs now) const;
  // `sees`: the namespaces whose series (GPU-seconds, budgets) are written; empty: all.
  std::string metrics_text(TimeNs now, const NamespaceFilter& sees = {}) const;
  // What the web dashboard draws at `now` (state_dashboard.cc; DashboardHistory keeps them).
  DashboardSample dashboard_sample(TimeNs now) const;
  // Allocated GPU-seconds per namespace: its closed runs plus its open ones up to `now`.
  std::map<std::string, double> namespace_gpu_seconds(TimeNs now) const;
  // Per namespace: {allocated GPU-seconds of jobs with a measured use, GPU-seconds used}
  // (allocated x their mean utilisation), closed runs and running ones until `now`.
  std::map<std::string, std::pair<double, double>> namespace_gpu_use_seconds(TimeNs now) const;

  // A node's long poll waits on the node's own condition variable, notified (under mu()) when
  // its outbox gains work: a cycle that assigns to three nodes wakes three polls, not one per
  // node. The variable lives as long as the state (call with mu() held).
  std::shared_ptr<std::condition_variable> outbox_cv(const std::string& node);
  // The job records' changes as the Kubernetes API's resourceVersions (change_journal.h), and
  // the condition variable notified (under mu()) when a flush adds some: watches wait on it.
  const ChangeJournal& journal() const { return journal_; }
  ChangeJournal& journal() { return journal_; }  // the watch thread's bump() (kube_watch.h)
  std::condition_variable& journal_cv() { return journal_cv_; }
  // Whether the watch thread has a watch or a followed log to serve (Server::kube_watch_loop):
  // without one a flush does not wake it, which cost a wake-up and a hand-off of the state
  // lock per flush (issue 38). Shutdown and new watches notify journal_cv() themselves.
  void set_journal_watched(bool on) { journal_watched_.store(on, std::memory_order_relaxed); }
  void wake_polls();  // every node's (shutdown)
  // A long poll parked without a thread (http/agents.cc): `wake` runs once, under mu(), when
  // the node's outbox gains work or the server stops (wake_polls()); unpark_poll() forgets one
  // whose wait ended first. Both under mu(); the id is never 0.
  uint64_t park_poll(const std::string& node, std::function<void()> wake);
  void unpark_poll(const std::string& node, uint64_t id);

 private:
  bool still_admitted(const std::string& node, const std::string& bearer, uint64_t version) const;
  struct NodeState {
    NodeId id = 0;
    std::string name;
    bool registered = false;
    bool ready = false;  // as told to the scheduler
    std::string agent_id;
    std::string address;
    std::string container_runtime;  // what its agent runs images with ("": none)
    TimeNs last_seen_ns = 0;
    std::vector<proto::Assignment> assign;  // outbox
    std::vector<proto::StopOrder> stop;     // outbox
    std::vector<proto::Assignment> held;    // wait for a stopping pod of the same (job, pod)
    // Ordered to stop, with the run the order is for (0: any); exit not seen yet.
    std::map<proto::PodRef, uint64_t> stopping;
    std::set<proto::PodRef> check_missing;  // after a register: verify at the next sync
    bool first_sync = false;
    bool lost = false;  // NotReady for silence (jobs being fenced); cleared when it registers
    std::vector<int32_t> gpu_util_pct;    // last sample from the agent (NVML); empty: none
    std::vector<proto::LogRequest> logs;  // outbox
    std::vector<proto::TtyInput> tty;     // outbox: keystrokes for interactive pods
    size_t tty_bytes = 0;                 // their data's size (bounded: kMaxTtyQueued)
    // An admin took it out of scheduling (set_node_hold): "cordon" or "drain"; "": none.
    std::string hold;
    std::string hold_reason;
    // A pool's node on its way out (scaled down, reclaimed): no new pods. Not stored: the
    // pool's state is rebuilt from the agents that register after a restart.
    bool leaving = false;
  };
  // Whether the scheduler may place new pods on it.
  static bool schedulable(const NodeState& n) { return n.ready && n.hold.empty() && !n.leaving; }
  void set_leaving(NodeState& n, bool leaving);  // state_pools.cc
  void load_node_holds();

  JobRecord& rec(JobId id) { return records_.at(id); }
  // records_ and named_ together: every record goes in and out through these.
  void add_record(JobRecord r);
  void erase_record(JobId id);
  NodeState* node_by_name(const std::string& name);
  const NodeState* node_by_name(const std::string& name) const;
  void rebuild_nodes(const std::map<std::string, NodeState>& old);
  // Persistence helpers: queue the record (and events) for the next flush.
  void touch(const JobRecord& r);
  void event(nlohmann::json e);
  uint64_t flush();
  void persist_budgets(TimeNs now);
  void write_node_metrics(PromWriter& w) const;  // state_metrics.cc
  // Trace spans of the job's lifecycle (state_tracing.cc); no-ops without a span sink.
  void trace_submit(const JobRecord& r, TimeNs now);
  void trace_admit(const JobRecord& r, TimeNs now);
  void trace_pod_started(const JobRecord& r, int32_t pod, TimeNs now);
  void trace_preempt(const JobRecord& r, const std::string& reason, TimeNs now);
  void trace_end(const JobRecord& r, TimeNs now);
  std::vector<Scheduler::BudgetSnapshot> stored_budgets() const;
  // Pod lifecycle.
  void stop_pods(JobRecord& r, const std::string& reason, TimeNs grace_ns);
  // state_runs.cc: a run's pods and what each is told (pod_launch.h), completions.
  void start_run(JobRecord& r, const Admission& a, TimeNs now);
  std::vector<proto::PeerPod> run_peers(const JobRecord& r) const;
  // Stages the pod's assignment as a new run of it (PodRun::run).
  void stage_pod(JobRecord& r, size_t pod, const std::vector<proto::PeerPod>& peers);
  int32_t pick_master_port(const JobRecord& r) const;
  // The lowest completion neither succeeded nor running in another slot; nullopt: none left.
  std::optional<int32_t> next_completion(const JobRecord& r) const;
  // After pod `pod` of a job with completions succeeded: records it and, when completions are
  // left, starts the next one in the same slot (true).
  bool run_next_completion(JobRecord& r, size_t pod);
  // Accounts GPU-hours of the run that ends; one that ends with the job going back to the queue
  // (`why` not empty: preempted, requeued) is kept in r.past_runs.
  void end_run(JobRecord& r, TimeNs now, const std::string& why);
  void finish_job(JobRecord& r, JobState state, const std::string& reason, TimeNs now);
  // state_gates.cc: jobs kept from the scheduler (JobRecord::gated) and when they may go.
  enum class GateVerdict : uint8_t { kOpen, kWait, kNever };
  GateVerdict judge_gate(JobRecord& r, std::map<JobId, int32_t>& array_active, std::string* why,
                         std::string* kind) const;
  GateVerdict judge_dependency(const JobRecord& r, std::string* why) const;
  // The state of a job a dependency of a job in namespace `ns` names: its record's, else its
  // history row's; nullopt: unknown, or a job of another namespace (the two read the same, so
  // that a dependency tells nothing about other tenants' jobs). `started`: it has run.
  std::optional<JobState> dependency_state(JobId id, const std::string& ns, bool* started) const;
  // The tasks of array `array` (its first task's id) in namespace `ns`; empty: none there.
  std::vector<JobId> array_tasks(JobId array, const std::string& ns) const;
  void gate(JobRecord& r, TimeNs now);  // out of the scheduler (it must be pending)
  // A job sent back to its queue while its run is still stopping: gated until no pod of that
  // run can be alive, so that two runs never overlap.
  void gate_until_stopped(JobRecord& r, TimeNs now);
  // Where a pod of the job's last run may still be alive ("": nowhere).
  std::string previous_run_alive(const JobRecord& r, TimeNs now) const;
  void open_gates(TimeNs now);
  int32_t array_active(JobId array_job) const;
  // submit()'s steps (state_submit.cc): what the scheduler took of a submission (per job, its
  // ClusterQueue and right-sizing decision), the refusal of one job, and the records of the jobs
  // taken.
  struct AcceptedJobs {
    std::vector<QueueId> queues;
    std::vector<std::shared_ptr<RightSizing>> right_sizes;  // spec.rightSize: auto
  };
  SubmitOutcome job_refused(const Job& job, const SubmitResult& res, size_t jobs);
  std::optional<SubmitOutcome> schedule_submitted(std::vector<Job>& jobs, TimeNs now,
                                                  AcceptedJobs& accepted);
  std::vector<JobId> record_submitted(std::vector<Job>& jobs, const AcceptedJobs& accepted,
                                      TimeNs now, const PreparedSubmission* prepared,
                                      bool prepared_ok);
  void keep_submitted(JobRecord r, TimeNs now);
  // New jobs of a submission: arrays expanded into their tasks, gates set.
  std::vector<Job> expand_arrays(std::vector<Job> jobs, std::string* error);
  void history_submit(const JobRecord& r);
  void history_recovered(const JobRecord& r);
  void end_event(const JobRecord& r, TimeNs now);
  std::string unknown_dependency(const std::vector<Job>& jobs) const;
  // A job whose run cannot go on (a node fell silent, a pod was fenced): its other pods are
  // stopped with the job's grace now, and it goes back to its queue only once no pod of the
  // run can still be alive (finish_requeues): never two live runs of one job.
  void credit_stall(TimeNs now);
  // state_admission.cc: every change of a record's state goes through set_state, which keeps
  // the pending jobs per namespace counted for the cap (backpressure_).
  void set_state(JobRecord& r, JobState s);
  void recount_pending();
  std::optional<SubmitOutcome> backpressure(const std::map<std::string, int64_t>& per_namespace,
                                            TimeNs now);
  void begin_requeue(JobRecord& r, const std::string& reason, TimeNs now,
                     const char* stop_reason = "node-lost");
  // Right-sizing (state_right_size.cc): the decision for a job submitted with spec.rightSize:
  // auto (null: no history, or nothing smaller fits), its event, and the retry of a
  // right-sized run that failed (true: the job runs again as requested, not failed).
  std::shared_ptr<RightSizing> plan_right_size(const Job& job) const;
  void right_size_event(const JobRecord& r, TimeNs now);
  bool retry_whole(JobRecord& r, const proto::PodExit& e, TimeNs now);
  void requeue_whole(JobRecord& r, const std::string& reason, TimeNs now);
  void finish_requeues(TimeNs now);
  bool pod_gone(const JobRecord& r, size_t pod, TimeNs now) const;
  void requeue_lost(JobRecord& r, const std::string& reason, TimeNs now);
  void apply_exit(NodeState& n, const proto::PodExit& e, TimeNs now);
  void reconcile_registered(NodeState& n, const proto::RegisterRequest& req, TimeNs now,
                            proto::RegisterResponse* resp);
  void check_first_sync(NodeState& n, const proto::SyncRequest& req, TimeNs now);
  void release_held(NodeState& n, const proto::PodRef& key);
  void stop_strays(NodeState& n, const std::vector<proto::RunningPod>& running);
  // Right-sizing: an agent's GPU use reports added into its jobs' totals (JobRecord::gpu_use).
  void apply_gpu_use(const NodeState& n, const std::vector<proto::PodGpuUse>& uses);
  // The stop order for a run of a pod the node should not run, recorded as stopping there.
  proto::StopOrder stop_unknown(NodeState& n, const proto::PodRef& key, uint64_t run);
  void deliver(NodeState& n, proto::Assignment a);
  std::string encode_record(const JobRecord& r) const;
  std::optional<JobRecord> decode_record(const nlohmann::json& j, std::string* why) const;
  // A scheduler over `config` carrying the records: running jobs where they run, then pending
  // ones in submit order. A job it cannot carry goes to `refuse`; false from it aborts (nullptr).
  std::unique_ptr<Scheduler> build_scheduler(
      std::shared_ptr<const Config> config,
      const std::function<bool(JobRecord&, const std::string&)>& refuse);

  mutable std::mutex mu_;
  ChangeJournal journal_;
  std::condition_variable journal_cv_;
  std::atomic<bool> journal_watched_{true};  // set_journal_watched()
  // The journal gained changes: the watch thread wakes if it serves anyone (under mu()).
  void journal_changed() {
    if (journal_watched_.load(std::memory_order_relaxed)) journal_cv_.notify_all();
  }
  std::unordered_map<std::string, std::shared_ptr<std::condition_variable>> outbox_cv_;
  std::unordered_map<std::string, std::vector<std::pair<uint64_t, std::function<void()>>>>
      parked_polls_;  // park_poll()
  uint64_t next_park_id_ = 0;
  void notify_outbox(const std::string& node);
  std::shared_ptr<const Config> config_;  // written under mu_ and config_ptr_mu_
  mutable std::mutex config_ptr_mu_;
  std::unique_ptr<Scheduler> sched_;
  std::unique_ptr<JobTracer> tracer_;  // with options_.span_sink only
  Store* store_;
  ServerOptions options_;
  Metrics metrics_;
  std::map<JobId, JobRecord> records_;
  std::map<std::pair<std::string, std::string>, std::set<JobId>> named_;  // (ns, name)
  NamespaceBackpressure backpressure_;
  TimeNs last_check_ns_ = 0;  // the last check_agents(): a longer gap than a tick is a stall
  std::set<std::pair<TimeNs, JobId>> finished_;  // kept finished jobs, by (end, id)
  // A job reached a final state: it is kept, and flush() drops the oldest beyond
  // keep_finished_jobs (trim_finished).
  void retire(const JobRecord& r);
  void trim_finished();
  PendingReasons pending_reasons_;
  uint64_t cycles_ = 0;  // cycles run
  std::vector<NodeState> nodes_;
  std::unordered_map<std::string, size_t> node_at_;  // name -> index in nodes_
  std::vector<std::pair<std::string, proto::Assignment>> staged_;
  JobId next_id_ = 1;
  bool dirty_ = true;  // something changed that a cycle should look at
  bool last_incremental_ = false;
  Write write_;  // queued for the next flush
  std::set<JobId> touched_;
  std::map<std::string, double> gpu_seconds_;  // per namespace, closed runs
  // Right-sizing, per namespace, closed runs: allocated GPU-seconds of the jobs with a measured
  // use, and those times their mean utilisation (sluice_namespace_gpu_seconds_used_total).
  std::map<std::string, std::pair<double, double>> gpu_use_seconds_;
  NodeCredentials node_creds_;   // persisted as meta "node-credential/<node>"; written under both
  mutable std::mutex creds_mu_;  // mu_ and creds_mu_, read under either
  std::map<JobId, std::string> requeueing_;  // begin_requeue'd jobs -> the reason
  std::set<JobId> gated_;                    // JobRecord::gated, by id (arrays in task order)
  // Gated jobs whose previous run may still be alive (a preemption's or a requeue's victim,
  // stopping in its grace): they go back to the scheduler once it is gone (state_gates.cc).
  std::set<JobId> awaiting_stop_;
  bool gates_dirty_ = false;                    // something a gate waits for may have changed
  std::map<JobId, std::vector<JobId>> arrays_;  // array id -> its tasks' job ids
  History history_;
  NodePools pools_;
  std::map<uint64_t, LogFetch> log_fetches_;  // bounded: request_log refuses past kMaxLogFetches
  uint64_t next_log_id_ = 1;
};

}  // namespace sluice::server
