#pragma once
// Kueue's visibility API (kube_visibility.cc, docs/kubernetes.md "Pending workloads"): the
// pure pieces, so that tests/unit/server tests them.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "net/message.h"

namespace sluice::server::kube {

inline constexpr const char* kVisibilityGroup = "visibility.kueue.x-k8s.io";
// Kueue's default `limit` of pendingworkloads, and sluice's most.
inline constexpr int64_t kMaxPendingPage = 1000;

// A pending workload in its ClusterQueue's order.
struct PendingEntry {
  std::string name, ns, local_queue;
  int32_t priority = 0;
  nlohmann::json created;  // metadata.creationTimestamp
};
struct PendingPage {
  int64_t offset = 0, limit = kMaxPendingPage;
};
// offset and limit (non-negative integers; limit at most kMaxPendingPage); "" or what is wrong.
std::string read_pending_query(const net::Request& req, PendingPage& page);
// The PendingWorkloadsSummary of `queue` (a ClusterQueue's pending workloads, in order): every
// one, or those of LocalQueue local_ns/local_name when it is given, and of a namespace the
// caller `sees`; positions count every workload ahead (seen or not), from 0 as Kueue's.
nlohmann::json pending_workloads_summary(const std::vector<PendingEntry>& queue,
                                         const std::string& local_ns, const std::string& local_name,
                                         const PendingPage& page,
                                         const std::function<bool(const std::string&)>& sees);

}  // namespace sluice::server::kube
