#pragma once
// Starting one pod's process (ProcessRunner::start_locked): the files it is given and the child
// side of vfork, which may only make system calls.
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "agent/pod_identity.h"

namespace sluice::agent {

// execvp's search in `path` (a PATH value; "" means /usr/local/bin:/usr/bin:/bin), done in the
// parent so that "not found" is a clear message. A name with a '/' is returned as it is.
std::optional<std::string> find_executable(const std::string& cmd, const std::string& path);

// find_executable with a short memory, for a runner that starts the same command many times a
// second (a stat() and an access() per PATH entry tried, each time). A name found is not looked
// up again for `ttl` (bash's hash table, but forgetting after a moment, so a binary installed
// earlier in PATH is seen within it); a name not found is always looked up again. A cached file
// removed meanwhile makes the exec fail, which the start-failed message says.
class ExecutableCache {
 public:
  using Clock = std::chrono::steady_clock;
  explicit ExecutableCache(std::chrono::milliseconds ttl = std::chrono::seconds(1)) : ttl_(ttl) {}
  std::optional<std::string> find(const std::string& cmd, const std::string& path,
                                  Clock::time_point now);

 private:
  static constexpr size_t kMaxEntries = 64;
  struct Found {
    std::string file;
    Clock::time_point at;
  };
  std::chrono::milliseconds ttl_;
  std::unordered_map<std::string, Found> found_;  // by command and PATH
};

// The pod's work dir (created; mode 0700) and log (opened for appending; mode 0600), both owned
// by `identity` when given. Returns the log's descriptor (O_CLOEXEC) or why not. The log is
// opened without following a symbolic link.
struct PodFiles {
  std::string work_dir;
  std::string log;
};
int open_pod_files(const PodFiles& files, const std::optional<PodIdentity>& identity,
                   std::string* why);

// /dev/null (read-only, O_CLOEXEC) for the pods' stdin, opened once per process and never
// closed: one open and one close fewer per pod; the child only dup2()s it. -1: unavailable.
int dev_null();

struct ChildError {
  // 1 chdir, 2 exec, 3 setsid, 4 dup2, 5 drop privileges, 6 join cgroup, 7 chdir to the
  // job's working directory (as the pod's user), 8 open the output file, 9 the error file,
  // 10 take the pseudo-terminal as the controlling terminal, 11 set the process limit,
  // 12 make or join the private /proc's mount namespace
  int32_t stage = 0;
  int32_t err = 0;
};
// "chdir ", "exec ", ...: what failed, for the start-failed message.
const char* child_stage_name(int32_t stage);

struct ChildSetup {
  const char* exe;
  char* const* argv;
  char* const* envp;
  const char* work_dir;
  int null_fd;
  int log_fd;
  long max_fd;
  int cgroup_fd = -1;  // the pod's cgroup.procs; -1: none
  // An interactive pod's pseudo-terminal (its slave side; null_fd and log_fd are it too):
  // made the controlling terminal of the pod's new session. -1: none.
  int tty_fd = -1;
  bool drop = false;  // become uid/gid (no supplementary groups) before exec
  // The job's working directory, entered after the privileges are dropped (so the pod's user
  // must be allowed there); nullptr: stay in work_dir.
  const char* start_dir = nullptr;
  // Slurm's --output/--error: opened (created; appended to, truncated first unless
  // out_append) as the pod's user after start_dir is entered, relative to it; nullptr:
  // stdout/stderr stay on log_fd. With only out_path, stderr goes there too.
  const char* out_path = nullptr;
  const char* err_path = nullptr;
  // A gang's pods after the first: their output joins the first pod's file (which truncates
  // it as it starts), as a Slurm job's steps all write to its one output file.
  bool out_append = false;
  uid_t uid = 0;
  gid_t gid = 0;
  // With `drop`: RLIMIT_NPROC, the most processes and threads the pod's uid may have on the
  // machine (its namespace's pods together), so a fork bomb cannot take the machine's process
  // table from other tenants. 0: none.
  long max_procs = 0;
  // A mount namespace with a /proc that shows only the pod's own uid's processes (hidepid=2):
  // other tenants' processes and command lines are invisible. Root agents only. A pod of
  // another uid joins shared_proc_namespace(); one that runs as root (a ClusterQueue may allow
  // it) gets a namespace of its own, as it could mount over what the others see.
  bool private_proc = false;
};

// Once per process: a mount namespace, a slave of the agent's, whose /proc is mounted
// hidepid=2, for pods to join. What a pod sees is the same as in a namespace of its own
// (hidepid hides by uid), but a start then copies no mount table and an exit waits for no RCU
// grace period (docs/agent.md, "Its own /proc"). -1 where it cannot be made, or where joining
// it would not keep the agent's root directory (a chrooted agent).
int shared_proc_namespace();

// Whether this machine lets the agent give pods a private /proc (a forked probe tries it).
bool private_proc_works();

// vfork + the child's setup + execve. Returns the pid (or -1, errno set). When the child fails
// before its exec, *error says where (stage != 0) and the child has exited 127 (the caller
// reaps it); else *error is {0, 0} and the pid runs the command.
pid_t spawn_child(const ChildSetup& c, ChildError* error);

}  // namespace sluice::agent
