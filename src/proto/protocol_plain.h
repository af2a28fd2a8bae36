#pragma once
// The agent protocol's syncs read by the plain-JSON reader (plain_json.h): the request on the
// server, the reply on the agent, each falling back to json::parse + get<T>() for any text the
// reader declines. The field lists follow protocol.h's NLOHMANN_DEFINE_TYPE lists.
#include <string_view>

#include "proto/plain_json.h"
#include "proto/protocol.h"

namespace sluice::proto {

namespace plain_types {

using plain::pick;
using plain::Slot;
using plain::slot;

template <class T, int (*F)(T&, std::string_view, Slot*)>
constexpr plain::ObjType type_of() {
  return {[](void* o, std::string_view k, Slot* s) { return F(*static_cast<T*>(o), k, s); },
          &plain::emplace_into<T>};
}

inline int running_pod(RunningPod& e, std::string_view k, Slot* s) {
  return pick(k,
              {{"job", slot(e.job)},
               {"pod", slot(e.pod)},
               {"pid", slot(e.pid)},
               {"stopping", slot(e.stopping)},
               {"run", slot(e.run)}},
              s);
}
inline int pod_exit(PodExit& e, std::string_view k, Slot* s) {
  return pick(k,
              {{"job", slot(e.job)},
               {"pod", slot(e.pod)},
               {"exit_code", slot(e.exit_code)},
               {"signal", slot(e.signal)},
               {"reason", slot(e.reason)},
               {"message", slot(e.message)},
               {"at_unix_ns", slot(e.at_unix_ns)},
               {"run", slot(e.run)}},
              s);
}
inline int checkpoint(CheckpointReport& e, std::string_view k, Slot* s) {
  return pick(k,
              {{"job", slot(e.job)},
               {"pod", slot(e.pod)},
               {"at_unix_ns", slot(e.at_unix_ns)},
               {"run", slot(e.run)}},
              s);
}
inline int started_pod(StartedPod& e, std::string_view k, Slot* s) {
  return pick(k, {{"job", slot(e.job)}, {"pod", slot(e.pod)}, {"run", slot(e.run)}}, s);
}
inline int gpu_use(PodGpuUse& e, std::string_view k, Slot* s) {
  return pick(k,
              {{"job", slot(e.job)},
               {"pod", slot(e.pod)},
               {"run", slot(e.run)},
               {"samples", slot(e.samples)},
               {"peak_mib", slot(e.peak_mib)},
               {"mib_sum", slot(e.mib_sum)},
               {"util_sum", slot(e.util_sum)}},
              s);
}
inline constexpr plain::ObjType kRunningPod = type_of<RunningPod, running_pod>();
inline constexpr plain::ObjType kPodExit = type_of<PodExit, pod_exit>();
inline constexpr plain::ObjType kCheckpoint = type_of<CheckpointReport, checkpoint>();
inline constexpr plain::ObjType kStartedPod = type_of<StartedPod, started_pod>();
inline constexpr plain::ObjType kGpuUse = type_of<PodGpuUse, gpu_use>();

inline int sync_request(SyncRequest& r, std::string_view k, Slot* s) {
  return pick(k,
              {{"agent_id", slot(r.agent_id)},
               {"running", slot(r.running, kRunningPod)},
               {"exits", slot(r.exits, kPodExit)},
               {"checkpoints", slot(r.checkpoints, kCheckpoint)},
               {"started", slot(r.started, kStartedPod)},
               {"wait_ms", slot(r.wait_ms)},
               {"gpu_utilization_pct", slot(r.gpu_utilization_pct)},
               {"gpu_use", slot(r.gpu_use, kGpuUse)}},
              s);
}
inline constexpr plain::ObjType kSyncRequest = type_of<SyncRequest, sync_request>();

inline int peer_pod(PeerPod& e, std::string_view k, Slot* s) {
  return pick(k, {{"pod", slot(e.pod)}, {"node", slot(e.node)}, {"address", slot(e.address)}}, s);
}
inline constexpr plain::ObjType kPeerPod = type_of<PeerPod, peer_pod>();

inline int assignment(Assignment& a, std::string_view k, Slot* s) {
  return pick(k,
              {{"job", slot(a.job)},
               {"pod", slot(a.pod)},
               {"run", slot(a.run)},
               {"attempt", slot(a.attempt)},
               {"job_name", slot(a.job_name)},
               {"job_namespace", slot(a.job_namespace)},
               {"gang_size", slot(a.gang_size)},
               {"peers", slot(a.peers, kPeerPod)},
               {"command", slot(a.command)},
               {"env", slot(a.env)},
               {"gpus", slot(a.gpus)},
               {"gpu_milli", slot(a.gpu_milli)},
               {"walltime_ms", slot(a.walltime_ms)},
               {"grace_ms", slot(a.grace_ms)},
               {"run_as_uid", slot(a.run_as_uid)},
               {"run_as_gid", slot(a.run_as_gid)},
               {"user", slot(a.user)},
               {"allow_root", slot(a.allow_root)},
               {"cpu_milli", slot(a.cpu_milli)},
               {"memory_mib", slot(a.memory_mib)},
               {"image", slot(a.image)},
               {"image_args_only", slot(a.image_args_only)},
               {"image_on_host", slot(a.image_on_host)},
               {"working_dir", slot(a.working_dir)},
               {"submitter_uid", slot(a.submitter_uid)},
               {"submitter_gid", slot(a.submitter_gid)},
               {"output_path", slot(a.output_path)},
               {"error_path", slot(a.error_path)},
               {"tty", slot(a.tty)}},
              s);
}
inline int stop_order(StopOrder& e, std::string_view k, Slot* s) {
  return pick(k,
              {{"job", slot(e.job)},
               {"pod", slot(e.pod)},
               {"signal", slot(e.signal)},
               {"grace_ms", slot(e.grace_ms)},
               {"reason", slot(e.reason)},
               {"run", slot(e.run)}},
              s);
}
inline int log_request(LogRequest& e, std::string_view k, Slot* s) {
  return pick(k,
              {{"id", slot(e.id)},
               {"job", slot(e.job)},
               {"pod", slot(e.pod)},
               {"tail_bytes", slot(e.tail_bytes)},
               {"offset", slot(e.offset)},
               {"max_bytes", slot(e.max_bytes)}},
              s);
}
inline int tty_input(TtyInput& e, std::string_view k, Slot* s) {
  return pick(k,
              {{"job", slot(e.job)},
               {"pod", slot(e.pod)},
               {"data", slot(e.data)},
               {"rows", slot(e.rows)},
               {"cols", slot(e.cols)}},
              s);
}
inline constexpr plain::ObjType kAssignment = type_of<Assignment, assignment>();
inline constexpr plain::ObjType kStopOrder = type_of<StopOrder, stop_order>();
inline constexpr plain::ObjType kLogRequest = type_of<LogRequest, log_request>();
inline constexpr plain::ObjType kTtyInput = type_of<TtyInput, tty_input>();

inline int sync_response(SyncResponse& r, std::string_view k, Slot* s) {
  return pick(k,
              {{"assign", slot(r.assign, kAssignment)},
               {"stop", slot(r.stop, kStopOrder)},
               {"heartbeat_ms", slot(r.heartbeat_ms)},
               {"logs", slot(r.logs, kLogRequest)},
               {"tty", slot(r.tty, kTtyInput)}},
              s);
}
inline constexpr plain::ObjType kSyncResponse = type_of<SyncResponse, sync_response>();

template <class T>
const plain::ObjType& type_for();
template <>
inline const plain::ObjType& type_for<SyncRequest>() {
  return kSyncRequest;
}
template <>
inline const plain::ObjType& type_for<SyncResponse>() {
  return kSyncResponse;
}

}  // namespace plain_types

// True with *out set when the plain reader read `text`; false (out untouched) when it declined.
template <class T>
bool read_plain(std::string_view text, T* out) {
  return plain::read(text, plain_types::type_for<T>(), out);
}

// `text` as a T (SyncRequest, SyncResponse): the plain reader, else json::parse + get<T>()
// (which throws nlohmann::json::exception for text that is not one: the receiver's 400).
template <class T>
T parse_message(std::string_view text) {
  T v;
  if (!read_plain(text, &v)) v = nlohmann::json::parse(text).get<T>();
  return v;
}

}  // namespace sluice::proto
