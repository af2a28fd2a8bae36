#include "gateway/config.h"

#include <yaml-cpp/yaml.h>

#include <charconv>
#include <cmath>
#include <fstream>
#include <initializer_list>
#include <set>
#include <sstream>

namespace sluice::gateway {

std::string_view class_name(RequestClass c) {
  switch (c) {
    case RequestClass::kCritical:
      return "critical";
    case RequestClass::kStandard:
      return "standard";
    case RequestClass::kSheddable:
      return "sheddable";
  }
  return "standard";
}

std::optional<RequestClass> parse_class(std::string_view s) {
  if (s == "critical") return RequestClass::kCritical;
  if (s == "standard") return RequestClass::kStandard;
  if (s == "sheddable") return RequestClass::kSheddable;
  return std::nullopt;
}

std::optional<HostPort> parse_host_port(std::string_view s) {
  auto colon = s.rfind(':');
  if (colon == std::string_view::npos) return std::nullopt;
  HostPort hp;
  hp.host = std::string(s.substr(0, colon));
  if (hp.host.empty()) hp.host = "127.0.0.1";
  auto port_text = s.substr(colon + 1);
  unsigned port = 0;
  auto [ptr, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec != std::errc() || ptr != port_text.data() + port_text.size() || port_text.empty() ||
      port > 65535) {
    return std::nullopt;
  }
  hp.port = static_cast<std::uint16_t>(port);
  return hp;
}

int GatewayConfig::pool_index(std::string_view name) const {
  for (std::size_t i = 0; i < pools.size(); ++i) {
    if (pools[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

namespace {

// Walks the YAML tree, remembering the first error with its line and dotted field path.
class Parser {
 public:
  explicit Parser(std::string_view file) : file_(file) {}

  const std::string& error() const { return error_; }
  bool failed() const { return !error_.empty(); }

  bool fail(const YAML::Node& at, int fallback_line, const std::string& field,
            const std::string& msg) {
    if (!error_.empty()) return false;
    int line = fallback_line;
    if (at.IsDefined() && at.Mark().line >= 0) line = at.Mark().line + 1;
    std::ostringstream os;
    os << file_ << ":" << line << ": " << field << ": " << msg;
    error_ = os.str();
    return false;
  }

  static int line_of(const YAML::Node& n) {
    return n.IsDefined() && n.Mark().line >= 0 ? n.Mark().line + 1 : 1;
  }

  // Rejects keys outside `allowed` so that a typo never silently falls back to a default.
  bool check_keys(const YAML::Node& map, const std::string& path,
                  std::initializer_list<std::string_view> allowed) {
    if (!map.IsMap()) return fail(map, 1, path.empty() ? "(root)" : path, "must be a mapping");
    for (const auto& kv : map) {
      std::string key = kv.first.Scalar();
      bool known = false;
      for (auto a : allowed) known = known || a == key;
      if (!known) return fail(kv.first, line_of(map), join(path, key), "unknown field");
    }
    return true;
  }

  static std::string join(const std::string& path, const std::string& key) {
    return path.empty() ? key : path + "." + key;
  }

  bool get_string(const YAML::Node& map, const std::string& path, const char* key, std::string* out,
                  bool required = false) {
    YAML::Node n = map[key];
    if (!n.IsDefined() || n.IsNull()) {
      if (required) return fail(map, line_of(map), join(path, key), "is required");
      return true;
    }
    if (!n.IsScalar()) return fail(n, line_of(map), join(path, key), "must be a string");
    *out = n.Scalar();
    if (required && out->empty())
      return fail(n, line_of(map), join(path, key), "must not be empty");
    return true;
  }

  template <class Int>
  bool get_int(const YAML::Node& map, const std::string& path, const char* key, Int* out,
               Int min_value, const char* range_msg, bool required = false) {
    YAML::Node n = map[key];
    if (!n.IsDefined() || n.IsNull()) {
      if (required) return fail(map, line_of(map), join(path, key), "is required");
      return true;
    }
    long long v = 0;
    if (!n.IsScalar() || !YAML::convert<long long>::decode(n, v)) {
      return fail(n, line_of(map), join(path, key), "must be an integer");
    }
    if (v < static_cast<long long>(min_value)) {
      return fail(n, line_of(map), join(path, key), range_msg);
    }
    if (v > static_cast<long long>(std::numeric_limits<Int>::max())) {
      return fail(n, line_of(map), join(path, key), "is too large");
    }
    *out = static_cast<Int>(v);
    return true;
  }

  bool get_bool(const YAML::Node& map, const std::string& path, const char* key, bool* out) {
    YAML::Node n = map[key];
    if (!n.IsDefined() || n.IsNull()) return true;
    if (!n.IsScalar() || !YAML::convert<bool>::decode(n, *out)) {
      return fail(n, line_of(map), join(path, key), "must be true or false");
    }
    return true;
  }

  bool get_double(const YAML::Node& map, const std::string& path, const char* key, double* out) {
    YAML::Node n = map[key];
    if (!n.IsDefined() || n.IsNull()) return true;
    if (!n.IsScalar() || !YAML::convert<double>::decode(n, *out) || !std::isfinite(*out)) {
      return fail(n, line_of(map), join(path, key), "must be a number");
    }
    return true;
  }

  bool get_class(const YAML::Node& map, const std::string& path, const char* key,
                 RequestClass* out) {
    std::string s;
    if (!get_string(map, path, key, &s)) return false;
    if (s.empty()) return true;
    auto c = parse_class(s);
    if (!c) {
      return fail(map[key], line_of(map), join(path, key),
                  "must be one of critical, standard, sheddable (got '" + s + "')");
    }
    *out = *c;
    return true;
  }

 private:
  std::string file_;
  std::string error_;
};

bool parse_limits(Parser& p, const YAML::Node& n, LimitsConfig* out) {
  const std::string path = "limits";
  if (!p.check_keys(
          n, path,
          {"maxHeaderBytes", "maxBodyBytes", "headerTimeoutMs", "bodyTimeoutMs", "idleTimeoutMs",
           "writeTimeoutMs", "maxConnections", "maxConnectionsPerClient"})) {
    return false;
  }
  const char* pos = "must be positive";
  return p.get_int<std::int64_t>(n, path, "maxHeaderBytes", &out->max_header_bytes, 256,
                                 "must be at least 256") &&
         p.get_int<std::int64_t>(n, path, "maxBodyBytes", &out->max_body_bytes, 0,
                                 "must not be negative") &&
         p.get_int<std::int64_t>(n, path, "headerTimeoutMs", &out->header_timeout_ms, 1, pos) &&
         p.get_int<std::int64_t>(n, path, "bodyTimeoutMs", &out->body_timeout_ms, 1, pos) &&
         p.get_int<std::int64_t>(n, path, "idleTimeoutMs", &out->idle_timeout_ms, 1, pos) &&
         p.get_int<std::int64_t>(n, path, "writeTimeoutMs", &out->write_timeout_ms, 1, pos) &&
         p.get_int<int>(n, path, "maxConnections", &out->max_connections, 1, pos) &&
         p.get_int<int>(n, path, "maxConnectionsPerClient", &out->max_connections_per_client, 1,
                        pos);
}

bool parse_health(Parser& p, const YAML::Node& n, const std::string& path, HealthCheckConfig* out) {
  if (!p.check_keys(n, path,
                    {"enabled", "path", "intervalMs", "timeoutMs", "unhealthyThreshold",
                     "healthyThreshold"})) {
    return false;
  }
  const char* pos = "must be positive";
  if (!(p.get_bool(n, path, "enabled", &out->enabled) &&
        p.get_string(n, path, "path", &out->path) &&
        p.get_int<std::int64_t>(n, path, "intervalMs", &out->interval_ms, 1, pos) &&
        p.get_int<std::int64_t>(n, path, "timeoutMs", &out->timeout_ms, 1, pos) &&
        p.get_int<int>(n, path, "unhealthyThreshold", &out->unhealthy_threshold, 1, pos) &&
        p.get_int<int>(n, path, "healthyThreshold", &out->healthy_threshold, 1, pos))) {
    return false;
  }
  if (out->path.empty() || out->path[0] != '/') {
    return p.fail(n["path"], Parser::line_of(n), path + ".path", "must start with '/'");
  }
  return true;
}

bool parse_pool(Parser& p, const YAML::Node& n, const std::string& path, PoolConfig* out) {
  if (!p.check_keys(
          n, path,
          {"name", "backends", "maxInFlight", "maxQueueDepth", "shedThreshold", "criticalHeadroom",
           "fallback", "queueTimeoutMs", "connectTimeoutMs", "upstreamTimeoutMs",
           "maxResponseBytes", "retryAfterSeconds", "healthCheck"})) {
    return false;
  }
  const char* pos = "must be positive";
  if (!(p.get_string(n, path, "name", &out->name, true) &&
        p.get_int<int>(n, path, "maxInFlight", &out->max_in_flight, 1, pos, true) &&
        p.get_int<int>(n, path, "maxQueueDepth", &out->max_queue_depth, 0,
                       "must not be negative") &&
        p.get_double(n, path, "shedThreshold", &out->shed_threshold) &&
        p.get_int<int>(n, path, "criticalHeadroom", &out->critical_headroom, 0,
                       "must not be negative") &&
        p.get_string(n, path, "fallback", &out->fallback) &&
        p.get_int<std::int64_t>(n, path, "queueTimeoutMs", &out->queue_timeout_ms, 1, pos) &&
        p.get_int<std::int64_t>(n, path, "connectTimeoutMs", &out->connect_timeout_ms, 1, pos) &&
        p.get_int<std::int64_t>(n, path, "upstreamTimeoutMs", &out->upstream_timeout_ms, 1, pos) &&
        p.get_int<std::int64_t>(n, path, "maxResponseBytes", &out->max_response_bytes, 1, pos) &&
        p.get_int<int>(n, path, "retryAfterSeconds", &out->retry_after_s, 0,
                       "must not be negative"))) {
    return false;
  }
  if (out->shed_threshold <= 0.0 || out->shed_threshold > 1.0) {
    return p.fail(n["shedThreshold"], Parser::line_of(n), path + ".shedThreshold",
                  "must be in (0, 1]");
  }
  if (out->critical_headroom < 0) {
    out->critical_headroom = (out->max_queue_depth + 9) / 10;
  }
  YAML::Node b = n["backends"];
  if (!b.IsDefined() || !b.IsSequence() || b.size() == 0) {
    return p.fail(b, Parser::line_of(n), path + ".backends",
                  "must be a non-empty list of host:port");
  }
  for (std::size_t i = 0; i < b.size(); ++i) {
    std::string field = path + ".backends[" + std::to_string(i) + "]";
    auto hp = b[i].IsScalar() ? parse_host_port(b[i].Scalar()) : std::nullopt;
    if (!hp || hp->port == 0) {
      return p.fail(b[i], Parser::line_of(b), field, "must be host:port with a port in 1..65535");
    }
    out->backends.push_back(*hp);
  }
  if (n["healthCheck"].IsDefined()) {
    return parse_health(p, n["healthCheck"], path + ".healthCheck", &out->health);
  }
  return true;
}

bool parse_tenant(Parser& p, const YAML::Node& n, const std::string& path, TenantConfig* out,
                  bool anonymous) {
  if (anonymous) {
    if (!p.check_keys(n, path, {"class", "maxClass", "maxConcurrency"})) return false;
  } else if (!p.check_keys(n, path, {"name", "apiKeys", "class", "maxClass", "maxConcurrency"})) {
    return false;
  }
  if (!anonymous) {
    if (!p.get_string(n, path, "name", &out->name, true)) return false;
    YAML::Node keys = n["apiKeys"];
    if (!keys.IsDefined() || !keys.IsSequence() || keys.size() == 0) {
      return p.fail(keys, Parser::line_of(n), path + ".apiKeys",
                    "must be a non-empty list of strings");
    }
    for (std::size_t i = 0; i < keys.size(); ++i) {
      if (!keys[i].IsScalar() || keys[i].Scalar().empty()) {
        return p.fail(keys[i], Parser::line_of(keys), path + ".apiKeys[" + std::to_string(i) + "]",
                      "must be a non-empty string");
      }
      out->api_keys.push_back(keys[i].Scalar());
    }
  }
  if (!(p.get_class(n, path, "class", &out->request_class) &&
        p.get_int<int>(n, path, "maxConcurrency", &out->max_concurrency, 0,
                       "must not be negative (0 means unlimited)"))) {
    return false;
  }
  out->max_class = out->request_class;
  if (!p.get_class(n, path, "maxClass", &out->max_class)) return false;
  if (static_cast<int>(out->max_class) > static_cast<int>(out->request_class)) {
    return p.fail(n["maxClass"], Parser::line_of(n), path + ".maxClass",
                  "must be at least as important as class");
  }
  return true;
}

bool parse_route(Parser& p, const YAML::Node& n, const std::string& path, RouteConfig* out) {
  if (!p.check_keys(n, path, {"pathPrefix", "model", "pool"})) return false;
  if (!(p.get_string(n, path, "pathPrefix", &out->path_prefix) &&
        p.get_string(n, path, "model", &out->model) &&
        p.get_string(n, path, "pool", &out->pool, true))) {
    return false;
  }
  if (!out->path_prefix.empty() && out->path_prefix[0] != '/') {
    return p.fail(n["pathPrefix"], Parser::line_of(n), path + ".pathPrefix", "must start with '/'");
  }
  return true;
}

// 1. Pools: names unique, fallbacks resolve to another pool that has no fallback itself
//    (one hop only, so a request can never bounce between pools).
bool parse_pools(Parser& p, const YAML::Node& root, GatewayConfig* cfg) {
  YAML::Node pools = root["pools"];
  if (!pools.IsDefined() || !pools.IsSequence() || pools.size() == 0) {
    return p.fail(pools, 1, "pools", "must be a non-empty list of pools");
  }
  std::set<std::string> names;
  for (std::size_t i = 0; i < pools.size(); ++i) {
    std::string path = "pools[" + std::to_string(i) + "]";
    PoolConfig pc;
    if (!parse_pool(p, pools[i], path, &pc)) return false;
    if (!names.insert(pc.name).second) {
      return p.fail(pools[i]["name"], Parser::line_of(pools[i]), path + ".name",
                    "duplicate pool name '" + pc.name + "'");
    }
    cfg->pools.push_back(std::move(pc));
  }
  for (std::size_t i = 0; i < cfg->pools.size(); ++i) {
    auto& pc = cfg->pools[i];
    if (pc.fallback.empty()) continue;
    std::string field = "pools[" + std::to_string(i) + "].fallback";
    int idx = cfg->pool_index(pc.fallback);
    if (idx < 0) {
      return p.fail(pools[i]["fallback"], 1, field, "no pool named '" + pc.fallback + "'");
    }
    if (idx == static_cast<int>(i)) {
      return p.fail(pools[i]["fallback"], 1, field, "a pool cannot be its own fallback");
    }
    if (!cfg->pools[idx].fallback.empty()) {
      return p.fail(pools[i]["fallback"], 1, field,
                    "pool '" + pc.fallback + "' has a fallback itself; chains are not allowed");
    }
    pc.fallback_index = idx;
  }
  return true;
}

// 2. Tenants: names and API keys unique.
bool parse_tenants(Parser& p, const YAML::Node& root, GatewayConfig* cfg) {
  YAML::Node tenants = root["tenants"];
  if (tenants.IsDefined() && !tenants.IsNull()) {
    if (!tenants.IsSequence()) return p.fail(tenants, 1, "tenants", "must be a list");
    std::set<std::string> tnames, keys;
    for (std::size_t i = 0; i < tenants.size(); ++i) {
      std::string path = "tenants[" + std::to_string(i) + "]";
      TenantConfig tc;
      if (!parse_tenant(p, tenants[i], path, &tc, false)) return false;
      if (!tnames.insert(tc.name).second || tc.name == "anonymous") {
        return p.fail(tenants[i]["name"], Parser::line_of(tenants[i]), path + ".name",
                      "duplicate or reserved tenant name '" + tc.name + "'");
      }
      for (const auto& k : tc.api_keys) {
        if (!keys.insert(k).second) {
          return p.fail(tenants[i]["apiKeys"], Parser::line_of(tenants[i]), path + ".apiKeys",
                        "API key used by two tenants");
        }
      }
      cfg->tenants.push_back(std::move(tc));
    }
  }

  return true;
}

// 3. Routes and the default pool resolve to pools.
bool parse_routes(Parser& p, const YAML::Node& root, GatewayConfig* cfg) {
  YAML::Node routes = root["routes"];
  if (routes.IsDefined() && !routes.IsNull()) {
    if (!routes.IsSequence()) return p.fail(routes, 1, "routes", "must be a list");
    for (std::size_t i = 0; i < routes.size(); ++i) {
      std::string path = "routes[" + std::to_string(i) + "]";
      RouteConfig rc;
      if (!parse_route(p, routes[i], path, &rc)) return false;
      rc.pool_index = cfg->pool_index(rc.pool);
      if (rc.pool_index < 0) {
        return p.fail(routes[i]["pool"], Parser::line_of(routes[i]), path + ".pool",
                      "no pool named '" + rc.pool + "'");
      }
      cfg->routes.push_back(std::move(rc));
    }
  }
  if (!cfg->default_pool.empty()) {
    cfg->default_pool_index = cfg->pool_index(cfg->default_pool);
    if (cfg->default_pool_index < 0) {
      return p.fail(root["defaultPool"], 1, "defaultPool",
                    "no pool named '" + cfg->default_pool + "'");
    }
  } else if (cfg->routes.empty()) {
    cfg->default_pool_index = 0;  // a lone pool list with no routes: the first pool serves all
    cfg->default_pool = cfg->pools[0].name;
  }
  return true;
}

bool parse_root(Parser& p, const YAML::Node& root, GatewayConfig* cfg) {
  if (!p.check_keys(root, "",
                    {"listen", "limits", "drainTimeoutMs", "classHeader", "deadlineHeader",
                     "modelHeader", "apiKeyHeader", "requireApiKey", "anonymous", "pools",
                     "tenants", "routes", "defaultPool"})) {
    return false;
  }
  std::string listen;
  if (!p.get_string(root, "", "listen", &listen)) return false;
  if (!listen.empty()) {
    auto hp = parse_host_port(listen);
    if (!hp) return p.fail(root["listen"], 1, "listen", "must be host:port (port 0: any free)");
    cfg->listen = *hp;
  }
  if (root["limits"].IsDefined() && !parse_limits(p, root["limits"], &cfg->limits)) return false;
  if (!(p.get_int<std::int64_t>(root, "", "drainTimeoutMs", &cfg->drain_timeout_ms, 1,
                                "must be positive") &&
        p.get_string(root, "", "classHeader", &cfg->class_header) &&
        p.get_string(root, "", "deadlineHeader", &cfg->deadline_header) &&
        p.get_string(root, "", "modelHeader", &cfg->model_header) &&
        p.get_string(root, "", "apiKeyHeader", &cfg->api_key_header) &&
        p.get_bool(root, "", "requireApiKey", &cfg->require_api_key) &&
        p.get_string(root, "", "defaultPool", &cfg->default_pool))) {
    return false;
  }
  if (root["anonymous"].IsDefined() &&
      !parse_tenant(p, root["anonymous"], "anonymous", &cfg->anonymous, true)) {
    return false;
  }
  if (!(parse_pools(p, root, cfg) && parse_tenants(p, root, cfg) && parse_routes(p, root, cfg)))
    return false;
  for (const auto* h :
       {&cfg->class_header, &cfg->deadline_header, &cfg->model_header, &cfg->api_key_header}) {
    if (h->empty()) return p.fail(root, 1, "headers", "header names must not be empty");
  }
  return true;
}

}  // namespace

ConfigResult parse_config(std::string_view yaml_text, std::string_view filename) {
  ConfigResult r;
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml_text));
  } catch (const YAML::Exception& e) {
    std::ostringstream os;
    os << filename << ":" << (e.mark.line >= 0 ? e.mark.line + 1 : 1) << ": (yaml): " << e.msg;
    r.error = os.str();
    return r;
  }
  Parser p(filename);
  try {
    if (!root.IsDefined() || root.IsNull()) {
      r.error = std::string(filename) + ":1: (root): empty configuration";
      return r;
    }
    parse_root(p, root, &r.config);
  } catch (const YAML::Exception& e) {
    // yaml-cpp can still throw on odd shapes (e.g. a key that is itself a map).
    std::ostringstream os;
    os << filename << ":" << (e.mark.line >= 0 ? e.mark.line + 1 : 1) << ": (yaml): " << e.msg;
    r.error = os.str();
    return r;
  }
  if (p.failed()) r.error = p.error();
  return r;
}

ConfigResult load_config_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    ConfigResult r;
    r.error = path + ": cannot open file";
    return r;
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return parse_config(ss.str(), path);
}

}  // namespace sluice::gateway
