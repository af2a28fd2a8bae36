#include "server/http/kube_patch.h"

#include <algorithm>
#include <cctype>

#include <nlohmann/json.hpp>

namespace sluice::server::kube {

namespace {

using nlohmann::json;

// Every leaf under `j` as a field path ("spec.parallelism", "metadata.labels.a").
void leaves(const json& j, const std::string& at, std::vector<std::string>& out) {
  if (!j.is_object() || j.empty()) {
    out.push_back(at);
    return;
  }
  for (const auto& [k, v] : j.items()) leaves(v, at.empty() ? k : at + "." + k, out);
}

// A patch's metadata.labels or metadata.annotations into `out`: false (with the cause) when it
// is not a map of strings and nulls.
bool read_map(const json& m, const std::string& at, MapPatch& out, PatchRefusal* why) {
  if (!m.is_object()) {
    *why = {422, at + ": expected a map of strings", {{at, "not a map of strings"}}};
    return false;
  }
  for (const auto& [k, v] : m.items()) {
    if (!v.is_string() && !v.is_null()) {
      *why = {422, at + "." + k + ": expected a string or null", {{at + "." + k, "not a string"}}};
      return false;
    }
    out.emplace_back(k, v.is_null() ? std::nullopt : std::optional(v.get<std::string>()));
  }
  return true;
}

// The patch's metadata but its name: the labels and annotations into `maps` (a Job's; null: a
// Node's, which takes none), other fields into `fields`. False on a refusal.
bool read_metadata(const json& v, const std::string& name, JobPatch* maps,
                   std::vector<std::string>& fields, PatchRefusal* why) {
  if (!v.is_object()) {
    leaves(v, "metadata", fields);
    return true;
  }
  json rest = v;
  if (rest.contains("name") && rest["name"] == name) rest.erase("name");
  if (maps && rest.contains("resourceVersion") && rest["resourceVersion"].is_string()) {
    maps->resource_version = rest["resourceVersion"].get<std::string>();
    rest.erase("resourceVersion");
  }
  if (maps) {
    for (auto [key, out] :
         {std::pair{"labels", &maps->labels}, std::pair{"annotations", &maps->annotations}}) {
      if (!rest.contains(key)) continue;
      if (!read_map(rest[key], std::string("metadata.") + key, *out, why)) return false;
      rest.erase(key);
    }
  }
  if (!rest.empty()) leaves(rest, "metadata", fields);
  return true;
}

// The patch's spec into *out (the one boolean it may change: `field`, inside `nested` when
// given) and `fields` (any other). False on a refusal.
bool read_spec(const json& v, const char* nested, const std::string& field,
               std::optional<bool>* out, std::vector<std::string>& fields, PatchRefusal* why) {
  const std::string at = nested ? std::string("spec.") + nested : "spec";
  const json* inner = &v;
  if (nested) {
    if (!v.is_object() || !v.contains(nested)) {
      leaves(v, "spec", fields);
      return true;
    }
    json rest = v;
    rest.erase(nested);
    if (!rest.empty()) leaves(rest, "spec", fields);
    inner = &v[nested];
  }
  if (!inner->is_object() || !inner->contains(field)) {
    leaves(*inner, at, fields);
    return true;
  }
  const json& f = (*inner)[field];
  if (!f.is_boolean() && !f.is_null()) {
    *why = {
        422, at + "." + field + ": expected true or false", {{at + "." + field, "not a boolean"}}};
    return false;
  }
  *out = f.is_boolean() && f.get<bool>();
  json rest = *inner;
  rest.erase(field);
  if (!rest.empty()) leaves(rest, at, fields);
  return true;
}

// The one boolean a patch of `kind` may change (spec.<field>, or spec.<nested>.<field>):
// nullopt on a refusal; inside, nullopt when the patch leaves it alone. `maps`: a job's
// labels, annotations and precondition (null for a Node, which takes none).
std::optional<std::optional<bool>> read_spec_bool(std::string_view content_type,
                                                  std::string_view body, const std::string& name,
                                                  const std::string& api_version,
                                                  const std::string& kind, const char* nested,
                                                  const std::string& field, JobPatch* maps,
                                                  PatchRefusal* why) {
  const std::string type = media_type(content_type);
  if (type != "application/merge-patch+json" && type != "application/strategic-merge-patch+json") {
    *why = {415,
            "sluice takes a JSON merge patch or a strategic merge patch of a " + kind +
                " (--type merge or strategic), not " +
                (type.empty() ? std::string("a body without a Content-Type") : type),
            {}};
    return std::nullopt;
  }
  if (json_depth(body, kMaxPatchDepth) > kMaxPatchDepth) {
    *why = {400, "the patch nests deeper than " + std::to_string(kMaxPatchDepth) + " levels", {}};
    return std::nullopt;
  }
  const json doc = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object()) {
    *why = {400, "the patch is not a JSON object", {}};
    return std::nullopt;
  }
  std::optional<bool> out;
  std::vector<std::string> fields;
  for (const auto& [k, v] : doc.items()) {
    if ((k == "apiVersion" && v == api_version) || (k == "kind" && v == kind)) continue;
    if (k == "metadata") {
      if (!read_metadata(v, name, maps, fields, why)) return std::nullopt;
    } else if (k == "spec") {
      if (!read_spec(v, nested, field, &out, fields, why)) return std::nullopt;
    } else {
      leaves(v, k, fields);
    }
  }
  if (!fields.empty()) {
    const std::string path =
        std::string("spec.") + (nested ? std::string(nested) + "." : "") + field;
    *why = {422,
            "sluice changes a " + kind + "'s " + path +
                (maps ? ", metadata.labels and metadata.annotations" : "") +
                " only; the patch also changes " + std::to_string(fields.size()) +
                " other field(s)",
            {}};
    for (const auto& f : fields)
      why->causes.push_back({f, "sluice does not change this field of a " + kind});
    return std::nullopt;
  }
  return out;
}

}  // namespace

std::string media_type(std::string_view content_type) {
  std::string t(content_type.substr(0, content_type.find(';')));
  while (!t.empty() && t.back() == ' ') t.pop_back();
  for (auto& ch : t) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return t;
}

std::optional<JobPatch> read_job_patch(std::string_view content_type, std::string_view body,
                                       const std::string& name, PatchRefusal* why,
                                       const JobShape& shape) {
  JobPatch out;
  auto v = read_spec_bool(content_type, body, name, shape.api_version, shape.kind,
                          shape.run_policy ? "runPolicy" : nullptr, "suspend", &out, why);
  if (!v) return std::nullopt;
  out.suspend = *v;
  return out;
}

std::optional<NodePatch> read_node_patch(std::string_view content_type, std::string_view body,
                                         const std::string& name, PatchRefusal* why) {
  auto v = read_spec_bool(content_type, body, name, "v1", "Node", nullptr, "unschedulable", nullptr,
                          why);
  if (!v) return std::nullopt;
  return NodePatch{*v};
}

int json_depth(std::string_view text, int limit) {
  int depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (char ch : text) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (ch == '\\')
        escaped = true;
      else if (ch == '"')
        in_string = false;
      continue;
    }
    if (ch == '"') in_string = true;
    if (ch == '{' || ch == '[') deepest = std::max(deepest, ++depth);
    if (ch == '}' || ch == ']') --depth;
    if (deepest > limit) break;
  }
  return deepest;
}

}  // namespace sluice::server::kube
