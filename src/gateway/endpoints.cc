// The gateway's own endpoints: /metrics (Prometheus text 0.0.4, written by hand with PromWriter)
// and /v1/scale (the replica estimate per pool, for a KEDA-style autoscaler).
#include <cstdio>

#include "gateway/proxy.h"

namespace sluice::gateway {

namespace {

using Pools = std::vector<std::unique_ptr<Pool>>;

Labels pool_labels(const Pool& p) {
  return Labels{{"pool", p.cfg.name}};
}
Labels class_labels(const Pool& p, int c) {
  return Labels{{"pool", p.cfg.name},
                {"class", std::string(class_name(static_cast<RequestClass>(c)))}};
}

void write_pool_gauges(PromWriter& w, const Pools& pools_, std::int64_t now_s) {
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
}

void write_pool_counters(PromWriter& w, const Pools& pools_) {
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
}

}  // namespace

net::Response Proxy::metrics_response() {
  PromWriter w;
  const auto now_s =
      std::chrono::duration_cast<std::chrono::seconds>(Clock::now().time_since_epoch()).count();
  write_pool_gauges(w, pools_, now_s);
  write_pool_counters(w, pools_);
  w.family("sluice_gateway_responses_total", "counter", "Responses sent, by status code.");
  for (auto& [code, n] : responses_) {
    w.sample("sluice_gateway_responses_total", Labels{{"code", std::to_string(code)}}, n);
  }
  const net::ServerStats hs = http_.stats();
  w.family("sluice_gateway_connections", "gauge", "Open client connections.");
  w.sample("sluice_gateway_connections", {}, static_cast<std::int64_t>(hs.connections));
  w.family("sluice_gateway_connections_total", "counter", "Client connections accepted.");
  w.sample("sluice_gateway_connections_total", {}, hs.accepted);
  w.family("sluice_gateway_connections_refused_total", "counter",
           "Connections over maxConnections (refused, or /healthz and /metrics only from a small "
           "reserve).");
  w.sample("sluice_gateway_connections_refused_total", {}, hs.over_cap_total);
  w.family("sluice_gateway_connections_refused_per_client_total", "counter",
           "Connections over maxConnectionsPerClient of their client address (refused, or "
           "/healthz and /metrics only from a small reserve).");
  w.sample("sluice_gateway_connections_refused_per_client_total", {}, hs.over_cap_per_ip);
  w.family("sluice_gateway_draining", "gauge", "1 while draining after SIGTERM.");
  w.sample("sluice_gateway_draining", {}, std::int64_t{draining_ ? 1 : 0});
  return make_response(200, w.text(), "text/plain; version=0.0.4; charset=utf-8");
}

net::Response Proxy::scale_response(const net::Request& req) {
  const std::string only = req.get_param_value("pool");
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
    return error_response(404, "no_pool", "no pool named '" + only + "'");
  }
  return make_response(200, std::move(body));
}

}  // namespace sluice::gateway
