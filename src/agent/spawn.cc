// The child side of a pod's launch, and the files it is given.
#include "agent/spawn.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace sluice::agent {

std::optional<std::string> find_executable(const std::string& cmd, const std::string& path_value) {
  if (cmd.find('/') != std::string::npos) return cmd;
  const std::string path = path_value.empty() ? "/usr/local/bin:/usr/bin:/bin" : path_value;
  size_t pos = 0;
  while (pos <= path.size()) {
    size_t colon = path.find(':', pos);
    if (colon == std::string::npos) colon = path.size();
    std::string dir = path.substr(pos, colon - pos);
    if (dir.empty()) dir = ".";
    std::string candidate = dir + "/" + cmd;
    struct stat st {};
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        ::access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
    pos = colon + 1;
  }
  return std::nullopt;
}

std::optional<std::string> ExecutableCache::find(const std::string& cmd, const std::string& path,
                                                 Clock::time_point now) {
  if (cmd.find('/') != std::string::npos) return cmd;
  std::string key = cmd + '\0' + path;
  if (auto it = found_.find(key); it != found_.end() && now - it->second.at < ttl_)
    return it->second.file;
  auto file = find_executable(cmd, path);
  if (!file) {
    found_.erase(key);
    return file;
  }
  if (found_.size() >= kMaxEntries) found_.clear();
  found_[std::move(key)] = Found{*file, now};
  return file;
}

// Whether the process's umask leaves the owner's bits alone (read once from /proc/self/status,
// as umask() itself can only be read by setting it): then mkdir(0700) and open(0600) create
// exactly those modes, and only what existed before needs a chmod. False when unknown.
static bool umask_keeps_owner_bits() {
  static const bool keeps = [] {
    std::ifstream status("/proc/self/status");
    for (std::string line; std::getline(status, line);) {
      if (line.rfind("Umask:", 0) != 0) continue;
      try {
        return (std::stoul(line.substr(6), nullptr, 8) & 0700) == 0;
      } catch (const std::exception&) {
        return false;
      }
    }
    return false;
  }();
  return keeps;
}

int open_pod_files(const PodFiles& files, const std::optional<PodIdentity>& identity,
                   std::string* why) {
  // work/ and logs/ belong to the agent (0711: a pod reaches its own entry by name but cannot
  // list the others or replace its own with a link), so these paths are the agent's to create.
  // One mkdir() in the common case (the parent exists): create_directories() would stat every
  // component first, and this runs for every pod the agent starts.
  std::error_code ec;
  const bool made = ::mkdir(files.work_dir.c_str(), 0700) == 0;
  if (!made) std::filesystem::create_directories(files.work_dir, ec);  // no parent, or it exists
  if (ec) {
    *why = "cannot create " + files.work_dir + ": " + ec.message();
    return -1;
  }
  const bool exact = umask_keeps_owner_bits();
  if ((identity && ::lchown(files.work_dir.c_str(), identity->uid, identity->gid) != 0) ||
      ((!made || !exact) && ::chmod(files.work_dir.c_str(), 0700) != 0)) {
    *why = "cannot give " + files.work_dir + " to the pod: " + std::strerror(errno);
    return -1;
  }
  // A new log in one open(); one left by an earlier run (or an older agent, 0644) is opened
  // for appending and tightened.
  constexpr int kFlags = O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW;
  int fd = ::open(files.log.c_str(), kFlags | O_EXCL, 0600);
  const bool created = fd >= 0;
  if (fd < 0 && errno == EEXIST) fd = ::open(files.log.c_str(), kFlags, 0600);
  if (fd < 0) {
    *why = "cannot open " + files.log + ": " + std::strerror(errno);
    return -1;
  }
  if ((identity && ::fchown(fd, identity->uid, identity->gid) != 0) ||
      ((!created || !exact) && ::fchmod(fd, 0600) != 0)) {
    *why = "cannot give " + files.log + " to the pod: " + std::strerror(errno);
    ::close(fd);
    return -1;
  }
  return fd;
}

int dev_null() {
  static const int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  return fd;
}

const char* child_stage_name(int32_t stage) {
  switch (stage) {
    case 1:
      return "chdir ";
    case 3:
      return "setsid ";
    case 4:
      return "redirect ";
    case 5:
      return "drop privileges for ";
    case 6:
      return "join the cgroup for ";
    case 7:
      return "enter the working directory ";
    case 8:
      return "open the output file ";
    case 9:
      return "open the error file ";
    case 10:
      return "take as controlling terminal ";
    case 11:
      return "set the process limit for ";
    case 12:
      return "set up a private /proc for ";
    default:
      return "exec ";
  }
}

// After vfork() the child shares the agent's memory until execve, so it only makes system calls
// (no allocation, no locks) and leaves by execve or _exit. vfork, not fork: with many agents in
// one process (hundreds of threads) copying the page tables for every pod was the agent's main
// CPU cost. Signals are blocked around the call so that no handler of the agent runs on the
// child's borrowed stack. Credentials change through raw system calls: glibc's setuid() and
// friends broadcast the change to every thread of the process (POSIX semantics), which in a
// vfork child would be the agent's threads.
// In the vfork child, as the pod's user: `path` (created, appended to; truncated first unless
// `append`) becomes stdout (fd 1), and stderr too when `fd` is 0; else it becomes `fd`. System
// calls only.
static bool redirect_to(const char* path, int fd, bool append) {
  const int out =
      ::open(path, O_WRONLY | O_CREAT | O_APPEND | (append ? 0 : O_TRUNC) | O_CLOEXEC, 0644);
  if (out < 0) return false;
  const bool ok = fd == 0 ? ::dup2(out, 1) >= 0 && ::dup2(out, 2) >= 0 : ::dup2(out, fd) >= 0;
  ::close(out);
  return ok;
}

// In the vfork child: the process limit of the uid it is about to become. System calls only.
static bool set_nproc(long max_procs) {
  struct rlimit lim {};
  lim.rlim_cur = lim.rlim_max = static_cast<rlim_t>(max_procs);
  return ::syscall(SYS_prlimit64, 0, RLIMIT_NPROC, &lim, nullptr) == 0;
}

// In the vfork child (still root): its own mount namespace, which still receives the host's
// later mounts (slave), with a /proc of the same PID namespace that hides the processes of other
// uids. System calls only.
static bool own_proc() {
  return ::unshare(CLONE_NEWNS) == 0 &&
         ::mount(nullptr, "/", nullptr, MS_REC | MS_SLAVE, nullptr) == 0 &&
         ::mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "hidepid=2") == 0;
}

// Whether `check` holds in a forked child (it runs there, system calls only).
template <class Check>
static bool holds_in_child(Check check) {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(check() ? 0 : 1);
  if (pid < 0) return false;
  int st = 0;
  while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

// Whether a child that joins `ns` keeps this process's root directory (setns moves the joiner
// to the namespace's root: a chrooted agent would let its pods out).
static bool joining_keeps_root(int ns) {
  struct stat mine {};
  if (::stat("/", &mine) != 0) return false;
  return holds_in_child([&] {
    struct stat there {};
    return ::setns(ns, CLONE_NEWNS) == 0 && ::stat("/", &there) == 0 &&
           there.st_dev == mine.st_dev && there.st_ino == mine.st_ino;
  });
}

// The pods' namespace (-1: none to join) and whether this machine lets a child make one at
// all (own_proc), which the holder's attempt answers too.
struct ProcNamespace {
  int fd = -1;
  bool works = false;
};

// A holder child makes the namespace (own_proc) and waits; this process opens it through
// /proc/<holder>/ns/mnt, which keeps it alive after the holder is gone.
static ProcNamespace make_proc_namespace() {
  int ready[2] = {-1, -1}, done[2] = {-1, -1};
  if (::pipe2(ready, O_CLOEXEC) != 0 || ::pipe2(done, O_CLOEXEC) != 0) {
    for (int fd : {ready[0], ready[1]})
      if (fd >= 0) ::close(fd);
    return {-1, holds_in_child(own_proc)};
  }
  const pid_t holder = ::fork();
  if (holder == 0) {
    ::close(ready[0]);
    ::close(done[1]);  // else its own copy would keep the read below from ever seeing EOF
    const char ok = own_proc() ? 1 : 0;
    [[maybe_unused]] auto n = ::write(ready[1], &ok, 1);
    char c = 0;
    // Until the agent has opened the namespace (a byte), or is gone (EOF).
    [[maybe_unused]] auto m = ::read(done[0], &c, 1);
    ::_exit(0);
  }
  ::close(ready[1]);
  ::close(done[0]);
  char ok = 0;
  ssize_t n = -1;
  if (holder > 0) {
    do {
      n = ::read(ready[0], &ok, 1);
    } while (n < 0 && errno == EINTR);
  }
  ProcNamespace made;
  made.works = n == 1 && ok == 1;
  if (made.works) {
    const std::string path = "/proc/" + std::to_string(holder) + "/ns/mnt";
    made.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  }
  ::close(ready[0]);
  [[maybe_unused]] auto w = ::write(done[1], "x", 1);
  ::close(done[1]);
  if (holder > 0) {
    while (::waitpid(holder, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
  if (made.fd >= 0 && !joining_keeps_root(made.fd)) {
    ::close(made.fd);
    made.fd = -1;
  }
  return made;
}

// Once per process: the machine's answer does not change, and `--names n[1-64]` starts many
// agents in one process.
static const ProcNamespace& proc_namespace() {
  static const ProcNamespace made = make_proc_namespace();
  return made;
}

int shared_proc_namespace() {
  return proc_namespace().fd;
}

bool private_proc_works() {
  return proc_namespace().works;
}

// In the child: every descriptor from 3 up closed, but `keep` (-1: none); one by one up to
// max_fd where close_range fails (kernels before 5.9). System calls only.
static void close_from_3(int keep, long max_fd) {
  const bool ok = keep < 0
                      ? ::close_range(3, ~0U, 0) == 0
                      : (keep <= 3 || ::close_range(3, static_cast<unsigned>(keep) - 1, 0) == 0) &&
                            ::close_range(static_cast<unsigned>(keep) + 1, ~0U, 0) == 0;
  if (ok) return;
  for (long fd = 3; fd < max_fd; ++fd) {
    if (fd != keep) ::close(static_cast<int>(fd));
  }
}

__attribute__((noinline)) pid_t spawn_child(const ChildSetup& c, ChildError* error) {
  *error = ChildError{};
#if defined(__SANITIZE_ADDRESS__)
  // ASan's interceptors (sigaction, execve, ...) touch its own state in the child, which under
  // vfork is the parent's memory: sanitizer builds pay for a real fork, whose error comes back
  // through a CLOEXEC pipe (EOF: the exec succeeded).
  int err_pipe[2] = {-1, -1};
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) return -1;
#else
  const int err_pipe[2] = {-1, -1};
#endif
  const int proc_ns = c.private_proc && c.uid != 0 ? shared_proc_namespace() : -1;
  sigset_t all, old;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &old);
#if defined(__SANITIZE_ADDRESS__)
  const pid_t pid = ::fork();
#else
  const pid_t pid = ::vfork();
#endif
  if (pid == 0) {
    // Ignored or handled signals must not carry over (the agent ignores SIGPIPE): defaults
    // first, then an empty mask.
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    for (int s = 1; s < NSIG; ++s) {
      if (s != SIGKILL && s != SIGSTOP) ::sigaction(s, &dfl, nullptr);
    }
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ChildError e{0, 0};
    if (::setsid() < 0) {
      e = {3, errno};
    } else if (c.tty_fd >= 0 && ::ioctl(c.tty_fd, TIOCSCTTY, 0) != 0) {
      e = {10, errno};
    } else if (c.cgroup_fd >= 0 && ::write(c.cgroup_fd, "0", 1) != 1) {
      e = {6, errno};  // "0": the writing process joins the group
    } else if (c.private_proc &&
               !(proc_ns >= 0 ? ::setns(proc_ns, CLONE_NEWNS) == 0 : own_proc())) {
      // Before the chdir: joining a mount namespace moves the process to its root.
      e = {12, errno};
    } else if (::chdir(c.work_dir) != 0) {
      // As the agent: the pod keeps its work dir as cwd even where the path above it is closed.
      e = {1, errno};
    } else if (::dup2(c.null_fd, 0) < 0 || ::dup2(c.log_fd, 1) < 0 || ::dup2(c.log_fd, 2) < 0) {
      e = {4, errno};
    } else if (c.drop && c.max_procs > 0 && !set_nproc(c.max_procs)) {
      e = {11, errno};
    } else if (c.drop && (::syscall(SYS_setgroups, 0, nullptr) != 0 ||
                          ::syscall(SYS_setresgid, c.gid, c.gid, c.gid) != 0 ||
                          ::syscall(SYS_setresuid, c.uid, c.uid, c.uid) != 0 ||
                          // No way back up: setuid-root and file-capability binaries (sudo,
                          // su) run without their privileges.
                          ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)) {
      e = {5, errno};
    } else if (c.start_dir && ::chdir(c.start_dir) != 0) {
      e = {7, errno};
    } else if (c.out_path && !redirect_to(c.out_path, c.err_path ? 1 : 0, c.out_append)) {
      e = {8, errno};
    } else if (c.err_path && !redirect_to(c.err_path, 2, c.out_append)) {
      e = {9, errno};
    } else {
      // No descriptor of the agent (sockets, other pods' files) leaks into the job.
      close_from_3(err_pipe[1], c.max_fd);
      ::execve(c.exe, c.argv, c.envp);
      e = {2, errno};
    }
#if defined(__SANITIZE_ADDRESS__)
    [[maybe_unused]] auto n = ::write(err_pipe[1], &e, sizeof e);
#else
    // Under vfork this is the parent's memory, and the parent resumes only once the child has
    // exec'd or exited: the error goes straight into its variable, as glibc's posix_spawn
    // does (no pipe: four system calls and a pipe fewer per pod).
    volatile ChildError* out = error;
    out->stage = e.stage;
    out->err = e.err;
#endif
    ::_exit(127);
  }
  const int saved = errno;
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
#if defined(__SANITIZE_ADDRESS__)
  ::close(err_pipe[1]);
  if (pid > 0) {
    ChildError ce{};
    ssize_t n = 0;
    do {
      n = ::read(err_pipe[0], &ce, sizeof ce);
    } while (n < 0 && errno == EINTR);
    if (n == static_cast<ssize_t>(sizeof ce)) *error = ce;
  }
  ::close(err_pipe[0]);
#endif
  errno = saved;
  return pid;
}

}  // namespace sluice::agent
