// sluice.dev NodePool (src/config/kinds/node_pool_kind.cc): every field, the flavor's labels on
// its nodes, and file:line errors for what is wrong.
#include <gtest/gtest.h>

#include "../config_test_util.h"

namespace sluice {
namespace node_pool_kind_test {

using testing_config::any_contains;
using testing_config::dump;
using testing_config::load_one;
using testing_config::yaml;

const char* kFlavor = R"(apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: p100}
spec: {nodeLabels: {gpu: p100}}
---
)";

LoadOutput load_pool(const char* pool) {
  return load_one(std::string(kFlavor) + yaml(pool));
}

TEST(NodePoolKind, EveryField) {
  auto out = load_pool(R"(
apiVersion: sluice.dev/v1alpha1
kind: NodePool
metadata: {name: spot}
spec:
  flavor: p100
  namePrefix: s-
  node: {cpu: 64, memory: 512Gi, gpus: {count: 8, model: P100, memory: 16Gi}, labels: {zone: a}}
  minNodes: 1
  maxNodes: 40
  initialNodes: 4
  spareNodes: 2
  pricePerHour: 2.45
  capacityType: spot
  provisioningDelay: 3m
  scaleDownAfter: 10m
  spot: {meanLifetime: 8h, notice: 2m}
  deferScaleUp: {belowPriority: 1000, after: 10m}
  consolidation: {after: 15m, interval: 2m}
)");
  ASSERT_TRUE(out.ok()) << dump(out.errors);
  ASSERT_EQ(out.config.node_pools.size(), 1u);
  const NodePool& p = out.config.node_pools[0];
  EXPECT_EQ(p.name, "spot");
  EXPECT_EQ(p.flavor, "p100");
  EXPECT_EQ(p.flavor_id, 0);
  EXPECT_EQ(p.name_prefix, "s-");
  EXPECT_EQ(p.node.gpus.size(), 8u);
  EXPECT_EQ(p.node.cpu_milli, 64000);
  // The flavor's label too, and the capacity type's.
  EXPECT_EQ(p.node.labels,
            (Labels{{"gpu", "p100"}, {"sluice.dev/capacity-type", "spot"}, {"zone", "a"}}));
  EXPECT_EQ(p.min_nodes, 1);
  EXPECT_EQ(p.max_nodes, 40);
  EXPECT_EQ(p.initial_nodes, 4);
  EXPECT_EQ(p.spare_nodes, 2);
  EXPECT_EQ(p.price_micro_per_hour, 2'450'000);
  EXPECT_EQ(p.capacity, CapacityType::kSpot);
  EXPECT_EQ(p.provisioning_delay_ns, 180 * kNsPerSec);
  EXPECT_EQ(p.scale_down_after_ns, 600 * kNsPerSec);
  EXPECT_EQ(p.reclaim.mean_lifetime_ns, 8 * 3600 * kNsPerSec);
  EXPECT_EQ(p.reclaim.notice_ns, 120 * kNsPerSec);
  EXPECT_EQ(p.defer_scale_up.below_priority, 1000);
  EXPECT_EQ(p.defer_scale_up.after_ns, 600 * kNsPerSec);
  EXPECT_EQ(p.consolidation.after_ns, 900 * kNsPerSec);
  EXPECT_EQ(p.consolidation.interval_ns, 120 * kNsPerSec);
  // No Cluster document: the pool's nodes are not the cluster's.
  EXPECT_TRUE(out.config.cluster.nodes.empty());
}

TEST(NodePoolKind, Defaults) {
  auto out = load_pool(R"(
apiVersion: sluice.dev/v1alpha1
kind: NodePool
metadata: {name: od}
spec:
  flavor: p100
  node: {cpu: 8, memory: 64Gi, gpus: {count: 1, model: T4}}
  maxNodes: 3
)");
  ASSERT_TRUE(out.ok()) << dump(out.errors);
  const NodePool& p = out.config.node_pools.at(0);
  EXPECT_EQ(p.name_prefix, "od-");
  EXPECT_EQ(p.min_nodes, 0);
  EXPECT_EQ(p.initial_nodes, 0);  // minNodes
  EXPECT_EQ(p.spare_nodes, 0);
  EXPECT_EQ(p.capacity, CapacityType::kOnDemand);
  EXPECT_EQ(p.price_micro_per_hour, 0);
  EXPECT_EQ(p.provisioning_delay_ns, 0);
  EXPECT_EQ(p.scale_down_after_ns, 600 * kNsPerSec);
  EXPECT_EQ(*find_label(p.node.labels, kCapacityTypeLabel), "on-demand");
  EXPECT_TRUE(p.provisioner.command.empty());  // the server starts no node of it
  EXPECT_EQ(p.defer_scale_up.after_ns, 0);     // off
  EXPECT_EQ(p.consolidation.after_ns, 0);      // off
  EXPECT_EQ(p.consolidation.interval_ns, 60 * kNsPerSec);
}

TEST(NodePoolKind, Provisioner) {
  auto out = load_pool(R"(
apiVersion: sluice.dev/v1alpha1
kind: NodePool
metadata: {name: od}
spec:
  flavor: p100
  node: {cpu: 8, memory: 64Gi, gpus: {count: 1, model: T4}}
  maxNodes: 3
  provisioner: {command: [/opt/provision, --zone, a], timeout: 20s, retryAfter: 5s, joinTimeout: 3m}
)");
  ASSERT_TRUE(out.ok()) << dump(out.errors);
  const Provisioner& p = out.config.node_pools.at(0).provisioner;
  EXPECT_EQ(p.command, (std::vector<std::string>{"/opt/provision", "--zone", "a"}));
  EXPECT_EQ(p.timeout_ns, 20 * kNsPerSec);
  EXPECT_EQ(p.retry_after_ns, 5 * kNsPerSec);
  EXPECT_EQ(p.join_timeout_ns, 180 * kNsPerSec);
  out = load_pool(R"(
apiVersion: sluice.dev/v1alpha1
kind: NodePool
metadata: {name: od}
spec: {flavor: p100, node: {cpu: 8, memory: 64Gi}, maxNodes: 3, provisioner: {command: [/p]}}
)");
  ASSERT_TRUE(out.ok()) << dump(out.errors);
  EXPECT_EQ(out.config.node_pools.at(0).provisioner.timeout_ns, 60 * kNsPerSec);  // defaults
  EXPECT_EQ(out.config.node_pools.at(0).provisioner.retry_after_ns, 30 * kNsPerSec);
}

// A pool `a` of flavor `flavor` with `rest` after its node line: the flavor's document takes
// lines 1-5, so spec.flavor is line 10 and `rest` starts at line 12.
LoadOutput pool_with(const std::string& rest, const std::string& flavor = "p100") {
  return load_one(std::string(kFlavor) +
                  "apiVersion: sluice.dev/v1alpha1\nkind: NodePool\nmetadata: {name: a}\nspec:\n"
                  "  flavor: " +
                  flavor + "\n  node: {cpu: 8, memory: 64Gi}\n" + rest);
}

TEST(NodePoolKind, AWebhookProvisioner) {
  auto out = pool_with(
      "  maxNodes: 3\n  provisioner:\n    webhook: {url: "
      "\"https://prov.example:8443/v1/nodes?zone=a\", "
      "bearerTokenFile: /etc/prov.token}\n    timeout: 15s\n");
  ASSERT_TRUE(out.ok()) << dump(out.errors);
  const Provisioner& p = out.config.node_pools.at(0).provisioner;
  EXPECT_TRUE(p.command.empty());
  EXPECT_TRUE(p.configured());
  EXPECT_EQ(p.webhook_url, "https://prov.example:8443/v1/nodes?zone=a");
  EXPECT_EQ(p.bearer_token_file, "/etc/prov.token");
  EXPECT_EQ(p.timeout_ns, 15 * kNsPerSec);
  // No port, no path, an IPv6 literal: all read as the HTTP client reads them.
  for (const std::string url : {"http://prov", "http://[::1]:9000/p", "http://127.0.0.1:65535"}) {
    out = pool_with("  maxNodes: 3\n  provisioner: {webhook: {url: '" + url + "'}}\n");
    ASSERT_TRUE(out.ok()) << url << ": " << dump(out.errors);
    EXPECT_EQ(out.config.node_pools.at(0).provisioner.webhook_url, url);
    EXPECT_TRUE(out.config.node_pools.at(0).provisioner.bearer_token_file.empty());
  }
}

TEST(NodePoolKind, ErrorsNameFileLineAndField) {
  auto out = pool_with("  maxNodes: 2\n  capacityType: reserved\n  pricePerHour: cheap\n");
  EXPECT_TRUE(any_contains(out.errors, {"test.yaml:13: spec.capacityType", "on-demand or spot"}))
      << dump(out.errors);
  EXPECT_TRUE(any_contains(out.errors, {"test.yaml:14: spec.pricePerHour", "not a price"}))
      << dump(out.errors);
  out = pool_with("");
  EXPECT_TRUE(any_contains(out.errors, {"test.yaml:10: spec.maxNodes", "required"}))
      << dump(out.errors);
  out = pool_with("  minNodes: 5\n  maxNodes: 2\n");
  EXPECT_TRUE(any_contains(out.errors, {"test.yaml:12: spec.minNodes", "above maxNodes"}))
      << dump(out.errors);
  out = pool_with("  maxNodes: 2\n  initialNodes: 3\n");
  EXPECT_TRUE(any_contains(out.errors, {"test.yaml:13: spec.initialNodes", "not between"}))
      << dump(out.errors);
  out = pool_with("  maxNodes: 2\n", "h100");
  EXPECT_TRUE(any_contains(out.errors, {"test.yaml:10: spec.flavor", "no ResourceFlavor \"h100\""}))
      << dump(out.errors);
  out = pool_with("  maxNodes: 2\n  provisioner: {command: []}\n");
  EXPECT_TRUE(any_contains(out.errors, {"test.yaml:13: spec.provisioner.command", "executable"}))
      << dump(out.errors);
  out = pool_with("  maxNodes: 2\n  provisioner: {command: [p], timeout: 0s}\n");
  EXPECT_TRUE(any_contains(out.errors, {"spec.provisioner.timeout", "above 0"}))
      << dump(out.errors);
  out = pool_with("  maxNodes: 2\n  provisioner: {url: http://x}\n");
  EXPECT_TRUE(any_contains(out.errors, {"spec.provisioner.command", "required"}))
      << dump(out.errors);
  out = pool_with("  maxNodes: 2\n  provisioner: {timeout: 5s}\n");
  EXPECT_TRUE(any_contains(out.errors, {"test.yaml:13: spec.provisioner.command",
                                        "command (a program) or webhook (a URL)"}))
      << dump(out.errors);
  out = pool_with("  maxNodes: 2\n  provisioner: {command: [p], webhook: {url: http://h:1/}}\n");
  EXPECT_TRUE(any_contains(out.errors, {"test.yaml:13: spec.provisioner.webhook", "not both"}))
      << dump(out.errors);
  out = pool_with("  maxNodes: 2\n  provisioner: {webhook: {bearerTokenFile: /t}}\n");
  EXPECT_TRUE(any_contains(out.errors, {"spec.provisioner.webhook.url", "required"}))
      << dump(out.errors);
  out = pool_with("  maxNodes: 2\n  provisioner: {webhook: {url: http://h/, token: x}}\n");
  EXPECT_TRUE(any_contains(out.errors, {"spec.provisioner.webhook.token"})) << dump(out.errors);
  out =
      pool_with("  maxNodes: 2\n  provisioner: {webhook: {url: http://h/, bearerTokenFile: ''}}\n");
  EXPECT_TRUE(
      any_contains(out.errors, {"spec.provisioner.webhook.bearerTokenFile", "must not be empty"}))
      << dump(out.errors);
  for (const auto& [url, why] : std::vector<std::pair<std::string, std::string>>{
           {"ftp://h:21/p", "must be http://HOST:PORT/PATH"},
           {"h:8080/p", "must be http://HOST:PORT/PATH"},
           {"http://:8080/p", "names no host"},
           {"http:///p", "names no host"},
           {"http://h:0/p", "port that is not a number"},
           {"http://h:99999/p", "port that is not a number"},
           {"http://h:x/p", "port that is not a number"},
           {"http://user@h:80/p", "no user info"},
           {"http://h:80/p#frag", "no fragment"},
           {"http://h:80/a b", "a space"}}) {
    out = pool_with("  maxNodes: 2\n  provisioner:\n    webhook: {url: '" + url + "'}\n");
    EXPECT_TRUE(any_contains(out.errors, {"test.yaml:14: spec.provisioner.webhook.url", why}))
        << url << ": " << dump(out.errors);
  }
  out = pool_with("  maxNodes: 2\n  deferScaleUp: {belowPriority: 100, after: 0s}\n");
  EXPECT_TRUE(any_contains(out.errors, {"test.yaml:13: spec.deferScaleUp.after", "above 0"}))
      << dump(out.errors);
  out = pool_with("  maxNodes: 2\n  deferScaleUp: {after: 5m}\n");
  EXPECT_TRUE(any_contains(out.errors, {"spec.deferScaleUp.belowPriority", "required"}))
      << dump(out.errors);
  out = pool_with("  maxNodes: 2\n  consolidation: {interval: 1m}\n");
  EXPECT_TRUE(any_contains(out.errors, {"spec.consolidation.after", "required"}))
      << dump(out.errors);
  out = pool_with("  maxNodes: 2\n  consolidation: {after: 0s}\n");
  EXPECT_TRUE(any_contains(out.errors, {"test.yaml:13: spec.consolidation.after", "above 0"}))
      << dump(out.errors);
  out = pool_with("  maxNodes: 2\n  consolidation: {after: 10m, interval: -1s}\n");
  EXPECT_TRUE(any_contains(out.errors, {"spec.consolidation.interval"})) << dump(out.errors);
  out = pool_with("  maxNodes: 2\n  consolidation: {after: 10m, every: 1m}\n");
  EXPECT_TRUE(any_contains(out.errors, {"spec.consolidation", "every"})) << dump(out.errors);
  out = pool_with("  maxNodes: 2\n  consolidation: 10m\n");
  EXPECT_TRUE(any_contains(out.errors, {"spec.consolidation"})) << dump(out.errors);
  out = pool_with("  maxNodes: 2\n  spot: {meanLifetime: 1h}\n");
  EXPECT_TRUE(any_contains(out.errors, {"test.yaml:13: spec.spot", "only for capacityType: spot"}))
      << dump(out.errors);
}

TEST(NodePoolKind, ALabelAgainstTheFlavorsIsAnError) {
  auto out = load_pool(R"(
apiVersion: sluice.dev/v1alpha1
kind: NodePool
metadata: {name: a}
spec:
  flavor: p100
  node: {cpu: 8, memory: 64Gi, labels: {gpu: v100}}
  maxNodes: 2
)");
  EXPECT_TRUE(any_contains(out.errors, {"spec.flavor", "gpu=v100 contradicts"}))
      << dump(out.errors);
  out = load_pool(R"(
apiVersion: sluice.dev/v1alpha1
kind: NodePool
metadata: {name: a}
spec:
  flavor: p100
  node: {cpu: 8, memory: 64Gi, labels: {sluice.dev/capacity-type: spot}}
  maxNodes: 2
)");
  EXPECT_TRUE(any_contains(out.errors, {"capacity-type=spot contradicts its capacityType"}))
      << dump(out.errors);
}

// The flavor's labels are checked against the pool's own labels as written: one the flavor adds
// first (a) must not hide a contradiction on a later one (zone). The labels were searched
// while the added ones sat unsorted at their end, and zone=b was missed.
TEST(NodePoolKind, AContradictionAfterAnAddedLabelIsFound) {
  auto out = load_one(yaml(R"(
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: zoned}
spec: {nodeLabels: {a: x, zone: a}}
---
apiVersion: sluice.dev/v1alpha1
kind: NodePool
metadata: {name: p}
spec:
  flavor: zoned
  node: {cpu: 8, memory: 64Gi, labels: {zone: b}}
  maxNodes: 2
)"));
  EXPECT_TRUE(any_contains(out.errors, {"zone=b contradicts"})) << dump(out.errors);
}

TEST(NodePoolKind, TwoPoolsOfOneName) {
  auto out = load_pool(R"(
apiVersion: sluice.dev/v1alpha1
kind: NodePool
metadata: {name: a}
spec: {flavor: p100, node: {cpu: 8, memory: 64Gi}, maxNodes: 2}
---
apiVersion: sluice.dev/v1alpha1
kind: NodePool
metadata: {name: a}
spec: {flavor: p100, node: {cpu: 8, memory: 64Gi}, maxNodes: 2}
)");
  EXPECT_TRUE(any_contains(out.errors, {"a second NodePool \"a\""})) << dump(out.errors);
}

// The shipped examples load with the Philly queues they are written for.
TEST(NodePoolKind, PhillyExamplesLoad) {
  const std::string dir = testing_config::source_dir() + "/examples/philly/";
  for (const char* pools : {"autoscale/pool-ondemand.yaml", "autoscale/pool-spot.yaml"}) {
    std::vector<Source> src;
    for (const std::string& f : {dir + "queues-sluice.yaml", dir + pools}) {
      auto s = read_source(f);
      ASSERT_TRUE(s.ok()) << s.error();
      src.push_back(*s);
    }
    auto out = load(src, LoadOptions{});
    ASSERT_TRUE(out.ok()) << pools << dump(out.errors);
    ASSERT_FALSE(out.config.node_pools.empty());
    EXPECT_EQ(out.config.node_pools[0].flavor_id, 0);
    EXPECT_EQ(out.config.node_pools[0].node.gpus.size(), 8u);
    EXPECT_NE(summarize(out.config).find("node pool " + out.config.node_pools.back().name),
              std::string::npos);
  }
  // `sluice check` names each pool.
  std::vector<Source> src;
  for (const char* f : {"queues-sluice.yaml", "autoscale/pool-spot.yaml"})
    src.push_back(*read_source(dir + f));
  const std::string s = summarize(load(src, LoadOptions{}).config);
  EXPECT_NE(s.find("node pool spot (flavor default, spot): 0-128 nodes of 8 GPUs"),
            std::string::npos)
      << s;
}

}  // namespace node_pool_kind_test
}  // namespace sluice
