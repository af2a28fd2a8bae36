// `sluice run --pty`: wait for the pod, then relay this terminal to its pseudo-terminal.
#include "cli/client_pty.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <mutex>
#include <thread>

#include "cli/client_common.h"

namespace sluice::cli {

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// Signals become bytes on this pipe (the handlers only write), read by whoever waits.
int g_signal_pipe[2] = {-1, -1};

void on_signal(int sig) {
  const int saved = errno;
  const unsigned char b = static_cast<unsigned char>(sig);
  [[maybe_unused]] auto n = ::write(g_signal_pipe[1], &b, 1);
  errno = saved;
}

// SIGWINCH, SIGINT, SIGTERM, SIGHUP and SIGQUIT go to the pipe while this lives; the previous
// handlers come back after.
class SignalPipe {
 public:
  SignalPipe() {
    if (::pipe2(g_signal_pipe, O_CLOEXEC | O_NONBLOCK) != 0) return;
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < kSignals.size(); ++i) ::sigaction(kSignals[i], &sa, &old_[i]);
  }
  ~SignalPipe() {
    for (size_t i = 0; i < kSignals.size(); ++i) ::sigaction(kSignals[i], &old_[i], nullptr);
    for (int& fd : g_signal_pipe) {
      if (fd >= 0) ::close(fd);
      fd = -1;
    }
  }
  SignalPipe(const SignalPipe&) = delete;
  SignalPipe& operator=(const SignalPipe&) = delete;
  int fd() const { return g_signal_pipe[0]; }
  // The next signal that came (0: none).
  static int take() {
    unsigned char b = 0;
    return ::read(g_signal_pipe[0], &b, 1) == 1 ? b : 0;
  }

 private:
  static constexpr std::array<int, 5> kSignals = {SIGWINCH, SIGINT, SIGTERM, SIGHUP, SIGQUIT};
  std::array<struct sigaction, 5> old_{};
};

// The terminal on fd 0 in raw mode while this lives (nothing when fd 0 is not a terminal).
class RawTerminal {
 public:
  RawTerminal() {
    if (!::isatty(0) || ::tcgetattr(0, &saved_) != 0) return;
    termios raw = saved_;
    ::cfmakeraw(&raw);
    active_ = ::tcsetattr(0, TCSAFLUSH, &raw) == 0;
  }
  ~RawTerminal() { restore(); }
  RawTerminal(const RawTerminal&) = delete;
  RawTerminal& operator=(const RawTerminal&) = delete;
  void restore() {
    if (active_) ::tcsetattr(0, TCSAFLUSH, &saved_);
    active_ = false;
  }
  bool active() const { return active_; }

 private:
  termios saved_{};
  bool active_ = false;
};

void write_all(int fd, const std::string& s) {
  for (size_t off = 0; off < s.size();) {
    const ssize_t n = ::write(fd, s.data() + off, s.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    off += static_cast<size_t>(n);
  }
}

// A string field of a job's view ("" when absent or null).
std::string text(const json& job, const char* key) {
  auto it = job.find(key);
  return it != job.end() && it->is_string() ? it->get<std::string>() : std::string();
}

bool ended(const std::string& state) {
  return state != "pending" && state != "running";
}

// The job, or a failure.
Outcome<json> job_view(const HttpClient& http, unsigned long long id) {
  return http.call_json("GET", "/v1/jobs/" + std::to_string(id));
}

// Before the session: waits (as srun does) until the pod has started or the job ended; a
// signal cancels the job. Returns the job's view, or the signal that came.
std::pair<json, int> wait_for_start(const HttpClient& http, unsigned long long id,
                                    const SignalPipe& signals) {
  bool said = false;
  for (;;) {
    json job = need(job_view(http, id));
    const std::string state = job.value("state", "");
    if (ended(state) || (state == "running" && job.value("started", false))) {
      if (said) std::cerr << "sluice: job " << id << " has been allocated resources\n";
      return {job, 0};
    }
    if (!said && state == "pending") {
      const std::string reason = printable_text(text(job, "reason"));
      std::cerr << "sluice: job " << id << " queued and waiting for resources"
                << (reason.empty() ? "" : " (" + reason + ")") << "\n";
      said = true;
    }
    pollfd p{signals.fd(), POLLIN, 0};
    if (::poll(&p, 1, 250) > 0)
      if (const int sig = SignalPipe::take(); sig != 0 && sig != SIGWINCH) return {job, sig};
  }
}

// The relay: an input thread sends keystrokes and window sizes; this one reads the pod's output
// from its log and watches the job until it ends.
class Session {
 public:
  // The log is read again this soon after a keystroke or new output, doubling while nothing
  // comes, up to kIdleMs.
  static constexpr int kQuickMs = 20;
  static constexpr int kIdleMs = 250;

  Session(Connection conn, unsigned long long id, const SignalPipe& signals, bool tty)
      : conn_(std::move(conn)), id_(id), signals_(signals), tty_(tty) {}

  ~Session() { stop_input(); }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // The pod's exit code, or -signal when a signal ended the session.
  Outcome<int> run() {
    send_size();
    input_ = std::thread([this] { input_loop(); });
    auto out = output_loop();
    stop_input();
    return out;
  }

 private:
  void stop_input() {
    if (!input_.joinable()) return;
    {
      std::lock_guard lk(mu_);
      stop_ = true;
    }
    on_signal(0);  // wakes the input thread's poll
    input_.join();
  }

  std::string tty_path() const { return "/v1/jobs/" + std::to_string(id_) + "/tty"; }

  // Sends bytes (and the size, when rows > 0); a refusal is said once (until one goes through).
  void send(const std::string& bytes, int rows = 0, int cols = 0) {
    std::string path = tty_path();
    if (rows > 0 && cols > 0) {
      add_query(path, "rows", std::to_string(rows));
      add_query(path, "cols", std::to_string(cols));
    }
    const HttpClient http(conn_);
    auto r = http.request("POST", path, bytes, "application/octet-stream");
    std::lock_guard lk(mu_);
    if (!r.ok || r.value.status != 200) {
      if (!warned_) {
        const std::string why =
            r.ok ? describe_http_error(r.value, conn_.server).message : r.failure.message;
        pending_note_ = "sluice: " + why + " (input not delivered)";
        warned_ = true;
      }
    } else {
      warned_ = false;
    }
    poked_ = true;
    cv_.notify_all();  // output follows keystrokes: read it soon
  }

  void send_size() {
    struct winsize ws {};
    if (tty_ && ::ioctl(0, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 && ws.ws_col > 0)
      send("", ws.ws_row, ws.ws_col);
  }

  void input_loop() {
    bool eof = false;
    char buf[4096];
    for (;;) {
      {
        std::lock_guard lk(mu_);
        if (stop_) return;
      }
      pollfd p[2] = {{eof ? -1 : 0, POLLIN, 0}, {signals_.fd(), POLLIN, 0}};
      if (::poll(p, 2, -1) < 0 && errno != EINTR) return;
      if (p[1].revents & POLLIN) {
        for (int sig; (sig = SignalPipe::take()) != 0;) {
          if (sig == SIGWINCH) {
            send_size();
            continue;
          }
          std::lock_guard lk(mu_);
          signal_ = sig;
          cv_.notify_all();
        }
      }
      if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
        const ssize_t n = ::read(0, buf, sizeof buf);
        if (n > 0) {
          send(std::string(buf, static_cast<size_t>(n)));
        } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
          eof = true;  // not a terminal, and its input ended: the pod's terminal gets ^D
          if (!tty_) send("\x04");
        }
      }
    }
  }

  // Until the job ends: its log from byte 0 on (the shell's first prompt came before us).
  Outcome<int> output_loop() {
    const HttpClient http(conn_);
    long long offset = 0;
    auto checked = Clock::now() - milliseconds(1000);
    int idle_ms = kQuickMs;
    for (;;) {
      note();
      {
        std::lock_guard lk(mu_);
        if (signal_ != 0) return Outcome<int>::success(-signal_);
      }
      const bool got = read_log(http, &offset);
      if (got) idle_ms = kQuickMs;
      // The job's state, twice a second: when it ended, the session did.
      if (Clock::now() - checked > milliseconds(500)) {
        checked = Clock::now();
        auto job = job_view(http, id_);
        if (!job.ok) return Outcome<int>::fail(job.failure);
        const std::string state = job.value.value("state", "");
        if (state != "running") {
          while (read_log(http, &offset)) {  // what it wrote last
          }
          return finished(job.value);
        }
      }
      if (got) continue;
      std::unique_lock lk(mu_);
      cv_.wait_for(lk, milliseconds(idle_ms), [&] { return signal_ != 0 || poked_; });
      // Idle: poll less often, down to 4 a second; keystrokes make it quick again.
      idle_ms = poked_ ? kQuickMs : std::min(idle_ms * 2, kIdleMs);
      poked_ = false;
    }
  }

  // One read of the log from *offset; true when bytes came.
  bool read_log(const HttpClient& http, long long* offset) {
    std::string path = "/v1/jobs/" + std::to_string(id_) + "/logs";
    add_query(path, "offset", std::to_string(*offset));
    auto r = http.request("GET", path);
    if (!r.ok || r.value.status != 200) {
      std::lock_guard lk(mu_);
      if (!log_warned_)
        pending_note_ = "sluice: " + (r.ok ? describe_http_error(r.value, conn_.server).message
                                           : r.failure.message);
      log_warned_ = true;
      return false;
    }
    log_warned_ = false;
    long long size = *offset + static_cast<long long>(r.value.body.size());
    try {
      if (!r.value.log_size.empty()) size = std::stoll(r.value.log_size);
    } catch (...) {
    }
    write_all(1, r.value.body);
    *offset = size;
    return !r.value.body.empty();
  }

  // A note for the user, written between the pod's output lines.
  void note() {
    std::string n;
    {
      std::lock_guard lk(mu_);
      n.swap(pending_note_);
    }
    if (!n.empty()) write_all(2, "\r\n" + n + "\r\n");
  }

  Outcome<int> finished(const json& job) {
    const std::string state = printable_text(job.value("state", ""));
    const std::string reason = printable_text(text(job, "reason"));
    if (state == "pending")  // requeued (its node was lost, an admin): this session is over
      return Outcome<int>::fail(
          {1, "sluice: job " + std::to_string(id_) + " went back to its queue (" + reason +
                  "): its terminal session ended; it runs again later without one attached"});
    const auto it = job.find("exit_code");
    const int code = it != job.end() && it->is_number_integer() ? it->get<int>() : 1;
    if (state != "succeeded" && state != "failed")
      std::cerr << (tty_ ? "\r\n" : "") << "sluice: job " << id_ << " " << state
                << (reason.empty() ? "" : ": " + reason) << (tty_ ? "\r\n" : "\n");
    return Outcome<int>::success(code < 0 ? 1 : code);
  }

  Connection conn_;
  unsigned long long id_;
  const SignalPipe& signals_;
  bool tty_;
  std::thread input_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool poked_ = false;  // keystrokes went out: their echo and output are due
  int signal_ = 0;
  bool warned_ = false;
  bool log_warned_ = false;
  std::string pending_note_;
};

// A signal ended the wait or the session: the job is cancelled, as srun does.
int interrupted(const HttpClient& http, unsigned long long id, int sig) {
  auto r = http.request("POST", "/v1/jobs/" + std::to_string(id) + "/cancel");
  std::cerr << "sluice: interrupted by signal " << sig << ": job " << id
            << (r.ok && r.value.status == 200 ? " cancelled" : " could not be cancelled") << "\n";
  return 128 + sig;
}

}  // namespace

int attach_pty(const Connection& conn, unsigned long long id) {
  const HttpClient http(conn);
  Outcome<int> out;
  {
    SignalPipe signals;
    auto [job, sig] = wait_for_start(http, id, signals);
    if (sig != 0) return interrupted(http, id, sig);
    const std::string state = job.value("state", "");
    const auto placed = job.find("placement");
    if (ended(state) && (placed == job.end() || placed->empty())) {
      const std::string reason = text(job, "reason");
      fail({1, "error: job " + std::to_string(id) + " " + state + " before it started" +
                   (reason.empty() ? "" : ": " + reason)});
    }
    RawTerminal terminal;
    Session session(conn, id, signals, terminal.active());
    out = session.run();
  }  // the terminal is restored here, the signal handlers too, whatever happened
  if (!out.ok) fail(out.failure);
  if (out.value < 0) return interrupted(http, id, -out.value);
  return out.value;
}

}  // namespace sluice::cli
