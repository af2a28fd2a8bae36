// The bodies of the Kubernetes API's POSTs other than a Job's (server/http/kube_bodies.h) on
// any bytes: a policy/v1 Eviction (kubectl drain; kube::read_eviction), a
// SelfSubjectAccessReview (kubectl auth can-i; kube::read_access_review) and a
// SelfSubjectRulesReview (--list; kube::read_rules_review). The first byte picks which (bits
// 0-1: eviction, access review, rules review) and how it is encoded (bit 2: Kubernetes'
// protobuf, as kubectl's typed clients send them; else JSON).
//
// Invariants: no crash, exception or sanitizer report; a refusal is 400 or 422 with a message,
// and a cause of a 422 says what is wrong; an eviction read is for the path's pod (its
// metadata.name was "x-0"), with a grace period that is not negative; a review read asks about
// resources or about a path, never both.
#include <cstdlib>
#include <string>

#include "fuzz_util.h"
#include "server/http/kube_bodies.h"
#include "server/http/kube_protobuf.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sluice::server;
  if (size == 0) return 0;
  const std::string body = sluice::fuzz::bytes(data + 1, size - 1);
  const char* type = (data[0] & 4) ? kube::kProtobufType : "application/json";
  kube::BodyRefusal why;
  bool read = false;
  switch (data[0] & 3) {
    case 0: {
      const auto e = kube::read_eviction(type, body, "x-0", "ns", &why);
      if (e && e->grace_seconds && *e->grace_seconds < 0) std::abort();
      if (e && body.find("x-0") == std::string::npos) std::abort();
      read = e.has_value();
      break;
    }
    case 1: {
      const auto q = kube::read_access_review(type, body, &why);
      if (q && q->non_resource && !(q->resource.empty() && q->ns.empty())) std::abort();
      if (q && !q->non_resource && !q->path.empty()) std::abort();
      read = q.has_value();
      break;
    }
    default:
      read = kube::read_rules_review(type, body, &why).has_value();
  }
  if (read) return 0;
  if (why.code != 400 && why.code != 422) std::abort();
  if (why.message.empty()) std::abort();
  for (const auto& [field, what] : why.causes)
    if (field.empty() || what.empty()) std::abort();
  return 0;
}
