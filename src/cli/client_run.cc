#include "cli/client_run.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <string_view>

#include "cli/client_export.h"
#include "cli/client_time.h"
#include "config/loader.h"
#include "core/model/deadline.h"
#include "core/model/job_control.h"

namespace sluice::cli {

using nlohmann::json;

namespace {

Outcome<json> bad(std::string message) {
  return Outcome<json>::fail({1, "error: " + message});
}

std::string basename_of(const std::string& path) {
  auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// A DNS-label-ish stem: lower-case letters, digits and '-', at most 40 characters.
std::string dns_label(const std::string& text) {
  std::string out;
  for (char c : text) {
    auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u)) {
      out += static_cast<char>(std::tolower(u));
    } else if (!out.empty() && out.back() != '-') {
      out += '-';
    }
    if (out.size() >= 40) break;
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out;
}

bool is_interpreter(const std::string& base) {
  static const char* kInterpreters[] = {"python",   "python3", "bash",      "sh",
                                        "torchrun", "env",     "deepspeed", "accelerate",
                                        "srun",     "mpirun",  "node"};
  for (const char* i : kInterpreters)
    if (base == i) return true;
  return false;
}

// "0.5" or "500m" -> true when in (0, 1]. The server checks it again; this catches typos early.
bool valid_fraction(const std::string& f) {
  if (f.empty()) return false;
  char* end = nullptr;
  double v = std::strtod(f.c_str(), &end);
  std::string rest = end;
  if (end == f.c_str()) return false;
  if (rest == "m")
    v /= 1000.0;
  else if (!rest.empty())
    return false;
  return std::isfinite(v) && v > 0 && v <= 1;
}

}  // namespace

std::string name_from_command(const std::vector<std::string>& command) {
  if (command.empty()) return "run";
  // `python train.py` names the job after the script, not the interpreter; flags are skipped.
  // `python -m pkg.mod` after the module; `bash -c '...'` after the interpreter (the script
  // text makes a poor name).
  std::string base = basename_of(command[0]);
  if (is_interpreter(base)) {
    for (std::size_t i = 1; i < command.size(); ++i) {
      const std::string& arg = command[i];
      if (arg == "-c") break;
      if (arg == "-m") {
        if (i + 1 < command.size()) base = command[i + 1];
        break;
      }
      if (arg.empty() || arg[0] == '-' || arg.find('=') != std::string::npos) continue;
      if (arg.find_first_of(" \t\n;") == std::string::npos) base = basename_of(arg);
      break;
    }
  }
  std::string label = dns_label(base);
  return label.empty() ? "run" : label;
}

TaskLayout task_layout(int nodes, int ntasks, int ntasks_per_node) {
  TaskLayout l;
  l.per_pod = ntasks_per_node > 0           ? ntasks_per_node
              : nodes > 0 && ntasks > nodes ? (ntasks + nodes - 1) / nodes
                                            : 1;
  l.pods = nodes > 0 ? nodes : (ntasks > 0 ? (ntasks + l.per_pod - 1) / l.per_pod : 1);
  l.one_per_node = nodes > 0 || ntasks_per_node > 0;
  l.ntasks = ntasks > 0 ? ntasks : l.pods * l.per_pod;
  if (l.ntasks > l.pods * l.per_pod)
    l.error = "-n " + std::to_string(l.ntasks) + " tasks do not fit on " + std::to_string(l.pods) +
              " nodes of " + std::to_string(l.per_pod) + " tasks (--ntasks-per-node)";
  return l;
}

void apply_task_layout(const TaskLayout& l, RunArgs& r) {
  r.gang = l.pods;
  r.one_per_node = l.one_per_node;
  if (l.per_pod > 1 || l.ntasks != l.pods) {
    r.env.push_back("SLURM_NTASKS_PER_NODE=" + std::to_string(l.per_pod));
    r.env.push_back("SLURM_NTASKS=" + std::to_string(l.ntasks));
  }
}

// Step 1 of build_run_job: options that cannot be right whatever the server's configuration
// ("": none); `limit`: --time, read.
std::string check_run_args(const RunArgs& a, std::optional<TimeLimit>* limit) {
  if (a.command.empty()) return "sluice run needs a command after `--`";
  if (a.gang < 1) return "--gang must be at least 1 (pods in the gang)";
  if (a.gpus < -1) return "--gpus must not be negative";
  if (!a.gpu_fraction.empty()) {
    if (!valid_fraction(a.gpu_fraction))
      return "--gpu-fraction \"" + a.gpu_fraction + "\" must be in (0, 1], e.g. 0.5 or 500m";
    if (a.gpus > 1) return "--gpu-fraction is a share of one GPU; drop --gpus or use --gpus 1";
  }
  if (a.gpus <= 0 && a.gpu_fraction.empty() && a.cpu.empty() && a.memory.empty())
    return "the job requests nothing: give --gpus N (or --gpu-fraction, --cpu, --memory)";
  if (!a.walltime.empty() && !(*limit = parse_time_limit(a.walltime)))
    return "--time \"" + a.walltime +
           "\" is not a time limit: minutes (90), MM:SS, HH:MM:SS, D-HH, D-HH:MM, "
           "D-HH:MM:SS, or with units (90s, 30m, 2h)";
  if (a.preemptible && a.no_preemptible)
    return "--preemptible and --no-preemptible exclude each other";
  if (!a.complete_by.empty() && !a.complete_within.empty())
    return "--complete-by and --complete-within exclude each other (one deadline)";
  if (!a.complete_by.empty() && !parse_rfc3339_ns(a.complete_by))
    return "--complete-by \"" + a.complete_by +
           "\" is not an RFC 3339 time (e.g. 2026-12-02T18:00:00Z)";
  if (!a.complete_within.empty()) {
    auto d = a.complete_within[0] == '-' ? std::nullopt : parse_duration_ns(a.complete_within);
    if (!d || *d <= 0 || *d > kMaxDeadlineAheadNs)
      return "--complete-within \"" + a.complete_within +
             "\" is not a positive duration of at most 10 years (e.g. 90m, 2h, 1d)";
  }
  if (a.pty && (a.gang > 1 || !a.array.empty() || !a.output.empty() || !a.error.empty()))
    return "--pty is one terminal: not with --gang, --array, --output or --error";
  return {};
}

// The job's environment: what --export passes of the caller's, the terminal's TERM for --pty,
// then each --env KEY=VALUE.
Outcome<json> run_env(const RunArgs& a) {
  auto exported = exported_env(a.export_spec, a.caller_env);
  if (!exported.ok) return Outcome<json>::fail(exported.failure);
  json env = json::object();
  for (const auto& [k, v] : exported.value) env[k] = v;
  if (a.pty && !env.contains("TERM"))  // the terminal it attaches to, as ssh passes it
    for (const char* const* e = a.caller_env; e && *e; ++e)
      if (std::string_view(*e).rfind("TERM=", 0) == 0) env["TERM"] = std::string(*e + 5);
  for (const auto& kv : a.env) {
    auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) return bad("--env \"" + kv + "\" must be KEY=VALUE");
    env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return Outcome<json>::success(env);
}

// The working directory: --chdir (relative to the caller's) or the caller's own; "": none.
Outcome<json> run_dir(const RunArgs& a) {
  std::string dir = a.chdir.empty() ? a.cwd : a.chdir;
  if (!dir.empty() && dir.front() != '/') {
    if (a.cwd.empty()) return bad("--chdir \"" + dir + "\": relative, and no current directory");
    dir = a.cwd + (a.cwd.back() == '/' ? "" : "/") + dir;
  }
  return Outcome<json>::success(dir);
}

// Step 2: the job's spec, in the single-pod-set shorthand (docs/config.md): the gang is `pods`.
Outcome<json> run_spec(const RunArgs& a, const std::optional<TimeLimit>& limit, json env,
                       const std::string& dir) {
  json spec = {{"pods", a.gang}};
  if (a.one_per_node && a.gang > 1) spec["maxPodsPerNode"] = 1;
  if (!a.queue.empty()) spec["queue"] = a.queue;
  if (a.gpus > 0) spec["gpus"] = a.gpus;
  if (!a.gpu_models.empty()) spec["gpuModels"] = a.gpu_models;
  if (!a.gpu_fraction.empty()) {
    spec["gpuFraction"] = a.gpu_fraction;
    if (a.gpus <= 0) spec["gpus"] = 1;
  }
  if (!a.cpu.empty()) spec["cpu"] = a.cpu;
  if (!a.memory.empty()) spec["memory"] = a.memory;
  if (!a.priority_class.empty()) spec["priorityClassName"] = a.priority_class;
  if (limit && limit->seconds > 0) spec["walltime"] = time_limit_duration(*limit);
  if (!a.complete_by.empty()) spec["completeBy"] = a.complete_by;
  if (!a.complete_within.empty()) spec["completeWithin"] = a.complete_within;
  if (a.interactive) spec["interactive"] = true;
  if (a.pty) spec["tty"] = true;
  if (a.preemptible) spec["preemptible"] = true;
  if (a.no_preemptible) spec["preemptible"] = false;
  if (a.no_spot) spec["spot"] = false;
  if (!a.right_size.empty()) spec["rightSize"] = a.right_size;
  spec["command"] = a.command;
  if (!env.empty()) spec["env"] = env;
  if (!dir.empty()) spec["workingDir"] = dir;
  // A gang gets what torchrun expects (MASTER_ADDR, RANK, WORLD_SIZE, ...: docs/workloads.md).
  if (a.gang > 1) spec["distributedEnv"] = "torch";
  if (!a.dependency.empty()) {
    if (auto d = parse_dependency(a.dependency); !d) return bad(d.error());
    spec["dependency"] = a.dependency;
  }
  if (!a.array.empty()) {
    if (auto arr = parse_array_spec(a.array); !arr) return bad(arr.error());
    spec["array"] = a.array;
  }
  if (a.hold) spec["hold"] = true;
  if (!a.output.empty()) spec["output"] = a.output;
  if (!a.error.empty()) spec["error"] = a.error;
  return Outcome<json>::success(spec);
}

Outcome<json> build_run_job(const RunArgs& args, const std::string& name_suffix) {
  RunArgs a = args;
  // 0. Slurm's tasks: the gang, and a process a task (srun) where a pod holds several.
  if (a.nodes > 0 || a.ntasks > 0 || a.ntasks_per_node > 0) {
    if (a.gang > 1) return bad("--gang and --nodes/--ntasks/--ntasks-per-node exclude each other");
    const TaskLayout l = task_layout(a.nodes, a.ntasks, a.ntasks_per_node);
    if (!l.error.empty()) return bad(l.error);
    apply_task_layout(l, a);
    if (l.per_pod > 1 && !a.command.empty()) a.command.insert(a.command.begin(), {"srun", "--"});
  }
  std::optional<TimeLimit> limit;
  if (std::string why = check_run_args(a, &limit); !why.empty()) return bad(why);  // 1.
  auto env = run_env(a);
  if (!env.ok) return env;
  auto dir = run_dir(a);
  if (!dir.ok) return dir;
  auto spec = run_spec(a, limit, std::move(env.value), dir.value.get<std::string>());  // 2.
  if (!spec.ok) return spec;
  std::string name = a.name;
  if (name.empty()) {
    name = name_from_command(a.command);
    if (!name_suffix.empty()) name += "-" + name_suffix;
  }
  json metadata = {{"name", name}};
  if (!a.namespace_.empty()) metadata["namespace"] = a.namespace_;
  return Outcome<json>::success(json{{"apiVersion", "sluice.dev/v1alpha1"},
                                     {"kind", "Job"},
                                     {"metadata", metadata},
                                     {"spec", std::move(spec.value)}});
}

}  // namespace sluice::cli
