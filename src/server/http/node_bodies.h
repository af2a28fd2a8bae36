#pragma once
// The bodies of the admin's node verbs (http/cluster.cc), read from untrusted bytes: a cordon's
// or drain's {"reason": "..."} and a reclaim's {"notice": "30s"}. Each returns "" when the body
// is good, else the message of a 400. Fuzzed: tests/fuzz/fuzz_node_body.cc.
#include <string>

#include "core/model/job.h"

namespace sluice::server {

inline constexpr size_t kMaxHoldReason = 1024;
inline constexpr TimeNs kMaxReclaimNotice = 24 * 3600 * 1'000'000'000LL;

// Optional (an empty body: no reason); at most kMaxHoldReason bytes.
std::string read_hold_reason(const std::string& body, std::string* reason);
// Required: a duration ("30s", "2m") or seconds as a number, from 0 to 24 h.
std::string read_reclaim_notice(const std::string& body, TimeNs* notice);

}  // namespace sluice::server
