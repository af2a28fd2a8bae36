#pragma once
// Who a pod runs as when the agent is root (docs/agent.md, "Who a pod runs as").
//
// 1. The server's choice, when the assignment carries one (run_as_uid/run_as_gid: the
//    submitter's token maps to a unix user, or an allowed securityContext.runAsUser).
// 2. Else the namespace's entry of --pod-uid NS=UID[:GID].
// 3. Else a uid derived from the namespace within --pod-uid-range FIRST-LAST: a hash of the
//    name, so every node gives a namespace the same uid without coordination. Two namespaces
//    that hash to the same uid would share files and signals: the second one seen on this node
//    is refused (its pods fail to start, naming the clash) until the admin maps one of them.
//    The claims are kept in <state-dir>/uids.json so a restart cannot hand a uid (and the files
//    it owns) to another namespace.
// uid or gid 0 is refused unless the assignment allows root (its ClusterQueue's allowRootPods).
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "agent/state_file.h"
#include "core/model/result.h"
#include "proto/protocol.h"

namespace sluice::agent {

struct PodIdentity {
  uint32_t uid = 0;
  uint32_t gid = 0;
  std::string user;  // the unix name of uid when it has one, else "sluice-<uid>"
  bool operator==(const PodIdentity&) const = default;
};

struct UnixIds {
  uint32_t uid = 0;
  uint32_t gid = 0;
};

struct IdentityOptions {
  std::map<std::string, UnixIds> namespaces;  // --pod-uid NS=UID[:GID] (GID defaults to UID)
  uint32_t range_first = 60000;               // --pod-uid-range FIRST-LAST
  uint32_t range_last = 65535;                // range_last < range_first: no range
};

// "nlp=61000" or "nlp=61000:61000".
Result<std::pair<std::string, UnixIds>> parse_pod_uid(const std::string& spec);
// "60000-65535" -> {60000, 65535}; "none" -> an empty range.
Result<std::pair<uint32_t, uint32_t>> parse_uid_range(const std::string& spec);
// The namespace's uid in [first, last]: FNV-1a of the name, modulo the range's size.
uint32_t hashed_namespace_uid(const std::string& ns, uint32_t first, uint32_t last);
// The passwd name of uid, else "sluice-<uid>".
std::string unix_user_name(uint32_t uid);

class IdentityResolver {
 public:
  // claims_path: where hashed uids' owners are kept ("" = memory only).
  IdentityResolver(const IdentityResolver&) = delete;
  IdentityResolver& operator=(const IdentityResolver&) = delete;
  static Result<std::unique_ptr<IdentityResolver>> create(IdentityOptions options,
                                                          const std::string& claims_path);

  // The identity for an assignment, or why it may not run.
  Result<PodIdentity> resolve(const proto::Assignment& a);
  std::string describe() const;  // one line for the agent's start-up log

 private:
  IdentityResolver(IdentityOptions options, const std::string& claims_path);
  bool in_range(int64_t uid) const;
  Result<UnixIds> namespace_ids(const std::string& ns);

  IdentityOptions options_;
  std::mutex mu_;
  std::map<uint32_t, std::string> claims_;  // hashed uid -> the namespace that holds it
  std::optional<StateFile> claims_file_;
};

}  // namespace sluice::agent
