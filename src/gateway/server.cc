// The gateway server: sessions (client connections), pools with their queues and backends,
// upstream keep-alive connections, health checks, metrics and graceful drain. Everything runs on
// one io_context thread; see gateway.h.
#include <sys/resource.h>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <array>
#include <charconv>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "gateway/admission.h"
#include "gateway/gateway.h"
#include "gateway/http_head.h"
#include "gateway/metrics.h"
#include "gateway/routing.h"

namespace sluice::gateway {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;
using Request = http::request<http::string_body>;
using Response = http::response<http::string_body>;
using error_code = boost::system::error_code;
// Sockets bound to the io_context's own executor: no type-erased executor on the hot path.
using Socket = asio::basic_stream_socket<tcp, asio::io_context::executor_type>;
using Acceptor = asio::basic_socket_acceptor<tcp, asio::io_context::executor_type>;

constexpr std::size_t kReadChunk = 8192;
constexpr std::int64_t kLingerMs = 1000;          // how long a closing connection drains input
constexpr std::size_t kLingerMaxBytes = 1 << 20;  // and how much of it
constexpr std::int64_t kSweepMs = 50;             // timeout resolution of connections
constexpr int kRateWindowS = 5;                   // window of the offered-rate estimate

std::int64_t ns_since(Clock::time_point t0, Clock::time_point t1) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count();
}

void log_line(const std::string& s) {
  std::fprintf(stderr, "sluice gateway: %s\n", s.c_str());
}

class Server;
class Session;
struct Pool;
struct Backend;
class UpstreamConn;

enum class ExState : std::uint8_t { kQueued, kInFlight, kDone };

// One admitted request, from admission until its response is handed to the session.
struct Exchange {
  std::shared_ptr<Session> session;
  Request req;
  RequestClass cls = RequestClass::kStandard;
  int tenant = -1;       // -1: anonymous
  Pool* pool = nullptr;  // serving pool (the fallback pool when routed there)
  ExState state = ExState::kQueued;
  Clock::time_point t_start;     // request fully read
  Clock::time_point t_enqueued;  // entered the queue
  Clock::time_point t_dispatched;
  std::chrono::milliseconds queue_deadline{0};
  std::list<std::shared_ptr<Exchange>>::iterator qpos;
  std::optional<asio::steady_timer> deadline_timer;
  int attempts = 0;
  bool head = false;
  std::string upstream_head;  // serialized once, reused by retries
};

struct PoolCounters {
  std::array<std::uint64_t, kNumClasses> admitted{}, fallback{}, expired{}, disconnected{};
  std::array<std::array<std::uint64_t, 5>, kNumClasses> rejected{};  // by RejectReason
  std::array<std::uint64_t, 4> upstream_errors{};  // connect, timeout, io, backend_down
  Histogram queue_wait, upstream, total;
  int queue_depth_max = 0;
};
enum UpstreamError { kErrConnect = 0, kErrTimeout = 1, kErrIo = 2, kErrBackendDown = 3 };
constexpr std::array<const char*, 4> kUpstreamErrorNames = {"connect", "timeout", "io",
                                                            "backend_down"};

struct Backend {
  HostPort addr;
  tcp::endpoint endpoint;
  Pool* pool = nullptr;
  bool healthy = true;
  int in_flight = 0;
  int consecutive_failures = 0;
  int consecutive_successes = 0;
  std::vector<std::shared_ptr<UpstreamConn>> idle;
  std::unordered_set<UpstreamConn*> active;
  std::unique_ptr<asio::steady_timer> health_timer;
};

struct Pool {
  int index = 0;
  PoolConfig cfg;
  AdmissionPolicy policy;
  Pool* fallback = nullptr;
  std::vector<std::unique_ptr<Backend>> backends;
  std::array<std::list<std::shared_ptr<Exchange>>, kNumClasses> queue;  // FIFO per class
  int queued = 0;
  int in_flight = 0;
  std::size_t rr = 0;
  PoolCounters m;
  // Offered-rate ring (arrivals per second over the last kRateWindowS seconds) and an EWMA of
  // upstream latency: the inputs of the replica estimate served at /v1/scale.
  std::array<std::int64_t, kRateWindowS> rate_sec{};
  std::array<std::uint64_t, kRateWindowS> rate_count{};
  double upstream_ewma_s = 0.0;

  int healthy_backends() const {
    int n = 0;
    for (const auto& b : backends) n += b->healthy ? 1 : 0;
    return n;
  }
  PoolLoad load() const { return {queued, in_flight, healthy_backends() * cfg.max_in_flight}; }

  // Least-loaded healthy backend with a free slot; round robin among equals.
  Backend* pick() {
    Backend* best = nullptr;
    const std::size_t n = backends.size();
    for (std::size_t k = 0; k < n; ++k) {
      Backend* b = backends[(rr + k) % n].get();
      if (!b->healthy || b->in_flight >= cfg.max_in_flight) continue;
      if (!best || b->in_flight < best->in_flight) best = b;
    }
    if (best) ++rr;
    return best;
  }

  void note_arrival(std::int64_t now_s) {
    auto slot = static_cast<std::size_t>(now_s % kRateWindowS);
    if (rate_sec[slot] != now_s) {
      rate_sec[slot] = now_s;
      rate_count[slot] = 0;
    }
    ++rate_count[slot];
  }
  double offered_rate(std::int64_t now_s) const {
    std::uint64_t total = 0;
    for (int i = 0; i < kRateWindowS; ++i) {
      if (rate_sec[i] > now_s - kRateWindowS && rate_sec[i] <= now_s) total += rate_count[i];
    }
    return static_cast<double>(total) / kRateWindowS;
  }
  // Replicas needed so that the offered rate is served (Little's law: concurrency = rate x
  // latency) and the current queue drains within one queue timeout.
  int desired_replicas(std::int64_t now_s) const {
    double w = upstream_ewma_s;
    if (w <= 0.0) return static_cast<int>(backends.size());
    double needed =
        offered_rate(now_s) * w + queued * w / (static_cast<double>(cfg.queue_timeout_ms) / 1000.0);
    int r = static_cast<int>(std::ceil(needed / cfg.max_in_flight - 1e-9));
    return std::max(r, queued + in_flight > 0 ? 1 : 0);
  }
};

Response make_response(unsigned status, unsigned version, std::string body,
                       std::string_view content_type = "application/json") {
  Response res{static_cast<http::status>(status), version};
  res.set(http::field::server, "sluice-gateway");
  res.set(http::field::content_type, content_type);
  res.body() = std::move(body);
  res.prepare_payload();
  return res;
}

std::string json_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out;
}

Response error_response(unsigned status, unsigned version, std::string_view reason,
                        std::string_view message) {
  std::string body =
      "{\"error\":\"" + json_escape(message) + "\",\"reason\":\"" + std::string(reason) + "\"}\n";
  Response res = make_response(status, version, std::move(body));
  res.set("x-sluice-reason", reason);
  return res;
}

// ---------------------------------------------------------------------------------------------

class Server {
 public:
  Server(asio::io_context& ioc, const GatewayConfig& cfg);
  bool start(const RunOptions& opts);
  int exit_code() const { return exit_code_; }
  // Sessions outlive the server only inside a stopped io_context being destroyed; they check this.
  const std::shared_ptr<bool>& alive() const { return alive_; }
  void detach() { *alive_ = false; }

  const GatewayConfig& cfg() const { return cfg_; }
  bool draining() const { return draining_; }

  void add_session(Session* s) { sessions_.insert(s); }
  // Open connections per client address (count_client(addr, +1 / -1)).
  void count_client(const std::string& addr, int delta) {
    auto it = per_client_.try_emplace(addr, 0).first;
    it->second += delta;
    if (it->second <= 0) per_client_.erase(it);
  }
  void remove_session(Session* s);

  // Entry point for a fully read request.
  void handle(const std::shared_ptr<Session>& s, Request&& req);
  // The client of a queued exchange went away.
  void client_gone(const std::shared_ptr<Exchange>& ex);
  void count_response(unsigned status) { ++responses_[status]; }

 private:
  friend class UpstreamConn;
  void do_accept();
  void sweep();
  void start_drain();
  void maybe_finish_drain();

  void admit(const std::shared_ptr<Session>& s, Request&& req, Pool& pool, RequestClass cls,
             int tenant, std::chrono::milliseconds deadline);
  void enqueue(const std::shared_ptr<Exchange>& ex);
  void dequeue(Exchange& ex);
  void pump(Pool& pool);
  void dispatch(const std::shared_ptr<Exchange>& ex, Backend& b);
  void send_upstream(const std::shared_ptr<Exchange>& ex, Backend& b,
                     std::shared_ptr<UpstreamConn> conn);
  void upstream_done(const std::shared_ptr<Exchange>& ex, Backend& b,
                     const std::shared_ptr<UpstreamConn>& conn, error_code ec, Response* res,
                     bool response_started);
  void finish(const std::shared_ptr<Exchange>& ex, Response&& res);
  void fail_queued(Pool& pool, unsigned status, RejectReason reason, std::string_view msg);
  void expire(const std::shared_ptr<Exchange>& ex);

  void schedule_health(Backend& b, std::chrono::milliseconds delay);
  void run_health(Backend& b);
  void health_result(Backend& b, bool ok);
  void mark_down(Backend& b, const std::string& why);
  void mark_up(Backend& b);

  Response metrics_response(unsigned version);
  Response scale_response(unsigned version, std::string_view target);
  int& tenant_active(int tenant) {
    return tenant < 0 ? anonymous_active_ : tenant_active_[static_cast<std::size_t>(tenant)];
  }
  int tenant_limit(int tenant) const {
    return tenant < 0 ? cfg_.anonymous.max_concurrency
                      : cfg_.tenants[static_cast<std::size_t>(tenant)].max_concurrency;
  }

  asio::io_context& ioc_;
  GatewayConfig cfg_;
  Acceptor acceptor_;
  asio::steady_timer sweep_timer_;
  asio::signal_set signals_;
  asio::steady_timer accept_retry_;
  asio::steady_timer drain_timer_;
  std::vector<std::unique_ptr<Pool>> pools_;
  std::vector<int> tenant_active_;
  int anonymous_active_ = 0;
  std::unordered_set<Session*> sessions_;
  bool draining_ = false;
  bool stopped_ = false;
  bool need_model_ = false;
  int exit_code_ = 0;
  std::uint64_t connections_total_ = 0;
  std::uint64_t connections_refused_ = 0;
  std::uint64_t connections_refused_client_ = 0;
  std::unordered_map<std::string, int> per_client_;
  int max_connections_ = 0;  // limits.max_connections, less what the fd limit cannot hold
  std::map<unsigned, std::uint64_t> responses_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

// ---------------------------------------------------------------------------------------------
// A client connection. Reads one request at a time, hands it to the server, and writes the
// answer when it comes. Timeouts are deadlines checked by the server's sweep (every
// kSweepMs): waiting for a request (idle), receiving its header, its body, writing the answer.
// An expired read is cancelled, not closed, so that the client still gets its 408.

class Session : public std::enable_shared_from_this<Session> {
 public:
  enum class Phase : std::uint8_t { kIdle, kHeader, kBody, kBusy, kWriting, kClosing };

  Session(Server& server, Socket socket)
      : server_(server), alive_(server.alive()), socket_(std::move(socket)) {
    server_.add_session(this);
    error_code ec;
    socket_.set_option(tcp::no_delay(true), ec);
    remote_ = socket_.remote_endpoint(ec).address().to_string(ec);
    server_.count_client(remote_, 1);
  }
  ~Session() {
    if (!*alive_) return;
    server_.count_client(remote_, -1);
    server_.remove_session(this);
  }

  void start() { do_read(); }

  // Sends a response; when `close` is set, or the client asked for it, or the server drains, the
  // connection is closed after it.
  // `pool` (the pool that served an admitted request) is sent as x-sluice-pool.
  void send(Response&& res, bool close = false, bool head_request = false,
            std::string_view pool = {}) {
    stop_watch();
    current_.reset();
    const bool keep = keep_alive_ && !close && !server_.draining();
    server_.count_response(res.result_int());
    res_.emplace(std::move(res));
    serialize_response_head(*res_, version_, keep, head_request, pool, out_head_);
    keep_after_write_ = keep;
    set_phase(Phase::kWriting, server_.cfg().limits.write_timeout_ms);
    std::array<asio::const_buffer, 2> bufs = {
        asio::buffer(out_head_), head_request ? asio::const_buffer() : asio::buffer(res_->body())};
    asio::async_write(socket_, bufs, [self = shared_from_this()](error_code ec, std::size_t) {
      self->on_write(ec);
    });
  }

  // While the request waits in a queue, watch the socket: readable with nothing to read means
  // the client closed it, and the request is removed from the queue.
  void watch_disconnect(const std::shared_ptr<Exchange>& ex) {
    current_ = ex;
    if (buffer_.size() > 0) return;  // pipelined bytes already here: nothing to learn
    watching_ = true;
    const auto gen = ++watch_gen_;
    socket_.async_wait(tcp::socket::wait_read, [self = shared_from_this(), gen](error_code ec) {
      if (gen != self->watch_gen_ || !self->watching_) return;
      self->watching_ = false;
      if (ec == asio::error::operation_aborted) return;
      error_code ec2;
      std::size_t avail = self->socket_.available(ec2);
      if (!ec && !ec2 && avail > 0) return;  // a pipelined request, not a disconnect
      if (auto cur = self->current_.lock()) self->server_.client_gone(cur);
    });
  }
  void stop_watch() {
    if (!watching_) return;
    watching_ = false;
    ++watch_gen_;
    error_code ec;
    socket_.cancel(ec);
  }

  // Called on drain: connections waiting for a request are closed now; busy ones close after
  // their response.
  void close_if_idle() {
    if (phase_ == Phase::kIdle && buffer_.size() == 0) close_now();
  }

  void abandon() {
    // The exchange is gone (client left while queued): close without a response.
    current_.reset();
    close_now();
  }

  const std::string& remote() const { return remote_; }

  // The sweep: advance the read phase on progress, and cancel what is past its deadline.
  void sweep(Clock::time_point now) {
    if (phase_ == Phase::kIdle && (buffer_.size() > 0 || (parser_ && parser_->got_some()))) {
      set_phase(Phase::kHeader, server_.cfg().limits.header_timeout_ms);
    }
    if (phase_ == Phase::kHeader && parser_ && parser_->is_header_done()) {
      set_phase(Phase::kBody, server_.cfg().limits.body_timeout_ms);
    }
    if (phase_ == Phase::kBusy || phase_ == Phase::kClosing || timed_out_ || now < deadline_) {
      return;
    }
    timed_out_ = true;
    error_code ec;
    if (phase_ == Phase::kWriting) {
      socket_.close(ec);  // a client that does not read its answer gets nothing more
    } else {
      socket_.cancel(ec);
    }
  }

 private:
  void set_phase(Phase p, std::int64_t timeout_ms) {
    phase_ = p;
    deadline_ = Clock::now() + std::chrono::milliseconds(timeout_ms);
  }

  void do_read() {
    if (server_.draining()) return close_now();
    timed_out_ = false;
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(server_.cfg().limits.max_header_bytes));
    parser_->body_limit(static_cast<std::uint64_t>(server_.cfg().limits.max_body_bytes));
    if (buffer_.size() > 0) {
      set_phase(Phase::kHeader, server_.cfg().limits.header_timeout_ms);
    } else {
      set_phase(Phase::kIdle, server_.cfg().limits.idle_timeout_ms);
    }
    http::async_read_header(
        socket_, buffer_, *parser_,
        [self = shared_from_this()](error_code ec, std::size_t) { self->on_header(ec); });
  }

  void on_header(error_code ec) {
    if (ec) return on_read_error(ec);
    // Only `chunked` is understood. Any other coding leaves a request's body without a length
    // (RFC 9112 6.3: a server answers 400), and reading to the end would hold the connection
    // until the body timeout.
    const auto te = parser_->get()[http::field::transfer_encoding];
    if (!te.empty() && !beast::iequals(te, "chunked"))
      return send(error_response(400, 11, "malformed",
                                 "unsupported Transfer-Encoding (only chunked is accepted)"),
                  true);
    if (parser_->is_done()) return on_request();
    if (phase_ != Phase::kBody) set_phase(Phase::kBody, server_.cfg().limits.body_timeout_ms);
    auto read_body = [self = shared_from_this()] {
      http::async_read(self->socket_, self->buffer_, *self->parser_,
                       [self](error_code ec, std::size_t) {
                         if (ec) return self->on_read_error(ec);
                         self->on_request();
                       });
    };
    if (beast::iequals(parser_->get()[http::field::expect], "100-continue")) {
      static const std::string kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
      asio::async_write(socket_, asio::buffer(kContinue),
                        [self = shared_from_this(), read_body](error_code ec, std::size_t) {
                          if (ec) return self->close_now();
                          read_body();
                        });
      return;
    }
    read_body();
  }

  void on_read_error(error_code ec) {
    const unsigned version = 11;
    if (timed_out_) {
      // Silence on an idle keep-alive connection is not an error: just close it.
      if (phase_ == Phase::kIdle) return close_now();
      return send(error_response(408, version, "timeout", "request not received in time"), true);
    }
    if (ec == http::error::end_of_stream || ec == asio::error::eof ||
        ec == asio::error::connection_reset || ec == asio::error::operation_aborted) {
      return close_now();
    }
    if (ec == http::error::header_limit) {
      return send(
          error_response(431, version, "header_too_large", "request header fields too large"),
          true);
    }
    if (ec == http::error::body_limit) {
      return send(error_response(413, version, "body_too_large", "request body too large"), true);
    }
    if (ec.category() == http::make_error_code(http::error::bad_target).category()) {
      return send(error_response(400, version, "malformed", "malformed request: " + ec.message()),
                  true);
    }
    close_now();
  }

  void on_request() {
    Request req = parser_->release();
    parser_.reset();
    keep_alive_ = req.keep_alive();
    version_ = req.version() == 10 ? 10 : 11;
    phase_ = Phase::kBusy;
    server_.handle(shared_from_this(), std::move(req));
  }

  void on_write(error_code ec) {
    res_.reset();
    if (ec) return close_now();
    if (!keep_after_write_) return linger_close();
    do_read();
  }

  void close_now() {
    phase_ = Phase::kClosing;
    error_code e;
    socket_.shutdown(tcp::socket::shutdown_both, e);
    socket_.close(e);
  }

  // Half-close and read what the client still sends for a moment before closing, so that an
  // early answer (413, 431) is not destroyed by a reset caused by unread input.
  void linger_close() {
    error_code e;
    socket_.shutdown(tcp::socket::shutdown_send, e);
    if (e) return close_now();
    buffer_.clear();
    timed_out_ = false;
    set_phase(Phase::kHeader, kLingerMs);  // reads below are cut off by the sweep
    linger_read();
  }
  void linger_read() {
    socket_.async_read_some(buffer_.prepare(kReadChunk),
                            [self = shared_from_this()](error_code ec, std::size_t n) {
                              self->lingered_ += n;
                              self->buffer_.clear();
                              if (ec || self->lingered_ > kLingerMaxBytes) {
                                return self->close_now();
                              }
                              self->linger_read();
                            });
  }

  Server& server_;
  std::shared_ptr<bool> alive_;
  Socket socket_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::optional<Response> res_;
  std::string out_head_;
  std::weak_ptr<Exchange> current_;
  std::string remote_;
  Clock::time_point deadline_;
  Phase phase_ = Phase::kIdle;
  unsigned version_ = 11;
  bool keep_alive_ = true;
  bool keep_after_write_ = true;
  bool timed_out_ = false;
  bool watching_ = false;
  std::uint64_t watch_gen_ = 0;
  std::size_t lingered_ = 0;
};

// ---------------------------------------------------------------------------------------------
// A keep-alive connection to one backend. Idle connections wait in Backend::idle; a connection
// carries one exchange at a time. Its deadline (connect, then the whole exchange) is enforced
// by the sweep, which cancels the socket and sets timed_out.

class UpstreamConn : public std::enable_shared_from_this<UpstreamConn> {
 public:
  UpstreamConn(asio::io_context& ioc, Backend& b) : socket(ioc.get_executor()), backend(&b) {}
  Socket socket;
  beast::flat_buffer buffer;
  std::optional<http::response_parser<http::string_body>> parser;
  std::string head;  // serialized request head of the current exchange
  Backend* backend;
  Clock::time_point deadline;
  bool connected = false;
  bool reused = false;
  bool aborted = false;    // set when the backend is taken out while this exchange runs
  bool timed_out = false;  // set by the sweep
};

// ---------------------------------------------------------------------------------------------

Server::Server(asio::io_context& ioc, const GatewayConfig& cfg)
    : ioc_(ioc),
      cfg_(cfg),
      acceptor_(ioc.get_executor()),
      sweep_timer_(ioc),
      signals_(ioc, SIGTERM, SIGINT),
      accept_retry_(ioc),
      drain_timer_(ioc) {
  tenant_active_.assign(cfg_.tenants.size(), 0);
  need_model_ = routes_need_model(cfg_);
  for (std::size_t i = 0; i < cfg_.pools.size(); ++i) {
    auto p = std::make_unique<Pool>();
    p->index = static_cast<int>(i);
    p->cfg = cfg_.pools[i];
    p->policy = AdmissionPolicy::from(p->cfg);
    pools_.push_back(std::move(p));
  }
  for (auto& p : pools_) {
    if (p->cfg.fallback_index >= 0) p->fallback = pools_[p->cfg.fallback_index].get();
  }
}

bool Server::start(const RunOptions& opts) {
  // 1. Resolve backends (loopback addresses or names in /etc/hosts) once, up front.
  tcp::resolver resolver(ioc_);
  for (auto& p : pools_) {
    for (const auto& hp : p->cfg.backends) {
      error_code ec;
      auto results = resolver.resolve(hp.host, std::to_string(hp.port), ec);
      if (ec || results.empty()) {
        log_line("pool " + p->cfg.name + ": cannot resolve backend " + hp.text() + ": " +
                 ec.message());
        return false;
      }
      auto b = std::make_unique<Backend>();
      b->addr = hp;
      b->endpoint = results.begin()->endpoint();
      b->pool = p.get();
      b->health_timer = std::make_unique<asio::steady_timer>(ioc_);
      p->backends.push_back(std::move(b));
    }
  }
  // 2. Client connections the descriptor limit can hold: a quarter (at least 64) stays for
  // upstream connections and health checks, so running out of descriptors never looks like a
  // dead backend.
  max_connections_ = cfg_.limits.max_connections;
  if (rlimit rl{}; ::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
    const auto nofile = static_cast<std::int64_t>(rl.rlim_cur);
    const std::int64_t room =
        std::max<std::int64_t>(16, nofile - std::max<std::int64_t>(64, nofile / 4));
    if (room < max_connections_) {
      max_connections_ = static_cast<int>(room);
      log_line("limits.maxConnections " + std::to_string(cfg_.limits.max_connections) +
               " is more than the file descriptor limit (" + std::to_string(nofile) +
               ") holds: at most " + std::to_string(room) + " client connections");
    }
  }
  // 3. Listen.
  error_code ec;
  auto addr = asio::ip::make_address(cfg_.listen.host, ec);
  if (ec) {
    log_line("listen: bad address '" + cfg_.listen.host + "'");
    return false;
  }
  tcp::endpoint ep(addr, cfg_.listen.port);
  acceptor_.open(ep.protocol(), ec);
  if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor_.bind(ep, ec);
  if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    log_line("cannot listen on " + cfg_.listen.text() + ": " + ec.message());
    return false;
  }
  const auto port = acceptor_.local_endpoint().port();
  if (!opts.port_file.empty()) {
    std::string tmp = opts.port_file + ".tmp";
    {
      std::ofstream f(tmp);
      f << port << "\n";
    }
    std::rename(tmp.c_str(), opts.port_file.c_str());
  }
  log_line("listening on " + cfg_.listen.host + ":" + std::to_string(port) + " with " +
           std::to_string(pools_.size()) + " pool(s)");
  // 4. Health checks, signals, accept loop.
  for (auto& p : pools_) {
    if (!p->cfg.health.enabled) continue;
    for (auto& b : p->backends) schedule_health(*b, std::chrono::milliseconds(0));
  }
  signals_.async_wait([this](error_code e, int sig) {
    if (e) return;
    log_line(std::string("received ") + (sig == SIGTERM ? "SIGTERM" : "SIGINT") + ", draining");
    start_drain();
  });
  do_accept();
  sweep();
  return true;
}

void Server::sweep() {
  // Deadlines of client connections and upstream exchanges, checked every kSweepMs: one timer
  // for the whole server instead of timer operations on every read and write.
  const auto now = Clock::now();
  for (Session* s : sessions_) s->sweep(now);
  for (auto& p : pools_) {
    for (auto& b : p->backends) {
      for (UpstreamConn* c : b->active) {
        if (!c->timed_out && !c->aborted && now >= c->deadline) {
          c->timed_out = true;
          error_code e;
          c->socket.cancel(e);
        }
      }
    }
  }
  if (stopped_) return;
  sweep_timer_.expires_after(std::chrono::milliseconds(kSweepMs));
  sweep_timer_.async_wait([this](error_code ec) {
    if (!ec) sweep();
  });
}

void Server::do_accept() {
  acceptor_.async_accept([this](error_code ec, Socket sock) {
    if (draining_) return;
    if (ec) {
      if (ec == asio::error::operation_aborted) return;
      // Out of descriptors and similar: back off briefly instead of spinning.
      accept_retry_.expires_after(std::chrono::milliseconds(50));
      accept_retry_.async_wait([this](error_code e) {
        if (!e) do_accept();
      });
      return;
    }
    ++connections_total_;
    error_code re;
    const std::string addr = sock.remote_endpoint(re).address().to_string(re);
    const auto mine = per_client_.find(addr);
    const bool client_full =
        mine != per_client_.end() && mine->second >= cfg_.limits.max_connections_per_client;
    if (static_cast<int>(sessions_.size()) >= max_connections_ || client_full) {
      ++(client_full ? connections_refused_client_ : connections_refused_);
      static const std::string kBusy =
          "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n"
          "Retry-After: 1\r\n\r\n";
      error_code e;
      sock.non_blocking(true, e);
      sock.write_some(asio::buffer(kBusy), e);
      sock.close(e);
    } else {
      std::make_shared<Session>(*this, std::move(sock))->start();
    }
    do_accept();
  });
}

void Server::remove_session(Session* s) {
  sessions_.erase(s);
  if (draining_) maybe_finish_drain();
}

void Server::start_drain() {
  if (draining_) return;
  draining_ = true;
  error_code ec;
  acceptor_.close(ec);
  accept_retry_.cancel();
  for (Session* s : std::vector<Session*>(sessions_.begin(), sessions_.end())) {
    s->close_if_idle();
  }
  drain_timer_.expires_after(std::chrono::milliseconds(cfg_.drain_timeout_ms));
  drain_timer_.async_wait([this](error_code e) {
    if (e || stopped_) return;
    log_line("drain timed out with " + std::to_string(sessions_.size()) +
             " connection(s) still open");
    exit_code_ = 1;
    stopped_ = true;
    ioc_.stop();
  });
  // Sessions close asynchronously; check once the close handlers have run.
  asio::post(ioc_, [this] { maybe_finish_drain(); });
}

void Server::maybe_finish_drain() {
  if (stopped_ || !sessions_.empty()) return;
  for (auto& p : pools_) {
    if (p->queued > 0 || p->in_flight > 0) return;
  }
  log_line("drained, exiting");
  stopped_ = true;
  ioc_.stop();
}

// ---------------------------------------------------------------------------------------------
// Request handling and admission.

void Server::handle(const std::shared_ptr<Session>& s, Request&& req) {
  const unsigned version = req.version();
  std::string_view target = req.target();
  std::string_view path = target.substr(0, target.find('?'));

  // 1. The gateway's own endpoints.
  if (req.method() == http::verb::get) {
    if (path == "/metrics") return s->send(metrics_response(version));
    if (path == "/v1/scale") return s->send(scale_response(version, target));
    if (path == "/healthz") {
      return s->send(draining_ ? error_response(503, version, "draining", "draining")
                               : make_response(200, version, "ok\n", "text/plain"));
    }
  }
  // 2. Route to a pool.
  std::string model;
  if (need_model_) {
    model = std::string(req[cfg_.model_header]);
    if (model.empty()) model = model_from_json_body(req.body());
  }
  int pool_index = route_pool(cfg_, path, model);
  if (pool_index < 0) {
    return s->send(error_response(404, version, "no_route", "no pool serves this request"));
  }
  Pool& pool = *pools_[static_cast<std::size_t>(pool_index)];
  // 3. Tenant and class.
  std::string_view key = req[cfg_.api_key_header];
  if (key.empty()) key = bearer_token(req[http::field::authorization]);
  Identity id = identify(cfg_, key, req[cfg_.class_header]);
  if (!id.error.empty()) {
    return s->send(error_response(static_cast<unsigned>(id.error_status), version,
                                  id.error_status == 401 ? "unauthorized" : "bad_class", id.error));
  }
  // 4. Deadline: the pool's queue timeout, shortened by the request's header.
  std::chrono::milliseconds deadline(pool.cfg.queue_timeout_ms);
  if (auto dh = req[cfg_.deadline_header]; !dh.empty()) {
    long long ms = 0;
    auto [ptr, ec] = std::from_chars(dh.data(), dh.data() + dh.size(), ms);
    if (ec != std::errc() || ptr != dh.data() + dh.size() || ms <= 0) {
      return s->send(error_response(400, version, "bad_deadline",
                                    "bad " + cfg_.deadline_header + " (positive milliseconds)"));
    }
    deadline = std::min(deadline, std::chrono::milliseconds(ms));
  }
  admit(s, std::move(req), pool, id.request_class, id.tenant, deadline);
}

void Server::admit(const std::shared_ptr<Session>& s, Request&& req, Pool& pool, RequestClass cls,
                   int tenant, std::chrono::milliseconds deadline) {
  const auto now = Clock::now();
  const auto c = static_cast<std::size_t>(cls);
  pool.note_arrival(
      std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count());
  AdmissionInput in;
  in.load = pool.load();
  in.request_class = cls;
  in.fallback_accepts = pool.fallback && accepts(pool.fallback->policy, pool.fallback->load(), cls);
  in.tenant_active = tenant_active(tenant);
  in.tenant_limit = tenant_limit(tenant);
  AdmissionResult r = decide(pool.policy, in);

  if (r.decision == Decision::kReject) {
    ++pool.m.rejected[c][static_cast<std::size_t>(r.reason)];
    const bool unavailable = r.reason == RejectReason::kNoBackend;
    Response res = error_response(unavailable ? 503 : 429, req.version(), reason_name(r.reason),
                                  unavailable ? "no healthy backend" : "overloaded, retry later");
    res.set(http::field::retry_after, std::to_string(pool.cfg.retry_after_s));
    return s->send(std::move(res));
  }
  Pool* serving = &pool;
  if (r.decision == Decision::kFallback) {
    ++pool.m.fallback[c];
    serving = pool.fallback;
  }
  auto ex = std::make_shared<Exchange>();
  ex->session = s;
  ex->cls = cls;
  ex->tenant = tenant;
  ex->pool = serving;
  ex->t_start = now;
  ex->t_enqueued = now;
  ex->queue_deadline = deadline;
  ex->head = req.method() == http::verb::head;
  // Hop-by-hop headers stay on this side; the upstream connection is always keep-alive.
  serialize_request_head(req, s->remote(), ex->upstream_head);
  ex->req = std::move(req);
  ++serving->m.admitted[c];
  ++tenant_active(tenant);

  // Dispatch at once when the serving pool has a free slot and nobody waits; queue otherwise.
  if (serving->queued == 0) {
    if (Backend* b = serving->pick()) {
      serving->m.queue_wait.observe_ns(0);
      return dispatch(ex, *b);
    }
  }
  enqueue(ex);
}

void Server::enqueue(const std::shared_ptr<Exchange>& ex) {
  Pool& pool = *ex->pool;
  auto& q = pool.queue[static_cast<std::size_t>(ex->cls)];
  ex->state = ExState::kQueued;
  ex->qpos = q.insert(q.end(), ex);
  ++pool.queued;
  pool.m.queue_depth_max = std::max(pool.m.queue_depth_max, pool.queued);
  ex->deadline_timer.emplace(ioc_);
  ex->deadline_timer->expires_at(ex->t_enqueued + ex->queue_deadline);
  std::weak_ptr<Exchange> weak = ex;
  ex->deadline_timer->async_wait([this, weak](error_code ec) {
    if (ec) return;
    if (auto e = weak.lock(); e && e->state == ExState::kQueued) expire(e);
  });
  ex->session->watch_disconnect(ex);
}

void Server::dequeue(Exchange& ex) {
  Pool& pool = *ex.pool;
  pool.queue[static_cast<std::size_t>(ex.cls)].erase(ex.qpos);
  --pool.queued;
  if (ex.deadline_timer) ex.deadline_timer->cancel();
}

void Server::expire(const std::shared_ptr<Exchange>& ex) {
  dequeue(*ex);
  ++ex->pool->m.expired[static_cast<std::size_t>(ex->cls)];
  Response res =
      error_response(503, ex->req.version(), "expired", "deadline exceeded while queued");
  res.set(http::field::retry_after, std::to_string(ex->pool->cfg.retry_after_s));
  finish(ex, std::move(res));
}

void Server::client_gone(const std::shared_ptr<Exchange>& ex) {
  if (ex->state != ExState::kQueued) return;
  dequeue(*ex);
  ex->state = ExState::kDone;
  ++ex->pool->m.disconnected[static_cast<std::size_t>(ex->cls)];
  --tenant_active(ex->tenant);
  auto s = std::move(ex->session);
  s->abandon();
}

void Server::fail_queued(Pool& pool, unsigned status, RejectReason reason, std::string_view msg) {
  for (auto& q : pool.queue) {
    while (!q.empty()) {
      auto ex = q.front();
      dequeue(*ex);
      ++pool.m.rejected[static_cast<std::size_t>(ex->cls)][static_cast<std::size_t>(reason)];
      Response res = error_response(status, ex->req.version(), reason_name(reason), msg);
      res.set(http::field::retry_after, std::to_string(pool.cfg.retry_after_s));
      finish(ex, std::move(res));
    }
  }
}

void Server::pump(Pool& pool) {
  // Dispatch order: critical first; standard and sheddable in arrival order (FIFO between the
  // two). Strict priority for all three would starve admitted sheddable work behind standard
  // traffic until its deadline; this way their wait is bounded by the queue depth over the
  // capacity left by critical work. Bounded by the queue length.
  auto& crit = pool.queue[static_cast<std::size_t>(RequestClass::kCritical)];
  auto& std_q = pool.queue[static_cast<std::size_t>(RequestClass::kStandard)];
  auto& shed_q = pool.queue[static_cast<std::size_t>(RequestClass::kSheddable)];
  while (pool.queued > 0) {
    Backend* b = pool.pick();
    if (!b) return;
    std::shared_ptr<Exchange> ex;
    if (!crit.empty()) {
      ex = crit.front();
    } else if (shed_q.empty() ||
               (!std_q.empty() && std_q.front()->t_enqueued <= shed_q.front()->t_enqueued)) {
      ex = std_q.front();
    } else {
      ex = shed_q.front();
    }
    dequeue(*ex);
    ex->session->stop_watch();
    pool.m.queue_wait.observe_ns(ns_since(ex->t_enqueued, Clock::now()));
    dispatch(ex, *b);
  }
}

void Server::finish(const std::shared_ptr<Exchange>& ex, Response&& res) {
  ex->state = ExState::kDone;
  --tenant_active(ex->tenant);
  ex->pool->m.total.observe_ns(ns_since(ex->t_start, Clock::now()));
  auto s = std::move(ex->session);
  s->send(std::move(res), false, ex->head, ex->pool->cfg.name);
}

// ---------------------------------------------------------------------------------------------
// Upstream exchange.

void Server::dispatch(const std::shared_ptr<Exchange>& ex, Backend& b) {
  ex->state = ExState::kInFlight;
  ex->t_dispatched = Clock::now();
  ++b.in_flight;
  ++b.pool->in_flight;
  std::shared_ptr<UpstreamConn> conn;
  if (!b.idle.empty()) {
    conn = std::move(b.idle.back());
    b.idle.pop_back();
    conn->reused = true;
  } else {
    conn = std::make_shared<UpstreamConn>(ioc_, b);
  }
  send_upstream(ex, b, std::move(conn));
}

void Server::send_upstream(const std::shared_ptr<Exchange>& ex, Backend& b,
                           std::shared_ptr<UpstreamConn> conn) {
  ++ex->attempts;
  b.active.insert(conn.get());
  conn->aborted = false;
  conn->timed_out = false;
  const auto upstream_deadline =
      Clock::now() + std::chrono::milliseconds(b.pool->cfg.upstream_timeout_ms);
  auto do_exchange = [this, ex, &b, conn, upstream_deadline] {
    conn->deadline = upstream_deadline;
    std::array<asio::const_buffer, 2> bufs = {asio::buffer(ex->upstream_head),
                                              asio::buffer(ex->req.body())};
    asio::async_write(conn->socket, bufs, [this, ex, &b, conn](error_code ec, std::size_t) {
      if (ec) return upstream_done(ex, b, conn, ec, nullptr, false);
      conn->parser.emplace();
      conn->parser->body_limit(static_cast<std::uint64_t>(b.pool->cfg.max_response_bytes));
      if (ex->head) conn->parser->skip(true);
      http::async_read(conn->socket, conn->buffer, *conn->parser,
                       [this, ex, &b, conn](error_code ec, std::size_t n) {
                         if (ec) return upstream_done(ex, b, conn, ec, nullptr, n > 0);
                         if (!relayable_status(conn->parser->get().result_int()))
                           return upstream_done(ex, b, conn, http::error::bad_status, nullptr,
                                                true);
                         Response res = conn->parser->release();
                         upstream_done(ex, b, conn, ec, &res, true);
                       });
    });
  };
  if (conn->connected) return do_exchange();
  conn->deadline = Clock::now() + std::chrono::milliseconds(b.pool->cfg.connect_timeout_ms);
  conn->socket.async_connect(b.endpoint, [this, ex, &b, conn, do_exchange](error_code ec) {
    if (ec) {
      // Out of descriptors is this process's trouble, not the backend's: kept as it is, so
      // the backend is not marked down for it (upstream_done).
      if (!conn->timed_out && !conn->aborted && ec != asio::error::no_descriptors)
        ec = asio::error::connection_refused;
      return upstream_done(ex, b, conn, ec, nullptr, false);
    }
    conn->connected = true;
    error_code e;
    conn->socket.set_option(tcp::no_delay(true), e);
    do_exchange();
  });
}

void Server::upstream_done(const std::shared_ptr<Exchange>& ex, Backend& b,
                           const std::shared_ptr<UpstreamConn>& conn, error_code ec, Response* res,
                           bool response_started) {
  Pool& pool = *b.pool;
  b.active.erase(conn.get());
  const bool aborted = conn->aborted;
  if (!ec && res) {
    // Success: return the connection to the idle list when both sides allow keep-alive.
    if (res->keep_alive() && !conn->parser->need_eof() && b.healthy && !draining_) {
      conn->reused = false;
      conn->parser.reset();
      b.idle.push_back(conn);
    } else {
      error_code e;
      conn->socket.close(e);
    }
    const auto ns = ns_since(ex->t_dispatched, Clock::now());
    pool.m.upstream.observe_ns(ns);
    pool.upstream_ewma_s =
        pool.upstream_ewma_s == 0.0 ? ns / 1e9 : 0.9 * pool.upstream_ewma_s + 0.1 * (ns / 1e9);
    --b.in_flight;
    --pool.in_flight;
    finish(ex, std::move(*res));
    pump(pool);
    if (draining_) maybe_finish_drain();
    return;
  }
  error_code e;
  conn->socket.close(e);
  const bool timed_out = conn->timed_out;
  // A reused keep-alive connection that the backend had already closed: the request never
  // reached it, so one retry on a fresh connection to the same backend is safe.
  const bool stale =
      conn->reused && !response_started && !aborted && !timed_out && ex->attempts < 3 && b.healthy;
  if (stale) {
    return send_upstream(ex, b, std::make_shared<UpstreamConn>(ioc_, b));
  }
  --b.in_flight;
  --pool.in_flight;
  unsigned status = 502;
  std::string reason = "upstream_error";
  std::string msg = "backend " + b.addr.text() + ": " + ec.message();
  if (aborted) {
    ++pool.m.upstream_errors[kErrBackendDown];
    reason = "backend_down";
    msg = "backend " + b.addr.text() + " was taken out";
  } else if (timed_out) {
    ++pool.m.upstream_errors[kErrTimeout];
    status = 504;
    reason = "upstream_timeout";
    msg = "backend " + b.addr.text() + " did not answer in time";
  } else if (ec == asio::error::connection_refused) {
    ++pool.m.upstream_errors[kErrConnect];
    reason = "connect_failed";
  } else if (ec == asio::error::no_descriptors) {
    ++pool.m.upstream_errors[kErrIo];
    status = 503;
    reason = "no_descriptors";
    msg = "the gateway is out of file descriptors; retry";
  } else {
    ++pool.m.upstream_errors[kErrIo];
  }
  if (!aborted && !timed_out &&
      (ec == asio::error::connection_refused || ec == asio::error::connection_reset ||
       ec == asio::error::eof || ec == http::error::end_of_stream)) {
    // Passive health check: a refused or reset connection takes the backend out at once
    // (health checks bring it back).
    if (pool.cfg.health.enabled && b.healthy) mark_down(b, ec.message());
  }
  pool.m.upstream.observe_ns(ns_since(ex->t_dispatched, Clock::now()));
  finish(ex, error_response(status, ex->req.version(), reason, msg));
  pump(pool);
  if (draining_) maybe_finish_drain();
}

// ---------------------------------------------------------------------------------------------
// Health checks.

struct HealthProbe {
  explicit HealthProbe(asio::io_context& ioc) : stream(ioc) {}
  beast::tcp_stream stream;
  beast::flat_buffer buffer;
  Request req;
  http::response_parser<http::string_body> parser;
};

void Server::schedule_health(Backend& b, std::chrono::milliseconds delay) {
  b.health_timer->expires_after(delay);
  b.health_timer->async_wait([this, &b](error_code ec) {
    if (ec || stopped_) return;
    run_health(b);
  });
}

void Server::run_health(Backend& b) {
  const auto& hc = b.pool->cfg.health;
  auto probe = std::make_shared<HealthProbe>(ioc_);
  probe->req = Request{http::verb::get, hc.path, 11};
  probe->req.set(http::field::host, b.addr.text());
  probe->req.set(http::field::user_agent, "sluice-gateway-health");
  probe->req.keep_alive(false);
  probe->stream.expires_after(std::chrono::milliseconds(hc.timeout_ms));
  probe->stream.async_connect(b.endpoint, [this, &b, probe](error_code ec) {
    if (ec == asio::error::no_descriptors) {  // says nothing about the backend: try again later
      if (!stopped_) schedule_health(b, std::chrono::milliseconds(b.pool->cfg.health.interval_ms));
      return;
    }
    if (ec) return health_result(b, false);
    http::async_write(probe->stream, probe->req, [this, &b, probe](error_code ec, std::size_t) {
      if (ec) return health_result(b, false);
      probe->parser.body_limit(64 * 1024);
      http::async_read(probe->stream, probe->buffer, probe->parser,
                       [this, &b, probe](error_code ec, std::size_t) {
                         error_code e;
                         probe->stream.socket().close(e);
                         health_result(b, !ec && probe->parser.get().result_int() / 100 == 2);
                       });
    });
  });
}

void Server::health_result(Backend& b, bool ok) {
  const auto& hc = b.pool->cfg.health;
  if (ok) {
    b.consecutive_failures = 0;
    ++b.consecutive_successes;
    if (!b.healthy && b.consecutive_successes >= hc.healthy_threshold) mark_up(b);
  } else {
    b.consecutive_successes = 0;
    ++b.consecutive_failures;
    if (b.healthy && b.consecutive_failures >= hc.unhealthy_threshold) {
      mark_down(b, "health check failed");
    }
  }
  if (!stopped_) schedule_health(b, std::chrono::milliseconds(hc.interval_ms));
}

void Server::mark_down(Backend& b, const std::string& why) {
  if (!b.healthy) return;
  b.healthy = false;
  b.consecutive_successes = 0;
  Pool& pool = *b.pool;
  log_line("pool " + pool.cfg.name + ": backend " + b.addr.text() + " down (" + why + ")");
  // Fail fast: abort this backend's exchanges (their handlers answer 502) and drop idle
  // connections.
  for (UpstreamConn* c : std::vector<UpstreamConn*>(b.active.begin(), b.active.end())) {
    c->aborted = true;
    error_code e;
    c->socket.cancel(e);
    c->socket.close(e);
  }
  for (auto& c : b.idle) {
    error_code e;
    c->socket.close(e);
  }
  b.idle.clear();
  if (pool.healthy_backends() == 0) {
    fail_queued(pool, 503, RejectReason::kNoBackend, "no healthy backend");
  }
}

void Server::mark_up(Backend& b) {
  b.healthy = true;
  log_line("pool " + b.pool->cfg.name + ": backend " + b.addr.text() + " up");
  pump(*b.pool);
}

// ---------------------------------------------------------------------------------------------
// Metrics and the scale endpoint.

Response Server::metrics_response(unsigned version) {
  PromWriter w;
  const auto now_s =
      std::chrono::duration_cast<std::chrono::seconds>(Clock::now().time_since_epoch()).count();
  auto pool_labels = [](const Pool& p) { return Labels{{"pool", p.cfg.name}}; };
  auto class_labels = [](const Pool& p, int c) {
    return Labels{{"pool", p.cfg.name},
                  {"class", std::string(class_name(static_cast<RequestClass>(c)))}};
  };

  w.family("sluice_gateway_queue_depth", "gauge", "Requests waiting in the pool's queue.");
  for (auto& p : pools_)
    w.sample("sluice_gateway_queue_depth", pool_labels(*p), std::int64_t{p->queued});
  w.family("sluice_gateway_queue_depth_max", "gauge",
           "Highest queue depth seen since start (bounded by maxQueueDepth + criticalHeadroom).");
  for (auto& p : pools_) {
    w.sample("sluice_gateway_queue_depth_max", pool_labels(*p), std::int64_t{p->m.queue_depth_max});
  }
  w.family("sluice_gateway_queue_capacity", "gauge", "maxQueueDepth of the pool.");
  for (auto& p : pools_) {
    w.sample("sluice_gateway_queue_capacity", pool_labels(*p),
             std::int64_t{p->cfg.max_queue_depth});
  }
  w.family("sluice_gateway_in_flight", "gauge", "Requests at the pool's backends.");
  for (auto& p : pools_)
    w.sample("sluice_gateway_in_flight", pool_labels(*p), std::int64_t{p->in_flight});
  w.family("sluice_gateway_backends", "gauge", "Backends of the pool by health state.");
  for (auto& p : pools_) {
    int healthy = p->healthy_backends();
    w.sample("sluice_gateway_backends", Labels{{"pool", p->cfg.name}, {"state", "healthy"}},
             std::int64_t{healthy});
    w.sample("sluice_gateway_backends", Labels{{"pool", p->cfg.name}, {"state", "unhealthy"}},
             static_cast<std::int64_t>(p->backends.size()) - healthy);
  }
  w.family("sluice_gateway_desired_replicas", "gauge",
           "Backends the pool needs to serve its offered rate and drain its queue.");
  for (auto& p : pools_) {
    w.sample("sluice_gateway_desired_replicas", pool_labels(*p),
             std::int64_t{p->desired_replicas(now_s)});
  }
  w.family("sluice_gateway_offered_rate", "gauge",
           "Requests per second routed to the pool over the last 5 s.");
  for (auto& p : pools_)
    w.sample("sluice_gateway_offered_rate", pool_labels(*p), p->offered_rate(now_s));

  auto per_class = [&](const char* name, const char* help, auto field) {
    w.family(name, "counter", help);
    for (auto& p : pools_) {
      for (int c = 0; c < kNumClasses; ++c) w.sample(name, class_labels(*p, c), (p->m.*field)[c]);
    }
  };
  per_class("sluice_gateway_admitted_total",
            "Requests admitted to the pool (dispatched or queued).", &PoolCounters::admitted);
  per_class("sluice_gateway_fallback_total", "Requests routed from this pool to its fallback pool.",
            &PoolCounters::fallback);
  per_class("sluice_gateway_expired_total",
            "Requests answered 503 because their queue deadline passed.", &PoolCounters::expired);
  per_class("sluice_gateway_client_disconnects_total",
            "Queued requests removed because the client went away.", &PoolCounters::disconnected);
  w.family("sluice_gateway_rejected_total", "counter",
           "Requests rejected at admission (429; 503 for no_backend), by reason.");
  for (auto& p : pools_) {
    for (int c = 0; c < kNumClasses; ++c) {
      for (auto reason : {RejectReason::kShed, RejectReason::kQueueFull, RejectReason::kTenantLimit,
                          RejectReason::kNoBackend}) {
        Labels l = class_labels(*p, c);
        l.emplace_back("reason", std::string(reason_name(reason)));
        w.sample("sluice_gateway_rejected_total", l,
                 p->m.rejected[static_cast<std::size_t>(c)][static_cast<std::size_t>(reason)]);
      }
    }
  }
  w.family("sluice_gateway_upstream_errors_total", "counter",
           "Failed upstream exchanges by kind (answered 502/504).");
  for (auto& p : pools_) {
    for (std::size_t k = 0; k < kUpstreamErrorNames.size(); ++k) {
      w.sample("sluice_gateway_upstream_errors_total",
               Labels{{"pool", p->cfg.name}, {"kind", kUpstreamErrorNames[k]}},
               p->m.upstream_errors[k]);
    }
  }
  auto hist = [&](const char* name, const char* help, Histogram PoolCounters::*field) {
    w.family(name, "histogram", help);
    for (auto& p : pools_) w.histogram(name, pool_labels(*p), p->m.*field);
  };
  hist("sluice_gateway_queue_wait_seconds", "Time from admission to dispatch.",
       &PoolCounters::queue_wait);
  hist("sluice_gateway_upstream_seconds", "Time from dispatch to the backend's full response.",
       &PoolCounters::upstream);
  hist("sluice_gateway_request_seconds", "Time from admission to the response (admitted only).",
       &PoolCounters::total);
  w.family("sluice_gateway_responses_total", "counter", "Responses sent, by status code.");
  for (auto& [code, n] : responses_) {
    w.sample("sluice_gateway_responses_total", Labels{{"code", std::to_string(code)}}, n);
  }
  w.family("sluice_gateway_connections", "gauge", "Open client connections.");
  w.sample("sluice_gateway_connections", {}, static_cast<std::int64_t>(sessions_.size()));
  w.family("sluice_gateway_connections_total", "counter", "Client connections accepted.");
  w.sample("sluice_gateway_connections_total", {}, connections_total_);
  w.family("sluice_gateway_connections_refused_total", "counter",
           "Connections refused at maxConnections.");
  w.sample("sluice_gateway_connections_refused_total", {}, connections_refused_);
  w.family("sluice_gateway_connections_refused_per_client_total", "counter",
           "Connections refused because their client address held maxConnectionsPerClient.");
  w.sample("sluice_gateway_connections_refused_per_client_total", {}, connections_refused_client_);
  w.family("sluice_gateway_draining", "gauge", "1 while draining after SIGTERM.");
  w.sample("sluice_gateway_draining", {}, std::int64_t{draining_ ? 1 : 0});
  return make_response(200, version, w.text(), "text/plain; version=0.0.4; charset=utf-8");
}

Response Server::scale_response(unsigned version, std::string_view target) {
  std::string only;
  if (auto q = target.find("pool="); q != std::string_view::npos) {
    only = std::string(target.substr(q + 5, target.find('&', q) - (q + 5)));
  }
  const auto now_s =
      std::chrono::duration_cast<std::chrono::seconds>(Clock::now().time_since_epoch()).count();
  std::string body = "{\"pools\":[";
  bool first = true;
  for (auto& p : pools_) {
    if (!only.empty() && p->cfg.name != only) continue;
    if (!first) body += ',';
    first = false;
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "{\"pool\":\"%s\",\"replicas\":%zu,\"healthy\":%d,\"desiredReplicas\":%d,"
                  "\"queueDepth\":%d,\"inFlight\":%d,\"offeredRate\":%.3f,"
                  "\"upstreamSecondsEwma\":%.6f}",
                  json_escape(p->cfg.name).c_str(), p->backends.size(), p->healthy_backends(),
                  p->desired_replicas(now_s), p->queued, p->in_flight, p->offered_rate(now_s),
                  p->upstream_ewma_s);
    body += buf;
  }
  body += "]}\n";
  if (first && !only.empty()) {
    return error_response(404, version, "no_pool", "no pool named '" + only + "'");
  }
  return make_response(200, version, std::move(body));
}

}  // namespace

int run_gateway(const GatewayConfig& cfg, const RunOptions& opts) {
  // A client that vanishes mid-write must not kill the process.
  std::signal(SIGPIPE, SIG_IGN);
  // The io_context outlives the server: handlers still queued when it stops are destroyed with
  // it, after the server, and the sessions they hold see alive() == false.
  asio::io_context ioc(1);
  int code = 0;
  {
    Server server(ioc, cfg);
    if (!server.start(opts)) return 1;
    // Last resort: an exception out of a handler (a bug; input errors are answers) is logged
    // and the loop goes on, so one bad request cannot take every connection down. Bounded:
    // a handler that throws over and over ends the process after 1,000 of them.
    for (int faults = 0;; ++faults) {
      try {
        ioc.run();
        break;
      } catch (const std::exception& e) {
        log_line(std::string("internal error in a handler: ") + e.what());
        if (faults >= 1000) return 1;
      }
    }
    code = server.exit_code();
    server.detach();
  }
  return code;
}

}  // namespace sluice::gateway
