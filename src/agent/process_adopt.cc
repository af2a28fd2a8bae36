// ProcessRunner's saved state: pods.json, written as pods start and stop, read by a restarted
// agent to adopt the pods that still run (the same process: pid and start time).
#include <memory>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "agent/proc.h"
#include "agent/process_runner.h"
#include "agent/runner_pod.h"

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
        log("pod " + std::to_string(pod->spec.ref.job) + "/" + std::to_string(pod->spec.ref.pod) +
            " (pid " + std::to_string(pod->pid) + ") from " + path + " is gone");
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
      log("adopted pod " + std::to_string(pod->spec.ref.job) + "/" +
          std::to_string(pod->spec.ref.pod) + " (pid " + std::to_string(pod->pid) + ")");
      ++adopted_;
      pods_.emplace(pod->spec.ref, std::move(pod));
    }
  } catch (const std::exception& e) {
    log("ignoring unreadable " + path + ": " + e.what());
  }
}

}  // namespace sluice::agent
