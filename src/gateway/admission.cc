#include "gateway/admission.h"

#include <algorithm>
#include <cmath>

namespace sluice::gateway {

std::string_view reason_name(RejectReason r) {
  switch (r) {
    case RejectReason::kNone:
      return "none";
    case RejectReason::kShed:
      return "shed";
    case RejectReason::kQueueFull:
      return "queue_full";
    case RejectReason::kTenantLimit:
      return "tenant_limit";
    case RejectReason::kNoBackend:
      return "no_backend";
  }
  return "none";
}

int AdmissionPolicy::shed_depth() const {
  // The small epsilon keeps 0.5 * 64 at 32 despite binary rounding of the threshold.
  double t = std::ceil(shed_threshold * max_queue_depth - 1e-9);
  return std::clamp(static_cast<int>(t), 0, max_queue_depth);
}

int AdmissionPolicy::queue_cap(RequestClass c) const {
  return c == RequestClass::kCritical ? max_queue_depth + critical_headroom : max_queue_depth;
}

AdmissionResult decide(const AdmissionPolicy& policy, const AdmissionInput& in) {
  // Step numbers follow the rule in admission.h.
  // 0. Tenant limit.
  if (in.tenant_limit > 0 && in.tenant_active >= in.tenant_limit) {
    return {Decision::kReject, RejectReason::kTenantLimit};
  }
  // 1. No healthy backend.
  if (in.load.capacity <= 0) {
    if (in.fallback_accepts) {
      return {Decision::kFallback, RejectReason::kNone};
    }
    return {Decision::kReject, RejectReason::kNoBackend};
  }
  // 2. Free slot and nobody waiting.
  const int d = in.load.queued;
  if (d == 0 && in.load.in_flight < in.load.capacity) return {Decision::kDispatch};
  // 3. Must wait: per-class thresholds.
  const int t = policy.shed_depth();
  switch (in.request_class) {
    case RequestClass::kSheddable:
      if (d < t) return {Decision::kQueue};
      if (in.fallback_accepts) return {Decision::kFallback};
      return {Decision::kReject, RejectReason::kShed};
    case RequestClass::kStandard:
      if (d < t) return {Decision::kQueue};
      if (d >= policy.queue_cap(RequestClass::kStandard)) {
        return {Decision::kReject, RejectReason::kQueueFull};
      }
      if (in.fallback_accepts) return {Decision::kFallback};
      return {Decision::kQueue};
    case RequestClass::kCritical:
      if (d < policy.queue_cap(RequestClass::kCritical)) return {Decision::kQueue};
      return {Decision::kReject, RejectReason::kQueueFull};
  }
  return {Decision::kReject, RejectReason::kQueueFull};
}

bool accepts(const AdmissionPolicy& policy, const PoolLoad& load, RequestClass c) {
  AdmissionInput in;
  in.load = load;
  in.request_class = c;
  auto r = decide(policy, in);
  return r.decision == Decision::kDispatch || r.decision == Decision::kQueue;
}

}  // namespace sluice::gateway
