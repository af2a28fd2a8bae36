#include "gateway/config.h"

#include <gtest/gtest.h>

#include <fstream>

#include "gateway/routing.h"

namespace sluice::gateway {
namespace {

constexpr const char* kGood = R"(listen: 127.0.0.1:0
limits:
  maxHeaderBytes: 4096
pools:
  - name: large
    backends: [127.0.0.1:9001, "localhost:9002"]
    maxInFlight: 4
    maxQueueDepth: 32
    shedThreshold: 0.5
    fallback: small
    healthCheck: {path: /ready, intervalMs: 200}
  - name: small
    backends: [127.0.0.1:9003]
    maxInFlight: 2
tenants:
  - name: acme
    apiKeys: [k1, k2]
    class: critical
    maxConcurrency: 8
  - name: batch
    apiKeys: [k3]
    class: sheddable
  - name: mixed
    apiKeys: [k4]
    class: standard
    maxClass: critical
routes:
  - pathPrefix: /v1/small
    pool: small
  - model: llama-70b
    pool: large
defaultPool: large
)";

TEST(GatewayConfig, ParsesAllFieldsAndDefaults) {
  auto r = parse_config(kGood, "gateway.yaml");
  ASSERT_TRUE(r.ok()) << r.error;
  const auto& c = r.config;
  EXPECT_EQ(c.listen.port, 0);
  EXPECT_EQ(c.limits.max_header_bytes, 4096);
  EXPECT_EQ(c.limits.max_body_bytes, 1 << 20);  // default
  ASSERT_EQ(c.pools.size(), 2u);
  EXPECT_EQ(c.pools[0].backends.size(), 2u);
  EXPECT_EQ(c.pools[0].backends[1].host, "localhost");
  EXPECT_EQ(c.pools[0].fallback_index, 1);
  EXPECT_EQ(c.pools[0].critical_headroom, 4);  // ceil(10% of 32)
  EXPECT_EQ(c.pools[0].health.path, "/ready");
  EXPECT_EQ(c.pools[0].health.interval_ms, 200);
  EXPECT_EQ(c.pools[1].max_queue_depth, 64);  // default
  EXPECT_DOUBLE_EQ(c.pools[1].shed_threshold, 0.85);
  EXPECT_EQ(c.tenants[0].request_class, RequestClass::kCritical);
  EXPECT_EQ(c.tenants[1].max_concurrency, 0);
  EXPECT_EQ(c.default_pool_index, 0);
}

struct BadCase {
  const char* yaml;
  const char* expected;  // exact message
};

TEST(GatewayConfig, ErrorsNameFileLineAndField) {
  const BadCase cases[] = {
      {"pools:\n  - name: a\n    backends: [127.0.0.1:1]\n    maxInFlight: 1\n"
       "  - name: b\n    backends: [127.0.0.1:2]\n    maxInFlight: 0\n",
       "gateway.yaml:7: pools[1].maxInFlight: must be positive"},
      {"pools:\n  - name: a\n    backends: [127.0.0.1:1]\n    maxInFlight: 1\n"
       "    shedThreshold: 1.5\n",
       "gateway.yaml:5: pools[0].shedThreshold: must be in (0, 1]"},
      {"pools:\n  - name: a\n    backends: [127.0.0.1:1]\n    maxInFlight: two\n",
       "gateway.yaml:4: pools[0].maxInFlight: must be an integer"},
      {"pools:\n  - name: a\n    backends: [nohost]\n    maxInFlight: 1\n",
       "gateway.yaml:3: pools[0].backends[0]: must be host:port with a port in 1..65535"},
      {"pools:\n  - name: a\n    backends: [127.0.0.1:1]\n    maxInFlight: 1\n"
       "    maxInflight: 3\n",
       "gateway.yaml:5: pools[0].maxInflight: unknown field"},
      {"pools:\n  - name: a\n    backends: [127.0.0.1:1]\n",
       "gateway.yaml:2: pools[0].maxInFlight: is required"},
      {"pools:\n  - name: a\n    backends: [127.0.0.1:1]\n    maxInFlight: 1\n"
       "    fallback: nope\n",
       "gateway.yaml:5: pools[0].fallback: no pool named 'nope'"},
      {"pools:\n  - name: a\n    backends: [127.0.0.1:1]\n    maxInFlight: 1\n"
       "routes:\n  - pathPrefix: /x\n    pool: zz\n",
       "gateway.yaml:7: routes[0].pool: no pool named 'zz'"},
      {"pools:\n  - name: a\n    backends: [127.0.0.1:1]\n    maxInFlight: 1\n"
       "tenants:\n  - name: t\n    apiKeys: [k]\n    class: vip\n",
       "gateway.yaml:8: tenants[0].class: must be one of critical, standard, sheddable (got "
       "'vip')"},
      {"pools: [\n", nullptr},  // YAML syntax error: message checked loosely below
      {"listen: 1.2.3.4\npools: []\n",
       "gateway.yaml:1: listen: must be host:port (port 0: any free)"},
  };
  for (const auto& bc : cases) {
    auto r = parse_config(bc.yaml, "gateway.yaml");
    ASSERT_FALSE(r.ok()) << bc.yaml;
    if (bc.expected) {
      EXPECT_EQ(r.error, bc.expected);
    } else {
      EXPECT_EQ(r.error.rfind("gateway.yaml:", 0), 0u) << r.error;
    }
  }
}

TEST(GatewayConfig, RejectsFallbackChainsAndDuplicates) {
  auto r = parse_config(
      "pools:\n"
      "  - {name: a, backends: [127.0.0.1:1], maxInFlight: 1, fallback: b}\n"
      "  - {name: b, backends: [127.0.0.1:2], maxInFlight: 1, fallback: a}\n",
      "g.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error.find("chains are not allowed"), std::string::npos) << r.error;
  r = parse_config(
      "pools:\n"
      "  - {name: a, backends: [127.0.0.1:1], maxInFlight: 1}\n"
      "  - {name: a, backends: [127.0.0.1:2], maxInFlight: 1}\n",
      "g.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error, "g.yaml:3: pools[1].name: duplicate pool name 'a'");
}

TEST(GatewayConfig, MissingFileIsAnError) {
  auto r = load_config_file("/nonexistent/gateway.yaml");
  EXPECT_EQ(r.error, "/nonexistent/gateway.yaml: cannot open file");
}

TEST(GatewayConfig, ExampleConfigParses) {
  const char* src = std::getenv("SLUICE_SOURCE_DIR");
  if (!src) GTEST_SKIP() << "SLUICE_SOURCE_DIR not set";
  auto r = load_config_file(std::string(src) + "/examples/gateway/gateway.yaml");
  EXPECT_TRUE(r.ok()) << r.error;
}

TEST(GatewayRouting, FirstMatchingRouteThenDefault) {
  auto r = parse_config(kGood, "gateway.yaml");
  ASSERT_TRUE(r.ok()) << r.error;
  const auto& c = r.config;
  EXPECT_EQ(route_pool(c, "/v1/small/completions", ""), 1);
  EXPECT_EQ(route_pool(c, "/v1/small/completions", "llama-70b"), 1);  // first route wins
  EXPECT_EQ(route_pool(c, "/v1/completions", "llama-70b"), 0);
  EXPECT_EQ(route_pool(c, "/v1/completions", "other"), 0);  // default pool
  EXPECT_TRUE(routes_need_model(c));
}

TEST(GatewayRouting, ModelFromJsonBody) {
  EXPECT_EQ(model_from_json_body(R"({"model":"llama-70b","prompt":"hi"})"), "llama-70b");
  EXPECT_EQ(model_from_json_body(R"({"prompt":"model"})"), "");
  EXPECT_EQ(model_from_json_body(R"({"model":7})"), "");
  EXPECT_EQ(model_from_json_body(R"({"model": "x")"), "");  // truncated JSON
  EXPECT_EQ(model_from_json_body(""), "");
}

TEST(GatewayRouting, IdentityAndClass) {
  auto r = parse_config(kGood, "gateway.yaml");
  ASSERT_TRUE(r.ok()) << r.error;
  const auto& c = r.config;
  auto id = identify(c, "k2", "");
  EXPECT_EQ(id.tenant, 0);
  EXPECT_EQ(id.request_class, RequestClass::kCritical);
  id = identify(c, "k2", "sheddable");  // lowering is allowed
  EXPECT_EQ(id.request_class, RequestClass::kSheddable);
  id = identify(c, "k3", "critical");  // raising is not: stays sheddable
  EXPECT_EQ(id.request_class, RequestClass::kSheddable);
  id = identify(c, "k4", "critical");  // up to maxClass
  EXPECT_EQ(id.request_class, RequestClass::kCritical);
  id = identify(c, "k4", "");
  EXPECT_EQ(id.request_class, RequestClass::kStandard);
  id = identify(c, "", "critical");  // anonymous: maxClass defaults to class (standard)
  EXPECT_EQ(id.request_class, RequestClass::kStandard);
  id = identify(c, "", "");  // anonymous
  EXPECT_EQ(id.tenant, -1);
  EXPECT_EQ(id.request_class, RequestClass::kStandard);
  id = identify(c, "bogus", "");
  EXPECT_EQ(id.error_status, 401);
  id = identify(c, "k1", "urgent");
  EXPECT_EQ(id.error_status, 400);
  EXPECT_EQ(bearer_token("Bearer abc "), "abc");
  EXPECT_EQ(bearer_token("bearer abc"), "abc");
  EXPECT_EQ(bearer_token("Basic abc"), "");
}

}  // namespace
}  // namespace sluice::gateway
