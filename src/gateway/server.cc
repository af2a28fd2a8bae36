// run_gateway: client connections on src/net (net::Server: accept, the connection caps and the fd
// budget, header/body/idle/write deadlines, keep-alive, limits), the Proxy on the same single
// I/O thread, signals and the graceful drain.
#include <csignal>
#include <cstdio>
#include <fstream>
#include <future>

#include "gateway/gateway.h"
#include "gateway/proxy.h"
#include "gateway/routing.h"

namespace sluice::gateway {

Proxy::Proxy(asio::io_context& ioc, const GatewayConfig& cfg, net::Server& http)
    : ioc_(ioc), cfg_(cfg), http_(http), sweep_timer_(ioc), drain_timer_(ioc) {
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

bool Proxy::init() {
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
  // 2. The gateway's own endpoints (GET only, never proxied; they answer on connections over
  // the caps too), then everything else.
  const net::RouteOptions own{.run_inline = true};
  http_.Get(
      "/metrics", [this](const net::Request&, net::Response& res) { res = metrics_response(); },
      own);
  http_.Get(
      "/v1/scale",
      [this](const net::Request& req, net::Response& res) { res = scale_response(req); }, own);
  http_.Get(
      "/healthz",
      [this](const net::Request&, net::Response& res) {
        res = draining_ ? error_response(503, "draining", "draining")
                        : make_response(200, "ok\n", "text/plain");
      },
      own);
  http_.Async("*", "*", [this](net::Request& req, net::Responder r) { handle(req, std::move(r)); });
  return true;
}

void Proxy::start() {
  for (auto& p : pools_) {
    if (!p->cfg.health.enabled) continue;
    for (auto& b : p->backends) schedule_health(*b, std::chrono::milliseconds(0));
  }
  sweep();
}

// Stop accepting, close idle connections, answer the rest with `Connection: close`, let queued
// and in-flight requests finish; done(0) when the last connection is gone, done(1) past
// drainTimeoutMs.
void Proxy::start_drain(std::function<void(int)> done) {
  if (draining_) return;
  draining_ = true;
  done_ = std::move(done);
  drain_timer_.expires_after(std::chrono::milliseconds(cfg_.drain_timeout_ms));
  drain_timer_.async_wait([this](error_code e) {
    if (e || stopped_) return;
    log_line("drain timed out with " + std::to_string(http_.stats().connections) +
             " connection(s) still open");
    stopped_ = true;
    done_(1);
  });
  http_.drain([this] { maybe_finish_drain(); });
}

void Proxy::maybe_finish_drain() {
  if (stopped_ || http_.stats().connections > 0) return;
  for (auto& p : pools_) {
    if (p->queued > 0 || p->in_flight > 0) return;
  }
  log_line("drained, exiting");
  stopped_ = true;
  drain_timer_.cancel();
  done_(0);
}

namespace {

net::ServerOptions http_options(const GatewayConfig& cfg, Proxy* const* proxy) {
  const auto& l = cfg.limits;
  net::ServerOptions o;
  o.name = "sluice gateway";
  o.io_threads = 1;  // the Proxy's state is this thread's
  o.workers = 1;     // no route blocks
  o.max_body_bytes = static_cast<size_t>(l.max_body_bytes);
  o.max_header_bytes = static_cast<size_t>(l.max_header_bytes);
  o.max_target_bytes = o.max_header_bytes;  // only the header limit applies
  o.idle_timeout = std::chrono::milliseconds(l.idle_timeout_ms);
  o.header_timeout = std::chrono::milliseconds(l.header_timeout_ms);
  o.body_timeout = std::chrono::milliseconds(l.body_timeout_ms);
  o.write_timeout = std::chrono::milliseconds(l.write_timeout_ms);
  o.max_connections = static_cast<size_t>(l.max_connections);
  o.max_connections_per_ip = static_cast<size_t>(l.max_connections_per_client);
  o.cap_loopback_per_ip = true;  // a load generator on loopback is one client too
  // A quarter of the descriptors (at least 64) stays for upstream connections and health
  // checks, so that running out of descriptors never looks like a dead backend.
  o.fds_kept = 64;
  o.fds_kept_divisor = 4;
  o.answer_over_cap = true;
  o.answer_timeouts = true;
  o.error_format = [](net::Response& res, int status, std::string_view reason,
                      const std::string& error, const std::vector<std::string>& details) {
    std::string msg = error;
    for (const auto& d : details) msg += ": " + d;
    res = error_response(status, reason, msg);
  };
  o.on_response = [proxy](int status) {
    if (*proxy) (*proxy)->count_response(status);
  };
  o.log = [](const std::string& line) { log_line(line); };
  return o;
}

void write_port_file(const std::string& path, int port) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp);
    f << port << "\n";
  }
  std::rename(tmp.c_str(), path.c_str());
}

}  // namespace

int run_gateway(const GatewayConfig& cfg, const RunOptions& opts) {
  // A client that vanishes mid-write must not kill the process.
  std::signal(SIGPIPE, SIG_IGN);
  Proxy* counting = nullptr;  // on_response's target, set once the Proxy exists
  net::Server http(http_options(cfg, &counting));
  Proxy proxy(http.io_context(), cfg, http);
  counting = &proxy;
  if (!proxy.init()) return 1;
  auto port = http.listen(cfg.listen.host, cfg.listen.port);
  if (!port) {
    log_line(port.error());
    return 1;
  }
  if (!opts.port_file.empty()) write_port_file(opts.port_file, *port);
  log_line("listening on " + cfg.listen.host + ":" + std::to_string(*port) + " with " +
           std::to_string(cfg.pools.size()) + " pool(s)");
  // Everything below runs on the one I/O thread; this thread waits for the drain's end.
  std::promise<int> exit_code;
  asio::signal_set signals(http.io_context(), SIGTERM, SIGINT);
  auto done = [&exit_code](int code) { exit_code.set_value(code); };
  signals.async_wait([&proxy, done](error_code e, int sig) {
    if (e) return;
    log_line(std::string("received ") + (sig == SIGTERM ? "SIGTERM" : "SIGINT") + ", draining");
    proxy.start_drain(done);
  });
  asio::post(http.io_context(), [&proxy] { proxy.start(); });
  http.start();
  const int code = exit_code.get_future().get();
  http.stop();  // joins the I/O thread: nothing runs on the Proxy after this
  return code;
}

}  // namespace sluice::gateway
