#include "agent/pod_env.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace sluice::agent {
namespace {

bool has(const std::vector<std::string>& env, const std::string& kv) {
  return std::find(env.begin(), env.end(), kv) != env.end();
}

TEST(AgentPodEnv, LayersAgentJobAndSluiceVariables) {
  proto::Assignment a;
  a.job = 17;
  a.pod = 1;
  a.job_name = "bert";
  a.job_namespace = "nlp";
  a.gang_size = 2;
  a.peers = {{0, "n1", "http://n1:1"}, {1, "n2", "http://n2:1"}};
  a.gpus = {2, 3};
  a.env = {{"LR", "0.1"}, {"PATH", "/job/bin"}, {"SLUICE_NODE", "spoofed"}};
  const char* base[] = {"HOME=/root", "PATH=/usr/bin", "SLUICE_JOIN_TOKEN=secret",
                        "CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7", nullptr};
  auto env =
      compose_pod_env(a, {"n2", "http://127.0.0.1:5000", "/s/work/17-1/.sluice-checkpoint"}, base);
  EXPECT_TRUE(has(env, "HOME=/root"));     // inherited
  EXPECT_TRUE(has(env, "PATH=/job/bin"));  // the job's value wins over the agent's
  EXPECT_TRUE(has(env, "LR=0.1"));
  EXPECT_TRUE(has(env, "CUDA_VISIBLE_DEVICES=2,3"));
  EXPECT_TRUE(has(env, "SLUICE_JOB_ID=17"));
  EXPECT_TRUE(has(env, "SLUICE_JOB_NAME=bert"));
  EXPECT_TRUE(has(env, "SLUICE_NAMESPACE=nlp"));
  EXPECT_TRUE(has(env, "SLUICE_POD_INDEX=1"));
  EXPECT_TRUE(has(env, "SLUICE_GANG_SIZE=2"));
  EXPECT_TRUE(has(env, "SLUICE_PEERS=0=n1,1=n2"));
  EXPECT_TRUE(has(env, "SLUICE_NODE=n2"));  // sluice's value wins over the job's
  EXPECT_TRUE(has(env, "SLUICE_AGENT_URL=http://127.0.0.1:5000"));
  EXPECT_TRUE(has(env, "SLUICE_CHECKPOINT_FILE=/s/work/17-1/.sluice-checkpoint"));
  for (const auto& kv : env) EXPECT_EQ(kv.find("SLUICE_JOIN_TOKEN"), std::string::npos);  // no leak
  EXPECT_TRUE(std::is_sorted(env.begin(), env.end()));
}

TEST(AgentPodEnv, MinimalEnvironmentForAnotherUserKeepsNoAgentSecret) {
  proto::Assignment a;
  a.job = 3;
  a.job_namespace = "nlp";
  a.user = "alice";
  a.env = {{"LR", "0.1"}};
  const char* base[] = {"HOME=/root",
                        "PATH=/root/bin:/usr/bin",
                        "AWS_SECRET_ACCESS_KEY=k",
                        "GITHUB_TOKEN=t",
                        "LANG=C.UTF-8",
                        "LC_ALL=C",
                        "TZ=UTC",
                        "SLUICE_JOIN_TOKEN=secret",
                        nullptr};
  PodContext ctx{"n1", "http://127.0.0.1:1", "/s/work/3-0/.sluice-checkpoint"};
  ctx.minimal = true;
  ctx.home = "/s/work/3-0";
  ctx.user = "sluice-60001";
  auto env = compose_pod_env(a, ctx, base);
  EXPECT_TRUE(has(env, "HOME=/s/work/3-0"));  // its work dir, not the agent's home
  EXPECT_TRUE(has(env, "USER=sluice-60001"));
  EXPECT_TRUE(has(env, "LOGNAME=sluice-60001"));
  EXPECT_TRUE(has(env, std::string("PATH=") + kPodDefaultPath));
  EXPECT_TRUE(has(env, "LANG=C.UTF-8"));  // presentation is kept
  EXPECT_TRUE(has(env, "LC_ALL=C"));
  EXPECT_TRUE(has(env, "TZ=UTC"));
  EXPECT_TRUE(has(env, "LR=0.1"));             // the job's own
  EXPECT_TRUE(has(env, "SLUICE_USER=alice"));  // the submitter
  for (const auto& kv : env) {
    EXPECT_EQ(kv.find("SECRET"), std::string::npos) << kv;  // nothing else of the agent's
    EXPECT_EQ(kv.find("TOKEN"), std::string::npos) << kv;
    EXPECT_EQ(kv.find("/root"), std::string::npos) << kv;
  }
}

// The step directory (`srun` for job steps) goes first on the PATH the job gave, or on the
// standard one.
TEST(PodEnv, StepBinGoesFirstOnPath) {
  proto::Assignment a;
  a.env = {{"PATH", "/opt/bin:/usr/bin"}};
  PodContext ctx{"n1", "http://127.0.0.1:1", "/c"};
  ctx.step_bin = "/s/bin";
  EXPECT_TRUE(has(compose_pod_env(a, ctx, nullptr), "PATH=/s/bin:/opt/bin:/usr/bin"));
  a.env.clear();
  EXPECT_TRUE(has(compose_pod_env(a, ctx, nullptr), std::string("PATH=/s/bin:") + kPodDefaultPath));
  ctx.step_bin.clear();
  for (const auto& kv : compose_pod_env(a, ctx, nullptr)) {
    EXPECT_NE(kv.rfind("PATH=", 0), 0u);
  }
}

}  // namespace
}  // namespace sluice::agent
