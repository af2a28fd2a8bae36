#include "agent/log_cap.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace sluice::agent {

int64_t cap_log(const std::string& path, int64_t max_bytes, int64_t* size) {
  if (size) *size = 0;
  if (max_bytes <= 0) return 0;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return 0;
  if (size) *size = st.st_size;
  if (st.st_size <= max_bytes) return 0;
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return 0;
  const int64_t head = max_bytes / 2;
  int64_t dropped = 0;
  if (::fstat(fd, &st) == 0 && st.st_size > max_bytes && ::ftruncate(fd, head) == 0) {
    dropped = st.st_size - head;
    if (size) *size = head;
    const std::string line = "\n[sluice: this log passed its cap of " + std::to_string(max_bytes) +
                             " bytes (the agent's --pod-log-max-mib): " + std::to_string(dropped) +
                             " bytes after the first " + std::to_string(head) +
                             " were dropped here]\n";
    [[maybe_unused]] auto n = ::write(fd, line.data(), line.size());
  }
  ::close(fd);
  return dropped;
}

}  // namespace sluice::agent
