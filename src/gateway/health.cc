// Active health checks (GET healthCheck.path on a fresh connection every intervalMs), and taking
// a backend out (failing its exchanges fast) and back (pumping its pool's queue).
#include "gateway/proxy.h"

namespace sluice::gateway {

namespace {

struct HealthProbe {
  explicit HealthProbe(asio::io_context& ioc) : stream(ioc) {}
  beast::tcp_stream stream;
  beast::flat_buffer buffer;
  http::request<http::empty_body> req;
  http::response_parser<http::string_body> parser;
};

}  // namespace

void Proxy::schedule_health(Backend& b, std::chrono::milliseconds delay) {
  b.health_timer->expires_after(delay);
  b.health_timer->async_wait([this, &b](error_code ec) {
    if (ec || stopped_) return;
    run_health(b);
  });
}

void Proxy::run_health(Backend& b) {
  const auto& hc = b.pool->cfg.health;
  auto probe = std::make_shared<HealthProbe>(ioc_);
  probe->req = {http::verb::get, hc.path, 11};
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

void Proxy::health_result(Backend& b, bool ok) {
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

void Proxy::mark_down(Backend& b, const std::string& why) {
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

void Proxy::mark_up(Backend& b) {
  b.healthy = true;
  log_line("pool " + b.pool->cfg.name + ": backend " + b.addr.text() + " up");
  pump(*b.pool);
}

}  // namespace sluice::gateway
