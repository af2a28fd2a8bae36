#pragma once
// What the ServerState tests share (state_test.cc, state_gates_test.cc): a two-node
// configuration, job documents, agents that register and sync, a store directory.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <set>

#include "config/loader.h"
#include "server/server.h"
#include "server/sqlite_store.h"
#include "server/state.h"

namespace sluice::server::testing_state {

inline constexpr TimeNs kS = kNsPerSec;

inline const char* kConfig = R"(
apiVersion: sluice.dev/v1alpha1
kind: Cluster
metadata: {name: t}
spec:
  nodeGroups:
  - {namePrefix: n, count: 2, cpu: 16, memory: 64Gi, gpus: {count: 4, model: H100}}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: h100}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: WorkloadPriorityClass
metadata: {name: low}
value: 1
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: WorkloadPriorityClass
metadata: {name: high}
value: 100
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: cq}
spec:
  namespaceSelector: {}
  preemption: {withinClusterQueue: LowerPriority}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu, cpu, memory]
    flavors:
    - name: h100
      resources:
      - {name: nvidia.com/gpu, nominalQuota: 8}
      - {name: cpu, nominalQuota: 32}
      - {name: memory, nominalQuota: 128Gi}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: q, namespace: team}
spec: {clusterQueue: cq}
)";

inline std::shared_ptr<const Config> config() {
  auto lc = load_server_config({Source{"test.yaml", kConfig}});
  EXPECT_TRUE(lc.ok()) << (lc.ok() ? "" : lc.error());
  return lc->config;
}

inline std::vector<Job> jobs(const Config& cfg, const std::string& yaml) {
  auto out = parse_jobs(Source{"jobs.yaml", yaml}, cfg);
  EXPECT_TRUE(out.errors.empty()) << (out.errors.empty() ? "" : out.errors.front());
  return out.jobs;
}

inline std::string job_yaml(const std::string& name, int pods, int gpus,
                            const std::string& prio = "low", const std::string& grace = "0s") {
  return "apiVersion: sluice.dev/v1alpha1\nkind: Job\nmetadata: {name: " + name +
         ", namespace: team}\nspec: {queue: q, pods: " + std::to_string(pods) +
         ", gpus: " + std::to_string(gpus) + ", cpu: 1, memory: 1Gi, priorityClassName: " + prio +
         ", checkpointGrace: " + grace + ", command: [sleep, '100']}\n";
}

inline proto::RegisterRequest reg(const std::string& node, int gpus = 4,
                                  const std::string& model = "H100") {
  proto::RegisterRequest r;
  r.node = node;
  r.address = "http://127.0.0.1:1";
  r.agent_id = "agent-" + node;
  r.credential = "credential-of-node-" + node + "-0123456789abcdef";
  for (int i = 0; i < gpus; ++i) r.gpus.push_back({i, model, 81920, 0, {}, false, ""});
  return r;
}

// The agent of `r.node` registers with its credential (no join token on the server).
inline ServerState::RegisterOutcome join(ServerState& st, const proto::RegisterRequest& r,
                                         TimeNs now) {
  return st.register_agent(r, r.credential, "", now);
}

inline ServerState::SyncOutcome sync_as(ServerState& st, const std::string& node,
                                        const proto::SyncRequest& s, TimeNs now) {
  return st.sync_reports(node, reg(node).credential, s, now);
}

// A one-pod job of `gpus` GPUs with more spec fields ("hold: true, dependency: afterok:1").
inline std::string job_yaml_with(const std::string& name, int gpus, const std::string& extra) {
  std::string y = job_yaml(name, 1, gpus);
  y.insert(y.rfind('}'), ", " + extra);
  return y;
}

// Registers node n0 and reports its first (empty) sync; returns the request, to fill in later.
inline proto::SyncRequest join_n0(ServerState& st) {
  join(st, reg("n0"), 0);
  proto::SyncRequest s;
  s.agent_id = "agent-n0";
  sync_as(st, "n0", s, 0);
  return s;
}

// Pod 0 of `job` exited with `code`.
inline proto::PodExit pod_exit(JobId job, int code = 0) {
  proto::PodExit e;
  e.job = job;
  e.pod = 0;
  e.reason = "exited";
  e.exit_code = code;
  return e;
}

// An empty directory for a store, named after the test and the process.
inline std::filesystem::path fresh_dir(const std::string& tag) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("sluice-state-" + tag + "-test-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  return dir;
}

// A server started again on the store in `dir`, as after a crash: the store, and the state
// recovered from it at `now` with what recover() reported.
struct Restarted {
  std::unique_ptr<SqliteStore> store;
  std::unique_ptr<ServerState> st;
  std::vector<std::string> problems;
};
inline Restarted restart(const std::filesystem::path& dir, std::shared_ptr<const Config> cfg,
                         TimeNs now) {
  Restarted out;
  auto store = SqliteStore::open(dir.string());
  EXPECT_TRUE(store.ok()) << (store.ok() ? "" : store.error());
  if (!store.ok()) return out;
  out.store = std::move(*store);
  auto stored = out.store->load_jobs();
  EXPECT_TRUE(stored.ok());
  out.st = std::make_unique<ServerState>(std::move(cfg), out.store.get(), ServerOptions{});
  if (stored.ok()) out.problems = out.st->recover(*stored, now);
  return out;
}

struct ServerStateTest : ::testing::Test {
  std::shared_ptr<const Config> cfg = config();
  ServerState st{cfg, nullptr, ServerOptions{}};
  void up(TimeNs now) {
    ASSERT_EQ(join(st, reg("n0"), now).status, 200);
    ASSERT_EQ(join(st, reg("n1"), now).status, 200);
    proto::SyncRequest s;
    s.agent_id = "agent-n0";
    sync_as(st, "n0", s, now);
    s.agent_id = "agent-n1";
    sync_as(st, "n1", s, now);
  }
  // Submits the jobs of `yaml`, expecting them accepted: the first one's id.
  JobId submit(const std::string& yaml, TimeNs now) {
    auto out = st.submit(jobs(*cfg, yaml), now);
    EXPECT_EQ(out.status, 202) << out.error;
    return out.ids.empty() ? 0 : out.ids[0];
  }
  proto::SyncResponse sync(const std::string& node, proto::SyncRequest s, TimeNs now) {
    s.agent_id = "agent-" + node;
    EXPECT_EQ(sync_as(st, node, s, now).status, 200);
    return st.take_outbox(node);
  }
};

}  // namespace sluice::server::testing_state
