// A small JSON state file that the agent rewrites many times a second (pods.json, exits.json).
//
// Writing a temporary file and renaming it over the old one allocates and frees an inode per
// save; at a thousand pod starts a second that churn made ext4's inode allocator the agent's
// main cost. StateFile instead keeps two slots, PATH.0 and PATH.1, and overwrites the older one
// in place with {"seq": N, "doc": ...}. A save torn by a crash leaves that slot unparsable and
// load() falls back to the other one: the state of the save before, which is what a crash
// before the rename gave. A legacy single PATH (an older agent's) is read when no slot is.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace sluice::agent {

class StateFile {
 public:
  explicit StateFile(std::string path) : path_(std::move(path)) {}

  // The newest readable slot's document; nullopt when there is none (`why` says what was
  // unreadable, empty when nothing was there).
  std::optional<nlohmann::json> load(std::string* why);
  // Overwrites the older slot; false with `why` on an I/O error (the other slot is intact).
  bool save(const nlohmann::json& doc, std::string* why);
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  uint64_t seq_ = 0;          // of the newest slot written or loaded
  bool drop_legacy_ = false;  // load() read PATH itself: the first save removes it
};

}  // namespace sluice::agent
