// The agent's own HTTP endpoints (src/net's server): /healthz, a pod's log for the node's
// administrator, a pod's checkpoint report with its own token, the pods it runs.
#include <unistd.h>

#include "agent/agent.h"
#include "secret/secret.h"

namespace sluice::agent {

namespace {

void json_error(net::Response& res, int status, const std::string& msg) {
  res.status = status;
  res.set_content(proto::dump_json(nlohmann::json(proto::ErrorBody{msg, {}})), "application/json");
}

}  // namespace

void Agent::setup_http() {
  // One I/O thread does the socket work; handlers (log reads of up to kDefaultLogBytes) run on
  // http_threads workers; /healthz answers on the I/O thread even when they are all busy.
  net::ServerOptions ho;
  ho.name = "agent " + options_.node;
  ho.io_threads = 1;
  ho.workers = std::max(1, options_.http_threads);
  ho.max_queued = 256;
  ho.max_body_bytes = 1 << 20;
  ho.log = [this](const std::string& line) { log(line); };
  http_ = std::make_unique<net::Server>(std::move(ho));
  auto& s = *http_;
  s.Get("/healthz",
        [](const net::Request&, net::Response& res) { res.set_content("ok", "text/plain"); },
        {.run_inline = true});
  // The node's credential: the agent's own administrator (root on the node) may look; pods
  // and other users may not (docs/agent.md, "Trust model").
  s.Get(R"(/v1/logs/(\d{1,19})/(\d{1,9}))", [this](const net::Request& req, net::Response& res) {
    if (!authorized(req, identity_->credential()))
      return json_error(res, 401, "this endpoint needs the node's credential");
    const proto::PodRef ref{std::stoull(req.matches[1].str()), std::stoi(req.matches[2].str())};
    int64_t tail = 0;
    if (req.has_param("tail_bytes")) {
      const std::string t = req.get_param_value("tail_bytes");
      if (t.empty() || t.size() > 12 || t.find_first_not_of("0123456789") != std::string::npos) {
        return json_error(res, 400, "tail_bytes must be a non-negative integer");
      }
      tail = std::stoll(t);
    }
    proto::LogRequest part;
    part.tail_bytes = tail;
    PodLog out = pod_log(ref, part);
    res.status = out.status;
    res.set_content(std::move(out.body), out.content_type);
  });
  // A pod reports its own checkpoint with its own token (SLUICE_CHECKPOINT_TOKEN).
  s.Post(R"(/v1/checkpoint/(\d{1,19})/(\d{1,9}))", [this](const net::Request& req,
                                                          net::Response& res) {
    const proto::PodRef ref{std::stoull(req.matches[1].str()), std::stoi(req.matches[2].str())};
    if (!authorized(req, identity_->checkpoint_token(ref)))
      return json_error(res, 401,
                        "a checkpoint report needs the pod's own $SLUICE_CHECKPOINT_TOKEN");
    if (!runner_->report_checkpoint(ref)) {
      return json_error(res, 404,
                        "job " + std::to_string(ref.job) + " pod " + std::to_string(ref.pod) +
                            " does not run on node " + options_.node);
    }
    res.set_content(R"({"ok":true})", "application/json");
  });
  s.Get("/v1/pods", [this](const net::Request& req, net::Response& res) {
    if (!authorized(req, identity_->credential()))
      return json_error(res, 401, "this endpoint needs the node's credential");
    res.set_content(proto::dump_json(nlohmann::json(runner_->running())), "application/json");
  });
}

Result<bool> Agent::bind_http(const std::string& host, int port) {
  setup_http();
  auto listening = http_->listen(host, port);
  if (!listening) return Error{"agent " + options_.node + ": " + listening.error()};
  const int bound = *listening;
  if (!options_.advertise.empty()) {
    address_ = options_.advertise;
  } else {
    std::string h = host;
    if (h == "0.0.0.0" || h == "::" || h.empty()) {
      char name[256] = {};
      h = ::gethostname(name, sizeof name - 1) == 0 ? name : "127.0.0.1";
    }
    address_ = "http://" + h + ":" + std::to_string(bound);
  }
  return true;
}

bool Agent::authorized(const net::Request& req, const std::string& token) const {
  return secret::same(secret::bearer(req.get_header_value("Authorization")), token);
}

}  // namespace sluice::agent
