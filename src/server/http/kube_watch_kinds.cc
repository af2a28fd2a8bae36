// Watches of the kinds beyond jobs and workloads (docs/kubernetes.md "Watch"): pods, from
// their jobs' changes (a job's change is its pods' change), and nodes, ClusterQueues and
// LocalQueues, whose changes the change journal does not record, from Snapshots of their
// lists (kube_watch.h). The watch thread (kube_watch_loop.cc) calls these.
#include <set>

#include "server/http/kube_watch.h"
#include "server/server.h"

namespace sluice::server {

using nlohmann::json;

namespace kube {

bool snapshot_kind(const Kind& k) {
  if (k.group.empty()) return k.resource == "nodes";
  return k.group == kKueueGroup && (k.resource == "clusterqueues" || k.resource == "localqueues");
}

void Snapshot::update(const json& table, const std::function<uint64_t()>& bump) {
  const bool first = first_rv == 0;
  uint64_t rv = 0;  // one version for every change of this snapshot, taken on the first
  const auto version = [&] { return rv ? rv : (rv = bump()); };
  columns = table.value("columnDefinitions", json::array());
  std::set<std::string> seen;
  for (const auto& row : table.value("rows", json::array())) {
    json object = row.value("object", json::object());
    json& m = object["metadata"];
    const std::string key = m.value("namespace", "") + "/" + m.value("name", "");
    seen.insert(key);
    m.erase("resourceVersion");
    std::string text = object.dump() + row.value("cells", json::array()).dump();
    auto [it, fresh] = objects.try_emplace(key);
    Entry& e = it->second;
    if (!fresh && !e.gone && e.text == text) continue;
    e.added = !first && (fresh || e.gone);
    e.gone = false;
    e.text = std::move(text);
    e.rv = version();
    m["resourceVersion"] = std::to_string(e.rv);
    e.built = {std::move(object), row.value("cells", json::array()), false};
  }
  for (auto& [key, e] : objects) {
    if (e.gone || seen.count(key)) continue;
    e.gone = true;
    e.rv = version();
    e.built.object["metadata"]["resourceVersion"] = std::to_string(e.rv);
  }
  if (first) first_rv = version();
}

}  // namespace kube

namespace {

// GET of the kind's list, as a Table with the objects, by an admin: what a watch of the kind
// compares (a watch shows what its caller may see of it).
json list_of(const kube::Kind& k,
             const std::function<void(const kube::Call&, net::Response&)>& get) {
  net::Request req;
  req.method = "GET";
  req.headers = {{"Accept", "application/json;as=Table;v=v1;g=meta.k8s.io"}};
  req.params = {{"includeObject", "Object"}};
  kube::Call c{.req = req, .caller = Caller{}, .path = {}, .kind = &k};
  c.path.group = k.group;
  c.path.version = k.version;
  c.path.resource = k.resource;
  if (!kube::read_query(c).empty()) return json();
  net::Response res;
  get(c, res);
  if (res.status != 200) return json();
  return json::parse(res.body, nullptr, false);
}

}  // namespace

// Takes the lists of the snapshot kinds being watched (or watched less than kSnapshotLinger
// ago), without the state lock (each list takes it), then versions their changes under it.
void Server::kube_watch_snapshots(std::unique_lock<std::mutex>& lk) {
  const auto now = kube::WatchClock::now();
  std::vector<const kube::Kind*> due;
  {
    std::lock_guard wl(watch_mu_);
    if (!snapshots_) snapshots_ = std::make_shared<kube::Snapshots>();
    for (const auto& w : watches_)
      if (kube::snapshot_kind(*w->kind))
        snapshots_->by_kind[w->kind->resource].until = now + kube::kSnapshotLinger;
    if (now - snapshots_->taken < std::chrono::milliseconds(250)) return;
    for (const auto& k : kube::kinds())
      if (kube::snapshot_kind(k) && snapshots_->by_kind.count(k.resource) &&
          snapshots_->by_kind[k.resource].until > now)
        due.push_back(&k);
    snapshots_->taken = now;
  }
  if (due.empty()) return;
  std::vector<json> lists;
  lk.unlock();
  for (const kube::Kind* k : due)
    lists.push_back(list_of(*k, [&](const kube::Call& c, net::Response& res) {
      if (k->resource == "nodes") return kube_nodes(c, res);
      kube_config_objects(c, res);
    }));
  lk.lock();
  for (size_t i = 0; i < due.size(); ++i) {
    if (!lists[i].is_object()) continue;
    snapshots_->by_kind[due[i]->resource].update(lists[i],
                                                 [this] { return state_->journal().bump(); });
  }
}

// A snapshot watch's events after its version (under the state lock).
void Server::kube_watch_snapshot(kube::Watch& w, kube::WatchOut& out) const {
  if (!snapshots_) return;
  auto it = snapshots_->by_kind.find(w.kind->resource);
  if (it == snapshots_->by_kind.end() || it->second.first_rv == 0) return;
  const kube::Snapshot& s = it->second;
  out.columns = &s.columns;
  const bool all = w.initial || w.from < s.first_rv;
  uint64_t reached = w.from;
  for (const auto& [key, e] : s.objects) {
    reached = std::max(reached, e.rv);
    if (all ? e.gone : e.rv <= w.from) continue;
    const char* type = e.gone ? "DELETED" : (w.initial || e.added) ? "ADDED" : "MODIFIED";
    if (!e.built.object.is_object()) continue;
    out.events.emplace_back(type, &e.built);
  }
  out.initial_done = w.initial;
  w.initial = false;
  w.from = std::max(reached, state_->journal().current());
}

// A pods watch's ADDED events for one job's shown pods, its initial events (under the state
// lock).
void Server::kube_watch_initial_pods(
    kube::Watch& w, const JobRecord& r, TimeNs now, std::vector<std::unique_ptr<kube::Built>>& keep,
    std::vector<std::pair<const char*, const kube::Built*>>& events) const {
  const auto stopping = [&](size_t i) { return state_->pod_may_be_alive(r, i, now); };
  for (size_t i = 0; i < r.pods.size(); ++i) {
    if (!kube::pod_shown(r, i, stopping)) continue;
    auto b = std::make_unique<kube::Built>();
    b->object = kube::pod_object(r, i, state_->config());
    if (!w.shows(b->object)) continue;
    auto& sent = w.pods_sent[r.job.id];
    if (sent.size() <= i) sent.resize(i + 1);
    sent[i] = b->object["metadata"]["uid"].get<std::string>();
    b->cells = kube::pod_row(r, b->object, now);
    b->matched = true;
    events.emplace_back("ADDED", b.get());
    keep.push_back(std::move(b));
  }
}

// A pods watch's events for one changed job (under the state lock): each pod it shows now,
// ADDED when the watch has not sent that pod (that uid) yet, else MODIFIED; DELETED for a pod
// it sent that is no longer shown (or is another run's now, or no longer matches the
// selectors), and for every pod of a job gone.
void Server::kube_watch_pods(kube::Watch& w, const ChangeJournal::Change& c, TimeNs now,
                             std::vector<std::unique_ptr<kube::Built>>& keep,
                             kube::WatchOut& out) const {
  const JobRecord* r = state_->find(c.id);
  auto sent_it = w.pods_sent.find(c.id);
  if (sent_it == w.pods_sent.end()) {
    sent_it = w.pods_sent.try_emplace(c.id).first;
    // A job that existed when the watch began: its client may hold its last run's pods.
    if (w.pods_seed && r && !c.added)
      for (size_t i = 0; i < r->pods.size(); ++i)
        sent_it->second.push_back(
            kube::pod_object(*r, i, state_->config())["metadata"]["uid"].get<std::string>());
  }
  auto& sent = sent_it->second;
  const auto deleted = [&](size_t i) {
    auto b = std::make_unique<kube::Built>();
    b->object = {{"apiVersion", "v1"},
                 {"kind", "Pod"},
                 {"metadata",
                  {{"name", kube::pod_name(c.name, i)},
                   {"namespace", c.ns},
                   {"uid", sent[i]},
                   {"resourceVersion", std::to_string(c.rv)}}}};
    b->cells = json::array({b->object["metadata"]["name"], "", "", "", "", "", "", "", ""});
    b->matched = true;
    out.events.emplace_back("DELETED", b.get());
    keep.push_back(std::move(b));
    sent[i].clear();
  };
  const auto stopping = [&](size_t i) { return r && state_->pod_may_be_alive(*r, i, now); };
  const size_t n = r && !c.gone && kube::listed(*r) ? r->pods.size() : 0;
  for (size_t i = 0; i < std::max(n, sent.size()); ++i) {
    const bool shown = i < n && kube::pod_shown(*r, i, stopping);
    json o = shown ? kube::pod_object(*r, i, state_->config()) : json();
    const std::string uid = shown ? o["metadata"]["uid"].get<std::string>() : "";
    const bool matches = shown && w.shows(o);
    // Gone, another run's pod now, or no longer matching the selectors (status.phase=Running).
    if (i < sent.size() && !sent[i].empty() && (sent[i] != uid || !matches)) deleted(i);
    if (!matches) continue;
    if (sent.size() <= i) sent.resize(i + 1);
    const char* type = sent[i] == uid ? "MODIFIED" : "ADDED";
    sent[i] = uid;
    o["metadata"]["resourceVersion"] = std::to_string(c.rv);
    auto b = std::make_unique<kube::Built>();
    b->cells = kube::pod_row(*r, o, now);
    b->object = std::move(o);
    b->matched = true;
    out.events.emplace_back(type, b.get());
    keep.push_back(std::move(b));
  }
  if (c.gone || !r) w.pods_sent.erase(c.id);
}

}  // namespace sluice::server
