#pragma once
// The changes of job records in the order the state made them, for the Kubernetes API's
// resourceVersion and watch (docs/kubernetes.md). Every change of a record the state flushes
// gets the next resourceVersion; a watch from resourceVersion N reads what changed after N,
// one entry per job (its last change: a watcher sees the latest object, as after a relist).
// Bounded: the oldest entries go beyond `capacity`, and a watch from before them is told so
// (Expired, 410), as the API server's watch cache does. The first resourceVersion is the
// server's start time in microseconds, so that one a client kept from an earlier process is
// older than any this one gives out (Expired: the client relists) rather than misread.
// Not thread-safe: the state's lock guards it.
#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/model/job.h"

namespace sluice::server {

class ChangeJournal {
 public:
  struct Change {
    uint64_t rv = 0;
    JobId id = 0;
    bool added = false;  // the job's first change (its submission, or first after a restart)
    bool gone = false;   // cancelled or dropped: a DELETED event, and no further change
    std::string ns, name;
  };
  explicit ChangeJournal(uint64_t first_rv, size_t capacity = 100'000)
      : first_(first_rv), rv_(first_rv), capacity_(capacity) {}

  // Jobs with lower ids existed before this server started (recovered): their first change
  // is not an ADDED one.
  void set_first_new_job(JobId id) { first_new_job_ = id; }
  // A change of job `id` (`gone`: it left the API); ignored for a job already gone.
  void record(JobId id, const std::string& ns, const std::string& name, bool gone);
  // The record is dropped from memory: forgets it (a DELETED change unless it was gone).
  void erase(JobId id, const std::string& ns, const std::string& name);
  uint64_t current() const { return rv_; }
  // The next version for a change the journal does not record (a node's, a queue's: the
  // Kubernetes API's watch of those kinds, kube_watch.h): later versions stay later.
  uint64_t bump() { return ++rv_; }
  // The resourceVersion of the job's last change; the first one for a job unchanged since the
  // server started.
  uint64_t rv_of(JobId id) const;
  // Whether a watch may start from `rv`: not older than the oldest entry kept, not newer than
  // current().
  bool valid(uint64_t rv) const { return rv >= oldest_ && rv <= rv_; }
  // What changed after `rv` (valid(rv) must hold): one entry per job, its last, by rv; `added`
  // when its first change came after `rv`.
  std::vector<Change> since(uint64_t rv) const;

 private:
  struct Last {
    uint64_t rv = 0;
    bool gone = false;
  };
  uint64_t first_;
  uint64_t rv_;
  uint64_t oldest_ = first_;  // the rv before the oldest entry kept: a watch may start there
  size_t capacity_;
  JobId first_new_job_ = 0;
  std::deque<Change> log_;
  std::unordered_map<JobId, Last> last_;
};

}  // namespace sluice::server
