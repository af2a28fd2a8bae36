// ProcessRunner's saved state: pods.json, written as pods start and stop, read by a restarted
// agent to adopt the pods that still run (the same process: pid and start time).
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "agent/proc.h"
#include "agent/process_runner.h"
#include "agent/runner_pod.h"
#include "proto/split.h"

namespace sluice::agent {

// pods.json: what a restarted runner needs to adopt the pods (and nothing it could not check).
void ProcessRunner::save_locked() {
  nlohmann::json pods = nlohmann::json::array();
  for (const auto& [ref, pod] : pods_) {
    if (!pod->running) continue;
    nlohmann::json j = {{"job", ref.job},
                        {"pod", ref.pod},
                        {"run", pod->spec.run},
                        {"pid", pod->pid},
                        {"start_ticks", pod->start_ticks},
                        {"started_unix_ns", pod->started_unix_ns},
                        {"gpus", pod->spec.gpus},
                        {"gpu_milli", pod->spec.gpu_milli},
                        {"walltime_ms", pod->spec.walltime_ms},
                        {"walltime_grace_ms", pod->spec.walltime_grace_ms},
                        {"stopping", pod->stopping},
                        {"sandboxed", pod->spec.sandboxed},
                        {"exit_reason", pod->exit_reason}};
    if (pod->walltime_deadline)
      j["walltime_deadline_unix_ns"] = steady_to_unix_ns(*pod->walltime_deadline);
    if (pod->stopping) j["kill_deadline_unix_ns"] = steady_to_unix_ns(pod->kill_deadline);
    pods.push_back(std::move(j));
  }
  std::string why;
  if (!pods_file_.save(nlohmann::json{{"version", 1}, {"pods", pods}}, &why)) return log(why);
  dirty_ = false;
  ended_since_.reset();
}

void ProcessRunner::adopt_locked() {
  const std::string& path = pods_file_.path();
  std::string why;
  auto doc = pods_file_.load(&why);
  if (!why.empty()) log("ignoring unreadable state: " + why);
  if (!doc) return;
  try {
    for (const auto& j : doc->at("pods")) {
      auto pod = std::make_unique<Pod>();
      pod->spec.ref = {j.at("job").get<uint64_t>(), j.at("pod").get<int32_t>()};
      pod->spec.run = j.value("run", uint64_t{0});
      pod->pid = j.at("pid").get<pid_t>();
      pod->start_ticks = j.at("start_ticks").get<uint64_t>();
      auto st = read_proc_stat(pod->pid);
      // Alive and the same process (a reused pid has another start time): adopt it.
      if (!st || st->start_ticks != pod->start_ticks || st->state == 'Z') {
        // What its main process left behind while no agent ran (background processes) ends
        // now: its job is requeued, and they would run beside the next run (tests/chaos).
        const int left = kill_group_remnants(pod->pid, pod->start_ticks);
        log("pod " + std::to_string(pod->spec.ref.job) + "/" + std::to_string(pod->spec.ref.pod) +
            " (pid " + std::to_string(pod->pid) + ") from " + path + " is gone" +
            (left ? "; killed " + std::to_string(left) + " process(es) it left behind" : ""));
        // Still an exit to report: the server may believe it runs.
        proto::PodExit exit;
        exit.job = pod->spec.ref.job;
        exit.pod = pod->spec.ref.pod;
        exit.run = pod->spec.run;
        exit.exit_code = -1;
        exit.reason = options_.previous_lease_expired ? "fenced" : "lost";
        exit.message = options_.previous_lease_expired
                           ? "stopped while the agent was down past its lease (the fencer)"
                           : "ended while the agent was down; exit status unknown";
        exit.at_unix_ns = unix_now_ns();
        events_.exits.push_back(std::move(exit));
        dirty_ = true;
        continue;
      }
      pod->running = true;
      pod->child = false;
      pod->paths = pod_paths(options_.state_dir, pod->spec.ref);
      pod->started_unix_ns = j.value("started_unix_ns", int64_t{0});
      pod->spec.gpus = j.value("gpus", std::vector<int32_t>{});
      pod->spec.gpu_milli = j.value("gpu_milli", 1000);
      pod->spec.walltime_ms = j.value("walltime_ms", int64_t{0});
      pod->spec.walltime_grace_ms = j.value("walltime_grace_ms", int64_t{0});
      if (j.contains("walltime_deadline_unix_ns")) {
        pod->walltime_deadline = unix_ns_to_steady(j["walltime_deadline_unix_ns"].get<int64_t>());
      }
      pod->stopping = j.value("stopping", false);
      pod->spec.sandboxed = j.value("sandboxed", false);
      pod->exit_reason = j.value("exit_reason", std::string());
      if (pod->stopping) {
        pod->kill_deadline = unix_ns_to_steady(j.value("kill_deadline_unix_ns", unix_now_ns()));
      }
      pod->checkpoint_mtime_ns = mtime_ns(pod->paths.checkpoint_file);
      open_adopted_pidfd(*pod);
      log("adopted pod " + std::to_string(pod->spec.ref.job) + "/" +
          std::to_string(pod->spec.ref.pod) + " (pid " + std::to_string(pod->pid) + ")");
      ++adopted_;
      pods_.emplace(pod->spec.ref, std::move(pod));
    }
  } catch (const std::exception& e) {
    log("ignoring unreadable " + path + ": " + e.what());
  }
}

namespace {

// The variables of a process's initial environment that name a pod (empty when unreadable).
std::map<std::string, std::string> pod_environment(pid_t pid) {
  std::map<std::string, std::string> out;
  std::ifstream in("/proc/" + std::to_string(pid) + "/environ", std::ios::binary);
  std::string entry;
  size_t read = 0;
  // Bounded: an environment is at most a few hundred KiB.
  while (read < (1u << 20) && std::getline(in, entry, '\0')) {
    read += entry.size() + 1;
    const auto eq = entry.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = entry.substr(0, eq);
    if (key.rfind("SLUICE_", 0) == 0 || key == "CUDA_VISIBLE_DEVICES")
      out[key] = entry.substr(eq + 1);
  }
  return out;
}

std::optional<uint64_t> number(const std::string& s) {
  if (s.empty() || s.size() > 19 || s.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  return std::stoull(s);
}

}  // namespace

// A state directory wiped (or a pods.json lost) while its pods ran: a new agent on the same
// directory would not know them, the server would requeue their jobs as lost, and the next run
// would start beside the old one on the same GPUs (issue 35). Every pod leads its own process
// group and carries $SLUICE_CHECKPOINT_FILE, a path inside this state directory that names its
// job and pod: the group leaders whose variable is this directory's path for their pod are this
// directory's pods. They are adopted with run 0 (unknown): the server keeps the one that is
// its current run there and stops any other (reconcile_registered).
void ProcessRunner::rescue_orphans_locked() {
  std::map<pid_t, uint64_t> leaders;  // pid -> start ticks, in pid order
  for_each_process([&](pid_t pid, const ProcStat& st) {
    if (st.pgrp == pid && st.state != 'Z') leaders[pid] = st.start_ticks;
  });
  for (const auto& [pid, start_ticks] : leaders) {
    auto env = pod_environment(pid);
    const auto job = number(env["SLUICE_JOB_ID"]);
    const auto index = number(env["SLUICE_POD_INDEX"]);
    if (!job || !index || *index > 1'000'000) continue;
    const proto::PodRef ref{*job, static_cast<int32_t>(*index)};
    const PodPaths paths = pod_paths(options_.state_dir, ref);
    if (env["SLUICE_CHECKPOINT_FILE"] != paths.checkpoint_file || pods_.count(ref)) continue;
    auto pod = std::make_unique<Pod>();
    pod->spec.ref = ref;
    pod->pid = pid;
    pod->start_ticks = start_ticks;
    pod->running = true;
    pod->child = false;
    pod->paths = paths;
    for (const auto& g : proto::split_list(env["CUDA_VISIBLE_DEVICES"]))
      if (auto n = number(g); n && *n < 1024) pod->spec.gpus.push_back(static_cast<int32_t>(*n));
    pod->checkpoint_mtime_ns = mtime_ns(paths.checkpoint_file);
    open_adopted_pidfd(*pod);
    log("pod " + std::to_string(ref.job) + "/" + std::to_string(ref.pod) + " (pid " +
        std::to_string(pid) + ") runs from this state directory but no state file lists it (" +
        pods_file_.path() + " lost or wiped?): adopted; the server decides whether it runs on");
    ++adopted_;
    dirty_ = true;
    pods_.emplace(ref, std::move(pod));
  }
}

}  // namespace sluice::agent
