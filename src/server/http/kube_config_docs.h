#pragma once
// Kueue's configuration kinds written through the Kubernetes API (kube_kueue_write.cc,
// docs/kubernetes.md "Changing Kueue's configuration"): the configuration's text as its YAML
// documents, each Kueue object's document read as JSON, the body of a create, update or patch
// turned into the document that replaces it, and the resourceVersion each object is at. Pure
// (nlohmann, yaml-cpp and the loader's bounded YAML reader): the unit tests and
// fuzz_kube_config reach it without a server.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <yaml-cpp/yaml.h>
#include <nlohmann/json.hpp>

#include "server/http/kube_patch.h"

namespace sluice::server::kube {

// One YAML document of the configuration's text as written, comments and all.
struct ConfigDoc {
  std::string text;            // from its `---` line (if any) to the next document's
  int first_line = 1;          // of `text` in the whole text, 1-based
  std::string kind, ns, name;  // a Kueue object's (kueue.x-k8s.io/v1beta1); "" otherwise
  nlohmann::json object;       // that object as JSON; null for every other document
};
// The documents of a configuration's text, split at its `---` lines; documents that hold
// nothing (blank lines, a lone `---`) are dropped. join_config(split_config(t)) reads as t.
std::vector<ConfigDoc> split_config(const std::string& text);
std::string join_config(const std::vector<ConfigDoc>& docs);
// A document for `object` (a Kueue object as JSON, stored_form'ed), keeping `old`'s leading
// `---` and comment lines when it replaces one.
ConfigDoc object_doc(const nlohmann::json& object, const ConfigDoc* old = nullptr);

// The Kueue kinds whose objects the API writes (kube.h kinds(): clusterqueues, ...).
bool written_kind(const std::string& kind);
// "ClusterQueue//cq", "LocalQueue/default/user-queue".
std::string object_key(const std::string& kind, const std::string& ns, const std::string& name);

// A YAML node as JSON, as Kubernetes reads YAML: plain scalars that read as integers, floats,
// booleans or null are those; quoted ones strings. Throws std::runtime_error on a map key that
// is not a scalar.
nlohmann::json yaml_to_json(const YAML::Node& node);
// The one JSON or YAML object of a request's body (the configuration's input limits bound
// it); nullopt with *error otherwise.
std::optional<nlohmann::json> read_object_body(std::string_view body, std::string* error);

// What the configuration keeps of an object: apiVersion, kind, metadata's name, namespace,
// labels, annotations and managedFields (server-side apply's, kube_apply.h), and every other
// top-level field but status (spec; value and description of a WorkloadPriorityClass). The
// server's bookkeeping (uid, resourceVersion, generation, creationTimestamp) is not kept.
nlohmann::json stored_form(const nlohmann::json& object);

// The resourceVersion, generation and creation time of each Kueue object of the
// configuration: refresh() with the configuration's text after each change; an object whose
// stored form changed gets the next version. Versions begin at `first` (the server's start in
// microseconds, as the change journal's), so a version from an earlier process is older.
class ConfigVersions {
 public:
  struct Entry {
    nlohmann::json object;  // stored_form
    uint64_t rv = 0;
    int64_t generation = 1;
    int64_t created_ns = 0;
  };
  explicit ConfigVersions(uint64_t first) : next_(first) {}
  void refresh(const std::string& text, int64_t now_ns);
  const Entry* find(const std::string& key) const;
  const std::vector<ConfigDoc>& docs() const { return docs_; }
  const std::string& text() const { return text_; }

 private:
  std::string text_;
  bool read_ = false;
  uint64_t next_;
  std::vector<ConfigDoc> docs_;
  std::map<std::string, Entry> entries_;
};

// The object as the API shows it: its stored form and the entry's bookkeeping in metadata.
nlohmann::json served_form(const ConfigVersions::Entry& e, const std::string& uid,
                           const std::string& timestamp);

// A PATCH of a Kueue object: `object` with the patch applied. JSON merge patch; a strategic
// merge patch reads as one (a custom resource's lists are atomic; its $-directives are
// refused); a JSON patch (RFC 6902). Refusals: 415 for another Content-Type, 400 for a body
// that is not such a patch, 422 for a JSON patch whose operation fails.
std::optional<nlohmann::json> apply_patch(const nlohmann::json& object,
                                          std::string_view content_type, std::string_view body,
                                          PatchRefusal* why);

// The loader's errors ("source:LINE: field: message") as Invalid causes: those on a line of
// `doc` (the written one, at doc.first_line) name their field; the others name their object.
struct Cause {
  std::string field, message;
};
std::vector<Cause> invalid_causes(const std::string& errors, const std::vector<ConfigDoc>& docs,
                                  const ConfigDoc* doc);

}  // namespace sluice::server::kube
