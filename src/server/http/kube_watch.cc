// Watches of the Kubernetes API (docs/kubernetes.md): the request (on a worker, briefly: it
// checks the caller and the query, answers the stream's head and hands the watch to the watch
// thread), and the events' shapes. The thread that feeds them is kube_watch_loop.cc.
#include "server/http/kube_watch.h"

#include "server/http/reply.h"
#include "server/server.h"

namespace sluice::server {

using nlohmann::json;

namespace kube {

namespace {
std::optional<int64_t> parse_count(const std::string& text) {
  if (text.empty() || text.size() > 18) return std::nullopt;  // below 2^63
  int64_t n = 0;
  for (char ch : text) {
    if (ch < '0' || ch > '9') return std::nullopt;
    n = n * 10 + (ch - '0');
  }
  return n;
}

bool flag(const net::Request& req, const char* name) {
  return flag_true(req.get_param_value(name));
}

const std::vector<Column>& columns_of(const Watch& w) {
  if (w.kind->resource == "pods") return pod_columns();
  if (job_kind(*w.kind)) return kind_columns(*w.kind);
  return w.kind->resource == "jobs" ? job_columns() : workload_columns();
}
}  // namespace

bool flag_true(std::string_view v) {
  return v == "true" || v == "True" || v == "TRUE" || v == "t" || v == "T" || v == "1";
}

std::string read_watch_query(const net::Request& req, Watch& w) {
  const std::string rv = req.get_param_value("resourceVersion");
  w.initial = rv.empty() || rv == "0";
  if (flag(req, "sendInitialEvents")) {
    if (!flag(req, "allowWatchBookmarks"))
      return "sendInitialEvents requires allowWatchBookmarks=true";
    w.initial = true;
    w.send_initial_events = true;
  }
  if (!rv.empty() && rv != "0") {
    auto n = parse_count(rv);
    if (!n) return "resourceVersion: expected a version a list or a watch gave";
    w.from = static_cast<uint64_t>(*n);
  }
  const std::string match = req.get_param_value("resourceVersionMatch");
  if (!match.empty() && match != "NotOlderThan")
    return "resourceVersionMatch: a watch takes NotOlderThan only";
  int64_t seconds = kMaxWatchSeconds;
  if (req.has_param("timeoutSeconds")) {
    auto n = parse_count(req.get_param_value("timeoutSeconds"));
    if (!n) return "timeoutSeconds: expected a non-negative integer";
    if (*n > 0) seconds = std::min(*n, kMaxWatchSeconds);
  }
  w.until = WatchClock::now() + std::chrono::seconds(seconds);
  w.last_sent = WatchClock::now();
  w.bookmarks = flag(req, "allowWatchBookmarks");
  return {};
}

bool Watch::shows(const json& object) const {
  // A JobSet's watch sees the jobs created as JobSets only (kube_watch_object).
  if (kind && object.value("kind", "") != kind->kind) return false;
  const json& m = object["metadata"];
  const std::string object_ns = m.value("namespace", "");
  if ((!kind || kind->namespaced) && ((!ns.empty() && object_ns != ns) || !caller.sees(object_ns)))
    return false;
  if (!labels.matches(m.value("labels", json::object()))) return false;
  return fields_match(fields, object);
}

std::string watch_event(const Watch& w, const char* type, const json& object, const json& cells,
                        const json* columns) {
  // Written by hand: "type" first, as the API server writes it, and no copy of the object.
  std::string out = "{\"type\":\"";
  out += type;
  out += "\",\"object\":";
  if (w.table && columns) {
    json t = table({}, json::array({table_row(cells, object, w.include)}), w.include);
    t["columnDefinitions"] = *columns;
    out += t.dump();
  } else if (w.table)
    out +=
        table(columns_of(w), json::array({table_row(cells, object, w.include)}), w.include).dump();
  else
    out += object.dump();
  out += "}\n";
  return out;
}

std::string bookmark_event(const Watch& w, uint64_t rv, bool initial_end) {
  json meta = {{"resourceVersion", std::to_string(rv)}};
  if (initial_end) meta["annotations"] = {{"k8s.io/initial-events-end", "true"}};
  return json{{"type", "BOOKMARK"},
              {"object",
               {{"kind", w.kind->kind},
                {"apiVersion", w.kind->api_version()},
                {"metadata", std::move(meta)}}}}
             .dump() +
         "\n";
}

std::string expired_event(uint64_t rv) {
  return json{{"type", "ERROR"},
              {"object", status_object(410,
                                       "too old resource version: " + std::to_string(rv) +
                                           " (the server keeps the last changes only, and "
                                           "none from before it started): list again",
                                       "Expired")}}
             .dump() +
         "\n";
}

}  // namespace kube

// GET .../jobs?watch=true (and workloads): on a worker, briefly.
void Server::kube_watch(const net::Request& req, const net::Responder& r) {
  net::Response res;
  auto caller = caller_of(req, res);
  if (!caller) {
    kube::to_status(res);
    return r.send(std::move(res));
  }
  auto fail = [&](int code, const std::string& why) {
    kube::fail_status(res, code, why);
    r.send(std::move(res));
  };
  auto path = kube::parse_path(req.path);
  const kube::Kind* kind =
      path ? kube::find_kind(path->group, path->version, path->resource) : nullptr;
  if (!kind || !path->sub.empty() || (!path->ns.empty() && !kind->namespaced))
    return fail(404, "the server could not find the requested resource");
  kube::Call c{.req = req, .caller = *caller, .path = *path, .kind = kind};
  if (kind->resource != "jobs" && kind->resource != "workloads" && kind->resource != "pods" &&
      !kube::job_kind(*kind) && !kube::snapshot_kind(*kind))
    return fail(405,
                "sluice serves watch on jobs, jobsets, pytorchjobs, mpijobs, workloads, pods, "
                "nodes, clusterqueues and localqueues only, not on " +
                    kube::resource_text(c) + " (docs/kubernetes.md)");
  if (!c.path.ns.empty() && !c.caller.sees(c.path.ns))
    return r.send({.status = 403,
                   .body = kube::forbidden(c, "watch", c.path.ns).dump(),
                   .content_type = "application/json"});
  auto w = std::make_shared<kube::Watch>();
  if (auto why = kube::read_query(c); !why.empty()) return fail(400, why);
  if (auto why = kube::read_watch_query(req, *w); !why.empty()) return fail(400, why);
  w->kind = kind;
  w->caller = std::move(c.caller);
  w->ns = c.path.ns;
  w->labels = std::move(c.labels);
  w->fields = std::move(c.fields);
  if (!c.path.name.empty()) w->fields.equal.emplace_back("metadata.name", c.path.name);
  w->table = c.table;
  w->include = c.include;
  w->pods_seed = !w->initial;
  {
    std::lock_guard lk(watch_mu_);
    if (watches_.size() >= kube::kMaxWatches) {
      kube::fail_status(res, 429,
                        "too many watches open (" + std::to_string(kube::kMaxWatches) +
                            "): try again later, or list");
      res.set_header("Retry-After", "5");
      return r.send(std::move(res));
    }
    net::Response head;
    head.content_type = "application/json";
    w->out = r.stream(std::move(head));
    if (!w->out) return;
    watches_.push_back(w);
    state_->set_journal_watched(true);
  }
  // Under the state lock: the watch thread is either waiting (and wakes) or has yet to look at
  // the watches (and finds this one).
  std::lock_guard lk(state_->mu());
  state_->journal_cv().notify_all();
}

}  // namespace sluice::server
