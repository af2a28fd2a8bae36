// The Kubernetes API's routes (docs/kubernetes.md), on the native API's port and tokens: one
// route per verb for everything under /api and /apis, read into a kube::Call (the caller, the
// path's parts, the query) and dispatched by resource. Every error is a Status object; a verb
// sluice does not serve is 405 MethodNotAllowed, never a pretended success.
#include "server/http/kube.h"
#include "server/http/kube_visibility.h"
#include "server/http/kube_watch.h"
#include "server/http/reply.h"
#include "server/server.h"

namespace sluice::server {

using nlohmann::json;

void Server::routes_kube() {
  auto& h = *http_;
  h.Get("/version",
        [](const net::Request&, net::Response& res) { reply(res, 200, kube::version_info()); });
  h.Get("/api", [this](const net::Request& req, net::Response& res) {
    if (!caller_of(req, res)) return kube::to_status(res);
    reply(res, 200, kube::api_versions(req.get_header_value("Host")));
  });
  h.Get("/apis", [this](const net::Request& req, net::Response& res) {
    if (!caller_of(req, res)) return kube::to_status(res);
    reply(res, 200, kube::group_list());
  });
  h.Get("/openapi/v3", [this](const net::Request& req, net::Response& res) {
    if (!caller_of(req, res)) return kube::to_status(res);
    reply(res, 200, kube::openapi_index());
  });
  h.Get(R"(/openapi/v3/(.+))", [this](const net::Request& req, net::Response& res) {
    if (!caller_of(req, res)) return kube::to_status(res);
    if (auto doc = kube::openapi_document(req.matches[1])) return reply(res, 200, *doc);
    kube::fail_status(res, 404, "no OpenAPI document for " + req.matches[1].str());
  });
  // Logs wait for the pod's agent without holding a thread (logs.cc).
  h.Async("GET", R"(/api/v1/namespaces/([^/]+)/pods/([^/]+)/log)",
          [this](net::Request& req, net::Responder r) {
            r.to_worker([this, &req, r] {
              net::Response res;
              if (kube_ask_log(req, r, res)) r.send(std::move(res));
            });
          });
  const std::string any = R"(/apis?/.+)";
  // A watch holds its connection, not a worker (kube_watch.h); other GETs go to a worker.
  h.Async("GET", any, [this](net::Request& req, net::Responder r) {
    if (kube::flag_true(req.get_param_value("watch")))
      return r.to_worker([this, &req, r] { kube_watch(req, r); });
    r.to_worker([this, &req, r] {
      net::Response res;
      kube_serve(req, res);
      r.send(std::move(res));
    });
  });
  h.Post(any, handler(&Server::kube_serve));
  h.Put(any, handler(&Server::kube_serve));
  h.Delete(any, handler(&Server::kube_serve));
  h.Async("PATCH", any, [this](net::Request& req, net::Responder r) {
    r.to_worker([this, &req, r] {
      net::Response res;
      kube_serve(req, res);
      r.send(std::move(res));
    });
  });
}

// Authorizes, reads the path and the query, then kube_dispatch.
void Server::kube_serve(const net::Request& req, net::Response& res) {
  auto caller = caller_of(req, res);
  if (!caller) return kube::to_status(res);
  auto path = kube::parse_path(req.path);
  if (!path) return kube::fail_status(res, 404, "the server could not find the requested resource");
  if (path->resource.empty()) {
    auto list = kube::resource_list(path->group, path->version);
    if (!list)
      return kube::fail_status(res, 404, "the server could not find the requested resource");
    if (req.method != "GET") return kube::fail_status(res, 405, "only GET on a resource list");
    return reply(res, 200, *list);
  }
  kube::Call c{.req = req, .caller = std::move(*caller), .path = std::move(*path)};
  c.kind = kube::find_kind(c.path.group, c.path.version, c.path.resource);
  if (!c.kind || (!c.path.sub.empty() && c.path.sub != "status" &&
                  !(c.path.sub == "eviction" && c.kind->resource == "pods") &&
                  !(c.path.sub == "pendingworkloads" && c.kind->group == kube::kVisibilityGroup)))
    return kube::fail_status(res, 404, "the server could not find the requested resource");
  if (!c.path.ns.empty() && !c.kind->namespaced)
    return kube::fail_status(res, 404, "the server could not find the requested resource");
  if (auto why = kube::read_query(c); !why.empty()) return kube::fail_status(res, 400, why);
  const std::string verb = req.method == "GET"      ? (c.path.name.empty() ? "list" : "get")
                           : req.method == "POST"   ? "create"
                           : req.method == "DELETE" ? "delete"
                           : req.method == "PATCH"  ? "patch"
                                                    : "update";
  if (!c.path.ns.empty() && !c.caller.sees(c.path.ns))
    return reply(res, 403, kube::forbidden(c, verb, c.path.ns));
  kube_dispatch(c, res);
}

void Server::kube_dispatch(kube::Call& c, net::Response& res) {
  const std::string& m = c.req.method;
  const std::string& r = c.path.resource;
  const bool get = m == "GET" && c.path.sub.empty();
  if (c.kind->group == kube::kVisibilityGroup) return kube_pending_workloads(c, res);
  if (r == "jobs" && get) return kube_jobs(c, res);
  const bool jobs = r == "jobs" || kube::job_kind(*c.kind);  // JobSets, ...: kube_job_kinds.cc
  if (jobs && get) return kube_kind_jobs(c, res);
  if (jobs && m == "POST" && c.path.name.empty() && !c.path.ns.empty())
    return kube_create_job(c, res);
  if (jobs && m == "DELETE" && !c.path.name.empty()) return kube_delete_job(c, res);
  const bool one_job = jobs && !c.path.name.empty() && c.path.sub.empty() && !c.path.ns.empty();
  if (one_job && m == "PATCH" &&
      kube::media_type(c.req.header("Content-Type")) == "application/apply-patch+yaml")
    return kube_ssa_job(c, res);
  if (one_job && m == "PATCH")
    return kube_applies(c) ? kube_apply_job(c, res) : kube_patch_job(c, res);
  if (one_job && m == "PUT") return kube_update_job(c, res);
  if (r == "nodes" && m == "PATCH" && !c.path.name.empty() && c.path.sub.empty())
    return kube_patch_node(c, res);
  if (r == "pods" && m == "POST" && c.path.sub == "eviction" && !c.path.ns.empty())
    return kube_evict(c, res);
  if (get && r == "events") return kube_events(c, res);
  if (m == "POST" && c.path.name.empty() && r == "selfsubjectaccessreviews")
    return kube_access_review(c, res);
  if (m == "POST" && c.path.name.empty() && r == "selfsubjectrulesreviews")
    return kube_rules_review(c, res);
  if (get && r == "namespaces") return kube_namespaces(c, res);
  if (get && r == "nodes") return kube_nodes(c, res);
  if (get && r == "pods") return kube_pods(c, res);
  if (get && r == "workloads") return kube_workloads(c, res);
  if (get && c.kind->group == kube::kKueueGroup) return kube_config_objects(c, res);
  if (m != "GET" && c.kind->group == kube::kKueueGroup && r != "workloads")
    return kube_config_write(c, res);
  kube::fail_status(res, 405,
                    "sluice does not serve " + m + " on " + kube::resource_text(c) +
                        (c.path.sub.empty() ? "" : "/" + c.path.sub) + " (docs/kubernetes.md)");
}

// The job records a list may show, newest first, from c.before down: at most kMaxScan looked
// at, and none once the page is full. The continue token, or "" for the last page.
std::string Server::kube_scan(const kube::Call& c, const std::function<bool()>& full,
                              const std::function<void(const JobRecord&)>& each) const {
  const auto& recs = state_->records();
  auto it = std::make_reverse_iterator(c.before ? recs.lower_bound(c.before) : recs.end());
  for (size_t scanned = 0; it != recs.rend(); ++it, ++scanned) {
    const JobRecord& r = it->second;
    if (scanned == kube::kMaxScan) return std::to_string(r.job.id + 1);
    if (!kube::listed(r) || !c.shows(r.job.namespace_)) continue;
    if (full()) return std::to_string(r.job.id + 1);
    each(r);
  }
  return "";
}

const JobRecord* Server::kube_job_named(const std::string& ns, const std::string& name) const {
  const auto* ids = state_->jobs_named(ns, name);
  if (!ids) return nullptr;
  size_t looked = 0;  // a name cancelled many times over: bounded like a list's page
  for (auto it = ids->rbegin(); it != ids->rend() && looked < kube::kMaxScan; ++it, ++looked)
    if (const JobRecord* r = state_->find(*it); r && kube::listed(*r)) return r;
  return nullptr;
}

}  // namespace sluice::server
