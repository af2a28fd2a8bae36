#pragma once
// Watches of the Kubernetes API (kube_watch.cc, docs/kubernetes.md): each is a chunked stream
// of watch events ({"type": "ADDED", "object": {...}} a line) that one thread of the server
// (Server::kube_watch_loop) feeds from the state's change journal. A watch holds a connection
// and a place among at most kMaxWatches, never a worker or the state lock while it waits.
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "net/responder.h"
#include "server/http/kube.h"

namespace sluice::server::kube {

// Open watches at most; beyond, a watch request is answered 429 TooManyRequests (Retry-After).
inline constexpr size_t kMaxWatches = 256;
// A watch without timeoutSeconds ends after this long, and none lasts longer (the API server
// ends its watches after 30 to 60 minutes); clients watch again from their last version.
inline constexpr int64_t kMaxWatchSeconds = 1800;
// With allowWatchBookmarks, a BOOKMARK after this long without an event.
inline constexpr auto kBookmarkEvery = std::chrono::seconds(10);
// Per watch and round of the watch thread: at most this many changed jobs, or job records
// looked at for its initial ADDED events; and no new events while more than a quarter of
// net::Stream::kMaxQueuedBytes wait for its client. So a large burst goes out in steps that a
// client reading at its pace takes without being closed for falling behind.
inline constexpr size_t kPerRound = 1'000;

using WatchClock = std::chrono::steady_clock;

struct Watch {
  // batch/v1 jobs, Kueue workloads, pods (from their jobs' changes); nodes, clusterqueues,
  // localqueues (from the Snapshots of their lists).
  const Kind* kind = nullptr;
  Caller caller;
  std::string ns;  // the path's namespace; "" every visible one
  Selector labels, fields;
  bool table = false;  // kubectl get -w: each event's object is a Table of one row
  std::string include;
  bool bookmarks = false;
  bool send_initial_events = false;  // then a BOOKMARK marks the initial events' end
  // resourceVersion "" or "0": ADDED events for the current objects first (newest first from
  // `initial_before`, 0: from the newest), then the changes after `from`.
  bool initial = false;
  JobId initial_before = 0;
  uint64_t from = 0;  // events after this resourceVersion
  WatchClock::time_point until, last_sent;
  net::Stream out;
  // A pods watch: per job, the uid of each pod (by index) it sent and has not sent DELETED
  // for ("" none); a job it never sent seeds it with its last run's pods, which its client may
  // have listed. Emptied as jobs go.
  std::unordered_map<JobId, std::vector<std::string>> pods_sent;
  bool pods_seed = false;  // the watch began after a list (from a version), not with ADDED

  bool shows(const json& object) const;  // its namespace visible, the selectors match
};

// An object a round of the watch thread built, and its Table row. `matched`: already checked
// against the watch's selectors (a pod's DELETED, which names the pod only).
struct Built {
  json object, cells;
  bool matched = false;
};

// The objects of a kind whose changes the change journal does not record (nodes, ClusterQueues,
// LocalQueues): each round that a watch of the kind is open (and for kSnapshotLinger after),
// the watch thread takes the kind's list (the very answer of GET, as a Table with the objects)
// and gives each object that changed the journal's next version (ChangeJournal::bump). A watch
// from version N gets the objects whose version is above N: MODIFIED (ADDED when new since the
// first snapshot), DELETED for one gone. A watch from a version before the first snapshot (the
// kind was not watched then) gets every object once, MODIFIED: its client's copy is brought up
// to date, as after a relist.
inline constexpr auto kSnapshotLinger = std::chrono::minutes(10);
struct Snapshot {
  struct Entry {
    std::string text;  // the object without its resourceVersion: what a change is seen on
    uint64_t rv = 0;
    bool added = false;  // new since the first snapshot
    bool gone = false;
    Built built;
  };
  std::map<std::string, Entry> objects;  // by namespace/name
  json columns;                          // the Table's columnDefinitions
  uint64_t first_rv = 0;                 // the first snapshot's version; 0: none taken
  WatchClock::time_point until;          // taken each round until then
  // Takes a new list (a Table with includeObject=Object): versions the changes with `bump`.
  void update(const json& table, const std::function<uint64_t()>& bump);
};
struct Snapshots {
  std::map<std::string, Snapshot> by_kind;  // by resource
  WatchClock::time_point taken;             // the last round that took lists
};
// What one round writes to one watch: its events (type, object), or its 410.
struct WatchOut {
  std::vector<std::pair<const char*, const Built*>> events;
  bool expired = false, initial_done = false;
  uint64_t expired_rv = 0;
  const json* columns = nullptr;  // a snapshot kind's Table columns (else the kind's own)
};

// kubectl logs -f of a running pod (kube_logs.cc): each round of the watch thread asks the
// pod's agent for what its log gained since `offset` (one request in flight), the answer is
// written to the stream, and the stream ends once the pod's run has ended and a read after
// that found nothing more (or the pod started another run, or the job is gone). It counts
// among the kMaxWatches.
struct LogFollow {
  JobId job = 0;
  int32_t pod = 0;
  uint64_t run = 0;
  std::string node;
  int64_t offset = 0;
  int64_t tail_lines = -1;  // the first answer's lines only
  bool first = true, asking = false, asked_after_end = false, drained = false;
  net::Responder responder;  // its stream's: a reader's send() after stream() is ignored
  net::Stream out;
  explicit LogFollow(net::Responder r) : responder(std::move(r)) {}
};

// A query flag as the API server reads it (Go's strconv.ParseBool): "true", "True", "TRUE",
// "t", "T" or "1" (the Python client sends watch=True).
bool flag_true(std::string_view value);

// Whether the watch's objects come from a Snapshot (nodes, clusterqueues, localqueues), or
// from the jobs' changes (jobs, workloads, pods).
bool snapshot_kind(const Kind& k);

// The query of a watch request into `w`; "" or what is wrong (a 400).
std::string read_watch_query(const net::Request& req, Watch& w);
// One watch event as a line; `object` is shown as a Table row when the watch wants one.
std::string watch_event(const Watch& w, const char* type, const json& object, const json& cells,
                        const json* columns = nullptr);
// BOOKMARK (the version reached) and ERROR (410 Expired) events.
// `initial_end`: the BOOKMARK that ends sendInitialEvents' events.
std::string bookmark_event(const Watch& w, uint64_t rv, bool initial_end);
std::string expired_event(uint64_t rv);

}  // namespace sluice::server::kube
