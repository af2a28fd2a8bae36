// The cluster as users and admins see it (docs/api.md): queues, LocalQueues and nodes, and the
// admin's node verbs (cordon, drain, resume, reset-credential).
#include "server/http/node_bodies.h"
#include "server/http/reply.h"
#include "server/server.h"

namespace sluice::server {

using nlohmann::json;

void Server::routes_cluster() {
  auto& h = *http_;
  h.Get("/v1/queues", [this](const net::Request& req, net::Response& res) {
    if (!caller_of(req, res)) return;
    std::lock_guard lk(state_->mu());
    reply(res, 200, state_->queues_view(now_ns()));
  });
  h.Get("/v1/localqueues", handler(&Server::get_local_queues));
  h.Get("/v1/nodes", [this](const net::Request& req, net::Response& res) {
    if (!caller_of(req, res)) return;
    std::lock_guard lk(state_->mu());
    reply(res, 200, state_->nodes_view(now_ns()));
  });
  h.Post(R"(/v1/nodes/([^/]+)/reset-credential)", handler(&Server::reset_node_credential));
  h.Post(R"(/v1/nodes/([^/]+)/(cordon|drain|resume))", handler(&Server::hold_node));
  h.Post(R"(/v1/nodes/([^/]+)/reclaim)", handler(&Server::reclaim_node));
  // The node pools (docs/autoscaling.md): each pool's slots and the provisioner's last calls.
  h.Get("/v1/pools", [this](const net::Request& req, net::Response& res) {
    if (!caller_of(req, res)) return;
    std::lock_guard lk(state_->mu());
    reply(res, 200, state_->pools_view(now_ns()));
  });
}

// GET /v1/localqueues: the LocalQueues the caller may submit to, with their ClusterQueue's state.
void Server::get_local_queues(const net::Request& req, net::Response& res) {
  auto caller = caller_of(req, res);
  if (!caller) return;
  json out = json::array();
  {
    std::lock_guard lk(state_->mu());
    json all = state_->local_queues_view(now_ns());
    for (auto& q : all["local_queues"])
      if (q["namespace"] == "*" || caller->sees(q["namespace"].get<std::string>()))
        out.push_back(std::move(q));
  }
  reply(res, 200, json{{"local_queues", out}});
}

// POST /v1/nodes/{node}/reset-credential: an admin releases a node whose agent lost its state
// directory (node-credential); the next agent to register that name with the join token
// becomes the node.
void Server::reset_node_credential(const net::Request& req, net::Response& res) {
  auto caller = admin_of(req, res, "reset a node");
  if (!caller) return;
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
}

// POST /v1/nodes/{node}/cordon | drain | resume: an admin takes a node out of scheduling or
// puts it back (Slurm's drain / resume).
void Server::hold_node(const net::Request& req, net::Response& res) {
  auto caller = admin_of(req, res, "cordon or drain a node");
  if (!caller) return;
  const std::string node = req.matches[1];
  const std::string verb = req.matches[2];
  std::string reason;
  if (auto why = read_hold_reason(req.body, &reason); !why.empty()) return fail(res, 400, why);
  uint64_t ticket = 0;
  int status = 0;
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
}

// POST /v1/nodes/{node}/reclaim {"notice": "30s"}: the node is taken back (a spot provider's
// notice, relayed by the provisioner or an admin): its pods get SIGTERM with the notice as their
// grace and go back to their queues; a pool's node is then deleted (docs/autoscaling.md).
void Server::reclaim_node(const net::Request& req, net::Response& res) {
  auto caller = admin_of(req, res, "reclaim a node");
  if (!caller) return;
  if (!may_write(res)) return;
  const std::string node = req.matches[1];
  TimeNs notice = 0;
  if (auto why = read_reclaim_notice(req.body, &notice); !why.empty()) return fail(res, 400, why);
  uint64_t ticket = 0;
  int status = 0;
  std::string error;
  {
    std::lock_guard lk(state_->mu());
    status = state_->reclaim_node(node, notice, now_ns(), &error, &ticket);
  }
  if (status != 200) return fail(res, status, error);
  if (ticket && !store_->wait(ticket))
    return fail(res, 503, "the reclaim could not be written", {refusal()});
  log("node " + node + ": reclaimed by " + caller->name + " (notice " +
      std::to_string(notice / kNsPerSec) + "s)");
  kick();
  reply(res, 200, json{{"node", node}, {"reclaimed", true}, {"notice_s", notice / kNsPerSec}});
}

}  // namespace sluice::server
