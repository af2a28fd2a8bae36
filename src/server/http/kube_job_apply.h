#pragma once
// kubectl apply of a batch/v1 Job (kube_job_apply.cc, docs/kubernetes.md "kubectl apply of a
// Job"): the pure parts, for the unit tests. The annotation kubectl writes, bounded as
// Kubernetes bounds an object's annotations, and the fields two applied manifests differ in.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/http/kube_patch.h"

namespace sluice::server::kube {

inline constexpr const char* kLastApplied = "kubectl.kubernetes.io/last-applied-configuration";
// The manifest a server-side apply of a job last applied (kube_job_apply.cc), kept as kubectl's
// annotation is for a client-side apply: what the next apply is compared with, and the spec's
// fields as the job shows them.
inline constexpr const char* kServerSideApplied = "apply.sluice.dev/last-applied";
// Kubernetes refuses an object whose annotations pass 256 KiB; a longer one is not kept.
inline constexpr size_t kMaxApplied = 256 * 1024;

// The annotation in an object's metadata; nullopt when it has none, it is not a string, or it
// is longer than kMaxApplied.
std::optional<std::string> applied_annotation(const nlohmann::json& o);
// JSON text parsed when it nests at most kMaxPatchDepth deep (the annotation is a string inside
// a body whose own depth was bounded); null otherwise, or when it is not JSON.
nlohmann::json parse_bounded(std::string_view text);
// Where two applied manifests differ, as field paths, but in the kind's suspend flag
// (`suspend_field`, JobShape::suspend_field), metadata.labels and metadata.annotations. A Job's
// template, completions, completion mode and selector are immutable in Kubernetes: a change
// under one is reported at it ("spec.template").
std::vector<std::string> applied_changes(const nlohmann::json& kept, const nlohmann::json& next,
                                         const std::string& suspend_field = "spec.suspend");

// Where an update's spec (a whole object's, as kubectl replace or a client's replace sends it)
// differs from the job's as shown, as field paths: the fields the body carries (one it leaves
// out keeps its value), but the suspend flag. Objects and arrays are compared member by member
// (an array of another length differs whole); a number and a string of the same text (a
// quantity written 2 or "2") are the same.
std::vector<std::string> updated_fields(const nlohmann::json& shown, const nlohmann::json& body,
                                        const std::string& suspend_field);

// The kind's suspend flag in a body (a patch or a whole object), as written; nullopt when the
// body has none.
std::optional<nlohmann::json> suspend_in(const nlohmann::json& body, const JobShape& shape);

// The merge patch that makes a job's own labels (or annotations: `kept`, a JSON object) those of
// an update's `body` (null: the body has none): a kept key the body drops is removed; a key the
// body gives the value the job shows is left; sluice's own (sluice.dev/*: shown, never kept,
// such as the job's state) are left whatever the body says; any other is set.
MapPatch replaced_map(const nlohmann::json& kept, const nlohmann::json& shown,
                      const nlohmann::json& body);

}  // namespace sluice::server::kube
