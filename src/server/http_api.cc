// The HTTP API of `sluice serve` (docs/api.md). Every handler: authorize, take the state lock
// for the shortest time, wait for the store outside it, then answer.
#include <algorithm>
#include <chrono>

#include "config/loader.h"
#include "proto/split.h"
#include "secret/secret.h"
#include "server/http_reply.h"
#include "server/http_util.h"
#include "server/process_metrics.h"
#include "server/run_as.h"
#include "server/server.h"
#include "server/state_export.h"

namespace sluice::server {

using nlohmann::json;

std::optional<Caller> Server::caller_of(const net::Request& req, net::Response& res) const {
  auto c = auth_.caller(req.get_header_value("Authorization"));
  if (!c) fail(res, 401, "missing or unknown bearer token");
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

void Server::routes() {
  routes_jobctl();
  auto& h = *http_;
  // Authorization for /v1 (except the agents' endpoints, which use the join token).
  auto who = [this](const net::Request& req, net::Response& res) { return caller_of(req, res); };
  auto now = [this] { return now_ns(); };

  // Errors the HTTP stack answers itself (404, 413, 431, 503 when busy, 500 when a handler
  // throws) carry the same {"error", "details"} body as fail() (src/net/message.h).
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
  // Per-namespace series (GPU-seconds, budgets) are a tenant's business: written for the
  // namespaces a token sees, for none without a token, unless --public-metrics (or no tokens
  // at all: a loopback server). The cluster's own series are for every scraper.
  h.Get("/metrics", [this, now](const net::Request& req, net::Response& res) {
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
      text = state_->metrics_text(now(), sees);
    }
    text += process_metrics_text();  // build info and process_*: outside the state's lock
    res.set_content(text, "text/plain; version=0.0.4; charset=utf-8");
  });

  // --- Jobs ----------------------------------------------------------------------------------
  h.Post("/v1/jobs", [this, who, now](const net::Request& req, net::Response& res) {
    auto caller = who(req, res);
    if (!caller) return;
    if (!may_write(res)) return;
    // Parse outside the state lock: documents against the configuration in force.
    const std::shared_ptr<const Config> cfg = state_->config_ptr();
    // Without tokens the client says who it is; with them, the token does.
    const ClaimedUser claimed = auth_.enabled()
                                    ? ClaimedUser{}
                                    : claimed_user(req.get_header_value("X-Sluice-User"),
                                                   req.get_header_value("X-Sluice-Uid"),
                                                   req.get_header_value("X-Sluice-Gid"));
    if (!claimed.name.empty()) caller->name = claimed.name;
    JobsOutput parsed;
    {
      const auto slot = parse_slots_.acquire(caller->name);
      // generateName suffixes from the clock: a resubmitted file gets new names.
      parsed = parse_jobs(Source{"request", req.body}, *cfg, static_cast<uint64_t>(now()),
                          implied_namespace(*caller));
    }
    if (!parsed.errors.empty()) {
      // An unknown LocalQueue is "not found", not "malformed".
      const bool unknown_queue = parsed.unknown_queue;
      if (parsed.too_large)
        return fail(res, 413, "the submission is over a limit (docs/api.md, Limits)",
                    parsed.errors);
      return fail(res, unknown_queue ? 404 : 400,
                  unknown_queue ? parsed.errors.front() : "the body is not a valid job submission",
                  parsed.errors);
    }
    for (const auto& j : parsed.jobs)
      if (!caller->sees(j.namespace_))
        return fail(
            res, 403,
            "token " + caller->name + " may not submit to namespace \"" + j.namespace_ + "\"");
    for (auto& j : parsed.jobs) {
      if (auto why = resolve_run_as(j, *caller, *cfg); !why.empty()) return fail(res, 403, why);
      j.submitter_uid = claimed.uid;
      j.submitter_gid = claimed.gid;
    }
    // Records and events encoded here, so that the state lock is held for less.
    const PreparedSubmission prepared = ServerState::prepare(parsed.jobs, cfg);
    SubmitOutcome out;
    json body = json::array();
    {
      std::lock_guard lk(state_->mu());
      out = state_->submit(std::move(parsed.jobs), now(), &prepared);
      if (out.status == 202)
        for (JobId id : out.ids) {
          const auto* r = state_->find(id);
          body.push_back({{"id", id}, {"name", r->job.name}, {"queue", r->cluster_queue}});
        }
    }
    if (out.status != 202) {
      if (out.status == 429)
        res.set_header("Retry-After",
                       std::to_string(out.retry_after_s > 0 ? out.retry_after_s : 5));
      return fail(res, out.status, out.error, out.details);
    }
    if (out.ticket && !store_->wait(out.ticket)) {
      // Not on disk, so not acknowledged: taken back, so it can neither run nor reappear.
      {
        std::lock_guard lk(state_->mu());
        state_->withdraw(out.ids, now());
      }
      if (!store_failed_.exchange(true))
        log("store commit failed: " + store_->error() + "; new work is refused");
      return fail(res, 503, "the submission could not be written; nothing was submitted",
                  {refusal()});
    }
    kick();
    reply(res, 202, json{{"jobs", body}, {"notes", parsed.notes}});
  });

  h.Get("/v1/jobs", [this, who](const net::Request& req, net::Response& res) {
    auto caller = who(req, res);
    if (caller) list_jobs(*caller, req, res);
  });

  auto visible = [this](const Caller& c, const std::string& id_text, net::Response& res) {
    return visible_job(c, id_text, res);
  };

  h.Get(R"(/v1/jobs/([^/]+))",
        [this, who, now, visible](const net::Request& req, net::Response& res) {
          auto caller = who(req, res);
          if (!caller) return;
          const auto preds = wants_start(req) ? predictor_.get(*state_, now()) : nullptr;
          std::lock_guard lk(state_->mu());
          if (const auto* r = visible(*caller, req.matches[1], res)) {
            json view = state_->job_view(*r, now());
            if (preds) view["predicted_start"] = StartPredictor::view(*preds, *r, now());
            reply(res, 200, view);
          }
        });

  h.Get(R"(/v1/jobs/([^/]+)/explain)",
        [this, who, now, visible](const net::Request& req, net::Response& res) {
          auto caller = who(req, res);
          if (!caller) return;
          bool pending = false;
          {
            std::lock_guard lk(state_->mu());
            const auto* r = visible(*caller, req.matches[1], res);
            if (!r) return;
            pending = r->state == JobState::kPending;
          }
          // A pending job's estimate: the predictions are taken outside the state lock.
          const auto preds = pending ? predictor_.get(*state_, now()) : nullptr;
          std::lock_guard lk(state_->mu());
          const auto* r = visible(*caller, req.matches[1], res);
          if (!r) return;
          const auto t = now();
          std::string text = state_->explain(r->job.id, t);
          json predicted = nullptr;
          if (preds) {
            text += StartPredictor::explain_line(*preds, *r, state_->config(), t);
            predicted = StartPredictor::view(*preds, *r, t);
          }
          reply(res, 200,
                json{{"id", r->job.id},
                     {"state", state_name(r->state)},
                     {"explanation", text},
                     {"predicted_start", predicted}});
        });

  auto cancel = [this, who, now, visible](const net::Request& req, net::Response& res) {
    auto caller = who(req, res);
    if (!caller) return;
    if (!may_write(res)) return;
    uint64_t ticket = 0;
    json view;
    {
      std::lock_guard lk(state_->mu());
      const auto* r = visible(*caller, req.matches[1], res);
      if (!r) return;
      std::string err;
      const int status = state_->cancel(r->job.id, now(), &err, &ticket);
      if (status != 200) return fail(res, status, err);
      view = state_->job_view(*r, now());
    }
    if (ticket && !store_->wait(ticket))
      return fail(res, 503, "the cancellation could not be written", {refusal()});
    kick();
    reply(res, 200, view);
  };
  h.Post(R"(/v1/jobs/([^/]+)/cancel)", cancel);
  h.Delete(R"(/v1/jobs/([^/]+))", cancel);

  routes_logs();  // http_logs.cc

  // --- Cluster -------------------------------------------------------------------------------
  h.Get("/v1/queues", [this, who, now](const net::Request& req, net::Response& res) {
    if (!who(req, res)) return;
    std::lock_guard lk(state_->mu());
    reply(res, 200, state_->queues_view(now()));
  });
  // The LocalQueues the caller may submit to, with their ClusterQueue's state.
  h.Get("/v1/localqueues", [this, who, now](const net::Request& req, net::Response& res) {
    auto caller = who(req, res);
    if (!caller) return;
    json out = json::array();
    {
      std::lock_guard lk(state_->mu());
      json all = state_->local_queues_view(now());
      for (auto& q : all["local_queues"])
        if (q["namespace"] == "*" || caller->sees(q["namespace"].get<std::string>()))
          out.push_back(std::move(q));
    }
    reply(res, 200, json{{"local_queues", out}});
  });
  h.Get("/v1/nodes", [this, who, now](const net::Request& req, net::Response& res) {
    if (!who(req, res)) return;
    std::lock_guard lk(state_->mu());
    reply(res, 200, state_->nodes_view(now()));
  });
  h.Get("/v1/config", [this, who](const net::Request& req, net::Response& res) {
    auto caller = who(req, res);
    if (!caller) return;
    if (!caller->admin) return fail(res, 403, "only an admin token may read the configuration");
    std::lock_guard lk(state_->mu());
    res.set_content(config_text_, "application/yaml");
  });
  // The live state as `sluice plan` reads it (state_export.h): admin only, as the configuration.
  h.Get("/v1/state", [this, who, now](const net::Request& req, net::Response& res) {
    auto caller = who(req, res);
    if (!caller) return;
    if (!caller->admin) return fail(res, 403, "only an admin token may export the state");
    std::string text;
    {
      std::lock_guard lk(state_->mu());
      text = export_state(*state_, config_text_, now(), url());
    }
    res.set_content(text, "application/yaml");
  });
  h.Put("/v1/config", [this, who](const net::Request& req, net::Response& res) {
    auto caller = who(req, res);
    if (!caller) return;
    if (!caller->admin) return fail(res, 403, "only an admin token may change the configuration");
    const auto out = apply_config({Source{"request", req.body}});
    if (out.status != 200) return fail(res, out.status, out.error, out.details);
    reply(res, 200, json{{"applied", true}, {"warnings", out.warnings}});
  });
  h.Post("/v1/config/reload", [this, who](const net::Request& req, net::Response& res) {
    auto caller = who(req, res);
    if (!caller) return;
    if (!caller->admin) return fail(res, 403, "only an admin token may change the configuration");
    const auto out = reload_config();
    if (out.status != 200) return fail(res, out.status, out.error, out.details);
    reply(res, 200,
          json{{"applied", true}, {"files", options_.config_files}, {"warnings", out.warnings}});
  });

  // --- Agents --------------------------------------------------------------------------------
  h.Post("/v1/agents/register",
         [this, now](const net::Request& req, net::Response& res) {
           proto::RegisterRequest rr;
           try {
             rr = json::parse(req.body).get<proto::RegisterRequest>();
           } catch (const json::exception& e) {
             return fail(res, 400, std::string("bad register request: ") + e.what());
           }
           ServerState::RegisterOutcome out;
           const std::string bearer = secret::bearer(req.get_header_value("Authorization"));
           {
             std::lock_guard lk(state_->mu());
             out = state_->register_agent(rr, bearer, auth_.join_token, now());
           }
           if (out.status != 200)
             return reply(res, out.status,
                          json{{"error", out.error}, {"details", out.details}, {"code", out.code}});
           if (out.ticket && !store_->wait(out.ticket))
             return fail(res, 503, "the registration could not be written", {refusal()});
           log("agent registered: node " + rr.node + " at " + rr.address);
           kick();
           reply(res, 200, out.response);
         },
         {.lane = kAgentLane});
  routes_sync();  // http_sync.cc

  // An admin releases a node whose agent lost its state directory (node-credential): the next
  // agent to register that name with the join token becomes the node.
  h.Post(R"(/v1/nodes/([^/]+)/reset-credential)",
         [this, who](const net::Request& req, net::Response& res) {
           auto caller = who(req, res);
           if (!caller) return;
           if (!caller->admin) return fail(res, 403, "only an admin token may reset a node");
           const std::string node = req.matches[1];
           uint64_t ticket = 0;
           int status = 0;
           {
             std::lock_guard lk(state_->mu());
             status = state_->reset_node_credential(node, &ticket);
           }
           if (status != 200) return fail(res, status, "no node \"" + node + "\" is configured");
           if (ticket && !store_->wait(ticket))
             return fail(res, 503, "the reset could not be written", {refusal()});
           log("node " + node + ": credential reset by " + caller->name);
           reply(res, 200, json{{"node", node}, {"reset", true}});
         });

  // An admin takes a node out of scheduling or puts it back (Slurm's drain / resume).
  h.Post(R"(/v1/nodes/([^/]+)/(cordon|drain|resume))",
         [this, who](const net::Request& req, net::Response& res) {
           auto caller = who(req, res);
           if (!caller) return;
           if (!caller->admin)
             return fail(res, 403, "only an admin token may cordon or drain a node");
           const std::string node = req.matches[1];
           const std::string verb = req.matches[2];
           std::string reason;
           if (!req.body.empty()) {
             const auto body = json::parse(req.body, nullptr, /*allow_exceptions=*/false);
             if (!body.is_object() || (body.contains("reason") && !body["reason"].is_string()))
               return fail(res, 400, "expected {\"reason\": \"...\"}");
             reason = body.value("reason", "");
             if (reason.size() > 1024) return fail(res, 400, "reason: at most 1024 bytes");
           }
           uint64_t ticket = 0;
           int status = 0;
           json view;
           {
             std::lock_guard lk(state_->mu());
             status = state_->set_node_hold(node, verb == "resume" ? "" : verb, reason, &ticket);
           }
           if (status != 200) return fail(res, status, "no node \"" + node + "\" is configured");
           if (ticket && !store_->wait(ticket))
             return fail(res, 503, "the change could not be written", {refusal()});
           log("node " + node + ": " + verb + " by " + caller->name +
               (reason.empty() ? "" : " (" + reason + ")"));
           kick();
           reply(res, 200, json{{"node", node}, {"hold", verb == "resume" ? "" : verb}});
         });

  dashboard_routes();  // the web dashboard at / (http_dashboard.cc)
}

}  // namespace sluice::server
