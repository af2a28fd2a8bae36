#include "server/http/kube_bodies.h"

#include <cctype>

#include <vector>

#include <nlohmann/json.hpp>

#include "server/http/kube_protobuf.h"

namespace sluice::server::kube {

namespace {

using nlohmann::json;

// The fields sluice reads of each kind, by their protobuf numbers (k8s.io/api's generated.proto).
using Wire = ProtoField::Type;
const ProtoSchema kObjectMeta = {{1, "name"}, {3, "namespace"}};
const ProtoSchema kPreconditions = {{1, "uid"}, {2, "resourceVersion"}};
const ProtoSchema kDeleteOptions = {{1, "gracePeriodSeconds", Wire::kInt64},
                                    {2, "preconditions", Wire::kMessage, &kPreconditions},
                                    {3, "orphanDependents", Wire::kBool},
                                    {4, "propagationPolicy"},
                                    {5, "dryRun", Wire::kStrings}};
const ProtoSchema kEviction = {{1, "metadata", Wire::kMessage, &kObjectMeta},
                               {2, "deleteOptions", Wire::kMessage, &kDeleteOptions}};
const ProtoSchema kResourceAttributes = {{1, "namespace"}, {2, "verb"},     {3, "group"},
                                         {4, "version"},   {5, "resource"}, {6, "subresource"},
                                         {7, "name"}};
const ProtoSchema kNonResourceAttributes = {{1, "path"}, {2, "verb"}};
const ProtoSchema kAccessSpec = {
    {1, "resourceAttributes", Wire::kMessage, &kResourceAttributes},
    {2, "nonResourceAttributes", Wire::kMessage, &kNonResourceAttributes}};
const ProtoSchema kAccessReview = {{2, "spec", Wire::kMessage, &kAccessSpec}};
const ProtoSchema kRulesSpec = {{1, "namespace"}};
const ProtoSchema kRulesReview = {{2, "spec", Wire::kMessage, &kRulesSpec}};

bool is_protobuf(std::string_view content_type) {
  std::string t(content_type.substr(0, content_type.find(';')));
  while (!t.empty() && t.back() == ' ') t.pop_back();
  for (auto& ch : t) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return t == kProtobufType;
}

// The body as a JSON object, from JSON or protobuf; nullopt (with *why) when it is none, or
// nests too deep.
std::optional<json> object_of(std::string_view content_type, std::string_view body,
                              const char* kind, const ProtoSchema& schema, BodyRefusal* why) {
  if (is_protobuf(content_type)) {
    std::string error;
    auto doc = protobuf_object(body, schema, &error);
    if (!doc) *why = {400, std::string("expected one ") + kind + " in protobuf: " + error, {}};
    return doc;
  }
  if (json_depth(body, kMaxBodyDepth) > kMaxBodyDepth) {
    *why = {400, "the body nests deeper than " + std::to_string(kMaxBodyDepth) + " levels", {}};
    return std::nullopt;
  }
  json doc = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object()) {
    *why = {400, std::string("expected one ") + kind + " as a JSON object", {}};
    return std::nullopt;
  }
  return doc;
}

// `o[key]` when it is a string, "" when absent or null; false (with *why) when another type.
bool string_at(const json& o, const char* key, const std::string& at, std::string* out,
               BodyRefusal* why) {
  const auto it = o.find(key);
  if (it == o.end() || it->is_null()) return true;
  if (!it->is_string()) {
    *why = {400, at + key + ": expected a string", {}};
    return false;
  }
  *out = it->get<std::string>();
  return true;
}

// `o[key]` when it is an object (or absent, null: an empty one); nullptr (with *why) otherwise.
const json* object_at(const json& o, const char* key, const std::string& at, BodyRefusal* why) {
  static const json empty = json::object();
  const auto it = o.find(key);
  if (it == o.end() || it->is_null()) return &empty;
  if (!it->is_object()) {
    *why = {400, at + key + ": expected an object", {}};
    return nullptr;
  }
  return &*it;
}

// apiVersion and kind, when given, must be the expected ones.
bool type_is(const json& doc, const std::vector<std::string>& versions, const std::string& kind,
             BodyRefusal* why) {
  std::string v, k;
  if (!string_at(doc, "apiVersion", "", &v, why) || !string_at(doc, "kind", "", &k, why))
    return false;
  bool version_ok = v.empty();
  for (const auto& x : versions) version_ok |= v == x;
  if (!version_ok || (!k.empty() && k != kind)) {
    *why = {400,
            "expected apiVersion " + versions.front() + ", kind " + kind + ", not " + v + " " + k,
            {}};
    return false;
  }
  return true;
}

}  // namespace

std::optional<Eviction> read_eviction(std::string_view content_type, std::string_view body,
                                      const std::string& name, const std::string& ns,
                                      BodyRefusal* why) {
  const auto doc = object_of(content_type, body, "policy/v1 Eviction", kEviction, why);
  if (!doc || !type_is(*doc, {"policy/v1", "policy/v1beta1"}, "Eviction", why)) return std::nullopt;
  const json* meta = object_at(*doc, "metadata", "", why);
  if (!meta) return std::nullopt;
  std::string meta_name, meta_ns;
  if (!string_at(*meta, "name", "metadata.", &meta_name, why) ||
      !string_at(*meta, "namespace", "metadata.", &meta_ns, why))
    return std::nullopt;
  if (meta_name != name) {
    *why = {400, "name in URL does not match name in Eviction object", {}};
    return std::nullopt;
  }
  if (!meta_ns.empty() && meta_ns != ns) {
    *why = {400,
            "the namespace of the provided object does not match the namespace sent on the "
            "request",
            {}};
    return std::nullopt;
  }
  Eviction out;
  const json* opts = object_at(*doc, "deleteOptions", "", why);
  if (!opts) return std::nullopt;
  if (const auto g = opts->find("gracePeriodSeconds"); g != opts->end() && !g->is_null()) {
    if (!g->is_number_integer()) {
      *why = {400, "deleteOptions.gracePeriodSeconds: expected an integer", {}};
      return std::nullopt;
    }
    const auto v = g->get<int64_t>();
    if (v < 0) {
      *why = {422,
              "deleteOptions.gracePeriodSeconds: must be greater than or equal to 0",
              {{"deleteOptions.gracePeriodSeconds", "must be greater than or equal to 0"}}};
      return std::nullopt;
    }
    out.grace_seconds = v;
  }
  const json* pre = object_at(*opts, "preconditions", "deleteOptions.", why);
  if (!pre || !string_at(*pre, "uid", "deleteOptions.preconditions.", &out.uid, why))
    return std::nullopt;
  std::string ignored;
  if (!string_at(*pre, "resourceVersion", "deleteOptions.preconditions.", &ignored, why) ||
      !string_at(*opts, "propagationPolicy", "deleteOptions.", &ignored, why))
    return std::nullopt;
  if (const auto d = opts->find("dryRun"); d != opts->end() && !d->is_null()) {
    if (!d->is_array()) {
      *why = {400, "deleteOptions.dryRun: expected a list", {}};
      return std::nullopt;
    }
    for (const auto& x : *d) {
      if (x != "All") {
        *why = {422,
                "deleteOptions.dryRun: supported values: \"All\"",
                {{"deleteOptions.dryRun", "supported values: \"All\""}}};
        return std::nullopt;
      }
      out.dry_run = true;
    }
  }
  return out;
}

std::optional<AccessQuestion> read_access_review(std::string_view content_type,
                                                 std::string_view body, BodyRefusal* why) {
  const auto doc = object_of(content_type, body, "SelfSubjectAccessReview", kAccessReview, why);
  if (!doc || !type_is(*doc, {"authorization.k8s.io/v1"}, "SelfSubjectAccessReview", why))
    return std::nullopt;
  const json* spec = object_at(*doc, "spec", "", why);
  if (!spec) return std::nullopt;
  const json* res = object_at(*spec, "resourceAttributes", "spec.", why);
  const json* non = res ? object_at(*spec, "nonResourceAttributes", "spec.", why) : nullptr;
  if (!res || !non) return std::nullopt;
  const bool has_res =
      spec->contains("resourceAttributes") && !(*spec)["resourceAttributes"].is_null();
  const bool has_non =
      spec->contains("nonResourceAttributes") && !(*spec)["nonResourceAttributes"].is_null();
  if (has_res == has_non) {
    const std::string m =
        "exactly one of nonResourceAttributes or resourceAttributes must be "
        "specified";
    *why = {422, "spec.resourceAttributes: Invalid value: " + m, {{"spec.resourceAttributes", m}}};
    return std::nullopt;
  }
  AccessQuestion q;
  q.non_resource = has_non;
  if (has_non) {
    if (!string_at(*non, "path", "spec.nonResourceAttributes.", &q.path, why) ||
        !string_at(*non, "verb", "spec.nonResourceAttributes.", &q.verb, why))
      return std::nullopt;
    return q;
  }
  const std::string at = "spec.resourceAttributes.";
  for (auto [key, out] :
       {std::pair{"namespace", &q.ns}, std::pair{"verb", &q.verb}, std::pair{"group", &q.group},
        std::pair{"version", &q.version}, std::pair{"resource", &q.resource},
        std::pair{"subresource", &q.subresource}, std::pair{"name", &q.name}})
    if (!string_at(*res, key, at, out, why)) return std::nullopt;
  return q;
}

std::optional<std::string> read_rules_review(std::string_view content_type, std::string_view body,
                                             BodyRefusal* why) {
  const auto doc = object_of(content_type, body, "SelfSubjectRulesReview", kRulesReview, why);
  if (!doc || !type_is(*doc, {"authorization.k8s.io/v1"}, "SelfSubjectRulesReview", why))
    return std::nullopt;
  const json* spec = object_at(*doc, "spec", "", why);
  std::string ns;
  if (!spec || !string_at(*spec, "namespace", "spec.", &ns, why)) return std::nullopt;
  return ns;
}

}  // namespace sluice::server::kube
