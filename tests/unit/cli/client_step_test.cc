// `srun` inside a job (cli/client_step.h): options, the tasks' layout over the job's pods, and
// each task's environment.
#include "cli/client_step.h"

#include <gtest/gtest.h>

namespace sluice::cli {
namespace client_step_test {

TEST(Srun, ReadsItsOptionsAndTheCommand) {
  SrunArgs a;
  ASSERT_FALSE(parse_srun_args({"-n4", "--nodes=2", "python", "train.py", "-n", "1"}, a));
  EXPECT_EQ(a.ntasks, 4);
  EXPECT_EQ(a.nodes, 2);
  EXPECT_EQ(a.command, (std::vector<std::string>{"python", "train.py", "-n", "1"}));
  SrunArgs b;
  ASSERT_FALSE(parse_srun_args({"--batch", "--ntasks-per-node", "2", "--", "-weird"}, b));
  EXPECT_TRUE(b.batch);
  EXPECT_EQ(b.ntasks_per_node, 2);
  EXPECT_EQ(b.command, std::vector<std::string>{"-weird"});
  SrunArgs c;
  EXPECT_EQ(parse_srun_args({"--mpi=pmix", "x"}, c).value_or(""),
            "srun: --mpi=pmix is not an srun option sluice knows");
  EXPECT_EQ(parse_srun_args({"-n", "0", "x"}, c).value_or(""),
            "srun: -n 0: expected a positive whole number");
  EXPECT_EQ(parse_srun_args({"-N"}, c).value_or(""), "srun: -N needs a value");
  SrunArgs d;
  EXPECT_NE(parse_srun_args({"-n", "2"}, d).value_or("").find("no command"), std::string::npos);
}

// -N 2 --ntasks-per-node 2: four tasks, two a node, in blocks (Slurm's default distribution).
TEST(Srun, LaysTasksOutInBlocks) {
  const EnvMap job = {{"SLUICE_GANG_SIZE", "2"},
                      {"SLURM_NNODES", "2"},
                      {"SLURM_NTASKS_PER_NODE", "2"},
                      {"SLURM_NTASKS", "4"}};
  SrunArgs all;
  all.command = {"x"};
  StepLayout l;
  ASSERT_FALSE(step_layout(job, all, l));
  EXPECT_EQ(l.nodes, 2);
  EXPECT_EQ(l.ntasks, 4);
  EXPECT_EQ(l.first, (std::vector<int>{0, 2}));
  EXPECT_EQ(l.count, (std::vector<int>{2, 2}));
  SrunArgs three = all;  // -n 3: two on the first node, one on the second
  three.ntasks = 3;
  ASSERT_FALSE(step_layout(job, three, l));
  EXPECT_EQ(l.count, (std::vector<int>{2, 1}));
  SrunArgs one = all;  // -n 1: the first node only
  one.ntasks = 1;
  ASSERT_FALSE(step_layout(job, one, l));
  EXPECT_EQ(l.nodes, 1);
  EXPECT_EQ(l.count, std::vector<int>{1});
  SrunArgs first = all;  // -N 1: the first node's two tasks
  first.nodes = 1;
  ASSERT_FALSE(step_layout(job, first, l));
  EXPECT_EQ(l.ntasks, 2);
  SrunArgs big = all;
  big.ntasks = 5;
  EXPECT_NE(step_layout(job, big, l).value_or("").find("the job has 4 task(s) on 2 node(s)"),
            std::string::npos);
  SrunArgs wide = all;
  wide.nodes = 3;
  EXPECT_EQ(step_layout(job, wide, l).value_or(""), "srun: -N 3: the job has 2 node(s)");
}

// A task on the second node: the batch pod's exported variables, its own node's GPUs and
// place, and its rank in the step.
TEST(Srun, TaskEnvironment) {
  const EnvMap leader = {{"LR", "0.1"},
                         {"CUDA_VISIBLE_DEVICES", "0,1"},
                         {"SLURM_NODEID", "0"},
                         {"SLUICE_POD_INDEX", "0"},
                         {"SLUICE_STEP_DIR", "/s"},
                         {"RANK", "0"}};
  const EnvMap own = {{"LR", "stale"},
                      {"CUDA_VISIBLE_DEVICES", "2,3"},
                      {"SLURM_NODEID", "1"},
                      {"SLUICE_POD_INDEX", "1"}};
  StepLayout l;
  l.nodes = 2;
  l.ntasks = 4;
  l.first = {0, 2};
  l.count = {2, 2};
  const EnvMap e = task_env(leader, own, l, 1, 1, 5);
  EXPECT_EQ(e.at("LR"), "0.1");
  EXPECT_EQ(e.at("CUDA_VISIBLE_DEVICES"), "2,3");
  EXPECT_EQ(e.at("SLURM_NODEID"), "1");
  EXPECT_EQ(e.at("SLUICE_POD_INDEX"), "1");
  EXPECT_EQ(e.count("SLUICE_STEP_DIR"), 0u);
  EXPECT_EQ(e.at("SLURM_PROCID"), "3");
  EXPECT_EQ(e.at("SLURM_LOCALID"), "1");
  EXPECT_EQ(e.at("SLURM_STEP_ID"), "5");
  EXPECT_EQ(e.at("SLURM_NTASKS"), "4");
  EXPECT_EQ(e.at("RANK"), "3");
  EXPECT_EQ(e.at("LOCAL_RANK"), "1");
  EXPECT_EQ(e.at("WORLD_SIZE"), "4");
}

TEST(Srun, StepSpecRoundTrips) {
  StepLayout l;
  l.nodes = 2;
  l.ntasks = 3;
  l.first = {0, 2};
  l.count = {2, 1};
  const auto doc = step_spec({"echo", "hi"}, {{"A", "1"}}, "/w", l);
  std::vector<std::string> cmd;
  EnvMap env;
  std::string cwd;
  StepLayout back;
  ASSERT_TRUE(read_step_spec(doc, cmd, env, cwd, back));
  EXPECT_EQ(cmd, (std::vector<std::string>{"echo", "hi"}));
  EXPECT_EQ(env.at("A"), "1");
  EXPECT_EQ(cwd, "/w");
  EXPECT_EQ(back.count, l.count);
  EXPECT_FALSE(read_step_spec(nlohmann::json{{"command", "x"}}, cmd, env, cwd, back));
}

}  // namespace client_step_test
}  // namespace sluice::cli
