// `sluice srun` (and `srun`, the name the agent's step directory gives it on a pod's PATH): a
// job step inside a sluice job (docs/cli.md, "Job steps"). The pods of a multi-node sbatch job
// meet in a directory of the job's (shared) working directory: the batch pod runs the script,
// every other pod waits for steps there; `srun` in the script writes a step, runs its own
// tasks, and waits for each pod's exit file.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "agent/spawn.h"
#include "cli/client_step.h"
#include "cli/commands.h"

extern char** environ;

namespace sluice::cli {

namespace {

namespace fs = std::filesystem;
constexpr auto kPoll = std::chrono::milliseconds(100);

int exit_code(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

// A task: `command` with `env` in `cwd` (where it exists), or -1 with why on stderr.
pid_t spawn(const std::vector<std::string>& command, const EnvMap& env, const std::string& cwd) {
  std::vector<std::string> kv;
  for (const auto& [k, v] : env) kv.push_back(k + "=" + v);
  std::vector<char*> argv, envp;
  for (const auto& a : command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (auto& e : kv) envp.push_back(e.data());
  envp.push_back(nullptr);
  // PATH lookup with the task's PATH, as a shell would (and as the agent finds a pod's).
  auto it = env.find("PATH");
  const std::string exe =
      agent::find_executable(command[0], it == env.end() ? "" : it->second).value_or(command[0]);
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (!cwd.empty() && ::chdir(cwd.c_str()) != 0) {
      // The directory is the batch pod's; this node may lack it: stay where the pod started.
    }
    ::execve(exe.c_str(), argv.data(), envp.data());
    std::cerr << "srun: " << command[0] << ": " << std::strerror(errno) << "\n";
    ::_exit(errno == ENOENT ? 127 : 126);
  }
  if (pid < 0) std::cerr << "srun: fork: " << std::strerror(errno) << "\n";
  return pid;
}

// Tasks [0, count) of pod `slot`; their pids.
std::vector<pid_t> start_tasks(const std::vector<std::string>& command, const EnvMap& leader,
                               const EnvMap& own, const StepLayout& layout, int slot, int step,
                               const std::string& cwd) {
  std::vector<pid_t> pids;
  if (slot < 0 || slot >= layout.nodes) return pids;
  for (int t = 0; t < layout.count[static_cast<size_t>(slot)]; ++t) {
    const pid_t pid = spawn(command, task_env(leader, own, layout, slot, t, step), cwd);
    if (pid > 0) pids.push_back(pid);
  }
  return pids;
}

// Waits for every pid; the worst exit code (a task that did not start counts as 127).
int wait_all(const std::vector<pid_t>& pids, size_t wanted) {
  int worst = pids.size() < wanted ? 127 : 0;
  for (pid_t p : pids) {
    int status = 0;
    while (::waitpid(p, &status, 0) < 0 && errno == EINTR) {
    }
    worst = std::max(worst, exit_code(status));
  }
  return worst;
}

void write_file(const fs::path& path, const std::string& text) {
  const fs::path tmp = path.string() + ".tmp";
  std::ofstream(tmp) << text;
  std::error_code ec;
  fs::rename(tmp, path, ec);  // atomic: a reader sees all of it or nothing
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

int env_int(const EnvMap& env, const char* key, int fallback) {
  auto it = env.find(key);
  if (it == env.end() || it->second.empty() || it->second.size() > 9 ||
      it->second.find_first_not_of("0123456789") != std::string::npos)
    return fallback;
  return std::stoi(it->second);
}

// The job's step directory: in its working directory (a shared filesystem), per job and run.
std::optional<fs::path> step_dir(const EnvMap& env) {
  auto dir = env.find("SLURM_SUBMIT_DIR");
  if (dir == env.end() || dir->second.empty()) return std::nullopt;
  const std::string run = env.count("SLUICE_RUN") ? env.at("SLUICE_RUN") : "0";
  return fs::path(dir->second) / ".sluice-steps" /
         (env.count("SLUICE_JOB_ID") ? env.at("SLUICE_JOB_ID") + "." + run : "0." + run);
}

// `srun` in the batch script: the step for every pod taking part, this pod's tasks here.
int lead_step(const SrunArgs& args, const StepLayout& layout, const EnvMap& env,
              const fs::path& dir) {
  int id = 0;
  for (std::error_code ec; !fs::create_directory(dir / ("step-" + std::to_string(id)), ec);) {
    if (ec) {
      std::cerr << "srun: " << dir.string() << ": " << ec.message() << "\n";
      return 1;
    }
    ++id;  // taken by another srun of the script
  }
  const fs::path step = dir / ("step-" + std::to_string(id));
  std::error_code ec;
  const std::string cwd = fs::current_path(ec).string();
  write_file(step / "spec.json", step_spec(args.command, env, cwd, layout).dump());
  const auto pids = start_tasks(args.command, env, env, layout, 0, id, cwd);
  int worst = wait_all(pids, static_cast<size_t>(layout.count[0]));
  std::set<int> waiting;
  for (int n = 1; n < layout.nodes; ++n)
    if (layout.count[static_cast<size_t>(n)] > 0) waiting.insert(n);
  while (!waiting.empty()) {  // ends when every pod has written its exit (or the job is killed)
    for (auto it = waiting.begin(); it != waiting.end();) {
      const fs::path exit = step / ("exit-" + std::to_string(*it));
      if (!fs::exists(exit)) {
        ++it;
        continue;
      }
      worst = std::max(worst, env_int({{"x", read_file(exit)}}, "x", 1));
      it = waiting.erase(it);
    }
    if (!waiting.empty()) std::this_thread::sleep_for(kPoll);
  }
  return worst;
}

struct Running {
  std::set<pid_t> pids;
  int worst = 0;
};

// Starts the steps that appeared since `next`; false once the batch pod is done.
bool take_new_steps(const fs::path& dir, const EnvMap& own, int slot, int& next,
                    std::map<int, Running>& running) {
  // Looked at first: every step written before `done` is then seen below.
  const bool done = fs::exists(dir / "done");
  for (;; ++next) {
    const fs::path spec = dir / ("step-" + std::to_string(next)) / "spec.json";
    if (!fs::exists(spec)) break;
    std::vector<std::string> command;
    EnvMap leader;
    std::string cwd;
    StepLayout layout;
    const auto doc = nlohmann::json::parse(read_file(spec), nullptr, false);
    if (!read_step_spec(doc, command, leader, cwd, layout)) {
      std::cerr << "srun: " << spec.string() << " is not a step\n";
      continue;
    }
    if (slot >= layout.nodes || layout.count[static_cast<size_t>(slot)] == 0) continue;
    const auto pids = start_tasks(command, leader, own, layout, slot, next, cwd);
    Running& r = running[next];
    r.pids.insert(pids.begin(), pids.end());
    if (pids.size() < static_cast<size_t>(layout.count[static_cast<size_t>(slot)])) r.worst = 127;
  }
  return !done;
}

// Every pod but the batch pod: runs its tasks of each step until the batch script ends.
int follow_steps(const EnvMap& own, const fs::path& dir) {
  const int slot = env_int(own, "SLUICE_POD_INDEX", 0);
  int next = 0;
  std::map<int, Running> running;
  bool open = true;
  while (open || !running.empty()) {
    if (open) open = take_new_steps(dir, own, slot, next, running);
    int status = 0;
    for (pid_t p; (p = ::waitpid(-1, &status, WNOHANG)) > 0;)
      for (auto& [id, r] : running)
        if (r.pids.erase(p)) r.worst = std::max(r.worst, exit_code(status));
    for (auto it = running.begin(); it != running.end();) {
      if (!it->second.pids.empty()) {
        ++it;
        continue;
      }
      write_file(dir / ("step-" + std::to_string(it->first)) / ("exit-" + std::to_string(slot)),
                 std::to_string(it->second.worst));
      it = running.erase(it);
    }
    if (open || !running.empty()) std::this_thread::sleep_for(kPoll);
  }
  return 0;
}

// `srun --batch -- SCRIPT...`: the pod command of a multi-node sbatch job.
int batch(const SrunArgs& args, const EnvMap& env) {
  const auto dir = step_dir(env);
  if (!dir) {
    std::cerr << "srun: a job of several pods meets in its working directory, and this one has "
                 "none (submit from a directory the nodes share)\n";
    return 1;
  }
  std::error_code ec;
  // The job's directory itself must be there (a node without it does not share the files:
  // waiting there for steps would wait forever); the step directory is made inside it.
  const fs::path submit_dir = env.at("SLURM_SUBMIT_DIR");
  if (!fs::is_directory(submit_dir, ec)) {
    std::cerr << "srun: the job's directory " << submit_dir.string() << " is not on node "
              << (env.count("SLUICE_NODE") ? env.at("SLUICE_NODE") : "?")
              << ": the pods of a job of several nodes meet there (a filesystem the nodes "
                 "share)\n";
    return 1;
  }
  fs::create_directories(*dir, ec);
  if (ec) {
    std::cerr << "srun: " << dir->string() << ": " << ec.message() << "\n";
    return 1;
  }
  if (env_int(env, "SLUICE_POD_INDEX", 0) != 0) return follow_steps(env, *dir);
  EnvMap script_env = env;
  script_env["SLUICE_STEP_DIR"] = dir->string();
  const pid_t pid = spawn(args.command, script_env, "");
  const int code = pid > 0 ? wait_all({pid}, 1) : 127;
  write_file(*dir / "done", std::to_string(code));
  return code;
}

}  // namespace

int srun_main(const std::vector<std::string>& words) {
  SrunArgs args;
  if (auto why = parse_srun_args(words, args)) {
    std::cerr << *why << "\n";
    return 1;
  }
  const EnvMap env = env_map(environ);
  if (!env.count("SLUICE_JOB_ID")) {
    std::cerr << "srun: not inside a sluice job (no SLUICE_JOB_ID): submit with `sluice run` "
                 "or `sluice sbatch`\n";
    return 1;
  }
  if (args.batch) return batch(args, env);
  StepLayout layout;
  if (auto why = step_layout(env, args, layout)) {
    std::cerr << *why << "\n";
    return 1;
  }
  // The batch script of a multi-node job: a step on every pod. Elsewhere (one pod, a pod of
  // `sluice run`, a task): this pod's tasks.
  if (auto dir = env.find("SLUICE_STEP_DIR"); dir != env.end())
    return lead_step(args, layout, env, dir->second);
  const int slot = env_int(env, "SLUICE_POD_INDEX", 0);
  if (slot >= layout.nodes) return 0;
  const auto pids = start_tasks(args.command, env, env, layout, slot, 0, "");
  return wait_all(pids, static_cast<size_t>(layout.count[static_cast<size_t>(slot)]));
}

void register_step(CLI::App& app) {
  // Listed for --help; main() runs srun_main before CLI11 sees the words.
  app.add_subcommand("srun",
                     "Run a job step inside a sluice job (also as `srun` on a pod's PATH): "
                     "srun [-n N] [-N N] [--ntasks-per-node N] CMD..., once per task on the "
                     "job's nodes; exits with the worst task's status");
}

}  // namespace sluice::cli
