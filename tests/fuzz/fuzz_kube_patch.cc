// The body of a Kubernetes API PATCH of a Job (`kubectl patch job x -p ...`, `kubectl label`, the
// server's kube::read_job_patch) or of a Node (`kubectl cordon`, kube::read_node_patch) on any
// bytes, under each patch type it is sent with (the first byte: bits 0-1 merge, strategic merge,
// JSON patch, server-side apply's YAML; bit 2 a Node; bit 3 a PyTorchJob's, whose suspend flag
// is spec.runPolicy.suspend).
//
// A Job's patch read is applied to a kept metadata (kube::patch_meta, kubectl label), and the
// bytes are read as a created Job's metadata too, and as a JobSet's kept whole
// (kube::read_job_meta).
//
// Invariants: no crash, exception or sanitizer report; a refusal is 400, 415 or 422 with a
// message, and a 422 for other fields names each field; a patch read is one that names
// nothing but the kind's suspend flag, metadata.labels and annotations (and apiVersion, kind,
// metadata.name, metadata.resourceVersion); metadata kept (by a create or a patch) is what the
// store reads back as is (kube::check_kept_meta), and a refusal of it has a cause per field, each
// with its reason.
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "fuzz_util.h"
#include "server/http/kube_meta.h"
#include "server/http/kube_patch.h"

namespace {

void check_kept(const std::optional<std::string>& kept,
                const sluice::server::kube::MetaCauses& causes) {
  using namespace sluice::server;
  if (!kept) {
    if (causes.empty()) std::abort();
    for (const auto& [field, what] : causes)
      if (field.empty() || what.empty()) std::abort();
    return;
  }
  if (kube::check_kept_meta(*kept) != *kept) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sluice::server;
  if (size == 0) return 0;
  static const char* kTypes[] = {"application/merge-patch+json",
                                 "application/strategic-merge-patch+json",
                                 "application/json-patch+json", "application/apply-patch+yaml"};
  const char* type = kTypes[data[0] % 4];
  const std::string body = sluice::fuzz::bytes(data + 1, size - 1);
  kube::PatchRefusal why;
  if (!(data[0] & 4) && kube::json_depth(body, kube::kMaxPatchDepth) <= kube::kMaxPatchDepth) {
    const auto doc = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
    for (const bool whole : {false, true}) {  // a batch/v1 Job's; a JobSet's, kept whole
      kube::MetaCauses causes;
      const auto kept = kube::read_job_meta(doc, &causes, whole);
      check_kept(kept, causes);
    }
  }
  bool read = false;
  if (data[0] & 4) {
    read = kube::read_node_patch(type, body, "x", &why).has_value();
  } else if (const auto p = kube::read_job_patch(
                 type, body, "x", &why,
                 data[0] & 8 ? kube::JobShape{"kubeflow.org/v1", "PyTorchJob", true}
                             : kube::JobShape{})) {
    read = true;
    kube::MetaCauses causes;
    check_kept(kube::patch_meta(R"({"labels":{"team":"a"}})", p->labels, p->annotations, &causes),
               causes);
  }
  if (read) return 0;
  if (why.code != 400 && why.code != 415 && why.code != 422) std::abort();
  if (why.message.empty()) std::abort();
  for (const auto& [field, what] : why.causes)
    if (what.empty()) std::abort();
  return 0;
}
