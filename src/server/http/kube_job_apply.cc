// kubectl apply of a batch/v1 Job (docs/kubernetes.md, "kubectl apply of a Job"). kubectl
// creates the Job with its manifest in the annotation kubectl.kubernetes.io/last-applied-
// configuration, and later reads the Job back to compute a patch from that annotation, the
// file and the live object. The annotation is kept with the Job's other annotations
// (kube_meta.h: stored, so a restart keeps it), and the Job shows as applied: the annotation,
// and the spec's fields as the manifest wrote them (kube_objects.cc). Applying the same file
// again then sends nothing ("unchanged"); a changed file's patch carries the new annotation,
// which is compared with the kept one: spec.suspend, metadata.labels and annotations change as
// kubectl patch changes them, a change of another field is 422 ("field is immutable", as
// Kubernetes says of a Job's template, or sluice's words for fields it does not change),
// nothing applied.
#include "server/http/kube_job_apply.h"

#include "server/http/kube.h"
#include "server/http/kube_config_docs.h"
#include "server/http/kube_meta.h"
#include "server/http/reply.h"
#include "server/server.h"

namespace sluice::server {

using nlohmann::json;

namespace kube {

std::optional<std::string> applied_annotation(const json& o) {
  if (!o.is_object() || !o.contains("metadata") || !o["metadata"].is_object()) return std::nullopt;
  const json& m = o["metadata"];
  if (!m.contains("annotations") || !m["annotations"].is_object()) return std::nullopt;
  const json& a = m["annotations"];
  if (!a.contains(kLastApplied) || !a[kLastApplied].is_string()) return std::nullopt;
  std::string text = a[kLastApplied].get<std::string>();
  if (text.size() > kMaxApplied) return std::nullopt;
  return text;
}

json parse_bounded(std::string_view text) {
  if (json_depth(text, kMaxPatchDepth) > kMaxPatchDepth) return nullptr;
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  return j.is_discarded() ? json() : j;
}

}  // namespace kube

namespace job_apply {

void differences(const json& a, const json& b, const std::string& at, const std::string& suspend,
                 std::vector<std::string>& out) {
  // Changed as kubectl patch changes them (kube_patch_job).
  if (at == suspend || at == "metadata.labels" || at == "metadata.annotations") return;
  for (const char* whole :
       {"spec.template", "spec.completions", "spec.completionMode", "spec.selector"})
    if (at == whole) {
      if (a != b) out.push_back(at);
      return;
    }
  if (!a.is_object() || !b.is_object()) {
    if (a != b) out.push_back(at);
    return;
  }
  for (const auto& [k, v] : a.items())
    differences(v, b.contains(k) ? b[k] : json(), at.empty() ? k : at + "." + k, suspend, out);
  for (const auto& [k, v] : b.items())
    if (!a.contains(k)) differences(json(), v, at.empty() ? k : at + "." + k, suspend, out);
}

bool same_scalar(const json& a, const json& b) {
  if (a == b) return true;
  const auto text = [](const json& j) { return j.is_string() ? j.get<std::string>() : j.dump(); };
  return (a.is_number() && b.is_string()) || (a.is_string() && b.is_number()) ? text(a) == text(b)
                                                                              : false;
}

void updated(const json& shown, const json& body, const std::string& at, const std::string& suspend,
             std::vector<std::string>& out) {
  if (at == suspend) return;
  if (shown.is_object() && body.is_object()) {
    for (const auto& [k, v] : body.items())
      updated(shown.contains(k) ? shown[k] : json(), v, at + "." + k, suspend, out);
    return;
  }
  if (shown.is_array() && body.is_array() && shown.size() == body.size()) {
    for (size_t i = 0; i < body.size(); ++i)
      updated(shown[i], body[i], at + "[" + std::to_string(i) + "]", suspend, out);
    return;
  }
  if (!same_scalar(shown, body)) out.push_back(at);
}

}  // namespace job_apply

json kube::immutable(const Kind& k, const std::string& name,
                     const std::vector<std::string>& fields) {
  std::vector<std::pair<std::string, std::string>> causes;
  for (const auto& f : fields) {
    // A batch/v1 Job's spec is immutable in Kubernetes but for a few fields sluice does not
    // change either; the other kinds' fields are sluice's to refuse.
    const bool kube_says = k.kind == "Job" && f.rfind("spec.", 0) == 0;
    causes.emplace_back(f, std::string("Invalid value: ") +
                               (kube_says ? "field is immutable"
                                          : "sluice does not change this field of a " + k.kind));
  }
  return invalid_job(k, name, causes);
}

std::vector<std::string> kube::applied_changes(const json& kept, const json& next,
                                               const std::string& suspend_field) {
  std::vector<std::string> out;
  job_apply::differences(kept, next, "", suspend_field, out);
  return out;
}

std::vector<std::string> kube::updated_fields(const json& shown, const json& body,
                                              const std::string& suspend_field) {
  std::vector<std::string> out;
  job_apply::updated(shown, body, "spec", suspend_field, out);
  return out;
}

std::optional<json> kube::suspend_in(const json& body, const JobShape& shape) {
  if (!body.is_object() || !body.contains("spec")) return std::nullopt;
  const json* at = &body["spec"];
  if (shape.run_policy)
    at = at->is_object() && at->contains("runPolicy") ? &(*at)["runPolicy"] : nullptr;
  if (!at || !at->is_object() || !at->contains("suspend")) return std::nullopt;
  return (*at)["suspend"];
}

kube::MapPatch kube::replaced_map(const json& kept, const json& shown, const json& body) {
  MapPatch out;
  const json none = json::object();
  const json& b = body.is_object() ? body : none;
  if (kept.is_object())
    for (const auto& [k, v] : kept.items())
      if (!b.contains(k)) out.emplace_back(k, std::nullopt);
  for (const auto& [k, v] : b.items()) {
    if (!v.is_string()) continue;                  // the caller refuses a map of other values
    if (k.rfind("sluice.dev/", 0) == 0) continue;  // sluice's own: shown, never kept
    const bool same = kept.is_object() && kept.contains(k)
                          ? kept[k] == v
                          : shown.is_object() && shown.contains(k) && shown[k] == v;
    if (!same) out.emplace_back(k, v.get<std::string>());
  }
  return out;
}

// Whether a Job's PATCH carries kubectl apply's annotation (kubectl apply or edit of a Job
// created with it).
bool Server::kube_applies(const kube::Call& c) const {
  if (kube::json_depth(c.req.body, kube::kMaxPatchDepth) > kube::kMaxPatchDepth) return false;
  return kube::applied_annotation(kube::parse_bounded(c.req.body)).has_value();
}

// PATCH of a Job (or a JobSet, PyTorchJob, MPIJob) with a new annotation: compared with the
// kept one; the suspend flag as kubectl patch (kube_patch_job) sets it; any other change refused
// whole.
void Server::kube_apply_job(const kube::Call& c, net::Response& res) {
  const json patch = kube::parse_bounded(c.req.body);
  const json next = kube::parse_bounded(*kube::applied_annotation(patch));
  if (!next.is_object())
    return kube::fail_status(res, 400,
                             std::string("the annotation ") + kube::kLastApplied +
                                 " is not a JSON object (nested at most " +
                                 std::to_string(kube::kMaxPatchDepth) + " deep)");
  std::string kept;
  {
    std::lock_guard lk(state_->mu());
    const JobRecord* r = kube_job_named(c.path.ns, c.path.name);
    if (!r || (kube::job_kind(*c.kind) && !kube::created_as(*r, *c.kind)))
      return reply(res, 404, kube::not_found(c, c.path.name));
    const auto a = kube::kept_meta(r->kube_meta).annotations;
    if (const auto it = a.find(kube::kLastApplied); it != a.end() && it->is_string())
      kept = it->get<std::string>();
  }
  if (kept.empty()) return kube_patch_job(c, res);  // not applied here: fields refused by name
  const kube::JobShape shape = kube::job_shape(*c.kind);
  const std::vector<std::string> changed =
      kube::applied_changes(kube::parse_bounded(kept), next, shape.suspend_field());
  if (!changed.empty()) return reply(res, 422, kube::immutable(*c.kind, c.path.name, changed));
  // What remains is the suspend flag, if the patch sets it, and the metadata's labels and
  // annotations (the new annotation among them), which kubectl patch changes as well.
  net::Request only;
  only.method = "PATCH";
  only.path = c.req.path;
  only.headers = {{"Content-Type", "application/merge-patch+json"}};
  only.params = c.req.params;
  json rest = json::object();
  if (const auto flag = kube::suspend_in(patch, shape))
    rest[json::json_pointer(shape.run_policy ? "/spec/runPolicy/suspend" : "/spec/suspend")] =
        *flag;
  for (const char* key : {"labels", "annotations"})
    if (patch["metadata"].contains(key)) rest["metadata"][key] = patch["metadata"][key];
  only.body = rest.dump();
  kube::Call sub{.req = only, .caller = c.caller, .path = c.path};
  sub.kind = c.kind;
  kube_patch_job(sub, res);
}

namespace job_apply {

// The change a server-side apply's manifest makes of a job (kube_ssa_job): compared with the
// last one applied (`last`, null when no server-side apply made the job: then with the job as
// shown). False with the refusal written.
bool ssa_change(const kube::Call& c, const json& manifest, const json& last, const json& shown,
                kube::JobPatch* out, net::Response& res) {
  const kube::JobShape shape = kube::job_shape(*c.kind);
  const auto changed =
      last.is_object()
          ? kube::applied_changes(last, manifest, shape.suspend_field())
          : kube::updated_fields(shown.value("spec", json()), manifest.value("spec", json()),
                                 shape.suspend_field());
  if (!changed.empty()) {
    reply(res, 422, kube::immutable(*c.kind, c.path.name, changed));
    return false;
  }
  // The manifest's labels and annotations are set; those the last one had and this one drops
  // are removed (the manifest is its manager's whole intent).
  for (auto [key, into] :
       {std::pair{"labels", &out->labels}, std::pair{"annotations", &out->annotations}}) {
    const json now = manifest["metadata"].value(key, json::object());
    const json before =
        last.is_object() && last.contains("metadata") && last["metadata"].is_object()
            ? last["metadata"].value(key, json::object())
            : json::object();
    if (!now.is_object()) {
      reply(res, 422,
            kube::invalid_job(
                *c.kind, c.path.name,
                {{std::string("metadata.") + key, "Invalid value: a map of strings is expected"}}));
      return false;
    }
    if (before.is_object())
      for (const auto& [k, v] : before.items())
        if (!now.contains(k)) into->emplace_back(k, std::nullopt);
    for (const auto& [k, v] : now.items()) {
      if (!v.is_string()) {
        reply(res, 422,
              kube::invalid_job(*c.kind, c.path.name,
                                {{std::string("metadata.") + key + "." + k,
                                  "Invalid value: a string is expected"}}));
        return false;
      }
      into->emplace_back(k, v.get<std::string>());
    }
  }
  out->annotations.emplace_back(kube::kServerSideApplied, manifest.dump());
  return kube::read_suspend_flag(c, manifest, out, res);
}

}  // namespace job_apply

// kubectl apply --server-side of a job (docs/kubernetes.md, "Server-side apply of a job"): a
// PATCH of Content-Type application/apply-patch+yaml with ?fieldManager=NAME. A job not there
// is created as a POST creates it (201), its manifest kept (kServerSideApplied); one there
// changes as its manifest says against the last one applied (job_apply::ssa_change): its
// suspend flag, its labels and annotations; any other change is refused whole (422).
// Ownership by field manager is not tracked for jobs: two managers' applies never conflict.
void Server::kube_ssa_job(const kube::Call& c, net::Response& res) {
  if (c.req.get_param_value("fieldManager").empty())
    return reply(
        res, 422,
        kube::invalid_job(*c.kind, c.path.name,
                          {{"fieldManager", "Required value: is required for apply patch"}}));
  std::string error;
  auto manifest = kube::read_object_body(c.req.body, &error);
  if (!manifest) return kube::fail_status(res, 400, error);
  if (auto why = kube::job_body_mismatch(*manifest, c, kube::job_shape(*c.kind)); !why.empty())
    return kube::fail_status(res, 400, why);
  manifest->erase("status");
  if (auto& m = (*manifest)["metadata"]; m.contains("annotations") && m["annotations"].is_object())
    m["annotations"].erase(kube::kServerSideApplied);  // never nested in itself
  bool exists = false;
  {
    std::lock_guard lk(state_->mu());
    exists = kube_job_named(c.path.ns, c.path.name) != nullptr;
  }
  if (!exists) {
    json created = *manifest;
    created["metadata"]["annotations"][kube::kServerSideApplied] = manifest->dump();
    net::Request post;
    post.method = "POST";
    post.path = c.req.path;
    post.headers = {{"Content-Type", "application/json"}};
    post.params = c.req.params;
    post.body = created.dump();
    kube::Call sub{.req = post, .caller = c.caller, .path = c.path};
    sub.kind = c.kind;
    return kube_create_job(sub, res);
  }
  kube_change_job(
      c, res, std::nullopt,
      [&](const JobRecord& r, const json& shown, kube::JobPatch* out, net::Response& res) {
        const auto kept = kube::kept_meta(r.kube_meta).annotations;
        const auto it = kept.find(kube::kServerSideApplied);
        const json last = it != kept.end() && it->is_string()
                              ? kube::parse_bounded(it->get<std::string>())
                              : json();
        return job_apply::ssa_change(c, *manifest, last, shown, out, res);
      });
}

}  // namespace sluice::server
