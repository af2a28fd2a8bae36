// The watch thread (docs/kubernetes.md): it waits on the state's change journal, and in each
// round, under the state lock, builds the objects that changed after the versions its watches
// reached (once per job and kind, however many watch them) and a page of initial ADDED events
// for new watches; then, without the lock, writes each watch its events, bookmarks, the 410 of
// a watch from a version the journal no longer holds, and ends the watches whose time is up or
// whose client left. Writes never block (net::Stream queues them).
#include <algorithm>
#include <map>

#include "server/http/kube_watch.h"
#include "server/server.h"

namespace sluice::server {

using nlohmann::json;

namespace {

using kube::Built;

// A job dropped from memory: what a DELETED event can still say of it.
Built dropped(const kube::Watch& w, const ChangeJournal::Change& c) {
  JobRecord r;
  r.job.id = c.id;
  r.job.name = c.name;
  // A JobSet, PyTorchJob or MPIJob is named as its job is; its kind is not known any more.
  const bool jobs = w.kind->resource == "jobs" || kube::job_kind(*w.kind);
  Built b;
  b.object["apiVersion"] = w.kind->api_version();
  b.object["kind"] = w.kind->kind;
  b.object["metadata"] = {{"name", jobs ? c.name : kube::workload_name(r)},
                          {"namespace", c.ns},
                          {"resourceVersion", std::to_string(c.rv)}};
  b.cells = json::array();
  const size_t n = (kube::job_kind(*w.kind) ? kube::kind_columns(*w.kind)
                    : jobs                  ? kube::job_columns()
                                            : kube::workload_columns())
                       .size();
  b.cells.push_back(b.object["metadata"]["name"]);
  for (size_t i = 1; i < n; ++i) b.cells.push_back("");
  return b;
}

}  // namespace

kube::Built Server::kube_watch_object(const kube::Watch& w, const JobRecord& r, TimeNs now) const {
  const Config& cfg = state_->config();
  Built b;
  if (w.kind->resource == "jobs") {
    b.object = kube::job_object(r, cfg, now);
    b.cells = kube::job_row(r, b.object, now);
  } else if (kube::job_kind(*w.kind)) {
    // Another kind's job: no object of this kind (Watch::shows drops it).
    if (!kube::created_as(r, *w.kind)) return {.object = {{"kind", ""}}};
    b.object = kube::kind_object(r, *w.kind);
    b.cells = kube::kind_row(r, *w.kind, b.object, now);
  } else {
    b.object = kube::workload_object(r, cfg, kube_why_pending(r));
    b.cells = kube::workload_row(r, b.object, now);
  }
  return b;
}

void Server::kube_watch_loop() {
  std::unique_lock lk(state_->mu());
  bool more = false;
  while (!stop_) {
    state_->journal_cv().wait_for(
        lk, more ? std::chrono::milliseconds(20) : std::chrono::milliseconds(1000));
    if (stop_) break;
    kube_watch_snapshots(lk);
    kube_follow_round();
    more = kube_watch_round(lk);
    std::lock_guard wl(watch_mu_);  // a watch added meanwhile set it itself, under watch_mu_
    state_->set_journal_watched(!watches_.empty() || !follows_.empty());
  }
  lk.unlock();
  std::lock_guard wl(watch_mu_);
  for (auto& w : watches_) w->out.end();
  watches_.clear();
  for (auto& f : follows_) f->out.end();
  follows_.clear();
}

// One round (called and returning with `lk` held); true when a watch has initial events left.
bool Server::kube_watch_round(std::unique_lock<std::mutex>& lk) {
  std::vector<std::shared_ptr<kube::Watch>> ws;
  {
    std::lock_guard wl(watch_mu_);
    std::erase_if(watches_, [](const auto& w) { return !w->out.open(); });
    ws = watches_;
  }
  if (ws.empty()) return false;
  const TimeNs now = now_ns();
  const ChangeJournal& j = state_->journal();
  const uint64_t cur = j.current();
  // Per watch: its events' objects (pointers into `built` and `initial`), or its 410.
  std::vector<kube::WatchOut> outs(ws.size());
  std::map<uint64_t, std::vector<ChangeJournal::Change>> by_from;
  std::map<std::pair<JobId, const kube::Kind*>, Built> built;  // (job, the kind it is built as)
  std::vector<std::unique_ptr<Built>> initial;
  bool more = false;
  for (size_t i = 0; i < ws.size(); ++i) {
    kube::Watch& w = *ws[i];
    if (w.out.queued() > net::Stream::kMaxQueuedBytes / 4) {
      more = true;  // the client has not read the last round yet
      continue;
    }
    if (kube::snapshot_kind(*w.kind) && (w.initial || j.valid(w.from))) {
      kube_watch_snapshot(w, outs[i]);
      continue;
    }
    if (w.initial) {
      if (w.initial_before == 0) w.from = cur;
      more |= kube_watch_initial(w, now, initial, outs[i].events);
      outs[i].initial_done = !w.initial;
      continue;
    }
    if (!j.valid(w.from)) {
      outs[i].expired = true;
      outs[i].expired_rv = w.from;
      continue;
    }
    if (w.from == cur) continue;
    auto [at, fresh] = by_from.try_emplace(w.from);
    if (fresh) at->second = j.since(w.from);
    const auto& changes = at->second;
    // The first kPerRound by version: a job whose last change is later comes next round.
    const size_t n = std::min(changes.size(), kube::kPerRound);
    for (size_t k = 0; k < n; ++k) {
      const auto& c = changes[k];
      if (w.kind->resource == "pods") {
        kube_watch_pods(w, c, now, initial, outs[i]);
        continue;
      }
      auto [b, added] = built.try_emplace({c.id, w.kind});
      if (added) {
        const JobRecord* r = state_->find(c.id);
        b->second = r ? kube_watch_object(w, *r, now) : dropped(w, c);
      }
      outs[i].events.emplace_back(c.gone ? "DELETED" : c.added ? "ADDED" : "MODIFIED", &b->second);
    }
    w.from = n < changes.size() ? changes[n - 1].rv : cur;
    more |= n < changes.size();
  }
  lk.unlock();
  for (size_t i = 0; i < ws.size(); ++i) kube_watch_send(*ws[i], outs[i]);
  lk.lock();
  return more;
}

// Pages of ADDED events for a watch that starts with the current objects, newest first
// (under the state lock). True when some are left for the next round.
bool Server::kube_watch_initial(
    kube::Watch& w, TimeNs now, std::vector<std::unique_ptr<kube::Built>>& keep,
    std::vector<std::pair<const char*, const kube::Built*>>& events) const {
  const auto& recs = state_->records();
  auto it = std::make_reverse_iterator(w.initial_before ? recs.lower_bound(w.initial_before)
                                                        : recs.end());
  for (size_t n = 0; it != recs.rend(); ++it, ++n) {
    const JobRecord& r = it->second;
    if (n == kube::kPerRound) {
      w.initial_before = r.job.id + 1;
      return true;
    }
    if (!kube::listed(r) || !w.caller.sees(r.job.namespace_)) continue;
    if (!w.ns.empty() && r.job.namespace_ != w.ns) continue;
    if (w.kind->resource == "pods") {
      kube_watch_initial_pods(w, r, now, keep, events);
      continue;
    }
    auto b = std::make_unique<kube::Built>(kube_watch_object(w, r, now));
    if (!w.shows(b->object)) continue;
    events.emplace_back("ADDED", b.get());
    keep.push_back(std::move(b));
  }
  w.initial = false;
  return false;
}

// Writes one watch its round (without the state lock), and ends it when its time is up.
void Server::kube_watch_send(kube::Watch& w, const kube::WatchOut& out) {
  const auto now = kube::WatchClock::now();
  if (out.expired) {
    w.out.write(kube::expired_event(out.expired_rv));
    return w.out.end();
  }
  std::string text;
  for (const auto& [type, b] : out.events) {
    if (!b->matched && !w.shows(b->object)) continue;
    text += kube::watch_event(w, type, b->object, b->cells, out.columns);
    if (text.size() < (64 << 10)) continue;
    w.out.write(std::move(text));
    text.clear();
    w.last_sent = now;
  }
  if (out.initial_done && w.send_initial_events) text += kube::bookmark_event(w, w.from, true);
  if (text.empty() && w.bookmarks && now - w.last_sent >= kube::kBookmarkEvery)
    text = kube::bookmark_event(w, w.from, false);
  if (!text.empty()) {
    w.out.write(std::move(text));
    w.last_sent = now;
  }
  if (now >= w.until) w.out.end();
}

}  // namespace sluice::server
