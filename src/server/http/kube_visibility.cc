// Kueue's visibility API (docs/kubernetes.md "Pending workloads"):
// GET /apis/visibility.kueue.x-k8s.io/v1beta1/clusterqueues/NAME/pendingworkloads and
// .../namespaces/NS/localqueues/NAME/pendingworkloads, a PendingWorkloadsSummary of the
// queue's pending workloads in the order sluice's scheduler ranks them now
// (Scheduler::pending_in_queue: starving jobs first, then the composite order), each with its
// position in its ClusterQueue and in its LocalQueue, paged by `offset` and `limit`.
#include "server/http/kube_visibility.h"

#include <map>

#include "server/http/kube.h"
#include "server/http/reply.h"
#include "server/http/util.h"
#include "server/server.h"

namespace sluice::server {

using nlohmann::json;

namespace kube {

std::string read_pending_query(const net::Request& req, PendingPage& page) {
  // The native API's reader of ids and counts (util.h), as pods/log's tailLines.
  const auto count = [&](const char* name, int64_t& out) -> bool {
    if (!req.has_param(name)) return true;
    const auto n = parse_id(req.get_param_value(name));
    if (!n || *n > (JobId{1} << 62)) return false;
    out = static_cast<int64_t>(*n);
    return true;
  };
  if (!count("offset", page.offset)) return "offset: expected a non-negative integer";
  if (!count("limit", page.limit)) return "limit: expected a non-negative integer";
  page.limit = std::min(page.limit, kMaxPendingPage);
  return {};
}

json pending_workloads_summary(const std::vector<PendingEntry>& queue, const std::string& local_ns,
                               const std::string& local_name, const PendingPage& page,
                               const std::function<bool(const std::string&)>& sees) {
  json items = json::array();
  std::map<std::pair<std::string, std::string>, int64_t> in_local;  // (ns, lq) -> seen so far
  int64_t matched = 0;
  for (size_t i = 0; i < queue.size(); ++i) {
    const PendingEntry& e = queue[i];
    const int64_t local_pos = in_local[{e.ns, e.local_queue}]++;
    if (!local_name.empty() && (e.ns != local_ns || e.local_queue != local_name)) continue;
    if (!sees(e.ns)) continue;
    if (matched++ < page.offset) continue;
    if (static_cast<int64_t>(items.size()) >= page.limit) break;
    items.push_back(
        {{"metadata", {{"name", e.name}, {"namespace", e.ns}, {"creationTimestamp", e.created}}},
         {"priority", e.priority},
         {"localQueueName", e.local_queue},
         {"positionInClusterQueue", static_cast<int64_t>(i)},
         {"positionInLocalQueue", local_pos}});
  }
  return {{"kind", "PendingWorkloadsSummary"},
          {"apiVersion", std::string(kVisibilityGroup) + "/" + kKueueVersion},
          {"metadata", {{"creationTimestamp", nullptr}}},
          {"items", std::move(items)}};
}

}  // namespace kube

// The ClusterQueue's (or the LocalQueue's) pending workloads; GET only.
void Server::kube_pending_workloads(const kube::Call& c, net::Response& res) {
  if (c.req.method != "GET" || c.path.name.empty() || c.path.sub != "pendingworkloads")
    return kube::fail_status(res, 405,
                             "the visibility API serves GET .../" + c.path.resource +
                                 "/NAME/pendingworkloads only (docs/kubernetes.md)");
  kube::PendingPage page;
  if (auto why = kube::read_pending_query(c.req, page); !why.empty())
    return kube::fail_status(res, 400, why);
  const bool local = c.path.resource == "localqueues";
  std::vector<kube::PendingEntry> queue;
  {
    std::lock_guard lk(state_->mu());
    const Config& cfg = state_->config();
    std::optional<QueueId> q;
    if (local) {
      if (auto lq = cfg.find_local_queue(c.path.ns, c.path.name))
        q = cfg.local_queues[static_cast<size_t>(*lq)].cluster_queue;
    } else {
      q = cfg.find_cluster_queue(c.path.name);
    }
    if (!q) return reply(res, 404, kube::not_found(c, c.path.name));
    for (JobId id : state_->scheduler().pending_in_queue(*q, now_ns())) {
      const JobRecord* r = state_->find(id);
      if (!r || !kube::listed(*r)) continue;
      queue.push_back({kube::workload_name(*r), r->job.namespace_, r->job.queue, r->job.priority,
                       kube::time_field(r->job.submit_ns)});
    }
  }
  const auto sees = [&](const std::string& ns) { return c.caller.sees(ns); };
  reply(res, 200,
        kube::pending_workloads_summary(queue, local ? c.path.ns : "", local ? c.path.name : "",
                                        page, sees));
}

}  // namespace sluice::server
