// Interactive pods' terminals: a pseudo-terminal per pod, its output copied to the pod's log.
#include "agent/pty_pump.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace sluice::agent {

namespace {

std::string ref_text(proto::PodRef ref) {
  return std::to_string(ref.job) + "/" + std::to_string(ref.pod);
}

bool set_size(int fd, int rows, int cols) {
  struct winsize ws {};
  ws.ws_row = static_cast<unsigned short>(rows);
  ws.ws_col = static_cast<unsigned short>(cols);
  return ::ioctl(fd, TIOCSWINSZ, &ws) == 0;
}

}  // namespace

bool open_pty(uid_t uid, gid_t gid, int rows, int cols, PtyPair* out, std::string* why) {
  auto failed = [&](const char* what) {
    *why =
        std::string("cannot open a terminal for the pod (") + what + "): " + std::strerror(errno);
    if (out->master >= 0) ::close(out->master);
    if (out->slave >= 0) ::close(out->slave);
    *out = {};
    return false;
  };
  out->master = ::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (out->master < 0) return failed("posix_openpt");
  if (::grantpt(out->master) != 0 || ::unlockpt(out->master) != 0) return failed("unlockpt");
  char name[128];
  if (::ptsname_r(out->master, name, sizeof name) != 0) return failed("ptsname");
  out->slave = ::open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (out->slave < 0) return failed(name);
  // The pod's own terminal, as a login's is: its user may reopen it (/dev/tty), others not.
  if (uid != static_cast<uid_t>(-1) && ::fchown(out->slave, uid, gid) != 0) return failed("chown");
  if (::fchmod(out->slave, 0620) != 0) return failed("chmod");
  const int flags = ::fcntl(out->master, F_GETFL);
  if (flags < 0 || ::fcntl(out->master, F_SETFL, flags | O_NONBLOCK) != 0)
    return failed("non-blocking");
  if (rows > 0 && cols > 0) set_size(out->master, rows, cols);
  return true;
}

PtyPump::PtyPump(std::function<void(const std::string&)> log) : log_(std::move(log)) {
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0) {  // without it the thread could not be told about new terminals
    if (log_)
      log_(std::string("cannot create an eventfd for pods' terminals: ") + std::strerror(errno));
    std::abort();
  }
  thread_ = std::thread([this] { run(); });
}

PtyPump::~PtyPump() {
  {
    std::lock_guard lock(mu_);
    quit_ = true;
  }
  wake();
  if (thread_.joinable()) thread_.join();
  for (auto& [ref, t] : terms_) close_locked(t);
  ::close(wake_fd_);
}

void PtyPump::wake() {
  const uint64_t one = 1;
  [[maybe_unused]] auto n = ::write(wake_fd_, &one, sizeof one);
}

void PtyPump::add(proto::PodRef ref, int master, int log_fd) {
  {
    std::lock_guard lock(mu_);
    auto it = terms_.find(ref);
    if (it != terms_.end()) close_locked(it->second);  // not expected: a pod runs once at a time
    terms_[ref] = Term{master, log_fd, false, {}};
  }
  wake();
}

bool PtyPump::write(proto::PodRef ref, const std::string& bytes) {
  bool ok = true;
  {
    std::lock_guard lock(mu_);
    auto it = terms_.find(ref);
    if (it == terms_.end()) return false;
    Term& t = it->second;
    if (t.pending.size() + bytes.size() > kMaxPending) {
      if (log_)
        log_("terminal of pod " + ref_text(ref) + " takes no input (" +
             std::to_string(t.pending.size()) + " bytes waiting): " + std::to_string(bytes.size()) +
             " bytes of keystrokes dropped");
      ok = false;
    } else {
      t.pending += bytes;
      flush_locked(t);
    }
    if (t.pending.empty()) return ok;
  }
  wake();  // the rest when the terminal takes it (POLLOUT)
  return ok;
}

bool PtyPump::resize(proto::PodRef ref, int rows, int cols) {
  std::lock_guard lock(mu_);
  auto it = terms_.find(ref);
  return it != terms_.end() && set_size(it->second.master, rows, cols);
}

void PtyPump::remove(proto::PodRef ref) {
  {
    std::lock_guard lock(mu_);
    auto it = terms_.find(ref);
    if (it == terms_.end()) return;
    if (!it->second.eof) drain_locked(it->second);
    close_locked(it->second);
    terms_.erase(it);
  }
  wake();
}

void PtyPump::drain_locked(Term& t) {
  char buf[16384];
  for (int i = 0; i < 64; ++i) {  // bounded per turn: other terminals get theirs too
    const ssize_t n = ::read(t.master, buf, sizeof buf);
    if (n > 0) {
      for (ssize_t off = 0; off < n;) {
        const ssize_t w = ::write(t.log_fd, buf + off, static_cast<size_t>(n - off));
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) break;  // a full disk: the output is lost, the session goes on
        off += w;
      }
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    t.eof = true;  // EIO: every holder of the pod's side closed it
    return;
  }
}

void PtyPump::flush_locked(Term& t) {
  while (!t.pending.empty()) {
    const ssize_t n = ::write(t.master, t.pending.data(), t.pending.size());
    if (n > 0) {
      t.pending.erase(0, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    t.pending.clear();  // EIO: the pod's side is gone
    return;
  }
}

void PtyPump::close_locked(Term& t) {
  if (t.master >= 0) ::close(t.master);
  if (t.log_fd >= 0) ::close(t.log_fd);
  t.master = t.log_fd = -1;
}

void PtyPump::run() {
  std::vector<pollfd> fds;
  std::vector<proto::PodRef> refs;
  for (;;) {
    fds.assign(1, pollfd{wake_fd_, POLLIN, 0});
    refs.assign(1, proto::PodRef{});
    {
      std::lock_guard lock(mu_);
      if (quit_) return;
      for (const auto& [ref, t] : terms_) {
        if (t.eof) continue;  // a hung-up master polls readable for good
        fds.push_back(
            {t.master, static_cast<short>(POLLIN | (t.pending.empty() ? 0 : POLLOUT)), 0});
        refs.push_back(ref);
      }
    }
    if (::poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR) {
      if (log_) log_(std::string("pods' terminals: poll: ") + std::strerror(errno));
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      continue;
    }
    if (fds[0].revents & POLLIN) {
      uint64_t n = 0;
      [[maybe_unused]] auto r = ::read(wake_fd_, &n, sizeof n);
    }
    std::lock_guard lock(mu_);
    for (size_t i = 1; i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      auto it = terms_.find(refs[i]);
      // Removed (or replaced) while polling: its descriptor may be another file by now.
      if (it == terms_.end() || it->second.master != fds[i].fd) continue;
      if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) drain_locked(it->second);
      if (fds[i].revents & POLLOUT) flush_locked(it->second);
    }
  }
}

}  // namespace sluice::agent
