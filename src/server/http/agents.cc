// The agents' API (docs/api.md, docs/agent.md), on the agents' own lane of workers:
// POST /v1/agents/register, and POST /v1/agents/{node}/sync: an agent's reports in, its node's
// orders out, held as a long poll while there is nothing for it. (Log uploads: logs.cc.)
//
// Most syncs of a large cluster are heartbeats that wait for nothing (the agent's long poll was
// cut short, or the node has orders) and write nothing: they are answered on the HTTP I/O
// thread that read them, without the hand-off to a worker thread and back, whose two wake-ups
// cost more CPU than the sync itself (docs/benchmarks.md, "Heartbeats on the I/O thread"). What
// may block goes on to a worker: a body that is not small to parse, a state lock someone else
// holds, a wait for the store's commit. An idle long poll holds no thread either: it is parked
// with the node's outbox, and ends on the I/O thread by a timer when nothing came for it (a
// worker that waited on a condition variable cost two more wake-ups and a hand-back per
// heartbeat of every node: docs/benchmarks.md, twenty-fifth session).
#include <algorithm>
#include <atomic>
#include <chrono>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include "proto/protocol_plain.h"
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
  uint64_t admitted = 0;  // the credentials' version its bearer was checked at
  proto::SyncRequest request;
  bool parsed = false;
  bool applied = false;  // sync_reports() ran; `ticket` makes its writes durable
  bool taken = false;    // the node's orders are in `reply`
  uint64_t ticket = 0;
  proto::SyncResponse reply;
  // A parked long poll (park_sync()): the first of its wake-up and its timer answers it.
  std::atomic<bool> claimed{false};
  uint64_t parked = 0;  // its id among the state's parked polls; 0 once forgotten
  std::unique_ptr<boost::asio::steady_timer> timer;
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
                 if (!state_->node_admitted(call->node, call->bearer, &call->admitted)) {
                   fail(res, 401, "missing or wrong credential for node \"" + call->node + "\"");
                   return r.send(std::move(res));
                 }
                 call->body = std::move(req.body);
                 switch (sync_step(call, res, &r)) {
                   case SyncStep::kAnswered:
                     return r.send(std::move(res));
                   case SyncStep::kParked:
                     return;
                   case SyncStep::kWorker:
                     break;
                 }
                 r.to_worker([this, call, r] { finish_sync(call, r); });
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

// Runs the sync as far as it goes: kAnswered once `res` holds the answer. On the I/O thread
// (`io`) it stops where it would block (kWorker: a worker calls it again without `io` to go on
// from there; each part, parse, reports, orders, commit, runs once) or parks an idle long poll
// (kParked: park_sync() answers it).
Server::SyncStep Server::sync_step(const std::shared_ptr<SyncCall>& call, net::Response& res,
                                   const net::Responder* io) {
  SyncCall& c = *call;
  if (!c.parsed) {
    if (io && c.body.size() > kInlineParseBytes) return SyncStep::kWorker;
    try {
      c.request = proto::parse_message<proto::SyncRequest>(c.body);
    } catch (const nlohmann::json::exception& e) {
      fail(res, 400, std::string("bad sync request: ") + e.what());
      return SyncStep::kAnswered;
    }
    c.parsed = true;
    c.body = std::string();
  }
  if (!c.taken) {
    std::unique_lock lk(state_->mu(), std::defer_lock);
    if (!io)
      lk.lock();
    else if (!lk.try_lock())
      return SyncStep::kWorker;
    if (!c.applied) {
      const auto out = state_->sync_reports(c.node, c.bearer, c.request, now_ns(), c.admitted);
      if (out.status != 200) {
        fail(res, out.status, out.error);
        return SyncStep::kAnswered;
      }
      c.applied = true;
      c.ticket = out.ticket;
      if (!c.request.exits.empty()) kick();  // capacity may have been freed
    }
    // Long poll: hold the reply until there is work for this node (bounded), unless half the
    // agents' lane holds long polls already (the agent then polls a heartbeat later). A parked
    // poll that woke or whose time is up answers with what there is.
    auto wait = std::chrono::milliseconds(std::clamp<int64_t>(c.request.wait_ms, 0, 30'000));
    if (long_polls_ >= std::max(1, options_.agent_http_threads / 2)) wait = {};
    if (c.parked) {
      state_->unpark_poll(c.node, std::exchange(c.parked, 0));
      wait = {};
    }
    const auto ready = [&] { return stop_ || state_->has_outbox(c.node); };
    if (wait.count() > 0 && !ready()) {
      if (io && c.ticket == 0) {
        park_sync(call, *io, wait);
        return SyncStep::kParked;
      }
      if (io) return SyncStep::kWorker;
      ++long_polls_;
      state_->outbox_cv(c.node)->wait_for(lk, wait, ready);
      --long_polls_;
    }
    c.reply = state_->take_outbox(c.node, c.request.agent_id);
    c.taken = true;
  }
  if (c.ticket) {
    if (io) return SyncStep::kWorker;
    if (!store_->wait(c.ticket)) {
      fail(res, 503, "the reports could not be written", {refusal()});
      return SyncStep::kAnswered;
    }
  }
  reply(res, 200, c.reply);
  return SyncStep::kAnswered;
}

// Under the state lock, on the I/O thread: the poll waits with the node's outbox, holding no
// thread. Work for the node wakes it (a worker takes the orders: the state lock may be busy);
// else its timer ends it on the I/O thread, which answers at once when the lock is free.
void Server::park_sync(const std::shared_ptr<SyncCall>& call, const net::Responder& r,
                       std::chrono::milliseconds wait) {
  call->parked = state_->park_poll(call->node, [this, call, r] {
    if (!call->claimed.exchange(true)) r.to_worker([this, call, r] { finish_sync(call, r); });
  });
  call->timer = std::make_unique<boost::asio::steady_timer>(http_->io_context(), wait);
  call->timer->async_wait([this, call, r](const boost::system::error_code& ec) {
    if (ec || call->claimed.exchange(true)) return;  // woken first
    net::Response res;
    if (sync_step(call, res, &r) == SyncStep::kAnswered) return r.send(std::move(res));
    r.to_worker([this, call, r] { finish_sync(call, r); });
  });
}

void Server::finish_sync(const std::shared_ptr<SyncCall>& call, const net::Responder& r) {
  net::Response out;
  sync_step(call, out, nullptr);
  r.send(std::move(out));
}

}  // namespace sluice::server
