// One connection: wait for a request (idle deadline), read its header (header deadline from the
// first byte), its body (body deadline), hand it to a handler, write the answer (write
// deadline), and again while the client keeps the connection alive.
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <iterator>

#include "net/server_impl.h"
#include "net/wire.h"

namespace sluice::net {

namespace {

constexpr size_t kFirstRead = 4096;
// A connection closed after an early answer (413, 431) drains what the client still sends for
// a moment, bounded in time and bytes, so that the answer is not destroyed by the reset that
// unread input causes.
constexpr auto kLinger = std::chrono::milliseconds(1000);
constexpr size_t kLingerMaxBytes = 4 << 20;
constexpr size_t kLingerChunk = 16 << 10;

bool is_disconnect(const error_code& ec) {
  return ec == http::error::end_of_stream || ec == asio::error::eof ||
         ec == asio::error::connection_reset || ec == asio::error::operation_aborted ||
         ec == asio::error::broken_pipe || ec == asio::error::bad_descriptor;
}

// Runs a handler; what it threw, if it did, is counted, logged and answered 500 in `res`.
template <class F>
bool run_guarded(Server::Impl& server, const Request& req, Response& res, F&& handler) {
  std::string what;
  try {
    handler();
    return true;
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
    what = "an exception that is not a std::exception";
  }
  ++server.handler_errors;
  server.log("handler for " + req.method + " " + req.path + " threw: " + what);
  res = Response{};
  server.set_stack_error(res, 500, "internal", "internal error", {what});
  return false;
}

}  // namespace

void run_handler(Server::Impl& server, const Route& route, Request& req, Response& res) {
  run_guarded(server, req, res, [&] { route.handler(req, res); });
}

Connection::Connection(Server::Impl& server, tcp::socket socket, asio::ip::address addr, int port,
                       Slot slot)
    : server_(server),
      socket_(std::move(socket)),
      reader_(server.opts),
      addr_(std::move(addr)),
      addr_text_(addr_.to_string()),
      port_(port),
      slot_(slot) {
  // Headers and body may leave in separate segments: without TCP_NODELAY a keep-alive answer
  // can wait for the client's delayed ACK (about 40 ms).
  error_code ec;
  socket_.set_option(tcp::no_delay(true), ec);
}

Connection::~Connection() {
  server_.release(this, addr_, slot_);
}

void Connection::start() {
  asio::post(socket_.get_executor(), [self = shared_from_this()] { self->next_request(); });
}

void Connection::close() {
  asio::post(socket_.get_executor(), [self = shared_from_this()] { self->close_now(); });
}

void Connection::close_if_idle() {
  asio::post(socket_.get_executor(), [self = shared_from_this()] {
    if (self->phase_ == Phase::kIdle && self->reader_.buffer().size() == 0) self->close_now();
  });
}

void Connection::close_now() {
  if (closed_) return;
  closed_ = true;
  gone_.store(true, std::memory_order_relaxed);
  deadline_ns_.store(kNever, std::memory_order_relaxed);
  error_code e;
  socket_.shutdown(tcp::socket::shutdown_both, e);
  socket_.close(e);
}

// Connections in the reserve (over a cap) get the short deadline for everything they read.
std::chrono::milliseconds Connection::deadline(std::chrono::milliseconds normal) const {
  return slot_ == Slot::kReserve ? std::min(normal, server_.opts.reserve_timeout) : normal;
}

void Connection::arm(Phase p, std::chrono::milliseconds timeout) {
  phase_ = p;
  timed_out_ = false;
  deadline_ns_.store(now_ns() + std::chrono::nanoseconds(timeout).count(),
                     std::memory_order_relaxed);
}

void Connection::disarm(Phase p) {
  phase_ = p;
  timed_out_ = false;
  deadline_ns_.store(kNever, std::memory_order_relaxed);
}

void Connection::post_deadline() {
  asio::post(socket_.get_executor(), [self = shared_from_this()] { self->on_deadline(); });
}

// Reads are cancelled, so that their handler decides (a quiet close, a 408); a client that does
// not read its answer, or lingers, is closed.
void Connection::on_deadline() {
  if (closed_ || timed_out_ || now_ns() < deadline_ns()) return;
  timed_out_ = true;
  deadline_ns_.store(kNever, std::memory_order_relaxed);
  if (phase_ == Phase::kIdle || phase_ == Phase::kHeader || phase_ == Phase::kBody) {
    error_code e;
    socket_.cancel(e);
    return;
  }
  if (phase_ == Phase::kWrite) ++server_.timeouts;
  close_now();
}

void Connection::next_request() {
  if (closed_ || server_.stopping || server_.draining) return close_now();
  // on_header() sets this request's own body limit.
  reader_.start(std::max(server_.opts.max_body_bytes, server_.router.largest_body_limit()));
  auto& buffer = reader_.buffer();
  if (buffer.size() > 0) return on_bytes();  // the next request is already here
  // Idle: a pending read and a deadline, nothing else. The header deadline starts with the
  // first byte, so a keep-alive connection may be quiet for the whole idle timeout.
  arm(Phase::kIdle, deadline(server_.opts.idle_timeout));
  socket_.async_read_some(buffer.prepare(kFirstRead),
                          [self = shared_from_this()](error_code ec, size_t n) {
                            if (ec) return self->on_read_error(ec);
                            self->reader_.buffer().commit(n);
                            self->on_bytes();
                          });
}

// What is buffered is parsed first (Beast's async reads would do the same, but complete through
// one more trip around the event loop).
void Connection::on_bytes() {
  const error_code ec = reader_.parse_buffered(false);
  if (!ec) return on_header({});
  if (ec != http::error::need_more) return on_read_error(ec);
  read_header();
}

void Connection::read_header() {
  arm(Phase::kHeader, deadline(server_.opts.header_timeout));
  http::async_read_header(
      socket_, reader_.buffer(), reader_.parser(),
      [self = shared_from_this()](error_code ec, size_t) { self->on_header(ec); });
}

void Connection::on_header(error_code ec) {
  if (ec) return on_read_error(ec);
  if (auto no = reader_.check_header([this] { return request_body_limit(); }))
    return answer_error(no->status, no->reason, no->error, true, no->details);
  if (!enter_tenant()) return;
  const error_code body = reader_.parse_buffered(true);
  if (!body) return on_request();
  if (body != http::error::need_more) return on_read_error(body);
  if (beast::iequals(reader_.parser().get()[http::field::expect], "100-continue")) {
    // The client waits for this before it sends the body (the size was checked against the
    // limit with the header).
    static const std::string kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
    arm(Phase::kWrite, server_.opts.write_timeout);
    asio::async_write(socket_, asio::buffer(kContinue),
                      [self = shared_from_this()](error_code e, size_t) {
                        if (e) return self->close_now();
                        self->read_body();
                      });
    return;
  }
  read_body();
}

// Counts the request against its tenant's requests in flight, before its body is read: a
// tenant over its cap gets a 429 without the server reading (or buffering) the body. False
// when it was answered so.
bool Connection::enter_tenant() {
  tenant_.reset();
  if (!server_.opts.tenant_of) return true;
  const auto& h = reader_.parser().get();
  const std::string_view target = h.target();
  RequestHead head;
  head.method = h.method_string();
  head.path = target.substr(0, target.find('?'));
  head.remote_addr = addr_text_;
  head.header = [&h](std::string_view name) -> std::string_view { return h[name]; };
  std::string key = server_.opts.tenant_of(head);
  if (key.empty()) return true;
  tenant_ = server_.enter_tenant(std::move(key));
  if (tenant_) return true;
  ++server_.tenant_429;
  auto ex = std::make_shared<Exchange>();
  server_.set_stack_error(
      ex->res, 429, "too_many_requests", "too many requests of this caller in flight",
      {"at most " + std::to_string(server_.opts.tenant_max_in_flight) +
       " requests of one caller are served at once; wait for an answer before sending more"});
  ex->res.set_header("Retry-After", "1");
  ex->keep_alive = false;  // the body was not read
  reader_.reset();
  write(std::move(ex));
  return false;
}

// The body limit of this request: the server's, or a route's larger one for callers it admits
// by their header (RouteOptions::max_body_bytes, large_body_allowed). The route is looked up
// here only when some route raises the limit.
size_t Connection::request_body_limit() const {
  const size_t limit = server_.opts.max_body_bytes;
  const auto& router = server_.router;
  if (router.largest_body_limit() <= limit) return limit;
  const auto& h = reader_.parser().get();
  const std::string target(h.target());
  const std::string path =
      percent_decode(std::string_view(target).substr(0, target.find('?')), false);
  std::smatch matches;
  const Route* route = router.find(std::string(h.method_string()), path, matches);
  if (!route || route->options.max_body_bytes <= limit || !route->options.large_body_allowed)
    return limit;
  return route->options.large_body_allowed(path, std::string(h[http::field::authorization]))
             ? route->options.max_body_bytes
             : limit;
}

void Connection::read_body() {
  arm(Phase::kBody, deadline(server_.opts.body_timeout));
  http::async_read(socket_, reader_.buffer(), reader_.parser(),
                   [self = shared_from_this()](error_code ec, size_t) {
                     if (ec) return self->on_read_error(ec);
                     self->on_request();
                   });
}

void Connection::on_read_error(error_code ec) {
  if (timed_out_ && ec == asio::error::operation_aborted) {
    // Silence on an idle keep-alive connection is not an error: it is closed (a reserve
    // connection that asked nothing learns that it was over a cap, when so configured).
    if (phase_ == Phase::kIdle) {
      if (slot_ == Slot::kReserve && server_.opts.answer_over_cap && !closed_)
        return answer_over_cap(std::make_shared<Exchange>());
      return close_now();
    }
    ++server_.timeouts;
    if (server_.opts.answer_timeouts && !closed_)
      return answer_error(408, "timeout", "request not received in time", true);
    return close_now();
  }
  if (is_disconnect(ec)) return close_now();
  if (auto no = reader_.refusal(ec))
    return answer_error(no->status, no->reason, no->error, true, no->details);
  close_now();
}

void Connection::answer_error(int status, std::string_view reason, const std::string& error,
                              bool close, const std::vector<std::string>& details) {
  auto ex = std::make_shared<Exchange>();
  server_.set_stack_error(ex->res, status, reason, error, details);
  ex->keep_alive = !close;
  reader_.reset();
  write(std::move(ex));
}

void Connection::on_request() {
  if (auto no = reader_.check_trailer())
    return answer_error(no->status, no->reason, no->error, true, no->details);
  auto ex = std::make_shared<Exchange>();
  auto msg = reader_.release();
  ex->keep_alive = msg.keep_alive();
  ex->req = to_request(std::move(msg), addr_text_, port_);
  ex->head = ex->req.method == "HEAD";
  ex->route = server_.router.find(ex->req.method, ex->req.path, ex->req.matches);
  ex->tenant = std::move(tenant_);
  dispatch(std::move(ex));
}

void Connection::answer_over_cap(std::shared_ptr<Exchange> ex) {
  ++server_.over_cap_503;
  ex->keep_alive = false;
  server_.set_stack_error(
      ex->res, 503, "too_many_connections", "too many connections: try again later",
      {"the server holds its connection limit (" +
       std::to_string(server_.opts.max_connections_per_ip) + " per client address, " +
       std::to_string(server_.max_connections) + " in all)"});
  ex->res.set_header("Retry-After", "1");
  write(std::move(ex));
}

// Inline and asynchronous routes run here, on the I/O thread; the others go to a worker. A
// connection over a cap may ask for inline routes only.
void Connection::dispatch(std::shared_ptr<Exchange> ex) {
  disarm(Phase::kHandler);  // the handler's own deadlines bound it, not the connection's
  if (!ex->route) {
    server_.set_stack_error(ex->res, 404, "no_route",
                            "no such endpoint: " + ex->req.method + " " + ex->req.path);
    return write(std::move(ex));
  }
  if (ex->route->options.run_inline) {
    if (ex->route->async) return run_async(std::move(ex));
    run_handler(server_, *ex->route, ex->req, ex->res);
    return write(std::move(ex));
  }
  if (slot_ == Slot::kReserve) return answer_over_cap(std::move(ex));
  if (ex->route->async) return run_async(std::move(ex));
  auto job = [self = shared_from_this(), ex] {
    run_handler(self->server_, *ex->route, ex->req, ex->res);
    asio::post(self->socket_.get_executor(), [self, ex] { self->write(ex); });
  };
  if (to_worker(std::move(job), *ex)) return;
  set_busy(ex->res);
  write(std::move(ex));
}

bool Connection::to_worker(std::function<void()> job, const Exchange& ex) {
  WorkerPool* pool = server_.pool_for(ex.route ? ex.route->options.lane : std::string());
  return pool && pool->try_post(std::move(job), ex.tenant ? ex.tenant->key : std::string());
}

// Every worker busy and the queue full (any thread: counters and options only).
void Connection::set_busy(Response& res) const {
  ++server_.busy_503;
  server_.set_stack_error(
      res, 503, "busy", "the server is busy: try again later",
      {std::to_string(server_.opts.max_queued) + " requests are waiting for a worker"});
  res.set_header("Retry-After", "1");
}

void Connection::run_async(std::shared_ptr<Exchange> ex) {
  auto state = std::make_shared<Responder::State>(shared_from_this(), ex);
  // A handler that throws after it answered keeps its answer; one that throws before gets 500.
  Response failed;
  if (run_guarded(server_, ex->req, failed, [&] { ex->route->async(ex->req, Responder(state)); }))
    return;
  if (!state->take().first) return;
  ex->res = std::move(failed);
  write(std::move(ex));
}

// On a worker: a Responder's job (Responder::to_worker). One that throws before it answered
// gets a 500, as a synchronous handler does.
void Connection::run_job(const std::shared_ptr<Exchange>& ex, Responder::State& state,
                         const std::function<void()>& job) {
  Response failed;
  if (run_guarded(server_, ex->req, failed, job)) return;
  if (!state.take().first) return;
  ex->res = std::move(failed);
  answer(shared_from_this(), ex);
}

void Connection::answer(std::shared_ptr<Connection> self, std::shared_ptr<Exchange> ex) {
  auto executor = self->socket_.get_executor();
  asio::dispatch(executor, [self = std::move(self), ex = std::move(ex)]() mutable {
    self->write(std::move(ex));
  });
}

void Connection::abandon() {
  asio::dispatch(socket_.get_executor(), [self = shared_from_this()] {
    self->stop_watch();
    self->close_now();
  });
}

// While a handler holds the request, a readable socket with nothing to read means the client
// closed it.
void Connection::watch(std::function<void()> on_close) {
  asio::dispatch(socket_.get_executor(), [self = shared_from_this(), f = std::move(on_close)] {
    if (self->closed_ || self->phase_ != Phase::kHandler || self->watching_) return;
    if (self->reader_.buffer().size() > 0) return;  // pipelined bytes: nothing to learn
    // A close that came before the watch raised no event a new wait would see: look first.
    char c = 0;
    const ssize_t n = ::recv(self->socket_.native_handle(), &c, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n > 0) return;  // a pipelined request
    if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
      asio::post(self->socket_.get_executor(), f);
      return;
    }
    self->on_close_ = std::move(f);
    self->watching_ = true;
    const auto gen = ++self->watch_gen_;
    self->socket_.async_wait(tcp::socket::wait_read, [self, gen](error_code ec) {
      if (gen != self->watch_gen_ || !self->watching_) return;
      self->watching_ = false;
      auto cb = std::move(self->on_close_);
      if (ec == asio::error::operation_aborted) return;
      error_code e2;
      const size_t avail = self->socket_.available(e2);
      if (!ec && !e2 && avail > 0) return;  // a pipelined request, not a close
      if (cb) cb();
    });
  });
}

void Connection::stop_watch() {
  if (!watching_) return;
  watching_ = false;
  ++watch_gen_;
  on_close_ = nullptr;
  error_code e;
  socket_.cancel(e);
}

void Connection::write(std::shared_ptr<Exchange> ex) {
  stop_watch();
  if (closed_) return;
  const bool keep = ex->keep_alive && !server_.stopping && !server_.draining;
  serialize_response_head(ex->res, ex->req.version, keep, ex->head, out_head_);
  if (server_.opts.on_response) server_.opts.on_response(ex->res.status);
  arm(Phase::kWrite, server_.opts.write_timeout);
  std::array<asio::const_buffer, 2> bufs = {
      asio::buffer(out_head_), ex->head ? asio::const_buffer() : asio::buffer(ex->res.body)};
  asio::async_write(socket_, bufs, [self = shared_from_this(), ex, keep](error_code ec, size_t) {
    self->on_write(ec, keep);
  });
}

void Connection::on_write(error_code ec, bool keep) {
  if (ec) return close_now();
  if (keep) return next_request();
  // The request may not have been read to its end (an early 413): drain before closing.
  linger_close();
}

void Connection::linger_close() {
  error_code e;
  socket_.shutdown(tcp::socket::shutdown_send, e);
  if (e) return close_now();
  reader_.buffer().clear();
  arm(Phase::kLinger, kLinger);
  linger_read();
}

void Connection::linger_read() {
  socket_.async_read_some(reader_.buffer().prepare(kLingerChunk),
                          [self = shared_from_this()](error_code ec, size_t n) {
                            self->lingered_ += n;
                            self->reader_.buffer().clear();
                            if (ec || self->lingered_ > kLingerMaxBytes) return self->close_now();
                            self->linger_read();
                          });
}

void Connection::lost_responder(std::shared_ptr<Exchange> ex) {
  ++server_.handler_errors;
  server_.log("handler for " + ex->req.method + " " + ex->req.path + " gave no answer");
  ex->res = Response{};
  server_.set_stack_error(ex->res, 500, "internal", "internal error",
                          {"the handler gave no answer"});
  answer(shared_from_this(), std::move(ex));
}

// ---------------------------------------------------------------------------------------------

void Responder::send(Response res) const {
  auto [conn, ex] = state_->take();
  if (!conn) return;
  ex->res = std::move(res);
  Connection::answer(std::move(conn), std::move(ex));
}

void Responder::close() const {
  if (auto conn = state_->take().first) conn->abandon();
}

void Responder::on_disconnect(std::function<void()> f) const {
  if (auto conn = state_->connection()) conn->watch(std::move(f));
}

bool Responder::answered() const {
  return !state_->connection();
}

void Responder::to_worker(std::function<void()> job) const {
  auto [conn, ex] = state_->peek();
  if (!conn) return;
  auto run = [conn, ex, state = state_, job = std::move(job)] { conn->run_job(ex, *state, job); };
  if (conn->to_worker(std::move(run), *ex)) return;
  if (!state_->take().first) return;  // refused (the job is gone): 503, unless answered meanwhile
  conn->set_busy(ex->res);
  Connection::answer(std::move(conn), std::move(ex));
}

Responder::State::~State() {
  if (!conn || conn->server_stopping()) return;
  conn->lost_responder(std::move(ex));
}

}  // namespace sluice::net
