// Registration with the server: the node's GPUs, capacity and running pods, as the node (its
// credential) or, for a node the server does not know yet, with the join token.
#include <unistd.h>

#include "agent/agent.h"
#include "agent/server_client.h"

namespace sluice::agent {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

bool Agent::do_register(net::Client& cli, size_t at) {
  proto::RegisterRequest req;
  req.node = options_.node;
  req.address = address_;
  req.gpus = gpus_->gpus();
  req.cpu_milli =
      options_.cpu_milli > 0 ? options_.cpu_milli : int64_t{::sysconf(_SC_NPROCESSORS_ONLN)} * 1000;
  req.memory_mib = options_.memory_mib > 0 ? options_.memory_mib
                                           : int64_t{::sysconf(_SC_PHYS_PAGES)} *
                                                 ::sysconf(_SC_PAGESIZE) / (1024 * 1024);
  req.running = runner_->running();
  req.agent_id = agent_id_;
  req.credential = identity_->credential();
  req.container_runtime = isolation_->container_runtime();
  cli.options().read_timeout = std::chrono::seconds(read_margin_s());
  const std::string body = proto::dump_json(nlohmann::json(req));
  // 1. As the node (its credential); 2. a node the server does not know yet joins with the
  //    join token, and the credential it brings becomes the node's.
  const auto sent = Clock::now();
  std::optional<Awaiting> awaiting(std::in_place, *this, at, sent);
  auto res =
      cli.post("/v1/agents/register", body, "application/json", bearer(identity_->credential()));
  if (res && res->status == 401 && error_code(res) == "no-node-credential") {
    if (options_.join_token.empty()) {
      note_error("register at " + servers_[at] + " failed: " + error_text(res) +
                 "; this agent has no join token (--join-token-file or $SLUICE_JOIN_TOKEN)");
      return false;
    }
    res = cli.post("/v1/agents/register", body, "application/json", bearer(options_.join_token));
  }
  awaiting.reset();
  if (!res || res->status != 200) {
    note_error("register at " + servers_[at] + " failed: " + error_text(res));
    follow_leader(res, at);
    return false;
  }
  proto::RegisterResponse resp;
  try {
    resp = nlohmann::json::parse(res->body).get<proto::RegisterResponse>();
  } catch (const std::exception& e) {
    note_error(std::string("register: bad response: ") + e.what());
    return false;
  }
  {
    std::lock_guard lock(mu_);
    status_.registered = true;
    ++status_.registrations;
    if (resp.heartbeat_ms > 0) heartbeat_ms_ = resp.heartbeat_ms;
    lease_ms_ = std::max<int64_t>(resp.lease_ms, 0);
    registered_sent_ = sent;
    last_logged_error_.clear();
  }
  renew_lease(sent);
  log("registered with " + servers_[at] + ": " + std::to_string(req.gpus.size()) + " GPUs, " +
      std::to_string(req.running.size()) + " running pods, heartbeat " +
      std::to_string(resp.heartbeat_ms) + " ms");
  apply_stops(resp.stop);
  return true;
}

}  // namespace sluice::agent
