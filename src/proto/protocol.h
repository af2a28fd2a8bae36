#pragma once
// The wire protocol between `sluice serve` and `sluice agent` (docs/api.md, "Agent protocol").
// Plain structs with JSON conversions; both sides and the tests use these, so the two ends cannot
// drift. Times on the wire are Unix nanoseconds or milliseconds, named by their unit.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace sluice::proto {

// JSON text that cannot throw: strings are validated as UTF-8 where they enter (job
// submissions, configuration), and should one slip through anyway its bad bytes become U+FFFD
// instead of an exception in a thread that must not die.
inline std::string dump_json(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// One GPU as an agent sees it.
struct AgentGpu {
  int32_t index = 0;  // device index (CUDA_VISIBLE_DEVICES numbering)
  std::string model;  // "H100", "A100", ...
  int64_t memory_mib = 0;
  int32_t numa_node = 0;
  std::vector<int32_t> nvlink_peers;  // indices of GPUs reachable over NVLink
  bool mig = false;                   // MIG mode enabled
  std::string uuid;                   // NVML UUID, or "fake-<node>-<index>"
};

// A pod: one process of a job (a gang has gang_size pods, indices 0..gang_size-1).
struct PodRef {
  uint64_t job = 0;
  int32_t pod = 0;
  bool operator<(const PodRef& o) const { return job != o.job ? job < o.job : pod < o.pod; }
  bool operator==(const PodRef&) const = default;
};

// A pod's run: every assignment the server makes gets a new run number (per job, increasing),
// and every message about that pod carries it, so an order or a report about an earlier run is
// never applied to a later one (a fencing token; docs/agent.md, "Run identity"). 0: not known
// (an older peer): matched by job and pod alone.
struct RunningPod {
  uint64_t job = 0;
  int32_t pod = 0;
  int64_t pid = 0;
  bool stopping = false;  // a stop order is being carried out (signal sent, grace running)
  uint64_t run = 0;
};

// A pod that started (SyncRequest::started).
struct StartedPod {
  uint64_t job = 0;
  int32_t pod = 0;
  uint64_t run = 0;
};

// How a pod ended. reason: "exited" (exit_code valid), "signaled" (signal valid), "walltime"
// (killed for running past its walltime), "stopped" (killed on the server's stop order),
// "start-failed" (could not exec; message says why), "fenced" (stopped because the agent lost
// the server for its lease: the job is requeued, not failed), "lost" (status unknown).
struct PodExit {
  uint64_t job = 0;
  int32_t pod = 0;
  int32_t exit_code = 0;
  int32_t signal = 0;
  std::string reason = "exited";
  std::string message;
  int64_t at_unix_ns = 0;
  uint64_t run = 0;
};

struct CheckpointReport {
  uint64_t job = 0;
  int32_t pod = 0;
  int64_t at_unix_ns = 0;
  uint64_t run = 0;
};

// POST /v1/agents/register. Authorization: Bearer <the node's credential>, or, for a node the
// server has no credential for yet, Bearer <join token> (docs/api.md, "Trust model").
struct RegisterRequest {
  std::string node;
  std::string address;  // the agent's own HTTP address, e.g. "http://127.0.0.1:41234"
  std::vector<AgentGpu> gpus;
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  std::vector<RunningPod> running;  // what the agent still runs (after an agent restart)
  std::string agent_id;             // random per agent process start
  // The secret this agent authenticates with from now on (made by the agent, kept 0600 in its
  // state dir). The server keeps its SHA-256 when it admits a new node with the join token.
  std::string credential;
  // The container runtime the agent runs images with ("podman"; "": none).
  std::string container_runtime;
};

struct StopOrder {
  uint64_t job = 0;
  int32_t pod = 0;
  std::string signal = "SIGTERM";  // first signal; SIGKILL follows after grace_ms
  int64_t grace_ms = 0;
  std::string reason;  // "preempted", "cancelled", "gang-failed", "node-lost", "unknown-job"
  uint64_t run = 0;    // the run to stop; the agent leaves another run of the pod alone
};

struct RegisterResponse {
  std::string node;
  int64_t heartbeat_ms = 1000;
  std::vector<StopOrder> stop;  // pods the agent reported that the server does not know
  // Fencing (docs/agent.md): an agent with no successful sync for lease_ms, counted from when
  // it sent its last successful request, stops its pods (SIGTERM, each job's grace, SIGKILL).
  // The server requeues a silent node's jobs only after lease + grace + a margin. 0: no lease.
  int64_t lease_ms = 0;
};

// The server wants a pod's log (`sluice logs`): the agent posts it to
// /v1/agents/{node}/logs/{id}, authenticated like its syncs. The server never dials an agent.
struct LogRequest {
  uint64_t id = 0;
  uint64_t job = 0;
  int32_t pod = 0;
  int64_t tail_bytes = 0;  // the last N bytes; 0: the whole log (its head and tail past max_bytes)
  int64_t offset = -1;     // >= 0: the bytes from this offset on (following a log)
  int64_t max_bytes = 0;   // the most the answer may carry; 0: the agent's default
};

struct PeerPod {
  int32_t pod = 0;
  std::string node;
  std::string address;  // the peer agent's address (host part is what a job would dial)
};

// Work for the agent: start one pod.
struct Assignment {
  uint64_t job = 0;
  int32_t pod = 0;
  uint64_t run = 0;     // this pod's run (see RunningPod)
  int32_t attempt = 0;  // the job's attempt, the same for every pod of it: SLUICE_RUN
  std::string job_name;
  std::string job_namespace;
  int32_t gang_size = 1;
  std::vector<PeerPod> peers;  // every pod of the gang, in pod order (including this one)
  std::vector<std::string> command;
  std::map<std::string, std::string> env;
  std::vector<int32_t> gpus;  // device indices on this node
  int32_t gpu_milli = 1000;   // < 1000: a shared fraction of gpus[0]
  int64_t walltime_ms = 0;    // 0: no limit
  int64_t grace_ms = 0;       // checkpoint grace used when the walltime runs out
  // Who the pod runs as when the agent is root (docs/agent.md, "Who a pod runs as"). -1: the
  // server resolved no identity (the agent uses its per-namespace uid); older servers send none.
  int64_t run_as_uid = -1;
  int64_t run_as_gid = -1;
  std::string user;         // the submitter (token name, or "anonymous"): SLUICE_USER
  bool allow_root = false;  // the ClusterQueue allows uid/gid 0 (spec.sluice.allowRootPods)
  int64_t cpu_milli = 0;    // the pod's requests, for its cgroup limits; 0: none
  int64_t memory_mib = 0;
  // The pod set's image ("": none) and whether the ClusterQueue lets its command run on the
  // node when the agent has no container runtime (spec.sluice.runImagesOnHost).
  std::string image;
  bool image_args_only = false;  // the command is the image entrypoint's arguments
  bool image_on_host = false;
  // The directory the pod starts in (absolute; "": its own work dir under the agent's state
  // dir). Missing on the node: the pod starts in its work dir and its log says why.
  std::string working_dir;
  // The submitter's uid/gid as its client reported them (servers without tokens; -1: none):
  // used by a root agent when run_as_uid is -1 and working_dir exists on the node.
  int64_t submitter_uid = -1;
  int64_t submitter_gid = -1;
  // Slurm's --output/--error, patterns already expanded by the server: files the pod's stdout
  // and stderr go to instead of its log, opened by the pod's own user in the directory it
  // starts in ("": the log; error "" with output set: stderr goes to the output file too).
  std::string output_path;
  std::string error_path;
  // `sluice run --pty`: the pod runs under a pseudo-terminal of the agent (its stdin, stdout
  // and stderr; its output goes to the pod's log), fed by TtyInput.
  bool tty = false;
};

// Keystrokes for an interactive pod (`sluice run --pty`), and its window size, from the user's
// terminal through the server: carried by a sync reply, written to the pod's terminal by its
// agent. data: the bytes, base64 (a terminal's bytes need not be UTF-8); rows/cols > 0: the
// window's new size.
struct TtyInput {
  uint64_t job = 0;
  int32_t pod = 0;
  std::string data;
  int32_t rows = 0;
  int32_t cols = 0;
};

// A pod's measured GPU use since the agent's last delivered report (right-sizing, `sluice
// advise`): samples taken at most once a second, each the most memory any one of the pod's
// GPUs held (MiB) and their mean utilisation (percent). The server adds them into the job's
// peak and mean. Older agents send none; older servers ignore them.
struct PodGpuUse {
  uint64_t job = 0;
  int32_t pod = 0;
  uint64_t run = 0;
  int64_t samples = 0;
  int64_t peak_mib = 0;  // the largest sample
  int64_t mib_sum = 0;   // the samples' sum (mean: mib_sum / samples)
  int64_t util_sum = 0;  // utilisation percent, summed over the samples
};

// POST /v1/agents/{node}/sync: heartbeat, reports and (long-)poll for work in one call.
struct SyncRequest {
  std::string agent_id;
  std::vector<RunningPod> running;
  std::vector<PodExit> exits;  // kept and resent by the agent until a sync succeeds
  std::vector<CheckpointReport> checkpoints;
  std::vector<StartedPod> started;  // pods that started since the last sync
  int64_t wait_ms = 0;              // long poll: the server may hold the reply this long
  // GPU utilisation in percent per GPU index (-1: not available for that GPU), sampled at most
  // once a second; empty where the node cannot sample it (fake GPUs).
  std::vector<int32_t> gpu_utilization_pct;
  std::vector<PodGpuUse> gpu_use;  // per pod with new samples
};

struct SyncResponse {
  std::vector<Assignment> assign;
  std::vector<StopOrder> stop;
  int64_t heartbeat_ms = 1000;
  std::vector<LogRequest> logs;
  std::vector<TtyInput> tty;  // in order: the agent writes them as they come
};

// Errors are {"error": "...", "details": [...]} with a 4xx/5xx status on every endpoint.
struct ErrorBody {
  std::string error;
  std::vector<std::string> details;
};

// Missing fields keep their defaults, so either side may add fields; a field of the wrong type
// throws nlohmann::json::exception, which the receiver turns into a 400. A field added to the
// syncs' messages goes into protocol_plain.h's field tables too (a unit test checks).
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(AgentGpu, index, model, memory_mib, numa_node,
                                                nvlink_peers, mig, uuid)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(PodRef, job, pod)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(RunningPod, job, pod, pid, stopping, run)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(StartedPod, job, pod, run)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(PodExit, job, pod, exit_code, signal, reason,
                                                message, at_unix_ns, run)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(CheckpointReport, job, pod, at_unix_ns, run)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(RegisterRequest, node, address, gpus, cpu_milli,
                                                memory_mib, running, agent_id, credential,
                                                container_runtime)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(StopOrder, job, pod, signal, grace_ms, reason, run)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(RegisterResponse, node, heartbeat_ms, stop,
                                                lease_ms)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(LogRequest, id, job, pod, tail_bytes, offset,
                                                max_bytes)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(PeerPod, pod, node, address)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Assignment, job, pod, run, attempt, job_name,
                                                job_namespace, gang_size, peers, command, env, gpus,
                                                gpu_milli, walltime_ms, grace_ms, run_as_uid,
                                                run_as_gid, user, allow_root, cpu_milli, memory_mib,
                                                image, image_args_only, image_on_host, working_dir,
                                                submitter_uid, submitter_gid, output_path,
                                                error_path, tty)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(TtyInput, job, pod, data, rows, cols)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(PodGpuUse, job, pod, run, samples, peak_mib,
                                                mib_sum, util_sum)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(SyncRequest, agent_id, running, exits, checkpoints,
                                                started, wait_ms, gpu_utilization_pct, gpu_use)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(SyncResponse, assign, stop, heartbeat_ms, logs, tty)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(ErrorBody, error, details)

// Every number of the protocol is an integer (nanoseconds, milliseconds, milli-units, ids).
// nlohmann turns a float into an integer field with a plain cast, undefined behaviour where the
// value does not fit (`"heartbeat_ms": 1e300`, `"job": -2.5`), so a float anywhere in a message
// is a wrong type, thrown as json::type_error like any other (found by tests/fuzz, fuzz_proto).
inline void require_integers(const nlohmann::json& message) {
  std::vector<const nlohmann::json*> todo{&message};  // a stack, not recursion: bodies nest deep
  while (!todo.empty()) {
    const nlohmann::json* j = todo.back();
    todo.pop_back();
    if (j->is_number_float())
      throw nlohmann::json::type_error::create(
          302, "a number of the agent protocol must be an integer, not " + j->dump(), j);
    if (j->is_structured())
      for (const auto& child : *j) todo.push_back(&child);
  }
}

// The messages a peer sends, decoded through require_integers first.
template <class T>
struct CheckedMessageSerializer {
  static void to_json(nlohmann::json& j, const T& v) { sluice::proto::to_json(j, v); }
  static void from_json(const nlohmann::json& j, T& v) {
    require_integers(j);
    sluice::proto::from_json(j, v);
  }
};

}  // namespace sluice::proto

namespace nlohmann {
template <>
struct adl_serializer<sluice::proto::RegisterRequest>
    : sluice::proto::CheckedMessageSerializer<sluice::proto::RegisterRequest> {};
template <>
struct adl_serializer<sluice::proto::RegisterResponse>
    : sluice::proto::CheckedMessageSerializer<sluice::proto::RegisterResponse> {};
template <>
struct adl_serializer<sluice::proto::SyncRequest>
    : sluice::proto::CheckedMessageSerializer<sluice::proto::SyncRequest> {};
template <>
struct adl_serializer<sluice::proto::SyncResponse>
    : sluice::proto::CheckedMessageSerializer<sluice::proto::SyncResponse> {};
template <>
struct adl_serializer<sluice::proto::ErrorBody>
    : sluice::proto::CheckedMessageSerializer<sluice::proto::ErrorBody> {};
}  // namespace nlohmann
