// The gateway's configuration (gateway.yaml): parse_config, then the routing and identity
// functions over what parsed.
#include "fuzz_util.h"
#include "gateway/config.h"
#include "gateway/routing.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sluice::gateway;
  const ConfigResult r = parse_config(sluice::fuzz::bytes(data, size), "gateway.yaml");
  if (!r.ok()) return 0;
  const GatewayConfig& c = r.config;
  // A valid config's indices point into its pools.
  const auto in_range = [&](int i) { return i >= -1 && i < static_cast<int>(c.pools.size()); };
  if (!in_range(c.default_pool_index)) std::abort();
  for (const PoolConfig& p : c.pools)
    if (!in_range(p.fallback_index)) std::abort();
  for (const RouteConfig& rt : c.routes)
    if (rt.pool_index < 0 || !in_range(rt.pool_index)) std::abort();
  (void)route_pool(c, "/v1/completions", routes_need_model(c) ? "m" : "");
  for (const TenantConfig& t : c.tenants)
    for (const std::string& k : t.api_keys) (void)identify(c, k, "critical");
  return 0;
}
