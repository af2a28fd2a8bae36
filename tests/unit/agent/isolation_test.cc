// Pods under other users (root only: skipped otherwise), their files, their cgroup, and what a
// non-root agent keeps. Real processes; every wait has a generous deadline.
#include "agent/isolation.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>

#include "agent/proc.h"
#include "test_util.h"

extern char** environ;

namespace sluice::agent {
namespace {

using namespace std::chrono_literals;
using testing::read_file;
using testing::TempDir;

constexpr uint32_t kUidA = 60101;  // numeric only: no /etc/passwd entry needed
constexpr uint32_t kUidB = 60102;

struct Stat {
  uint32_t uid = 0;
  uint32_t gid = 0;
  uint32_t mode = 0;
};
Stat stat_of(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return {st.st_uid, st.st_gid, st.st_mode & 07777};
}

class IsolationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // The state dir's parent must be searchable for pods of other users (mkdtemp gives 0700).
    ::chmod(tmp_.path().c_str(), 0711);
    state_ = tmp_.path() + "/state";
  }
  std::unique_ptr<PodIsolation> isolation(IsolationOptions o = {}) {
    auto iso = PodIsolation::create(std::move(o), state_,
                                    [this](const std::string& l) { log_ += l + "\n"; });
    EXPECT_TRUE(iso) << (iso ? "" : iso.error());
    return iso ? std::move(*iso) : nullptr;
  }
  std::unique_ptr<ProcessRunner> runner(std::shared_ptr<Cgroups> cgroups = nullptr) {
    RunnerOptions o;
    o.state_dir = state_;
    o.tick_ms = 10;
    o.cgroups = std::move(cgroups);
    auto r = ProcessRunner::create(o);
    EXPECT_TRUE(r) << (r ? "" : r.error());
    return r ? std::move(*r) : nullptr;
  }
  // Launches `script` as pod (job, 0) of namespace ns through `iso`, waits for its exit.
  proto::PodExit run(PodIsolation& iso, ProcessRunner& r, uint64_t job, const std::string& ns,
                     const std::string& script, proto::Assignment a = {}) {
    a.job = job;
    a.job_namespace = ns;
    a.command = {"/bin/sh", "-c", script};
    PodLaunch launch;
    launch.ref = {job, 0};
    launch.argv = a.command;
    const std::string why = iso.prepare(a, {"n1", "http://127.0.0.1:1", ""}, environ, launch);
    EXPECT_EQ(why, "");
    r.launch(std::move(launch));
    const auto until = std::chrono::steady_clock::now() + 30s;
    while (std::chrono::steady_clock::now() < until)
      for (auto& e : r.wait_events(200ms).exits)
        if (e.job == job) return e;
    ADD_FAILURE() << "pod " << job << " did not exit";
    return {};
  }

  TempDir tmp_;
  std::string state_;
  std::string log_;
};

TEST_F(IsolationTest, RootAgentRunsPodsAsTheNamespacesUserWithPrivateFiles) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (pods change user only under a root agent)";
  IsolationOptions o;
  o.identity.namespaces["a"] = {kUidA, kUidA};
  o.identity.namespaces["b"] = {kUidB, kUidB};
  o.identity.range_first = 1;  // no hashed range (explicit entries must lie outside it)
  o.identity.range_last = 0;
  o.cgroups.mode = "off";
  auto iso = isolation(o);
  ASSERT_TRUE(iso && iso->drops_privileges());
  auto r = runner();
  std::ofstream(state_ + "/agent-secret") << "s3cret\n";
  ::chmod((state_ + "/agent-secret").c_str(), 0600);
  // The pod: who it is, what it may open, and no capability left.
  const auto e = run(*iso, *r, 1, "a",
                     "id -u; id -g; id -G; grep CapEff /proc/self/status; echo HOME=$HOME; "
                     "cat ../../agent-secret || echo no-state; ls .. || echo no-list; "
                     "echo ok > mine && echo wrote");
  EXPECT_EQ(e.reason, "exited");
  const PodPaths p = pod_paths(state_, {1, 0});
  const std::string out = read_file(p.log);
  EXPECT_NE(out.find("60101\n60101\n60101\n"), std::string::npos) << out;  // no extra groups
  EXPECT_NE(out.find("CapEff:\t0000000000000000"), std::string::npos) << out;
  EXPECT_NE(out.find("HOME=" + p.work_dir), std::string::npos) << out;
  EXPECT_NE(out.find("no-state"), std::string::npos) << out;  // the agent's 0600 files
  EXPECT_NE(out.find("no-list"), std::string::npos) << out;   // work/: 0711, not listable
  EXPECT_NE(out.find("wrote"), std::string::npos) << out;     // its own work dir is writable
  // Files: the pod's own, closed to everyone else.
  EXPECT_EQ(stat_of(p.work_dir).uid, kUidA);
  EXPECT_EQ(stat_of(p.work_dir).mode, 0700u);
  EXPECT_EQ(stat_of(p.log).uid, kUidA);
  EXPECT_EQ(stat_of(p.log).mode, 0600u);
  EXPECT_EQ(stat_of(state_ + "/logs").mode, 0711u);
  EXPECT_EQ(stat_of(state_ + "/work").mode, 0711u);
  EXPECT_EQ(stat_of(state_).mode, 0711u);  // created by the agent
  // Namespace b's pod cannot read a's log or work dir, nor signal a's running pod.
  proto::Assignment sleeper;
  sleeper.job = 3;
  sleeper.job_namespace = "a";
  sleeper.command = {"/bin/sleep", "60"};
  PodLaunch launch;
  launch.ref = {3, 0};
  launch.argv = sleeper.command;
  ASSERT_EQ(iso->prepare(sleeper, {}, environ, launch), "");
  r->launch(std::move(launch));
  int64_t pid = 0;
  ASSERT_TRUE(testing::wait_until([&] {
    for (const auto& rp : r->running())
      if (rp.job == 3) pid = rp.pid;
    return pid > 0;
  }));
  // pods.json, which lists the running sleeper (a pod that ended leaves it within a second, so
  // the first pod's may be gone already): the agent's alone.
  ASSERT_TRUE(
      testing::wait_until([&] { return ::access((state_ + "/pods.json.0").c_str(), F_OK) == 0; }));
  EXPECT_EQ(stat_of(state_ + "/pods.json.0").mode, 0600u);
  const auto b =
      run(*iso, *r, 2, "b",
          "cat " + p.log + " || echo no-log; ls " + p.work_dir + " || echo no-dir; kill -STOP " +
              std::to_string(pid) + " || echo no-signal");
  EXPECT_EQ(b.reason, "exited");
  const std::string bout = read_file(pod_paths(state_, {2, 0}).log);
  EXPECT_NE(bout.find("no-log"), std::string::npos) << bout;
  EXPECT_NE(bout.find("no-dir"), std::string::npos) << bout;
  EXPECT_NE(bout.find("no-signal"), std::string::npos) << bout;
  EXPECT_EQ(bout.find("60101"), std::string::npos) << bout;
  auto st = read_proc_stat(static_cast<pid_t>(pid));
  ASSERT_TRUE(st);
  EXPECT_NE(st->state, 'T');  // a's pod still runs
  r->stop_all(SIGKILL, 0, "stopped");
  r->wait_idle(20s);
}

TEST_F(IsolationTest, RootIsRefusedUnlessTheQueueAllowsIt) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root";
  IsolationOptions o;
  o.cgroups.mode = "off";
  auto iso = isolation(o);
  ASSERT_TRUE(iso);
  proto::Assignment a;
  a.job = 3;
  a.job_namespace = "a";
  a.run_as_uid = 0;
  PodLaunch launch;
  EXPECT_NE(iso->prepare(a, {}, environ, launch).find("may not run as root"), std::string::npos);
  a.allow_root = true;
  EXPECT_EQ(iso->prepare(a, {}, environ, launch), "");
  ASSERT_TRUE(launch.identity);
  EXPECT_EQ(launch.identity->uid, 0u);
}

TEST_F(IsolationTest, AgentWithoutPrivilegeDropKeepsTodaysBehaviour) {
  IsolationOptions o;
  o.drop_privileges = 0;
  o.cgroups.mode = "off";
  auto iso = isolation(o);
  ASSERT_TRUE(iso);
  EXPECT_FALSE(iso->drops_privileges());
  EXPECT_NE(log_.find("pods run as the agent's own user"), std::string::npos) << log_;
  proto::Assignment a;
  a.job = 4;
  a.job_namespace = "a";
  PodLaunch launch;
  const char* base[] = {"KEEP_ME=1", "SLUICE_JOIN_TOKEN=secret", nullptr};
  EXPECT_EQ(iso->prepare(a, {}, base, launch), "");
  EXPECT_FALSE(launch.identity);
  EXPECT_NE(std::find(launch.env.begin(), launch.env.end(), "KEEP_ME=1"), launch.env.end());
  for (const auto& kv : launch.env) EXPECT_EQ(kv.find("secret"), std::string::npos);
}

TEST_F(IsolationTest, PodJoinsItsCgroupBeforeExec) {
  // A stand-in cgroup root (plain files): the child's write of "0" to cgroup.procs lands there.
  const std::string cg_root = tmp_.path() + "/cg";
  std::filesystem::create_directories(cg_root);
  std::ofstream(cg_root + "/cgroup.controllers") << "cpu memory\n";
  IsolationOptions o;
  o.drop_privileges = 0;
  o.cgroups = {"on", cg_root + "/sluice"};
  auto iso = isolation(o);
  ASSERT_TRUE(iso && iso->cgroups());
  auto r = runner(iso->cgroups());
  proto::Assignment a;
  a.cpu_milli = 250;
  a.memory_mib = 64;
  EXPECT_EQ(run(*iso, *r, 5, "a", "true", a).reason, "exited");
  EXPECT_EQ(read_file(cg_root + "/sluice/5-0/cgroup.procs"), "0");
  EXPECT_EQ(read_file(cg_root + "/sluice/5-0/cpu.max"), "25000 100000");
  EXPECT_EQ(read_file(cg_root + "/sluice/5-0/memory.max"), "67108864");
}

// `sluice run` from a shared directory: a root agent runs the pod there as the submitter (a
// server without tokens reports the submitter's ids), and a relative command resolves there.
TEST_F(IsolationTest, RootAgentRunsInTheSubmittersDirectoryAsTheSubmitter) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (pods change user only under a root agent)";
  IsolationOptions o;
  o.identity.range_first = 61000;
  o.identity.range_last = 61999;
  o.cgroups.mode = "off";
  auto iso = isolation(o);
  ASSERT_TRUE(iso);
  auto r = runner();
  const std::string proj = tmp_.path() + "/proj";
  std::filesystem::create_directory(proj);
  ASSERT_EQ(::chown(proj.c_str(), kUidA, kUidA), 0);
  ::chmod(proj.c_str(), 0700);
  std::ofstream(proj + "/job.sh") << "#!/bin/sh\nid -u > out.txt; pwd >> out.txt\n";
  ::chmod((proj + "/job.sh").c_str(), 0755);
  proto::Assignment a;
  a.working_dir = proj;
  a.submitter_uid = kUidA;
  a.submitter_gid = kUidA;
  a.job = 11;
  a.job_namespace = "a";
  a.command = {"./job.sh"};
  PodLaunch launch;
  launch.ref = {11, 0};
  launch.argv = a.command;
  ASSERT_EQ(iso->prepare(a, {"n1", "http://127.0.0.1:1", ""}, environ, launch), "");
  EXPECT_EQ(launch.start_dir, proj);
  EXPECT_EQ(launch.note, "");
  ASSERT_TRUE(launch.identity);
  EXPECT_EQ(launch.identity->uid, kUidA);
  r->launch(std::move(launch));
  ASSERT_TRUE(testing::wait_until([&] {
    for (auto& e : r->wait_events(100ms).exits)
      if (e.job == 11) return true;
    return false;
  }));
  EXPECT_EQ(read_file(proj + "/out.txt"), "60101\n" + proj + "\n");

  // The same job where the directory does not exist (another node's files): its namespace's
  // uid in its own work dir, and its log says why.
  a.job = 12;
  a.working_dir = tmp_.path() + "/elsewhere";
  const auto e = run(*iso, *r, 12, "a", "pwd; id -u", a);
  EXPECT_EQ(e.reason, "exited");
  const std::string out = read_file(pod_paths(state_, {12, 0}).log);
  EXPECT_EQ(
      out.rfind("sluice: working directory " + a.working_dir + " does not exist on node n1", 0), 0u)
      << out;
  EXPECT_NE(out.find("not the submitter's uid 60101"), std::string::npos) << out;
  EXPECT_NE(out.find(pod_paths(state_, {12, 0}).work_dir + "\n"), std::string::npos) << out;
  EXPECT_EQ(out.find("\n60101\n"), std::string::npos) << out;  // `id -u`: not the submitter
}

TEST_F(IsolationTest, AgentThatCannotChangeUsersSaysSo) {
  IsolationOptions o;
  o.drop_privileges = 0;
  o.cgroups.mode = "off";
  auto iso = isolation(o);
  ASSERT_TRUE(iso);
  proto::Assignment a;
  a.job = 13;
  a.job_namespace = "a";
  a.submitter_uid = static_cast<int64_t>(::geteuid()) + 1;
  PodLaunch launch;
  EXPECT_EQ(iso->prepare(a, {}, environ, launch), "");
  EXPECT_NE(launch.note.find("not the submitter's uid " + std::to_string(a.submitter_uid)),
            std::string::npos)
      << launch.note;
  a.submitter_uid = ::geteuid();  // the same user: nothing to say
  PodLaunch same;
  EXPECT_EQ(iso->prepare(a, {}, environ, same), "");
  EXPECT_EQ(same.note, "");
  a.working_dir = "relative/dir";
  EXPECT_EQ(iso->prepare(a, {}, environ, same),
            "working directory \"relative/dir\" is not an absolute path");
}

}  // namespace
}  // namespace sluice::agent
