#include "gateway/admission.h"

#include <gtest/gtest.h>

namespace sluice::gateway {
namespace {

constexpr auto kCrit = RequestClass::kCritical;
constexpr auto kStd = RequestClass::kStandard;
constexpr auto kShed = RequestClass::kSheddable;

// C = 20, threshold 0.5 -> T = 10, H = 2; one backend with 4 slots.
AdmissionPolicy policy() {
  return {20, 0.5, 2};
}

AdmissionResult run(int queued, int in_flight, RequestClass c, bool fallback = false,
                    int capacity = 4) {
  AdmissionInput in;
  in.load = {queued, in_flight, capacity};
  in.request_class = c;
  in.fallback_accepts = fallback;
  return decide(policy(), in);
}

TEST(GatewayAdmission, ShedDepthRoundsUpAndClamps) {
  EXPECT_EQ((AdmissionPolicy{64, 0.85, 0}.shed_depth()), 55);  // 54.4 -> 55
  EXPECT_EQ((AdmissionPolicy{64, 0.5, 0}.shed_depth()), 32);
  EXPECT_EQ((AdmissionPolicy{10, 0.95, 0}.shed_depth()), 10);  // 9.5 -> 10 = C: no band
  EXPECT_EQ((AdmissionPolicy{0, 0.85, 0}.shed_depth()), 0);
  EXPECT_EQ((AdmissionPolicy{20, 1.0, 3}.queue_cap(kCrit)), 23);
  EXPECT_EQ((AdmissionPolicy{20, 1.0, 3}.queue_cap(kStd)), 20);
}

TEST(GatewayAdmission, FreeSlotDispatchesEveryClass) {
  for (auto c : {kCrit, kStd, kShed}) {
    EXPECT_EQ(run(0, 3, c).decision, Decision::kDispatch);  // 3 of 4 slots busy
  }
  // A free slot but someone already waiting: FIFO fairness, queue behind them.
  EXPECT_EQ(run(1, 3, kStd).decision, Decision::kQueue);
}

TEST(GatewayAdmission, BelowThresholdQueuesEveryClass) {
  for (auto c : {kCrit, kStd, kShed}) {
    EXPECT_EQ(run(9, 4, c, true).decision, Decision::kQueue);  // d=9 < T=10
  }
}

TEST(GatewayAdmission, SheddableShedAtThreshold) {
  EXPECT_EQ(run(10, 4, kShed), (AdmissionResult{Decision::kReject, RejectReason::kShed}));
  EXPECT_EQ(run(10, 4, kShed, true).decision, Decision::kFallback);
  EXPECT_EQ(run(19, 4, kShed, true).decision, Decision::kFallback);
  EXPECT_EQ(run(25, 4, kShed), (AdmissionResult{Decision::kReject, RejectReason::kShed}));
}

TEST(GatewayAdmission, StandardFallsBackBetweenThresholdAndCap) {
  EXPECT_EQ(run(10, 4, kStd).decision, Decision::kQueue);  // no fallback: keep queueing
  EXPECT_EQ(run(19, 4, kStd).decision, Decision::kQueue);
  EXPECT_EQ(run(10, 4, kStd, true).decision, Decision::kFallback);
  EXPECT_EQ(run(19, 4, kStd, true).decision, Decision::kFallback);
  // At the cap: 429 even with a fallback.
  EXPECT_EQ(run(20, 4, kStd, true), (AdmissionResult{Decision::kReject, RejectReason::kQueueFull}));
  EXPECT_EQ(run(20, 4, kStd), (AdmissionResult{Decision::kReject, RejectReason::kQueueFull}));
}

TEST(GatewayAdmission, CriticalUsesHeadroomAndNeverFallsBack) {
  EXPECT_EQ(run(15, 4, kCrit, true).decision, Decision::kQueue);
  EXPECT_EQ(run(20, 4, kCrit, true).decision, Decision::kQueue);  // C <= d < C + H
  EXPECT_EQ(run(21, 4, kCrit).decision, Decision::kQueue);
  EXPECT_EQ(run(22, 4, kCrit), (AdmissionResult{Decision::kReject, RejectReason::kQueueFull}));
}

TEST(GatewayAdmission, TenantLimitComesFirst) {
  AdmissionInput in;
  in.load = {0, 0, 4};  // idle pool
  in.tenant_active = 2;
  in.tenant_limit = 2;
  EXPECT_EQ(decide(policy(), in), (AdmissionResult{Decision::kReject, RejectReason::kTenantLimit}));
  in.tenant_limit = 3;
  EXPECT_EQ(decide(policy(), in).decision, Decision::kDispatch);
  in.tenant_limit = 0;  // unlimited
  in.tenant_active = 1000;
  EXPECT_EQ(decide(policy(), in).decision, Decision::kDispatch);
}

TEST(GatewayAdmission, NoHealthyBackend) {
  EXPECT_EQ(run(0, 0, kStd, false, 0),
            (AdmissionResult{Decision::kReject, RejectReason::kNoBackend}));
  EXPECT_EQ(run(0, 0, kCrit, true, 0).decision, Decision::kFallback);  // failover, any class
}

TEST(GatewayAdmission, AcceptsIgnoresFallbackAndTenants) {
  AdmissionPolicy p{4, 0.5, 1};  // T = 2
  EXPECT_TRUE(accepts(p, {0, 0, 2}, kShed));
  EXPECT_TRUE(accepts(p, {1, 2, 2}, kShed));
  EXPECT_FALSE(accepts(p, {2, 2, 2}, kShed));
  EXPECT_TRUE(accepts(p, {3, 2, 2}, kStd));
  EXPECT_FALSE(accepts(p, {4, 2, 2}, kStd));
  EXPECT_FALSE(accepts(p, {0, 0, 0}, kStd));  // no backend
}

// The queue bound holds for any arrival sequence: simulate arrivals (no service) and check that
// the depth never exceeds C + H, whatever the class order.
TEST(GatewayAdmission, QueueNeverExceedsBound) {
  AdmissionPolicy p{16, 0.85, 3};
  int queued = 0;
  const RequestClass order[] = {kShed, kStd, kCrit, kStd, kCrit, kCrit, kShed};
  for (int i = 0; i < 500; ++i) {
    AdmissionInput in;
    in.load = {queued, 4, 4};
    in.request_class = order[i % 7];
    auto r = decide(p, in);
    if (r.decision == Decision::kQueue) ++queued;
    ASSERT_LE(queued, p.queue_bound()) << "arrival " << i;
  }
  EXPECT_EQ(queued, 19);  // filled exactly to C + H = 19
}

}  // namespace
}  // namespace sluice::gateway
