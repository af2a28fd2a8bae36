#include "agent/fence.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <thread>

#include "agent/identity.h"
#include "agent/proc.h"

extern char** environ;

namespace sluice::agent {

namespace {

using Clock = std::chrono::steady_clock;

// lease.json is rewritten when the lease moves by this much or more, so it lags the agent's own
// lease by less. A write is one pwrite into a page-cache slot (no fsync): a few a second.
constexpr int64_t kLeaseWriteStepNs = 200'000'000;
// How far lease.json may lag the agent's own lease: the fencer waits this much past it while an
// agent (a frozen one) still holds the lock.
constexpr auto kLeaseFileSlack = std::chrono::milliseconds(250);

int64_t to_ns(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

// A pod of pods.json as the fencer sees it.
struct Listed {
  pid_t pid = 0;
  uint64_t start_ticks = 0;
  int64_t grace_ms = 0;
  bool sandboxed = false;  // stop signals spare the group's leader (proc.h, signal_pod_group)
  std::string name;        // "job/pod"
};

// nullopt when pods.json cannot be read (gone: a wiped state directory).
std::optional<std::vector<Listed>> listed_pods(StateFile& pods_file) {
  std::vector<Listed> out;
  std::string why;
  auto doc = pods_file.load(&why);
  if (!doc) return std::nullopt;
  try {
    for (const auto& j : doc->at("pods"))
      out.push_back({j.at("pid").get<pid_t>(), j.at("start_ticks").get<uint64_t>(),
                     j.value("walltime_grace_ms", int64_t{0}), j.value("sandboxed", false),
                     std::to_string(j.at("job").get<uint64_t>()) + "/" +
                         std::to_string(j.at("pod").get<int32_t>())});
  } catch (const std::exception&) {
    // A torn or foreign file: nothing we can act on safely.
  }
  return out;
}

// The same process as when it was listed (a reused pid is someone else), not yet reaped.
bool alive(const Listed& p) {
  auto st = read_proc_stat(p.pid);
  return st && st->start_ticks == p.start_ticks && st->state != 'Z' && st->state != 'X';
}

bool take_fencer_lock(const std::string& state_dir) {
  const std::string path = state_dir + "/fencer.lock";
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  struct flock fl {};
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  if (::fcntl(fd, F_OFD_SETLK, &fl) != 0) {
    ::close(fd);
    return false;
  }
  return true;  // held until the process exits
}

bool fencer_running(const std::string& state_dir) {
  const std::string path = state_dir + "/fencer.lock";
  const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return false;
  struct flock fl {};
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  const bool held = ::fcntl(fd, F_OFD_GETLK, &fl) == 0 && fl.l_type != F_UNLCK;
  ::close(fd);
  return held;
}

}  // namespace

// The monotonic clock starts again at a reboot: a deadline is only read back in the boot that
// wrote it. Read once per process (no process outlives its boot): the agent records its lease
// about 5 times a second per node and each fencer reads it as often, and opening the file each
// time was half the cost of recording a lease (docs/benchmarks.md, twenty-fifth session).
const std::string& boot_id() {
  static const std::string id = [] {
    std::ifstream in("/proc/sys/kernel/random/boot_id");
    std::string s;
    std::getline(in, s);
    return s;
  }();
  return id;
}

bool LeaseFile::write(Clock::time_point deadline, std::string* why) {
  const int64_t ns = to_ns(deadline);
  if (written_ns_ != 0 && ns < written_ns_ + kLeaseWriteStepNs) return true;  // moved < 200 ms
  if (!file_.save(nlohmann::json{{"deadline_monotonic_ns", ns}, {"boot_id", boot_id()}}, why))
    return false;
  written_ns_ = ns;
  return true;
}

std::optional<Clock::time_point> LeaseFile::read() {
  std::string why;
  auto doc = file_.load(&why);
  if (!doc || !doc->contains("deadline_monotonic_ns")) return std::nullopt;
  if (doc->value("boot_id", std::string()) != boot_id()) return std::nullopt;
  try {
    return Clock::time_point(
        std::chrono::nanoseconds((*doc)["deadline_monotonic_ns"].get<int64_t>()));
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

int run_fencer(const FencerOptions& o) {
  auto log = [&](const std::string& line) {
    if (o.log) return o.log(line);
    std::cerr << utc_timestamp() << " fencer " << o.state_dir << ": " << line << "\n" << std::flush;
  };
  if (!take_fencer_lock(o.state_dir)) return 1;  // another fencer watches this directory
  LeaseFile lease(o.state_dir);
  StateFile pods_file(o.state_dir + "/pods.json");
  struct Stopping {
    Listed pod;
    Clock::time_point kill_at;
    bool killed = false;
  };
  std::map<pid_t, Stopping> stopping;
  std::optional<Clock::time_point> last_deadline;
  std::vector<Listed> last_listed;
  uint64_t quiet_ticks = 0;
  for (;;) {
    std::this_thread::sleep_for(o.tick);
    const auto now = Clock::now();
    const bool agent = agent_running(o.state_dir);
    // The lease alone decides: a frozen agent (SIGSTOP, a stalled VM) holds its lock but
    // renews nothing, and is the same as a dead one. A live agent's lease file lags its real
    // lease by up to kLeaseFileSlack (it is rewritten when it moves by 200 ms or more), so
    // while one holds the lock the fencer waits that much longer; the server's fence margin
    // covers it (docs/agent.md, "Fencing").
    // What it read last stands when the files are gone (a state directory wiped while its pods
    // ran): those pods are still the lease's.
    if (auto read = lease.read()) last_deadline = read;
    const auto deadline = last_deadline;
    const bool expired =
        deadline && now >= *deadline + (agent ? kLeaseFileSlack : Clock::duration{});
    if (agent && !expired && stopping.empty()) {  // the usual case
      // The pods are read once a second meanwhile, so that a list is at hand should the state
      // directory vanish with its agent.
      if (++quiet_ticks % 5 == 0)
        if (auto read = listed_pods(pods_file)) last_listed = std::move(*read);
      continue;
    }
    // 1. The lease is over: the server will requeue these jobs; stop them first.
    if (auto read = listed_pods(pods_file)) last_listed = std::move(*read);
    std::vector<Listed> live;
    for (const auto& p : last_listed)
      if (alive(p)) live.push_back(p);
    if (expired)
      for (const auto& p : live) {
        if (stopping.count(p.pid)) continue;
        log(std::string(agent ? "the agent is frozen" : "the agent is gone") +
            " and its lease ran out: stopping pod " + p.name + " (pid " + std::to_string(p.pid) +
            "), SIGKILL in " + std::to_string(p.grace_ms) + " ms");
        signal_pod_group(p.pid, SIGTERM, p.sandboxed);  // each pod leads its own group
        stopping[p.pid] = {p, now + std::chrono::milliseconds(std::max<int64_t>(p.grace_ms, 0))};
      }
    // 2. Pods being stopped: SIGKILL at the end of their grace, forgotten once gone. A pod
    //    fenced once is finished even if an agent comes back meanwhile: its job is requeued.
    for (auto it = stopping.begin(); it != stopping.end();) {
      Stopping& s = it->second;
      if (!alive(s.pod)) {
        // What its group still holds (a sandbox's init and what it waits for, background
        // processes) goes with it.
        kill_group_remnants(s.pod.pid, s.pod.start_ticks);
        it = stopping.erase(it);
        continue;
      }
      if (now >= s.kill_at && !s.killed) {
        signal_pod_group(s.pod.pid, SIGKILL, s.pod.sandboxed);
        s.killed = true;
      }
      ++it;
    }
    // 3. Done when no agent runs and nothing is left to watch (no lease: nothing to fence).
    if (!agent && stopping.empty() && (live.empty() || !deadline)) return 0;
  }
}

Result<bool> spawn_fencer(const std::string& exe, const std::string& state_dir) {
  if (fencer_running(state_dir)) return true;
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // Its own session: a ^C or a SIGTERM to the agent's process group does not reach it. A clean
  // signal state: the agent blocks SIGINT/SIGTERM for its sigwait.
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  const std::string log_path = state_dir + "/fencer.log";
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  // Nothing else of the agent's: a listening socket inherited by the fencer would keep the
  // agent's port bound (and accepting) after the agent died, so a restart could not listen.
  posix_spawn_file_actions_addclosefrom_np(&fa, 3);
  std::vector<std::string> args = {exe, "agent-fencer", "--state-dir", state_dir};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  // Not the agent's environment: it may hold the join token.
  char path_env[] = "PATH=/usr/sbin:/usr/bin:/sbin:/bin";
  char* envp[] = {path_env, nullptr};
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, exe.c_str(), &fa, &attr, argv.data(), envp);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) return Error{"cannot start the fencer " + exe + ": " + std::strerror(rc)};
  // Reaped when it ends (normally after the agent: then init reaps it), so it never lingers
  // as a zombie of a long-lived agent.
  std::thread([pid] { ::waitpid(pid, nullptr, 0); }).detach();
  return true;
}

}  // namespace sluice::agent
