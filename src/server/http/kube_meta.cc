#include "server/http/kube_meta.h"

#include <cctype>

namespace sluice::server::kube {

namespace {

using nlohmann::json;

constexpr const char* kNameRule =
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
constexpr const char* kValueRule =
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
constexpr const char* kPrefixRule =
    "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
    "characters, '-' or '.', and must start and end with an alphanumeric character (e.g. "
    "'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
// A kept text is at most this long: two objects' annotations and generous labels; with a kept
// spec, what a submission may hold (config/input_limits.h: 8 MiB of scalars) and more.
constexpr size_t kMaxKeptBytes = 4 * kMaxAnnotationBytes;
constexpr size_t kMaxWholeBytes = 32u << 20;

bool alnum(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0;
}

// ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]
bool name_chars(std::string_view s) {
  if (s.empty() || !alnum(s.front()) || !alnum(s.back())) return false;
  for (char c : s)
    if (!alnum(c) && c != '-' && c != '_' && c != '.') return false;
  return true;
}

// A lowercase RFC 1123 subdomain's characters: [a-z0-9]([-a-z0-9]*[a-z0-9])? joined by '.'.
bool subdomain_chars(std::string_view s) {
  size_t start = 0;
  while (start <= s.size()) {
    const size_t dot = std::min(s.find('.', start), s.size());
    const std::string_view part = s.substr(start, dot - start);
    if (part.empty() || part.front() == '-' || part.back() == '-') return false;
    for (char c : part)
      if (!(c >= 'a' && c <= 'z') && !(c >= '0' && c <= '9') && c != '-') return false;
    start = dot + 1;
  }
  return true;
}

std::string json_quoted(std::string_view s) {
  return json(std::string(s)).dump(-1, ' ', false, json::error_handler_t::replace);
}

// The labels of one object (field "metadata.labels"), each checked.
void check_labels(const json& labels, const std::string& field, MetaCauses* causes) {
  for (const auto& [k, v] : labels.items()) {
    if (!v.is_string()) {
      causes->push_back(
          {field, "Invalid value: " + json_quoted(k) + ": a label's value is a string"});
      continue;
    }
    if (auto why = label_key_error(k); !why.empty())
      causes->push_back({field, "Invalid value: " + json_quoted(k) + ": " + why});
    if (auto why = label_value_error(v.get<std::string>()); !why.empty())
      causes->push_back(
          {field, "Invalid value: " + json_quoted(v.get<std::string>()) + ": " + why});
  }
}

void check_annotations(const json& annotations, const std::string& field, MetaCauses* causes) {
  size_t bytes = 0;
  for (const auto& [k, v] : annotations.items()) {
    if (!v.is_string()) {
      causes->push_back(
          {field, "Invalid value: " + json_quoted(k) + ": an annotation's value is a string"});
      continue;
    }
    std::string lower = k;
    for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (auto why = label_key_error(lower); !why.empty())
      causes->push_back({field, "Invalid value: " + json_quoted(k) + ": " + why});
    bytes += k.size() + v.get_ref<const std::string&>().size();
  }
  if (bytes > kMaxAnnotationBytes)
    causes->push_back(
        {field, "Too long: must have at most " + std::to_string(kMaxAnnotationBytes) + " bytes"});
}

// metadata's labels and annotations at `m` (a "metadata" object), under `at`.
void read_maps(const json& m, const std::string& at, json& labels, json& annotations,
               MetaCauses* causes) {
  if (!m.is_object()) return;
  for (auto [key, out] : {std::pair{"labels", &labels}, std::pair{"annotations", &annotations}}) {
    const auto it = m.find(key);
    if (it == m.end() || it->is_null()) continue;
    const std::string field = at + "." + key;
    if (!it->is_object()) {
      causes->push_back({field, "Invalid value: a map of strings is expected"});
      continue;
    }
    if (std::string_view(key) == "labels")
      check_labels(*it, field, causes);
    else
      check_annotations(*it, field, causes);
    *out = *it;
  }
}

// The kinds whose objects are kept whole (kube_job_kinds.cc), with their apiVersion.
constexpr std::pair<const char*, const char*> kWholeKinds[] = {
    {"JobSet", "jobset.x-k8s.io/v1alpha2"},
    {"PyTorchJob", "kubeflow.org/v1"},
    {"MPIJob", "kubeflow.org/v2beta1"}};

const char* api_version_of(std::string_view kind) {
  for (const auto& [k, v] : kWholeKinds)
    if (kind == k) return v;
  return nullptr;
}

// The compact text of the four maps and a kept kind ("" when all are empty).
std::string kept_text(const KeptMeta& m) {
  json out = json::object();
  if (!m.kind.empty()) {
    out["kind"] = m.kind;
    out["apiVersion"] = api_version_of(m.kind);
    out["spec"] = m.spec.is_object() ? m.spec : json::object();
  }
  if (!m.labels.empty()) out["labels"] = m.labels;
  if (!m.annotations.empty()) out["annotations"] = m.annotations;
  json t = json::object();
  if (!m.pod_labels.empty()) t["labels"] = m.pod_labels;
  if (!m.pod_annotations.empty()) t["annotations"] = m.pod_annotations;
  if (!t.empty()) out["template"] = std::move(t);
  return out.empty() ? std::string() : out.dump(-1, ' ', false, json::error_handler_t::replace);
}

// The labels sluice reads at submission or sets itself: a patch may not change them.
bool sluice_label(const std::string& key) {
  return key == "kueue.x-k8s.io/queue-name" || key == "kueue.x-k8s.io/priority-class" ||
         key.rfind("sluice.dev/", 0) == 0;
}

void apply(json& map, const MapPatch& patch, const char* field, bool labels, MetaCauses* causes) {
  for (const auto& [k, v] : patch) {
    const auto it = map.find(k);
    const bool same = v ? (it != map.end() && *it == *v) : it == map.end();
    if (same) continue;
    if (sluice_label(k)) {
      causes->push_back({field, "Forbidden: " + json_quoted(k) +
                                    (labels ? ": sluice reads or sets this label itself; it does "
                                              "not change after the job is submitted"
                                            : ": sluice reads or sets this annotation itself")});
      continue;
    }
    if (v)
      map[k] = *v;
    else
      map.erase(k);
  }
}

}  // namespace

std::string label_key_error(std::string_view key) {
  const size_t slash = key.find('/');
  std::string_view name = key;
  if (slash != std::string_view::npos) {
    if (key.find('/', slash + 1) != std::string_view::npos)
      return std::string("a qualified name ") + kNameRule +
             " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')";
    const std::string_view prefix = key.substr(0, slash);
    name = key.substr(slash + 1);
    if (prefix.empty()) return "prefix part must be non-empty";
    if (prefix.size() > 253) return "prefix part must be no more than 253 characters";
    if (!subdomain_chars(prefix)) return kPrefixRule;
  }
  if (name.empty()) return "name part must be non-empty";
  if (name.size() > 63) return "name part must be no more than 63 characters";
  if (!name_chars(name)) return std::string("name part ") + kNameRule;
  return {};
}

std::string label_value_error(std::string_view value) {
  if (value.size() > 63) return "must be no more than 63 characters";
  if (!value.empty() && !name_chars(value)) return kValueRule;
  return {};
}

std::optional<std::string> read_job_meta(const json& doc, MetaCauses* causes, bool whole) {
  if (!doc.is_object()) return std::string();
  KeptMeta m;
  if (whole) {
    const auto k = doc.find("kind");  // any JSON: not value(), which throws on a non-string
    const std::string kind = k != doc.end() && k->is_string() ? k->get<std::string>() : "";
    if (!api_version_of(kind)) {
      causes->push_back({"kind", "Unsupported value: " + json_quoted(kind)});
      return std::nullopt;
    }
    m.kind = kind;
    if (const auto s = doc.find("spec"); s != doc.end() && s->is_object()) m.spec = *s;
    if (json_depth(m.spec.dump(-1, ' ', false, json::error_handler_t::replace), kMaxPatchDepth) >=
        kMaxPatchDepth) {  // as the store reads it
      causes->push_back({"spec", "Invalid value: nests deeper than " +
                                     std::to_string(kMaxPatchDepth) + " levels"});
      return std::nullopt;
    }
  }
  const size_t before = causes->size();
  if (const auto it = doc.find("metadata"); it != doc.end())
    read_maps(*it, "metadata", m.labels, m.annotations, causes);
  const auto spec = doc.find("spec");
  if (!whole && spec != doc.end() && spec->is_object()) {
    const auto t = spec->find("template");
    if (t != spec->end() && t->is_object())
      if (const auto tm = t->find("metadata"); tm != t->end())
        read_maps(*tm, "spec.template.metadata", m.pod_labels, m.pod_annotations, causes);
  }
  if (causes->size() != before) return std::nullopt;
  return kept_text(m);
}

std::optional<std::string> check_kept_meta(std::string_view text) {
  if (text.empty()) return std::string();
  // A kept spec nests as deep as a patch may (kube_patch.h), under the kept text's own level.
  if (text.size() > kMaxWholeBytes || json_depth(text, kMaxPatchDepth + 1) > kMaxPatchDepth + 1)
    return std::nullopt;
  const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return std::nullopt;
  for (const auto& [k, v] : j.items())
    if (k == "kind" || k == "apiVersion") {
      if (!v.is_string()) return std::nullopt;
    } else if ((k != "labels" && k != "annotations" && k != "template" && k != "spec") ||
               !v.is_object()) {
      return std::nullopt;
    }
  const bool whole = j.contains("kind");
  if (whole != j.contains("spec") || whole != j.contains("apiVersion")) return std::nullopt;
  if (whole &&
      (j.contains("template") || j["apiVersion"] != api_version_of(j["kind"].get<std::string>())))
    return std::nullopt;
  if (!whole && (text.size() > kMaxKeptBytes || json_depth(text, 4) > 3)) return std::nullopt;
  if (j.contains("template"))
    for (const auto& [k, v] : j["template"].items())
      if ((k != "labels" && k != "annotations") || !v.is_object()) return std::nullopt;
  // The template's maps read as a Job's would: the same checks.
  json doc = {{"metadata", j}};
  if (whole) {
    doc["kind"] = j["kind"];
    doc["spec"] = j["spec"];
  } else {
    doc["spec"] = {{"template", {{"metadata", j.value("template", json::object())}}}};
  }
  MetaCauses causes;
  auto kept = read_job_meta(doc, &causes, whole);
  if (!kept) return std::nullopt;
  return kept;
}

std::optional<std::string> patch_meta(const std::string& kept, const MapPatch& labels,
                                      const MapPatch& annotations, MetaCauses* causes) {
  KeptMeta m = kept_meta(kept);
  const size_t before = causes->size();
  apply(m.labels, labels, "metadata.labels", true, causes);
  apply(m.annotations, annotations, "metadata.annotations", false, causes);
  check_labels(m.labels, "metadata.labels", causes);
  check_annotations(m.annotations, "metadata.annotations", causes);
  if (causes->size() != before) return std::nullopt;
  return kept_text(m);
}

KeptMeta kept_meta(const std::string& text) {
  KeptMeta m;
  if (text.empty()) return m;
  const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return m;
  auto take = [](const json& from, const char* key, json& out) {
    if (const auto it = from.find(key); it != from.end() && it->is_object()) out = *it;
  };
  take(j, "labels", m.labels);
  take(j, "annotations", m.annotations);
  if (const auto t = j.find("template"); t != j.end() && t->is_object()) {
    take(*t, "labels", m.pod_labels);
    take(*t, "annotations", m.pod_annotations);
  }
  if (const auto k = j.find("kind"); k != j.end() && k->is_string()) {
    m.kind = k->get<std::string>();
    take(j, "spec", m.spec);
  }
  return m;
}

}  // namespace sluice::server::kube
