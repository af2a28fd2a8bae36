// The cluster as users and admins see it (docs/api.md): queues, LocalQueues and nodes, and the
// admin's node verbs (cordon, drain, resume, reset-credential).
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

namespace {

// The optional {"reason": "..."} of a cordon or drain; an error message when it is malformed.
std::string read_hold_reason(const std::string& body, std::string* reason) {
  if (body.empty()) return {};
  const auto j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || (j.contains("reason") && !j["reason"].is_string()))
    return "expected {\"reason\": \"...\"}";
  *reason = j.value("reason", "");
  if (reason->size() > 1024) return "reason: at most 1024 bytes";
  return {};
}

}  // namespace

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

}  // namespace sluice::server
