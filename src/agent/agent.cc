// The agent: register, sync loop (reports + long poll for orders), HTTP endpoints.
#include "agent/agent.h"

#include <unistd.h>

#include <csignal>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>

#include "agent/pod_env.h"
#include "agent/proc.h"
#include "agent/server_client.h"
#include "proto/split.h"
#include "secret/secret.h"

extern char** environ;

namespace sluice::agent {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int64_t kMinBackoffMs = 100;
constexpr int64_t kReadMarginS = 10;  // a long poll may take wait_ms plus this
// With several servers (replicas on etcd): a leader silent this long past its long poll (or
// after a registration) is taken for dead (its machine died: nothing refuses the connection) and
// the next server is asked; a live one is found again through the standbys' not_leader answers.
constexpr int64_t kReplicaReadMarginS = 3;

std::string random_id() {
  std::random_device rd;
  std::uniform_int_distribution<uint64_t> dist;
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(dist(rd)));
  return buf;
}

void json_error(net::Response& res, int status, const std::string& msg) {
  res.status = status;
  res.set_content(proto::dump_json(nlohmann::json(proto::ErrorBody{msg, {}})), "application/json");
}

}  // namespace

Result<std::pair<std::string, int>> parse_listen(const std::string& listen) {
  size_t colon = listen.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == listen.size()) {
    return Error{"bad listen address \"" + listen + "\" (want HOST:PORT, e.g. 127.0.0.1:0)"};
  }
  const std::string port_s = listen.substr(colon + 1);
  if (port_s.size() > 5 || port_s.find_first_not_of("0123456789") != std::string::npos) {
    return Error{"bad port in listen address \"" + listen + "\""};
  }
  const int port = std::stoi(port_s);
  if (port > 65535) return Error{"bad port in listen address \"" + listen + "\""};
  return std::make_pair(listen.substr(0, colon), port);
}

Agent::Agent(AgentOptions options) : options_(std::move(options)), agent_id_(random_id()) {}

Result<std::unique_ptr<Agent>> Agent::create(AgentOptions options) {
  // 1. Options.
  if (options.node.empty()) return Error{"agent: a node name is required"};
  if (options.state_dir.empty())
    return Error{"agent " + options.node + ": a state directory is required"};
  if (options.heartbeat_ms <= 0) options.heartbeat_ms = 1000;
  std::vector<std::string> servers = proto::split_list(options.server_url);
  if (servers.empty()) return Error{"agent: a server URL is required"};
  for (const auto& url : servers)
    if (!net::parse_url(url)) return Error{"bad server URL \"" + url + "\""};
  auto listen = parse_listen(options.listen);
  if (!listen) return Error{listen.error()};
  // Absolute: pods get paths into it ($HOME, $SLUICE_CHECKPOINT_FILE) and run elsewhere.
  options.state_dir = fs::absolute(options.state_dir).lexically_normal().string();
  std::unique_ptr<Agent> a(new Agent(std::move(options)));
  a->servers_ = std::move(servers);
  a->heartbeat_ms_ = a->options_.heartbeat_ms;
  // 2. GPUs.
  auto gpus = make_gpu_provider(a->options_.gpus_spec, a->options_.node, a->options_.nvml);
  if (!gpus) return Error{gpus.error()};
  a->gpus_ = std::move(*gpus);
  // 3. State directory, unacknowledged exits of the previous run, adopted pods.
  std::error_code ec;
  // Containers get the GPUs' CDI devices; fake GPUs have none.
  a->options_.isolation.container_gpu_devices = a->gpus_->kind() != "fake";
  auto isolation = PodIsolation::create(a->options_.isolation, a->options_.state_dir,
                                        [&a](const std::string& line) { a->log(line); });
  if (!isolation) return Error{"agent " + a->options_.node + ": " + isolation.error()};
  a->isolation_ = std::move(*isolation);
  fs::create_directories(a->options_.state_dir, ec);
  if (ec) return Error{"cannot create " + a->options_.state_dir + ": " + ec.message()};
  // The lock first: a second agent on this directory must not adopt the first one's pods.
  auto identity = AgentIdentity::open(a->options_.state_dir);
  if (!identity) return Error{"agent " + a->options_.node + ": " + identity.error()};
  a->identity_.emplace(std::move(*identity));
  a->lease_file_.emplace(a->options_.state_dir);
  const auto previous_lease = a->lease_file_->read();
  a->load_exits();
  RunnerOptions ro;
  ro.state_dir = a->options_.state_dir;
  ro.tick_ms = a->options_.tick_ms;
  ro.gpu_wait_timeout_ms = a->options_.gpu_wait_timeout_ms;
  ro.keep_finished = a->options_.keep_finished;
  ro.log_max_bytes = a->options_.pod_log_max_bytes;
  ro.max_procs = a->options_.pod_max_procs;
  ro.previous_lease_expired = previous_lease && Clock::now() >= *previous_lease;
  ro.cgroups = a->isolation_->cgroups();
  Agent* self = a.get();
  ro.on_event = [self] {
    {
      std::lock_guard lock(self->mu_);
      self->events_pending_ = true;
    }
    self->cv_.notify_all();
  };
  ro.log = [self](const std::string& line) { self->log(line); };
  auto runner = ProcessRunner::create(std::move(ro));
  if (!runner) return Error{runner.error()};
  a->runner_ = std::move(*runner);
  // The previous agent's lease still holds for the pods it left: once it runs out without a
  // successful sync of ours, they are fenced (at once when it already has).
  if (previous_lease) a->runner_->set_lease(*previous_lease);
  if (!a->options_.fencer_exe.empty()) {
    auto fencer = spawn_fencer(a->options_.fencer_exe, a->options_.state_dir);
    if (!fencer) return Error{"agent " + a->options_.node + ": " + fencer.error()};
  }
  // 4. HTTP endpoints: bound now so the address is known before registering.
  a->setup_http();
  const auto& [host, port] = *listen;
  auto listening = a->http_->listen(host, port);
  if (!listening) return Error{"agent " + a->options_.node + ": " + listening.error()};
  const int bound = *listening;
  if (!a->options_.advertise.empty()) {
    a->address_ = a->options_.advertise;
  } else {
    std::string h = host;
    if (h == "0.0.0.0" || h == "::" || h.empty()) {
      char name[256] = {};
      h = ::gethostname(name, sizeof name - 1) == 0 ? name : "127.0.0.1";
    }
    a->address_ = "http://" + h + ":" + std::to_string(bound);
  }
  return a;
}

Agent::~Agent() {
  stop();
  runner_.reset();  // before the members its callbacks use
}

void Agent::log(const std::string& line) const {
  if (options_.log) return options_.log(line);
  std::string out = utc_timestamp() + " agent " + options_.node + ": " + line + "\n";
  std::cerr << out << std::flush;
}

void Agent::note_error(const std::string& what) {
  bool fresh = false;
  {
    std::lock_guard lock(mu_);
    ++status_.sync_errors;
    status_.last_error = what;
    fresh = what != last_logged_error_;
    last_logged_error_ = what;
  }
  // The same failure every retry is logged once, until something else happens.
  if (fresh) log(what);
}

AgentStatus Agent::status() const {
  std::lock_guard lock(mu_);
  return status_;
}

void Agent::setup_http() {
  // One I/O thread does the socket work; handlers (log reads of up to kDefaultLogBytes) run on
  // http_threads workers; /healthz answers on the I/O thread even when they are all busy.
  net::ServerOptions ho;
  ho.name = "agent " + options_.node;
  ho.io_threads = 1;
  ho.workers = std::max(1, options_.http_threads);
  ho.max_queued = 256;
  ho.max_body_bytes = 1 << 20;
  ho.log = [this](const std::string& line) { log(line); };
  http_ = std::make_unique<net::Server>(std::move(ho));
  auto& s = *http_;
  s.Get("/healthz",
        [](const net::Request&, net::Response& res) { res.set_content("ok", "text/plain"); },
        {.run_inline = true});
  // The node's credential: the agent's own administrator (root on the node) may look; pods
  // and other users may not (docs/agent.md, "Trust model").
  s.Get(R"(/v1/logs/(\d{1,19})/(\d{1,9}))", [this](const net::Request& req, net::Response& res) {
    if (!authorized(req, identity_->credential()))
      return json_error(res, 401, "this endpoint needs the node's credential");
    const proto::PodRef ref{std::stoull(req.matches[1].str()), std::stoi(req.matches[2].str())};
    int64_t tail = 0;
    if (req.has_param("tail_bytes")) {
      const std::string t = req.get_param_value("tail_bytes");
      if (t.empty() || t.size() > 12 || t.find_first_not_of("0123456789") != std::string::npos) {
        return json_error(res, 400, "tail_bytes must be a non-negative integer");
      }
      tail = std::stoll(t);
    }
    proto::LogRequest part;
    part.tail_bytes = tail;
    PodLog out = pod_log(ref, part);
    res.status = out.status;
    res.set_content(std::move(out.body), out.content_type);
  });
  // A pod reports its own checkpoint with its own token (SLUICE_CHECKPOINT_TOKEN).
  s.Post(R"(/v1/checkpoint/(\d{1,19})/(\d{1,9}))", [this](const net::Request& req,
                                                          net::Response& res) {
    const proto::PodRef ref{std::stoull(req.matches[1].str()), std::stoi(req.matches[2].str())};
    if (!authorized(req, identity_->checkpoint_token(ref)))
      return json_error(res, 401,
                        "a checkpoint report needs the pod's own $SLUICE_CHECKPOINT_TOKEN");
    if (!runner_->report_checkpoint(ref)) {
      return json_error(res, 404,
                        "job " + std::to_string(ref.job) + " pod " + std::to_string(ref.pod) +
                            " does not run on node " + options_.node);
    }
    res.set_content(R"({"ok":true})", "application/json");
  });
  s.Get("/v1/pods", [this](const net::Request& req, net::Response& res) {
    if (!authorized(req, identity_->credential()))
      return json_error(res, 401, "this endpoint needs the node's credential");
    res.set_content(proto::dump_json(nlohmann::json(runner_->running())), "application/json");
  });
}

bool Agent::authorized(const net::Request& req, const std::string& token) const {
  return secret::same(secret::bearer(req.get_header_value("Authorization")), token);
}

void Agent::start() {
  {
    std::lock_guard lock(mu_);
    if (started_threads_ || stopped_) return;
    started_threads_ = true;
  }
  http_->start();
  sync_thread_ = std::thread([this] { guarded("sync loop", [this] { sync_loop(); }); });
  if (options_.report_during_poll)
    report_thread_ = std::thread([this] { guarded("report loop", [this] { report_loop(); }); });
  log_thread_ = std::thread([this] { guarded("log uploads", [this] { log_loop(); }); });
  if (servers_.size() > 1)
    watch_thread_ = std::thread([this] { guarded("leader watch", [this] { watch_loop(); }); });
  log("started: " + std::to_string(gpus().size()) + " GPUs (" + gpus_->kind() + "), endpoints at " +
      address_ + ", server " + server() + ", state in " + options_.state_dir);
}

void Agent::stop() {
  bool had_threads = false;
  {
    std::lock_guard lock(mu_);
    if (stopped_) return;
    stopped_ = true;
    quit_ = true;
    had_threads = started_threads_;
    if (in_flight_) in_flight_->cancel();  // cut a long poll short
    if (report_in_flight_) report_in_flight_->cancel();
  }
  cv_.notify_all();
  log_cv_.notify_all();
  if (sync_thread_.joinable()) sync_thread_.join();
  if (report_thread_.joinable()) report_thread_.join();
  if (log_thread_.joinable()) log_thread_.join();
  if (watch_thread_.joinable()) watch_thread_.join();
  if (options_.drain && runner_) {
    const auto pods = runner_->running().size();
    log("draining " + std::to_string(pods) + " pods");
    runner_->stop_all(SIGTERM, options_.drain_grace_ms, "stopped");
    if (!runner_->wait_idle(milliseconds(options_.drain_grace_ms + 5000)))
      log("drain: some pods are still running");
    if (had_threads) final_sync();
  }
  if (http_) http_->stop();  // closes connections, joins its threads
  if (runner_) {             // null when create() failed half way
    take_runner_events();
    save_exits();
  }
  if (had_threads)
    log(options_.drain ? "stopped (pods drained)"
                       : "stopped (pods keep running; the next agent on " + options_.state_dir +
                             " adopts them)");
}

std::string Agent::server() const {
  return servers_[server_at_ % servers_.size()];
}

std::unique_ptr<net::Client> Agent::make_client() const {
  return std::make_unique<net::Client>(
      server(), net::ClientOptions{.connect_timeout = std::chrono::seconds(2),
                                   .write_timeout = std::chrono::seconds(10)});
}

void Agent::wait_for_work(milliseconds d) {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, d, [&] { return quit_ || events_pending_; });
}

void Agent::sleep_unless_quit(milliseconds d) {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, d, [&] { return quit_; });
}

// A loop thread must outlive any one fault (a bug; replies are parsed with their errors
// caught): the exception is logged and the loop starts again after a second.
void Agent::guarded(const char* what, const std::function<void()>& loop) {
  for (;;) {
    try {
      loop();
      return;  // it ends only when the agent stops
    } catch (const std::exception& e) {
      log(std::string("internal error in the ") + what + ": " + e.what() + "; restarting it");
    }
    sleep_unless_quit(milliseconds(1000));
    std::lock_guard lock(mu_);
    if (quit_) return;
  }
}

// Clears the pointer that stop() uses to cut a request short, before the client it points to
// is destroyed (also when the loop leaves by an exception).
struct Agent::InFlight {
  Agent& agent;
  net::Client*& slot;
  InFlight(Agent& a, net::Client*& s, net::Client* cli) : agent(a), slot(s) {
    std::lock_guard lock(agent.mu_);
    slot = cli;
  }
  ~InFlight() {
    std::lock_guard lock(agent.mu_);
    slot = nullptr;
  }
  void set(net::Client* cli) {
    std::lock_guard lock(agent.mu_);
    slot = cli;
  }
};

void Agent::sync_loop() {
  auto cli = make_client();
  size_t at = server_at_;
  InFlight in_flight(*this, in_flight_, cli.get());
  // A failed request may have moved to another server (follow_leader): a client for it.
  auto follow = [&] {
    if (server_at_ == at) return;
    at = server_at_;
    auto next = make_client();
    in_flight.set(next.get());
    cli = std::move(next);
  };
  int64_t backoff_ms = kMinBackoffMs;
  size_t failed = 0;    // requests failed since the last that succeeded
  bool jumped = false;  // the last request went where a standby named the leader, at once
  auto back_off = [&] {
    // Where a standby named the leader: at once (once: two standbys that name each other do
    // not make a loop without delays).
    if (named_leader_.exchange(false) && !jumped) {
      jumped = true;
      return;
    }
    jumped = false;
    sleep_unless_quit(milliseconds(backoff_ms));
    // With replicas, the delay grows once per round over all of them, not per server tried:
    // during a failover the next one may lead already (the agent reaches the new leader
    // within a few hundred ms of its election, docs/ha.md).
    // Capped at 1 s then: a replica's leadership can be short when several fail in a row,
    // and an agent silent for --agent-timeout has its jobs requeued.
    if (++failed % servers_.size() != 0) return;
    const int64_t cap = servers_.size() > 1 ? std::min<int64_t>(options_.max_backoff_ms, 1000)
                                            : options_.max_backoff_ms;
    backoff_ms = std::min(backoff_ms * 2, std::max<int64_t>(cap, kMinBackoffMs));
  };
  for (;;) {
    {
      std::lock_guard lock(mu_);
      if (quit_) break;
    }
    bool registered = false;
    {
      std::lock_guard lock(mu_);
      registered = status_.registered;
    }
    // 1. (Re-)register: first start, server restart (sync 404), or after errors.
    if (!registered) {
      if (!do_register(*cli, at)) {
        follow();
        back_off();
        continue;
      }
      backoff_ms = kMinBackoffMs;
      failed = 0;
    }
    // 2. Sync: reports at once (wait_ms 0) when there are any, else a long poll.
    take_runner_events();
    const bool reports = has_reports();
    int64_t hb = 0;
    {
      std::lock_guard lock(mu_);
      hb = heartbeat_ms_;
    }
    const int64_t wait_ms = reports ? 0 : (options_.long_poll_ms > 0 ? options_.long_poll_ms : hb);
    const auto t0 = Clock::now();
    bool work = false;
    {
      std::lock_guard lock(mu_);
      polling_ = wait_ms > 0;
      poll_since_ = t0;
    }
    const bool ok = do_sync(*cli, at, wait_ms, reports, &work);
    {
      std::lock_guard lock(mu_);
      polling_ = false;
    }
    if (!ok) {
      follow();
      back_off();
      continue;
    }
    backoff_ms = kMinBackoffMs;
    failed = 0;
    // 3. A server that answers an idle long poll at once must not make us spin: wait out the
    //    heartbeat unless a pod starts or ends meanwhile.
    const auto elapsed = std::chrono::duration_cast<milliseconds>(Clock::now() - t0).count();
    if (!work && wait_ms > 0 && elapsed < wait_ms / 2) wait_for_work(milliseconds(hb - elapsed));
  }
}

bool Agent::has_reports() {
  std::lock_guard reports_lock(reports_mu_);
  return !exits_.empty() || !started_.empty() || !checkpoints_.empty();
}

// While the sync loop sits in a long poll, a pod that starts or ends is reported at once by a
// short sync of its own (the server applies reports on arrival and lets either reply carry the
// node's orders). Only one report-carrying sync is in flight at a time (reports_mu_).
void Agent::report_loop() {
  // The server must have read the long poll before a newer report overtakes it.
  constexpr auto kSettle = milliseconds(20);
  auto cli = make_client();
  size_t at = server_at_;
  InFlight in_flight(*this, report_in_flight_, cli.get());
  for (;;) {
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return quit_ || (events_pending_ && polling_ && status_.registered); });
      if (quit_) break;
      if (Clock::now() < poll_since_ + kSettle) {
        cv_.wait_until(lock, poll_since_ + kSettle, [&] { return quit_; });
        if (quit_) break;
      }
      if (options_.report_delay_ms > 0) {
        cv_.wait_for(lock, milliseconds(options_.report_delay_ms), [&] { return quit_; });
        if (quit_) break;
      }
      if (!polling_) continue;  // the sync loop is back and will carry the reports itself
    }
    take_runner_events();
    if (!has_reports()) continue;
    if (at != server_at_) {  // the sync loop moved to another server
      at = server_at_;
      auto next = make_client();
      in_flight.set(next.get());
      cli = std::move(next);
    }
    bool work = false;
    if (!do_sync(*cli, at, 0, /*carry=*/true, &work))
      sleep_unless_quit(milliseconds(kMinBackoffMs));
    if (work) cv_.notify_all();
  }
}

bool Agent::do_register(net::Client& cli, size_t at) {
  proto::RegisterRequest req;
  req.node = options_.node;
  req.address = address_;
  req.gpus = gpus_->gpus();
  req.cpu_milli =
      options_.cpu_milli > 0 ? options_.cpu_milli : int64_t{::sysconf(_SC_NPROCESSORS_ONLN)} * 1000;
  req.memory_mib = options_.memory_mib > 0 ? options_.memory_mib
                                           : int64_t{::sysconf(_SC_PHYS_PAGES)} *
                                                 ::sysconf(_SC_PAGESIZE) / (1024 * 1024);
  req.running = runner_->running();
  req.agent_id = agent_id_;
  req.credential = identity_->credential();
  req.container_runtime = isolation_->container_runtime();
  cli.options().read_timeout =
      std::chrono::seconds(servers_.size() > 1 ? kReplicaReadMarginS : kReadMarginS);
  const std::string body = proto::dump_json(nlohmann::json(req));
  // 1. As the node (its credential); 2. a node the server does not know yet joins with the
  //    join token, and the credential it brings becomes the node's.
  const auto sent = Clock::now();
  std::optional<Awaiting> awaiting(std::in_place, *this, at, sent);
  auto res =
      cli.post("/v1/agents/register", body, "application/json", bearer(identity_->credential()));
  if (res && res->status == 401 && error_code(res) == "no-node-credential") {
    if (options_.join_token.empty()) {
      note_error("register at " + servers_[at] + " failed: " + error_text(res) +
                 "; this agent has no join token (--join-token-file or $SLUICE_JOIN_TOKEN)");
      return false;
    }
    res = cli.post("/v1/agents/register", body, "application/json", bearer(options_.join_token));
  }
  awaiting.reset();
  if (!res || res->status != 200) {
    note_error("register at " + servers_[at] + " failed: " + error_text(res));
    follow_leader(res, at);
    return false;
  }
  proto::RegisterResponse resp;
  try {
    resp = nlohmann::json::parse(res->body).get<proto::RegisterResponse>();
  } catch (const std::exception& e) {
    note_error(std::string("register: bad response: ") + e.what());
    return false;
  }
  {
    std::lock_guard lock(mu_);
    status_.registered = true;
    ++status_.registrations;
    if (resp.heartbeat_ms > 0) heartbeat_ms_ = resp.heartbeat_ms;
    lease_ms_ = std::max<int64_t>(resp.lease_ms, 0);
    registered_sent_ = sent;
    last_logged_error_.clear();
  }
  renew_lease(sent);
  log("registered with " + servers_[at] + ": " + std::to_string(req.gpus.size()) + " GPUs, " +
      std::to_string(req.running.size()) + " running pods, heartbeat " +
      std::to_string(resp.heartbeat_ms) + " ms");
  apply_stops(resp.stop);
  return true;
}

// GPU utilisation for a sync: sampled at most once a second (NVML takes the device lock).
std::vector<int32_t> Agent::sample_utilization() {
  std::lock_guard lock(util_mu_);
  const auto now = std::chrono::steady_clock::now();
  if (now - util_at_ >= std::chrono::seconds(1)) {
    util_ = gpus_->utilization_pct();
    util_at_ = now;
  }
  return util_;
}

bool Agent::do_sync(net::Client& cli, size_t at, int64_t wait_ms, bool carry, bool* work) {
  std::unique_lock reports_lock(reports_mu_, std::defer_lock);
  proto::SyncRequest req;
  req.agent_id = agent_id_;
  req.running = runner_->running();
  if (carry) {
    reports_lock.lock();
    req.exits = exits_;
    req.started = started_;
    req.checkpoints = checkpoints_;
  }
  req.wait_ms = wait_ms;
  req.gpu_utilization_pct = sample_utilization();
  cli.options().read_timeout = std::chrono::seconds(
      wait_ms / 1000 + (servers_.size() > 1 ? kReplicaReadMarginS : kReadMarginS));
  const auto sent = Clock::now();
  std::optional<Awaiting> awaiting(std::in_place, *this, at, sent + milliseconds(wait_ms));
  auto res =
      cli.post("/v1/agents/" + options_.node + "/sync", proto::dump_json(nlohmann::json(req)),
               "application/json", bearer(identity_->credential()));
  awaiting.reset();
  if (res && (res->status == 404 || res->status == 401)) {
    // The server does not know us (it restarted, forgot the node, or lost its credential):
    // register again, with the pods we run; the reports stay queued for the next sync.
    log("server answered " + std::to_string(res->status) + " to sync: registering again");
    std::lock_guard lock(mu_);
    status_.registered = false;
    return false;
  }
  if (!res || res->status != 200) {
    note_error("sync with " + servers_[at] + " failed: " + error_text(res));
    follow_leader(res, at);
    return false;
  }
  proto::SyncResponse resp;
  try {
    resp = nlohmann::json::parse(res->body).get<proto::SyncResponse>();
  } catch (const std::exception& e) {
    note_error(std::string("sync: bad response: ") + e.what());
    return false;
  }
  // Delivered: drop what this request carried (newer reports were appended after it).
  if (!reports_lock.owns_lock()) reports_lock.lock();
  exits_.erase(exits_.begin(), exits_.begin() + static_cast<std::ptrdiff_t>(req.exits.size()));
  started_.erase(started_.begin(),
                 started_.begin() + static_cast<std::ptrdiff_t>(req.started.size()));
  checkpoints_.erase(checkpoints_.begin(),
                     checkpoints_.begin() + static_cast<std::ptrdiff_t>(req.checkpoints.size()));
  if (!req.exits.empty()) save_exits();
  {
    std::lock_guard lock(mu_);
    ++status_.syncs;
    status_.unacked_exits = exits_.size();
    if (resp.heartbeat_ms > 0) heartbeat_ms_ = resp.heartbeat_ms;
    if (!last_logged_error_.empty()) {
      last_logged_error_.clear();
      status_.last_error.clear();
    }
  }
  renew_lease(sent);
  // Stops first: an assignment in the same reply may need the GPUs a stopped pod frees. A stale
  // reply (applied after the lease its request would have renewed ran out: the agent was
  // frozen, or the reply sat in a stalled link; or to a request sent before the agent
  // registered again) starts nothing: the server may have run those pods elsewhere meanwhile
  // (found by tests/chaos).
  apply_stops(resp.stop);
  apply_assignments(resp.assign, reply_is_stale(sent));
  upload_logs(resp.logs);
  apply_tty(resp.tty);
  // A reply that carried anything is not an idle one: the next poll goes out at once (a user
  // following a log or typing into a terminal waits for it).
  *work = !resp.stop.empty() || !resp.assign.empty() || !resp.logs.empty() || !resp.tty.empty();
  return true;
}

void Agent::final_sync() {
  std::lock_guard reports_lock(reports_mu_);
  take_runner_events();
  if (exits_.empty() && started_.empty() && checkpoints_.empty()) return;
  auto cli = make_client();
  proto::SyncRequest req;
  req.agent_id = agent_id_;
  req.running = runner_->running();
  req.exits = exits_;
  req.started = started_;
  req.checkpoints = checkpoints_;
  cli->options().read_timeout = std::chrono::seconds(kReadMarginS);
  auto res =
      cli->post("/v1/agents/" + options_.node + "/sync", proto::dump_json(nlohmann::json(req)),
                "application/json", bearer(identity_->credential()));
  if (res && res->status == 200) {
    exits_.clear();
    started_.clear();
    checkpoints_.clear();
    // Orders in this reply are not applied: the agent is going away.
  } else {
    log("final sync failed (" + error_text(res) + "); " + std::to_string(exits_.size()) +
        " exits stay in " + options_.state_dir + "/exits.json for the next start");
  }
}

}  // namespace sluice::agent
