// What each pod of a run is told (server/pod_launch.h): ranks, the torchrun env, MPI's
// hostfile, completion indexes, per-pod-set commands, master ports.
#include "server/pod_launch.h"

#include <gtest/gtest.h>

namespace sluice::server {
namespace {

// A job of two pod sets (1 master, 2 workers) placed with the workers first, as a placer may.
struct Fixture {
  Job job;
  Admission admission;
  std::vector<proto::PeerPod> peers;
  Fixture(GangEnv env) {
    job.id = 7;
    job.exec_mut().command = {"python", "train.py"};
    job.exec_mut().env = {{"A", "1"}, {"MASTER_PORT", "1234"}};
    job.exec_mut().gang_env = env;
    PodSet master, worker;
    master.name = env == GangEnv::kMpi ? "launcher" : "master";
    master.exec_mut().command =
        env == GangEnv::kMpi ? std::vector<std::string>{"mpirun"} : std::vector<std::string>{};
    worker.name = "worker";
    worker.count = 2;
    worker.exec_mut().env = {{"A", "2"}};
    job.pod_sets = {master, worker};
    // placement order: worker 1, master, worker 0
    for (auto [set, index] : {std::pair{1, 1}, std::pair{0, 0}, std::pair{1, 0}}) {
      PodPlacement pp;
      pp.pod_set = set;
      pp.pod_index = index;
      admission.placement.pods.push_back(pp);
    }
    peers = {{0, "n0", "http://10.0.0.1:7070"},
             {1, "n1", "http://10.0.0.2:7070"},
             {2, "n2", "http://[fd00::3]:7070"}};
  }
  proto::Assignment pod(size_t i, int32_t completion = -1) {
    proto::Assignment as;
    pod_command_env(job, admission, i, peers, 29507, completion, as);
    return as;
  }
};

TEST(PodLaunch, RanksFollowPodSetsNotPlacementOrder) {
  Fixture f(GangEnv::kTorch);
  EXPECT_EQ(pod_rank(f.admission, 0), 2);  // worker 1
  EXPECT_EQ(pod_rank(f.admission, 1), 0);  // master
  EXPECT_EQ(pod_rank(f.admission, 2), 1);  // worker 0
}

// A Slurm script reads its tasks: each pod is a task (SLURM_PROCID its rank), the nodes in rank
// order without repeats, its pod set's CPUs, the directory it was submitted from.
TEST(PodLaunch, SlurmTaskVariables) {
  Fixture f(GangEnv::kNone);
  f.peers[2].node = "n1";  // worker 0 shares master's node
  f.job.exec_mut().working_dir = "/home/u/proj";
  f.job.pod_sets[1].requests[kCpu] = 4000;
  const auto w1 = f.pod(0);  // worker 1: rank 2, on n0
  EXPECT_EQ(w1.env.at("SLURM_NTASKS"), "3");
  EXPECT_EQ(w1.env.at("SLURM_PROCID"), "2");
  EXPECT_EQ(w1.env.at("SLURM_NNODES"), "2");
  EXPECT_EQ(w1.env.at("SLURM_NODELIST"), "n1,n0");  // rank 0 and 1 on n1, rank 2 on n0
  EXPECT_EQ(w1.env.at("SLURM_NODEID"), "1");
  EXPECT_EQ(w1.env.at("SLURM_CPUS_PER_TASK"), "4");
  EXPECT_EQ(w1.env.at("SLURM_SUBMIT_DIR"), "/home/u/proj");
  const auto master = f.pod(1);
  EXPECT_EQ(master.env.at("SLURM_PROCID"), "0");
  EXPECT_EQ(master.env.at("SLURM_NODEID"), "0");
  EXPECT_EQ(master.env.count("SLURM_CPUS_PER_TASK"), 0u);  // no whole CPU asked for
}

TEST(PodLaunch, TorchEnvInEveryPodTheJobsOwnWins) {
  Fixture f(GangEnv::kTorch);
  for (size_t i = 0; i < 3; ++i) {
    const auto as = f.pod(i);
    EXPECT_EQ(as.env.at("MASTER_ADDR"), "10.0.0.2");  // the master's node (placement pod 1)
    EXPECT_EQ(as.env.at("MASTER_PORT"), "1234");      // the job set it: kept
    EXPECT_EQ(as.env.at("PET_MASTER_PORT"), "29507");
    EXPECT_EQ(as.env.at("WORLD_SIZE"), "3");
    EXPECT_EQ(as.env.at("PET_NNODES"), "3");
    EXPECT_EQ(as.env.at("RANK"), std::to_string(pod_rank(f.admission, i)));
    EXPECT_EQ(as.env.at("NODE_RANK"), as.env.at("RANK"));
    EXPECT_EQ(as.env.at("LOCAL_RANK"), "0");
    EXPECT_EQ(as.command, (std::vector<std::string>{"python", "train.py"}));
    EXPECT_FALSE(as.env.count("JOB_COMPLETION_INDEX"));
  }
  EXPECT_EQ(f.pod(0).env.at("A"), "2");  // a worker: its pod set's env on top of the job's
  EXPECT_EQ(f.pod(1).env.at("A"), "1");  // the master
}

TEST(PodLaunch, MpiLauncherGetsItsCommandAndTheWorkersHostfile) {
  Fixture f(GangEnv::kMpi);
  const auto launcher = f.pod(1);
  EXPECT_EQ(launcher.command, (std::vector<std::string>{"mpirun"}));
  EXPECT_EQ(launcher.env.at("K_MPI_JOB_ROLE"), "launcher");
  EXPECT_EQ(launcher.env.at("SLUICE_HOSTFILE"), "10.0.0.1 slots=1\nfd00::3 slots=1\n");
  EXPECT_EQ(f.pod(0).env.at("K_MPI_JOB_ROLE"), "worker");
  EXPECT_EQ(f.pod(0).command, (std::vector<std::string>{"python", "train.py"}));
}

TEST(PodLaunch, NoGangEnvUnlessAsked) {
  Fixture f(GangEnv::kNone);
  const auto as = f.pod(0);
  EXPECT_FALSE(as.env.count("RANK"));
  EXPECT_FALSE(as.env.count("MASTER_ADDR"));
  EXPECT_EQ(as.env.at("MASTER_PORT"), "1234");  // only the job's own
}

TEST(PodLaunch, CompletionIndexes) {
  Fixture f(GangEnv::kNone);
  EXPECT_EQ(f.pod(0, 4).env.at("JOB_COMPLETION_INDEX"), "4");  // an Indexed Job's run
  // A JobSet's Indexed child Jobs of 1 pod each: the index within the child job.
  f.job.pod_sets[1].indexed_group = 1;
  EXPECT_EQ(f.pod(0).env.at("JOB_COMPLETION_INDEX"), "0");
  f.job.pod_sets[1].indexed_group = 2;
  EXPECT_EQ(f.pod(0).env.at("JOB_COMPLETION_INDEX"), "1");
  EXPECT_FALSE(f.pod(1).env.count("JOB_COMPLETION_INDEX"));  // the master's set is not indexed
}

TEST(PodLaunch, AddressHostAndMasterPorts) {
  EXPECT_EQ(address_host("http://10.0.0.5:7070"), "10.0.0.5");
  EXPECT_EQ(address_host("https://node-3.example:443/x"), "node-3.example");
  EXPECT_EQ(address_host("http://[::1]:80"), "::1");
  EXPECT_EQ(address_host("host"), "host");
  // From the job id, skipping ports other gangs use on the same node.
  EXPECT_EQ(MasterPorts::pick(7, {}), 29507);
  EXPECT_EQ(MasterPorts::pick(7, {29507, 29508}), 29509);
  EXPECT_EQ(MasterPorts::pick(2000 + 1999, {29500 + 1999}), 29500);  // wraps within the range
}

}  // namespace
}  // namespace sluice::server

namespace sluice::server {
namespace {

TEST(PodLaunch, SlurmArrayEnvAndOutputPatterns) {
  Job job;
  job.id = 42;
  job.name = "sweep";
  job.exec_mut().user = "alice";
  job.exec_mut().array = "0-15:4%2";
  job.exec_mut().array_job = 40;
  job.exec_mut().array_task = 8;
  job.exec_mut().array_throttle = 2;
  job.exec_mut().output = "out-%A_%a.txt";
  job.exec_mut().error = "%x-%j.err";
  job.pod_sets.push_back(PodSet{});
  Admission a;
  a.placement.pods.push_back(PodPlacement{});
  proto::Assignment as;
  pod_command_env(job, a, 0, {}, 0, -1, as);
  EXPECT_EQ(as.env["SLURM_JOB_ID"], "42");
  EXPECT_EQ(as.env["SLURM_ARRAY_JOB_ID"], "40");
  EXPECT_EQ(as.env["SLURM_ARRAY_TASK_ID"], "8");
  EXPECT_EQ(as.env["SLUICE_ARRAY_TASK_ID"], "8");
  EXPECT_EQ(as.env["SLURM_ARRAY_TASK_COUNT"], "4");  // 0, 4, 8, 12
  EXPECT_EQ(as.env["SLURM_ARRAY_TASK_MAX"], "12");
  EXPECT_EQ(as.output_path, "out-40_8.txt");
  EXPECT_EQ(as.error_path, "sweep-42.err");
  EXPECT_EQ(expand_file_pattern("%u/%%j/%q", job), "alice/%j/%q");
  job.exec_mut().array_task = -1;  // not an array: %A is the job, %a is 0
  EXPECT_EQ(expand_file_pattern("slurm-%A_%a.out", job), "slurm-42_0.out");
  // %n the pod's node in the job, %t its rank: a file per pod.
  EXPECT_EQ(expand_file_pattern("o-%j.%n.%t", job, 1, 3), "o-42.1.3");
  job.exec_mut().output = "per-%t.out";
  job.exec_mut().error = "";
  a.placement.pods.push_back(PodPlacement{1, 0, 1, {}});
  proto::Assignment second;
  pod_command_env(job, a, 1, {{0, "n0", ""}, {1, "n1", ""}}, 0, -1, second);
  EXPECT_EQ(second.output_path, "per-1.out");
  EXPECT_EQ(second.env["SLURM_NODEID"], "1");
}

}  // namespace
}  // namespace sluice::server
