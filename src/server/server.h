#pragma once
// `sluice serve`: the control-plane daemon. HTTP API (server/http/), the scheduling loop on the
// real clock, the durable store, agent liveness. One process; state behind one mutex.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "config/loader.h"
#include "net/http_server.h"
#include "server/auth.h"
#include "server/fair_slots.h"
#include "server/provisioner.h"
#include "server/sqlite_store.h"
#include "server/start_predictor.h"
#include "server/state.h"

namespace sluice::server {

namespace kube {
struct Call;
struct JobPatch;
struct Watch;
struct Built;
struct WatchOut;
struct Snapshots;
struct LogFollow;
class ConfigVersions;
}  // namespace kube

struct ServeOptions {
  std::string listen = "127.0.0.1:7070";  // port 0: any free port (see Server::port())
  std::string data_dir = "sluice-data";
  std::vector<std::string> config_files;  // none: the configuration stored in data_dir
  // The SQLite store's: starting afresh when the database was lost, the event log file's
  // rotation, the events table's retention (sqlite_store.h).
  StoreOptions sqlite;
  // "": SQLite in data_dir. etcd://HOST:PORT[,...][/CLUSTER]: replicated, one leader among the
  // replicas (etcd_store.h, election.h, docs/ha.md).
  std::string store;
  std::string advertise;  // the URL a standby names for this replica when it leads ("": listen)
  ServerOptions state;
  int64_t cycle_interval_ms = 1000;  // at least one cycle this often, besides event triggers
  size_t max_body_bytes = 1 << 20;
  // The most of a pod's log one answer carries (`sluice logs`; longer logs come back as their
  // head and tail with a "[... N bytes cut ...]" line). Held in memory once per request.
  size_t log_max_bytes = 16 << 20;
  // Handler threads. Agents long-poll: a poll parked on the I/O thread holds none; one that had
  // to go to a worker (the state lock was busy, a commit to wait for) holds it while it waits.
  // At most half of them wait at once; a sync beyond that is answered at once, and its agent
  // syncs again a heartbeat later (a short poll): with thousands of nodes, orders reach most
  // nodes at their next heartbeat, and the other half of the threads serve the API
  // (docs/benchmarks.md).
  // Sockets, slow clients and idle keep-alive connections cost no thread (docs/api.md).
  int http_threads = 256;
  // The agents' own lane (register, sync, log uploads): their long polls and the syncs that
  // must wait for the state lock or the store run on these, never behind users' requests
  // (issue 41). At most half of them hold long polls at once.
  int agent_http_threads = 128;
  // Per caller (a token; without tokens the claimed user, else the client address): requests
  // between header and answer (beyond: 429 before the body is read), and handlers running at
  // once (more wait their turn; the workers take the callers in turn). docs/api.md, "Fairness".
  size_t caller_max_in_flight = 32;
  size_t caller_max_running = 8;
  // One I/O thread: it does the socket work of ~20,000 requests/s, and a second one cost ~18 us
  // of CPU per request in hand-offs between the two (measured; docs/api.md).
  int http_io_threads = 1;
  size_t http_max_queued = 4096;
  size_t http_max_connections = 10'000;      // kept below RLIMIT_NOFILE
  size_t http_max_connections_per_ip = 256;  // loopback: only the total cap
  bool quiet = false;
  // The web dashboard's history (dashboard_history.h): a sample this often, the last this many
  // kept (an hour at 5 s).
  int64_t dashboard_sample_ms = 5000;
  size_t dashboard_samples = 720;
  // A request that would change the store is refused (507, nothing changed) while the data
  // directory's file system has less free space than this: a write that fails on a full disk
  // leaves memory ahead of what is on disk. 0: no floor. Not with --store etcd:// (etcd keeps
  // its own quota).
  int64_t min_free_disk_mib = 64;
  // /metrics writes every namespace's series (GPU-seconds, budgets) to anyone, as before issue
  // 41; off: only for the namespaces of the scraper's token (none without one).
  bool public_metrics = false;
};

// The worker pool of the agents' endpoints (net::RouteOptions::lane).
inline constexpr const char* kAgentLane = "agents";

class Server {
 public:
  // store: the store to use (an EtcdStore that leads); null: SqliteStore in data_dir.
  static Result<std::unique_ptr<Server>> create(ServeOptions options,
                                                std::unique_ptr<Store> store = nullptr);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  void start();
  void stop();
  int port() const { return port_; }
  // A replica (a store passed in) whose store failed or lost the leadership: it serves nothing
  // more and should exit, so that another replica (or its restart) leads.
  bool must_step_down() const { return replicated_ && refusing_work(); }
  std::string step_down_reason() const { return refusal(); }
  std::string url() const;
  // Startup messages (recovered jobs, config warnings) for the caller to print.
  const std::vector<std::string>& notes() const { return notes_; }

  // A configuration change: validated first, refused whole (the old one stays) when it is
  // invalid (400) or cannot carry the jobs in flight (409); 200 with its warnings when applied.
  struct ApplyOutcome {
    int status = 200;
    std::string error;
    std::vector<std::string> details;
    std::vector<std::string> warnings;
  };
  ApplyOutcome apply_config(const std::vector<Source>& sources);
  // Re-reads the --config files (SIGHUP, POST /v1/config/reload); 400 when serving the stored
  // configuration (no files were given).
  ApplyOutcome reload_config();

 private:
  Server() = default;
  // create()'s steps (server.cc).
  Result<bool> listen();
  Result<std::shared_ptr<const Config>> open_store(std::unique_ptr<Store> store);
  Result<bool> recover_state(std::shared_ptr<const Config> config);
  // The HTTP API, one file per resource in server/http/ (routes.cc lists them).
  void routes();
  // A route's handler: a member function of this class.
  using Handler = void (Server::*)(const net::Request&, net::Response&);
  auto handler(Handler f) {
    return [this, f](const net::Request& req, net::Response& res) { (this->*f)(req, res); };
  }
  // routes.cc: /healthz, /readyz, /metrics; who calls, which job it may see.
  void routes_health();
  void get_metrics(const net::Request& req, net::Response& res);
  std::string caller_key(const net::RequestHead& h) const;
  // The caller of a /v1 request (its token), or nullopt with a 401 written.
  std::optional<Caller> caller_of(const net::Request& req, net::Response& res) const;
  // The caller when it is an admin, else nullopt with a 401 or a 403 written ("only an admin
  // token may " + what).
  std::optional<Caller> admin_of(const net::Request& req, net::Response& res,
                                 const char* what) const;
  // A job the caller may see (call with the state lock held), or nullptr with a 404 written.
  const JobRecord* visible_job(const Caller& c, const std::string& id_text,
                               net::Response& res) const;
  // jobs.cc: submit, one job, explain, cancel.
  struct Submission;
  struct Admitted;
  void routes_jobs();
  void submit_jobs(const net::Request& req, const net::Responder& r);
  bool parse_submission(const net::Request& req, net::Response& res, Submission* sub);
  std::optional<Admitted> admit_submission(Submission& sub, net::Response& res);
  void answer_submission(const Admitted& a, bool durable, net::Response& res);
  std::vector<JobId> commit_submission(Submission& sub, net::Response& res);
  // Jobs whose submission could not be written, taken back by the scheduling loop (under the
  // state lock, which the store's writer thread does not take).
  void withdraw_later(const std::vector<JobId>& ids);
  void withdraw_now(TimeNs now);  // with the state lock held
  SubmitOutcome name_in_use(const std::vector<Job>& jobs, bool all) const;
  void get_job(const net::Request& req, net::Response& res);
  void explain_job(const net::Request& req, net::Response& res);
  void cancel_job(const net::Request& req, net::Response& res);
  void list_jobs(const Caller& caller, const net::Request& req,
                 net::Response& res);  // jobs_list.cc: GET /v1/jobs
  // jobctl.cc: hold, release, requeue, tty input, history and usage.
  void routes_jobctl();
  void control_job(const net::Request& req, net::Response& res, const std::string& what);
  void type_into_job(const net::Request& req, net::Response& res);
  void get_history(const net::Request& req, net::Response& res);
  void get_usage(const net::Request& req, net::Response& res);
  // logs.cc: pod logs through the agents' channel; readers wait without a thread.
  struct LogReader {
    net::Responder responder;
    std::chrono::steady_clock::time_point deadline;
    std::string node;
    // The Kubernetes API's reader (kube_core.cc): the answer shaped as pods/log's, errors as
    // Status objects (kube::shape_log). -1: no limit.
    bool kube = false;
    int64_t tail_lines = -1;
    int64_t limit_bytes = -1;
    // kubectl logs -f of a running pod (kube_logs.cc): the answer goes to its stream.
    std::shared_ptr<kube::LogFollow> follow = {};
  };
  void routes_logs();
  bool ask_for_log(const net::Request& req, const net::Responder& r, net::Response& res);
  void deliver_log(const net::Request& req, net::Response& res);
  std::optional<LogReader> take_log_reader(uint64_t id);
  void expire_log_readers(bool all);
  // cluster.cc: queues, LocalQueues, nodes, the admin's node verbs.
  void routes_cluster();
  void get_local_queues(const net::Request& req, net::Response& res);
  void reset_node_credential(const net::Request& req, net::Response& res);
  void hold_node(const net::Request& req, net::Response& res);
  void reclaim_node(const net::Request& req, net::Response& res);
  // The node pools' step in the loop (docs/autoscaling.md): results in, calls out.
  void pool_tick(std::unique_lock<std::mutex>& lk, int64_t now, bool look);
  // config.cc: the configuration and the state's export.
  void routes_config();
  // agents.cc: registration, and syncs answered on the I/O thread when nothing blocks.
  struct SyncCall;
  void routes_agents();
  void register_agent(const net::Request& req, net::Response& res);
  enum class SyncStep { kAnswered, kWorker, kParked };
  SyncStep sync_step(const std::shared_ptr<SyncCall>& call, net::Response& res,
                     const net::Responder* io);
  void park_sync(const std::shared_ptr<SyncCall>& call, const net::Responder& r,
                 std::chrono::milliseconds wait);
  void finish_sync(const std::shared_ptr<SyncCall>& call, const net::Responder& r);
  void routes_dashboard();  // dashboard.cc: the web dashboard at /
  // http/kube_*.cc: the Kubernetes API (docs/kubernetes.md). kube_routes.cc: the routes, one
  // request's reading and its dispatch by resource and verb; a page of job records.
  void routes_kube();
  void kube_serve(const net::Request& req, net::Response& res);
  void kube_dispatch(kube::Call& c, net::Response& res);
  std::string kube_scan(const kube::Call& c, const std::function<bool()>& full,
                        const std::function<void(const JobRecord&)>& each) const;
  // The newest job of that name the Kubernetes API shows, or null (call with the state lock).
  const JobRecord* kube_job_named(const std::string& ns, const std::string& name) const;
  // kube_core.cc: namespaces, nodes, pods and their logs.
  void kube_namespaces(const kube::Call& c, net::Response& res);
  void kube_nodes(const kube::Call& c, net::Response& res);
  void kube_pods(const kube::Call& c, net::Response& res);
  void kube_patch_node(const kube::Call& c, net::Response& res);  // cordon, uncordon
  // kube_drain.cc: pods/eviction (kubectl drain). kube_events.cc: events (kubectl describe).
  void kube_evict(const kube::Call& c, net::Response& res);
  void kube_events(const kube::Call& c, net::Response& res);
  // kube_access.cc: SelfSubjectAccessReview and SelfSubjectRulesReview (kubectl auth can-i).
  void kube_access_review(const kube::Call& c, net::Response& res);
  void kube_rules_review(const kube::Call& c, net::Response& res);
  bool kube_ask_log(const net::Request& req, const net::Responder& r, net::Response& res);
  // kube_batch.cc: batch/v1 Jobs: get, list, create (the native submission's path), delete.
  void kube_jobs(const kube::Call& c, net::Response& res);
  void kube_create_job(const kube::Call& c, net::Response& res);
  bool kube_may_write(const kube::Call& c, net::Response& res, bool dry_run = false);
  void kube_delete_job(const kube::Call& c, net::Response& res);
  // kube_job_change.cc: patch (kubectl patch, label, annotate, edit) and update (PUT: kubectl
  // replace) of a job of any of those kinds; both are a change `build` reads under the lock.
  using KubeJobChange = std::function<bool(const JobRecord&, const nlohmann::json& shown,
                                           kube::JobPatch*, net::Response&)>;
  void kube_change_job(const kube::Call& c, net::Response& res,
                       const std::optional<std::string>& precondition, const KubeJobChange& build);
  void kube_patch_job(const kube::Call& c, net::Response& res);
  void kube_update_job(const kube::Call& c, net::Response& res);
  // kube_job_kinds.cc: get and list of JobSets, PyTorchJobs, MPIJobs (created as kube_jobs).
  void kube_kind_jobs(const kube::Call& c, net::Response& res);
  // kube_job_apply.cc: kubectl apply of a Job (its last-applied-configuration, kept with its
  // annotations).
  bool kube_applies(const kube::Call& c) const;
  void kube_apply_job(const kube::Call& c, net::Response& res);
  void kube_ssa_job(const kube::Call& c, net::Response& res);  // kubectl apply --server-side
  // kube_kueue.cc: Workloads, and the configuration's Kueue objects.
  void kube_workloads(const kube::Call& c, net::Response& res);
  void kube_config_objects(const kube::Call& c, net::Response& res);
  // kube_kueue_write.cc: create, update, patch, delete of those (the configuration's path).
  void kube_config_write(const kube::Call& c, net::Response& res);
  void kube_config_change(const kube::Call& c, std::optional<nlohmann::json> body, bool dry_run,
                          net::Response& res);
  void kube_config_commit(const kube::Call& c, const std::string& name, const std::string& key,
                          const std::string& text, bool dry_run, bool created, net::Response& res);
  std::shared_ptr<const kube::ConfigVersions> kube_config_versions();  // under the state lock
  void kube_config_overlay(const kube::ConfigVersions& v, nlohmann::json& built) const;
  // Why a pending job waits, in words (its Workload's QuotaReserved message); "" otherwise.
  std::string kube_why_pending(const JobRecord& r) const;
  // kube_watch.cc, kube_watch_loop.cc: watches (kube_watch.h), fed by watch_thread_.
  void kube_watch(const net::Request& req, const net::Responder& r);
  void kube_watch_loop();
  bool kube_watch_round(std::unique_lock<std::mutex>& lk);
  kube::Built kube_watch_object(const kube::Watch& w, const JobRecord& r, TimeNs now) const;
  bool kube_watch_initial(kube::Watch& w, TimeNs now,
                          std::vector<std::unique_ptr<kube::Built>>& keep,
                          std::vector<std::pair<const char*, const kube::Built*>>& events) const;
  void kube_watch_send(kube::Watch& w, const kube::WatchOut& out);
  // kube_watch_kinds.cc: watches of pods (from their jobs' changes), nodes and Kueue's queues
  // (from snapshots of their lists).
  void kube_watch_snapshots(std::unique_lock<std::mutex>& lk);
  void kube_watch_snapshot(kube::Watch& w, kube::WatchOut& out) const;
  void kube_watch_pods(kube::Watch& w, const ChangeJournal::Change& c, TimeNs now,
                       std::vector<std::unique_ptr<kube::Built>>& keep, kube::WatchOut& out) const;
  void kube_watch_initial_pods(
      kube::Watch& w, const JobRecord& r, TimeNs now,
      std::vector<std::unique_ptr<kube::Built>>& keep,
      std::vector<std::pair<const char*, const kube::Built*>>& events) const;
  // kube_logs.cc: kubectl logs -f of running pods, driven by the watch thread.
  void kube_follow_round();
  void kube_follow_answer(kube::LogFollow& f, int status, const std::string& body, int64_t size);
  // kube_visibility.cc: Kueue's visibility API (pendingworkloads).
  void kube_pending_workloads(const kube::Call& c, net::Response& res);
  void loop();
  void loop_body();
  void kick();
  bool refusing_work() const { return store_failed_ || (store_ && store_->failed()); }
  std::string refusal() const;
  // Whether a change may be written now: 503 when the store failed, 507 when the data
  // directory's disk is below --min-free-disk (the reply is sent). Checked before the state
  // changes, so a refused request changes nothing, in memory or on disk.
  bool may_write(net::Response& res) const;
  int64_t now_ns() const;
  void log(const std::string& line) const;

  ServeOptions options_;
  std::unique_ptr<Store> store_;
  bool replicated_ = false;
  std::unique_ptr<ServerState> state_;
  StartPredictor predictor_;  // start predictions, one replay per scheduling cycle at most
  std::unique_ptr<DashboardHistory> history_;
  AuthConfig auth_;
  std::string config_text_;
  // Kueue's objects in config_text_ and their resourceVersions (under the state lock). Every
  // change of the configuration is one at a time (kube_config_mu_, taken before the state lock):
  // a write through the Kubernetes API reads the text, changes one object and applies the whole,
  // so a PUT /v1/config or a reload in between would be undone.
  std::shared_ptr<const kube::ConfigVersions> kube_config_versions_;
  std::mutex kube_config_mu_;
  // Who replaced the --config files' configuration through the API since it was last read from
  // them ("": nobody); a reload says that it undoes that (under the state lock).
  std::string applied_over_files_;
  std::unique_ptr<net::Server> http_;
  std::string host_;
  int port_ = 0;
  std::vector<std::string> notes_;
  // Submissions parsed at once: each may hold up to ~100 MB of parse trees (docs/api.md,
  // Limits), so memory for parsing stays bounded however many clients send at once; one
  // caller parses one at a time, so the others' submissions find a free slot.
  FairSlots parse_slots_{4, 1};

  std::mutex log_readers_mu_;                  // after the state lock, never before it
  std::map<uint64_t, LogReader> log_readers_;  // by log request; bounded by kMaxLogFetches

  std::mutex watch_mu_;                                    // after the state lock, never before it
  std::vector<std::shared_ptr<kube::Watch>> watches_;      // at most kube::kMaxWatches
  std::shared_ptr<kube::Snapshots> snapshots_;             // the watch thread's only
  std::vector<std::shared_ptr<kube::LogFollow>> follows_;  // under watch_mu_; kMaxWatches
  std::thread watch_thread_;

  // The node pools' provisioner calls, run off the loop (provisioner.h); stopped after it.
  std::unique_ptr<ProvisionRunner> provisioner_;

  std::thread loop_thread_;
  std::mutex loop_mu_;
  std::condition_variable loop_cv_;
  bool kicked_ = false;
  int long_polls_ = 0;  // agents' syncs waiting for work now (under the state lock)
  std::atomic<bool> stop_{false};
  std::atomic<bool> ready_{false};
  std::atomic<bool> store_failed_{false};
  std::mutex withdraw_mu_;
  std::vector<JobId> to_withdraw_;      // withdraw_later()
  std::atomic<bool> tokens_on_{false};  // auth_.enabled(), for the I/O thread (caller_key)
};

// Reads config files and splits off the server-only kinds; used by serve and PUT /v1/config.
struct LoadedConfig {
  std::shared_ptr<const Config> config;
  AuthConfig auth;
  std::string text;  // all sources, concatenated as YAML documents
  std::vector<std::string> warnings;
};
Result<LoadedConfig> load_server_config(const std::vector<Source>& sources);

}  // namespace sluice::server
