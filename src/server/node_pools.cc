#include "server/node_pools.h"

#include <algorithm>

namespace sluice::server {

namespace {

std::string cpu_text(int64_t milli) {
  std::string s = std::to_string(milli / 1000);
  if (milli % 1000 == 0) return s;
  std::string frac = std::to_string(1000 + milli % 1000).substr(1);
  while (frac.back() == '0') frac.pop_back();
  return s + "." + frac;
}

double seconds_of(TimeNs ns) {
  return static_cast<double>(ns) / 1e9;
}

}  // namespace

const char* phase_name(SlotPhase p) {
  switch (p) {
    case SlotPhase::kAbsent:
      return "absent";
    case SlotPhase::kCreating:
      return "creating";
    case SlotPhase::kJoining:
      return "joining";
    case SlotPhase::kReady:
      return "ready";
    case SlotPhase::kLeaving:
      return "leaving";
    case SlotPhase::kDeleting:
      return "deleting";
  }
  return "?";
}

std::vector<std::string> provision_env(const NodePool& pool, const std::string& node,
                                       const std::string& op, const std::string& reason) {
  std::string labels;
  for (const auto& [k, v] : pool.node.labels) labels += (labels.empty() ? "" : ",") + k + "=" + v;
  const Gpu* gpu = pool.node.gpus.empty() ? nullptr : &pool.node.gpus.front();
  return {"SLUICE_POOL=" + pool.name,
          "SLUICE_NODE=" + node,
          "SLUICE_OP=" + op,
          "SLUICE_REASON=" + reason,
          "SLUICE_CAPACITY_TYPE=" +
              std::string(pool.capacity == CapacityType::kSpot ? "spot" : "on-demand"),
          "SLUICE_NODE_GPUS=" + std::to_string(pool.node.gpus.size()),
          "SLUICE_NODE_GPU_MODEL=" + (gpu ? gpu->model : std::string()),
          "SLUICE_NODE_GPU_MEMORY_MIB=" + std::to_string(gpu ? gpu->memory_mib : 0),
          "SLUICE_NODE_CPU=" + cpu_text(pool.node.cpu_milli),
          "SLUICE_NODE_MEMORY_MIB=" + std::to_string(pool.node.memory_mib),
          "SLUICE_NODE_LABELS=" + labels};
}

nlohmann::json webhook_body(const NodePool& pool, const std::string& node, const std::string& op,
                            const std::string& reason) {
  nlohmann::json labels = nlohmann::json::object();
  for (const auto& [k, v] : pool.node.labels) labels[k] = v;
  const Gpu* gpu = pool.node.gpus.empty() ? nullptr : &pool.node.gpus.front();
  return {{"op", op},
          {"pool", pool.name},
          {"node", node},
          {"reason", reason},
          {"capacity_type", pool.capacity == CapacityType::kSpot ? "spot" : "on-demand"},
          {"shape",
           {{"gpus", pool.node.gpus.size()},
            {"gpu_model", gpu ? gpu->model : std::string()},
            {"gpu_memory_mib", gpu ? gpu->memory_mib : 0},
            {"cpu_milli", pool.node.cpu_milli},
            {"memory_mib", pool.node.memory_mib},
            {"labels", std::move(labels)}}}};
}

const char* result_name(const ProvisionResult& r) {
  return r.ok ? "ok" : r.timed_out ? "timeout" : "failed";
}

void NodePools::configure(const std::vector<NodePool>& pools) {
  std::map<std::string, std::vector<Slot>> old;
  for (size_t p = 0; p < pools_.size(); ++p) old[pools_[p].name] = std::move(slots_[p]);
  pools_ = pools;
  slots_.assign(pools_.size(), {});
  for (size_t p = 0; p < pools_.size(); ++p) {
    slots_[p].resize(static_cast<size_t>(pools_[p].max_nodes));
    if (auto it = old.find(pools_[p].name); it != old.end())
      for (size_t k = 0; k < std::min(it->second.size(), slots_[p].size()); ++k)
        slots_[p][k] = it->second[k];
  }
}

bool NodePools::active() const {
  return std::any_of(pools_.begin(), pools_.end(),
                     [](const NodePool& p) { return p.provisioner.configured(); });
}

bool NodePools::locate(const std::string& node, size_t& pool, size_t& slot) const {
  for (pool = 0; pool < pools_.size(); ++pool) {
    const std::string& prefix = pools_[pool].name_prefix;
    if (node.size() <= prefix.size() || node.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string rest = node.substr(prefix.size());
    if (rest.size() > 6 || !std::all_of(rest.begin(), rest.end(),
                                        [](unsigned char c) { return c >= '0' && c <= '9'; }))
      continue;
    if (rest.size() > 1 && rest[0] == '0') continue;
    slot = std::stoul(rest);
    if (slot < slots_[pool].size()) return true;
  }
  return false;
}

ProvisionCall NodePools::call(size_t p, size_t k, const std::string& op,
                              const std::string& reason) {
  const NodePool& pool = pools_[p];
  ProvisionCall c;
  c.id = next_call_++;
  c.pool = p;
  c.slot = k;
  c.pool_name = pool.name;
  c.node = node_name(pool, k);
  c.op = op;
  c.reason = reason;
  if (pool.provisioner.webhook_url.empty()) {
    c.argv = pool.provisioner.command;
    c.argv.insert(c.argv.end(), {op, pool.name, c.node});
    c.env = provision_env(pool, c.node, op, reason);
  } else {
    c.url = pool.provisioner.webhook_url;
    c.token_file = pool.provisioner.bearer_token_file;
    c.body = webhook_body(pool, c.node, op, reason);
  }
  c.timeout_ns = pool.provisioner.timeout_ns;
  return c;
}

std::vector<ProvisionCall> NodePools::observe(size_t p, size_t k, const SlotNode& n, TimeNs now) {
  std::vector<ProvisionCall> out;
  Slot& s = slots_[p][k];
  const Provisioner& prov = pools_[p].provisioner;
  switch (s.phase) {
    case SlotPhase::kAbsent:
    case SlotPhase::kCreating:
    case SlotPhase::kJoining:
      // An agent that joins is the node, whether or not its create call has answered (a node
      // left from before a restart of the server, or a create that failed late, is adopted).
      if (n.joined) {
        set(s, SlotPhase::kReady, now);
        s.idle_since_ns = now;
        s.pods = n.pods;
        s.reason.clear();
      } else if (s.phase == SlotPhase::kJoining && now - s.since_ns >= prov.join_timeout_ns) {
        set(s, SlotPhase::kDeleting, now);
        s.reason = "join-timeout";
        out.push_back(call(p, k, "delete", s.reason));
      }
      break;
    case SlotPhase::kReady:
      if (!n.joined) {  // its agent fell silent: its jobs are requeued; the node is given back
        set(s, SlotPhase::kDeleting, now);
        s.reason = "lost";
        out.push_back(call(p, k, "delete", s.reason));
        break;
      }
      if (n.pods == 0 && s.pods > 0) s.idle_since_ns = now;
      s.pods = n.pods;
      break;
    case SlotPhase::kLeaving:
      s.pods = n.pods;
      if ((n.pods == 0 || now >= s.leave_by_ns) && now >= s.retry_at_ns) {
        set(s, SlotPhase::kDeleting, now);
        out.push_back(call(p, k, "delete", s.reason));
      }
      break;
    case SlotPhase::kDeleting:
      break;
  }
  return out;
}

std::vector<scale::PoolNode> NodePools::scale_view(size_t p, TimeNs now) const {
  std::vector<scale::PoolNode> out;
  for (size_t k = 0; k < slots_[p].size(); ++k) {
    const Slot& s = slots_[p][k];
    scale::PoolNode n;
    n.node = static_cast<NodeId>(k);
    switch (s.phase) {
      case SlotPhase::kAbsent:
        if (s.retry_at_ns > now) continue;
        n.state = scale::NodeState::kAbsent;
        break;
      case SlotPhase::kCreating:
      case SlotPhase::kJoining:
        n.state = scale::NodeState::kProvisioning;
        break;
      case SlotPhase::kReady:
        n.state = scale::NodeState::kReady;
        n.pods = s.pods;
        n.idle_since_ns = s.idle_since_ns;
        break;
      case SlotPhase::kLeaving:
      case SlotPhase::kDeleting:
        n.state = scale::NodeState::kLeaving;
        break;
    }
    out.push_back(n);
  }
  return out;
}

std::vector<ProvisionCall> NodePools::create(size_t p, int32_t n, TimeNs now) {
  std::vector<ProvisionCall> out;
  for (size_t k = 0; k < slots_[p].size() && n > 0; ++k) {
    Slot& s = slots_[p][k];
    if (s.phase != SlotPhase::kAbsent || s.retry_at_ns > now) continue;
    set(s, SlotPhase::kCreating, now);
    s.reason.clear();
    out.push_back(call(p, k, "create", "scale-up"));
    --n;
  }
  return out;
}

void NodePools::leave(size_t p, size_t k, const std::string& reason, TimeNs now, TimeNs leave_by) {
  Slot& s = slots_[p][k];
  if (s.phase == SlotPhase::kDeleting || s.phase == SlotPhase::kAbsent) return;
  if (s.phase == SlotPhase::kLeaving) {  // a reclaim's notice may bring the end nearer
    s.leave_by_ns = std::min(s.leave_by_ns, leave_by);
    s.reason = reason;
    return;
  }
  set(s, SlotPhase::kLeaving, now);
  s.reason = reason;
  s.leave_by_ns = leave_by;
  s.retry_at_ns = 0;
}

bool NodePools::done(const ProvisionResult& r, TimeNs now) {
  const ProvisionCall& c = r.call;
  const std::string result = result_name(r);
  ++calls_total_[{c.pool_name, c.op, result}];
  nlohmann::json entry{{"time", seconds_of(now)},  {"pool", c.pool_name},
                       {"node", c.node},           {"op", c.op},
                       {"reason", c.reason},       {"result", result},
                       {"exit_code", r.exit_code}, {"seconds", r.seconds},
                       {"output", r.output}};
  if (!c.url.empty()) entry["http_status"] = r.http_status;
  recent_.push_front(std::move(entry));
  if (recent_.size() > kRecentCalls) recent_.pop_back();
  if (c.pool >= slots_.size() || c.slot >= slots_[c.pool].size() ||
      pools_[c.pool].name != c.pool_name)
    return false;  // the pool went away in a reconfiguration meanwhile
  Slot& s = slots_[c.pool][c.slot];
  const TimeNs retry = pools_[c.pool].provisioner.retry_after_ns;
  if (c.op == "create") {
    if (s.phase != SlotPhase::kCreating) return false;  // its agent joined already
    if (r.ok) {
      set(s, SlotPhase::kJoining, now);
    } else {
      set(s, SlotPhase::kAbsent, now);
      s.retry_at_ns = now + retry;
    }
    return false;
  }
  if (s.phase != SlotPhase::kDeleting) return false;
  if (r.ok) {
    set(s, SlotPhase::kAbsent, now);
    s.retry_at_ns = 0;
    s.pods = 0;
    return true;
  }
  set(s, SlotPhase::kLeaving, now);  // asked again after retryAfter
  s.leave_by_ns = now;
  s.retry_at_ns = now + retry;
  return false;
}

std::map<std::string, int32_t> NodePools::count_phases(size_t p) const {
  std::map<std::string, int32_t> out;
  for (SlotPhase ph : {SlotPhase::kCreating, SlotPhase::kJoining, SlotPhase::kReady,
                       SlotPhase::kLeaving, SlotPhase::kDeleting})
    out[phase_name(ph)] = 0;
  for (const Slot& s : slots_[p])
    if (s.phase != SlotPhase::kAbsent) ++out[phase_name(s.phase)];
  return out;
}

nlohmann::json NodePools::view(TimeNs now) const {
  nlohmann::json pools = nlohmann::json::array();
  for (size_t p = 0; p < pools_.size(); ++p) {
    const NodePool& pool = pools_[p];
    nlohmann::json slots = nlohmann::json::array();
    for (size_t k = 0; k < slots_[p].size(); ++k) {
      const Slot& s = slots_[p][k];
      if (s.phase == SlotPhase::kAbsent && s.retry_at_ns <= now) continue;
      nlohmann::json j{{"node", node_name(pool, k)},
                       {"state", phase_name(s.phase)},
                       {"since", seconds_of(s.since_ns)},
                       {"pods", s.pods}};
      if (!s.reason.empty()) j["reason"] = s.reason;
      if (s.retry_at_ns > now) j["retry_in_s"] = seconds_of(s.retry_at_ns - now);
      slots.push_back(std::move(j));
    }
    pools.push_back({{"name", pool.name},
                     {"flavor", pool.flavor},
                     {"capacity_type", pool.capacity == CapacityType::kSpot ? "spot" : "on-demand"},
                     {"min_nodes", pool.min_nodes},
                     {"max_nodes", pool.max_nodes},
                     {"provisioner", pool.provisioner.configured()},
                     {"nodes", count_phases(p)},
                     {"slots", std::move(slots)}});
  }
  return {{"pools", std::move(pools)},
          {"calls", nlohmann::json(std::vector<nlohmann::json>(recent_.begin(), recent_.end()))}};
}

}  // namespace sluice::server
