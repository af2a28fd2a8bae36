// The report's autoscaling part (SimTotals::pools): node-hours, cost and each pool's node-count
// curve. Only runs with NodePools have it, so the reports of fixed clusters keep their bytes.
#include <cstdio>

#include "sim/report.h"

namespace sluice::sim {

namespace {

// GPU-hours the pools' nodes were paid for (node-hours x GPUs per node).
double paid_gpu_hours(const std::vector<PoolFigures>& pools) {
  double h = 0;
  for (const PoolFigures& p : pools) h += p.node_hours * p.gpus_per_node;
  return h;
}

}  // namespace

AutoscaleSummary autoscale_summary(const Figures& f) {
  AutoscaleSummary s;
  for (const PoolFigures& p : f.sim.pools) {
    s.node_hours += p.node_hours;
    s.cost += p.cost;
    s.peak_nodes += p.peak_nodes;
  }
  const double paid = paid_gpu_hours(f.sim.pools);
  s.paid_utilisation = paid > 0 ? f.gpu_hours / paid : 0;
  return s;
}

void add_autoscale_json(const Figures& f, nlohmann::json& j) {
  if (f.sim.pools.empty()) return;
  const AutoscaleSummary s = autoscale_summary(f);
  nlohmann::json pools = nlohmann::json::array();
  for (const PoolFigures& p : f.sim.pools) {
    nlohmann::json t = nlohmann::json::array(), n = nlohmann::json::array();
    for (size_t i = 0; i < p.t_ns.size(); ++i) {
      t.push_back(static_cast<double>(p.t_ns[i] - f.sim.first_ns) / kNs);
      n.push_back(p.nodes[i]);
    }
    nlohmann::json pool = {{"name", p.name},
                           {"capacity_type", p.spot ? "spot" : "on-demand"},
                           {"gpus_per_node", p.gpus_per_node},
                           {"price_per_hour", p.price_per_hour},
                           {"node_hours", p.node_hours},
                           {"cost", p.cost},
                           {"peak_nodes", p.peak_nodes},
                           {"requests", p.requests},
                           {"nodes_added", p.nodes_added},
                           {"nodes_removed", p.nodes_removed},
                           {"reclaims", p.reclaims},
                           {"node_count", {{"t_s", t}, {"nodes", n}}}};
    // Only pools that consolidate have these (the reports of the others keep their bytes).
    if (p.consolidation)
      pool["consolidation"] = {{"nodes_emptied", p.consolidations},
                               {"jobs_moved", p.moves},
                               {"jobs_started_late", p.moves_late},
                               {"lost_gpu_hours", p.moved_lost_gpu_hours}};
    pools.push_back(std::move(pool));
  }
  j["autoscaling"] = {{"node_hours", s.node_hours},
                      {"cost", s.cost},
                      {"peak_nodes", s.peak_nodes},
                      {"paid_utilisation", s.paid_utilisation},
                      {"requeued_by_spot_reclaim", f.sim.spot_requeued},
                      {"pools", pools}};
}

std::string autoscale_table(const Figures& f) {
  if (f.sim.pools.empty()) return "";
  const AutoscaleSummary s = autoscale_summary(f);
  char line[256];
  std::string out = "\nautoscaling:";
  std::snprintf(line, sizeof line,
                " %.1f node-hours, cost %.2f, utilisation of paid GPUs %.1f%%, %lld jobs "
                "requeued by spot reclaims\n",
                s.node_hours, s.cost, 100 * s.paid_utilisation,
                static_cast<long long>(f.sim.spot_requeued));
  out += line;
  std::snprintf(line, sizeof line, "%-16s %-9s %10s %10s %6s %8s %8s %8s %8s\n", "POOL", "TYPE",
                "NODE-h", "COST", "PEAK", "REQUESTS", "ADDED", "REMOVED", "RECLAIMS");
  out += line;
  for (const PoolFigures& p : f.sim.pools) {
    std::snprintf(line, sizeof line, "%-16s %-9s %10.1f %10.2f %6d %8lld %8lld %8lld %8lld\n",
                  p.name.c_str(), p.spot ? "spot" : "on-demand", p.node_hours, p.cost, p.peak_nodes,
                  static_cast<long long>(p.requests), static_cast<long long>(p.nodes_added),
                  static_cast<long long>(p.nodes_removed), static_cast<long long>(p.reclaims));
    out += line;
  }
  for (const PoolFigures& p : f.sim.pools) {
    if (!p.consolidation) continue;
    std::snprintf(line, sizeof line,
                  "%s: consolidation emptied %lld busy nodes, moving %lld jobs (%lld not "
                  "started again at once), %.1f GPU-hours of their work lost\n",
                  p.name.c_str(), static_cast<long long>(p.consolidations),
                  static_cast<long long>(p.moves), static_cast<long long>(p.moves_late),
                  p.moved_lost_gpu_hours);
    out += line;
  }
  return out;
}

}  // namespace sluice::sim
