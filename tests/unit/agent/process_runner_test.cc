// ProcessRunner with real processes (/bin/sh scripts). Every wait has a generous deadline; no
// assertion depends on how fast the machine is.
#include "agent/process_runner.h"

#include <fcntl.h>
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>
#include <filesystem>

#include <csignal>
#include <fstream>

#include "agent/pod_env.h"
#include "agent/proc.h"
#include "agent/state_file.h"
#include "test_util.h"

extern char** environ;

namespace sluice::agent {
namespace {

using namespace std::chrono_literals;
using testing::read_file;
using testing::TempDir;
using testing::wait_until;

class ProcessRunnerTest : public ::testing::Test {
 protected:
  void SetUp() override { runner_ = make(); }
  void TearDown() override {
    if (runner_) {
      runner_->stop_all(SIGKILL, 0, "stopped");
      runner_->wait_idle(20s);
    }
  }
  std::unique_ptr<ProcessRunner> make(int64_t gpu_wait_timeout_ms = 60'000,
                                      int64_t keep_finished = 1000) {
    RunnerOptions o;
    o.state_dir = dir_.path();
    o.tick_ms = 10;
    o.gpu_wait_timeout_ms = gpu_wait_timeout_ms;
    o.keep_finished = keep_finished;
    auto r = ProcessRunner::create(o);
    EXPECT_TRUE(r) << (r ? "" : r.error());
    return r ? std::move(*r) : nullptr;
  }
  PodLaunch sh(uint64_t job, const std::string& script, std::vector<int32_t> gpus = {}) {
    PodLaunch p;
    p.ref = {job, 0};
    p.argv = {"/bin/sh", "-c", script};
    p.env = {"PATH=/usr/bin:/bin"};
    p.gpus = std::move(gpus);
    return p;
  }
  // Collects events until `ref` has exited.
  proto::PodExit wait_exit(proto::PodRef ref, ProcessRunner* r = nullptr) {
    r = r ? r : runner_.get();
    const auto until = std::chrono::steady_clock::now() + 30s;
    while (std::chrono::steady_clock::now() < until) {
      auto ev = r->wait_events(200ms);
      for (auto& s : ev.started) started_.push_back({s.job, s.pod});
      for (auto& c : ev.checkpoints) checkpoints_.push_back(c);
      for (auto& e : ev.exits) exits_.push_back(e);
      for (const auto& e : exits_) {
        if (e.job == ref.job && e.pod == ref.pod) return e;
      }
    }
    ADD_FAILURE() << "pod " << ref.job << "/" << ref.pod << " did not exit";
    return {};
  }
  bool was_started(proto::PodRef ref) const {
    return std::find(started_.begin(), started_.end(), ref) != started_.end();
  }

  TempDir dir_;
  std::unique_ptr<ProcessRunner> runner_;
  std::vector<proto::PodRef> started_;
  std::vector<proto::PodExit> exits_;
  std::vector<proto::CheckpointReport> checkpoints_;
};

TEST_F(ProcessRunnerTest, ReportsExitCode) {
  ASSERT_TRUE(runner_->launch(sh(1, "exit 3")));
  auto e = wait_exit({1, 0});
  EXPECT_TRUE(was_started({1, 0}));
  EXPECT_EQ(e.reason, "exited");
  EXPECT_EQ(e.exit_code, 3);
  EXPECT_EQ(e.signal, 0);
  EXPECT_GT(e.at_unix_ns, 0);
  EXPECT_TRUE(runner_->running().empty());  // reaped and forgotten
}

TEST_F(ProcessRunnerTest, ReportsSignal) {
  ASSERT_TRUE(runner_->launch(sh(2, "kill -KILL $$")));
  auto e = wait_exit({2, 0});
  EXPECT_EQ(e.reason, "signaled");
  EXPECT_EQ(e.signal, SIGKILL);
  EXPECT_EQ(e.exit_code, 128 + SIGKILL);
}

TEST_F(ProcessRunnerTest, CapturesStdoutAndStderrInOneLog) {
  ASSERT_TRUE(runner_->launch(sh(3, "echo out; echo err >&2; pwd")));
  auto e = wait_exit({3, 0});
  EXPECT_EQ(e.exit_code, 0);
  const auto paths = pod_paths(dir_.path(), {3, 0});
  EXPECT_EQ(paths.log, dir_.path() + "/logs/3-0.log");
  const std::string log = read_file(paths.log);
  EXPECT_NE(log.find("out\n"), std::string::npos) << log;
  EXPECT_NE(log.find("err\n"), std::string::npos) << log;
  EXPECT_NE(log.find(dir_.path() + "/work/3-0"), std::string::npos) << log;  // working dir
}

// Only the last keep_finished finished pods keep their log and working directory; a pod that
// runs again here keeps its files (the log goes on), and the limit holds across a restart.
TEST_F(ProcessRunnerTest, KeepsTheFilesOfTheLastFinishedPodsOnly) {
  runner_.reset();
  runner_ = make(60'000, 2);
  auto files_of = [&](uint64_t job) {
    const auto p = pod_paths(dir_.path(), {job, 0});
    struct stat st;
    const bool log = ::stat(p.log.c_str(), &st) == 0;
    const bool work = ::stat(p.work_dir.c_str(), &st) == 0;
    EXPECT_EQ(log, work) << "job " << job;
    return log;
  };
  for (uint64_t job : {11, 12, 13}) {
    ASSERT_TRUE(runner_->launch(sh(job, "echo run-$SLUICE_X; touch f")));
    wait_exit({job, 0});
  }
  EXPECT_FALSE(files_of(11));
  EXPECT_TRUE(files_of(12));
  EXPECT_TRUE(files_of(13));
  // 12 runs again: 13 is now the oldest finished pod, and goes when 14 finishes.
  exits_.clear();
  ASSERT_TRUE(runner_->launch(sh(12, "echo again")));
  wait_exit({12, 0});
  ASSERT_TRUE(runner_->launch(sh(14, "true")));
  wait_exit({14, 0});
  EXPECT_FALSE(files_of(13));
  EXPECT_TRUE(files_of(12));
  EXPECT_TRUE(files_of(14));
  EXPECT_NE(read_file(pod_paths(dir_.path(), {12, 0}).log).find("again"), std::string::npos);
  // A restarted runner that keeps one: the most recently finished stays.
  ::utimensat(AT_FDCWD, pod_paths(dir_.path(), {12, 0}).log.c_str(), nullptr, 0);  // now
  ::usleep(20'000);
  ::utimensat(AT_FDCWD, pod_paths(dir_.path(), {14, 0}).log.c_str(), nullptr, 0);
  runner_.reset();
  runner_ = make(60'000, 1);
  EXPECT_FALSE(files_of(12));
  EXPECT_TRUE(files_of(14));
}

TEST_F(ProcessRunnerTest, PodGetsItsEnvironment) {
  proto::Assignment a;
  a.job = 4;
  a.job_name = "envy";
  a.job_namespace = "team";
  a.gang_size = 1;
  a.peers = {{0, "n1", ""}};
  a.gpus = {0, 1};
  a.env = {{"MY_VAR", "hello"}};
  PodLaunch p = sh(4, "env");
  p.env = compose_pod_env(
      a, {"n1", "http://127.0.0.1:1234", pod_paths(dir_.path(), {4, 0}).checkpoint_file}, environ);
  p.gpus = a.gpus;
  ASSERT_TRUE(runner_->launch(p));
  EXPECT_EQ(wait_exit({4, 0}).exit_code, 0);
  const std::string log = read_file(pod_paths(dir_.path(), {4, 0}).log);
  for (const char* kv :
       {"CUDA_VISIBLE_DEVICES=0,1", "SLUICE_JOB_ID=4", "SLUICE_JOB_NAME=envy",
        "SLUICE_NAMESPACE=team", "SLUICE_POD_INDEX=0", "SLUICE_GANG_SIZE=1", "SLUICE_PEERS=0=n1",
        "SLUICE_NODE=n1", "SLUICE_AGENT_URL=http://127.0.0.1:1234", "MY_VAR=hello"}) {
    EXPECT_NE(log.find(std::string(kv) + "\n"), std::string::npos) << kv << " missing in:\n" << log;
  }
  EXPECT_NE(log.find("SLUICE_CHECKPOINT_FILE=" + dir_.path() + "/work/4-0/.sluice-checkpoint"),
            std::string::npos);
}

TEST_F(ProcessRunnerTest, MissingBinaryIsStartFailed) {
  PodLaunch p = sh(5, "");
  p.argv = {"/nonexistent/bin/train"};
  ASSERT_TRUE(runner_->launch(p));
  auto e = wait_exit({5, 0});
  EXPECT_EQ(e.reason, "start-failed");
  EXPECT_NE(e.message.find("No such file or directory"), std::string::npos) << e.message;
  EXPECT_FALSE(was_started({5, 0}));

  PodLaunch q = sh(6, "");
  q.argv = {"no-such-command-for-sluice"};
  ASSERT_TRUE(runner_->launch(q));
  auto f = wait_exit({6, 0});
  EXPECT_EQ(f.reason, "start-failed");
  EXPECT_NE(f.message.find("command not found: no-such-command-for-sluice"), std::string::npos)
      << f.message;
}

TEST_F(ProcessRunnerTest, ExecErrorComesBackFromTheChild) {
  // A file that exists but is not executable: execve itself fails (EACCES), in the child.
  const std::string script = dir_.path() + "/not-executable.sh";
  std::ofstream(script) << "#!/bin/sh\necho hi\n";
  ::chmod(script.c_str(), 0644);
  PodLaunch p = sh(7, "");
  p.argv = {script};
  ASSERT_TRUE(runner_->launch(p));
  auto e = wait_exit({7, 0});
  EXPECT_EQ(e.reason, "start-failed");
  EXPECT_NE(e.message.find("Permission denied"), std::string::npos) << e.message;
}

TEST_F(ProcessRunnerTest, APodGetsNoDescriptorOfTheAgent) {
  // One without O_CLOEXEC, as a library might leave: the child closes it before its exec.
  const int leaky = ::open("/dev/null", O_RDONLY);
  ASSERT_GE(leaky, 3);
  ASSERT_TRUE(runner_->launch(sh(24, "ls /proc/$$/fd")));
  EXPECT_EQ(wait_exit({24, 0}).exit_code, 0);
  ::close(leaky);
  EXPECT_EQ(read_file(pod_paths(dir_.path(), {24, 0}).log), "0\n1\n2\n");
}

// A restarted agent adopts a pod only if its pid has the start time pods.json recorded: the
// time the runner takes from its spawn must be /proc's.
TEST_F(ProcessRunnerTest, ThePodsStartTimeIsTheOneProcGives) {
  constexpr uint64_t kPods = 40;
  for (uint64_t j = 1; j <= kPods; ++j) ASSERT_TRUE(runner_->launch(sh(100 + j, "exec sleep 60")));
  StateFile file(dir_.path() + "/pods.json");
  std::optional<nlohmann::json> doc;
  ASSERT_TRUE(wait_until([&] {
    std::string why;
    doc = file.load(&why);
    return doc && doc->at("pods").size() == kPods;
  }));
  for (const auto& p : doc->at("pods")) {
    const auto st = read_proc_stat(p.at("pid").get<pid_t>());
    ASSERT_TRUE(st) << p.dump();
    EXPECT_EQ(p.at("start_ticks").get<uint64_t>(), st->start_ticks) << p.dump();
  }
}

TEST_F(ProcessRunnerTest, StopWithGraceLetsATrappingChildExitCleanly) {
  ASSERT_TRUE(runner_->launch(
      sh(8, "trap 'echo bye; exit 0' TERM; echo ready; while :; do sleep 0.05; done")));
  const auto log = pod_paths(dir_.path(), {8, 0}).log;
  ASSERT_TRUE(wait_until([&] { return read_file(log).find("ready") != std::string::npos; }));
  ASSERT_TRUE(runner_->stop({8, 0}, SIGTERM, 60'000, "stopped", "preempted"));
  auto e = wait_exit({8, 0});
  EXPECT_EQ(e.reason, "stopped");
  EXPECT_EQ(e.exit_code, 0);  // exited on its own within the grace
  EXPECT_EQ(e.signal, 0);
  EXPECT_EQ(e.message.find("SIGKILL"), std::string::npos) << e.message;
  EXPECT_NE(read_file(log).find("bye"), std::string::npos);
}

TEST_F(ProcessRunnerTest, StopKillsAChildThatIgnoresTheSignal) {
  ASSERT_TRUE(runner_->launch(sh(9, "trap '' TERM; echo ready; while :; do sleep 0.05; done")));
  const auto log = pod_paths(dir_.path(), {9, 0}).log;
  ASSERT_TRUE(wait_until([&] { return read_file(log).find("ready") != std::string::npos; }));
  ASSERT_TRUE(runner_->stop({9, 0}, SIGTERM, 300, "stopped", "cancelled"));
  auto e = wait_exit({9, 0});
  EXPECT_EQ(e.reason, "stopped");
  EXPECT_EQ(e.signal, SIGKILL);
  EXPECT_NE(e.message.find("SIGKILL after grace"), std::string::npos) << e.message;
  EXPECT_FALSE(runner_->stop({9, 0}, SIGTERM, 0, "stopped"));  // gone: unknown now
}

TEST_F(ProcessRunnerTest, WalltimeTermsThenKills) {
  PodLaunch polite = sh(10, "trap 'exit 0' TERM; while :; do sleep 0.05; done");
  polite.walltime_ms = 200;
  polite.walltime_grace_ms = 60'000;
  PodLaunch stubborn = sh(11, "trap '' TERM; while :; do sleep 0.05; done");
  stubborn.walltime_ms = 200;
  stubborn.walltime_grace_ms = 200;
  ASSERT_TRUE(runner_->launch(polite));
  ASSERT_TRUE(runner_->launch(stubborn));
  auto a = wait_exit({10, 0});
  EXPECT_EQ(a.reason, "walltime");
  EXPECT_EQ(a.exit_code, 0);
  auto b = wait_exit({11, 0});
  EXPECT_EQ(b.reason, "walltime");
  EXPECT_EQ(b.signal, SIGKILL);
}

TEST_F(ProcessRunnerTest, PodWaitsForGpusOfAStoppingPod) {
  const std::string trace = dir_.path() + "/trace";
  // A needs a moment to clean up after SIGTERM; B, on the same GPU, must start after A is gone.
  ASSERT_TRUE(runner_->launch(sh(12,
                                 "trap 'sleep 0.3; echo A-done >> " + trace +
                                     "; exit 0' TERM; echo A-up >> " + trace +
                                     "; while :; do sleep 0.05; done",
                                 {0})));
  ASSERT_TRUE(wait_until([&] { return read_file(trace).find("A-up") != std::string::npos; }));
  ASSERT_TRUE(runner_->stop({12, 0}, SIGTERM, 60'000, "stopped", "preempted"));
  ASSERT_TRUE(runner_->launch(sh(13, "echo B-start >> " + trace, {0})));
  // While A runs, B is listed with pid 0 (waiting).
  auto e = wait_exit({13, 0});
  EXPECT_EQ(e.exit_code, 0);
  EXPECT_EQ(read_file(trace), "A-up\nA-done\nB-start\n");
}

TEST_F(ProcessRunnerTest, FractionalPodsShareAGpu) {
  PodLaunch a = sh(14, "while :; do sleep 0.05; done", {0});
  a.gpu_milli = 500;
  PodLaunch b = sh(15, "while :; do sleep 0.05; done", {0});
  b.gpu_milli = 500;
  ASSERT_TRUE(runner_->launch(a));
  ASSERT_TRUE(runner_->launch(b));
  // Both hold GPU 0 at once: 500 + 500 <= 1000.
  ASSERT_TRUE(wait_until([&] {
    auto r = runner_->running();
    return r.size() == 2 && r[0].pid > 0 && r[1].pid > 0;
  }));
}

TEST_F(ProcessRunnerTest, GpuWaitGivesUpOnABusyGpu) {
  runner_ = make(/*gpu_wait_timeout_ms=*/300);
  ASSERT_TRUE(runner_->launch(sh(16, "while :; do sleep 0.05; done", {1})));
  ASSERT_TRUE(runner_->launch(sh(17, "exit 0", {1})));
  auto e = wait_exit({17, 0});
  EXPECT_EQ(e.reason, "start-failed");
  EXPECT_NE(e.message.find("GPU 1 (job 16 pod 0)"), std::string::npos) << e.message;
}

TEST_F(ProcessRunnerTest, StopOfAWaitingPodEndsIt) {
  ASSERT_TRUE(runner_->launch(sh(18, "while :; do sleep 0.05; done", {2})));
  ASSERT_TRUE(runner_->launch(sh(19, "exit 0", {2})));
  ASSERT_TRUE(wait_until([&] { return runner_->running().size() == 2; }));
  ASSERT_TRUE(runner_->stop({19, 0}, SIGTERM, 1000, "stopped", "cancelled"));
  auto e = wait_exit({19, 0});
  EXPECT_EQ(e.reason, "stopped");
  EXPECT_FALSE(was_started({19, 0}));
}

TEST_F(ProcessRunnerTest, CheckpointFileTouchAndApiReport) {
  // The script reads the path from $CK; the agent sets SLUICE_CHECKPOINT_FILE to the same path.
  const std::string ck = pod_paths(dir_.path(), {21, 0}).checkpoint_file;
  PodLaunch p = sh(21, "sleep 0.2; touch \"$CK\"; while :; do sleep 0.05; done");
  p.env.push_back("CK=" + ck);
  ASSERT_TRUE(runner_->launch(p));
  ASSERT_TRUE(wait_until([&] {
    auto ev = runner_->take_events();
    checkpoints_.insert(checkpoints_.end(), ev.checkpoints.begin(), ev.checkpoints.end());
    return !checkpoints_.empty();
  }));
  EXPECT_EQ(checkpoints_[0].job, 21u);
  EXPECT_GT(checkpoints_[0].at_unix_ns, 0);
  EXPECT_TRUE(runner_->report_checkpoint({21, 0}));
  EXPECT_FALSE(runner_->report_checkpoint({99, 0}));
  auto ev = runner_->wait_events(5s);
  ASSERT_FALSE(ev.checkpoints.empty());
  EXPECT_EQ(ev.checkpoints.back().job, 21u);
}

TEST_F(ProcessRunnerTest, NewRunnerAdoptsLivePods) {
  ASSERT_TRUE(runner_->launch(sh(22, "while :; do sleep 0.05; done", {3})));
  ASSERT_TRUE(wait_until([&] {
    auto r = runner_->running();
    return r.size() == 1 && r[0].pid > 0;
  }));
  const int64_t pid = runner_->running()[0].pid;
  runner_.reset();  // the agent goes away; the pod keeps running
  ASSERT_EQ(::kill(static_cast<pid_t>(pid), 0), 0);
  runner_ = make();
  EXPECT_EQ(runner_->adopted(), 1u);
  auto running = runner_->running();
  ASSERT_EQ(running.size(), 1u);
  EXPECT_EQ(running[0].job, 22u);
  EXPECT_EQ(running[0].pid, pid);
  // Its GPU is still taken: a new pod on GPU 3 waits.
  ASSERT_TRUE(runner_->launch(sh(23, "exit 0", {3})));
  ASSERT_TRUE(runner_->stop({22, 0}, SIGTERM, 5000, "stopped", "preempted"));
  auto e = wait_exit({22, 0});
  EXPECT_EQ(e.reason, "stopped");
  EXPECT_EQ(wait_exit({23, 0}).exit_code, 0);
}

// pods.json lost while a pod runs (a wiped state directory): a new runner finds the pod by its
// environment ($SLUICE_CHECKPOINT_FILE is this directory's path for it) and adopts it; a
// process that names another directory is left alone.
TEST_F(ProcessRunnerTest, NewRunnerFindsAPodThatNoStateFileLists) {
  const PodPaths paths = pod_paths(dir_.path(), {24, 1});
  PodLaunch mine = sh(24, "while :; do sleep 0.05; done", {2});
  mine.ref = {24, 1};
  mine.env = {"PATH=/usr/bin:/bin", "SLUICE_JOB_ID=24", "SLUICE_POD_INDEX=1",
              "CUDA_VISIBLE_DEVICES=2", "SLUICE_CHECKPOINT_FILE=" + paths.checkpoint_file};
  PodLaunch other = sh(25, "while :; do sleep 0.05; done");
  other.env = {"PATH=/usr/bin:/bin", "SLUICE_JOB_ID=25", "SLUICE_POD_INDEX=0",
               "SLUICE_CHECKPOINT_FILE=/elsewhere/work/25-0/.sluice-checkpoint"};
  ASSERT_TRUE(runner_->launch(mine));
  ASSERT_TRUE(runner_->launch(other));
  ASSERT_TRUE(wait_until([&] {
    auto r = runner_->running();
    return r.size() == 2 && r[0].pid > 0 && r[1].pid > 0;
  }));
  const auto before = runner_->running();
  runner_.reset();  // the agent goes away; the pods keep running; its state file is lost
  for (const char* f : {"/pods.json", "/pods.json.0", "/pods.json.1"})
    std::filesystem::remove(dir_.path() + f);
  runner_ = make();
  EXPECT_EQ(runner_->adopted(), 1u);
  auto running = runner_->running();
  ASSERT_EQ(running.size(), 1u);
  EXPECT_EQ(running[0].job, 24u);
  EXPECT_EQ(running[0].pod, 1);
  EXPECT_EQ(running[0].run, 0u);  // unknown: the server decides
  // Its GPU is taken: a pod on GPU 2 waits for it.
  ASSERT_TRUE(runner_->launch(sh(26, "exit 0", {2})));
  ASSERT_TRUE(runner_->stop({24, 1}, SIGTERM, 5000, "stopped", "cancelled"));
  EXPECT_EQ(wait_exit({24, 1}).reason, "stopped");
  EXPECT_EQ(wait_exit({26, 0}).exit_code, 0);
  for (const auto& p : before)  // the one of another directory: ours to clean up here
    if (p.job == 25) ::kill(-static_cast<pid_t>(p.pid), SIGKILL);
}

TEST_F(ProcessRunnerTest, AdoptedPodThatIsNotOurChildEndsAsLost) {
  // A process that is not a child of this test: a background job of a shell that exits.
  const std::string pidfile = dir_.path() + "/orphan.pid";
  ASSERT_EQ(std::system(
                ("setsid sh -c 'sleep 300 & echo $! > " + pidfile + "' </dev/null >/dev/null 2>&1")
                    .c_str()),
            0);
  ASSERT_TRUE(wait_until([&] { return !read_file(pidfile).empty(); }));
  const pid_t pid = static_cast<pid_t>(std::stol(read_file(pidfile)));
  auto st = read_proc_stat(pid);
  ASSERT_TRUE(st);
  runner_.reset();
  {
    nlohmann::json doc = {
        {"version", 1},
        {"pods",
         {{{"job", 30}, {"pod", 0}, {"pid", pid}, {"start_ticks", st->start_ticks}},
          {{"job", 31}, {"pod", 0}, {"pid", pid}, {"start_ticks", st->start_ticks + 1}}}}};
    StateFile file(dir_.path() + "/pods.json");  // after what the previous runner saved
    std::string why;
    file.load(&why);
    ASSERT_TRUE(file.save(doc, &why)) << why;
  }
  runner_ = make();
  // Pod 30 is alive and adopted; pod 31's pid belongs to another process (start time differs):
  // it is reported lost at once.
  EXPECT_EQ(runner_->adopted(), 1u);
  auto ev = runner_->take_events();
  ASSERT_EQ(ev.exits.size(), 1u);
  EXPECT_EQ(ev.exits[0].job, 31u);
  EXPECT_EQ(ev.exits[0].reason, "lost");
  ::kill(pid, SIGKILL);
  auto e = wait_exit({30, 0});
  EXPECT_EQ(e.reason, "lost");
  EXPECT_EQ(e.exit_code, -1);
}

// The jobs pods.json lists (what a restarted agent adopts and the fencer stops).
std::vector<uint64_t> listed_jobs(const std::string& state_dir) {
  StateFile file(state_dir + "/pods.json");
  std::string why;
  std::vector<uint64_t> out;
  if (auto doc = file.load(&why))
    for (const auto& p : doc->at("pods")) out.push_back(p.at("job").get<uint64_t>());
  return out;
}

// A started pod is in pods.json before its start is reported (an agent that dies at once
// leaves it to the fencer); an ended one leaves the file soon after, though not necessarily
// with its exit (ended_since_).
TEST_F(ProcessRunnerTest, PodsFileListsAStartedPodBeforeItsEventAndDropsItAfterItsEnd) {
  ASSERT_TRUE(runner_->launch(sh(40, "read line")));  // stdin is /dev/null: ends at once...
  ASSERT_TRUE(runner_->launch(sh(41, "sleep 300")));  // ...this one runs on
  bool seen = false;
  ASSERT_TRUE(wait_until([&] {
    auto ev = runner_->wait_events(100ms);
    for (auto& e : ev.exits) exits_.push_back(e);  // for wait_exit below
    for (const auto& s : ev.started)
      if (s.job == 41) {
        seen = true;
        const auto listed = listed_jobs(dir_.path());
        EXPECT_NE(std::find(listed.begin(), listed.end(), 41u), listed.end());
      }
    return seen;
  }));
  EXPECT_EQ(wait_exit({40, 0}).exit_code, 1);  // `read` at the end of its input
  // Pod 40 leaves the file (within ProcessRunner::kEndedSaveDelay); pod 41 stays.
  ASSERT_TRUE(wait_until([&] { return listed_jobs(dir_.path()) == std::vector<uint64_t>{41}; }));
  runner_->stop_all(SIGKILL, 0, "stopped");
  ASSERT_TRUE(runner_->wait_idle(20s));
  runner_.reset();  // at the latest when the runner is destroyed
  EXPECT_TRUE(listed_jobs(dir_.path()).empty());
}

TEST_F(ProcessRunnerTest, RelativeCommandRunsInTheJobsWorkingDirectory) {
  const std::string proj = dir_.path() + "/proj";
  ::mkdir(proj.c_str(), 0755);
  std::ofstream(proj + "/relative-script.sh") << "#!/bin/sh\necho ran in $(pwd)\n";
  ::chmod((proj + "/relative-script.sh").c_str(), 0755);
  PodLaunch p = sh(20, "");
  p.argv = {"./relative-script.sh"};
  p.start_dir = proj;
  ASSERT_TRUE(runner_->launch(p));
  EXPECT_EQ(wait_exit({20, 0}).exit_code, 0);
  EXPECT_EQ(read_file(pod_paths(dir_.path(), {20, 0}).log), "ran in " + proj + "\n");
}

TEST_F(ProcessRunnerTest, NoteGoesToTheLogAndIntoAStartFailure) {
  PodLaunch p = sh(21, "echo hi");
  p.note = "working directory /x does not exist on node n1";
  ASSERT_TRUE(runner_->launch(p));
  EXPECT_EQ(wait_exit({21, 0}).exit_code, 0);
  EXPECT_EQ(read_file(pod_paths(dir_.path(), {21, 0}).log),
            "sluice: working directory /x does not exist on node n1\nhi\n");
  PodLaunch q = sh(22, "");
  q.argv = {"./relative-script.sh"};
  q.note = "working directory /x does not exist on node n1";
  ASSERT_TRUE(runner_->launch(q));
  const auto e = wait_exit({22, 0});
  EXPECT_EQ(e.reason, "start-failed");
  EXPECT_NE(e.message.find("(working directory /x does not exist on node n1)"), std::string::npos)
      << e.message;
  PodLaunch r = sh(23, "true");
  r.start_dir = dir_.path() + "/gone";
  ASSERT_TRUE(runner_->launch(r));
  const auto f = wait_exit({23, 0});
  EXPECT_EQ(f.reason, "start-failed");
  EXPECT_NE(f.message.find("cannot enter the working directory " + dir_.path() + "/gone"),
            std::string::npos)
      << f.message;
}

}  // namespace
}  // namespace sluice::agent
