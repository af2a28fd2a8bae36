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

namespace sluice::server::kube {

inline constexpr const char* kLastApplied = "kubectl.kubernetes.io/last-applied-configuration";
// Kubernetes refuses an object whose annotations pass 256 KiB; a longer one is not kept.
inline constexpr size_t kMaxApplied = 256 * 1024;

// The annotation in an object's metadata; nullopt when it has none, it is not a string, or it
// is longer than kMaxApplied.
std::optional<std::string> applied_annotation(const nlohmann::json& o);
// JSON text parsed when it nests at most kMaxPatchDepth deep (the annotation is a string inside
// a body whose own depth was bounded); null otherwise, or when it is not JSON.
nlohmann::json parse_bounded(std::string_view text);
// Where two applied manifests differ, as field paths, but in spec.suspend, metadata.labels and
// metadata.annotations. A Job's template, completions, completion mode and selector are immutable
// in Kubernetes: a change under one is reported at it ("spec.template").
std::vector<std::string> applied_changes(const nlohmann::json& kept, const nlohmann::json& next);

}  // namespace sluice::server::kube
