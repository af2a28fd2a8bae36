#include "gateway/test_backend.h"

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <charconv>
#include <csignal>
#include <cstdio>
#include <deque>
#include <fstream>
#include <memory>
#include <optional>
#include <unordered_set>

#include "gateway/config.h"

namespace sluice::gateway {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using error_code = boost::system::error_code;

class BackendSession;

struct BackendState {
  explicit BackendState(asio::io_context& io, TestBackendOptions o) : ioc(io), opts(std::move(o)) {}
  asio::io_context& ioc;
  TestBackendOptions opts;
  int active = 0;
  std::uint64_t requests = 0;
  std::uint64_t completed = 0;
  std::deque<std::shared_ptr<BackendSession>> waiting;  // strong: nothing else holds them
  std::unordered_set<asio::steady_timer*> held;

  bool slot_free() const { return opts.concurrency <= 0 || active < opts.concurrency; }
  void start_next();
};

class BackendSession : public std::enable_shared_from_this<BackendSession> {
 public:
  BackendSession(BackendState& st, tcp::socket s) : st_(st), stream_(std::move(s)), timer_(st.ioc) {
    error_code ec;
    stream_.socket().set_option(tcp::no_delay(true), ec);
  }
  void start() { read(); }

  // Called when this session's request gets a service slot.
  void serve() {
    ++st_.active;
    in_service_ = true;
    if (hold_) {
      st_.held.insert(&timer_);
      timer_.expires_at(asio::steady_timer::time_point::max());
    } else {
      timer_.expires_after(std::chrono::microseconds(service_us_));
    }
    timer_.async_wait([self = shared_from_this()](error_code) {
      self->st_.held.erase(&self->timer_);
      self->finish_service();
    });
  }

 private:
  void read() {
    parser_.emplace();
    parser_->header_limit(64 * 1024);
    parser_->body_limit(static_cast<std::uint64_t>(st_.opts.max_body_bytes));
    stream_.expires_after(std::chrono::seconds(300));
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](error_code ec, std::size_t) {
                       if (ec) return self->close();
                       self->on_request();
                     });
  }

  void on_request() {
    req_ = parser_->release();
    std::string_view target = req_.target();
    std::string_view path = target.substr(0, target.find('?'));
    if (path == "/healthz") return reply(200, "ok\n");
    if (path == "/_stats") {
      char buf[256];
      std::snprintf(buf, sizeof buf,
                    "{\"requests\":%llu,\"completed\":%llu,\"active\":%d,\"waiting\":%zu,"
                    "\"held\":%zu}\n",
                    static_cast<unsigned long long>(st_.requests),
                    static_cast<unsigned long long>(st_.completed), st_.active, st_.waiting.size(),
                    st_.held.size());
      return reply(200, buf);
    }
    if (path == "/_release") {
      auto n = st_.held.size();
      for (auto* t : std::vector<asio::steady_timer*>(st_.held.begin(), st_.held.end())) {
        t->cancel();
      }
      return reply(200, "{\"released\":" + std::to_string(n) + "}\n");
    }
    ++st_.requests;
    service_us_ = static_cast<std::int64_t>(st_.opts.service_ms * 1000.0);
    if (auto h = req_["x-service-us"]; !h.empty()) {
      long long v = 0;
      auto [p, ec] = std::from_chars(h.data(), h.data() + h.size(), v);
      if (ec == std::errc() && v >= 0) service_us_ = v;
    }
    service_us_ =
        static_cast<std::int64_t>(static_cast<double>(service_us_) * st_.opts.service_scale);
    hold_ = req_["x-hold"] == "1";
    if (st_.slot_free() && st_.waiting.empty()) return serve();
    if (static_cast<int>(st_.waiting.size()) >= st_.opts.max_waiting) {
      return reply(503, "{\"error\":\"backend queue full\"}\n");
    }
    st_.waiting.push_back(shared_from_this());
  }

  void finish_service() {
    in_service_ = false;
    --st_.active;
    ++st_.completed;
    std::string body = "{\"backend\":\"" + st_.opts.name +
                       "\",\"service_us\":" + std::to_string(service_us_) + "}\n";
    reply(200, std::move(body));
    st_.start_next();
  }

  void reply(unsigned status, std::string body) {
    res_.emplace(static_cast<http::status>(status), req_.version());
    res_->set(http::field::content_type, "application/json");
    res_->set("x-backend", st_.opts.name);
    res_->keep_alive(req_.keep_alive());
    res_->body() = std::move(body);
    res_->prepare_payload();
    stream_.expires_after(std::chrono::seconds(60));
    http::async_write(stream_, *res_, [self = shared_from_this()](error_code ec, std::size_t) {
      bool keep = self->res_->keep_alive();
      self->res_.reset();
      if (ec || !keep) return self->close();
      self->read();
    });
  }

  void close() {
    error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
    stream_.socket().close(ec);
  }

  BackendState& st_;
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  http::request<http::string_body> req_;
  std::optional<http::response<http::string_body>> res_;
  asio::steady_timer timer_;
  std::int64_t service_us_ = 0;
  bool hold_ = false;
  bool in_service_ = false;
};

void BackendState::start_next() {
  if (!waiting.empty() && slot_free()) {
    auto s = std::move(waiting.front());
    waiting.pop_front();
    s->serve();
  }
}

void accept_loop(tcp::acceptor& acc, BackendState& st) {
  acc.async_accept([&acc, &st](error_code ec, tcp::socket s) {
    if (ec == asio::error::operation_aborted) return;
    if (!ec) std::make_shared<BackendSession>(st, std::move(s))->start();
    accept_loop(acc, st);
  });
}

}  // namespace

int run_test_backend(const TestBackendOptions& opts) {
  std::signal(SIGPIPE, SIG_IGN);
  auto hp = parse_host_port(opts.listen);
  if (!hp) {
    std::fprintf(stderr, "test-backend: bad --listen '%s' (host:port)\n", opts.listen.c_str());
    return 2;
  }
  asio::io_context ioc(1);
  BackendState st(ioc, opts);
  error_code ec;
  auto addr = asio::ip::make_address(hp->host, ec);
  if (ec) {
    std::fprintf(stderr, "test-backend: bad address '%s'\n", hp->host.c_str());
    return 2;
  }
  tcp::acceptor acc(ioc);
  tcp::endpoint ep(addr, hp->port);
  acc.open(ep.protocol(), ec);
  if (!ec) acc.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acc.bind(ep, ec);
  if (!ec) acc.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    std::fprintf(stderr, "test-backend: cannot listen on %s: %s\n", opts.listen.c_str(),
                 ec.message().c_str());
    return 1;
  }
  if (!opts.port_file.empty()) {
    std::string tmp = opts.port_file + ".tmp";
    {
      std::ofstream f(tmp);
      f << acc.local_endpoint().port() << "\n";
    }
    std::rename(tmp.c_str(), opts.port_file.c_str());
  }
  asio::signal_set signals(ioc, SIGTERM, SIGINT);
  signals.async_wait([&](error_code, int) { ioc.stop(); });
  accept_loop(acc, st);
  ioc.run();
  return 0;
}

}  // namespace sluice::gateway
