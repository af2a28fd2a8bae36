#include "server/change_journal.h"

#include <algorithm>

namespace sluice::server {

void ChangeJournal::record(JobId id, const std::string& ns, const std::string& name, bool gone) {
  auto [it, first] = last_.try_emplace(id);
  if (it->second.gone) return;
  it->second = {++rv_, gone};
  log_.push_back({rv_, id, first && id >= first_new_job_, gone, ns, name});
  while (log_.size() > capacity_) {
    oldest_ = log_.front().rv;
    log_.pop_front();
  }
}

void ChangeJournal::erase(JobId id, const std::string& ns, const std::string& name) {
  auto it = last_.find(id);
  const bool was_gone = it != last_.end() && it->second.gone;
  if (!was_gone) record(id, ns, name, true);
  last_.erase(id);
}

uint64_t ChangeJournal::rv_of(JobId id) const {
  auto it = last_.find(id);
  return it == last_.end() ? first_ : it->second.rv;
}

std::vector<ChangeJournal::Change> ChangeJournal::since(uint64_t rv) const {
  // The entries after rv, the last ones of the log (bump() leaves gaps between versions).
  const auto after = std::upper_bound(log_.begin(), log_.end(), rv,
                                      [](uint64_t v, const Change& c) { return v < c.rv; });
  const auto n = static_cast<size_t>(log_.end() - after);
  std::unordered_map<JobId, size_t> last_at;  // id -> index of its last entry
  std::unordered_map<JobId, bool> added;
  for (size_t i = log_.size() - n; i < log_.size(); ++i) {
    last_at[log_[i].id] = i;
    if (log_[i].added) added[log_[i].id] = true;
  }
  std::vector<Change> out;
  out.reserve(last_at.size());
  for (size_t i = log_.size() - n; i < log_.size(); ++i) {
    const Change& c = log_[i];
    if (last_at[c.id] != i) continue;
    out.push_back(c);
    out.back().added = added.count(c.id) > 0;
  }
  return out;
}

}  // namespace sluice::server
