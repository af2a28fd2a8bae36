#include "net/client.h"

#include <poll.h>
#include <sys/socket.h>

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include "net/upstream.h"

#include <cctype>
#include <cerrno>

namespace sluice::net {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
using error_code = boost::system::error_code;
using std::chrono::milliseconds;

std::string Url::authority() const {
  return (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + port;
}

std::optional<Url> parse_url(std::string_view url) {
  Url out;
  const auto sep = url.find("://");
  out.scheme = sep == std::string_view::npos ? "http" : std::string(url.substr(0, sep));
  if (out.scheme != "http" && out.scheme != "https") return std::nullopt;
  std::string_view rest = sep == std::string_view::npos ? url : url.substr(sep + 3);
  rest = rest.substr(0, rest.find_first_of("/?#"));
  std::string_view port;
  if (!rest.empty() && rest.front() == '[') {  // [v6]:port
    const auto close = rest.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    out.host = std::string(rest.substr(1, close - 1));
    rest = rest.substr(close + 1);
    if (!rest.empty() && rest.front() != ':') return std::nullopt;
    if (!rest.empty()) port = rest.substr(1);
  } else {
    const auto colon = rest.rfind(':');
    out.host = std::string(rest.substr(0, colon));
    if (colon != std::string_view::npos) port = rest.substr(colon + 1);
    if (colon != std::string_view::npos && port.empty()) return std::nullopt;
  }
  if (out.host.empty() || port.size() > 5) return std::nullopt;
  for (char c : port)
    if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
  out.port = port.empty() ? (out.scheme == "https" ? "443" : "80") : std::string(port);
  if (std::stoi(out.port) > 65535) return std::nullopt;
  return out;
}

std::string ClientReply::get_header_value(std::string_view name) const {
  for (const auto& [k, v] : headers)
    if (iequals(k, name)) return v;
  return {};
}

bool ClientReply::has_header(std::string_view name) const {
  for (const auto& h : headers)
    if (iequals(h.first, name)) return true;
  return false;
}

// The connection (plain or TLS) and the io_context its operations run on: run() returns when
// the operation started last has completed (or been cut short by its deadline or cancel()).
struct Client::Conn {
  asio::io_context ioc;
  std::unique_ptr<ssl::context> tls_ctx;  // made at the first https connection
  std::unique_ptr<beast::tcp_stream> tcp;
  std::unique_ptr<beast::ssl_stream<beast::tcp_stream>> tls;
  beast::flat_buffer buffer;

  // Beast reads max(512, spare capacity) bytes at a time: an empty buffer would take a
  // several-KiB answer (an agent's orders) in 512-byte recv()s, a system call each.
  static constexpr size_t kReadBuffer = 16 * 1024;
  Conn() { buffer.reserve(kReadBuffer); }

  bool open() const { return tcp || tls; }
  beast::tcp_stream& lowest() { return tls ? beast::get_lowest_layer(*tls) : *tcp; }
  template <class F>
  void with_stream(F&& f) {
    if (tls) return f(*tls);
    f(*tcp);
  }
  void run() {
    ioc.restart();
    ioc.run();
  }
  // Between operations only (none may be pending).
  void close() {
    if (open()) lowest().close();
    tls.reset();
    tcp.reset();
    buffer.clear();
  }
  // An idle kept-alive connection the server has closed (or sent something unasked) is no use.
  bool stale() {
    if (!open() || buffer.size() > 0) return true;
    char c = 0;
    const ssize_t n = ::recv(lowest().socket().native_handle(), &c, 1, MSG_PEEK | MSG_DONTWAIT);
    return !(n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK));
  }

  ClientResult connect(const Url& url, milliseconds timeout);
  ClientResult handshake(const Url& url, milliseconds timeout);
  error_code write(const std::string& head, const std::string& body, milliseconds timeout);
  size_t send_now(const std::string& head, const std::string& body, error_code* ec);
  ClientResult read(bool head_only, const ClientOptions& o, const BodySink& on_body,
                    bool* got_some);
  error_code read_some(AnswerParser& parser, milliseconds timeout);
  bool cancel_asked(int poll_fd);

  Client* owner = nullptr;
  bool canceled = false;  // by cancel(), during this request
};

namespace {

bool clean_field(const std::string& s) {
  return s.find_first_of(std::string_view("\r\n\0", 3)) == std::string::npos;
}

// The request head: one gather write sends it and the body. Headers with a CR, LF or NUL are
// dropped (no header injection); framing is the client's (Content-Length, Connection).
std::string request_head(const std::string& method, const std::string& target, const Url& url,
                         const Fields& headers, const std::string& body,
                         const std::string& content_type, bool keep_alive) {
  std::string h = method + " " + target + " HTTP/1.1\r\nHost: " + url.authority() + "\r\n";
  bool agent = false;
  for (const auto& [k, v] : headers) {
    if (k.empty() || !clean_field(k) || !clean_field(v) || iequals(k, "Content-Length") ||
        iequals(k, "Transfer-Encoding") || iequals(k, "Connection") || iequals(k, "Host"))
      continue;
    agent = agent || iequals(k, "User-Agent");
    h += k + ": " + v + "\r\n";
  }
  if (!agent) h += "User-Agent: sluice\r\n";
  if (!content_type.empty() && clean_field(content_type))
    h += "Content-Type: " + content_type + "\r\n";
  if (!body.empty() || (method != "GET" && method != "HEAD"))
    h += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  if (!keep_alive) h += "Connection: close\r\n";
  return h + "\r\n";
}

std::string ms_text(milliseconds d) {
  return std::to_string(d.count()) + " ms";
}

// A request that failed on a reused connection before any answer: the server had closed it.
bool lost_idle_connection(const error_code& ec) {
  return ec == asio::error::eof || ec == http::error::end_of_stream ||
         ec == asio::error::connection_reset || ec == asio::error::broken_pipe ||
         ec == asio::error::connection_aborted;
}

}  // namespace

ClientResult Client::Conn::connect(const Url& url, milliseconds timeout) {
  const std::string where = url.authority();
  tcp::resolver resolver(ioc);
  error_code ec;
  const auto endpoints = resolver.resolve(url.host, url.port, ec);
  if (ec) return {ClientError::kConnection, "cannot resolve " + url.host + ": " + ec.message()};
  tcp = std::make_unique<beast::tcp_stream>(ioc);
  tcp->expires_after(timeout);
  tcp->async_connect(endpoints, [&ec](error_code e, const tcp::endpoint&) { ec = e; });
  run();
  if (canceled) return {ClientError::kCanceled, "the request to " + where + " was canceled"};
  if (ec == beast::error::timeout)
    return {ClientError::kConnection,
            "cannot connect to " + where + ": no answer within " + ms_text(timeout)};
  if (ec) {
    ClientResult failed(ClientError::kConnection,
                        "cannot connect to " + where + ": " + ec.message());
    if (ec == asio::error::connection_refused) failed.set_refused();
    return failed;
  }
  tcp->socket().set_option(tcp::no_delay(true), ec);
  if (url.scheme == "https") return handshake(url, timeout);
  return {};
}

// TLS over the new connection: the system's CAs, the server's name checked against `url.host`.
ClientResult Client::Conn::handshake(const Url& url, milliseconds timeout) {
  if (!tls_ctx) {
    tls_ctx = std::make_unique<ssl::context>(ssl::context::tls_client);
    tls_ctx->set_default_verify_paths();
    tls_ctx->set_verify_mode(ssl::verify_peer);
  }
  tls = std::make_unique<beast::ssl_stream<beast::tcp_stream>>(std::move(*tcp), *tls_ctx);
  tcp.reset();
  tls->set_verify_callback(ssl::host_name_verification(url.host));
  ::SSL_set_tlsext_host_name(tls->native_handle(), url.host.c_str());
  error_code ec;
  beast::get_lowest_layer(*tls).expires_after(timeout);
  tls->async_handshake(ssl::stream_base::client, [&ec](error_code e) { ec = e; });
  run();
  if (canceled)
    return {ClientError::kCanceled, "the request to " + url.authority() + " was canceled"};
  if (ec) return {ClientError::kConnection, "TLS with " + url.authority() + ": " + ec.message()};
  return {};
}

// A plain connection's request goes out with one sendmsg() when the socket takes all of it (a
// small request on an idle keep-alive connection, the agents' syncs): no deadline timer armed
// and cancelled, no pass through the io_context (issue 38). The bytes it did not take go the
// asynchronous way, under the deadline. A cancel() posted meanwhile runs in the read's run().
size_t Client::Conn::send_now(const std::string& head, const std::string& body, error_code* ec) {
  if (tls) return 0;
  iovec iov[2] = {{const_cast<char*>(head.data()), head.size()},
                  {const_cast<char*>(body.data()), body.size()}};
  msghdr msg{};
  msg.msg_iov = iov;
  msg.msg_iovlen = body.empty() ? 1 : 2;
  ssize_t n = 0;
  do {
    n = ::sendmsg(tcp->socket().native_handle(), &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  if (n >= 0) return static_cast<size_t>(n);
  if (errno != EAGAIN && errno != EWOULDBLOCK)
    *ec = error_code(errno, boost::system::system_category());
  return 0;
}

error_code Client::Conn::write(const std::string& head, const std::string& body,
                               milliseconds timeout) {
  error_code ec;
  const size_t sent = send_now(head, body, &ec);
  if (ec || sent == head.size() + body.size()) return ec;
  beast::buffers_suffix<std::array<asio::const_buffer, 2>> bufs(
      std::array<asio::const_buffer, 2>{asio::buffer(head), asio::buffer(body)});
  bufs.consume(sent);
  lowest().expires_after(timeout);
  with_stream(
      [&](auto& s) { asio::async_write(s, bufs, [&ec](error_code e, std::size_t) { ec = e; }); });
  run();
  return ec;
}

namespace {

// A plain connection's socket as Beast's synchronous read stream: recv() while bytes are there,
// poll() for the next ones until the deadline. No timer armed and cancelled per read and no
// epoll_wait of the io_context (issue 38: 8 timerfd_settime and 8 epoll_wait per agent sync).
template <class CancelAsked>
struct PollingReader {
  int fd;
  std::chrono::steady_clock::time_point deadline;
  CancelAsked cancel_asked;  // (fd) true: stop, cancel() was called; fd >= 0: poll()s it next
  // The answer's first bytes, just after the request went out: they are almost never there
  // yet, so poll() first and spare the recv() that would say EAGAIN.
  bool wait_first = false;

  template <class Buffers>
  size_t read_some(const Buffers& buffers, error_code& ec) {
    const asio::mutable_buffer b = beast::buffers_front(buffers);
    ec = {};
    while (true) {
      if (!wait_first) {
        const ssize_t n = ::recv(fd, b.data(), b.size(), MSG_DONTWAIT);
        if (n > 0) return static_cast<size_t>(n);
        if (n < 0 && errno == EINTR) continue;
        if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
          // cancel() shuts the socket down: the EOF that follows is not the server's.
          const error_code e = n == 0 ? error_code(asio::error::eof) : last_error();
          ec = cancel_asked(-1) ? asio::error::operation_aborted : e;
          return 0;
        }
      }
      wait_first = false;
      const auto left =
          std::chrono::ceil<milliseconds>(deadline - std::chrono::steady_clock::now()).count();
      if (left <= 0) {
        ec = beast::error::timeout;
        return 0;
      }
      pollfd p{fd, POLLIN, 0};
      if (cancel_asked(fd)) {
        ec = asio::error::operation_aborted;
        return 0;
      }
      const int r = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left, INT32_MAX)));
      const error_code e = r < 0 && errno != EINTR ? last_error() : error_code();
      if (cancel_asked(-1)) {  // no longer polling: cancel() leaves the socket alone
        ec = asio::error::operation_aborted;
        return 0;
      }
      if (e) {
        ec = e;
        return 0;
      }
    }
  }
  template <class Buffers>
  size_t read_some(const Buffers& buffers) {
    error_code ec;
    const size_t n = read_some(buffers, ec);
    if (ec) throw boost::system::system_error(ec);
    return n;
  }
  static error_code last_error() { return error_code(errno, boost::system::system_category()); }
};

}  // namespace

// Whether cancel() asked this request to end (`canceled` is then set). `poll_fd` >= 0: the
// requesting thread is about to poll it, and a cancel() meanwhile shuts it down to wake it.
bool Client::Conn::cancel_asked(int poll_fd) {
  std::lock_guard lock(owner->mu_);
  if (owner->cancel_of_ == owner->in_flight_ && owner->in_flight_ != 0) canceled = true;
  owner->polling_fd_ = canceled ? -1 : poll_fd;
  return canceled;
}

// One piece of the answer within `timeout`: the TLS stream's the asynchronous way (a deadline
// timer), the plain socket's by PollingReader.
error_code Client::Conn::read_some(AnswerParser& parser, milliseconds timeout) {
  error_code ec;
  if (tls) {
    lowest().expires_after(timeout);
    http::async_read_some(*tls, buffer, parser, [&ec](error_code e, std::size_t) { ec = e; });
    run();
    return ec;
  }
  auto asked = [this](int fd) { return cancel_asked(fd); };
  PollingReader<decltype(asked)> r{tcp->socket().native_handle(),
                                   std::chrono::steady_clock::now() + timeout, asked,
                                   /*wait_first=*/!parser.got_some() && buffer.size() == 0};
  http::read_some(r, buffer, parser, ec);
  return ec;
}

// The answer, read piece by piece: each read may wait read_timeout for the next bytes.
ClientResult Client::Conn::read(bool head_only, const ClientOptions& o, const BodySink& on_body,
                                bool* got_some) {
  AnswerParser parser;
  answer_parser(parser, o.max_body_bytes, head_only);
  parser.header_limit(64 * 1024);
  error_code ec;
  while (!ec && !parser.is_done()) {
    ec = read_some(parser, o.read_timeout);
    *got_some = *got_some || parser.got_some();
    if (ec || !on_body || parser.get().body().empty()) continue;
    if (!on_body(parser.get().body())) {
      canceled = true;
      ec = asio::error::operation_aborted;
    }
    parser.get().body().clear();
  }
  if (canceled) return {ClientError::kCanceled, "the request was canceled"};
  if (ec == beast::error::timeout)
    return {ClientError::kTimeout, "no answer within " + ms_text(o.read_timeout)};
  if (ec == http::error::body_limit)
    return {ClientError::kTooLarge,
            "the answer's body is over " + std::to_string(o.max_body_bytes) + " bytes"};
  if (ec) return {ClientError::kRead, "reading the answer: " + ec.message()};
  auto& msg = parser.get();
  ClientReply reply;
  reply.status = static_cast<int>(msg.result_int());
  for (const auto& f : msg) reply.headers.emplace_back(f.name_string(), f.value());
  reply.body = std::move(msg.body());
  if (!o.keep_alive || !reusable(parser)) close();
  return ClientResult(std::move(reply));
}

ClientResult Client::connect() {
  if (!url_) return {ClientError::kBadUrl, "bad URL \"" + base_url_ + "\""};
  begin();
  ClientResult res;
  if (!conn_->open() || conn_->stale()) {
    conn_->close();
    res = conn_->connect(*url_, options_.connect_timeout);
    if (res)
      ++connections_;
    else
      conn_->close();
  }
  end();
  return res;
}

ClientResult Client::attempt(const std::string& head, const std::string& body, bool head_only,
                             const BodySink& on_body, bool* retry) {
  Conn& c = *conn_;
  const bool reused = c.open() && !c.stale();
  if (!reused) {
    c.close();
    auto connected = c.connect(*url_, options_.connect_timeout);
    if (!connected) {
      c.close();
      return connected;
    }
    ++connections_;
  }
  const std::string where = url_->authority();
  bool got_some = false;
  ClientResult res;
  if (error_code ec = c.write(head, body, options_.write_timeout); ec) {
    *retry = reused && !c.canceled && lost_idle_connection(ec);
    res = c.canceled ? ClientResult(ClientError::kCanceled, "the request was canceled")
          : ec == beast::error::timeout
              ? ClientResult(ClientError::kTimeout,
                             "the request was not sent within " + ms_text(options_.write_timeout))
              : ClientResult(ClientError::kWrite, "sending the request: " + ec.message());
  } else {
    res = c.read(head_only, options_, on_body, &got_some);
    *retry = reused && !got_some && res.error() == ClientError::kRead;
  }
  if (!res) {
    c.close();
    res = ClientResult(res.error(), res.error_text() + " (" + where + ")");
  }
  return res;
}

Client::Client(const std::string& base_url, ClientOptions options)
    : base_url_(base_url),
      url_(parse_url(base_url)),
      options_(options),
      conn_(std::make_unique<Conn>()) {
  conn_->owner = this;
}

Client::~Client() = default;

ClientResult Client::get(const std::string& target, const Fields& headers) {
  return request("GET", target, headers);
}

ClientResult Client::post(const std::string& target, const std::string& body,
                          const std::string& content_type, const Fields& headers) {
  return request("POST", target, headers, body, content_type);
}

void Client::begin() {
  std::lock_guard lock(mu_);
  in_flight_ = ++requests_;
  conn_->canceled = false;
}

void Client::end() {
  std::lock_guard lock(mu_);
  in_flight_ = 0;
}

void Client::cancel() {
  std::lock_guard lock(mu_);
  if (in_flight_ == 0) return;
  // A plain connection's read polls its socket (PollingReader): the shutdown wakes it, and it
  // sees cancel_of_. The socket stays open (the requesting thread closes it), so the number
  // cannot have gone to another file meanwhile.
  cancel_of_ = in_flight_;
  if (polling_fd_ >= 0) ::shutdown(polling_fd_, SHUT_RDWR);
  // On the requesting thread, inside its run(): closing the socket ends the pending operation.
  asio::post(conn_->ioc, [this, n = in_flight_] {
    if (n != requests_) return;  // that request is over
    conn_->canceled = true;
    if (conn_->open()) conn_->lowest().close();
  });
}

ClientResult Client::request(const std::string& method, const std::string& target,
                             const Fields& headers, const std::string& body,
                             const std::string& content_type, const BodySink& on_body) {
  if (!url_) return {ClientError::kBadUrl, "bad URL \"" + base_url_ + "\""};
  const std::string head =
      request_head(method, target, *url_, headers, body, content_type, options_.keep_alive);
  begin();
  ClientResult res;
  // A reused connection the server closed meanwhile: once more on a fresh one (the request
  // never reached the server: nothing of an answer came).
  for (int tries = 0; tries < 2; ++tries) {
    bool retry = false;
    res = attempt(head, body, method == "HEAD", on_body, &retry);
    if (!retry) break;
  }
  end();
  return res;
}

}  // namespace sluice::net
