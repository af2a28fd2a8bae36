// The body of a Kubernetes API PATCH of a Job (`kubectl patch job x -p ...`, the server's
// kube::read_job_patch) or of a Node (`kubectl cordon`, kube::read_node_patch) on any bytes,
// under each patch type it is sent with (the first byte: bits 0-1 merge, strategic merge, JSON
// patch, server-side apply's YAML; bit 2 a Node).
//
// Invariants: no crash, exception or sanitizer report; a refusal is 400, 415 or 422 with a
// message, and a 422 for other fields names each field; a patch read is one that names
// nothing but spec.suspend (and apiVersion, kind, metadata.name).
#include <cstdlib>
#include <string>

#include "fuzz_util.h"
#include "server/http/kube_patch.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sluice::server;
  if (size == 0) return 0;
  static const char* kTypes[] = {"application/merge-patch+json",
                                 "application/strategic-merge-patch+json",
                                 "application/json-patch+json", "application/apply-patch+yaml"};
  const char* type = kTypes[data[0] % 4];
  const std::string body = sluice::fuzz::bytes(data + 1, size - 1);
  kube::PatchRefusal why;
  const bool read = (data[0] & 4) ? kube::read_node_patch(type, body, "x", &why).has_value()
                                  : kube::read_job_patch(type, body, "x", &why).has_value();
  if (read) return 0;
  if (why.code != 400 && why.code != 415 && why.code != 422) std::abort();
  if (why.message.empty()) std::abort();
  for (const auto& [field, what] : why.causes)
    if (what.empty()) std::abort();
  return 0;
}
