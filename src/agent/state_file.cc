#include "agent/state_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

namespace sluice::agent {

namespace {

std::string slot_path(const std::string& path, uint64_t seq) {
  return path + "." + std::to_string(seq % 2);
}

// The file's JSON, nullopt when it is missing (why stays empty) or unreadable (why says so).
std::optional<nlohmann::json> read_json(const std::string& path, std::string* why) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  try {
    return nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    *why += (why->empty() ? "" : "; ") + path + ": " + e.what();
    return std::nullopt;
  }
}

}  // namespace

std::optional<nlohmann::json> StateFile::load(std::string* why) {
  why->clear();
  std::optional<nlohmann::json> best;
  for (uint64_t slot = 0; slot < 2; ++slot) {
    const std::string p = slot_path(path_, slot);
    ::chmod(p.c_str(), 0600);  // an older agent wrote 0644; pods of other users may run here
    auto j = read_json(p, why);
    if (!j) continue;
    if (!j->is_object() || !j->contains("seq") || !(*j)["seq"].is_number_unsigned() ||
        !j->contains("doc")) {
      *why += (why->empty() ? "" : "; ") + p + ": not a state slot";
      continue;
    }
    const auto seq = (*j)["seq"].get<uint64_t>();
    if (!best || seq > seq_) {
      seq_ = seq;
      best = std::move((*j)["doc"]);
    }
  }
  if (!best) {  // an older agent's single file
    best = read_json(path_, why);
    drop_legacy_ = best.has_value();
  }
  return best;
}

bool StateFile::save(const nlohmann::json& doc, std::string* why) {
  const uint64_t seq = seq_ + 1;
  const std::string p = slot_path(path_, seq);
  // {"doc":...,"seq":N} without copying `doc` into a wrapper object (it is written per change).
  const std::string text = "{\"doc\":" + doc.dump() + ",\"seq\":" + std::to_string(seq) + "}\n";
  const int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    *why = "cannot open " + p + ": " + std::strerror(errno);
    return false;
  }
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      *why = "cannot write " + p + ": " + std::strerror(errno);
      ::close(fd);
      return false;
    }
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  seq_ = seq;
  if (drop_legacy_ && ::unlink(path_.c_str()) == 0) drop_legacy_ = false;
  return true;
}

}  // namespace sluice::agent
