#include "agent/identity.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string_view>

#include "secret/secret.h"

namespace sluice::agent {

namespace {

std::string errno_text() {
  return std::strerror(errno);
}

// An open file description lock on the whole file (F_OFD_*): held per open file, so the
// fencer's test below sees it from another process, and it goes with the agent's last fd.
struct flock whole_file(short type) {
  struct flock fl {};
  fl.l_type = type;
  fl.l_whence = SEEK_SET;
  return fl;
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

Result<std::string> read_or_make_secret(const std::string& path, size_t min_chars) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0 && errno == ENOENT) {
    // O_EXCL: two starts racing cannot both write one.
    const std::string fresh = secret::random_hex(32);
    fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) return Error{"cannot create " + path + ": " + errno_text()};
    const std::string line = fresh + "\n";
    const bool ok = ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size()) &&
                    ::fsync(fd) == 0;
    ::close(fd);
    if (!ok) return Error{"cannot write " + path + ": " + errno_text()};
    return fresh;
  }
  if (fd < 0) return Error{"cannot read " + path + ": " + errno_text()};
  struct stat st {};
  std::string text;
  if (::fstat(fd, &st) == 0 && (st.st_mode & 077) == 0) {
    char buf[512];
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) text.assign(buf, static_cast<size_t>(n));
  } else {
    ::close(fd);
    return Error{path + " is readable by other users: chmod 600 it (it is a secret)"};
  }
  ::close(fd);
  text = trim(text);
  if (text.size() < min_chars)
    return Error{path + ": expected a secret of at least " + std::to_string(min_chars) +
                 " characters; remove the file to make a new one"};
  return text;
}

Result<AgentIdentity> AgentIdentity::open(const std::string& state_dir) {
  AgentIdentity id;
  const std::string lock_path = state_dir + "/agent.lock";
  id.lock_fd_ = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (id.lock_fd_ < 0) return Error{"cannot open " + lock_path + ": " + errno_text()};
  struct flock fl = whole_file(F_WRLCK);
  if (::fcntl(id.lock_fd_, F_OFD_SETLK, &fl) != 0)
    return Error{"another agent runs on the state directory " + state_dir +
                 " (it holds agent.lock); one agent per state directory"};
  auto cred = read_or_make_secret(state_dir + "/node-credential", 32);
  if (!cred) return Error{cred.error()};
  id.credential_ = std::move(*cred);
  auto key = read_or_make_secret(state_dir + "/pod-token.key", 32);
  if (!key) return Error{key.error()};
  id.pod_key_ = std::move(*key);
  return id;
}

AgentIdentity::AgentIdentity(AgentIdentity&& o) noexcept
    : lock_fd_(o.lock_fd_), credential_(std::move(o.credential_)), pod_key_(std::move(o.pod_key_)) {
  o.lock_fd_ = -1;
}

AgentIdentity& AgentIdentity::operator=(AgentIdentity&& o) noexcept {
  if (this != &o) {
    if (lock_fd_ >= 0) ::close(lock_fd_);
    lock_fd_ = o.lock_fd_;
    o.lock_fd_ = -1;
    credential_ = std::move(o.credential_);
    pod_key_ = std::move(o.pod_key_);
  }
  return *this;
}

AgentIdentity::~AgentIdentity() {
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

std::string AgentIdentity::checkpoint_token(proto::PodRef ref) const {
  return secret::hmac_sha256_hex(
      pod_key_, "checkpoint/" + std::to_string(ref.job) + "/" + std::to_string(ref.pod));
}

bool agent_running(const std::string& state_dir) {
  const std::string lock_path = state_dir + "/agent.lock";
  const int fd = ::open(lock_path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return false;
  struct flock fl = whole_file(F_WRLCK);
  const bool held = ::fcntl(fd, F_OFD_GETLK, &fl) == 0 && fl.l_type != F_UNLCK;
  ::close(fd);
  return held;
}

}  // namespace sluice::agent
