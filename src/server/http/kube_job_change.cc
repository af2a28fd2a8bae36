// Patch and update of a job through the Kubernetes API (docs/kubernetes.md, "Changing a job"):
// a batch/v1 Job, or a JobSet, PyTorchJob or MPIJob created as one. What sluice changes of a
// job is its suspend flag (spec.suspend; spec.runPolicy.suspend for the Kubeflow kinds): hold
// and release, as Kueue's users suspend and resume a Job, a running job suspended goes back to
// its queue held (Slurm's requeuehold: its pods stop, as Kueue evicts a suspended Job's); and
// its own labels and annotations. Every other field a change would make is refused by name
// (422), never ignored. A metadata.resourceVersion in the body is a precondition, as the API
// server's optimistic concurrency: 409 Conflict when the job has changed since.
#include <tuple>

#include "server/http/kube.h"
#include "server/http/kube_job_apply.h"
#include "server/http/kube_meta.h"
#include "server/http/reply.h"
#include "server/server.h"

namespace sluice::server {

using nlohmann::json;

namespace {

// A map of strings (or absent): the labels and annotations an update may carry.
bool string_map(const json& m) {
  if (m.is_null()) return true;
  if (!m.is_object()) return false;
  for (const auto& [k, v] : m.items())
    if (!v.is_string()) return false;
  return true;
}

// The change an update's body makes of a job as shown (kube_update_job): false with the
// refusal written.
bool updated_job(const kube::Call& c, const json& body, const JobRecord& r, const json& shown,
                 kube::JobPatch* out, net::Response& res) {
  const kube::JobShape shape = kube::job_shape(*c.kind);
  const auto changed = kube::updated_fields(shown.value("spec", json()), body.value("spec", json()),
                                            shape.suspend_field());
  if (!changed.empty()) {
    reply(res, 422, kube::immutable(*c.kind, c.path.name, changed));
    return false;
  }
  const json& meta = body["metadata"];
  const kube::KeptMeta kept = kube::kept_meta(r.kube_meta);
  for (auto [key, kept_map, into] :
       {std::tuple{"labels", &kept.labels, &out->labels},
        std::tuple{"annotations", &kept.annotations, &out->annotations}})
    *into = kube::replaced_map(*kept_map, shown["metadata"].value(key, json()),
                               meta.value(key, json()));
  return kube::read_suspend_flag(c, body, out, res);
}

}  // namespace

std::string kube::job_body_mismatch(const json& body, const Call& c, const JobShape& shape) {
  if (!body.is_object())
    return "the body is not a JSON object (nested at most " + std::to_string(kube::kMaxPatchDepth) +
           " deep)";
  if (body.value("apiVersion", json()) != shape.api_version ||
      body.value("kind", json()) != shape.kind)
    return "expected apiVersion " + shape.api_version + ", kind " + shape.kind;
  const json meta = body.value("metadata", json());
  if (!meta.is_object() || meta.value("name", json()) != c.path.name)
    return "the name of the object (" +
           (meta.is_object() && meta.value("name", json()).is_string()
                ? meta["name"].get<std::string>()
                : std::string()) +
           ") does not match the name on the URL (" + c.path.name + ")";
  if (meta.contains("namespace") && meta["namespace"] != c.path.ns)
    return "the namespace of the provided object does not match the namespace sent on the "
           "request";
  return {};
}

bool kube::read_suspend_flag(const Call& c, const json& body, JobPatch* out, net::Response& res) {
  const JobShape shape = job_shape(*c.kind);
  const auto flag = suspend_in(body, shape);
  if (!flag) return true;
  if (!flag->is_boolean() && !flag->is_null()) {
    reply(res, 422,
          invalid_job(*c.kind, c.path.name,
                      {{shape.suspend_field(), "Invalid value: expected true or false"}}));
    return false;
  }
  out->suspend = flag->is_boolean() && flag->get<bool>();
  return true;
}

// Under the state lock: the job named by the path, as its kind shows it, at the resourceVersion
// `precondition` when one is given, turned into a change by `build` (false: it has written its
// refusal); then the suspend flag and the metadata, each as kubectl patch changes them. 200 with
// the job once written.
void Server::kube_change_job(const kube::Call& c, net::Response& res,
                             const std::optional<std::string>& precondition,
                             const KubeJobChange& build) {
  if (!kube_may_write(c, res)) return;
  uint64_t ticket = 0;
  json out;
  {
    std::lock_guard lk(state_->mu());
    const TimeNs now = now_ns();
    const JobRecord* r = kube_job_named(c.path.ns, c.path.name);
    const json shown = r ? kube::shown_job(*r, *c.kind, state_->config(), now) : json();
    if (shown.is_null()) return reply(res, 404, kube::not_found(c, c.path.name));
    // The precondition first, as the API server checks it before it validates the change.
    if (precondition && *precondition != std::to_string(r->rv))
      return kube::fail_status(res, 409, kube::conflict_text(c, c.path.name), "Conflict");
    kube::JobPatch patch;
    if (!build(*r, shown, &patch, res)) return;
    const JobId id = r->job.id;
    std::optional<std::string> meta;  // its labels and annotations, when the change has any
    if (!patch.labels.empty() || !patch.annotations.empty()) {
      kube::MetaCauses causes;
      meta = kube::patch_meta(r->kube_meta, patch.labels, patch.annotations, &causes);
      if (!meta) return reply(res, 422, kube::invalid_job(*c.kind, c.path.name, causes));
    }
    std::string err;
    int status = 200;
    if (patch.suspend == true && !r->held) {
      if (r->state == JobState::kPending)
        status = state_->hold(id, now, &err, &ticket);
      else if (r->state == JobState::kRunning)
        status = state_->requeue(id, /*hold=*/true, now, &err, &ticket);
      else {
        status = 422;
        err = "job " + c.path.name + " has ended: there is nothing to suspend";
      }
    } else if (patch.suspend == false && r->held) {
      status = state_->release(id, now, &err, &ticket);
    }
    if (status != 200) return kube::fail_status(res, status, err);
    if (meta) {
      uint64_t written = 0;
      state_->set_kube_meta(id, std::move(*meta), &written);
      if (written) ticket = written;  // the store commits in order: the later covers both
    }
    out = kube::shown_job(*state_->find(id), *c.kind, state_->config(), now);
  }
  if (ticket && !store_->wait(ticket))
    return kube::fail_status(res, 503, "the change could not be written: " + refusal());
  kick();
  reply(res, 200, out);
}

// PATCH .../{jobs,jobsets,pytorchjobs,mpijobs}/{name} (kubectl patch, merge or strategic;
// kubectl label, annotate, edit): the suspend flag, metadata.labels and annotations.
void Server::kube_patch_job(const kube::Call& c, net::Response& res) {
  kube::PatchRefusal why;
  auto patch = kube::read_job_patch(c.req.header("Content-Type"), c.req.body, c.path.name, &why,
                                    kube::job_shape(*c.kind));
  if (!patch) return reply(res, why.code, kube::patch_refusal(c, why));
  const auto precondition = patch->resource_version;
  kube_change_job(c, res, precondition,
                  [&](const JobRecord&, const json&, kube::JobPatch* out, net::Response&) {
                    *out = std::move(*patch);
                    return true;
                  });
}

// PUT .../{jobs,jobsets,pytorchjobs,mpijobs}/{name} (kubectl replace, a client's replace): the
// whole object, as read and changed. Its labels and annotations replace the job's own (sluice's
// own, sluice.dev/*, are left as they are); its suspend flag, when given, holds or releases; a
// spec field it carries with another value than the job shows is refused by name. A field it
// leaves out keeps its value (Kubernetes would default it, and then refuse the change of an
// immutable one).
void Server::kube_update_job(const kube::Call& c, net::Response& res) {
  const json body = kube::parse_bounded(c.req.body);
  if (auto why = kube::job_body_mismatch(body, c, kube::job_shape(*c.kind)); !why.empty())
    return kube::fail_status(res, 400, why);
  const json& meta = body["metadata"];
  if (!string_map(meta.value("labels", json())) || !string_map(meta.value("annotations", json())))
    return reply(res, 422,
                 kube::invalid_job(*c.kind, c.path.name,
                                   {{"metadata",
                                     "Invalid value: labels and annotations are "
                                     "maps of strings"}}));
  std::optional<std::string> precondition;
  if (const json rv = meta.value("resourceVersion", json()); rv.is_string() && rv != "")
    precondition = rv.get<std::string>();
  kube_change_job(c, res, precondition,
                  [&](const JobRecord& r, const json& shown, kube::JobPatch* out,
                      net::Response& res) { return updated_job(c, body, r, shown, out, res); });
}

}  // namespace sluice::server
