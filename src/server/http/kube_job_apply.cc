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

void differences(const json& a, const json& b, const std::string& at,
                 std::vector<std::string>& out) {
  // Changed as kubectl patch changes them (kube_patch_job).
  if (at == "spec.suspend" || at == "metadata.labels" || at == "metadata.annotations") return;
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
    differences(v, b.contains(k) ? b[k] : json(), at.empty() ? k : at + "." + k, out);
  for (const auto& [k, v] : b.items())
    if (!a.contains(k)) differences(json(), v, at.empty() ? k : at + "." + k, out);
}

json immutable(const kube::Call& c, const std::vector<std::string>& fields) {
  std::string text;
  json causes = json::array();
  for (const auto& f : fields) {
    const bool kube_says = f.rfind("spec.", 0) == 0;
    const std::string what =
        kube_says ? "field is immutable" : "sluice does not change this field of a Job";
    text += (text.empty() ? "" : ", ") + f + ": Invalid value: " + what;
    causes.push_back({{"reason", "FieldValueInvalid"}, {"message", what}, {"field", f}});
  }
  if (fields.size() > 1) text = "[" + text + "]";
  json s =
      kube::status_object(422, "Job.batch \"" + c.path.name + "\" is invalid: " + text, "Invalid");
  s["details"] = {{"name", c.path.name}, {"group", "batch"}, {"kind", "Job"}, {"causes", causes}};
  return s;
}

}  // namespace job_apply

std::vector<std::string> kube::applied_changes(const json& kept, const json& next) {
  std::vector<std::string> out;
  job_apply::differences(kept, next, "", out);
  return out;
}

// Whether a Job's PATCH carries kubectl apply's annotation (kubectl apply or edit of a Job
// created with it).
bool Server::kube_applies(const kube::Call& c) const {
  if (kube::json_depth(c.req.body, kube::kMaxPatchDepth) > kube::kMaxPatchDepth) return false;
  return kube::applied_annotation(kube::parse_bounded(c.req.body)).has_value();
}

// PATCH of a Job with a new annotation: compared with the kept one; spec.suspend as kubectl
// patch (kube_patch_job) does; any other change refused whole.
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
    if (!r) return reply(res, 404, kube::not_found(c, c.path.name));
    const auto a = kube::kept_meta(r->kube_meta).annotations;
    if (const auto it = a.find(kube::kLastApplied); it != a.end() && it->is_string())
      kept = it->get<std::string>();
  }
  if (kept.empty()) return kube_patch_job(c, res);  // not applied here: fields refused by name
  const std::vector<std::string> changed = kube::applied_changes(kube::parse_bounded(kept), next);
  if (!changed.empty()) return reply(res, 422, job_apply::immutable(c, changed));
  // What remains is spec.suspend, if the patch sets it, and the metadata's labels and
  // annotations (the new annotation among them), which kubectl patch changes as well.
  net::Request only;
  only.method = "PATCH";
  only.path = c.req.path;
  only.headers = {{"Content-Type", "application/merge-patch+json"}};
  only.params = c.req.params;
  json rest = json::object();
  if (patch.contains("spec") && patch["spec"].is_object() && patch["spec"].contains("suspend"))
    rest["spec"]["suspend"] = patch["spec"]["suspend"];
  for (const char* key : {"labels", "annotations"})
    if (patch["metadata"].contains(key)) rest["metadata"][key] = patch["metadata"][key];
  only.body = rest.dump();
  kube::Call sub{.req = only, .caller = c.caller, .path = c.path};
  sub.kind = c.kind;
  kube_patch_job(sub, res);
}

}  // namespace sluice::server
