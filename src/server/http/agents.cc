// The agents' API (docs/api.md, docs/agent.md), on the agents' own lane of workers:
// POST /v1/agents/register, and POST /v1/agents/{node}/sync: an agent's reports in, its node's
// orders out, held as a long poll while there is nothing for it. (Log uploads: logs.cc.)
//
// Most syncs of a large cluster are heartbeats that wait for nothing (the agent's long poll was
// cut short, or the node has orders) and write nothing: they are answered on the HTTP I/O
// thread that read them, without the hand-off to a worker thread and back, whose two wake-ups
// cost more CPU than the sync itself (docs/benchmarks.md, "Heartbeats on the I/O thread"). What
// may block goes on to a worker: a body that is not small to parse, a state lock someone else
// holds, a long poll, a wait for the store's commit.
#include <algorithm>
#include <chrono>

#include "secret/secret.h"
#include "server/http/reply.h"
#include "server/server.h"

namespace sluice::server {

namespace {

// Bodies up to this are parsed on the I/O thread (a node's heartbeat with a few pods is a few
// hundred bytes); a larger one on a worker, so that parsing it stalls no other connection.
constexpr size_t kInlineParseBytes = 16 << 10;

}  // namespace

// One sync, carried from the I/O thread to a worker where it has to go on.
struct Server::SyncCall {
  std::string node, bearer, body;
  proto::SyncRequest request;
  bool parsed = false;
  bool applied = false;  // sync_reports() ran; `ticket` makes its writes durable
  bool taken = false;    // the node's orders are in `reply`
  uint64_t ticket = 0;
  proto::SyncResponse reply;
};

void Server::routes_agents() {
  http_->Post("/v1/agents/register", handler(&Server::register_agent), {.lane = kAgentLane});
  http_->Async("POST", R"(/v1/agents/([^/]+)/sync)",
               [this](net::Request& req, net::Responder r) {
                 auto call = std::make_shared<SyncCall>();
                 call->node = req.matches[1];
                 call->bearer = secret::bearer(req.get_header_value("Authorization"));
                 net::Response res;
                 // Before the body is parsed: strangers cost nothing (no state lock: credentials
                 // have their own).
                 if (!state_->node_admitted(call->node, call->bearer)) {
                   fail(res, 401, "missing or wrong credential for node \"" + call->node + "\"");
                   return r.send(std::move(res));
                 }
                 call->body = std::move(req.body);
                 if (sync_step(*call, res, false)) return r.send(std::move(res));
                 r.to_worker([this, call, r] {
                   net::Response out;
                   sync_step(*call, out, true);
                   r.send(std::move(out));
                 });
               },
               {.lane = kAgentLane});
}

// POST /v1/agents/register: a node's agent joins (with its node's credential, or the join token
// for a node that has none yet) and learns which of its pods are current runs.
void Server::register_agent(const net::Request& req, net::Response& res) {
  proto::RegisterRequest rr;
  try {
    rr = nlohmann::json::parse(req.body).get<proto::RegisterRequest>();
  } catch (const nlohmann::json::exception& e) {
    return fail(res, 400, std::string("bad register request: ") + e.what());
  }
  ServerState::RegisterOutcome out;
  const std::string bearer = secret::bearer(req.get_header_value("Authorization"));
  {
    std::lock_guard lk(state_->mu());
    out = state_->register_agent(rr, bearer, auth_.join_token, now_ns());
  }
  if (out.status != 200)
    return reply(
        res, out.status,
        nlohmann::json{{"error", out.error}, {"details", out.details}, {"code", out.code}});
  if (out.ticket && !store_->wait(out.ticket))
    return fail(res, 503, "the registration could not be written", {refusal()});
  log("agent registered: node " + rr.node + " at " + rr.address);
  kick();
  reply(res, 200, out.response);
}

// Runs the sync as far as it goes; true once `res` holds the answer. Without `may_block` (the
// I/O thread) it stops where it would block, and a worker calls it again with `may_block` to
// go on from there: each part (parse, reports, orders, commit) runs once.
bool Server::sync_step(SyncCall& c, net::Response& res, bool may_block) {
  if (!c.parsed) {
    if (!may_block && c.body.size() > kInlineParseBytes) return false;
    try {
      c.request = nlohmann::json::parse(c.body).get<proto::SyncRequest>();
    } catch (const nlohmann::json::exception& e) {
      fail(res, 400, std::string("bad sync request: ") + e.what());
      return true;
    }
    c.parsed = true;
    c.body = std::string();
  }
  if (!c.taken) {
    std::unique_lock lk(state_->mu(), std::defer_lock);
    if (may_block)
      lk.lock();
    else if (!lk.try_lock())
      return false;
    if (!c.applied) {
      const auto out = state_->sync_reports(c.node, c.bearer, c.request, now_ns());
      if (out.status != 200) {
        fail(res, out.status, out.error);
        return true;
      }
      c.applied = true;
      c.ticket = out.ticket;
      if (!c.request.exits.empty()) kick();  // capacity may have been freed
    }
    // Long poll: hold the reply until there is work for this node (bounded), unless half the
    // agents' lane holds long polls already (the agent then polls a heartbeat later).
    auto wait = std::chrono::milliseconds(std::clamp<int64_t>(c.request.wait_ms, 0, 30'000));
    if (long_polls_ >= std::max(1, options_.agent_http_threads / 2)) wait = {};
    const auto ready = [&] { return stop_ || state_->has_outbox(c.node); };
    if (wait.count() > 0 && !ready()) {
      if (!may_block) return false;
      ++long_polls_;
      state_->outbox_cv(c.node)->wait_for(lk, wait, ready);
      --long_polls_;
    }
    c.reply = state_->take_outbox(c.node, c.request.agent_id);
    c.taken = true;
  }
  if (c.ticket) {
    if (!may_block) return false;
    if (!store_->wait(c.ticket)) {
      fail(res, 503, "the reports could not be written", {refusal()});
      return true;
    }
  }
  reply(res, 200, c.reply);
  return true;
}

}  // namespace sluice::server
