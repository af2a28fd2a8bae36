// A small JSON state file that the agent rewrites many times a second (pods.json, exits.json,
// lease.json).
//
// Writing a temporary file and renaming it over the old one allocates and frees an inode per
// save; at a thousand pod starts a second that churn made ext4's inode allocator the agent's
// main cost. StateFile instead keeps two slots, PATH.0 and PATH.1, and overwrites the older one
// with {"seq":N,"len":L,"fnv":"H","doc":...}: L and H are the length and FNV-1a hash of the
// document's text, so a slot whose save was torn by a crash, or that a reader caught half
// written, is unreadable and load() falls back to the other one (the state of the save before,
// which is what a crash before the rename gave).
//
// The slot is overwritten in place, not truncated first: on ext4, truncating a file to zero
// frees its blocks and makes its close() start writeback (auto_da_alloc), and the two were two
// thirds of a save's cost. A shorter text is padded with spaces to the slot's old length (JSON
// allows them after the document) unless the slot would stay more than twice as long, and then
// it is cut after the write. In-place writes go only over a slot this object wrote or load()
// checked: a slot of unknown content (an older agent's, without the hash, or unreadable) is
// truncated and written whole once, so no torn write can mix a new text with an unhashed old one.
// A legacy single PATH (an older agent's) is read when no slot is.
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
  // Per slot: its length on disk when this object wrote it or load() checked its hash; -1 when
  // its content is not known to be hashed (it is then truncated before it is written).
  int64_t size_[2] = {-1, -1};
};

}  // namespace sluice::agent
