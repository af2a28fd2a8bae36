#pragma once
// A Job's own Kubernetes metadata (docs/kubernetes.md, "Labels and annotations"): its
// metadata.labels and annotations and its pod template's, as the Kubernetes API's create takes
// them and kubectl label / annotate change them, checked by Kubernetes' rules (label keys and
// values; at most 256 KiB of annotations per object) and kept with the job's record
// (JobRecord::kube_meta) as compact JSON: {"labels", "annotations", "template": {"labels",
// "annotations"}}, each part only when it has entries; a JobSet, PyTorchJob or MPIJob also
// keeps "kind", "apiVersion" and "spec". Pure (nlohmann only): the unit tests and
// fuzz_kube_body reach it without a server.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/http/kube_patch.h"

namespace sluice::server::kube {

// Kubernetes' TotalAnnotationSizeLimitB: an object's annotations, keys and values together.
inline constexpr size_t kMaxAnnotationBytes = 256 * 1024;

// (field, what is wrong), in the API server's words.
using MetaCauses = std::vector<std::pair<std::string, std::string>>;

// "" when valid; else why, as the API server says it (IsQualifiedName, IsValidLabelValue).
std::string label_key_error(std::string_view key);
std::string label_value_error(std::string_view value);

// What to keep of a batch/v1 Job document: "" when it has no labels or annotations (of its own
// or its template's); nullopt with the causes when one is not valid. `whole`: a JobSet,
// PyTorchJob or MPIJob (kube_job_kinds.cc), whose kind, apiVersion and spec are kept too, as
// written (its pod templates' labels are in its spec).
std::optional<std::string> read_job_meta(const nlohmann::json& doc, MetaCauses* causes,
                                         bool whole = false);

// A kept text read back from the store: itself when it is what read_job_meta keeps (bounded,
// valid), nullopt otherwise.
std::optional<std::string> check_kept_meta(std::string_view text);

// `kept` with a merge patch of the Job's metadata.labels and annotations applied: "" when
// nothing is left; nullopt with the causes when the result is not valid, or when it changes a
// label that sluice reads or sets (the queue-name and priority-class labels, sluice.dev/*).
std::optional<std::string> patch_meta(const std::string& kept, const MapPatch& labels,
                                      const MapPatch& annotations, MetaCauses* causes);

// The parts of a kept text, each a JSON object (empty when absent).
struct KeptMeta {
  nlohmann::json labels = nlohmann::json::object();
  nlohmann::json annotations = nlohmann::json::object();
  nlohmann::json pod_labels = nlohmann::json::object();  // the template's
  nlohmann::json pod_annotations = nlohmann::json::object();
  std::string kind;     // a JobSet's, PyTorchJob's or MPIJob's kind; "" a batch/v1 Job
  nlohmann::json spec;  // that kind's spec as written; null otherwise
};
KeptMeta kept_meta(const std::string& text);

}  // namespace sluice::server::kube
