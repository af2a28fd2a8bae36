// Kueue's kinds through the Kubernetes API (docs/kubernetes.md): a Workload per job (its
// admission and conditions, kube_workload.cc), and the configuration's ClusterQueues,
// LocalQueues, ResourceFlavors, WorkloadPriorityClasses, Cohorts and Topologies with the status
// Kueue gives them
// (pending and admitted workloads, flavors' usage), their fields as their documents say them.
// Read here; they change through the configuration (PUT /v1/config, sluice config apply) and
// the Kubernetes API's writes (kube_kueue_write.cc).
#include "server/http/kube.h"
#include "server/http/kube_config_docs.h"
#include "server/http/reply.h"
#include "server/server.h"

namespace sluice::server {

using nlohmann::json;

namespace kube {
const std::vector<Column>& workload_columns() {
  static const std::vector<Column> c = {
      {"Name", "string", "name", "Name must be unique within a namespace."},
      {"Queue", "string", "", "Name of the queue this workload was submitted to"},
      {"Reserved in", "string", "",
       "Name of the ClusterQueue where the workload is reserving quota"},
      {"Admitted", "string", "", "Admission status"},
      {"Finished", "string", "", "Workload finished"},
      {"Age", "date", "", "Time this workload was created"}};
  return c;
}
}  // namespace kube

namespace {

using kube::Column;

const std::vector<Column>& cluster_queue_columns() {
  static const std::vector<Column> c = {
      {"Name", "string", "name", "Name must be unique within a namespace."},
      {"Cohort", "string", "", "Cohort that this ClusterQueue belongs to"},
      {"Strategy", "string", "", "The queueing strategy used to prioritize workloads", 1},
      {"Pending Workloads", "integer", "", "Number of pending workloads"},
      {"Admitted Workloads", "integer", "",
       "Number of admitted workloads that haven't finished yet", 1}};
  return c;
}

const std::vector<Column>& local_queue_columns() {
  static const std::vector<Column> c = {
      {"Name", "string", "name", "Name must be unique within a namespace."},
      {"ClusterQueue", "string", "", "Backing ClusterQueue"},
      {"Pending Workloads", "integer", "", "Number of pending workloads"},
      {"Admitted Workloads", "integer", "",
       "Number of admitted workloads that haven't finished yet"}};
  return c;
}

const std::vector<Column>& name_age_columns() {
  static const std::vector<Column> c = {
      {"Name", "string", "name", "Name must be unique within a namespace."},
      {"Age", "date", "", "CreationTimestamp of the object."}};
  return c;
}

const std::vector<Column>& priority_class_columns() {
  static const std::vector<Column> c = {
      {"Name", "string", "name", "Name must be unique within a namespace."},
      {"Value", "integer", "", "Value of the priority"},
      {"Age", "date", "", "CreationTimestamp of the object."}};
  return c;
}

json kueue_object(const std::string& kind, const std::string& name, const std::string& ns,
                  json spec, json status) {
  json m = {{"name", name},
            {"uid", "sluice-" + kind + "-" + ns + "-" + name},
            {"generation", 1},
            {"creationTimestamp", nullptr}};
  if (!ns.empty()) m["namespace"] = ns;
  json o = {{"apiVersion", std::string(kube::kKueueGroup) + "/" + kube::kKueueVersion},
            {"kind", kind},
            {"metadata", std::move(m)},
            {"spec", std::move(spec)}};
  if (!status.is_null()) o["status"] = std::move(status);
  return o;
}

json active_condition() {
  return json::array({{{"type", "Active"},
                       {"status", "True"},
                       {"reason", "Ready"},
                       {"message", "Can admit new workloads"}}});
}

json resource_groups(const std::vector<ResourceGroup>& groups, const Config& cfg) {
  json out = json::array();
  for (const auto& g : groups) {
    json covered = json::array(), flavors = json::array();
    for (ResourceId r : g.covered) covered.push_back(cfg.resources.name(r));
    for (const auto& f : g.flavors) {
      json resources = json::array();
      for (const auto& q : f.resources) {
        json rq = {{"name", cfg.resources.name(q.resource)},
                   {"nominalQuota", format_canonical(q.resource, q.nominal)}};
        if (q.borrowing_limit)
          rq["borrowingLimit"] = format_canonical(q.resource, *q.borrowing_limit);
        if (q.lending_limit) rq["lendingLimit"] = format_canonical(q.resource, *q.lending_limit);
        resources.push_back(std::move(rq));
      }
      flavors.push_back(
          {{"name", cfg.flavors[static_cast<size_t>(f.flavor)].name}, {"resources", resources}});
    }
    out.push_back({{"coveredResources", covered}, {"flavors", flavors}});
  }
  return out;
}

// status.flavorsUsage from the queues view's usage rows.
json flavors_usage(const json& usage) {
  std::map<std::string, json> by_flavor;
  for (const auto& u : usage)
    by_flavor[u["flavor"]].push_back(
        {{"name", u["resource"]}, {"total", u["used"]}, {"borrowed", u["borrowed"]}});
  json out = json::array();
  for (auto& [f, rs] : by_flavor) out.push_back({{"name", f}, {"resources", rs}});
  return out;
}

// A Cohort defined as an object (not one a ClusterQueue only names), as Kueue writes it.
json cohort_object(const Cohort& co, const Config& cfg) {
  json spec = json::object();
  // v1beta1, the version served: spec.parent (v1beta2 would say parentName).
  if (co.parent) spec["parent"] = cfg.cohorts[static_cast<size_t>(*co.parent)].name;
  if (!co.resource_groups.empty())
    spec["resourceGroups"] = resource_groups(co.resource_groups, cfg);
  if (co.fair_weight != 1.0) {
    char weight[32];
    std::snprintf(weight, sizeof weight, "%g", co.fair_weight);
    spec["fairSharing"] = {{"weight", weight}};
  }
  return kueue_object("Cohort", co.name, "", std::move(spec), nullptr);
}

json topology_object(const KueueTopology& t) {
  json levels = json::array();
  for (const auto& label : t.node_labels) levels.push_back({{"nodeLabel", label}});
  return kueue_object("Topology", t.name, "", {{"levels", std::move(levels)}}, nullptr);
}

// One ClusterQueue as Kueue writes it, from the configuration and the queues view.
json cluster_queue(const ClusterQueue& cq, const json& view, const Config& cfg) {
  json spec = {{"queueingStrategy",
                cq.strategy == QueueingStrategy::kStrictFIFO ? "StrictFIFO" : "BestEffortFIFO"},
               {"namespaceSelector", json::object()},
               {"resourceGroups", resource_groups(cq.resource_groups, cfg)}};
  if (cq.cohort) spec["cohort"] = cfg.cohorts[static_cast<size_t>(*cq.cohort)].name;
  json status = {{"pendingWorkloads", view["pending"]},
                 {"reservingWorkloads", view["running"]},
                 {"admittedWorkloads", view["running"]},
                 {"flavorsUsage", flavors_usage(view["usage"])},
                 {"conditions", active_condition()}};
  return kueue_object("ClusterQueue", cq.name, "", std::move(spec), std::move(status));
}

}  // namespace

std::string Server::kube_why_pending(const JobRecord& r) const {
  if (r.state != JobState::kPending) return std::string();
  const json j = state_->reason_view(r);
  return j.is_string() ? j.get<std::string>() : std::string("waiting for the next cycle");
}

void Server::kube_workloads(const kube::Call& c, net::Response& res) {
  const auto now = now_ns();
  json out;
  {
    std::lock_guard lk(state_->mu());
    const Config& cfg = state_->config();
    const auto why = [&](const JobRecord& r) { return kube_why_pending(r); };
    if (!c.path.name.empty()) {
      const auto id = kube::workload_job_id(c.path.name);
      const JobRecord* r = id ? state_->find(*id) : nullptr;
      if (!r || !kube::listed(*r) || r->job.namespace_ != c.path.ns ||
          kube::workload_name(*r) != c.path.name)
        return reply(res, 404, kube::not_found(c, c.path.name));
      json o = kube::workload_object(*r, cfg, why(*r));
      json cells = kube::workload_row(*r, o, now);
      out = kube::single(c, kube::workload_columns(), std::move(o), std::move(cells));
    } else {
      kube::Listing list(c, kube::workload_columns());
      const auto next = kube_scan(
          c, [&] { return list.full(); },
          [&](const JobRecord& r) {
            json o = kube::workload_object(r, cfg, why(r));
            list.add(std::move(o), [&] { return kube::workload_row(r, o, now); });
          });
      out = list.done("WorkloadList", next, state_->journal().current());
    }
  }
  reply(res, 200, out);
}

// ClusterQueues, LocalQueues, ResourceFlavors, WorkloadPriorityClasses, Cohorts (those defined
// as objects), Topologies: from the configuration
// (a few hundred objects at most: one page).
void Server::kube_config_objects(const kube::Call& c, net::Response& res) {
  const std::string& r = c.path.resource;
  json queues, locals;
  std::shared_ptr<const Config> cfg;
  uint64_t rv = 0;  // where a watch of the list starts (kube_watch_kinds.cc)
  std::shared_ptr<const kube::ConfigVersions> versions;  // the objects as written
  {
    std::lock_guard lk(state_->mu());
    rv = state_->journal().current();
    cfg = state_->config_ptr();
    versions = kube_config_versions();
    if (r == "clusterqueues") queues = state_->queues_view(now_ns())["queues"];
    if (r == "localqueues") locals = state_->local_queues_view(now_ns())["local_queues"];
  }
  const std::vector<Column>* columns = &name_age_columns();
  std::vector<std::pair<json, json>> found;  // object, cells
  if (r == "clusterqueues") {
    columns = &cluster_queue_columns();
    for (size_t i = 0; i < cfg->cluster_queues.size(); ++i) {
      json o = cluster_queue(cfg->cluster_queues[i], queues[i], *cfg);
      json cells = {o["metadata"]["name"], o["spec"].value("cohort", ""),
                    o["spec"]["queueingStrategy"], queues[i]["pending"], queues[i]["running"]};
      found.emplace_back(std::move(o), std::move(cells));
    }
  } else if (r == "localqueues") {
    columns = &local_queue_columns();
    for (const auto& q : locals) {
      json status = {{"pendingWorkloads", q["pending"]},
                     {"reservingWorkloads", q["running"]},
                     {"admittedWorkloads", q["running"]},
                     {"conditions", active_condition()}};
      json o = kueue_object("LocalQueue", q["name"], q["namespace"],
                            {{"clusterQueue", q["cluster_queue"]}}, std::move(status));
      json cells = {q["name"], q["cluster_queue"], q["pending"], q["running"]};
      found.emplace_back(std::move(o), std::move(cells));
    }
  } else if (r == "resourceflavors") {
    for (const auto& f : cfg->flavors) {
      json labels = json::object();
      for (const auto& [k, v] : f.node_labels) labels[k] = v;
      json spec = {{"nodeLabels", labels}};
      if (f.topology) spec["topologyName"] = cfg->topologies[static_cast<size_t>(*f.topology)].name;
      found.emplace_back(kueue_object("ResourceFlavor", f.name, "", spec, nullptr),
                         json::array({f.name, "<unknown>"}));
    }
  } else if (r == "cohorts") {  // Kueue's columns: NAME AGE
    for (const auto& co : cfg->cohorts)
      if (!co.implied)
        found.emplace_back(cohort_object(co, *cfg), json::array({co.name, "<unknown>"}));
  } else if (r == "topologies") {
    for (const auto& t : cfg->topologies)
      found.emplace_back(topology_object(t), json::array({t.name, "<unknown>"}));
  } else if (r == "workloadpriorityclasses") {
    columns = &priority_class_columns();
    for (const auto& p : cfg->priority_classes) {
      json o = kueue_object("WorkloadPriorityClass", p.name, "", nullptr, nullptr);
      o.erase("spec");
      o["value"] = p.value;
      found.emplace_back(std::move(o), json::array({p.name, p.value, "<unknown>"}));
    }
  }
  kube::Listing list(c, *columns);
  for (auto& [o, cells] : found) {
    if (!c.path.name.empty() && o["metadata"]["name"] != c.path.name) continue;
    kube_config_overlay(*versions, o);
    if (!c.path.name.empty())
      return reply(res, 200, kube::single(c, *columns, std::move(o), cells));
    list.add(std::move(o), [&] { return cells; });
  }
  if (!c.path.name.empty()) return reply(res, 404, kube::not_found(c, c.path.name));
  reply(res, 200, list.done(c.kind->kind + "List", "", rv));
}

}  // namespace sluice::server
