// Server-side printing (meta.k8s.io/v1 Table): kubectl get asks for a Table and prints its
// columns as they come, so the columns here are the ones kubectl (built-in kinds) and Kueue's
// CRDs (their additionalPrinterColumns) print. Also: Lists, label selectors, ages.
#include <algorithm>
#include <string_view>

#include "core/model/deadline.h"
#include "server/http/kube.h"
#include "server/http/util.h"

namespace sluice::server::kube {

bool wants_table(const net::Request& req) {
  const std::string accept = req.get_header_value("Accept");
  return accept.find("as=Table") != std::string::npos &&
         accept.find("g=meta.k8s.io") != std::string::npos;
}

std::string include_object(const net::Request& req) {
  const std::string v = req.get_param_value("includeObject");
  return v == "Object" || v == "None" ? v : "Metadata";
}

json table(const std::vector<Column>& columns, json rows, const std::string& include) {
  (void)include;
  json defs = json::array();
  for (const auto& c : columns)
    defs.push_back({{"name", c.name},
                    {"type", c.type},
                    {"format", c.format},
                    {"description", c.description},
                    {"priority", c.priority}});
  return {{"kind", "Table"},
          {"apiVersion", "meta.k8s.io/v1"},
          {"metadata", {{"resourceVersion", ""}}},
          {"columnDefinitions", defs},
          {"rows", std::move(rows)}};
}

json table_row(json cells, const json& object, const std::string& include) {
  json row = {{"cells", std::move(cells)}};
  if (include == "Object") {
    row["object"] = object;
  } else if (include != "None") {
    row["object"] = {{"kind", "PartialObjectMetadata"},
                     {"apiVersion", "meta.k8s.io/v1"},
                     {"metadata", object.value("metadata", json::object())}};
  }
  return row;
}

// k8s.io/apimachinery/pkg/util/duration.HumanDuration, step by step.
std::string human_duration(TimeNs ns) {
  const int64_t seconds = ns / kNsPerSec;
  const auto n = [](int64_t v) { return std::to_string(v); };
  if (seconds < -1) return "<invalid>";
  if (seconds < 0) return "0s";
  if (seconds < 60 * 2) return n(seconds) + "s";
  const int64_t minutes = seconds / 60;
  if (minutes < 10) return n(minutes) + "m" + (seconds % 60 ? n(seconds % 60) + "s" : "");
  if (minutes < 60 * 3) return n(minutes) + "m";
  const int64_t hours = minutes / 60;
  if (hours < 8) return n(hours) + "h" + (minutes % 60 ? n(minutes % 60) + "m" : "");
  if (hours < 48) return n(hours) + "h";
  if (hours < 24 * 8) return n(hours / 24) + "d" + (hours % 24 ? n(hours % 24) + "h" : "");
  if (hours < 24 * 365 * 2) return n(hours / 24) + "d";
  if (hours < 24 * 365 * 8) {
    const int64_t days = hours / 24 % 365;
    return n(hours / 24 / 365) + "y" + (days ? n(days) + "d" : "");
  }
  return n(hours / 24 / 365) + "y";
}

std::string timestamp(TimeNs unix_ns) {
  // Kubernetes' metav1.Time: whole seconds.
  return unix_ns > 0 ? format_rfc3339(unix_ns / kNsPerSec * kNsPerSec) : "";
}

json time_field(TimeNs unix_ns) {
  if (unix_ns <= 0) return nullptr;
  return timestamp(unix_ns);
}

bool Selector::matches(const json& labels) const {
  const auto value = [&](const std::string& key) -> const json* {
    return labels.is_object() && labels.contains(key) ? &labels[key] : nullptr;
  };
  for (const auto& [k, v] : equal) {
    const json* got = value(k);
    if (!got || *got != v) return false;
  }
  for (const auto& [k, v] : not_equal) {
    const json* got = value(k);
    if (got && *got == v) return false;
  }
  return true;
}

// "a=b,c==d,e!=f": sluice reads equality only; `in`, `notin` and existence terms are refused
// rather than read wrongly.
std::optional<Selector> parse_selector(const std::string& text, std::string* error) {
  Selector s;
  std::string_view rest = text;
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    std::string_view term = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    while (!term.empty() && term.front() == ' ') term.remove_prefix(1);
    while (!term.empty() && term.back() == ' ') term.remove_suffix(1);
    const size_t eq = term.find('=');
    if (eq == std::string_view::npos || eq == 0 || term.find(' ') != std::string_view::npos) {
      *error = "labelSelector: sluice reads equality terms only (key=value, key!=value), not \"" +
               std::string(term) + "\"";
      return std::nullopt;
    }
    const bool negated = term[eq - 1] == '!';
    const std::string key(term.substr(0, negated ? eq - 1 : eq));
    std::string_view value = term.substr(eq + 1);
    if (!negated && value.starts_with("=")) value.remove_prefix(1);
    (negated ? s.not_equal : s.equal).emplace_back(key, std::string(value));
    if (s.equal.size() + s.not_equal.size() > 32) {
      *error = "labelSelector: at most 32 terms";
      return std::nullopt;
    }
  }
  return s;
}

json list_object(const std::string& api_version, const std::string& kind, json items,
                 const std::string& next) {
  json meta = {{"resourceVersion", ""}};
  if (!next.empty()) meta["continue"] = next;
  return {
      {"kind", kind}, {"apiVersion", api_version}, {"metadata", meta}, {"items", std::move(items)}};
}

}  // namespace sluice::server::kube

namespace sluice::server::kube {

std::string read_query(Call& c) {
  const auto& req = c.req;
  if (req.has_param("limit")) {
    auto l = parse_id(req.get_param_value("limit"));
    if (!l) return "limit: expected a non-negative integer";
    if (*l > 0) c.limit = static_cast<size_t>(std::min<JobId>(*l, kMaxPage));
  }
  if (req.has_param("continue") && !req.get_param_value("continue").empty()) {
    auto n = parse_id(req.get_param_value("continue"));
    if (!n || *n == 0) return "continue: expected the value a previous page gave";
    c.before = *n;
  }
  std::string why;
  if (auto s = parse_selector(req.get_param_value("labelSelector"), &why))
    c.labels = *s;
  else
    return why;
  if (auto s = parse_selector(req.get_param_value("fieldSelector"), &why))
    c.fields = *s;
  else
    return "fieldSelector" + why.substr(why.find(':'));
  const std::string resource = c.kind ? c.kind->resource : "";
  for (const auto* terms : {&c.fields.equal, &c.fields.not_equal})
    for (const auto& [k, v] : *terms)
      if (!field_supported(resource, k))  // the API server's words
        return "field label not supported: " + k;
  c.table = wants_table(req);
  c.include = include_object(req);
  return {};
}

bool Call::shows(const json& object) const {
  const json& m = object["metadata"];
  const std::string ns = m.value("namespace", "");
  if (kind && kind->namespaced && !shows(ns)) return false;
  if (!labels.matches(m.value("labels", json::object()))) return false;
  return fields_match(fields, object);
}

std::string field_value(const json& object, const std::string& field) {
  const json* at = &object;
  const std::string path = field == "source" ? std::string("source.component") : field;
  std::string_view rest = path;
  while (!rest.empty()) {
    const size_t dot = rest.find('.');
    const std::string key(rest.substr(0, dot));
    rest = dot == std::string_view::npos ? std::string_view() : rest.substr(dot + 1);
    if (!at->is_object()) return "";
    const auto it = at->find(key);
    if (it == at->end()) return "";
    at = &*it;
  }
  if (at->is_string()) return at->get<std::string>();
  if (at->is_boolean()) return at->get<bool>() ? "true" : "false";
  if (at->is_number()) return at->dump();
  return "";
}

bool field_supported(const std::string& resource, const std::string& field) {
  if (field == "metadata.name" || field == "metadata.namespace") return true;
  if (resource == "pods")
    return field == "spec.nodeName" || field == "status.phase" || field == "spec.restartPolicy";
  if (resource == "events")
    return field == "involvedObject.kind" || field == "involvedObject.name" ||
           field == "involvedObject.namespace" || field == "involvedObject.uid" ||
           field == "involvedObject.apiVersion" || field == "involvedObject.fieldPath" ||
           field == "involvedObject.resourceVersion" || field == "reason" || field == "type" ||
           field == "source" || field == "reportingComponent";
  return false;
}

bool fields_match(const Selector& fields, const json& object) {
  for (const auto& [k, v] : fields.equal)
    if (field_value(object, k) != v) return false;
  for (const auto& [k, v] : fields.not_equal)
    if (field_value(object, k) == v) return false;
  return true;
}

json Listing::done(const std::string& list_kind, const std::string& next, uint64_t rv) {
  json t = c_.table ? table(columns_, std::move(items_), c_.include)
                    : list_object(c_.kind->api_version(), list_kind, std::move(items_), next);
  if (c_.table && !next.empty()) t["metadata"]["continue"] = next;
  if (rv) t["metadata"]["resourceVersion"] = std::to_string(rv);
  return t;
}

json single(const Call& c, const std::vector<Column>& columns, json object, json cells) {
  if (!c.table) return object;
  return table(columns, json::array({table_row(std::move(cells), object, c.include)}), c.include);
}

// "jobs.batch", "pods", "workloads.kueue.x-k8s.io": how Kubernetes names a resource in errors.
std::string resource_text(const Call& c) {
  const std::string& g = c.kind ? c.kind->group : c.path.group;
  return c.path.resource + (g.empty() ? "" : "." + g);
}

json not_found(const Call& c, const std::string& name) {
  json s = status_object(404, resource_text(c) + " \"" + name + "\" not found");
  s["details"] = {{"name", name}, {"group", c.path.group}, {"kind", c.path.resource}};
  return s;
}

json patch_refusal(const Call& c, const PatchRefusal& why) {
  json st = status_object(why.code, why.message, why.code == 422 ? "Invalid" : "");
  if (why.causes.empty()) return st;
  json causes = json::array();
  for (const auto& [field, what] : why.causes)
    causes.push_back({{"reason", "FieldValueForbidden"}, {"message", what}, {"field", field}});
  st["details"] = {{"name", c.path.name},
                   {"group", c.path.group},
                   {"kind", c.path.resource},
                   {"causes", causes}};
  return st;
}

json forbidden(const Call& c, const std::string& verb, const std::string& ns) {
  std::string m = resource_text(c) + " is forbidden: User \"" + c.caller.name + "\" cannot " +
                  verb + " resource \"" + c.path.resource + "\" in API group \"" + c.path.group +
                  "\"";
  m += ns.empty() ? " at the cluster scope" : " in the namespace \"" + ns + "\"";
  json s = status_object(403, m);
  s["details"] = {{"group", c.path.group}, {"kind", c.path.resource}};
  return s;
}

}  // namespace sluice::server::kube
