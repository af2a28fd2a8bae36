// Right-sizing (server/state_right_size.cc): a job with spec.rightSize: auto that recurs (same
// namespace, name, user, image) with a measured history goes to the smallest GPU model or MIG
// slice its peak fits with 20% headroom; a right-sized run that fails is retried once as
// requested; a job that did not opt in is never moved; the decision survives a restart.
#include <gtest/gtest.h>

#include "core/model/right_size.h"
#include "server/state.h"
#include "server/state_export.h"
#include "state_fixture.h"

namespace sluice::server {
namespace state_right_size_test {  // a namespace of its own: the unit tests build in unity batches
namespace {

using namespace testing_state;  // NOLINT(google-build-using-namespace)

// Two nodes of one GPU each, an 80 GiB H100 and a 24 GiB L4; a third holds an H100 cut into
// two 1g.10gb slices, which queue `sliced` covers and queue `cq` does not.
const char* kModels = R"(
apiVersion: sluice.dev/v1alpha1
kind: Cluster
metadata: {name: t}
spec:
  nodes:
  - {name: big, cpu: 16, memory: 64Gi, gpus: {count: 1, model: H100, memory: 80Gi}}
  - {name: small, cpu: 16, memory: 64Gi, gpus: {count: 1, model: L4, memory: 24Gi}}
  - name: sliced
    cpu: 16
    memory: 64Gi
    gpus:
    - {model: H100, memory: 80Gi, mig: [1g.10gb, 1g.10gb]}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: any}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: cq}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu, cpu, memory]
    flavors:
    - name: any
      resources:
      - {name: nvidia.com/gpu, nominalQuota: 4}
      - {name: cpu, nominalQuota: 32}
      - {name: memory, nominalQuota: 128Gi}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: sliced}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu, nvidia.com/mig-1g.10gb, cpu, memory]
    flavors:
    - name: any
      resources:
      - {name: nvidia.com/gpu, nominalQuota: 4}
      - {name: nvidia.com/mig-1g.10gb, nominalQuota: 2}
      - {name: cpu, nominalQuota: 32}
      - {name: memory, nominalQuota: 128Gi}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: q, namespace: team}
spec: {clusterQueue: cq}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: s, namespace: team}
spec: {clusterQueue: sliced}
)";

std::shared_ptr<const Config> models_config() {
  auto lc = load_server_config({Source{"models.yaml", kModels}});
  EXPECT_TRUE(lc.ok()) << (lc.ok() ? "" : lc.error());
  return lc->config;
}

// A one-GPU H100 job named `name` in queue `queue`; `extra`: more spec fields.
std::string train(const std::string& name, const std::string& extra,
                  const std::string& queue = "q") {
  return "apiVersion: sluice.dev/v1alpha1\nkind: Job\nmetadata: {name: " + name +
         ", namespace: team}\nspec: {queue: " + queue +
         ", gpus: 1, gpuModels: [H100], cpu: 1, memory: 1Gi, command: [sleep, '1']" +
         (extra.empty() ? "" : ", " + extra) + "}\n";
}

// The agents of `big` (an 80 GiB H100) and `small` (a 24 GiB L4) register and sync.
void join_models(ServerState& st, TimeNs now) {
  for (const auto& [node, model, mib] :
       {std::tuple{"big", "H100", 81920}, std::tuple{"small", "L4", 24576}}) {
    auto r = reg(node, 1, model);
    r.gpus[0].memory_mib = mib;
    ASSERT_EQ(join(st, r, now).status, 200);
    proto::SyncRequest s;
    s.agent_id = std::string("agent-") + node;
    sync_as(st, node, s, now);
  }
}

proto::SyncResponse sync_node(ServerState& st, const std::string& node, proto::SyncRequest s,
                              TimeNs now) {
  s.agent_id = "agent-" + node;
  EXPECT_EQ(sync_as(st, node, s, now).status, 200);
  return st.take_outbox(node);
}

JobId submit_to(ServerState& st, const Config& cfg, const std::string& yaml, TimeNs& now) {
  auto out = st.submit(jobs(cfg, yaml), now += kS);
  EXPECT_EQ(out.status, 202) << out.error;
  return out.ids.empty() ? 0 : out.ids[0];
}

// One run of job `id`: a cycle places it, its pod starts, reports a peak of `peak_mib` and
// exits with `code`. The node it ran on ("": not placed).
std::string run_once(ServerState& st, JobId id, int64_t peak_mib, int code, TimeNs& now) {
  st.cycle(now += kS);
  st.release_staged();
  for (const char* node : {"big", "small"}) {
    const auto out = sync_node(st, node, {}, now);
    if (out.assign.empty()) continue;
    const uint64_t r = out.assign[0].run;
    proto::SyncRequest s;
    s.started = {{id, 0, r}};
    s.gpu_use = {{id, 0, r, 1, peak_mib, peak_mib, 50}};
    proto::PodExit e = pod_exit(id, code);
    e.run = r;
    s.exits = {e};
    sync_node(st, node, s, now += kS);
    st.cycle(now += kS);  // a retry's requeue completes with the next pass
    return node;
  }
  return "";
}

struct RightSizeTest : ::testing::Test {
  std::shared_ptr<const Config> cfg = models_config();
  ServerState st{cfg, nullptr, ServerOptions{}};
  TimeNs now = 1 * kS;

  void SetUp() override { join_models(st, now); }
  JobId submit(const std::string& yaml) { return submit_to(st, *cfg, yaml, now); }
  std::string run(JobId id, int64_t peak_mib, int code) {
    return run_once(st, id, peak_mib, code, now);
  }
};

TEST_F(RightSizeTest, SecondRunOfARecurringJobGoesToTheSmallestModelItsPeakFits) {
  const JobId first = submit(train("train", "rightSize: auto"));
  EXPECT_EQ(st.find(first)->right_size, nullptr);  // no history yet
  EXPECT_EQ(run(first, 5 * 1024, 0), "big");
  ASSERT_EQ(st.find(first)->state, JobState::kSucceeded);

  const JobId second = submit(train("train", "rightSize: auto"));
  const JobRecord* r = st.find(second);
  ASSERT_NE(r->right_size, nullptr);
  EXPECT_EQ(r->right_size->shape, "L4");  // 5 GiB + 20% < 24 GiB < 80 GiB; no MIG in queue cq
  EXPECT_EQ(r->right_size->runs, 1);
  EXPECT_EQ(r->right_size->peak_mib, 5 * 1024);
  EXPECT_EQ(r->job.allowed_models, std::vector<std::string>{"H100"});  // the request as given
  // Running on the L4, `sluice plan`'s export has it as the L4 job its admission holds.
  st.cycle(now += kS);
  const std::string exported = export_state(st, kModels, now, "test");
  EXPECT_NE(exported.find("gpuModels: [L4]"), std::string::npos) << exported;
  EXPECT_NE(exported.find("rightSize: auto"), std::string::npos) << exported;
  EXPECT_EQ(run(second, 5 * 1024, 0), "small");
  EXPECT_EQ(st.find(second)->state, JobState::kSucceeded);
  EXPECT_FALSE(st.find(second)->right_size->retried);
}

TEST_F(RightSizeTest, ARightSizedRunThatFailsIsRetriedWholeOnce) {
  run(submit(train("train", "rightSize: auto")), 5 * 1024, 0);
  const JobId id = submit(train("train", "rightSize: auto"));
  ASSERT_NE(st.find(id)->right_size, nullptr);
  // Out of memory on the L4: the job is not failed, it queues again as requested (and the
  // next cycle admits it on the H100 at once).
  EXPECT_EQ(run(id, 24 * 1024, 1), "small");
  const JobRecord* r = st.find(id);
  EXPECT_EQ(r->state, JobState::kRunning) << r->reason;
  EXPECT_TRUE(r->right_size->retried);
  ASSERT_EQ(r->past_runs.size(), 1u);
  EXPECT_NE(r->past_runs[0].why.find("retried whole"), std::string::npos) << r->past_runs[0].why;
  // Whole: on the H100, where a failure now fails the job as any other would.
  EXPECT_EQ(run(id, 30 * 1024, 2), "big");
  EXPECT_EQ(st.find(id)->state, JobState::kFailed);
  EXPECT_EQ(st.find(id)->exit_code, 2);
  EXPECT_EQ(st.find(id)->attempts, 2);
}

TEST_F(RightSizeTest, NeverWithoutOptInNorForAnotherUserImageOrFailedHistory) {
  run(submit(train("train", "rightSize: auto")), 5 * 1024, 0);
  // Did not opt in (no field, or off): placed as requested.
  EXPECT_EQ(st.find(submit(train("train", "")))->right_size, nullptr);
  EXPECT_EQ(st.find(submit(train("train", "rightSize: 'off'")))->right_size, nullptr);
  // Another name: no history.
  EXPECT_EQ(st.find(submit(train("other", "rightSize: auto")))->right_size, nullptr);
  // A history of failures only does not count.
  run(submit(train("flaky", "rightSize: auto")), 5 * 1024, 1);
  EXPECT_EQ(st.find(submit(train("flaky", "rightSize: auto")))->right_size, nullptr);
  // A peak that fits nothing smaller: 21 GiB + 20% > 24 GiB.
  run(submit(train("large", "rightSize: auto")), 21 * 1024, 0);
  EXPECT_EQ(st.find(submit(train("large", "rightSize: auto")))->right_size, nullptr);
}

TEST_F(RightSizeTest, AMigSliceWhereTheQueueCoversIt) {
  run(submit(train("tiny", "rightSize: auto", "s")), 4 * 1024, 0);
  const JobId id = submit(train("tiny", "rightSize: auto", "s"));
  const JobRecord* r = st.find(id);
  ASSERT_NE(r->right_size, nullptr);
  EXPECT_EQ(r->right_size->shape, "1g.10gb");  // 4 GiB + 20% fits 10 GiB
  EXPECT_TRUE(r->right_size->mig);
  // The scheduler holds it as one slice, not a GPU.
  const auto* p = st.scheduler().find_pending(id);
  ASSERT_NE(p, nullptr);
  const auto mig = cfg->resources.find("nvidia.com/mig-1g.10gb");
  ASSERT_TRUE(mig);
  EXPECT_EQ(p->job.pod_sets[0].requests[*mig], 1000);
  EXPECT_EQ(p->job.pod_sets[0].requests[kGpu], 0);
  // The JobView says so.
  const auto view = st.job_view(*r, now);
  EXPECT_EQ(view["right_size"]["shape"], "1g.10gb") << view.dump();
  EXPECT_EQ(view["right_size"]["runs"], 1);
}

TEST(RightSizeStore, TheDecisionSurvivesARestart) {
  const auto dir = fresh_dir("right-size");
  auto cfg = models_config();
  TimeNs now = 1 * kS;
  JobId id = 0;
  {
    auto store = SqliteStore::open(dir.string());
    ASSERT_TRUE(store.ok()) << store.error();
    (*store)->start();
    ServerState st(cfg, store->get(), ServerOptions{});
    join_models(st, now);
    run_once(st, submit_to(st, *cfg, train("train", "rightSize: auto"), now), 5 * 1024, 0, now);
    id = submit_to(st, *cfg, train("train", "rightSize: auto"), now);
    ASSERT_TRUE((*store)->wait(st.cycle(now += kS)));  // admitted on the L4
    ASSERT_EQ(st.find(id)->state, JobState::kRunning);
  }
  auto back = restart(dir, cfg, now + kS);
  ASSERT_NE(back.st, nullptr);
  EXPECT_TRUE(back.problems.empty()) << back.problems.front();
  const JobRecord* r = back.st->find(id);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->state, JobState::kRunning);  // restored on the L4 as right-sized
  ASSERT_NE(r->right_size, nullptr);
  EXPECT_EQ(r->right_size->shape, "L4");
  EXPECT_EQ(r->right_size->runs, 1);
  EXPECT_EQ(r->right_size->peak_mib, 5 * 1024);
  EXPECT_FALSE(r->right_size->retried);
  EXPECT_TRUE(r->job.right_size);
  EXPECT_EQ(r->job.allowed_models, std::vector<std::string>{"H100"});
  std::filesystem::remove_all(dir);
}

TEST(RightSizeValue, BadModesAreRefusedWithTheField) {
  auto cfg = models_config();
  auto out = parse_jobs(Source{"j.yaml", train("x", "rightSize: maybe")}, *cfg);
  ASSERT_FALSE(out.errors.empty());
  EXPECT_NE(out.errors[0].find("spec.rightSize"), std::string::npos) << out.errors[0];
  EXPECT_NE(out.errors[0].find("want auto or off"), std::string::npos) << out.errors[0];
  // The annotation on a Kubernetes kind.
  const std::string pod =
      "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: team, labels: "
      "{kueue.x-k8s.io/queue-name: q}, annotations: {sluice.dev/right-size: auto}}\n"
      "spec: {containers: [{name: c, image: busybox, resources: {limits: "
      "{nvidia.com/gpu: 1}}}]}\n";
  auto ok = parse_jobs(Source{"p.yaml", pod}, *cfg);
  ASSERT_TRUE(ok.errors.empty()) << ok.errors.front();
  ASSERT_EQ(ok.jobs.size(), 1u);
  EXPECT_TRUE(ok.jobs[0].right_size);
}

}  // namespace
}  // namespace state_right_size_test
}  // namespace sluice::server
