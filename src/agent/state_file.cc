#include "agent/state_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

#include "core/model/fnv1a.h"

namespace sluice::agent {

namespace {

std::string slot_path(const std::string& path, uint64_t seq) {
  return path + "." + std::to_string(seq % 2);
}

// FNV-1a, 64 bit, as 16 hex digits: the check of a slot's document text.
std::string fnv_hex(std::string_view text) {
  char out[17];
  std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(fnv1a64(text)));
  return out;
}

// The file's text; nullopt when it cannot be opened (missing).
std::optional<std::string> read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void add_why(std::string* why, const std::string& path, const std::string& what) {
  *why += (why->empty() ? "" : "; ") + path + ": " + what;
}

// The JSON of `text`, nullopt (and why) when it does not parse.
std::optional<nlohmann::json> parse(const std::string& text, const std::string& path,
                                    std::string* why) {
  try {
    return nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    add_why(why, path, e.what());
    return std::nullopt;
  }
}

// Whether a slot's `len` and `fnv` (when it has them: an older agent's slot has not) match the
// document's text, which follows the first "doc": of the slot.
bool hash_matches(const nlohmann::json& j, const std::string& text) {
  const auto len = j.find("len");
  const auto fnv = j.find("fnv");
  if (len == j.end() || fnv == j.end() || !len->is_number_unsigned() || !fnv->is_string())
    return false;
  const size_t at = text.find("\"doc\":");
  const auto n = len->get<uint64_t>();
  if (at == std::string::npos || at + 6 + n > text.size()) return false;
  return fnv_hex(std::string_view(text).substr(at + 6, n)) == fnv->get<std::string>();
}

// Writes all of `text` from the file's start; false on an error (errno set).
bool write_at(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n =
        ::pwrite(fd, text.data() + done, text.size() - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

std::optional<nlohmann::json> StateFile::load(std::string* why) {
  why->clear();
  std::optional<nlohmann::json> best;
  for (uint64_t slot = 0; slot < 2; ++slot) {
    const std::string p = slot_path(path_, slot);
    size_[slot] = -1;
    ::chmod(p.c_str(), 0600);  // an older agent wrote 0644; pods of other users may run here
    const auto text = read_text(p);
    if (!text) continue;
    auto j = parse(*text, p, why);
    if (!j) continue;
    if (!j->is_object() || !j->contains("seq") || !(*j)["seq"].is_number_unsigned() ||
        !j->contains("doc")) {
      add_why(why, p, "not a state slot");
      continue;
    }
    const bool hashed = j->contains("len") || j->contains("fnv");
    if (hashed && !hash_matches(*j, *text)) {
      add_why(why, p, "torn (its document does not match its hash)");
      continue;
    }
    if (hashed) size_[slot] = static_cast<int64_t>(text->size());
    const auto seq = (*j)["seq"].get<uint64_t>();
    if (!best || seq > seq_) {
      seq_ = seq;
      best = std::move((*j)["doc"]);
    }
  }
  if (!best) {  // an older agent's single file
    const auto text = read_text(path_);
    if (text) best = parse(*text, path_, why);
    drop_legacy_ = best.has_value();
  }
  return best;
}

bool StateFile::save(const nlohmann::json& doc, std::string* why) {
  const uint64_t seq = seq_ + 1;
  const std::string p = slot_path(path_, seq);
  int64_t& size = size_[seq % 2];
  const std::string body = doc.dump();
  std::string text = "{\"seq\":" + std::to_string(seq) + ",\"len\":" + std::to_string(body.size()) +
                     ",\"fnv\":\"" + fnv_hex(body) + "\",\"doc\":" + body + "}\n";
  const auto len = static_cast<int64_t>(text.size());
  // Padded to the slot's old length, or cut to this one after the write.
  const bool pad = size > len && size <= 2 * len + 4096;
  const bool cut = size > len && !pad;
  if (pad) text.append(static_cast<size_t>(size - len), ' ');
  const int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (size < 0 ? O_TRUNC : 0);
  const int fd = ::open(p.c_str(), flags, 0600);
  if (fd < 0) {
    *why = "cannot open " + p + ": " + std::strerror(errno);
    return false;
  }
  size = -1;  // unknown until the write is whole
  if (!write_at(fd, text) || (cut && ::ftruncate(fd, len) != 0)) {
    *why = "cannot write " + p + ": " + std::strerror(errno);
    ::close(fd);
    return false;
  }
  ::close(fd);
  size = cut ? len : static_cast<int64_t>(text.size());
  seq_ = seq;
  if (drop_legacy_ && ::unlink(path_.c_str()) == 0) drop_legacy_ = false;
  return true;
}

}  // namespace sluice::agent
