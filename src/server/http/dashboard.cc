// The web dashboard (docs/dashboard.md): its page and scripts at / and /ui/NAME (embedded at
// build time, no token needed: they hold no data), and its history at /v1/dashboard (a token
// where tokens are on, as every /v1 read). The page reads everything else from the same API as
// the CLI (/v1/queues, /v1/nodes, /v1/jobs, ...), with the token the user signed in with.
#include <charconv>

#include "build_info.h"
#include "server/dashboard_assets.h"
#include "server/http/reply.h"
#include "server/server.h"

namespace sluice::server {
namespace {

using nlohmann::json;

const DashboardAsset* find_asset(const std::string& name) {
  for (const auto& a : dashboard_assets())
    if (a.name == name) return &a;
  return nullptr;
}

void serve_asset(const DashboardAsset& a, net::Response& res) {
  // The page runs only its own scripts and talks only to this server: no inline script, no
  // other origin (a job name in a table can then never become code).
  res.set_header("Content-Security-Policy",
                 "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                 "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'");
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_header("Cache-Control", "no-cache");
  res.set_content(a.body, a.content_type);
}

// A namespace a caller may not see is left out of every sample (GPU-hours are per namespace;
// queues and nodes are visible to every token, as in /v1/queues and /v1/nodes).
void hide_namespaces(json& history, const Caller& caller) {
  if (caller.admin) return;
  for (auto& s : history["samples"]) {
    auto& ns = s["namespaces"];
    for (auto it = ns.begin(); it != ns.end();)
      it = caller.sees(it.key()) ? std::next(it) : ns.erase(it);
  }
}

}  // namespace

void Server::routes_dashboard() {
  auto& h = *http_;
  h.Get("/", [](const net::Request&, net::Response& res) {
    serve_asset(*find_asset("index.html"), res);
  });
  h.Get(R"(/ui/([a-z]+\.[a-z]+))", [](const net::Request& req, net::Response& res) {
    const auto* a = find_asset(req.matches[1]);
    if (!a) return fail(res, 404, "no dashboard file " + req.matches[1].str());
    serve_asset(*a, res);
  });
  // The history ring (dashboard_history.h): samples after ?since=T (unix seconds), oldest
  // first, plus what the page needs to know about this server. Without a valid token it says
  // only that one is needed (200, "caller": null, no samples): the page then asks the user to
  // sign in without a failed request in the browser's console.
  h.Get("/v1/dashboard", [this](const net::Request& req, net::Response& res) {
    auto caller = auth_.caller(req.get_header_value("Authorization"));
    if (!caller)
      return reply(res, 200, json{{"auth", true}, {"caller", nullptr}, {"samples", json::array()}});
    double since = 0;
    const std::string text = req.get_param_value("since");
    if (!text.empty()) {
      const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), since);
      if (ec != std::errc() || end != text.data() + text.size() || !(since >= 0))
        return fail(res, 400, "since: expected unix seconds");
    }
    json body = history_->since(since);
    hide_namespaces(body, *caller);
    body["now"] = static_cast<double>(now_ns()) / 1e9;
    body["charts"] = dashboard_has_charts();
    body["auth"] = auth_.enabled();
    body["caller"] = {{"name", caller->name}, {"admin", caller->admin}};
    body["version"] = std::string(build_version()) + " (" + build_commit() + ")";
    reply(res, 200, body);
  });
}

}  // namespace sluice::server
