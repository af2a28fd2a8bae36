#include "server/http/kube_config_docs.h"

#include <algorithm>
#include <regex>
#include <stdexcept>

#include "config/input_limits.h"
#include "config/yaml_documents.h"

namespace sluice::server::kube {

using nlohmann::json;

namespace config_docs {

constexpr const char* kApiVersion = "kueue.x-k8s.io/v1beta1";

bool marker_line(std::string_view line) {
  return line.rfind("---", 0) == 0 &&
         (line.size() == 3 || line[3] == ' ' || line[3] == '\t' || line[3] == '\r');
}

// Whether a document's text holds nothing but its marker, blank lines and comments.
bool blank(std::string_view text) {
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(at, end - at);
    at = end + 1;
    if (marker_line(line) && line.find_first_not_of("- \t\r", 0) == std::string_view::npos)
      continue;
    const size_t first = line.find_first_not_of(" \t\r");
    if (first != std::string_view::npos) return false;
  }
  return true;
}

// A string field of a JSON object, "" when missing or not a string.
std::string text_of(const json& j, const char* key) {
  if (!j.is_object()) return "";
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// Reads a document's text: a Kueue object of kueue.x-k8s.io/v1beta1 fills kind, ns, name.
void read_doc(ConfigDoc& d) {
  json o;
  try {
    const YAML::Node node = YAML::Load(d.text);
    if (!node.IsMap()) return;
    o = yaml_to_json(node);
  } catch (const std::exception&) {
    return;  // the configuration in force was read whole: not a Kueue object's document
  }
  if (text_of(o, "apiVersion") != kApiVersion || !written_kind(text_of(o, "kind"))) return;
  const json meta = o.value("metadata", json());
  if (text_of(meta, "name").empty()) return;
  d.kind = text_of(o, "kind");
  d.name = text_of(meta, "name");
  if (d.kind == "LocalQueue") {
    d.ns = text_of(meta, "namespace");
    if (d.ns.empty()) d.ns = "default";
  }
  d.object = std::move(o);
}

bool is_int(const std::string& s) {
  static const std::regex re("[-+]?(0|[1-9][0-9]{0,17})");
  return std::regex_match(s, re);
}

bool is_float(const std::string& s) {
  static const std::regex re(R"([-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?)");
  return std::regex_match(s, re);
}

json scalar(const YAML::Node& node) {
  const std::string& s = node.Scalar();
  if (node.Tag() == "!" || node.Tag() == "tag:yaml.org,2002:str") return s;
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return nullptr;
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  if (is_int(s)) return std::stoll(s);
  if (is_float(s)) return std::stod(s);
  return s;
}

}  // namespace config_docs

bool written_kind(const std::string& kind) {
  return kind == "ResourceFlavor" || kind == "ClusterQueue" || kind == "LocalQueue" ||
         kind == "WorkloadPriorityClass" || kind == "Cohort" || kind == "Topology";
}

std::string object_key(const std::string& kind, const std::string& ns, const std::string& name) {
  return kind + "/" + ns + "/" + name;
}

std::vector<ConfigDoc> split_config(const std::string& text) {
  std::vector<ConfigDoc> docs;
  ConfigDoc cur;
  int line_no = 1;
  size_t at = 0;
  auto flush = [&] {
    if (!config_docs::blank(cur.text)) {
      config_docs::read_doc(cur);
      docs.push_back(std::move(cur));
    }
    cur = ConfigDoc{};
  };
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    const bool last = end == std::string::npos;
    if (last) end = text.size();
    const std::string_view line(text.data() + at, end - at);
    if (config_docs::marker_line(line)) {
      flush();
      cur.first_line = line_no;
    }
    cur.text.append(line);
    cur.text += '\n';
    at = end + 1;
    ++line_no;
  }
  flush();
  return docs;
}

std::string join_config(const std::vector<ConfigDoc>& docs) {
  std::string out;
  for (size_t i = 0; i < docs.size(); ++i) {
    // A document after the first needs its marker.
    if (i > 0 && !config_docs::marker_line(docs[i].text.substr(0, docs[i].text.find('\n'))))
      out += "---\n";
    out += docs[i].text;
  }
  return out;
}

ConfigDoc object_doc(const json& object, const ConfigDoc* old) {
  ConfigDoc d;
  if (old) {  // its marker and the comment lines before its content (a source's name)
    size_t at = 0;
    while (at < old->text.size()) {
      const size_t end = old->text.find('\n', at);
      const std::string_view line(old->text.data() + at, end - at);
      if (!(at == 0 && config_docs::marker_line(line)) && line.rfind('#', 0) != 0) break;
      d.text.append(line);
      d.text += '\n';
      at = end + 1;
    }
  }
  if (d.text.empty() || !config_docs::marker_line(d.text.substr(0, d.text.find('\n'))))
    d.text.insert(0, "---\n");
  // JSON is YAML, and reads back as the same JSON (yaml_to_json): a quoted string stays one.
  d.text += object.dump() + "\n";
  d.object = object;
  // The caller checked kind, metadata.name and metadata.namespace (strings).
  d.kind = object.at("kind").get<std::string>();
  const json& m = object.at("metadata");
  d.name = m.at("name").get<std::string>();
  if (d.kind == "LocalQueue")
    d.ns = m.contains("namespace") ? m["namespace"].get<std::string>() : "default";
  return d;
}

json yaml_to_json(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map: {
      json out = json::object();
      for (auto it = node.begin(); it != node.end(); ++it) {
        if (!it->first.IsScalar()) throw std::runtime_error("a map key that is not a string");
        out[it->first.Scalar()] = yaml_to_json(it->second);
      }
      return out;
    }
    case YAML::NodeType::Sequence: {
      json out = json::array();
      for (const auto& item : node) out.push_back(yaml_to_json(item));
      return out;
    }
    case YAML::NodeType::Scalar:
      return config_docs::scalar(node);
    default:
      return nullptr;
  }
}

std::optional<json> read_object_body(std::string_view body, std::string* error) {
  if (json_depth(body, kMaxPatchDepth) > kMaxPatchDepth) {
    *error = "the body nests deeper than " + std::to_string(kMaxPatchDepth) + " levels";
    return std::nullopt;
  }
  json doc = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (doc.is_object()) return doc;
  const InputLimits limits = config_limits();
  const std::string text(body);
  if (auto v = check_text(text, limits)) {
    *error = v->message;
    return std::nullopt;
  }
  try {
    auto docs = config_detail::load_all_documents(text, max_parser_events(limits));
    InputBudget budget;
    for (const auto& d : docs)
      if (auto v = check_document(d, limits, budget)) {
        *error = (v->line ? "line " + std::to_string(v->line) + ": " : "") + v->message;
        return std::nullopt;
      }
    if (docs.size() != 1 || !docs[0].IsMap()) {
      *error = "the body is not one JSON or YAML object";
      return std::nullopt;
    }
    return yaml_to_json(docs[0]);
  } catch (const std::exception& e) {
    *error = std::string("the body is not JSON or YAML: ") + e.what();
    return std::nullopt;
  }
}

json stored_form(const json& object) {
  json out = json::object();
  for (const auto& [k, v] : object.items()) {
    if (k == "status") continue;
    if (k != "metadata") {
      out[k] = v;
      continue;
    }
    json m = json::object();
    if (v.is_object())
      for (const char* f : {"name", "namespace", "labels", "annotations", "managedFields"})
        if (v.contains(f) && !v[f].is_null()) m[f] = v[f];
    out[k] = std::move(m);
  }
  return out;
}

void ConfigVersions::refresh(const std::string& text, int64_t now_ns) {
  if (read_ && text == text_) return;
  read_ = true;
  text_ = text;
  docs_ = split_config(text);
  std::map<std::string, Entry> next;
  for (const auto& d : docs_) {
    if (d.kind.empty()) continue;
    const std::string key = object_key(d.kind, d.ns, d.name);
    json object = stored_form(d.object);
    auto old = entries_.find(key);
    Entry e;
    if (old == entries_.end()) {
      e = Entry{std::move(object), next_++, 1, now_ns};
    } else if (old->second.object != object) {
      const bool spec = old->second.object.value("spec", json()) != object.value("spec", json());
      e = Entry{std::move(object), next_++, old->second.generation + (spec ? 1 : 0),
                old->second.created_ns};
    } else {
      e = std::move(old->second);
    }
    next[key] = std::move(e);
  }
  entries_ = std::move(next);
}

const ConfigVersions::Entry* ConfigVersions::find(const std::string& key) const {
  auto it = entries_.find(key);
  return it == entries_.end() ? nullptr : &it->second;
}

json served_form(const ConfigVersions::Entry& e, const std::string& uid,
                 const std::string& timestamp) {
  json o = e.object;
  json& m = o["metadata"];
  m["uid"] = uid;
  m["resourceVersion"] = std::to_string(e.rv);
  m["generation"] = e.generation;
  m["creationTimestamp"] = timestamp;
  return o;
}

namespace config_docs {

// The first "$directive" key under `j`, "" none.
std::string directive(const json& j) {
  if (j.is_array())
    for (const auto& v : j)
      if (auto d = directive(v); !d.empty()) return d;
  if (!j.is_object()) return "";
  for (const auto& [k, v] : j.items()) {
    if (!k.empty() && k[0] == '$') return k;
    if (auto d = directive(v); !d.empty()) return d;
  }
  return "";
}

}  // namespace config_docs

std::optional<json> apply_patch(const json& object, std::string_view content_type,
                                std::string_view body, PatchRefusal* why) {
  const std::string type = media_type(content_type);
  const bool json_patch = type == "application/json-patch+json";
  if (!json_patch && type != "application/merge-patch+json" &&
      type != "application/strategic-merge-patch+json") {
    *why = {415,
            "sluice takes a JSON merge patch, a strategic merge patch, a JSON patch or "
            "server-side apply's application/apply-patch+yaml of a Kueue object, not " +
                (type.empty() ? std::string("a body without a Content-Type") : type),
            {}};
    return std::nullopt;
  }
  if (json_depth(body, kMaxPatchDepth) > kMaxPatchDepth) {
    *why = {400, "the patch nests deeper than " + std::to_string(kMaxPatchDepth) + " levels", {}};
    return std::nullopt;
  }
  const json patch = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (json_patch) {
    if (!patch.is_array()) {
      *why = {400, "a JSON patch is an array of operations", {}};
      return std::nullopt;
    }
    try {
      return object.patch(patch);
    } catch (const json::exception& e) {
      *why = {422, std::string("the JSON patch does not apply: ") + e.what(), {}};
      return std::nullopt;
    }
  }
  if (!patch.is_object()) {
    *why = {400, "the patch is not a JSON object", {}};
    return std::nullopt;
  }
  if (auto d = config_docs::directive(patch); !d.empty()) {
    *why = {422,
            "sluice reads a strategic merge patch of a Kueue object as a JSON merge patch (its "
            "lists are replaced whole, as a custom resource's); the directive " +
                d + " is not served",
            {}};
    return std::nullopt;
  }
  json out = object;
  out.merge_patch(patch);
  return out;
}

std::vector<Cause> invalid_causes(const std::string& errors, const std::vector<ConfigDoc>& docs,
                                  const ConfigDoc* doc) {
  std::vector<Cause> out;
  static const std::regex re(R"(^[^\n]*?:([0-9]+): ([^ ]+): (.*)$)");
  size_t at = 0;
  while (at <= errors.size() && out.size() < 100) {
    size_t end = errors.find('\n', at);
    if (end == std::string::npos) end = errors.size();
    const std::string line = errors.substr(at, end - at);
    at = end + 1;
    if (line.empty()) continue;
    std::smatch m;
    if (!std::regex_match(line, m, re)) {
      out.push_back({"", line});
      continue;
    }
    const int n = std::stoi(m[1].str().substr(0, 9));
    const ConfigDoc* in = nullptr;  // the document that line is in
    for (const auto& d : docs)
      if (d.first_line <= n) in = &d;
    if (in && doc && in->first_line == doc->first_line) {
      out.push_back({m[2].str(), m[3].str()});
    } else if (in && !in->kind.empty()) {
      out.push_back({"", in->kind + " \"" + in->name + "\": " + m[2].str() + ": " + m[3].str()});
    } else {
      out.push_back(
          {"", "line " + m[1].str() + " of the configuration: " + m[2].str() + ": " + m[3].str()});
    }
  }
  return out;
}

}  // namespace sluice::server::kube
