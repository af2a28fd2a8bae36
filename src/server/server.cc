#include "server/server.h"

#include <sys/statvfs.h>

#include <chrono>
#include <cstdio>
#include <ctime>

#include "core/scale/autoscaler.h"
#include "secret/secret.h"
#include "server/http/reply.h"

namespace sluice::server {

Result<LoadedConfig> load_server_config(const std::vector<Source>& sources) {
  LoadOptions lo;
  lo.ignore_kinds = {"ServerAuth"};
  auto out = load(sources, lo);
  if (!out.ok()) {
    std::string msg;
    for (const auto& e : out.errors) msg += (msg.empty() ? "" : "\n") + e;
    return Error{msg};
  }
  // The pools' nodes join the cluster, NotReady until an agent registers them
  // (docs/autoscaling.md).
  for (const NodePool& pool : out.config.node_pools)
    for (int32_t k = 0; k < pool.max_nodes; ++k)
      for (const Node& n : out.config.cluster.nodes)
        if (n.name == pool.name_prefix + std::to_string(k))
          return Error{"NodePool " + pool.name + ": its node " + n.name +
                       " is also a Cluster node: give the pool another namePrefix"};
  scale::add_pool_nodes(out.config.node_pools, out.config.cluster);
  if (out.config.cluster.nodes.empty())
    return Error{
        "the configuration has no Cluster nodes: the server places pods on the nodes "
        "it lists (kind: Cluster, docs/config.md)"};
  if (!out.jobs.empty())
    return Error{"the configuration contains " + std::to_string(out.jobs.size()) +
                 " job document(s); submit jobs with `sluice submit` instead"};
  auto auth = parse_auth(sources);
  if (!auth) return Error{auth.error()};
  LoadedConfig lc;
  lc.warnings = out.config.warnings;
  // Consolidation moves running work: the simulator does it, the server does not yet
  // (docs/autoscaling.md, "Not done yet"); say so rather than ignore it silently.
  for (const NodePool& pool : out.config.node_pools)
    if (pool.consolidation.after_ns > 0)
      lc.warnings.push_back("NodePool " + pool.name +
                            ": spec.consolidation acts in the simulator only; sluice serve "
                            "empties no busy node (docs/autoscaling.md)");
  lc.config = std::make_shared<const Config>(std::move(out.config));
  lc.auth = std::move(*auth);
  for (const auto& s : sources) {
    lc.text += "# source: " + s.name + "\n" + s.text;
    if (!s.text.empty() && s.text.back() != '\n') lc.text += '\n';
    lc.text += "---\n";
  }
  return lc;
}

Result<std::unique_ptr<Server>> Server::create(ServeOptions options, std::unique_ptr<Store> store) {
  std::unique_ptr<Server> s(new Server());
  s->options_ = std::move(options);
  // 1. Listen (before the state is loaded: a client that connects meanwhile, such as an agent
  // that follows a new leader of replicas on etcd, waits in the backlog until start()).
  if (auto ok = s->listen(); !ok) return Error{ok.error()};
  // 2. Store, then configuration (files win over the stored copy); without tokens only loopback.
  auto config = s->open_store(std::move(store));
  if (!config) return Error{config.error()};
  // 3. State, recovered from the store.
  if (auto ok = s->recover_state(*config); !ok) return Error{ok.error()};
  // 4. The API's routes; its port answers from start().
  s->routes();
  // 5. The node pools' provisioner calls (their output files in the data directory).
  Server* self = s.get();
  s->provisioner_ = std::make_unique<ProvisionRunner>(s->options_.data_dir + "/provisioner", 4,
                                                      [self] { self->kick(); });
  return s;
}

// HTTP (src/net): sockets on a few I/O threads, handlers on http_threads workers, the agents'
// own lane, the per-caller caps.
Result<bool> Server::listen() {
  const auto colon = options_.listen.rfind(':');
  if (colon == std::string::npos)
    return Error{"--listen " + options_.listen + ": expected HOST:PORT"};
  host_ = options_.listen.substr(0, colon);
  int port = 0;
  try {
    port = std::stoi(options_.listen.substr(colon + 1));
  } catch (...) {
    return Error{"--listen " + options_.listen + ": bad port"};
  }
  if (port < 0 || port > 65535) return Error{"--listen: port out of range"};
  net::ServerOptions ho;
  ho.name = "serve";
  ho.io_threads = options_.http_io_threads;
  ho.workers = options_.http_threads;
  ho.max_queued = options_.http_max_queued;
  ho.max_body_bytes = options_.max_body_bytes;
  ho.max_connections = options_.http_max_connections;
  ho.max_connections_per_ip = options_.http_max_connections_per_ip;
  ho.lanes[kAgentLane] = net::LaneOptions{options_.agent_http_threads, options_.http_max_queued};
  ho.tenant_of = [this](const net::RequestHead& h) { return caller_key(h); };
  ho.tenant_max_in_flight = options_.caller_max_in_flight;
  ho.tenant_max_running = options_.caller_max_running;
  ho.log = [this](const std::string& line) { log(line); };
  http_ = std::make_unique<net::Server>(std::move(ho));
  auto bound = http_->listen(host_, port);
  if (!bound) return Error{bound.error()};
  port_ = *bound;
  return true;
}

// `store`, or SQLite in the data directory; the configuration from --config, else the stored
// one. Sets auth_ and config_text_; returns the configuration.
Result<std::shared_ptr<const Config>> Server::open_store(std::unique_ptr<Store> store) {
  replicated_ = store != nullptr;
  if (store) {
    store_ = std::move(store);
  } else {
    auto sqlite = SqliteStore::open(options_.data_dir, options_.sqlite);
    if (!sqlite) return Error{sqlite.error()};
    store_ = std::move(*sqlite);
  }
  const std::string where = store_->describe();
  std::vector<Source> sources;
  if (!options_.config_files.empty()) {
    for (const auto& f : options_.config_files) {
      auto src = read_source(f);
      if (!src) return Error{src.error()};
      sources.push_back(std::move(*src));
    }
  } else if (auto stored = store_->get_meta("config")) {
    sources.push_back(
        {(replicated_ ? where : where + "/sluice.db") + " (stored configuration)", *stored});
  } else {
    return Error{"no configuration: pass --config FILE... (a Cluster, queues, policy); " + where +
                 " holds none yet"};
  }
  auto lc = load_server_config(sources);
  if (!lc) return Error{lc.error()};
  for (const auto& w : lc->warnings) notes_.push_back("warning: " + w);
  auth_ = lc->auth;
  tokens_on_ = auth_.enabled();
  config_text_ = lc->text;
  const bool loopback = host_ == "127.0.0.1" || host_ == "localhost" || host_ == "::1";
  if (!auth_.enabled() && !loopback)
    return Error{"--listen " + options_.listen +
                 ": without tokens (kind: ServerAuth) the server listens on loopback only"};
  return lc->config;
}

// The state from the store: the job history replayed from the event log, then the jobs'
// records recovered on it. Timed step by step for a replica's takeover (docs/ha.md).
Result<bool> Server::recover_state(std::shared_ptr<const Config> config) {
  using Clock = std::chrono::steady_clock;
  std::vector<std::pair<const char*, Clock::time_point>> marks{{"", Clock::now()}};
  const std::string where = store_->describe();
  state_ = std::make_unique<ServerState>(std::move(config), store_.get(), options_.state);
  marks.emplace_back("meta", Clock::now());
  history_ = std::make_unique<DashboardHistory>(
      options_.dashboard_samples, static_cast<double>(options_.dashboard_sample_ms) / 1000.0,
      Metrics::wait_histogram().bounds());
  auto jobs = store_->load_jobs();
  if (!jobs) return Error{"reading " + where + ": " + jobs.error()};
  marks.emplace_back("jobs", Clock::now());
  {
    std::lock_guard lk(state_->mu());
    if (auto why = store_->for_each_event(
            [&](const std::string& line) { state_->replay_history_line(line); });
        !why.empty())
      notes_.push_back("warning: the job history is incomplete: " + why);
    marks.emplace_back("events", Clock::now());
    for (auto& p : state_->recover(*jobs, now_ns())) notes_.push_back(p);
    marks.emplace_back("recover", Clock::now());
  }
  if (!jobs->empty())
    notes_.push_back("recovered " + std::to_string(jobs->size()) + " job record(s) from " + where);
  store_->start([this](double secs, size_t writes) {
    auto& m = state_->metrics();
    std::lock_guard lk(m.commit_mu);
    m.commit_seconds.observe(secs);
    m.commit_writes.observe(static_cast<double>(writes));
  });
  if (!store_->write(Write{{}, {{"config", config_text_}}, {}}))
    return Error{"cannot write to the store: " + store_->error()};
  marks.emplace_back("first write", Clock::now());
  if (!replicated_) return true;
  auto ms = [](Clock::duration d) {
    return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(d).count());
  };
  std::string line = "state loaded in " + ms(marks.back().second - marks[0].second) + " ms (";
  for (size_t i = 1; i < marks.size(); ++i)
    line += std::string(i > 1 ? ", " : "") + marks[i].first + " " +
            ms(marks[i].second - marks[i - 1].second);
  notes_.push_back(line + " ms)");
  return true;
}

// Whose request this is, for the fairness caps (net::ServerOptions::tenant_of): on the I/O
// thread, from the header alone. The agents' endpoints have their own lane and no cap; the
// health checks none either. A token is the caller.
std::string Server::caller_key(const net::RequestHead& h) const {
  if (h.path.rfind("/v1/agents/", 0) == 0 || h.path == "/healthz" || h.path == "/readyz") return {};
  const std::string_view auth = h.header("Authorization");
  if (!auth.empty()) return "token:" + secret::bearer(std::string(auth));
  // Without tokens the claimed user (a local server's users); with them a request without one
  // is refused, and counts against its address however it names itself.
  const std::string_view user = h.header("X-Sluice-User");
  if (!tokens_on_ && !user.empty()) return "user:" + std::string(user);
  return "addr:" + std::string(h.remote_addr);
}

Server::~Server() {
  stop();
}

std::string Server::url() const {
  return "http://" + host_ + ":" + std::to_string(port_);
}

int64_t Server::now_ns() const {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void Server::log(const std::string& line) const {
  if (options_.quiet) return;
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%H:%M:%S", std::localtime(&t));
  std::fprintf(stderr, "%s serve: %s\n", buf, line.c_str());
}

void Server::start() {
  loop_thread_ = std::thread([this] { loop(); });
  watch_thread_ = std::thread([this] { kube_watch_loop(); });
  http_->start();
  ready_ = true;
}

void Server::stop() {
  if (stop_.exchange(true)) return;
  kick();
  if (state_) {  // null when create() failed before it (the destructor still calls stop())
    std::lock_guard lk(state_->mu());
    state_->wake_polls();               // long polls return
    state_->journal_cv().notify_all();  // the watch thread ends its watches
  }
  if (watch_thread_.joinable()) watch_thread_.join();
  if (state_) expire_log_readers(true);
  if (http_) http_->stop();  // closes connections, joins its threads
  // Submissions answer from the store's commits (when_durable): those still in flight answer
  // now, while everything they use is alive.
  if (store_) store_->drain();
  if (loop_thread_.joinable()) loop_thread_.join();
  if (provisioner_) provisioner_->stop();
}

namespace {
Server::ApplyOutcome refused(int status, std::string error, std::string detail) {
  return {status, std::move(error), {std::move(detail)}, {}};
}
constexpr const char* kInvalid = "the configuration is invalid; the old one stays";
}  // namespace

Server::ApplyOutcome Server::apply_config(const std::vector<Source>& sources) {
  ApplyOutcome out;
  auto lc = load_server_config(sources);
  if (!lc) return refused(400, kInvalid, lc.error());
  uint64_t ticket = 0;
  {
    std::lock_guard lk(state_->mu());
    auto ok = state_->reconfigure(lc->config, lc->text, now_ns());
    if (!ok) return refused(409, ok.error(), "the old configuration stays");
    ticket = state_->persist_config(lc->text);
    config_text_ = lc->text;
    // A configuration without a ServerAuth document keeps the tokens in force.
    if (lc->auth.enabled() || !lc->auth.join_token.empty()) auth_ = lc->auth;
    tokens_on_ = auth_.enabled();
  }
  if (ticket) store_->wait(ticket);
  kick();
  out.warnings = lc->warnings;
  return out;
}

Server::ApplyOutcome Server::reload_config() {
  if (options_.config_files.empty())
    return refused(400, "the server was started without --config files: nothing to reload",
                   "change the configuration with PUT /v1/config instead");
  std::vector<Source> sources;
  for (const auto& f : options_.config_files) {
    auto src = read_source(f);
    if (!src) return refused(400, kInvalid, src.error());
    sources.push_back(std::move(*src));
  }
  std::unique_lock one(kube_config_mu_);  // as PUT /v1/config (routes_config)
  ApplyOutcome out = apply_config(sources);
  one.unlock();
  if (out.status == 200) {
    std::lock_guard lk(state_->mu());
    if (!applied_over_files_.empty())
      out.warnings.push_back("the configuration that " + applied_over_files_ +
                             " applied with `sluice config apply` (PUT /v1/config) is replaced by "
                             "the files'");
    applied_over_files_.clear();
  }
  log(out.status == 200
          ? "configuration reloaded from " + std::to_string(sources.size()) + " file(s)"
          : "configuration reload refused: " + out.error +
                (out.details.empty() ? "" : ": " + out.details.front()));
  return out;
}

std::string Server::refusal() const {
  const std::string why = store_ && store_->failed() ? store_->error() : "";
  return "the store failed" + (why.empty() ? std::string() : " (" + why + ")") +
         (replicated_ ? "; this replica steps down (docs/ha.md)"
                      : "; new work is refused until the server is restarted (docs/api.md)");
}

bool Server::may_write(net::Response& res) const {
  if (refusing_work()) {
    fail(res, 503, refusal());
    return false;
  }
  if (replicated_ || options_.min_free_disk_mib <= 0) return true;
  struct statvfs fs {};
  if (::statvfs(options_.data_dir.c_str(), &fs) != 0) return true;  // the write will tell
  const int64_t free_mib =
      static_cast<int64_t>(fs.f_bavail) * static_cast<int64_t>(fs.f_frsize) / (1 << 20);
  if (free_mib >= options_.min_free_disk_mib) return true;
  fail(res, 507,
       "the data directory's disk has " + std::to_string(free_mib) + " MiB free, below the " +
           std::to_string(options_.min_free_disk_mib) +
           " MiB floor (--min-free-disk): " + "nothing was changed",
       {"free space in " + options_.data_dir + ", or lower --min-free-disk"});
  return false;
}

void Server::withdraw_later(const std::vector<JobId>& ids) {
  {
    std::lock_guard lk(withdraw_mu_);
    to_withdraw_.insert(to_withdraw_.end(), ids.begin(), ids.end());
  }
  kick();
}

void Server::withdraw_now(TimeNs now) {
  std::vector<JobId> ids;
  {
    std::lock_guard lk(withdraw_mu_);
    ids.swap(to_withdraw_);
  }
  if (!ids.empty()) state_->withdraw(ids, now);
}

void Server::kick() {
  {
    std::lock_guard lk(loop_mu_);
    kicked_ = true;
  }
  loop_cv_.notify_one();
}

// The scheduling loop must outlive any one bad cycle: an exception (a bug, never input: input
// is validated where it enters) is logged and the loop goes on after a pause, so one fault
// cannot take the control plane down. The store is then marked failed: a cycle that threw
// halfway may have left decisions unpersisted, so no new work is taken until a restart
// rebuilds the state from disk.
void Server::loop() {
  while (!stop_) {
    std::string what;
    try {
      loop_body();
      continue;
    } catch (const std::exception& e) {
      what = std::string(": ") + e.what();
    } catch (...) {
    }
    store_failed_ = true;
    log("internal error in the scheduling loop" + what + "; new work is refused until a restart");
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

void Server::loop_body() {
  using clock = std::chrono::steady_clock;
  auto last_cycle = clock::now() - std::chrono::hours(1);
  auto last_sample = last_cycle;
  auto last_pool = last_cycle;
  const auto interval = std::chrono::milliseconds(options_.cycle_interval_ms);
  const auto sample_interval = std::chrono::milliseconds(options_.dashboard_sample_ms);
  while (!stop_) {
    {
      std::unique_lock lk(loop_mu_);
      // Agents are checked at least 5 times a second; cycles run when kicked or on interval.
      loop_cv_.wait_for(lk, std::chrono::milliseconds(200), [&] { return kicked_ || stop_; });
      kicked_ = false;
    }
    if (stop_) break;
    expire_log_readers(false);
    std::unique_lock lk(state_->mu());
    const int64_t now = now_ns();
    withdraw_now(now);
    if (uint64_t t = state_->check_agents(now)) {
      lk.unlock();
      store_->wait(t);
      lk.lock();
    }
    const bool pool_due = clock::now() - last_pool >= std::chrono::seconds(1);
    pool_tick(lk, now, pool_due);
    if (pool_due) last_pool = clock::now();
    if (clock::now() - last_sample >= sample_interval) {  // the dashboard's history
      history_->add(state_->dashboard_sample(now));
      last_sample = clock::now();
    }
    const bool due = clock::now() - last_cycle >= interval;
    if (!state_->wants_cycle() && !due) continue;
    const auto t0 = clock::now();
    const uint64_t ticket = state_->cycle(now);
    const double secs = std::chrono::duration<double>(clock::now() - t0).count();
    auto& m = state_->metrics();
    m.cycle_seconds
        .try_emplace(state_->last_cycle_incremental() ? "incremental" : "full",
                     Metrics::cycle_histogram())
        .first->second.observe(secs);
    ++m.cycles;
    m.last_cycle_unix_s = static_cast<double>(now) / 1e9;
    last_cycle = clock::now();
    // Decisions reach the agents only once they are on disk. The lock is free meanwhile:
    // staged assignments are invisible to agents, and a cancel in between withdraws them.
    lk.unlock();
    const bool durable = ticket == 0 || store_->wait(ticket);
    lk.lock();
    if (durable) {
      state_->release_staged();
    } else {
      state_->drop_staged();
      if (!store_failed_.exchange(true))
        log("store commit failed: " + store_->error() + "; new work is refused");
    }
    if (state_->wants_cycle()) kick();
  }
}

// Results of the provisioner's calls come in every tick; the pools are looked at (and calls go
// out) once a second or when a result came. The calls run on the runner's threads: a hanging
// provisioner never holds this loop.
void Server::pool_tick(std::unique_lock<std::mutex>& lk, int64_t now, bool look) {
  if (!provisioner_) return;
  uint64_t ticket = 0;
  auto results = provisioner_->take_results();
  for (const auto& r : results) {
    log("provisioner " + r.call.op + " " + r.call.pool_name + " " + r.call.node + ": " +
        (r.ok                 ? "ok"
         : r.timed_out        ? "timed out"
         : r.call.url.empty() ? "failed (exit " + std::to_string(r.exit_code) + ")"
                              : "failed") +
        (r.ok || r.output.empty() ? "" : ": " + r.output));
    ticket = std::max(ticket, state_->pool_done(r, now));
  }
  if (look || !results.empty()) {
    auto calls = state_->pool_step(now);
    // Where the node's agent finds this server (`sluice agent` reads $SLUICE_SERVER).
    const std::string server = options_.advertise.empty() ? url() : options_.advertise;
    for (auto& c : calls) {
      c.env.push_back("SLUICE_SERVER=" + server);
      if (!c.url.empty()) c.body["server"] = server;
    }
    for (const auto& c : calls)
      log("provisioner " + c.op + " " + c.pool_name + " " + c.node + " (" + c.reason + ")");
    provisioner_->submit(std::move(calls));
  }
  if (ticket) {
    lk.unlock();
    store_->wait(ticket);
    lk.lock();
  }
}

}  // namespace sluice::server
