// The front side of a request: the gateway's own endpoints, routing, identity, admission, the
// pool's queue and the answer. A request arrives complete (src/net read it under its deadlines
// and limits) and is answered through its net::Responder, now or when a backend answers.
#include <charconv>
#include <cstdio>

#include "gateway/proxy.h"
#include "gateway/routing.h"

namespace sluice::gateway {

void log_line(const std::string& s) {
  std::fprintf(stderr, "sluice gateway: %s\n", s.c_str());
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

net::Response make_response(int status, std::string body, std::string_view content_type) {
  net::Response res;
  res.status = status;
  res.content_type = std::string(content_type);
  res.headers.emplace_back("Server", "sluice-gateway");
  res.body = std::move(body);
  return res;
}

net::Response error_response(int status, std::string_view reason, std::string_view message) {
  std::string body =
      "{\"error\":\"" + json_escape(message) + "\",\"reason\":\"" + std::string(reason) + "\"}\n";
  net::Response res = make_response(status, std::move(body));
  res.headers.emplace_back("x-sluice-reason", std::string(reason));
  return res;
}

// Every request the gateway's own routes (registered first) did not take.
void Proxy::handle(net::Request& req, net::Responder r) {
  // 1. Route to a pool, by the path as sent (not percent-decoded) and the model.
  const std::string_view path = std::string_view(req.target).substr(0, req.target.find('?'));
  std::string model;
  if (need_model_) {
    model = std::string(req.header(cfg_.model_header));
    if (model.empty()) model = model_from_json_body(req.body);
  }
  const int pool_index = route_pool(cfg_, path, model);
  if (pool_index < 0) return r.send(error_response(404, "no_route", "no pool serves this request"));
  Pool& pool = *pools_[static_cast<std::size_t>(pool_index)];
  // 2. Tenant and class.
  std::string_view key = req.header(cfg_.api_key_header);
  if (key.empty()) key = bearer_token(req.header("Authorization"));
  const Identity id = identify(cfg_, key, req.header(cfg_.class_header));
  if (!id.error.empty()) {
    return r.send(error_response(id.error_status,
                                 id.error_status == 401 ? "unauthorized" : "bad_class", id.error));
  }
  // 3. Deadline: the pool's queue timeout, shortened by the request's header.
  std::chrono::milliseconds deadline(pool.cfg.queue_timeout_ms);
  if (const auto dh = req.header(cfg_.deadline_header); !dh.empty()) {
    long long ms = 0;
    const auto [ptr, ec] = std::from_chars(dh.data(), dh.data() + dh.size(), ms);
    if (ec != std::errc() || ptr != dh.data() + dh.size() || ms <= 0) {
      return r.send(error_response(400, "bad_deadline",
                                   "bad " + cfg_.deadline_header + " (positive milliseconds)"));
    }
    deadline = std::min(deadline, std::chrono::milliseconds(ms));
  }
  admit(req, std::move(r), pool, id.request_class, id.tenant, deadline);
}

void Proxy::admit(net::Request& req, net::Responder r, Pool& pool, RequestClass cls, int tenant,
                  std::chrono::milliseconds deadline) {
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
  const AdmissionResult d = decide(pool.policy, in);

  if (d.decision == Decision::kReject) {
    ++pool.m.rejected[c][static_cast<std::size_t>(d.reason)];
    const bool unavailable = d.reason == RejectReason::kNoBackend;
    net::Response res =
        error_response(unavailable ? 503 : 429, reason_name(d.reason),
                       unavailable ? "no healthy backend" : "overloaded, retry later");
    res.headers.emplace_back("Retry-After", std::to_string(pool.cfg.retry_after_s));
    return r.send(std::move(res));
  }
  Pool* serving = &pool;
  if (d.decision == Decision::kFallback) {
    ++pool.m.fallback[c];
    serving = pool.fallback;
  }
  auto ex = std::make_shared<Exchange>(std::move(r));
  ex->cls = cls;
  ex->tenant = tenant;
  ex->pool = serving;
  ex->t_start = now;
  ex->t_enqueued = now;
  ex->queue_deadline = deadline;
  ex->head = req.method == "HEAD";
  // Hop-by-hop headers stay on this side; the upstream connection is always keep-alive.
  serialize_request_head(req, req.body.size(), ex->upstream_head);
  ex->body = std::move(req.body);
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

void Proxy::enqueue(const std::shared_ptr<Exchange>& ex) {
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
  // While it waits, a client that closes its connection takes the request out of the queue.
  ex->client.on_disconnect([this, weak] {
    if (auto e = weak.lock()) client_gone(e);
  });
}

void Proxy::dequeue(Exchange& ex) {
  Pool& pool = *ex.pool;
  pool.queue[static_cast<std::size_t>(ex.cls)].erase(ex.qpos);
  --pool.queued;
  if (ex.deadline_timer) ex.deadline_timer->cancel();
}

void Proxy::expire(const std::shared_ptr<Exchange>& ex) {
  dequeue(*ex);
  ++ex->pool->m.expired[static_cast<std::size_t>(ex->cls)];
  net::Response res = error_response(503, "expired", "deadline exceeded while queued");
  res.headers.emplace_back("Retry-After", std::to_string(ex->pool->cfg.retry_after_s));
  finish(ex, std::move(res));
}

void Proxy::client_gone(const std::shared_ptr<Exchange>& ex) {
  if (ex->state != ExState::kQueued) return;  // at a backend: its answer finds the close
  dequeue(*ex);
  ex->state = ExState::kDone;
  ++ex->pool->m.disconnected[static_cast<std::size_t>(ex->cls)];
  --tenant_active(ex->tenant);
  ex->client.close();
}

void Proxy::fail_queued(Pool& pool, int status, RejectReason reason, std::string_view msg) {
  for (auto& q : pool.queue) {
    while (!q.empty()) {
      auto ex = q.front();
      dequeue(*ex);
      ++pool.m.rejected[static_cast<std::size_t>(ex->cls)][static_cast<std::size_t>(reason)];
      net::Response res = error_response(status, reason_name(reason), msg);
      res.headers.emplace_back("Retry-After", std::to_string(pool.cfg.retry_after_s));
      finish(ex, std::move(res));
    }
  }
}

void Proxy::pump(Pool& pool) {
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
    pool.m.queue_wait.observe_ns(ns_since(ex->t_enqueued, Clock::now()));
    dispatch(ex, *b);
  }
}

void Proxy::finish(const std::shared_ptr<Exchange>& ex, net::Response&& res) {
  ex->state = ExState::kDone;
  --tenant_active(ex->tenant);
  ex->pool->m.total.observe_ns(ns_since(ex->t_start, Clock::now()));
  res.headers.emplace_back("x-sluice-pool", ex->pool->cfg.name);
  ex->client.send(std::move(res));
}

}  // namespace sluice::gateway
