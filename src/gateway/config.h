#pragma once
// Gateway configuration: the parsed, validated form of gateway.yaml. Parsing never throws and
// never aborts: a bad file yields one message that names the file, the line and the field, e.g.
// `gateway.yaml:7: pools[1].maxInFlight: must be positive`.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::gateway {

// Request classes, most important first. The numeric value is the dispatch priority (lower is
// served first) and the index into per-class metric arrays.
enum class RequestClass : std::uint8_t { kCritical = 0, kStandard = 1, kSheddable = 2 };
inline constexpr int kNumClasses = 3;
std::string_view class_name(RequestClass c);
std::optional<RequestClass> parse_class(std::string_view s);

struct HostPort {
  std::string host;
  std::uint16_t port = 0;
  std::string text() const { return host + ":" + std::to_string(port); }
};
// Parses "host:port" (host may be empty for 127.0.0.1). Returns nullopt on a malformed value.
std::optional<HostPort> parse_host_port(std::string_view s);

struct HealthCheckConfig {
  bool enabled = true;
  std::string path = "/healthz";
  std::int64_t interval_ms = 1000;
  std::int64_t timeout_ms = 500;
  int unhealthy_threshold = 2;  // consecutive failures before a backend is taken out
  int healthy_threshold = 1;    // consecutive successes before it is taken back
};

struct PoolConfig {
  std::string name;
  std::vector<HostPort> backends;
  int max_in_flight = 0;     // per backend concurrency (required)
  int max_queue_depth = 64;  // cap for standard and sheddable requests
  double shed_threshold = 0.85;
  int critical_headroom = -1;  // extra queue slots only critical may use; -1: ceil(10% of cap)
  std::string fallback;        // name of the fallback pool, empty for none
  int fallback_index = -1;     // resolved index into GatewayConfig::pools
  std::int64_t queue_timeout_ms = 5000;  // longest queue wait before 503
  std::int64_t connect_timeout_ms = 1000;
  std::int64_t upstream_timeout_ms = 30000;  // whole upstream exchange (write + read)
  std::int64_t max_response_bytes = 64LL << 20;
  int retry_after_s = 1;
  HealthCheckConfig health;
};

struct TenantConfig {
  std::string name;
  std::vector<std::string> api_keys;
  RequestClass request_class = RequestClass::kStandard;  // class of requests without a header
  RequestClass max_class = RequestClass::kStandard;  // most important class a header may ask for
  int max_concurrency = 0;                           // queued + in flight; 0: unlimited
};

struct RouteConfig {
  std::string path_prefix;  // empty: any path
  std::string model;        // empty: any model
  std::string pool;
  int pool_index = -1;
};

struct LimitsConfig {
  std::int64_t max_header_bytes = 8192;
  std::int64_t max_body_bytes = 1 << 20;
  std::int64_t header_timeout_ms = 10000;  // from the first byte of a request to its last header
  std::int64_t body_timeout_ms = 30000;
  std::int64_t idle_timeout_ms = 60000;  // keep-alive connection with no request
  std::int64_t write_timeout_ms = 30000;
  int max_connections = 10000;
  // Per client address: one client cannot hold every slot (the finding: 10,000 idle
  // connections from one client left everyone else with 503 for 60 s).
  int max_connections_per_client = 1000;
};

struct GatewayConfig {
  HostPort listen{"127.0.0.1", 8080};
  LimitsConfig limits;
  std::int64_t drain_timeout_ms = 30000;
  std::string class_header = "x-sluice-class";
  std::string deadline_header = "x-sluice-deadline-ms";
  std::string model_header = "x-model";
  std::string api_key_header = "x-api-key";  // `Authorization: Bearer KEY` is accepted too
  bool require_api_key = false;
  TenantConfig anonymous{"anonymous", {}, RequestClass::kStandard, RequestClass::kStandard, 0};
  std::vector<PoolConfig> pools;
  std::vector<TenantConfig> tenants;
  std::vector<RouteConfig> routes;
  std::string default_pool;
  int default_pool_index = -1;

  int pool_index(std::string_view name) const;
};

struct ConfigResult {
  GatewayConfig config;
  std::string error;  // empty on success
  bool ok() const { return error.empty(); }
};

// `filename` is only used in messages.
ConfigResult parse_config(std::string_view yaml_text, std::string_view filename);
ConfigResult load_config_file(const std::string& path);

}  // namespace sluice::gateway
