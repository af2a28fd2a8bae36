#pragma once
// The body of a PATCH through the Kubernetes API (kube_patch.cc, docs/kubernetes.md): a JSON
// merge patch or a strategic merge patch, which read the same for the fields sluice changes
// of each kind: a Job's `spec.suspend`, hold (true) and release (false), as Kueue's users
// suspend and resume a Job, and its metadata.labels and annotations (kubectl label, annotate); a
// Node's `spec.unschedulable`, cordon (true) and resume (false), as kubectl cordon and uncordon
// send it. Every other field a patch would change is refused by name (422 Invalid with a cause per
// field), never ignored. Pure (nlohmann only): the unit tests and fuzz_kube_patch reach it without
// a server.
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sluice::server::kube {

// A merge patch of a string map (metadata.labels): each key's new value, nullopt removes it.
using MapPatch = std::vector<std::pair<std::string, std::optional<std::string>>>;

struct JobPatch {
  std::optional<bool> suspend;   // spec.suspend (null: false, as merge patch's delete)
  MapPatch labels, annotations;  // metadata's (kubectl label, kubectl annotate)
  // metadata.resourceVersion: a precondition, as the API server takes it (409 Conflict when the
  // job's is another).
  std::optional<std::string> resource_version;
};

// A job kind's identity and where it keeps its suspend flag: spec.suspend (a batch/v1 Job, a
// JobSet) or spec.runPolicy.suspend (the Kubeflow operators' PyTorchJob and MPIJob).
struct JobShape {
  std::string api_version = "batch/v1", kind = "Job";
  bool run_policy = false;
  std::string suspend_field() const {
    return run_policy ? "spec.runPolicy.suspend" : "spec.suspend";
  }
};

struct NodePatch {
  std::optional<bool> unschedulable;  // spec.unschedulable (null: false; uncordon sends null)
};

struct PatchRefusal {
  int code = 0;  // 415 UnsupportedMediaType, 400 BadRequest, 422 Invalid
  std::string message;
  std::vector<std::pair<std::string, std::string>> causes;  // (field, what is wrong)
};

// A Content-Type's media type, lower case, without its parameters ("; charset=utf-8").
std::string media_type(std::string_view content_type);

// At most this deep a patch's JSON nests.
inline constexpr int kMaxPatchDepth = 32;
// The deepest nesting of objects and arrays in JSON `text` (strings skipped), counted up to
// just past `limit`: a body is measured before it is parsed.
int json_depth(std::string_view text, int limit);

// `content_type`: the request's Content-Type (parameters after ';' ignored); `name`: the
// Job's, which metadata.name may repeat; `shape`: the kind patched (a batch/v1 Job unless
// said). nullopt with *why on a refusal.
std::optional<JobPatch> read_job_patch(std::string_view content_type, std::string_view body,
                                       const std::string& name, PatchRefusal* why,
                                       const JobShape& shape = {});
std::optional<NodePatch> read_node_patch(std::string_view content_type, std::string_view body,
                                         const std::string& name, PatchRefusal* why);

}  // namespace sluice::server::kube
