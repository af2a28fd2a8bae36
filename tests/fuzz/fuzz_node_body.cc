// The bodies of the admin's node verbs (server/http/node_bodies.h) on any bytes: a cordon's or
// drain's {"reason": ...} and a reclaim's {"notice": ...}. The first byte picks which.
//
// Invariants: no crash, exception or sanitizer report; a body read gives a reason of at most
// 1 KiB, or a notice from 0 to 24 h; a refusal has a message.
#include <cstdlib>
#include <string>

#include "fuzz_util.h"
#include "server/http/node_bodies.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sluice::server;
  if (size == 0) return 0;
  const std::string body = sluice::fuzz::bytes(data + 1, size - 1);
  if (data[0] & 1) {
    sluice::TimeNs notice = -1;
    const std::string why = read_reclaim_notice(body, &notice);
    if (why.empty() && (notice < 0 || notice > kMaxReclaimNotice)) std::abort();
    if (!why.empty() && notice != -1) std::abort();  // a refusal leaves it alone
  } else {
    std::string reason = "unset";
    const std::string why = read_hold_reason(body, &reason);
    if (why.empty() && reason.size() > kMaxHoldReason) std::abort();
  }
  return 0;
}
