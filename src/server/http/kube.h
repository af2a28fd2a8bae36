#pragma once
// The Kubernetes API of `sluice serve` (docs/kubernetes.md): what its handlers (kube_*.cc)
// share. The pure pieces live here, free of the Server, so that tests/unit/server tests them:
// paths, Status objects, server-side Tables, object names, label selectors, and the objects
// built from a job record (batch/v1 Job, its Pods, its Kueue Workload).
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/model/config.h"
#include "net/message.h"
#include "server/auth.h"
#include "server/http/kube_bodies.h"
#include "server/http/kube_patch.h"
#include "server/state.h"

namespace sluice::server::kube {

using nlohmann::json;

inline constexpr const char* kKueueGroup = "kueue.x-k8s.io";
inline constexpr const char* kKueueVersion = "v1beta1";
inline constexpr const char* kQueueLabel = "kueue.x-k8s.io/queue-name";

// --- Paths (kube_path.cc) -------------------------------------------------------------------
// /api/v1/namespaces/NS/pods/NAME/log -> {"", "v1", "NS", "pods", "NAME", "log"}.
struct Path {
  std::string group;  // "" for the core group (/api)
  std::string version;
  std::string ns;        // "" for cluster-scoped requests and lists across namespaces
  std::string resource;  // "" for the group-version's resource list
  std::string name;
  std::string sub;          // a subresource ("log", "status"); "" none
  bool namespaces = false;  // /api/v1/namespaces[/NAME]: the namespace objects themselves
};
// The parts of a path under /api or /apis; nullopt for a path that is no resource path (the
// discovery documents /api and /apis are served by their own routes).
std::optional<Path> parse_path(const std::string& path);

// --- Discovery (kube_discovery.cc) ----------------------------------------------------------
// A resource sluice serves, as its group-version's APIResourceList lists it.
struct Kind {
  std::string group, version, resource, singular, kind;
  bool namespaced = true;
  std::vector<std::string> verbs, short_names, categories;
  // A subresource of another group's kind (pods/eviction: policy/v1 Eviction): its group and
  // version, as the resource list says them.
  std::string sub_group = {}, sub_version = {};
  std::string api_version() const { return group.empty() ? version : group + "/" + version; }
};
const std::vector<Kind>& kinds();
const Kind* find_kind(const std::string& group, const std::string& version,
                      const std::string& resource);
json version_info();                         // GET /version
json api_versions(const std::string& host);  // GET /api
json group_list();                           // GET /apis
// GET /api/v1, /apis/G/V; nullopt for a group-version sluice does not serve.
std::optional<json> resource_list(const std::string& group, const std::string& version);
// GET /openapi/v3: the group-versions' documents; GET /openapi/v3/apis/batch/v1 (and kin):
// a minimal OpenAPI v3 document that declares the operations sluice serves with their
// fieldValidation parameter, which is what kubectl's create reads to leave validation to the
// server (docs/kubernetes.md); no schemas yet (kubectl explain has nothing to show).
json openapi_index();
std::optional<json> openapi_document(const std::string& group_version_path);

// --- Status (kube_status.cc) -----------------------------------------------------------------
// Kubernetes' reason for an HTTP status ("NotFound" for 404, ...).
const char* reason_of(int code);
// A metav1 Status: the body of every error, and of a successful delete.
json status_object(int code, const std::string& message, const std::string& reason = "");
void fail_status(net::Response& res, int code, const std::string& message,
                 const std::string& reason = "");
// Turns a native error body ({"error", "details"}) written by a shared handler into a Status.
void to_status(net::Response& res);
// "299 - \"text\"": a Warning header, which kubectl prints as "Warning: text".
std::string warning(std::string text);

// --- Tables (kube_table.cc) ------------------------------------------------------------------
struct Column {
  std::string name;
  std::string type = "string";  // string, integer, date
  std::string format;           // "name" for the name column
  std::string description;
  int priority = 0;  // 1: only with -o wide
};
// Whether the client asked for a meta.k8s.io/v1 Table (kubectl get's Accept header).
bool wants_table(const net::Request& req);
// "Object": rows carry the whole object; "None": nothing; else (default) its metadata only.
std::string include_object(const net::Request& req);
json table(const std::vector<Column>& columns, json rows, const std::string& include);
// The columns kubectl prints for Jobs (kube_batch.cc) and Kueue's Workloads (kube_kueue.cc).
const std::vector<Column>& job_columns();
const std::vector<Column>& workload_columns();
const std::vector<Column>& pod_columns();  // kube_core.cc
// One row: its cells and the object it shows (reduced as `include` says).
json table_row(json cells, const json& object, const std::string& include);
// Kubernetes' HumanDuration: "5s", "3m20s", "2d4h".
std::string human_duration(TimeNs ns);
std::string timestamp(TimeNs unix_ns);  // RFC 3339, "" for 0
// A metav1.Time field: RFC 3339, null for 0 (as the API server writes a zero time; clients
// such as the Python one parse every date they are given).
json time_field(TimeNs unix_ns);

// --- Lists, selectors and paging (kube_table.cc) ---------------------------------------------
// labelSelector's equality terms (a=b, a==b, a!=b); nullopt (with *error) for set-based ones.
struct Selector {
  std::vector<std::pair<std::string, std::string>> equal, not_equal;
  bool matches(const json& labels) const;
};
std::optional<Selector> parse_selector(const std::string& text, std::string* error);
// A fieldSelector's field of an object, as the API server reads it: a dotted path, "" when
// absent ("source" is source.component).
std::string field_value(const json& object, const std::string& field);
// Whether a fieldSelector may name `field` on `resource`: metadata.name and metadata.namespace
// on every kind; pods: spec.nodeName (kubectl drain), status.phase, spec.restartPolicy; events:
// involvedObject.{kind,name,namespace,uid,apiVersion,fieldPath}, reason, type, source,
// reportingComponent (kubectl describe).
bool field_supported(const std::string& resource, const std::string& field);
bool fields_match(const Selector& fields, const json& object);
// A List of `kind` (e.g. "JobList"), continue token "" for the last page.
json list_object(const std::string& api_version, const std::string& kind, json items,
                 const std::string& next);

// --- Names ----------------------------------------------------------------------------------
// A job's pods: "<job>-<index>" (Kubernetes adds a random suffix; sluice's pods have an index).
std::string pod_name(const std::string& job, size_t index);
// The job name and pod index of a pod name; nullopt when it has no "-<index>" suffix.
std::optional<std::pair<std::string, size_t>> split_pod_name(const std::string& pod);
// A job's Workload: "job-<job>-<id>" (Kueue: "job-<job>-<hash>"), so a name finds its job.
std::string workload_name(const JobRecord& r);
std::optional<JobId> workload_job_id(const std::string& name);

// --- Logs (kube_logs.cc) ----------------------------------------------------------------------
// The last `n` lines of a log (a last line without its newline counts).
std::string last_lines(std::string_view log, int64_t n);
// A log answer as pods/log gives it: its last tail_lines lines, then at most limit_bytes bytes
// (-1: no limit); an error as a Status.
void shape_log(net::Response& res, int64_t tail_lines, int64_t limit_bytes);

// --- Objects (kube_objects.cc) ---------------------------------------------------------------
// Whether the job shows in the Kubernetes API: a cancelled job was deleted.
inline bool listed(const JobRecord& r) {
  return r.state != JobState::kCancelled;
}
// A status condition (type, "True"/"False", lastTransitionTime, reason, message).
json condition(const std::string& type, bool status, TimeNs at, const std::string& reason,
               const std::string& message);
json job_object(const JobRecord& r, const Config& config, TimeNs now);
json job_row(const JobRecord& r, const json& job, TimeNs now);  // a Table row's cells
// The pods the API shows of a job (none before it was admitted, as a suspended Job has none):
// every pod of a running job's run; an ended job's last run, but a pod an eviction deleted
// (PodRun::deleted); a pending job's last-run pods still stopping (`stopping(i)`: a preempted,
// requeued or evicted job's), Terminating (metadata.deletionTimestamp), none once gone. A
// pod's uid names its run: a pod of a later run is another pod (kubectl drain waits on it).
using PodStopping = std::function<bool(size_t)>;
bool pod_shown(const JobRecord& r, size_t i, const PodStopping& stopping);
json pod_object(const JobRecord& r, size_t i, const Config& config);
std::vector<json> pod_objects(const JobRecord& r, const Config& config,
                              const PodStopping& stopping = {});
json pod_row(const JobRecord& r, const json& pod, TimeNs now);
json workload_object(const JobRecord& r, const Config& config, const std::string& why_pending);
json workload_row(const JobRecord& r, const json& wl, TimeNs now);
// Resource requests as Kubernetes quantities ({"cpu": "1", "nvidia.com/gpu": "2"}).
json quantities(const ResourceVec& v, const Config& config, int64_t times = 1);

// --- JobSet, PyTorchJob, MPIJob (kube_job_kinds.cc) ------------------------------------------
// Whether `k` is one of those kinds (created through the batch/v1 Job's path, shown as written).
bool job_kind(const Kind& k);
// Whether the job was created through the API as kind `k`.
bool created_as(const JobRecord& r, const Kind& k);
// The job as kind `k`: its spec as written, its status (JobSet's, the Kubeflow operators') from
// its record; and its Table: JobSet's printer columns, the training operator's (State, Age).
json kind_object(const JobRecord& r, const Kind& k);
// A job of kind `k` as the API shows it: kind_object of a JobSet, PyTorchJob or MPIJob (created
// as one), job_object of any job as a batch/v1 Job; null when the job is not of that kind.
json shown_job(const JobRecord& r, const Kind& k, const Config& config, TimeNs now);
// `k`'s identity and where it keeps its suspend flag (kube_patch.h).
JobShape job_shape(const Kind& k);
// 422 Invalid for a job of kind `k` named `name`, a cause per field (`what` a field's message;
// "field is immutable" or the like).
json invalid_job(const Kind& k, const std::string& name,
                 const std::vector<std::pair<std::string, std::string>>& causes);
// invalid_job for fields an update or apply may not change (kube_job_apply.cc): a batch/v1
// Job's spec "field is immutable", as Kubernetes says; other fields in sluice's words.
json immutable(const Kind& k, const std::string& name, const std::vector<std::string>& fields);
const std::vector<Column>& kind_columns(const Kind& k);
json kind_row(const JobRecord& r, const Kind& k, const json& object, TimeNs now);

// --- Events (kube_events.cc) ----------------------------------------------------------------
// A job's core/v1 Events, oldest first, derived from what the server keeps: its record, its
// history row (each run's start and end; null: the record's last run only) and why it waits.
// Its Job's: CreatedWorkload, Started, Stopped (preempted, requeued, evicted), Pending (why, in
// sluice's words), Completed or Failed; its Workload's: QuotaReserved, Admitted, Preempted or
// Evicted, Pending, Finished. At most the last kMaxEventRuns runs.
inline constexpr size_t kMaxEventRuns = 20;
struct Event {
  json object;  // the core/v1 Event
  TimeNs at = 0;
};
std::vector<Event> job_events(const JobRecord& r, const HistoryRow* h,
                              const std::string& why_pending);
const std::vector<Column>& event_columns();
// LAST SEEN TYPE REASON OBJECT MESSAGE, and -o wide's SUBOBJECT SOURCE FIRST SEEN COUNT NAME.
json event_row(const Event& e, TimeNs now);
// An event's name is "<object>.<16 hex digits>": the job's id and the event's index in
// job_events. nullopt: not such a name.
std::optional<std::pair<JobId, size_t>> split_event_name(const std::string& name);

// --- Access reviews (kube_access.cc): kubectl auth can-i -------------------------------------
// What a token may do, as sluice's rules say (docs/kubernetes.md "Who may do what"): an admin
// everything; a member every verb on jobs, pods (their logs, their eviction), events and
// workloads in its namespaces, reads of those across namespaces (a list shows its namespaces
// only), reads of nodes, namespaces and Kueue's configuration kinds, and the access reviews.
struct AccessAnswer {
  bool allowed = false;
  std::string reason;
};
AccessAnswer decide_access(const Caller& who, const AccessQuestion& q);
// A SelfSubjectRulesReview's status for namespace `ns`: resourceRules, nonResourceRules.
json rules_review_status(const Caller& who, const std::string& ns);

// --- One request (kube_routes.cc) ----------------------------------------------------------
// Pages as the native list's (jobs_list.cc): at most kMaxPage objects, kMaxScan records looked
// at under the state lock; `continue` is the record id the next page starts below.
inline constexpr size_t kDefaultPage = 500;
inline constexpr size_t kMaxPage = 1000;
inline constexpr size_t kMaxScan = 20'000;

struct Call {
  const net::Request& req;
  Caller caller;
  Path path;
  const Kind* kind = nullptr;
  Selector labels;  // labelSelector
  Selector fields;  // fieldSelector: the fields field_supported() names
  size_t limit = kDefaultPage;
  JobId before = 0;  // 0: from the newest record
  bool table = false;
  std::string include;
  // Whether an object of namespace `ns` belongs in the answer (the path's, the caller's).
  bool shows(const std::string& ns) const {
    return (path.ns.empty() || ns == path.ns) && caller.sees(ns);
  }
  bool shows(const json& object) const;  // shows() its namespace, and the selectors match
};
// limit, continue, labelSelector, fieldSelector, the Table asked for; "" or what is wrong.
std::string read_query(Call& c);

// Objects into a List or a Table, one page.
class Listing {
 public:
  Listing(const Call& c, const std::vector<Column>& columns) : c_(c), columns_(columns) {}
  // Adds it when the selectors take it (cells: its row, computed only for a Table).
  template <class Cells>
  void add(json&& object, Cells cells) {
    if (!c_.shows(object)) return;
    items_.push_back(c_.table ? table_row(cells(), object, c_.include) : std::move(object));
  }
  size_t size() const { return items_.size(); }
  bool full() const { return items_.size() >= c_.limit; }
  // `rv`: the list's resourceVersion, where a watch of it may start (0: none, "").
  json done(const std::string& list_kind, const std::string& next, uint64_t rv = 0);

 private:
  const Call& c_;
  const std::vector<Column>& columns_;
  json items_ = json::array();
};
// One object: itself, or a Table of its one row.
json single(const Call& c, const std::vector<Column>& columns, json object, json cells);
// "jobs.batch \"x\" not found" and its kin.
std::string resource_text(const Call& c);
// 409 Conflict's words for a write whose resourceVersion is not the object's
// (kube_kueue_write.cc).
std::string conflict_text(const Call& c, const std::string& name);
// What a whole job object in a request (an update's, a server-side apply's) must be besides its
// fields' values: the path's kind, its name and namespace. "" when it is; else why (400
// BadRequest, in the API server's words; kube_job_change.cc).
std::string job_body_mismatch(const json& body, const Call& c, const JobShape& shape);
// The suspend flag of such an object, where its kind keeps it, into out->suspend when it has
// one: false with 422 written when it is not a boolean (kube_job_change.cc).
bool read_suspend_flag(const Call& c, const json& body, JobPatch* out, net::Response& res);
json not_found(const Call& c, const std::string& name);
json forbidden(const Call& c, const std::string& verb, const std::string& ns);
// A refused patch as a Status: 422 Invalid with one FieldValueForbidden cause per field.
json patch_refusal(const Call& c, const PatchRefusal& why);

}  // namespace sluice::server::kube
