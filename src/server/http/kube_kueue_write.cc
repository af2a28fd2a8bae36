// Kueue's configuration kinds written through the Kubernetes API (docs/kubernetes.md,
// "Changing Kueue's configuration"): create, update, patch and delete of ResourceFlavors,
// ClusterQueues, LocalQueues and WorkloadPriorityClasses change the configuration's text one
// document at a time and apply it whole through the path of `sluice config apply`
// (Server::apply_config): validated, refused whole when invalid (422 with the loader's errors as
// causes), written to the store before the answer. An admin token's only; dryRun=All validates
// and changes nothing. The objects read back as written (kube_config_docs.h).
#include "server/http/kube.h"
#include "server/http/kube_apply.h"
#include "server/http/kube_config_docs.h"
#include "server/http/reply.h"
#include "server/server.h"

namespace sluice::server {

using nlohmann::json;

namespace kueue_write {

// The configuration this writes is one source of that name; its header line is not repeated.
constexpr const char* kSource = "kubernetes API";

std::string without_header(std::string text) {
  const std::string head = std::string("# source: ") + kSource + "\n";
  if (text.rfind(head, 0) == 0) text.erase(0, head.size());
  return text;
}

std::string uid_of(const std::string& kind, const std::string& ns, const std::string& name) {
  return "sluice-" + kind + "-" + ns + "-" + name;
}

json details(const kube::Call& c, const std::string& name) {
  return {{"name", name}, {"group", c.kind->group}, {"kind", c.path.resource}};
}

// 422 Invalid: `Kind.group "name" is invalid: field: message, ...`, one cause each.
json invalid(const kube::Call& c, const std::string& name, const std::vector<kube::Cause>& why) {
  std::string text;
  json causes = json::array();
  for (const auto& w : why) {
    const std::string one = w.field.empty() ? w.message : w.field + ": " + w.message;
    text += (text.empty() ? "" : ", ") + one;
    causes.push_back({{"reason", "FieldValueInvalid"}, {"message", w.message}, {"field", w.field}});
  }
  if (why.size() > 1) text = "[" + text + "]";
  json s = kube::status_object(
      422, c.kind->kind + "." + c.kind->group + " \"" + name + "\" is invalid: " + text, "Invalid");
  s["details"] = details(c, name);
  s["details"]["kind"] = c.kind->kind;
  s["details"]["causes"] = causes;
  return s;
}

// The body of a create or an update checked against the request: its apiVersion and kind, its
// name (`name`: the path's, "" for a create) and namespace; "" or why not (400).
std::string check_object(const kube::Call& c, json& o, const std::string& name) {
  const std::string api = c.kind->api_version();
  auto text = [&](const char* key) {
    return o.contains(key) && o[key].is_string() ? o[key].get<std::string>() : std::string("?");
  };
  if (text("apiVersion") != api || text("kind") != c.kind->kind)
    return "the object is a " + text("apiVersion") + " " + text("kind") + ", not a " + api + " " +
           c.kind->kind + " as the path says";
  if (!o.contains("metadata") || !o["metadata"].is_object()) o["metadata"] = json::object();
  json& m = o["metadata"];
  if (!m.contains("name") || !m["name"].is_string() || m["name"] == "")
    return "metadata.name: Required value: name is required (sluice does not serve "
           "generateName for Kueue's objects)";
  if (!name.empty() && m["name"] != name)
    return "the name of the object (" + m["name"].get<std::string>() +
           ") does not match the name on the URL (" + name + ")";
  if (!c.kind->namespaced) {
    m.erase("namespace");  // as the API server clears a cluster-scoped object's namespace
  } else if (!m.contains("namespace") || m["namespace"] == "" || m["namespace"].is_null()) {
    m["namespace"] = c.path.ns;
  } else if (m["namespace"] != c.path.ns) {
    return "the namespace of the provided object does not match the namespace sent on the "
           "request";
  }
  return "";
}

// Server-side apply's PATCH (kube_apply.h).
bool is_apply(const net::Request& req) {
  return req.method == "PATCH" &&
         kube::media_type(req.header("Content-Type")) == "application/apply-patch+yaml";
}

// 409 Conflict as the API server words an apply's: one FieldManagerConflict cause per field.
json apply_conflicts(const kube::Call& c, const std::string& name,
                     const std::vector<kube::ApplyConflict>& conflicts) {
  std::string text = "Apply failed with " + std::to_string(conflicts.size()) + " conflict" +
                     (conflicts.size() == 1 ? "" : "s") + ":";
  json causes = json::array();
  for (const auto& x : conflicts) {
    const std::string with = "conflict with \"" + x.manager + "\" using " + c.kind->api_version();
    text += " " + with + ": " + x.field;
    causes.push_back({{"reason", "FieldManagerConflict"}, {"message", with}, {"field", x.field}});
  }
  json s = kube::status_object(409, text, "Conflict");
  s["details"] = details(c, name);
  s["details"]["causes"] = causes;
  return s;
}

}  // namespace kueue_write

std::string kube::conflict_text(const kube::Call& c, const std::string& name) {
  return "Operation cannot be fulfilled on " + kube::resource_text(c) + " \"" + name +
         "\": the object has been modified; please apply your changes to the latest version and "
         "try again";
}

// Under the state lock: the versions of the configuration in force.
std::shared_ptr<const kube::ConfigVersions> Server::kube_config_versions() {
  auto& v = kube_config_versions_;
  if (v && v->text() == config_text_) return v;
  auto next = v ? std::make_shared<kube::ConfigVersions>(*v)
                : std::make_shared<kube::ConfigVersions>(static_cast<uint64_t>(now_ns() / 1000));
  next->refresh(config_text_, now_ns());
  v = std::move(next);
  return v;
}

// An object built from the configuration (kube_kueue.cc) as its document says it: its fields as
// written, its metadata's version; status stays the built one's.
void Server::kube_config_overlay(const kube::ConfigVersions& v, json& built) const {
  const json& m = built["metadata"];
  const std::string kind = built.value("kind", "");
  const std::string ns = m.value("namespace", ""), name = m.value("name", "");
  const auto* e = v.find(kube::object_key(kind, ns, name));
  if (!e) return;
  json o =
      kube::served_form(*e, kueue_write::uid_of(kind, ns, name), kube::timestamp(e->created_ns));
  if (built.contains("status")) o["status"] = built["status"];
  built = std::move(o);
}

// POST, PUT, PATCH, DELETE of a Kueue configuration object.
void Server::kube_config_write(const kube::Call& c, net::Response& res) {
  const std::string& m = c.req.method;
  const std::string verb = m == "POST"    ? "create"
                           : m == "PUT"   ? "update"
                           : m == "PATCH" ? "patch"
                                          : "delete";
  if (!c.path.sub.empty() || (m == "POST") != c.path.name.empty() ||
      (c.kind->namespaced && c.path.ns.empty()))
    return kube::fail_status(res, 405,
                             "sluice does not serve " + m + " on " + kube::resource_text(c) +
                                 (c.path.sub.empty() ? "" : "/" + c.path.sub) +
                                 " here (docs/kubernetes.md)");
  if (!c.caller.admin) return reply(res, 403, kube::forbidden(c, verb, c.path.ns));
  const std::string dry = c.req.get_param_value("dryRun");
  if (!dry.empty() && dry != "All")
    return kube::fail_status(
        res, 400, "dryRun: Unsupported value: \"" + dry + "\": supported values: \"All\"");
  if (dry.empty() && !may_write(res)) return kube::to_status(res);
  std::optional<json> body;
  if (kueue_write::is_apply(c.req) && c.req.get_param_value("fieldManager").empty())
    return reply(
        res, 422,
        kueue_write::invalid(c, c.path.name,
                             {{"fieldManager", "Required value: is required for apply patch"}}));
  if (m == "POST" || m == "PUT" || kueue_write::is_apply(c.req)) {
    std::string error;
    body = kube::read_object_body(c.req.body, &error);
    if (!body) return kube::fail_status(res, 400, error);
    if (auto why = kueue_write::check_object(c, *body, c.path.name); !why.empty())
      return kube::fail_status(res, 400, why);
  }
  kube_config_change(c, std::move(body), !dry.empty(), res);
}

// The change itself, one at a time (kube_config_mu_): the document replaced, added or removed,
// then the whole configuration applied (or, for a dry run, loaded and validated only).
void Server::kube_config_change(const kube::Call& c, std::optional<json> body, bool dry_run,
                                net::Response& res) {
  std::lock_guard one(kube_config_mu_);
  std::shared_ptr<const kube::ConfigVersions> v;
  {
    std::lock_guard lk(state_->mu());
    v = kube_config_versions();
  }
  const std::string& m = c.req.method;
  const std::string ns = c.kind->namespaced ? c.path.ns : "";
  const std::string name = body ? (*body)["metadata"]["name"].get<std::string>() : c.path.name;
  const std::string key = kube::object_key(c.kind->kind, ns, name);
  const auto* entry = v->find(key);
  if (m == "POST" && entry)
    return reply(
        res, 409,
        kube::status_object(409, kube::resource_text(c) + " \"" + name + "\" already exists",
                            "AlreadyExists"));
  const bool apply = kueue_write::is_apply(c.req);
  if (m != "POST" && !entry && !apply) return reply(res, 404, kube::not_found(c, name));
  const std::string rv = entry ? std::to_string(entry->rv) : "";
  if (apply) {  // create or update, as the field managers say
    auto r = kube::server_side_apply(
        entry ? entry->object : json(), *body, c.req.get_param_value("fieldManager"),
        c.req.get_param_value("force") == "true", kube::timestamp(now_ns()));
    if (!r.conflicts.empty())
      return reply(res, 409, kueue_write::apply_conflicts(c, name, r.conflicts));
    body = std::move(r.object);
  } else if (m == "PATCH") {
    kube::PatchRefusal why;
    const json current = kube::served_form(*entry, kueue_write::uid_of(c.kind->kind, ns, name), "");
    body = kube::apply_patch(current, c.req.header("Content-Type"), c.req.body, &why);
    if (!body) return reply(res, why.code, kube::patch_refusal(c, why));
    if (auto bad = kueue_write::check_object(c, *body, name); !bad.empty())
      return kube::fail_status(res, 422, bad, "Invalid");
  }
  if (body && (m == "PUT" || m == "PATCH")) {
    const json& given = (*body)["metadata"]["resourceVersion"];
    if (given.is_string() && !given.get<std::string>().empty() && given != rv)
      return kube::fail_status(res, 409, kube::conflict_text(c, name), "Conflict");
  }
  if (entry && body && kube::stored_form(*body) == entry->object && !dry_run) {
    // Nothing changes (an apply or a patch of the same values): the object as it is.
    return reply(res, 200,
                 kube::served_form(*entry, kueue_write::uid_of(c.kind->kind, ns, name),
                                   kube::timestamp(entry->created_ns)));
  }
  std::vector<kube::ConfigDoc> docs = v->docs();
  auto at = std::find_if(docs.begin(), docs.end(), [&](const kube::ConfigDoc& d) {
    return !d.kind.empty() && kube::object_key(d.kind, d.ns, d.name) == key;
  });
  if (m == "DELETE") {
    if (at == docs.end()) return reply(res, 404, kube::not_found(c, name));
    docs.erase(at);
  } else {
    kube::ConfigDoc d =
        kube::object_doc(kube::stored_form(*body), at == docs.end() ? nullptr : &*at);
    if (at == docs.end())
      docs.push_back(std::move(d));
    else
      *at = std::move(d);
  }
  const std::string text = kueue_write::without_header(kube::join_config(docs));
  kube_config_commit(c, name, key, text, dry_run, /*created=*/!entry, res);
}

// Applies (or validates) the new text and answers with the object as it now reads.
void Server::kube_config_commit(const kube::Call& c, const std::string& name,
                                const std::string& key, const std::string& text, bool dry_run,
                                bool created, net::Response& res) {
  const std::vector<Source> sources = {Source{kueue_write::kSource, text}};
  std::vector<std::string> warnings;
  const auto docs = kube::split_config(text);
  const kube::ConfigDoc* doc = nullptr;  // the written one's (none: deleted)
  for (const auto& d : docs)
    if (!d.kind.empty() && kube::object_key(d.kind, d.ns, d.name) == key) doc = &d;
  auto refused = [&](const std::string& errors) {
    reply(res, 422, kueue_write::invalid(c, name, kube::invalid_causes(errors, docs, doc)));
  };
  // The loader's warnings, by field or object as its errors are (not by line of a text).
  auto say = [&](const std::vector<std::string>& from) {
    for (const auto& w : from)
      for (const auto& x : kube::invalid_causes(w, docs, doc))
        warnings.push_back(x.field.empty() ? x.message : x.field + ": " + x.message);
  };
  if (dry_run) {
    auto lc = load_server_config(sources);
    if (!lc) return refused(lc.error());
    say(lc->warnings);
  } else {
    auto out = apply_config(sources);
    if (out.status == 400) return refused(out.details.empty() ? out.error : out.details.front());
    if (out.status != 200)  // the state cannot carry it (a ClusterQueue's jobs): as the config path
      return kube::fail_status(res, out.status,
                               out.error + (out.details.empty() ? "" : "; " + out.details.front()) +
                                   " (sluice config apply refuses the same)");
    say(out.warnings);
  }
  json answer;
  {
    std::lock_guard lk(state_->mu());
    if (!dry_run && !options_.config_files.empty()) {
      applied_over_files_ = c.caller.name;
      warnings.push_back(
          "this server reads its configuration from --config files: a reload or a restart "
          "replaces this change with theirs; change the files to keep it");
    }
    if (c.req.method == "DELETE") {
      answer = kube::status_object(200, "");
      answer["details"] = kueue_write::details(c, name);
    } else if (dry_run) {
      kube::ConfigVersions probe(0);
      probe.refresh(text, now_ns());
      if (const auto* e = probe.find(key))
        answer = kube::served_form(*e, kueue_write::uid_of(c.kind->kind, c.path.ns, name), "");
      answer["metadata"].erase("resourceVersion");
    } else {
      auto v = kube_config_versions();
      if (const auto* e = v->find(key))
        answer = kube::served_form(*e, kueue_write::uid_of(c.kind->kind, c.path.ns, name),
                                   kube::timestamp(e->created_ns));
    }
  }
  reply(res, created ? 201 : 200, answer);
  for (size_t i = 0; i < warnings.size() && i < 10; ++i)
    res.headers.emplace_back("Warning", kube::warning(warnings[i]));
}

}  // namespace sluice::server
