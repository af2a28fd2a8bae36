#pragma once
// The bodies of the Kubernetes API's POSTs other than a Job's (kube_bodies.cc,
// docs/kubernetes.md): a policy/v1 Eviction (`kubectl drain`), an authorization.k8s.io/v1
// SelfSubjectAccessReview (`kubectl auth can-i`) and SelfSubjectRulesReview (`kubectl auth
// can-i --list`), as JSON or in Kubernetes' protobuf encoding (kube_protobuf.h), which is how
// kubectl's typed clients send them. Fields sluice does not read are ignored, as the API
// server warns of unknown fields and goes on; a field of the wrong type, a name that is not
// the path's, a review that asks nothing are refused. Pure (nlohmann only): the unit tests and
// fuzz_kube_body reach them without a server.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "server/http/kube_patch.h"

namespace sluice::server::kube {

// A refused body: 400 BadRequest or 422 Invalid (with a cause per field), with a message.
using BodyRefusal = PatchRefusal;

// At most this deep a body's JSON nests (as a patch's).
inline constexpr int kMaxBodyDepth = kMaxPatchDepth;

// POST /api/v1/namespaces/{ns}/pods/{name}/eviction: policy/v1 (or v1beta1) Eviction. Its
// metadata.name must be the path's name, its metadata.namespace (when given) the path's.
struct Eviction {
  std::optional<int64_t> grace_seconds;  // deleteOptions.gracePeriodSeconds
  std::string uid;                       // deleteOptions.preconditions.uid ("": none)
  bool dry_run = false;                  // deleteOptions.dryRun: ["All"]
};
// `content_type`: the request's Content-Type (kProtobufType: protobuf; anything else: JSON).
std::optional<Eviction> read_eviction(std::string_view content_type, std::string_view body,
                                      const std::string& name, const std::string& ns,
                                      BodyRefusal* why);

// A SelfSubjectAccessReview's spec: exactly one of resourceAttributes and
// nonResourceAttributes.
struct AccessQuestion {
  bool non_resource = false;
  std::string ns, verb, group, version, resource, subresource, name;
  std::string path;  // nonResourceAttributes.path
};
std::optional<AccessQuestion> read_access_review(std::string_view content_type,
                                                 std::string_view body, BodyRefusal* why);

// A SelfSubjectRulesReview's spec.namespace ("" when not given).
std::optional<std::string> read_rules_review(std::string_view content_type, std::string_view body,
                                             BodyRefusal* why);

}  // namespace sluice::server::kube
