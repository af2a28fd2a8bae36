#include "cli/client_run.h"

#include <gtest/gtest.h>

#include "config/loader.h"

namespace sluice::cli {
namespace {

using nlohmann::json;

RunArgs train_args() {
  RunArgs a;
  a.queue = "train";
  a.namespace_ = "nlp";
  a.gpus = 8;
  a.gang = 2;
  a.cpu = "32";
  a.memory = "256Gi";
  a.priority_class = "urgent";
  a.walltime = "2h";
  a.env = {"NCCL_DEBUG=WARN", "EMPTY="};
  a.command = {"torchrun", "--nnodes=2", "train.py", "--lr", "3e-4"};
  return a;
}

TEST(ClientRun, BuildsTheShorthandJobDocument) {
  auto doc = build_run_job(train_args(), "k3x9a");
  ASSERT_TRUE(doc.ok) << doc.failure.message;
  EXPECT_EQ(doc.value, json::parse(R"({
    "apiVersion": "sluice.dev/v1alpha1", "kind": "Job",
    "metadata": {"name": "train-py-k3x9a", "namespace": "nlp"},
    "spec": {"queue": "train", "pods": 2, "gpus": 8, "cpu": "32", "memory": "256Gi",
             "priorityClassName": "urgent", "walltime": "7200s",
             "command": ["torchrun", "--nnodes=2", "train.py", "--lr", "3e-4"],
             "env": {"NCCL_DEBUG": "WARN", "EMPTY": ""}, "distributedEnv": "torch"}})"));
}

TEST(ClientRun, FractionImpliesOneGpuAndFlagsAreExplicit) {
  RunArgs a;
  a.queue = "notebooks";
  a.gpu_fraction = "500m";
  a.interactive = true;
  a.no_preemptible = true;
  a.no_spot = true;
  a.name = "alice";
  a.command = {"jupyter", "lab"};
  auto doc = build_run_job(a, "zzz");
  ASSERT_TRUE(doc.ok) << doc.failure.message;
  const json& spec = doc.value["spec"];
  EXPECT_EQ(spec["gpus"], 1);
  EXPECT_EQ(spec["gpuFraction"], "500m");
  EXPECT_EQ(spec["interactive"], true);
  EXPECT_EQ(spec["preemptible"], false);
  EXPECT_EQ(spec["spot"], false);
  EXPECT_EQ(doc.value["metadata"], json({{"name", "alice"}}));  // no namespace: server default
  EXPECT_FALSE(spec.contains("env"));
  EXPECT_FALSE(spec.contains("distributedEnv"));  // one pod: no torchrun env
}

TEST(ClientRun, RefusesOptionsThatCannotBeRight) {
  auto message = [](RunArgs a) {
    auto doc = build_run_job(a, "x");
    EXPECT_FALSE(doc.ok);
    EXPECT_EQ(doc.failure.exit_code, 1);
    return doc.failure.message;
  };
  RunArgs a = train_args();
  a.command.clear();
  EXPECT_EQ(message(a), "error: sluice run needs a command after `--`");
  a = train_args();
  a.gpus = -1;
  a.cpu.clear();
  a.memory.clear();
  EXPECT_EQ(message(a),
            "error: the job requests nothing: give --gpus N (or --gpu-fraction, --cpu, --memory)");
  a = train_args();
  a.gpu_fraction = "1.5";
  EXPECT_EQ(message(a), "error: --gpu-fraction \"1.5\" must be in (0, 1], e.g. 0.5 or 500m");
  a = train_args();
  a.gpus = 2;
  a.gpu_fraction = "0.5";
  EXPECT_NE(message(a).find("share of one GPU"), std::string::npos);
  a = train_args();
  a.walltime = "soon";
  EXPECT_NE(message(a).find("--time \"soon\" is not a time limit"), std::string::npos);
  a = train_args();
  a.chdir = "rel";
  EXPECT_EQ(message(a), "error: --chdir \"rel\": relative, and no current directory");
  a = train_args();
  a.export_spec = "SLUICE_TOKEN";
  EXPECT_EQ(message(a), "error: --export: SLUICE_TOKEN: SLUICE_* variables are set by sluice");
  a = train_args();
  a.env = {"NOEQUALS"};
  EXPECT_EQ(message(a), "error: --env \"NOEQUALS\" must be KEY=VALUE");
  a = train_args();
  a.preemptible = a.no_preemptible = true;
  EXPECT_NE(message(a).find("exclude each other"), std::string::npos);
}

// What a Slurm user expects of `srun`: their directory, their environment, --time in minutes,
// and no queue needed where the namespace has a "default" one.
TEST(ClientRun, CarriesTheCallersDirectoryEnvironmentAndSlurmTime) {
  const char* const caller[] = {"MYVAR=hello", "SLUICE_TOKEN=secret", "PWD=/home/a/proj", nullptr};
  RunArgs a;
  a.cpu = "1";
  a.walltime = "1:30:00";
  a.caller_env = caller;
  a.cwd = "/home/a/proj";
  a.env = {"MYVAR=override"};
  a.command = {"./relative-script.sh"};
  auto doc = build_run_job(a, "x");
  ASSERT_TRUE(doc.ok) << doc.failure.message;
  const json& spec = doc.value["spec"];
  EXPECT_FALSE(spec.contains("queue"));  // the server's default: LocalQueue "default"
  EXPECT_EQ(spec["workingDir"], "/home/a/proj");
  EXPECT_EQ(spec["walltime"], "5400s");
  EXPECT_EQ(spec["env"], json({{"MYVAR", "override"}}));  // -e wins; no token, no PWD
  a.chdir = "sub/dir";
  a.export_spec = "NONE";
  a.env.clear();
  a.walltime = "2";  // minutes, as Slurm's --time=2
  doc = build_run_job(a, "x");
  ASSERT_TRUE(doc.ok) << doc.failure.message;
  EXPECT_EQ(doc.value["spec"]["workingDir"], "/home/a/proj/sub/dir");
  EXPECT_FALSE(doc.value["spec"].contains("env"));
  EXPECT_EQ(doc.value["spec"]["walltime"], "120s");
  a.chdir = "/scratch";
  a.walltime = "UNLIMITED";
  doc = build_run_job(a, "x");
  EXPECT_EQ(doc.value["spec"]["workingDir"], "/scratch");
  EXPECT_FALSE(doc.value["spec"].contains("walltime"));
}

TEST(ClientRun, DefaultNameComesFromTheScriptNotTheInterpreter) {
  EXPECT_EQ(name_from_command({"python3", "-u", "/src/My_Train.py"}), "my-train-py");
  EXPECT_EQ(name_from_command({"/usr/bin/nvidia-smi"}), "nvidia-smi");
  EXPECT_EQ(name_from_command({"bash", "-c"}), "bash");
  EXPECT_EQ(name_from_command({"bash", "-c", "echo hi; sleep 1"}), "bash");  // not the script
  EXPECT_EQ(name_from_command({"python", "-u", "-m", "torch.distributed.run"}),
            "torch-distributed-run");
  EXPECT_EQ(name_from_command({"sh", "run all.sh"}), "sh");
  EXPECT_EQ(name_from_command({"!!!"}), "run");
  EXPECT_EQ(name_from_command({}), "run");
}

// The document is what the server's loader reads: it resolves against the shipped example.
TEST(ClientRun, DocumentLoadsAgainstTheExampleConfig) {
  std::string dir = std::string(SLUICE_SOURCE_DIR) + "/examples/config/";
  auto cluster = read_source(dir + "cluster.yaml");
  auto queues = read_source(dir + "queues.yaml");
  ASSERT_TRUE(cluster.ok() && queues.ok());
  LoadOutput loaded = load({*cluster, *queues}, {});
  ASSERT_TRUE(loaded.ok()) << loaded.errors.front();

  RunArgs frac;
  frac.queue = "notebooks";
  frac.namespace_ = "vision";
  frac.gpu_fraction = "0.5";
  frac.cpu = "4";
  frac.memory = "16Gi";
  frac.interactive = true;
  frac.command = {"jupyter", "lab"};
  RunArgs gang = train_args();
  gang.priority_class.clear();  // the example defines its own classes
  for (const RunArgs& a : {gang, frac}) {
    auto doc = build_run_job(a, "abcde");
    ASSERT_TRUE(doc.ok) << doc.failure.message;
    JobsOutput jobs = parse_jobs(Source{"run.json", doc.value.dump()}, loaded.config);
    ASSERT_TRUE(jobs.errors.empty()) << jobs.errors.front();
    ASSERT_EQ(jobs.jobs.size(), 1u);
    EXPECT_EQ(jobs.jobs[0].namespace_, a.namespace_);
  }
  // The job's directory reaches the job (and from it the agent).
  RunArgs in_dir = frac;
  in_dir.cwd = "/home/a/proj";
  auto doc = build_run_job(in_dir, "abcde");
  ASSERT_TRUE(doc.ok);
  JobsOutput jobs = parse_jobs(Source{"run.json", doc.value.dump()}, loaded.config);
  ASSERT_TRUE(jobs.errors.empty()) << jobs.errors.front();
  EXPECT_EQ(jobs.jobs[0].exec().working_dir, "/home/a/proj");
  // A relative spec.workingDir is refused with its line.
  doc.value["spec"]["workingDir"] = "proj";
  jobs = parse_jobs(Source{"run.json", doc.value.dump()}, loaded.config);
  ASSERT_FALSE(jobs.errors.empty());
  EXPECT_NE(jobs.errors.front().find("spec.workingDir: \"proj\" must be an absolute path"),
            std::string::npos)
      << jobs.errors.front();
}

TEST(ClientRun, PtyIsOnePodWithTheCallersTerminalType) {
  RunArgs a;
  a.cpu = "1";
  a.pty = true;
  a.export_spec = "NONE";  // TERM still goes: the terminal it attaches to is this one
  const char* env[] = {"TERM=xterm-256color", "HOME=/home/alice", nullptr};
  a.caller_env = env;
  a.command = {"bash"};
  auto doc = build_run_job(a, "x");
  ASSERT_TRUE(doc.ok) << doc.failure.message;
  EXPECT_EQ(doc.value["spec"]["tty"], true);
  EXPECT_EQ(doc.value["spec"]["env"], json({{"TERM", "xterm-256color"}}));
  for (auto bad : {&RunArgs::array, &RunArgs::output, &RunArgs::error}) {
    RunArgs b = a;
    b.*bad = "0-3";
    auto d = build_run_job(b, "x");
    ASSERT_FALSE(d.ok);
    EXPECT_EQ(d.failure.message,
              "error: --pty is one terminal: not with --gang, --array, --output or --error");
  }
  a.gang = 2;
  EXPECT_FALSE(build_run_job(a, "x").ok);
}

}  // namespace
}  // namespace sluice::cli
