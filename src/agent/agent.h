#pragma once
// The node agent as a library: `sluice agent` runs one (or one per --names entry), `sluice up`
// embeds one next to the server, and benchmarks run many in one process.
//
//   auto agent = Agent::create({.server_url = "http://127.0.0.1:7070", .node = "n1",
//                               .gpus_spec = "fake:8xH100", .state_dir = "/tmp/n1"});
//   if (!agent) { print(agent.error()); return 1; }
//   (*agent)->start();   // register + sync loop, HTTP endpoints, process supervision
//   ...
//   (*agent)->stop();    // pods keep running unless options.drain
//
// The Agent's members by concept:
//   agent.cc           create() (options, GPUs, state directory, runner), start(), stop()
//   agent_http.cc      its own HTTP endpoints (setup_http, bind_http)
//   agent_register.cc  registration with the server (node credential, join token)
//   agent_sync.cc      the sync and report loops, the final sync of a drain
//   agent_orders.cc    stop orders and assignments from sync replies
//   agent_lease.cc     the node's lease, stale replies
//   agent_exits.cc     reports: runner events, unstarted pods, exits.json
//   agent_logs.cc      pod logs for the server, terminal input
//   leader_watch.cc    following the leader among replicas
//
// Threads per agent: one sync loop, one reporter (see report_during_poll), a leader watch with
// several server URLs (leader_watch.h), one process supervisor, the HTTP server's I/O thread
// and its small worker pool (http_threads; src/net: slow or idle connections hold no thread,
// /healthz answers on the I/O thread).
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "agent/fence.h"
#include "agent/gpu.h"
#include "agent/identity.h"
#include "agent/isolation.h"
#include "agent/process_runner.h"
#include "core/model/result.h"
#include "net/http_server.h"
#include "proto/protocol.h"

namespace sluice::net {
class Client;
class ClientResult;
}  // namespace sluice::net

namespace sluice::agent {

struct AgentOptions {
  // Replicas (docs/ha.md): several URLs, comma-separated; the agent talks to one and moves to
  // the next when it cannot reach it or it answers as a standby (503 not_leader).
  std::string server_url = "http://127.0.0.1:7070";
  std::string node;                    // required
  std::string gpus_spec = "auto";      // "auto" (NVML), "fake:SPEC" or "none"
  std::string state_dir;               // required: logs/, work/, pods.json, exits.json
  std::string listen = "127.0.0.1:0";  // the agent's own HTTP server; port 0: any free port
  std::string advertise;               // address sent to the server; default http://<listen>
  // Bootstraps the node's identity at its first registration (identity.h); later requests
  // carry the node's credential. Never from the command line (docs/agent.md).
  std::string join_token;
  // `sluice` binary to run the fencer with (fence.h); "" = no fencer (tests, benchmarks).
  std::string fencer_exe;
  int64_t heartbeat_ms = 1000;  // until the server's RegisterResponse says otherwise
  int64_t long_poll_ms = 0;     // wait_ms of an idle sync; 0: the heartbeat
  bool drain = false;           // stop(): end the pods (SIGTERM, drain_grace_ms, SIGKILL)
  int64_t drain_grace_ms = 10'000;
  int64_t cpu_milli = 0;  // reported capacity; 0: this machine's
  int64_t memory_mib = 0;
  int64_t tick_ms = 50;  // process supervision period
  int64_t gpu_wait_timeout_ms = 60'000;
  int64_t max_backoff_ms = 5'000;  // retry delay cap while the server is unreachable
  int http_threads = 2;
  // Deliver a start or an exit that happens during a long poll at once, with a second short
  // sync, instead of when the long poll returns (at most one heartbeat later).
  bool report_during_poll = true;
  // ... after gathering for this long: one sync then carries the exits of a whole wave of pods
  // (each report-carrying sync costs the server a durable commit).
  int64_t report_delay_ms = 50;
  int64_t keep_finished = 1000;                    // RunnerOptions::keep_finished
  int64_t pod_log_max_bytes = int64_t{256} << 20;  // RunnerOptions::log_max_bytes
  int64_t pod_max_procs = 16384;                   // RunnerOptions::max_procs
  NvmlOptions nvml;
  IsolationOptions isolation;  // users, sandbox, cgroups of the pods (isolation.h)
  // One line per call; nullptr: "<time> agent <node>: <line>" on stderr.
  std::function<void(const std::string&)> log;
};

struct AgentStatus {
  bool registered = false;
  uint64_t registrations = 0;  // successful registers (more than one: the server restarted)
  uint64_t syncs = 0;          // successful syncs
  uint64_t sync_errors = 0;    // failed requests (connection, 5xx, bad bodies)
  size_t unacked_exits = 0;
  std::string last_error;
};

class Agent {
 public:
  // Discovers the GPUs, prepares the state directory, adopts pods left running by a previous
  // agent on the same state dir, and binds the HTTP endpoints. Nothing talks to the server yet.
  static Result<std::unique_ptr<Agent>> create(AgentOptions options);
  ~Agent();  // stop()
  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;

  void start();
  // Stops syncing and serving. With options.drain, first ends every pod and reports the exits
  // (one last sync). Without it the pods keep running and the next agent adopts them.
  // Idempotent.
  void stop();

  const std::string& address() const { return address_; }
  const std::string& node() const { return options_.node; }
  const std::vector<proto::AgentGpu>& gpus() const { return gpus_->gpus(); }
  AgentStatus status() const;
  ProcessRunner& runner() { return *runner_; }

 private:
  explicit Agent(AgentOptions options);
  Result<bool> open_state();  // create(), step 3
  // create(), step 4: the endpoints (setup_http()) listen on host:port; address_ is known.
  Result<bool> bind_http(const std::string& host, int port);
  // Retry delay and read margins of the requests to the server.
  static constexpr int64_t kMinBackoffMs = 100;
  static constexpr int64_t kReadMarginS = 10;  // a long poll may take wait_ms plus this
  // With several servers (replicas on etcd): a leader silent this long past its long poll (or
  // after a registration) is taken for dead (its machine died: nothing refuses the connection)
  // and the next server is asked; a live one is found again through the standbys' not_leader
  // answers.
  static constexpr int64_t kReplicaReadMarginS = 3;
  int64_t read_margin_s() const { return servers_.size() > 1 ? kReplicaReadMarginS : kReadMarginS; }
  void sync_loop();
  struct Backoff;
  bool sync_round(net::Client& cli, size_t at);
  void guarded(const char* what, const std::function<void()>& loop);
  struct InFlight;
  // cli talks to servers_[at].
  bool do_register(net::Client& cli, size_t at);
  // One sync; false when it failed (the caller backs off). *work: it delivered orders.
  // carry: send the queued reports (and hold reports_mu_ for the whole request, so that two
  // report-carrying syncs never overlap and each acknowledges exactly what it sent).
  bool do_sync(net::Client& cli, size_t at, int64_t wait_ms, bool carry, bool* work);
  // With several servers: goes to another one when the current one is silent past due and
  // another replica leads (leader_watch.cc).
  void watch_loop();
  struct Awaiting;
  void report_loop();
  bool has_reports();
  void final_sync();
  void apply_stops(const std::vector<proto::StopOrder>& stops);
  // stale: the reply came after the lease its request would have renewed ran out: nothing is
  // started, each is reported fenced.
  void apply_assignments(const std::vector<proto::Assignment>& assign, bool stale = false);
  void take_runner_events();
  void save_exits();
  std::vector<int32_t> sample_utilization();
  // Right-sizing (agent_gpu_use.cc): a pod's GPUs from its assignment, its samples since the
  // last delivered report, taken into a sync and put back when the sync fails.
  void track_gpu_use(proto::PodRef ref, uint64_t run, const std::vector<int32_t>& gpus);
  std::vector<proto::PodGpuUse> take_gpu_use(const std::vector<proto::RunningPod>& running,
                                             const std::vector<proto::PodExit>& exits);
  void restore_gpu_use(const std::vector<proto::PodGpuUse>& taken);
  void load_exits();
  void wait_for_work(std::chrono::milliseconds d);
  void sleep_unless_quit(std::chrono::milliseconds d);
  std::unique_ptr<net::Client> make_client() const;
  // The server URL requests go to now (one of options_.server_url's).
  std::string server() const;
  // After a failed request to servers_[at]: moves to the next server URL when this one is
  // unreachable or a standby (true: the caller makes a new client), unless another thread
  // moved away from it already. When the standby named the leader, the next request goes
  // there without the back-off (named_leader_).
  bool follow_leader(const net::ClientResult& res, size_t at);
  void renew_lease(std::chrono::steady_clock::time_point sent);
  // An exit for a pod this agent never started (reports_mu_ held): queued, saved, sent.
  void report_unstarted(proto::PodRef ref, uint64_t run, const std::string& reason,
                        std::string message);
  // Whether the reply to a request sent at `sent` is stale: the lease it would renew has run
  // out, or the agent registered again after sending it.
  bool reply_is_stale(std::chrono::steady_clock::time_point sent) const;
  void upload_logs(const std::vector<proto::LogRequest>& logs);  // agent_logs.cc
  // Keystrokes and window sizes for interactive pods' terminals (agent_logs.cc).
  void apply_tty(const std::vector<proto::TtyInput>& input);
  struct PodLog {
    int status = 200;
    std::string body;
    std::string content_type;
    int64_t size = -1;  // the log file's size (200 only)
  };
  // One answer's cap: the server's (serve --log-max-bytes) within kMaxLogBytes; its default
  // where it names none (older servers, the agent's own /v1/logs).
  static constexpr int64_t kMaxLogBytes = int64_t{1} << 30;
  static constexpr int64_t kDefaultLogBytes = 16 << 20;
  PodLog pod_log(proto::PodRef ref, const proto::LogRequest& part) const;
  void log_loop();
  bool authorized(const net::Request& req, const std::string& token) const;
  void log(const std::string& line) const;
  void note_error(const std::string& what);
  void setup_http();

  AgentOptions options_;
  std::string agent_id_;
  std::optional<AgentIdentity> identity_;  // the state dir's lock, credential, pod-token key
  std::optional<LeaseFile> lease_file_;
  int64_t lease_ms_ = 0;  // from the server's RegisterResponse; 0: no lease (no fencing)
  std::chrono::steady_clock::time_point registered_sent_{};  // the last registration's request
  // Log requests from sync replies, posted back by log_thread_ (bounded: kMaxQueuedLogs).
  std::deque<proto::LogRequest> log_queue_;  // guarded by mu_
  std::condition_variable log_cv_;           // its own: runner events must not wake the uploader
  std::thread log_thread_;
  std::string address_;
  std::unique_ptr<GpuProvider> gpus_;
  std::unique_ptr<PodIsolation> isolation_;
  std::unique_ptr<ProcessRunner> runner_;
  std::unique_ptr<net::Server> http_;
  std::thread sync_thread_;

  // Reports not yet acknowledged by a successful sync, guarded by reports_mu_ (recursive: a
  // report-carrying sync holds it while it applies the orders of its reply).
  std::recursive_mutex reports_mu_;
  std::vector<proto::PodExit> exits_;
  std::mutex util_mu_;  // the last utilisation sample and when it was taken
  std::vector<int32_t> util_;
  std::chrono::steady_clock::time_point util_at_{};
  struct GpuUseAcc {
    uint64_t run = 0;
    std::vector<int32_t> gpus;
    proto::PodGpuUse pending;  // samples not yet delivered
  };
  std::mutex use_mu_;  // guards use_ and use_at_
  std::map<proto::PodRef, GpuUseAcc> use_;
  std::chrono::steady_clock::time_point use_at_{};
  StateFile exits_file_{options_.state_dir + "/exits.json"};
  std::vector<proto::StartedPod> started_;
  std::vector<proto::CheckpointReport> checkpoints_;

  mutable std::mutex mu_;
  std::condition_variable cv_;  // runner events and stop() wake the sync loop
  bool events_pending_ = false;
  bool quit_ = false;
  bool started_threads_ = false;
  bool stopped_ = false;
  int64_t heartbeat_ms_ = 1000;
  AgentStatus status_;
  std::string last_logged_error_;
  std::vector<std::string> servers_;       // options_.server_url, split at commas
  std::atomic<size_t> server_at_{0};       // the index of server()
  std::atomic<size_t> left_at_{SIZE_MAX};  // the server follow_leader() left last
  std::atomic<bool> named_leader_{false};  // follow_leader() went where a standby said
  net::Client* in_flight_ = nullptr;       // the sync loop's client, so stop() can cut a long poll
  net::Client* report_in_flight_ = nullptr;
  bool polling_ = false;  // a long poll is in flight, since poll_since_
  std::chrono::steady_clock::time_point poll_since_;
  std::thread report_thread_;
  // Requests in flight: the server index each went to and when its answer is due (mu_).
  std::list<std::pair<size_t, std::chrono::steady_clock::time_point>> awaiting_;
  std::thread watch_thread_;  // watch_loop(), with several servers
};

struct Agent::Awaiting {
  Agent& agent;
  decltype(Agent::awaiting_)::iterator it;
  Awaiting(Agent& a, size_t at, std::chrono::steady_clock::time_point due);
  ~Awaiting();
};

// "HOST:PORT" -> host, port. Error for anything else.
Result<std::pair<std::string, int>> parse_listen(const std::string& listen);

}  // namespace sluice::agent
