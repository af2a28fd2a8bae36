// The configuration and the live state (docs/api.md): read, replace and reload the
// configuration, export the state as `sluice plan` reads it. Admin tokens only.
#include "server/http/reply.h"
#include "server/server.h"
#include "server/state_export.h"

namespace sluice::server {

using nlohmann::json;

void Server::routes_config() {
  auto& h = *http_;
  h.Get("/v1/config", [this](const net::Request& req, net::Response& res) {
    if (!admin_of(req, res, "read the configuration")) return;
    std::lock_guard lk(state_->mu());
    res.set_content(config_text_, "application/yaml");
  });
  // The live state as `sluice plan` reads it (state_export.h).
  h.Get("/v1/state", [this](const net::Request& req, net::Response& res) {
    if (!admin_of(req, res, "export the state")) return;
    std::string text;
    {
      std::lock_guard lk(state_->mu());
      text = export_state(*state_, config_text_, now_ns(), url());
    }
    res.set_content(text, "application/yaml");
  });
  h.Put("/v1/config", [this](const net::Request& req, net::Response& res) {
    auto caller = admin_of(req, res, "change the configuration");
    if (!caller) return;
    std::unique_lock one(kube_config_mu_);  // not between a Kubernetes write's read and apply
    auto out = apply_config({Source{"request", req.body}});
    one.unlock();
    if (out.status != 200) return fail(res, out.status, out.error, out.details);
    if (!options_.config_files.empty()) {
      // Files win at a reload (SIGHUP) and a restart: say so now, and again at the reload.
      std::lock_guard lk(state_->mu());
      applied_over_files_ = caller->name;
      out.warnings.push_back(
          "this server reads its configuration from --config files: a reload (SIGHUP, `sluice "
          "config reload`) or a restart replaces this one with theirs; change the files to keep "
          "it");
    }
    reply(res, 200, json{{"applied", true}, {"warnings", out.warnings}});
  });
  h.Post("/v1/config/reload", [this](const net::Request& req, net::Response& res) {
    if (!admin_of(req, res, "change the configuration")) return;
    const auto out = reload_config();
    if (out.status != 200) return fail(res, out.status, out.error, out.details);
    reply(res, 200,
          json{{"applied", true}, {"files", options_.config_files}, {"warnings", out.warnings}});
  });
}

}  // namespace sluice::server
