#include "agent/isolation.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "agent/sandbox.h"
#include "agent/spawn.h"

namespace sluice::agent {
namespace fs = std::filesystem;

namespace {

// The first of `dir` and the directories above it that other users cannot search ("" if
// none): a pod then reaches its work dir only as its current directory, not by path ($HOME,
// the checkpoint file).
std::string closed_ancestor(const fs::path& dir) {
  for (fs::path p = dir; !p.empty(); p = p.parent_path()) {
    struct stat st {};
    if (::stat(p.c_str(), &st) == 0 && !(st.st_mode & S_IXOTH)) return p.string();
    if (p == p.root_path()) break;
  }
  return {};
}

// Creates the state directory 0711, or tightens an existing one of the agent's to 0711 (one
// made by hand, or by an older agent, may be listable or writable by others). Returns the
// mode it had when it changed one ("" otherwise), for the log.
Result<std::string> make_state_dir(const fs::path& dir) {
  // Searchable, not listable: pods reach their own work dir by name, nothing else.
  constexpr auto kMode = fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec;
  std::error_code ec;
  struct stat st {};
  const bool existed = ::stat(dir.c_str(), &st) == 0;
  if (!existed) fs::create_directories(dir, ec);
  if (existed && (!S_ISDIR(st.st_mode) || st.st_uid != ::geteuid())) return std::string();
  const auto before = static_cast<fs::perms>(st.st_mode & 07777);
  if (!ec && (!existed || before != kMode)) fs::permissions(dir, kMode, ec);
  if (ec) return Error{"cannot create " + dir.string() + ": " + ec.message()};
  if (!existed || before == kMode) return std::string();
  char mode[8];
  std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
  return std::string(mode);
}

// STATE/bin (mode 0755) with `srun` linking to `exe`, made again at each start (the binary may
// have moved); the directory.
Result<std::string> step_bin_dir(const std::string& state_dir, const std::string& exe) {
  const fs::path bin = fs::path(state_dir) / "bin";
  const fs::path link = bin / "srun";
  std::error_code ec;
  fs::create_directories(bin, ec);
  if (!ec) fs::permissions(bin, fs::perms(0755), ec);
  if (!ec && fs::is_symlink(link)) fs::remove(link, ec);
  if (!ec) fs::create_symlink(exe, link, ec);
  if (ec) return Error{"cannot make " + link.string() + " (srun for job steps): " + ec.message()};
  return bin.string();
}

void add_note(PodLaunch& launch, const std::string& note) {
  launch.note += (launch.note.empty() ? "" : "; ") + note;
}

// Slurm's --output/--error: the pod writes there (opened as its user), not to its log.
void redirect_output(const proto::Assignment& a, const PodPaths& paths, PodLaunch& launch) {
  launch.output_path = a.output_path;
  launch.error_path = a.error_path;
  if (!a.output_path.empty() || !a.error_path.empty())
    add_note(launch, "stdout goes to " + (a.output_path.empty() ? "this log" : a.output_path) +
                         ", stderr to " +
                         (!a.error_path.empty()   ? a.error_path
                          : a.output_path.empty() ? "this log"
                                                  : a.output_path) +
                         " (--output/--error, in " +
                         (launch.start_dir.empty() ? paths.work_dir : launch.start_dir) + ")");
}

}  // namespace

Result<std::unique_ptr<PodIsolation>> PodIsolation::create(
    IsolationOptions options, const std::string& state_dir,
    const std::function<void(const std::string&)>& log) {
  std::unique_ptr<PodIsolation> iso(new PodIsolation());
  iso->state_dir_ = fs::absolute(state_dir).lexically_normal().string();
  while (iso->state_dir_.size() > 1 && iso->state_dir_.back() == '/') iso->state_dir_.pop_back();
  auto made = make_state_dir(iso->state_dir_);
  if (!made) return Error{made.error()};
  if (!made->empty())
    log("tightened " + iso->state_dir_ + " from mode " + *made + " to 0711 (what a new one gets)");
  if (!options.step_exe.empty()) {
    auto bin = step_bin_dir(iso->state_dir_, options.step_exe);
    if (!bin) return Error{bin.error()};
    iso->step_bin_ = *bin;
  }
  // 1. Users.
  const bool root = ::geteuid() == 0;
  if (options.drop_privileges == 1 && !root)
    return Error{"pods can run as other users only when the agent is root"};
  if (options.drop_privileges != 0 && root) {
    auto r = IdentityResolver::create(options.identity, iso->state_dir_ + "/uids.json");
    if (!r) return Error{r.error()};
    iso->resolver_ = std::move(*r);
    log(iso->resolver_->describe() + "; never root unless the ClusterQueue allows it");
    if (auto closed = closed_ancestor(iso->state_dir_); !closed.empty())
      log("warning: " + closed +
          " is not searchable by other users: pods reach their work dir "
          "only as their current directory ($HOME and $SLUICE_CHECKPOINT_FILE do not resolve); "
          "use a --state-dir such as /var/lib/sluice-agent");
  } else {
    log(std::string(root ? "--pods-as-agent"
                         : "the agent is not root (uid " + std::to_string(::geteuid()) + ")") +
        ": pods run as the agent's own user, with its environment less SLUICE_*; pods of "
        "different namespaces can read each other's files and signal each other");
  }
  // 1b. What pods see of other processes: their own /proc (root only: it mounts).
  if (iso->resolver_ && options.private_proc) {
    iso->private_proc_ = private_proc_works();
    log(iso->private_proc_
            ? "pods outside the sandbox get their own /proc (hidepid=2): other namespaces' "
              "processes and command lines are hidden"
            : "warning: this machine does not let the agent mount a private /proc for pods "
              "(no mount namespace): pods outside the sandbox see every process's command line");
  }
  // 2. Sandbox.
  if (options.sandbox == "bwrap") {
    iso->bwrap_ = find_bwrap(options.bwrap);
    if (iso->bwrap_.empty())
      return Error{"--sandbox bwrap: \"" + options.bwrap +
                   "\" not found (Debian: apt install bubblewrap)"};
    log("sandbox: " + iso->bwrap_ +
        " (read-only host, private /tmp, own PID namespace, only "
        "the pod's work dir writable, only its GPUs' device nodes)");
  } else if (options.sandbox != "none") {
    return Error{"bad --sandbox \"" + options.sandbox + "\" (want none or bwrap)"};
  }
  // 3. Container runtime.
  iso->container_gpu_devices_ = options.container_gpu_devices;
  iso->runtime_ = split_runtime(options.container_runtime);
  if (!iso->runtime_.empty()) {
    const char* path = std::getenv("PATH");
    auto exe = find_executable(iso->runtime_[0], path ? path : "/usr/bin:/bin");
    if (!exe)
      return Error{"--container-runtime: \"" + iso->runtime_[0] +
                   "\" not found (Debian: apt install podman)"};
    iso->runtime_[0] = *exe;
    log("images run in containers: " + options.container_runtime);
  }
  // 4. cgroups.
  std::string skip;
  auto cg = Cgroups::create(options.cgroups, &skip);
  if (!cg) return Error{cg.error()};
  iso->cgroups_ = std::move(*cg);
  log(iso->cgroups_ ? "cgroup limits (cpu.max, memory.max) for pods under " + iso->cgroups_->root()
                    : skip);
  return iso;
}

// The job's working directory, where this node has it (it shares the submitter's files): the
// pod starts there, else in its work dir with a note. *shared: it starts there. Returns "" or
// why the pod may not run.
std::string PodIsolation::use_working_dir(const proto::Assignment& a, const std::string& node,
                                          const PodPaths& paths, PodLaunch& launch,
                                          bool* shared) const {
  if (a.working_dir.empty()) return {};
  if (a.working_dir.front() != '/')
    return "working directory \"" + a.working_dir + "\" is not an absolute path";
  struct stat st {};
  *shared = ::stat(a.working_dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
  const std::string reserved = bwrap_.empty() ? "" : sandbox_reserved(a.working_dir, state_dir_);
  if (!reserved.empty()) {
    *shared = false;
    add_note(launch, "working directory " + a.working_dir + " is not bound into the sandbox (" +
                         reserved + "): the pod starts in " + paths.work_dir);
  } else if (*shared) {
    launch.start_dir = a.working_dir;
  } else
    add_note(launch, "working directory " + a.working_dir + " does not exist on node " + node +
                         " (it does not share the submitter's files): the pod starts in " +
                         paths.work_dir);
  return {};
}

// The user the pod runs as: with a resolver, the one it resolves (and a minimal environment);
// else the agent's own, with a note when the job wanted another. Returns "" or why the pod may
// not run.
std::string PodIsolation::choose_identity(const proto::Assignment& a, bool shared,
                                          const PodPaths& paths, PodContext& ctx,
                                          PodLaunch& launch) const {
  if (resolver_) {
    // The submitter's own ids (a server without tokens reports them) only where the pod works
    // in the submitter's directory: elsewhere its namespace's uid keeps tenants apart.
    proto::Assignment who = a;
    if (a.run_as_uid < 0 && a.submitter_uid > 0) {
      if (shared) {
        who.run_as_uid = a.submitter_uid;
        who.run_as_gid = a.submitter_gid;
      } else if (!a.working_dir.empty()) {
        add_note(launch, "it runs as its namespace's uid, not the submitter's uid " +
                             std::to_string(a.submitter_uid));
      }
    }
    auto id = resolver_->resolve(who);
    if (!id) return id.error();
    launch.identity = *id;
    ctx.minimal = true;
    ctx.home = paths.work_dir;
    ctx.user = id->user;
  } else if (const int64_t want = a.run_as_uid >= 0 ? a.run_as_uid : a.submitter_uid;
             want > 0 && want != static_cast<int64_t>(::geteuid())) {
    add_note(launch, "the pod runs as the agent's uid " + std::to_string(::geteuid()) +
                         ", not the submitter's uid " + std::to_string(want) + ": " +
                         (::geteuid() == 0 ? "the agent runs pods as itself (--pods-as-agent)"
                                           : "only a root agent can run pods as other users"));
  }
  return {};
}

// What the pod's command runs inside: a container for an image (where this node has a runtime),
// else the sandbox if there is one. Returns "" or why the pod may not run here.
std::string PodIsolation::choose_wrapper(const proto::Assignment& a, const PodPaths& paths,
                                         PodLaunch& launch) const {
  if (!a.image.empty() && !runtime_.empty()) {
    std::vector<std::string> devices;
    if (container_gpu_devices_)
      for (int32_t g : a.gpus) devices.push_back("nvidia.com/gpu=" + std::to_string(g));
    auto c = container_launch(runtime_, a, paths.work_dir, launch.env, launch.identity, devices);
    launch.wrapper = std::move(c.argv);
    launch.cleanup = std::move(c.cleanup);
    launch.in_container = true;
    // With a Kubernetes `command`, its first word is the entrypoint (container.cc).
    if (!a.image_args_only && !launch.argv.empty()) launch.argv.erase(launch.argv.begin());
  } else if (!a.image.empty() && !a.image_on_host) {
    return "image " + a.image +
           " but this node's agent has no container runtime (--container-runtime), and the "
           "ClusterQueue does not let images' commands run on the node "
           "(spec.sluice.runImagesOnHost)";
  } else if (!a.image.empty() && a.image_args_only) {
    // On the node itself there is no image, so no entrypoint for `args` to follow: running
    // the first argument as the command would run something the job never named.
    return "image " + a.image +
           ": only `args` were given, which follow the image's entrypoint, and this node runs "
           "images' commands on the node itself (no container runtime): give the container a "
           "`command`";
  } else if (!bwrap_.empty()) {
    launch.wrapper =
        bwrap_argv(bwrap_, {state_dir_, paths.work_dir, launch.start_dir, a.tty}, a.gpus);
    launch.sandboxed = true;
  }
  return {};
}

std::string PodIsolation::prepare(const proto::Assignment& a, PodContext ctx,
                                  const char* const* base_env, PodLaunch& launch) {
  const PodPaths paths = pod_paths(state_dir_, {a.job, a.pod});
  bool shared = false;
  if (auto why = use_working_dir(a, ctx.node, paths, launch, &shared); !why.empty()) return why;
  if (auto why = choose_identity(a, shared, paths, ctx, launch); !why.empty()) return why;
  ctx.step_bin = step_bin_;
  launch.env = compose_pod_env(a, ctx, base_env);
  if (auto why = choose_wrapper(a, paths, launch); !why.empty()) return why;
  launch.private_proc = private_proc_ && !launch.sandboxed && !launch.in_container;
  launch.cpu_milli = a.cpu_milli;
  launch.memory_mib = a.memory_mib;
  launch.tty = a.tty;
  if (a.tty) return {};  // its terminal is its stdin, stdout and stderr
  redirect_output(a, paths, launch);
  return {};
}

std::string PodIsolation::container_runtime() const {
  return runtime_.empty() ? std::string() : fs::path(runtime_[0]).filename().string();
}

}  // namespace sluice::agent
