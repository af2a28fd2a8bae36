// The HTTP API of `sluice serve` (docs/api.md), one file per resource in this folder: jobs
// (jobs.cc, jobs_list.cc, jobctl.cc, logs.cc), the cluster's queues and nodes (cluster.cc), the
// configuration and state (config.cc), the agents' endpoints (agents.cc), the dashboard
// (dashboard.cc), the Kubernetes API (kube_*.cc). This file: the health and metrics endpoints, and
// what every handler shares.
#include "server/http/reply.h"
#include "server/http/util.h"
#include "server/process_metrics.h"
#include "server/server.h"

namespace sluice::server {

void Server::routes() {
  routes_health();
  routes_jobs();
  routes_jobctl();
  routes_logs();
  routes_cluster();
  routes_config();
  routes_agents();
  routes_dashboard();
  routes_kube();  // kube_routes.cc: the Kubernetes API, after the native routes
}

std::optional<Caller> Server::caller_of(const net::Request& req, net::Response& res) const {
  // Another site's page acting through a user's browser (net::cross_origin): only reads pass.
  if (req.method != "GET" && req.method != "HEAD" && net::cross_origin(req)) {
    fail(
        res, 403,
        "a " + req.method + " from a page of another origin (" + req.get_header_value("Origin") +
            ") is refused: use the dashboard this server serves, or a client that sends no Origin");
    return std::nullopt;
  }
  auto c = auth_.caller(req.get_header_value("Authorization"));
  if (!c) fail(res, 401, "missing or unknown bearer token");
  return c;
}

std::optional<Caller> Server::admin_of(const net::Request& req, net::Response& res,
                                       const char* what) const {
  auto c = caller_of(req, res);
  if (c && !c->admin) {
    fail(res, 403, std::string("only an admin token may ") + what);
    return std::nullopt;
  }
  return c;
}

const JobRecord* Server::visible_job(const Caller& c, const std::string& id_text,
                                     net::Response& res) const {
  auto id = parse_id(id_text);
  const JobRecord* r = id ? state_->find(*id) : nullptr;
  if (r && c.sees(r->job.namespace_)) return r;
  const int64_t keep = state_->options().keep_finished_jobs;
  fail(res, 404,
       "no job " + id_text +
           (keep > 0 ? " (the server keeps the last " + std::to_string(keep) +
                           " finished jobs; older ones are in its event log)"
                     : ""));
  return nullptr;
}

// Errors the HTTP stack answers itself (404, 413, 431, 503 when busy, 500 when a handler
// throws) carry the same {"error", "details"} body as fail() (src/net/message.h).
void Server::routes_health() {
  auto& h = *http_;
  // /healthz and /readyz run inline, on the I/O thread: they answer while every worker is busy
  // (long polls, store commits); they take no lock.
  const net::RouteOptions inline_route{.run_inline = true};
  h.Get(
      "/healthz",
      [](const net::Request&, net::Response& res) { res.set_content("ok\n", "text/plain"); },
      inline_route);
  h.Get(
      "/readyz",
      [this](const net::Request&, net::Response& res) {
        const bool failed = refusing_work();  // no lock held long: an atomic and a short one
        const bool ok = ready_ && !failed;
        res.status = ok ? 200 : 503;
        res.set_content(ok ? "ready\n" : (failed ? "not ready: " + refusal() + "\n" : "starting\n"),
                        "text/plain");
      },
      inline_route);
  h.Get("/metrics", handler(&Server::get_metrics));
}

// GET /metrics. Per-namespace series (GPU-seconds, budgets) are a tenant's business: written
// for the namespaces a token sees, for none without a token, unless --public-metrics (or no
// tokens at all: a loopback server). The cluster's own series are for every scraper.
void Server::get_metrics(const net::Request& req, net::Response& res) {
  NamespaceFilter sees;
  if (auth_.enabled() && !options_.public_metrics) {
    if (!req.get_header_value("Authorization").empty()) {
      auto caller = caller_of(req, res);
      if (!caller) return;
      sees = [c = *caller](const std::string& ns) { return c.sees(ns); };
    } else {
      sees = [](const std::string&) { return false; };
    }
  }
  std::string text;
  {
    std::lock_guard lk(state_->mu());
    text = state_->metrics_text(now_ns(), sees);
  }
  text += process_metrics_text();  // build info and process_*: outside the state's lock
  res.set_content(text, "text/plain; version=0.0.4; charset=utf-8");
}

}  // namespace sluice::server
