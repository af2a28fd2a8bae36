#pragma once
// Admission: the pure decision taken for every request that reaches a pool. No I/O, no clock,
// no state of its own: the caller passes the pool's live load and gets back what to do.
//
// The rule, with C = maxQueueDepth, T = ceil(shedThreshold * C), H = criticalHeadroom and d the
// number of requests waiting in the pool's queue (in-flight requests are not counted in d):
//   0. the tenant already has maxConcurrency requests queued or in flight  -> reject (429)
//   1. the pool has no healthy backend       -> fallback if it accepts (any class: this is
//                                               failover, not shedding), else reject (503)
//   2. a backend slot is free and d == 0     -> dispatch now, whatever the class
//   3. sheddable: d <  T                     -> queue
//                 d >= T                     -> fallback if it accepts, else shed (429)
//      standard:  d <  T                     -> queue
//                 T <= d < C                 -> fallback if it accepts, else queue
//                 d >= C                     -> reject (429)
//      critical:  d <  C + H                 -> queue (never sent to a fallback)
//                 d >= C + H                 -> reject (429)
// So sheddable work is shed first (at T), standard at the cap, critical last (at C + H), and
// the queue never holds more than C + H requests. "Fallback accepts" means the fallback pool's
// own decision for the same class, with no further fallback, is dispatch or queue.
#include <cstdint>
#include <string_view>

#include "gateway/config.h"

namespace sluice::gateway {

enum class Decision : std::uint8_t { kDispatch, kQueue, kFallback, kReject };

enum class RejectReason : std::uint8_t {
  kNone,
  kShed,         // sheddable request at or above the shed threshold (429)
  kQueueFull,    // the class's cap is reached (429)
  kTenantLimit,  // tenant at its concurrency limit (429)
  kNoBackend,    // no healthy backend and no fallback (503)
};
std::string_view reason_name(RejectReason r);

struct AdmissionPolicy {
  int max_queue_depth = 0;  // C
  double shed_threshold = 0.85;
  int critical_headroom = 0;  // H

  static AdmissionPolicy from(const PoolConfig& pc) {
    return {pc.max_queue_depth, pc.shed_threshold, pc.critical_headroom};
  }
  int shed_depth() const;               // T
  int queue_cap(RequestClass c) const;  // C, or C + H for critical
  int queue_bound() const { return max_queue_depth + critical_headroom; }
};

struct PoolLoad {
  int queued = 0;     // d
  int in_flight = 0;  // requests at backends
  int capacity = 0;   // healthy backends * maxInFlight
};

struct AdmissionInput {
  PoolLoad load;
  RequestClass request_class = RequestClass::kStandard;
  bool fallback_accepts = false;  // false as well when no fallback is configured
  int tenant_active = 0;
  int tenant_limit = 0;  // 0: unlimited
};

struct AdmissionResult {
  Decision decision = Decision::kReject;
  RejectReason reason = RejectReason::kNone;
  bool operator==(const AdmissionResult&) const = default;
};

AdmissionResult decide(const AdmissionPolicy& policy, const AdmissionInput& in);

// Whether a pool would take a request of class `c` itself (dispatch or queue), ignoring tenants
// and its own fallback: what a primary pool asks of its fallback.
bool accepts(const AdmissionPolicy& policy, const PoolLoad& load, RequestClass c);

}  // namespace sluice::gateway
