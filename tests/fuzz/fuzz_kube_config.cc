// The bodies that change Kueue's configuration through the Kubernetes API (kube_config_docs.h,
// kube_apply.h), the mode byte picking which: 0 a create's or update's object (JSON or YAML,
// kube::read_object_body); 1 a PATCH of a ClusterQueue under the patch type bits 2-3 pick
// (merge, strategic merge, JSON patch, another); 2 a server-side apply (the body read as an
// object, applied by manager "b" over a ClusterQueue manager "a" applied; bit 2: force); 3 a
// configuration's text split into documents and joined back.
//
// Invariants: no crash, exception or sanitizer report; a body is read as one object or refused
// with a message; a patch refusal is 400, 415 or 422 with a message; an apply gives conflicts
// or an object whose managedFields hold "b"'s entry, never both; a text split and joined splits
// into the same documents.
#include <cstdlib>
#include <string>

#include "fuzz_util.h"
#include "server/http/kube_apply.h"
#include "server/http/kube_config_docs.h"

namespace {

using nlohmann::json;

const json& cluster_queue() {
  static const json cq = [] {
    json o = {{"apiVersion", "kueue.x-k8s.io/v1beta1"},
              {"kind", "ClusterQueue"},
              {"metadata", {{"name", "cq"}}},
              {"spec", {{"cohort", "all"}, {"resourceGroups", json::array({{{"a", 1}}})}}}};
    return sluice::server::kube::server_side_apply(nullptr, o, "a", false, "t").object;
  }();
  return cq;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sluice::server;
  if (size == 0) return 0;
  const uint8_t mode = data[0];
  const std::string body = sluice::fuzz::bytes(data + 1, size - 1);
  std::string error;
  switch (mode % 4) {
    case 0: {
      auto o = kube::read_object_body(body, &error);
      if (!o && error.empty()) std::abort();
      if (o && !o->is_object()) std::abort();
      break;
    }
    case 1: {
      static const char* kTypes[] = {"application/merge-patch+json",
                                     "application/strategic-merge-patch+json",
                                     "application/json-patch+json", "text/plain"};
      kube::PatchRefusal why;
      auto o = kube::apply_patch(cluster_queue(), kTypes[(mode >> 2) % 4], body, &why);
      if (!o && ((why.code != 400 && why.code != 415 && why.code != 422) || why.message.empty()))
        std::abort();
      break;
    }
    case 2: {
      auto o = kube::read_object_body(body, &error);
      if (!o) break;
      if (!(*o)["metadata"].is_object()) (*o)["metadata"] = json::object();
      (*o)["metadata"]["name"] = "cq";  // the caller checks the name and kind
      auto r = kube::server_side_apply(cluster_queue(), *o, "b", (mode & 4) != 0, "t");
      if (r.conflicts.empty() == r.object.is_null()) std::abort();
      if (!r.object.is_null()) {
        bool b = false;
        for (const auto& e : r.object["metadata"]["managedFields"]) b = b || e["manager"] == "b";
        if (!b) std::abort();
      }
      break;
    }
    default: {
      const auto docs = kube::split_config(body);
      const auto again = kube::split_config(kube::join_config(docs));
      if (again.size() != docs.size()) std::abort();
      for (size_t i = 0; i < docs.size(); ++i)
        if (again[i].kind != docs[i].kind || again[i].name != docs[i].name) std::abort();
      break;
    }
  }
  return 0;
}
