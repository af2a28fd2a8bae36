// sluice.dev/v1alpha1 NodePool: nodes of one shape that the autoscaler (core/scale) adds and
// removes. docs/config.md, "NodePool".
//
//   kind: NodePool
//   metadata: {name: p100-spot}
//   spec:
//     flavor: default          # the ResourceFlavor its nodes serve (required)
//     namePrefix: spot-        # node names (default: metadata.name + "-")
//     node: {cpu: 64, memory: 512Gi, gpus: {count: 8, model: P100}, labels: {...}}
//     minNodes: 0
//     maxNodes: 176            # required
//     initialNodes: 0          # up at the start (default minNodes)
//     spareNodes: 0            # empty nodes kept ready beyond what pending work needs
//     pricePerHour: 2.4        # per node, any currency (decimals allowed)
//     capacityType: on-demand  # or spot
//     provisioningDelay: 3m    # request -> node ready
//     scaleDownAfter: 10m      # idle this long -> node removed
//     spot: {meanLifetime: 8h, notice: 2m}   # spot only: the simulator's reclaims
//     deferScaleUp: {belowPriority: 1000, after: 10m}   # lower-priority work waits for room
//     consolidation: {after: 10m, interval: 1m}   # empty busy nodes whose work fits elsewhere
//     provisioner:             # the server's (docs/autoscaling.md)
//       command: [/usr/local/bin/provision]   # called as COMMAND... create|delete POOL NODE
//       # or: webhook: {url: https://host:port/path, bearerTokenFile: /etc/sluice/prov.token}
//       timeout: 60s           # one call
//       retryAfter: 30s        # a failed call's slot waits this long
//       joinTimeout: 10m       # created, no agent registered: deleted
#include <algorithm>
#include <limits>

#include "config/internal.h"

namespace sluice::config_detail {

namespace {

constexpr int64_t kMaxPoolNodes = 100'000;
constexpr int64_t kMicroPerUnit = 1'000'000;

// A duration above 0 at `key` of `m` into `out`; false (an error said) when it is not one.
bool positive_duration(Reader& r, const MapReader& m, const YAML::Node& n, const char* key,
                       TimeNs& out) {
  auto v = r.duration(n, m.path(key));
  if (v && *v <= 0) {
    r.error(n, m.path(key), "must be above 0");
    v.reset();
  }
  if (v) out = *v;
  return v.has_value();
}

bool read_spot(Reader& r, const YAML::Node& node, SpotReclaim& out) {
  MapReader m(r, node, "spec.spot", {{"meanLifetime", "notice"}});
  if (!m.is_map()) return false;
  bool ok = true;
  if (const YAML::Node* n = m.find("meanLifetime")) {
    auto v = r.duration(*n, m.path("meanLifetime"));
    ok = ok && v;
    if (v) out.mean_lifetime_ns = *v;
  }
  if (const YAML::Node* n = m.find("notice")) {
    auto v = r.duration(*n, m.path("notice"));
    ok = ok && v;
    if (v) out.notice_ns = *v;
  }
  return ok;
}

// A webhook's URL: http(s)://HOST[:PORT]/PATH, nothing the HTTP client would read otherwise
// (user info, a fragment, spaces). The reason it is not, or "".
std::string webhook_url_error(const std::string& url) {
  const size_t scheme = url.find("://");
  if (scheme == std::string::npos ||
      (url.compare(0, scheme, "http") != 0 && url.compare(0, scheme, "https") != 0))
    return "must be http://HOST:PORT/PATH or https://...";
  if (std::any_of(url.begin(), url.end(),
                  [](unsigned char c) { return c <= ' ' || c == 0x7f || c == '#' || c == '@'; }))
    return "has a space, a control character, '#' or '@' (no user info, no fragment)";
  const size_t slash = url.find('/', scheme + 3);
  const std::string authority = url.substr(scheme + 3, slash - (scheme + 3));
  const size_t colon = authority.rfind(':');
  const bool bracketed = !authority.empty() && authority.front() == '[';
  const bool has_port = colon != std::string::npos && (!bracketed || authority[colon - 1] == ']');
  const std::string host = has_port ? authority.substr(0, colon) : authority;
  if (host.empty() || host == "[]") return "names no host (http://HOST:PORT/PATH)";
  if (has_port) {
    const std::string port = authority.substr(colon + 1);
    if (port.empty() || port.size() > 5 ||
        !std::all_of(port.begin(), port.end(),
                     [](unsigned char c) { return c >= '0' && c <= '9'; }) ||
        std::stoi(port) < 1 || std::stoi(port) > 65535)
      return "has a port that is not a number from 1 to 65535";
  }
  return "";
}

bool read_webhook(Reader& r, const YAML::Node& node, Provisioner& out) {
  MapReader m(r, node, "spec.provisioner.webhook", {{"url", "bearerTokenFile"}});
  if (!m.is_map()) return false;
  bool ok = true;
  if (const YAML::Node* n = m.required("url")) {
    auto url = r.str(*n, m.path("url"));
    if (url) {
      if (const std::string why = webhook_url_error(*url); !why.empty()) {
        r.error(*n, m.path("url"), quote(*url) + " " + why);
        url.reset();
      }
    }
    ok = ok && url;
    if (url) out.webhook_url = std::move(*url);
  } else {
    ok = false;
  }
  if (const YAML::Node* n = m.find("bearerTokenFile")) {
    auto file = r.str(*n, m.path("bearerTokenFile"));  // an empty one is an error there
    ok = ok && file;
    if (file) out.bearer_token_file = std::move(*file);
  }
  return ok;
}

// command or webhook: exactly one.
bool read_provisioner_target(Reader& r, MapReader& m, const YAML::Node& node, Provisioner& out) {
  const YAML::Node* command = m.find("command");
  const YAML::Node* webhook = m.find("webhook");
  if (command && webhook) {
    r.error(*webhook, m.path("webhook"),
            "give command or webhook, not both (one provisioner per pool)");
    return false;
  }
  if (!command && !webhook) {
    r.error(node, m.path("command"),
            "required: command (a program) or webhook (a URL), one of the two");
    return false;
  }
  if (webhook) return read_webhook(r, *webhook, out);
  auto argv = r.str_list(*command, m.path("command"));
  if (argv && (argv->empty() || argv->front().empty())) {
    r.error(*command, m.path("command"), "must name an executable (a list: [program, args...])");
    argv.reset();
  }
  if (argv) out.command = std::move(*argv);
  return static_cast<bool>(argv);
}

bool read_provisioner(Reader& r, const YAML::Node& node, Provisioner& out) {
  MapReader m(r, node, "spec.provisioner",
              {{"command", "webhook", "timeout", "retryAfter", "joinTimeout"}});
  if (!m.is_map()) return false;
  bool ok = read_provisioner_target(r, m, node, out);
  const std::pair<const char*, TimeNs*> times[] = {{"timeout", &out.timeout_ns},
                                                   {"retryAfter", &out.retry_after_ns},
                                                   {"joinTimeout", &out.join_timeout_ns}};
  for (const auto& [key, into] : times)
    if (const YAML::Node* n = m.find(key)) ok = positive_duration(r, m, *n, key, *into) && ok;
  return ok;
}

bool read_defer(Reader& r, const YAML::Node& node, DeferScaleUp& out) {
  MapReader m(r, node, "spec.deferScaleUp", {{"belowPriority", "after"}});
  if (!m.is_map()) return false;
  bool ok = true;
  if (const YAML::Node* n = m.required("belowPriority")) {
    auto v = r.integer(*n, m.path("belowPriority"), std::numeric_limits<int32_t>::min(),
                       std::numeric_limits<int32_t>::max());
    ok = ok && v;
    if (v) out.below_priority = static_cast<int32_t>(*v);
  } else {
    ok = false;
  }
  if (const YAML::Node* n = m.required("after"))
    ok = positive_duration(r, m, *n, "after", out.after_ns) && ok;
  else
    ok = false;
  return ok;
}

bool read_consolidation(Reader& r, const YAML::Node& node, Consolidation& out) {
  MapReader m(r, node, "spec.consolidation", {{"after", "interval"}});
  if (!m.is_map()) return false;
  bool ok = true;
  if (const YAML::Node* n = m.required("after"))
    ok = positive_duration(r, m, *n, "after", out.after_ns);
  else
    ok = false;
  if (const YAML::Node* n = m.find("interval"))
    ok = positive_duration(r, m, *n, "interval", out.interval_ns) && ok;
  return ok;
}

bool read_price(Reader& r, const YAML::Node& n, NodePool& pool) {
  const std::string path = "spec.pricePerHour";
  if (!n.IsScalar()) {
    r.error(n, path, "must be a number (the price of one node-hour)");
    return false;
  }
  auto v = parse_scaled_decimal(n.Scalar(), kMicroPerUnit);
  if (!v || *v < 0) {
    r.error(n, path, quote(n.Scalar()) + " is not a price (a number >= 0, e.g. 2.45)");
    return false;
  }
  pool.price_micro_per_hour = *v;
  return true;
}

bool read_capacity(Reader& r, const YAML::Node& n, NodePool& pool) {
  auto s = r.str(n, "spec.capacityType");
  if (!s) return false;
  if (*s == "on-demand") {
    pool.capacity = CapacityType::kOnDemand;
  } else if (*s == "spot") {
    pool.capacity = CapacityType::kSpot;
  } else {
    r.error(n, "spec.capacityType", quote(*s) + " is not on-demand or spot");
    return false;
  }
  return true;
}

bool read_pool_durations(Reader& r, MapReader& spec, NodePool& pool) {
  bool ok = true;
  if (const YAML::Node* n = spec.find("provisioningDelay")) {
    auto v = r.duration(*n, "spec.provisioningDelay");
    ok = ok && v;
    if (v) pool.provisioning_delay_ns = *v;
  }
  if (const YAML::Node* n = spec.find("scaleDownAfter")) {
    auto v = r.duration(*n, "spec.scaleDownAfter");
    ok = ok && v;
    if (v) pool.scale_down_after_ns = *v;
  }
  return ok;
}

}  // namespace

void read_node_pool(Reader& r, const YAML::Node& doc, Builder& b) {
  MapReader top(r, doc, "", {kTopFields});
  Metadata meta = read_metadata(r, doc, top.find("metadata"));
  const YAML::Node* spec_node = top.required("spec");
  if (!meta.ok || !spec_node) return;
  MapReader spec(r, *spec_node, "spec",
                 {{"flavor", "namePrefix", "node", "minNodes", "maxNodes", "initialNodes",
                   "spareNodes", "pricePerHour", "capacityType", "provisioningDelay",
                   "scaleDownAfter", "spot", "provisioner", "deferScaleUp", "consolidation"}});
  if (!spec.is_map()) return;
  NodePool pool;
  pool.name = meta.name;
  pool.name_prefix = meta.name + "-";
  FieldReader f(r, spec);
  f.str("flavor", &pool.flavor, FieldReader::kRequired);
  f.str("namePrefix", &pool.name_prefix);
  f.integer("minNodes", &pool.min_nodes, 0, kMaxPoolNodes);
  f.integer("maxNodes", &pool.max_nodes, 1, kMaxPoolNodes, FieldReader::kRequired);
  pool.initial_nodes = -1;  // default: minNodes
  f.integer("initialNodes", &pool.initial_nodes, 0, kMaxPoolNodes);
  f.integer("spareNodes", &pool.spare_nodes, 0, kMaxPoolNodes);
  bool ok = f.ok();
  if (const YAML::Node* n = spec.required("node")) {
    MapReader m(r, *n, "spec.node", {{"labels", "cpu", "memory", "gpus"}});
    ok = m.is_map() && read_node_common(r, m, pool.node, b.config.resources) && ok;
  } else {
    ok = false;
  }
  if (const YAML::Node* n = spec.find("pricePerHour")) ok = read_price(r, *n, pool) && ok;
  if (const YAML::Node* n = spec.find("capacityType")) ok = read_capacity(r, *n, pool) && ok;
  ok = read_pool_durations(r, spec, pool) && ok;
  if (const YAML::Node* n = spec.find("spot")) {
    if (pool.capacity != CapacityType::kSpot) {
      r.error(*n, "spec.spot", "only for capacityType: spot");
      ok = false;
    } else {
      ok = read_spot(r, *n, pool.reclaim) && ok;
    }
  }
  if (const YAML::Node* n = spec.find("provisioner"))
    ok = read_provisioner(r, *n, pool.provisioner) && ok;
  if (const YAML::Node* n = spec.find("deferScaleUp"))
    ok = read_defer(r, *n, pool.defer_scale_up) && ok;
  if (const YAML::Node* n = spec.find("consolidation"))
    ok = read_consolidation(r, *n, pool.consolidation) && ok;
  if (!ok) return;
  if (pool.min_nodes > pool.max_nodes) {
    r.error(*spec.find("minNodes"), "spec.minNodes",
            std::to_string(pool.min_nodes) + " is above maxNodes (" +
                std::to_string(pool.max_nodes) + ")");
    return;
  }
  if (pool.initial_nodes < 0) pool.initial_nodes = pool.min_nodes;
  if (pool.initial_nodes < pool.min_nodes || pool.initial_nodes > pool.max_nodes) {
    r.error(*spec.find("initialNodes"), "spec.initialNodes",
            std::to_string(pool.initial_nodes) + " is not between minNodes (" +
                std::to_string(pool.min_nodes) + ") and maxNodes (" +
                std::to_string(pool.max_nodes) + ")");
    return;
  }
  for (const NodePool& other : b.config.node_pools)
    if (other.name == pool.name) {
      r.error(doc, "metadata.name", "a second NodePool " + quote(pool.name));
      return;
    }
  b.pool_flavor_loc.push_back(Loc{r.where(*spec.find("flavor")), "spec.flavor"});
  b.config.node_pools.push_back(std::move(pool));
}

// Stage 2: each pool's flavor by id; its nodes carry the flavor's labels.
void resolve_node_pools(Builder& b, Sink& sink) {
  for (size_t i = 0; i < b.config.node_pools.size(); ++i) {
    NodePool& pool = b.config.node_pools[i];
    const auto id = b.config.find_flavor(pool.flavor);
    if (!id) {
      sink.error(
          format(b.pool_flavor_loc[i].where, b.pool_flavor_loc[i].path,
                 "NodePool " + quote(pool.name) + ": no ResourceFlavor " + quote(pool.flavor)));
      continue;
    }
    pool.flavor_id = *id;
    Labels added;  // appended after the loop: find_label searches the sorted labels
    for (const auto& [key, value] : b.config.flavors[static_cast<size_t>(*id)].node_labels) {
      const std::string* have = find_label(pool.node.labels, key);
      if (have && *have != value) {
        sink.error(format(b.pool_flavor_loc[i].where, b.pool_flavor_loc[i].path,
                          "NodePool " + quote(pool.name) + ": label " + key + "=" + *have +
                              " contradicts flavor " + quote(pool.flavor) + "'s " + key + "=" +
                              value));
        continue;
      }
      if (!have) added.emplace_back(key, value);
    }
    pool.node.labels.insert(pool.node.labels.end(), added.begin(), added.end());
    std::sort(pool.node.labels.begin(), pool.node.labels.end());  // find_label searches
    // Every pool node says what it is: a job refuses spot with a node selector on it.
    const char* type = pool.capacity == CapacityType::kSpot ? "spot" : "on-demand";
    if (const std::string* have = find_label(pool.node.labels, kCapacityTypeLabel)) {
      if (*have != type)
        sink.error(format(b.pool_flavor_loc[i].where, b.pool_flavor_loc[i].path,
                          "NodePool " + quote(pool.name) + ": label " + kCapacityTypeLabel + "=" +
                              *have + " contradicts its capacityType (" + type + ")"));
    } else {
      pool.node.labels.emplace_back(kCapacityTypeLabel, type);
    }
    std::sort(pool.node.labels.begin(), pool.node.labels.end());
  }
}

}  // namespace sluice::config_detail
