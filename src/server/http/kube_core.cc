// The core group's kinds through the Kubernetes API (docs/kubernetes.md): Namespaces (those
// the configuration names), Nodes (the cluster's, with their GPUs as nvidia.com/gpu and an
// admin's cordon as spec.unschedulable), Pods (one per pod of a job's run) and their logs,
// fetched through the agents' own channel as `sluice logs` does (logs.cc).
#include <set>
#include <sstream>

#include "server/http/kube.h"
#include "server/http/reply.h"
#include "server/server.h"

namespace sluice::server {

using nlohmann::json;

namespace {

const std::vector<kube::Column>& namespace_columns() {
  static const std::vector<kube::Column> c = {
      {"Name", "string", "name", "Name must be unique within a namespace."},
      {"Status", "string", "", "The status of the namespace"},
      {"Age", "string", "", "CreationTimestamp of the object."}};
  return c;
}

const std::vector<kube::Column>& node_columns() {
  static const std::vector<kube::Column> c = {
      {"Name", "string", "name", "Name must be unique within a namespace."},
      {"Status", "string", "", "The status of the node"},
      {"Roles", "string", "", "The roles of the node"},
      {"Age", "string", "", "CreationTimestamp of the object."},
      {"Version", "string", "", "Kubelet Version reported by the node."},
      {"GPUs", "string", "", "nvidia.com/gpu: allocated/capacity (sluice)", 1}};
  return c;
}

}  // namespace

const std::vector<kube::Column>& kube::pod_columns() {
  static const std::vector<kube::Column> c = {
      {"Name", "string", "name", "Name must be unique within a namespace."},
      {"Ready", "string", "", "The aggregate readiness state of this pod for accepting traffic."},
      {"Status", "string", "", "The aggregate status of the containers in this pod."},
      {"Restarts", "string", "",
       "The number of times the containers in this pod have been "
       "restarted and when the last container in this pod has "
       "restarted."},
      {"Age", "string", "", "CreationTimestamp of the object."},
      {"IP", "string", "", "The IP address assigned to the pod", 1},
      {"Node", "string", "", "The name of the node assigned to the pod", 1},
      {"Nominated Node", "string", "", "The name of the node nominated by the scheduler", 1},
      {"Readiness Gates", "string", "", "The readiness gates of the pod", 1}};
  return c;
}

namespace {

json namespace_object(const std::string& name) {
  return {{"apiVersion", "v1"},
          {"kind", "Namespace"},
          {"metadata",
           {{"name", name},
            {"uid", "sluice-namespace-" + name},
            {"creationTimestamp", nullptr},
            {"labels", {{"kubernetes.io/metadata.name", name}}}}},
          {"spec", {{"finalizers", {"kubernetes"}}}},
          {"status", {{"phase", "Active"}}}};
}

// A node from its view (state_views.cc: nodes_view) and its configuration.
json node_object(const json& view, const Node* cfg) {
  json labels = {{"kubernetes.io/hostname", view["name"]}, {"kubernetes.io/os", "linux"}};
  json capacity = {{"pods", "110"}, {"nvidia.com/gpu", std::to_string(view.value("gpu_count", 0))}};
  if (cfg) {
    for (const auto& [k, v] : cfg->labels) labels[k] = v;
    capacity["cpu"] = format_canonical(kCpu, cfg->cpu_milli);
    capacity["memory"] = format_canonical(kMemory, cfg->memory_mib);
    if (!cfg->gpus.empty()) labels["nvidia.com/gpu.product"] = cfg->gpus.front().model;
  }
  const bool ready = view.value("ready", false);
  const bool held = !view["hold"].is_null();
  json spec = json::object();
  if (held) {
    spec["unschedulable"] = true;
    spec["taints"] =
        json::array({{{"key", "node.kubernetes.io/unschedulable"}, {"effect", "NoSchedule"}}});
  }
  json cond = {{"type", "Ready"},
               {"status", ready ? "True" : (view.value("registered", false) ? "False" : "Unknown")},
               {"reason", ready ? "KubeletReady" : "NodeStatusUnknown"},
               {"message", ready ? "sluice agent is syncing" : "sluice agent is not syncing"}};
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata",
           {{"name", view["name"]},
            {"uid", "sluice-node-" + view["name"].get<std::string>()},
            {"creationTimestamp", nullptr},
            {"labels", labels}}},
          {"spec", spec},
          {"status",
           {{"capacity", capacity},
            {"allocatable", capacity},
            {"conditions", json::array({cond})},
            {"addresses", json::array({{{"type", "Hostname"}, {"address", view["name"]}}})},
            // Every field of NodeSystemInfo is required (typed clients such as the Python one
            // refuse a node without them); sluice's agents do not report these.
            {"nodeInfo",
             {{"kubeletVersion", "v1.32.0-sluice"},
              {"containerRuntimeVersion", "sluice-agent"},
              {"operatingSystem", "linux"},
              {"architecture", "amd64"},
              {"osImage", "sluice agent"},
              {"kernelVersion", ""},
              {"kubeProxyVersion", ""},
              {"bootID", ""},
              {"machineID", ""},
              {"systemUUID", ""}}}}}};
}

json node_row(const json& view, const json& node) {
  std::string status = view.value("ready", false) ? "Ready" : "NotReady";
  if (node["spec"].value("unschedulable", false)) status += ",SchedulingDisabled";
  std::ostringstream gpus;
  gpus << view.value("gpus_allocated", 0.0) << "/" << view.value("gpu_count", 0);
  return json::array({view["name"], status, "<none>", "<unknown>", "v1.32.0-sluice", gpus.str()});
}

}  // namespace

// Namespaces: those of the LocalQueues and Budgets, and of the caller's token.
void Server::kube_namespaces(const kube::Call& c, net::Response& res) {
  std::set<std::string> names = {"default"};
  {
    std::lock_guard lk(state_->mu());
    for (const auto& lq : state_->config().local_queues) names.insert(lq.namespace_);
    for (const auto& b : state_->config().budgets) names.insert(b.namespace_);
  }
  for (const auto& ns : c.caller.namespaces)
    if (ns != "*") names.insert(ns);
  if (!c.path.name.empty()) {
    if (!c.caller.sees(c.path.name)) return reply(res, 403, kube::forbidden(c, "get", ""));
    if (!names.count(c.path.name)) return reply(res, 404, kube::not_found(c, c.path.name));
    json o = namespace_object(c.path.name);
    return reply(
        res, 200,
        kube::single(c, namespace_columns(), o, json::array({c.path.name, "Active", "<unknown>"})));
  }
  kube::Listing list(c, namespace_columns());
  for (const auto& n : names)
    if (c.caller.sees(n))
      list.add(namespace_object(n), [&] { return json::array({n, "Active", "<unknown>"}); });
  reply(res, 200, list.done("NamespaceList", ""));
}

// Nodes: every caller sees them (as GET /v1/nodes); one page holds them all.
void Server::kube_nodes(const kube::Call& c, net::Response& res) {
  json views;
  std::map<std::string, Node> cfg;
  uint64_t rv = 0;
  {
    std::lock_guard lk(state_->mu());
    rv = state_->journal().current();
    views = state_->nodes_view(now_ns())["nodes"];
    for (const auto& n : state_->config().cluster.nodes)
      if (c.path.name.empty() || n.name == c.path.name) cfg.emplace(n.name, n);
  }
  const auto config_of = [&](const json& v) -> const Node* {
    auto it = cfg.find(v["name"].get<std::string>());
    return it == cfg.end() ? nullptr : &it->second;
  };
  if (!c.path.name.empty()) {
    for (const auto& v : views)
      if (v["name"] == c.path.name) {
        json o = node_object(v, config_of(v));
        json cells = node_row(v, o);
        return reply(res, 200, kube::single(c, node_columns(), std::move(o), std::move(cells)));
      }
    return reply(res, 404, kube::not_found(c, c.path.name));
  }
  kube::Listing list(c, node_columns());
  for (const auto& v : views) {
    json o = node_object(v, config_of(v));
    list.add(std::move(o), [&] { return node_row(v, o); });
  }
  reply(res, 200, list.done("NodeList", "", rv));
}

void Server::kube_pods(const kube::Call& c, net::Response& res) {
  const auto now = now_ns();
  json out;
  {
    std::lock_guard lk(state_->mu());
    const Config& cfg = state_->config();
    // A pending job's pods of its last run show while they may still be alive (Terminating).
    const auto stopping = [&](const JobRecord& r) {
      return [this, &r, now](size_t i) { return state_->pod_may_be_alive(r, i, now); };
    };
    if (!c.path.name.empty()) {
      const auto split = kube::split_pod_name(c.path.name);
      const JobRecord* r = split ? kube_job_named(c.path.ns, split->first) : nullptr;
      if (!r || !kube::pod_shown(*r, split->second, stopping(*r)))
        return reply(res, 404, kube::not_found(c, c.path.name));
      json o = kube::pod_object(*r, split->second, cfg);
      json cells = kube::pod_row(*r, o, now);
      out = kube::single(c, kube::pod_columns(), std::move(o), std::move(cells));
    } else {
      kube::Listing list(c, kube::pod_columns());
      const auto next = kube_scan(
          c, [&] { return list.full(); },
          [&](const JobRecord& r) {
            for (auto& o : kube::pod_objects(r, cfg, stopping(r)))
              list.add(std::move(o), [&] { return kube::pod_row(r, o, now); });
          });
      out = list.done("PodList", next, state_->journal().current());
    }
  }
  reply(res, 200, out);
}

// PATCH /api/v1/nodes/{name} (kubectl cordon, uncordon): spec.unschedulable true is sluice's
// cordon, false (or null, as uncordon sends it) its resume; an admin's, as POST
// /v1/nodes/{node}/cordon. A node already held (cordoned or drained) stays as it is when
// cordoned again. 200 with the Node once written.
void Server::kube_patch_node(const kube::Call& c, net::Response& res) {
  kube::PatchRefusal why;
  auto patch = kube::read_node_patch(c.req.header("Content-Type"), c.req.body, c.path.name, &why);
  if (!patch) return reply(res, why.code, kube::patch_refusal(c, why));
  if (!c.caller.admin) return reply(res, 403, kube::forbidden(c, "patch", ""));
  if (!kube_may_write(c, res)) return;
  uint64_t ticket = 0;
  {
    std::lock_guard lk(state_->mu());
    const json views = state_->nodes_view(now_ns())["nodes"];
    const json* view = nullptr;
    for (const auto& v : views)
      if (v["name"] == c.path.name) view = &v;
    if (!view) return reply(res, 404, kube::not_found(c, c.path.name));
    const bool held = !(*view)["hold"].is_null();
    int status = 200;
    if (patch->unschedulable == true && !held)
      status = state_->set_node_hold(c.path.name, "cordon", "kubectl cordon", &ticket);
    else if (patch->unschedulable == false && held)
      status = state_->set_node_hold(c.path.name, "", "", &ticket);
    if (status != 200) return reply(res, 404, kube::not_found(c, c.path.name));
  }
  if (ticket && !store_->wait(ticket))
    return kube::fail_status(res, 503, "the change could not be written: " + refusal());
  if (ticket) {
    log("node " + c.path.name + ": " + (*patch->unschedulable ? "cordon" : "resume") + " by " +
        c.caller.name + " (kubectl)");
    kick();
  }
  kube_nodes(c, res);
}

}  // namespace sluice::server
