#pragma once
// The server's node pools (docs/autoscaling.md): each NodePool's slots (`namePrefix` + index,
// nodes of the Cluster the server added for it) and where each stands between its
// provisioner's calls. Pure bookkeeping: no clock (every call takes `now`), no process, no
// lock of its own; ServerState drives it under its lock (state_pools.cc), asks core/scale's
// decide() what to do, and the Server runs the calls it returns off the scheduling thread
// (provisioner.h) and hands each result back to done().
#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/model/config.h"
#include "core/scale/autoscaler.h"

namespace sluice::server {

// One call of a pool's provisioner: `argv... create|delete POOL NODE`, with the node's shape
// in `env` (KEY=VALUE, added to the server's environment); or, for a webhook, a POST of `body`
// to `url` (argv empty).
struct ProvisionCall {
  uint64_t id = 0;
  size_t pool = 0;
  size_t slot = 0;
  std::string pool_name;
  std::string node;
  std::string op;      // "create" or "delete"
  std::string reason;  // delete: idle, reclaim, join-timeout, lost
  std::vector<std::string> argv;
  std::vector<std::string> env;
  std::string url;         // a webhook's
  std::string token_file;  // its bearer token's file ("": none)
  nlohmann::json body;     // what a webhook is sent (webhook_body, and "server")
  TimeNs timeout_ns = 0;
};

struct ProvisionResult {
  ProvisionCall call;
  bool ok = false;
  int exit_code = -1;   // -1: killed (timed out), never started, or a webhook
  int http_status = 0;  // a webhook's answer (0: none)
  bool timed_out = false;
  std::string output;  // the last bytes of its stdout and stderr
  double seconds = 0;
};

// Where a slot stands. Creating/Deleting: a call is in flight. Joining: created, its agent has
// not registered yet. Leaving: takes no new pods; deleted once its pods are gone (or its
// reclaim notice ran out).
enum class SlotPhase : uint8_t { kAbsent, kCreating, kJoining, kReady, kLeaving, kDeleting };
const char* phase_name(SlotPhase p);

// What the server knows of a slot's node now.
struct SlotNode {
  bool joined = false;  // its agent is registered and syncing
  int32_t pods = 0;     // pods placed on it and not gone
};

class NodePools {
 public:
  // The pools of a (new) configuration; slots of pools still there keep their state.
  void configure(const std::vector<NodePool>& pools);
  const std::vector<NodePool>& pools() const { return pools_; }
  bool active() const;  // some pool has a provisioner
  static std::string node_name(const NodePool& pool, size_t k) {
    return pool.name_prefix + std::to_string(k);
  }
  // The pool and slot of a node; false when it is no pool's.
  bool locate(const std::string& node, size_t& pool, size_t& slot) const;

  // Follows the nodes (an agent joined, a node fell silent, a leaving node emptied, a join that
  // never came) and returns the delete calls that follow.
  std::vector<ProvisionCall> observe(size_t p, size_t k, const SlotNode& n, TimeNs now);
  // The slots of pool `p` as core/scale sees them (node: the slot index); slots waiting out a
  // failed call are left out, so a failing provisioner is asked again only after retryAfter.
  std::vector<scale::PoolNode> scale_view(size_t p, TimeNs now) const;
  // Asks for `n` nodes of pool `p`: create calls for the first free slots.
  std::vector<ProvisionCall> create(size_t p, int32_t n, TimeNs now);
  // Takes slot k of pool p out: Leaving until leave_by (its pods end by then), then deleted.
  void leave(size_t p, size_t k, const std::string& reason, TimeNs now, TimeNs leave_by);
  // A call's result. Returns true when the slot's node is gone (deleted): the server forgets
  // its agent and credential.
  bool done(const ProvisionResult& r, TimeNs now);
  SlotPhase phase(size_t p, size_t k) const { return slots_[p][k].phase; }

  // {"pools": [{name, capacity_type, min, max, nodes: {phase: count}, slots: [...]}],
  //  "calls": [the last calls, newest first]}
  nlohmann::json view(TimeNs now) const;
  // sluice_provisioner_calls_total{pool,op,result} and sluice_pool_nodes{pool,state}.
  const std::map<std::tuple<std::string, std::string, std::string>, int64_t>& calls_total() const {
    return calls_total_;
  }
  std::map<std::string, int32_t> count_phases(size_t p) const;
  static constexpr size_t kRecentCalls = 64;

 private:
  struct Slot {
    SlotPhase phase = SlotPhase::kAbsent;
    TimeNs since_ns = 0;
    TimeNs retry_at_ns = 0;  // a failed call: not again before
    TimeNs idle_since_ns = 0;
    TimeNs leave_by_ns = 0;
    std::string reason;
    int32_t pods = 0;
  };
  ProvisionCall call(size_t p, size_t k, const std::string& op, const std::string& reason);
  void set(Slot& s, SlotPhase phase, TimeNs now) {
    s.phase = phase;
    s.since_ns = now;
  }

  std::vector<NodePool> pools_;
  std::vector<std::vector<Slot>> slots_;
  uint64_t next_call_ = 1;
  std::map<std::tuple<std::string, std::string, std::string>, int64_t> calls_total_;
  std::deque<nlohmann::json> recent_;  // the last kRecentCalls results, newest first
};

// The environment a call gives the provisioner: the pool, the node and its shape.
std::vector<std::string> provision_env(const NodePool& pool, const std::string& node,
                                       const std::string& op, const std::string& reason);
// What a webhook provisioner is POSTed (docs/autoscaling.md, "The webhook"): the same as the
// command's environment, as JSON; the server adds "server" (where the agent registers).
nlohmann::json webhook_body(const NodePool& pool, const std::string& node, const std::string& op,
                            const std::string& reason);
// "ok", "failed" or "timeout": the result label of a call (metric, event, /v1/pools).
const char* result_name(const ProvisionResult& r);

}  // namespace sluice::server
