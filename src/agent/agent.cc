// The agent's life: create() (options, GPUs, the state directory, the runner, the endpoints),
// start() (its threads) and stop() (drain, final sync).
#include "agent/agent.h"

#include <csignal>
#include <filesystem>
#include <iostream>
#include <random>

#include "agent/proc.h"
#include "net/client.h"
#include "proto/split.h"

namespace sluice::agent {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

namespace {

std::string random_id() {
  std::random_device rd;
  std::uniform_int_distribution<uint64_t> dist;
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(dist(rd)));
  return buf;
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
  const auto listen = parse_listen(options.listen);
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
  if (auto opened = a->open_state(); !opened) return Error{opened.error()};
  if (!a->options_.fencer_exe.empty()) {
    auto fencer = spawn_fencer(a->options_.fencer_exe, a->options_.state_dir);
    if (!fencer) return Error{"agent " + a->options_.node + ": " + fencer.error()};
  }
  // 4. HTTP endpoints: bound now so the address is known before registering (agent_http.cc).
  if (auto bound = a->bind_http(listen->first, listen->second); !bound) return Error{bound.error()};
  return a;
}

// The state directory: pod isolation, the directory's lock and identity, the previous agent's
// lease and unacknowledged exits, and the process runner (which adopts the pods left running).
Result<bool> Agent::open_state() {
  std::error_code ec;
  // Containers get the GPUs' CDI devices; fake GPUs have none.
  options_.isolation.container_gpu_devices = gpus_->kind() != "fake";
  auto isolation = PodIsolation::create(options_.isolation, options_.state_dir,
                                        [this](const std::string& line) { log(line); });
  if (!isolation) return Error{"agent " + options_.node + ": " + isolation.error()};
  isolation_ = std::move(*isolation);
  fs::create_directories(options_.state_dir, ec);
  if (ec) return Error{"cannot create " + options_.state_dir + ": " + ec.message()};
  // The lock first: a second agent on this directory must not adopt the first one's pods.
  auto identity = AgentIdentity::open(options_.state_dir);
  if (!identity) return Error{"agent " + options_.node + ": " + identity.error()};
  identity_.emplace(std::move(*identity));
  lease_file_.emplace(options_.state_dir);
  const auto previous_lease = lease_file_->read();
  load_exits();
  RunnerOptions ro;
  ro.state_dir = options_.state_dir;
  ro.tick_ms = options_.tick_ms;
  ro.gpu_wait_timeout_ms = options_.gpu_wait_timeout_ms;
  ro.keep_finished = options_.keep_finished;
  ro.log_max_bytes = options_.pod_log_max_bytes;
  ro.max_procs = options_.pod_max_procs;
  ro.previous_lease_expired = previous_lease && Clock::now() >= *previous_lease;
  ro.cgroups = isolation_->cgroups();
  ro.on_event = [this] {
    {
      std::lock_guard lock(mu_);
      events_pending_ = true;
    }
    cv_.notify_all();
  };
  ro.log = [this](const std::string& line) { log(line); };
  auto runner = ProcessRunner::create(std::move(ro));
  if (!runner) return Error{runner.error()};
  runner_ = std::move(*runner);
  // The previous agent's lease still holds for the pods it left: once it runs out without a
  // successful sync of ours, they are fenced (at once when it already has).
  if (previous_lease) runner_->set_lease(*previous_lease);
  return true;
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

}  // namespace sluice::agent
