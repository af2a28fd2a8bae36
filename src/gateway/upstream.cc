// An admitted request at a backend: a keep-alive connection from the backend's idle list (or a
// new one), the request written, the answer read and relayed; a stale reused connection is
// retried, anything else that fails is the client's 502/503/504. Deadlines are checked by one
// sweep timer (every kSweepMs) instead of timer operations on every read and write.
#include "gateway/proxy.h"

namespace sluice::gateway {

namespace {
constexpr std::int64_t kSweepMs = 50;
}

void Proxy::sweep() {
  const auto now = Clock::now();
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

void Proxy::dispatch(const std::shared_ptr<Exchange>& ex, Backend& b) {
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

void Proxy::send_upstream(const std::shared_ptr<Exchange>& ex, Backend& b,
                          std::shared_ptr<UpstreamConn> conn) {
  ++ex->attempts;
  b.active.insert(conn.get());
  conn->aborted = false;
  conn->timed_out = false;
  if (conn->connected) {
    conn->deadline = Clock::now() + std::chrono::milliseconds(b.pool->cfg.upstream_timeout_ms);
    return exchange_on(ex, b, conn);
  }
  const auto upstream_deadline =
      Clock::now() + std::chrono::milliseconds(b.pool->cfg.upstream_timeout_ms);
  conn->deadline = Clock::now() + std::chrono::milliseconds(b.pool->cfg.connect_timeout_ms);
  conn->socket.async_connect(b.endpoint, [this, ex, &b, conn, upstream_deadline](error_code ec) {
    if (ec) {
      // Out of descriptors is this process's trouble, not the backend's: kept as it is, so
      // the backend is not marked down for it (upstream_failed).
      if (!conn->timed_out && !conn->aborted && ec != asio::error::no_descriptors)
        ec = asio::error::connection_refused;
      return upstream_error(ex, b, conn, ec, false);
    }
    conn->connected = true;
    error_code e;
    conn->socket.set_option(tcp::no_delay(true), e);
    conn->deadline = upstream_deadline;
    exchange_on(ex, b, conn);
  });
}

// One gather write of the head and the body, then the whole answer (net::UpstreamConn).
void Proxy::exchange_on(const std::shared_ptr<Exchange>& ex, Backend& b,
                        const std::shared_ptr<UpstreamConn>& conn) {
  const auto limit = static_cast<std::uint64_t>(b.pool->cfg.max_response_bytes);
  conn->async_exchange(ex->upstream_head, ex->body, limit, ex->head,
                       [this, ex, &b, conn](error_code ec, bool response_started) {
                         if (ec) return upstream_error(ex, b, conn, ec, response_started);
                         if (!relayable_status(conn->parser->get().result_int()))
                           return upstream_error(ex, b, conn, http::error::bad_status, true);
                         upstream_ok(ex, b, conn);
                       });
}

void Proxy::upstream_ok(const std::shared_ptr<Exchange>& ex, Backend& b,
                        const std::shared_ptr<UpstreamConn>& conn) {
  Pool& pool = *b.pool;
  b.active.erase(conn.get());
  // The connection goes back to the idle list when both sides allow keep-alive.
  const bool keep = net::reusable(*conn->parser);
  HttpResponse res = conn->parser->release();
  if (keep && b.healthy && !draining_) {
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
  finish(ex, relay_response(std::move(res), ex->head));
  after_upstream(pool);
}

void Proxy::upstream_error(const std::shared_ptr<Exchange>& ex, Backend& b,
                           const std::shared_ptr<UpstreamConn>& conn, error_code ec,
                           bool response_started) {
  b.active.erase(conn.get());
  error_code e;
  conn->socket.close(e);
  // A reused keep-alive connection that the backend had already closed: the request never
  // reached it, so a retry on a fresh connection to the same backend is safe (at most twice).
  const bool stale = conn->reused && !response_started && !conn->aborted && !conn->timed_out &&
                     ex->attempts < 3 && b.healthy;
  if (stale) return send_upstream(ex, b, std::make_shared<UpstreamConn>(ioc_, b));
  upstream_failed(ex, b, ec, conn->aborted, conn->timed_out);
}

void Proxy::upstream_failed(const std::shared_ptr<Exchange>& ex, Backend& b, error_code ec,
                            bool aborted, bool timed_out) {
  Pool& pool = *b.pool;
  --b.in_flight;
  --pool.in_flight;
  int status = 502;
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
  finish(ex, error_response(status, reason, msg));
  after_upstream(pool);
}

void Proxy::after_upstream(Pool& pool) {
  pump(pool);
  if (draining_) maybe_finish_drain();
}

}  // namespace sluice::gateway
