// batch/v1 Jobs through the Kubernetes API (docs/kubernetes.md): get and list (a Table for
// kubectl get), create through the very path of POST /v1/jobs (parse outside the lock, the
// same checks, the store's ticket before the answer), and delete: an unfinished job is
// cancelled, a finished one's record dropped (its history stays).
#include "server/http/kube.h"
#include "server/http/kube_meta.h"
#include "server/http/kube_patch.h"
#include "server/http/reply.h"
#include "server/http/submission.h"

namespace sluice::server {

using nlohmann::json;

namespace kube {
const std::vector<Column>& job_columns() {
  static const std::vector<Column> c = {
      {"Name", "string", "name", "Name must be unique within a namespace."},
      {"Status", "string", "", "Status of the job."},
      {"Completions", "string", "", "The desired number of successfully finished pods."},
      {"Duration", "string", "", "Time required to complete the job."},
      {"Age", "string", "", "CreationTimestamp of the object."},
      {"Containers", "string", "", "Names of each container in the template.", 1},
      {"Images", "string", "", "Images referenced by each container in the template.", 1},
      {"Selector", "string", "", "A label query over pods that should match the pod count.", 1}};
  return c;
}

json invalid_job(const Kind& k, const std::string& name,
                 const std::vector<std::pair<std::string, std::string>>& causes) {
  std::string text;
  json list = json::array();
  for (const auto& [field, what] : causes) {
    text += (text.empty() ? "" : ", ") + field + ": " + what;
    const char* reason = what.rfind("Too long", 0) == 0    ? "FieldValueTooLong"
                         : what.rfind("Forbidden", 0) == 0 ? "FieldValueForbidden"
                                                           : "FieldValueInvalid";
    list.push_back({{"reason", reason}, {"message", what}, {"field", field}});
  }
  if (causes.size() > 1) text = "[" + text + "]";
  const std::string qualified = k.group.empty() ? k.kind : k.kind + "." + k.group;
  json s = status_object(422, qualified + " \"" + name + "\" is invalid: " + text, "Invalid");
  s["details"] = {{"name", name}, {"group", k.group}, {"kind", k.kind}, {"causes", list}};
  return s;
}
}  // namespace kube

namespace {

// What the body must be besides a valid submission: one object of the path's kind (a batch/v1
// Job, JobSet, PyTorchJob, MPIJob), as JSON (kubectl's).
std::string job_body_refusal(const json& doc, const kube::Kind& k) {
  const std::string what = k.api_version() + " " + k.kind;
  if (!doc.is_object()) return "expected one " + what + " as a JSON object";
  const auto text = [&](const char* key) {  // not value(), which throws on a non-string
    const auto it = doc.find(key);
    return it != doc.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  if (text("apiVersion") != k.api_version() || text("kind") != k.kind)
    return "expected apiVersion " + k.api_version() + ", kind " + k.kind +
           " (other kinds: their own resource, POST /v1/jobs, sluice submit)";
  return {};
}

}  // namespace

void Server::kube_jobs(const kube::Call& c, net::Response& res) {
  const auto now = now_ns();
  json out;
  {
    std::lock_guard lk(state_->mu());
    const Config& cfg = state_->config();
    if (!c.path.name.empty()) {
      const JobRecord* r = kube_job_named(c.path.ns, c.path.name);
      if (!r) return reply(res, 404, kube::not_found(c, c.path.name));
      json o = kube::job_object(*r, cfg, now);
      json cells = kube::job_row(*r, o, now);
      out = kube::single(c, kube::job_columns(), std::move(o), std::move(cells));
    } else {
      kube::Listing list(c, kube::job_columns());
      const auto next = kube_scan(
          c, [&] { return list.full(); },
          [&](const JobRecord& r) {
            json o = kube::job_object(r, cfg, now);
            list.add(std::move(o), [&] { return kube::job_row(r, o, now); });
          });
      out = list.done("JobList", next, state_->journal().current());
    }
  }
  reply(res, 200, out);
}

// A change through the Kubernetes API: false with the answer written when it asks for a dry run
// (not served yet; `dry_run`: the body asked for one) or the server may not write now.
bool Server::kube_may_write(const kube::Call& c, net::Response& res, bool dry_run) {
  if (dry_run || c.req.has_param("dryRun")) {
    kube::fail_status(res, 400, "sluice does not serve dryRun yet");
    return false;
  }
  if (may_write(res)) return true;
  kube::to_status(res);
  return false;
}

// POST /apis/batch/v1/namespaces/{ns}/jobs: 201 with the Job once it is on disk. And of a
// JobSet, PyTorchJob or MPIJob (kube_job_kinds.cc): its reader's, the object kept as written.
void Server::kube_create_job(const kube::Call& c, net::Response& res) {
  if (!kube_may_write(c, res)) return;
  Submission sub{.caller = c.caller, .default_namespace = c.path.ns, .unique_names = true};
  if (!parse_submission(c.req, res, &sub)) return kube::to_status(res);
  // The reader has bounded the text (size, depth) before this second, shallow look at it.
  const json doc = json::parse(c.req.body, nullptr, /*allow_exceptions=*/false);
  if (auto why = job_body_refusal(doc, *c.kind); !why.empty())
    return kube::fail_status(res, 400, why);
  kube::MetaCauses causes;
  const bool whole = kube::job_kind(*c.kind);  // a JobSet, PyTorchJob, MPIJob: kept as written
  auto meta = kube::read_job_meta(doc, &causes, whole);
  if (!meta)
    return reply(res, 422,
                 kube::invalid_job(
                     *c.kind, sub.parsed.jobs.empty() ? "" : sub.parsed.jobs.front().name, causes));
  sub.kube_meta = std::move(*meta);
  for (const auto& j : sub.parsed.jobs)
    if (j.namespace_ != c.path.ns)
      return kube::fail_status(res, 400,
                               "the namespace of the provided object does not match the "
                               "namespace sent on the request");
  const auto ids = commit_submission(sub, res);
  if (ids.empty()) {
    kube::to_status(res);
    if (res.status == 409)
      kube::fail_status(res, 409, json::parse(res.body)["message"], "AlreadyExists");
    return;
  }
  json job;
  {
    std::lock_guard lk(state_->mu());
    const JobRecord* r = state_->find(ids.front());
    if (!r) return kube::fail_status(res, 500, "the job ended before it could be shown");
    job = whole ? kube::kind_object(*r, *c.kind) : kube::job_object(*r, state_->config(), now_ns());
  }
  reply(res, 201, job);
  for (size_t i = 0; i < sub.parsed.notes.size() && i < 10; ++i)
    res.headers.emplace_back("Warning", kube::warning(sub.parsed.notes[i]));
}

// DELETE .../jobs/{name} (and of a JobSet, PyTorchJob, MPIJob created as one): cancels an
// unfinished job; drops a finished one's record.
void Server::kube_delete_job(const kube::Call& c, net::Response& res) {
  if (!kube_may_write(c, res)) return;
  uint64_t ticket = 0;
  json details;
  {
    std::lock_guard lk(state_->mu());
    const JobRecord* r = kube_job_named(c.path.ns, c.path.name);
    const bool whole = kube::job_kind(*c.kind);
    if (!r || (whole && !kube::created_as(*r, *c.kind)))
      return reply(res, 404, kube::not_found(c, c.path.name));
    const JobId id = r->job.id;
    details = {{"name", c.path.name},
               {"group", c.kind->group},
               {"kind", c.kind->resource},
               {"uid", whole ? kube::kind_object(*r, *c.kind)["metadata"]["uid"]
                             : json("sluice-job-" + std::to_string(id))}};
    std::string err;
    const int status = is_terminal(r->state) ? state_->forget_finished(id, &err, &ticket)
                                             : state_->cancel(id, now_ns(), &err, &ticket);
    if (status != 200) return kube::fail_status(res, status, err);
  }
  if (ticket && !store_->wait(ticket))
    return kube::fail_status(res, 503, "the deletion could not be written: " + refusal());
  kick();
  json s = kube::status_object(200, "");
  s["details"] = details;
  reply(res, 200, s);
}

}  // namespace sluice::server
