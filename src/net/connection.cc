// One connection: wait for a request (idle deadline), read its header (header deadline from the
// first byte), its body (body deadline), hand it to a handler, write the answer (write
// deadline), and again while the client keeps the connection alive.
#include <algorithm>
#include <cstdio>

#include "net/server_impl.h"

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

}  // namespace

std::string describe_bytes(size_t n) {
  if (n >= (1 << 20) && n % (1 << 20) == 0) return std::to_string(n >> 20) + " MiB";
  if (n >= (1 << 10) && n % (1 << 10) == 0) return std::to_string(n >> 10) + " KiB";
  return std::to_string(n) + " bytes";
}

// A request and its answer, shared by the connection and the worker that runs the handler.
struct Connection::Exchange {
  Request req;
  Response res;
  const Route* route = nullptr;
  bool head = false;
  bool keep_alive = true;
};

void run_handler(Server::Impl& server, const Route& route, Request& req, Response& res) {
  std::string what;
  try {
    route.handler(req, res);
    return;
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
    what = "an exception that is not a std::exception";
  }
  ++server.handler_errors;
  server.log("handler for " + req.method + " " + req.path + " threw: " + what);
  res = Response{};
  set_error(res, 500, "internal error", {what});
}

Connection::Connection(Server::Impl& server, tcp::socket socket, asio::ip::address addr, int port,
                       Slot slot)
    : server_(server),
      stream_(std::move(socket)),
      addr_(std::move(addr)),
      port_(port),
      slot_(slot) {
  // Headers and body may leave in separate segments: without TCP_NODELAY a keep-alive answer
  // can wait for the client's delayed ACK (about 40 ms).
  error_code ec;
  stream_.socket().set_option(tcp::no_delay(true), ec);
}

Connection::~Connection() {
  server_.release(this, addr_, slot_);
}

void Connection::start() {
  asio::post(stream_.get_executor(), [self = shared_from_this()] { self->next_request(); });
}

void Connection::close() {
  asio::post(stream_.get_executor(), [self = shared_from_this()] { self->close_now(); });
}

void Connection::close_now() {
  if (closed_) return;
  closed_ = true;
  error_code e;
  stream_.socket().shutdown(tcp::socket::shutdown_both, e);
  stream_.close();
}

// Connections in the reserve (over a cap) get the short deadline for everything they read.
std::chrono::milliseconds Connection::deadline(std::chrono::milliseconds normal) const {
  return slot_ == Slot::kReserve ? std::min(normal, server_.opts.reserve_timeout) : normal;
}

void Connection::next_request() {
  if (closed_ || server_.stopping) return close_now();
  parser_.emplace();
  parser_->header_limit(static_cast<std::uint32_t>(server_.opts.max_header_bytes));
  // The largest any route takes: Beast checks a Content-Length against the limit while it
  // parses the header, before the route is known. on_header() sets this request's own.
  body_limit_ = std::max(server_.opts.max_body_bytes, server_.router.largest_body_limit());
  parser_->body_limit(static_cast<std::uint64_t>(body_limit_));
  if (buffer_.size() > 0) return read_header();  // the next request is already here
  // Idle: a pending read and a timer, nothing else. The header deadline starts with the first
  // byte, so a keep-alive connection may be quiet for the whole idle timeout.
  stream_.expires_after(deadline(server_.opts.idle_timeout));
  stream_.async_read_some(buffer_.prepare(kFirstRead),
                          [self = shared_from_this()](error_code ec, size_t n) {
                            if (ec == beast::error::timeout) return self->close_now();  // quiet
                            if (ec) return self->on_read_error(ec);
                            self->buffer_.commit(n);
                            self->read_header();
                          });
}

void Connection::read_header() {
  stream_.expires_after(deadline(server_.opts.header_timeout));
  http::async_read_header(
      stream_, buffer_, *parser_,
      [self = shared_from_this()](error_code ec, size_t) { self->on_header(ec); });
}

void Connection::on_header(error_code ec) {
  if (ec) return on_read_error(ec);
  const auto& h = parser_->get();
  if (h.target().size() > server_.opts.max_target_bytes)
    return answer_error(414,
                        "request target longer than the " +
                            describe_bytes(server_.opts.max_target_bytes) + " limit",
                        true);
  if (parser_->is_done()) return on_request();
  body_limit_ = request_body_limit();
  if (const auto length = parser_->content_length(); length && *length > body_limit_)
    return answer_error(
        413, "request body larger than the " + describe_bytes(body_limit_) + " limit", true);
  parser_->body_limit(static_cast<std::uint64_t>(body_limit_));
  if (beast::iequals(h[http::field::expect], "100-continue")) {
    // The client waits for this before it sends the body (the size was checked against the
    // limit with the header).
    static const std::string kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
    stream_.expires_after(server_.opts.write_timeout);
    asio::async_write(stream_, asio::buffer(kContinue),
                      [self = shared_from_this()](error_code e, size_t) {
                        if (e) return self->close_now();
                        self->read_body();
                      });
    return;
  }
  read_body();
}

// The body limit of this request: the server's, or a route's larger one for callers it admits
// by their header (RouteOptions::max_body_bytes, large_body_allowed). The route is looked up
// here only when some route raises the limit.
size_t Connection::request_body_limit() const {
  const size_t limit = server_.opts.max_body_bytes;
  const auto& router = server_.router;
  if (router.largest_body_limit() <= limit) return limit;
  const auto& h = parser_->get();
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
  stream_.expires_after(deadline(server_.opts.body_timeout));
  http::async_read(stream_, buffer_, *parser_, [self = shared_from_this()](error_code ec, size_t) {
    if (ec) return self->on_read_error(ec);
    self->on_request();
  });
}

void Connection::on_read_error(error_code ec) {
  if (ec == beast::error::timeout) {
    // The socket is closed already: a client too slow to send its request gets no answer.
    ++server_.timeouts;
    closed_ = true;
    return;
  }
  if (is_disconnect(ec)) return close_now();
  if (ec == http::error::header_limit)
    return answer_error(431,
                        "request header larger than the " +
                            describe_bytes(server_.opts.max_header_bytes) + " limit",
                        true);
  if (ec == http::error::body_limit)
    return answer_error(
        413, "request body larger than the " + describe_bytes(body_limit_) + " limit", true);
  if (ec.category() == http::make_error_code(http::error::bad_target).category())
    return answer_error(400, "malformed request", true, {ec.message()});
  close_now();
}

void Connection::answer_error(int status, const std::string& error, bool close,
                              const std::vector<std::string>& details) {
  auto ex = std::make_shared<Exchange>();
  set_error(ex->res, status, error, details);
  ex->keep_alive = !close;
  parser_.reset();
  write(std::move(ex));
}

void Connection::on_request() {
  auto ex = std::make_shared<Exchange>();
  auto msg = parser_->release();
  parser_.reset();
  Request& req = ex->req;
  req.method = std::string(msg.method_string());
  req.target = std::string(msg.target());
  const auto q = req.target.find('?');
  req.path = percent_decode(std::string_view(req.target).substr(0, q), false);
  if (q != std::string::npos) req.params = parse_query(std::string_view(req.target).substr(q + 1));
  for (const auto& f : msg) req.headers.emplace_back(f.name_string(), f.value());
  req.body = std::move(msg.body());
  req.remote_addr = addr_.to_string();
  req.remote_port = port_;
  ex->head = req.method == "HEAD";
  ex->keep_alive = msg.keep_alive();
  ex->route = server_.router.find(req.method, req.path, req.matches);
  dispatch(std::move(ex));
}

// Inline routes run here, on the I/O thread; the others go to a worker. A connection over a cap
// may ask for inline routes only.
void Connection::dispatch(std::shared_ptr<Exchange> ex) {
  if (!ex->route) {
    set_error(ex->res, 404, "no such endpoint: " + ex->req.method + " " + ex->req.path);
    return write(std::move(ex));
  }
  if (ex->route->options.run_inline) {
    run_handler(server_, *ex->route, ex->req, ex->res);
    return write(std::move(ex));
  }
  if (slot_ == Slot::kReserve) {
    ++server_.over_cap_503;
    ex->keep_alive = false;
    set_error(ex->res, 503, "too many connections: try again later",
              {"the server holds its connection limit (" +
               std::to_string(server_.opts.max_connections_per_ip) + " per client address, " +
               std::to_string(server_.max_connections) + " in all)"});
    ex->res.set_header("Retry-After", "1");
    return write(std::move(ex));
  }
  auto job = [self = shared_from_this(), ex] {
    run_handler(self->server_, *ex->route, ex->req, ex->res);
    asio::post(self->stream_.get_executor(), [self, ex] { self->write(ex); });
  };
  if (server_.pool->try_post(std::move(job))) return;
  ++server_.busy_503;
  set_error(ex->res, 503, "the server is busy: try again later",
            {std::to_string(server_.opts.max_queued) + " requests are waiting for a worker"});
  ex->res.set_header("Retry-After", "1");
  write(std::move(ex));
}

void Connection::write(std::shared_ptr<Exchange> ex) {
  if (closed_) return;
  using Message = http::response<http::string_body>;
  auto msg = std::make_shared<Message>();
  const int status = ex->res.status >= 100 && ex->res.status <= 599 ? ex->res.status : 500;
  msg->result(static_cast<unsigned>(status));
  msg->version(11);
  if (!ex->res.content_type.empty()) msg->set(http::field::content_type, ex->res.content_type);
  for (const auto& [k, v] : ex->res.headers) msg->insert(k, v);
  msg->body() = std::move(ex->res.body);
  const bool keep = ex->keep_alive && !server_.stopping;
  msg->keep_alive(keep);
  msg->prepare_payload();
  if (ex->head) msg->body().clear();  // Content-Length stays that of the GET answer
  stream_.expires_after(server_.opts.write_timeout);
  http::async_write(stream_, *msg, [self = shared_from_this(), msg, keep](error_code ec, size_t) {
    self->on_write(ec, keep);
  });
}

void Connection::on_write(error_code ec, bool keep) {
  if (ec == beast::error::timeout) {
    ++server_.timeouts;
    closed_ = true;
    return;
  }
  if (ec) return close_now();
  if (keep) return next_request();
  // The request may not have been read to its end (an early 413): drain before closing.
  linger_close();
}

void Connection::linger_close() {
  error_code e;
  stream_.socket().shutdown(tcp::socket::shutdown_send, e);
  if (e) return close_now();
  buffer_.clear();
  stream_.expires_after(kLinger);
  linger_read();
}

void Connection::linger_read() {
  stream_.async_read_some(buffer_.prepare(kLingerChunk),
                          [self = shared_from_this()](error_code ec, size_t n) {
                            self->lingered_ += n;
                            self->buffer_.clear();
                            if (ec == beast::error::timeout) {
                              self->closed_ = true;
                              return;
                            }
                            if (ec || self->lingered_ > kLingerMaxBytes) return self->close_now();
                            self->linger_read();
                          });
}

}  // namespace sluice::net
