// kubectl auth can-i through the Kubernetes API (docs/kubernetes.md "Who may do what"): a
// SelfSubjectAccessReview answered from sluice's own rules for the caller's token, and a
// SelfSubjectRulesReview (`--list`) that lists the same rules. One table of rules answers both,
// so that what --list says and what can-i answers cannot disagree, and both say what the
// server's handlers do: an admin token may do everything; a member acts in its namespaces.
#include <algorithm>

#include "server/http/kube.h"
#include "server/http/kube_visibility.h"
#include "server/http/reply.h"
#include "server/server.h"

namespace sluice::server {

using nlohmann::json;

namespace kube {

namespace {

struct Rule {
  std::vector<std::string> verbs, groups, resources;
};

const std::vector<std::string> kReads = {"get", "list", "watch"};

// What a member may do in one of its namespaces: every verb on what it owns there (its jobs,
// JobSets, PyTorchJobs and MPIJobs, their pods, logs, evictions, events and workloads), reads
// of its LocalQueues.
std::vector<Rule> own_namespace_rules() {
  return {{{"*"}, {"batch"}, {"jobs"}},
          {{"*"}, {"jobset.x-k8s.io"}, {"jobsets"}},
          {{"*"}, {"kubeflow.org"}, {"pytorchjobs", "mpijobs"}},
          {{"*"}, {""}, {"pods", "pods/log", "pods/eviction", "events"}},
          {{"*"}, {kKueueGroup}, {"workloads"}},
          {kReads, {kKueueGroup}, {"localqueues"}},
          {{"get"}, {kVisibilityGroup}, {"localqueues/pendingworkloads"}}};
}

// What every member may do, whatever the namespace: read nodes, namespaces and Kueue's
// configuration (it changes through an admin's `sluice config apply`), and ask these reviews.
std::vector<Rule> cluster_rules() {
  return {
      {kReads, {""}, {"nodes", "namespaces"}},
      {kReads,
       {kKueueGroup},
       {"clusterqueues", "resourceflavors", "workloadpriorityclasses", "cohorts", "topologies"}},
      // Kueue's visibility API: a member's answer names its namespaces' workloads only.
      {{"get"}, {kVisibilityGroup}, {"clusterqueues/pendingworkloads"}},
      {{"create"},
       {"authorization.k8s.io"},
       {"selfsubjectaccessreviews", "selfsubjectrulesreviews"}}};
}

// The paths outside /api and /apis that every token may GET (sluice's own /v1 API has its
// rules in docs/api.md).
const std::vector<std::string>& open_paths() {
  static const std::vector<std::string> p = {"/api",     "/api/*",   "/apis",    "/apis/*",
                                             "/healthz", "/metrics", "/openapi", "/openapi/*",
                                             "/readyz",  "/version"};
  return p;
}

bool has(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

bool allows(const Rule& r, const std::string& verb, const std::string& group,
            const std::string& resource) {
  return (has(r.verbs, "*") || has(r.verbs, verb)) &&
         (has(r.groups, "*") || has(r.groups, group)) &&
         (has(r.resources, "*") || has(r.resources, resource));
}

bool path_open(const std::string& path) {
  for (const auto& p : open_paths()) {
    if (p.ends_with("/*") ? path.starts_with(p.substr(0, p.size() - 1)) : path == p) return true;
  }
  return false;
}

std::string namespaces_text(const Caller& who) {
  std::string out;
  for (const auto& n : who.namespaces) out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "none" : out;
}

// Whether `resource` of `group` is namespaced: as sluice serves it, else as a namespace given.
bool namespaced(const std::string& group, const std::string& resource, bool ns_given) {
  for (const auto& k : kinds())
    if (k.group == group && k.resource == resource) return k.namespaced;
  return ns_given;
}

json rules_json(const std::vector<Rule>& rules) {
  json out = json::array();
  for (const auto& r : rules)
    out.push_back({{"verbs", r.verbs}, {"apiGroups", r.groups}, {"resources", r.resources}});
  return out;
}

}  // namespace

AccessAnswer decide_access(const Caller& who, const AccessQuestion& q) {
  const std::string user = "token \"" + who.name + "\"";
  if (who.admin) return {true, user + " is an admin's: it may do everything"};
  if (q.non_resource) {
    if ((q.verb == "get" || q.verb == "head") && path_open(q.path))
      return {true, "every token may read " + q.path};
    return {false, user +
                       " is a member's: it may GET the discovery documents, /healthz, "
                       "/readyz and /metrics only"};
  }
  const std::string resource = q.resource + (q.subresource.empty() ? "" : "/" + q.subresource);
  for (const auto& r : cluster_rules())
    if (allows(r, q.verb, q.group, resource)) {
      if (resource == "namespaces" && !q.name.empty() && !who.sees(q.name))
        return {false, user + " sees namespaces " + namespaces_text(who) + " only"};
      return {true, "every member may " + q.verb + " " + resource};
    }
  if (!namespaced(q.group, q.resource, !q.ns.empty()))
    return {false, user + " is a member's: only an admin may " + q.verb + " " + resource};
  if (q.ns.empty()) {
    // Across namespaces: a list or watch shows the token's namespaces only.
    for (const auto& r : own_namespace_rules())
      if (has(kReads, q.verb) && allows(r, q.verb, q.group, resource))
        return {true, "across namespaces, " + user + " sees its namespaces only (" +
                          namespaces_text(who) + ")"};
    return {false, user + " acts in its namespaces only (" + namespaces_text(who) + ")"};
  }
  if (!who.sees(q.ns))
    return {false,
            user + " is a member of namespaces " + namespaces_text(who) + ", not \"" + q.ns + "\""};
  for (const auto& r : own_namespace_rules())
    if (allows(r, q.verb, q.group, resource))
      return {true, user + " is a member of namespace \"" + q.ns + "\""};
  return {false, user + " is a member's: only an admin may " + q.verb + " " + resource +
                     (q.group.empty() ? "" : "." + q.group) + " (docs/kubernetes.md)"};
}

json rules_review_status(const Caller& who, const std::string& ns) {
  if (who.admin)
    return {{"resourceRules",
             json::array({{{"verbs", {"*"}}, {"apiGroups", {"*"}}, {"resources", {"*"}}}})},
            {"nonResourceRules", json::array({{{"verbs", {"*"}}, {"nonResourceURLs", {"*"}}}})},
            {"incomplete", false}};
  std::vector<Rule> rules;
  if (!ns.empty() && who.sees(ns)) rules = own_namespace_rules();
  for (auto& r : cluster_rules()) rules.push_back(std::move(r));
  return {
      {"resourceRules", rules_json(rules)},
      {"nonResourceRules", json::array({{{"verbs", {"get"}}, {"nonResourceURLs", open_paths()}}})},
      {"incomplete", false}};
}

}  // namespace kube

// POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews (kubectl auth can-i): 201 with
// the review and its status.allowed, as the API server answers.
void Server::kube_access_review(const kube::Call& c, net::Response& res) {
  kube::BodyRefusal why;
  const auto q = kube::read_access_review(c.req.header("Content-Type"), c.req.body, &why);
  if (!q) return reply(res, why.code, kube::patch_refusal(c, why));
  const auto answer = kube::decide_access(c.caller, *q);
  json spec;
  if (q->non_resource) {
    spec["nonResourceAttributes"] = {{"path", q->path}, {"verb", q->verb}};
  } else {
    json a = json::object();
    for (auto [key, v] : {std::pair{"namespace", &q->ns}, std::pair{"verb", &q->verb},
                          std::pair{"group", &q->group}, std::pair{"version", &q->version},
                          std::pair{"resource", &q->resource},
                          std::pair{"subresource", &q->subresource}, std::pair{"name", &q->name}})
      if (!v->empty()) a[key] = *v;
    spec["resourceAttributes"] = std::move(a);
  }
  json status = {{"allowed", answer.allowed}, {"reason", answer.reason}};
  reply(res, 201,
        json{{"kind", "SelfSubjectAccessReview"},
             {"apiVersion", "authorization.k8s.io/v1"},
             {"metadata", {{"creationTimestamp", nullptr}}},
             {"spec", std::move(spec)},
             {"status", std::move(status)}});
}

// POST /apis/authorization.k8s.io/v1/selfsubjectrulesreviews (kubectl auth can-i --list).
void Server::kube_rules_review(const kube::Call& c, net::Response& res) {
  kube::BodyRefusal why;
  const auto ns = kube::read_rules_review(c.req.header("Content-Type"), c.req.body, &why);
  if (!ns) return reply(res, why.code, kube::patch_refusal(c, why));
  reply(res, 201,
        json{{"kind", "SelfSubjectRulesReview"},
             {"apiVersion", "authorization.k8s.io/v1"},
             {"metadata", {{"creationTimestamp", nullptr}}},
             {"spec", {{"namespace", *ns}}},
             {"status", kube::rules_review_status(c.caller, *ns)}});
}

}  // namespace sluice::server
