#include "server/provisioner.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

extern char** environ;

namespace sluice::server {

namespace {

constexpr size_t kOutputTail = 2048;

// The server's environment with the call's variables put over it.
std::vector<std::string> call_environment(const std::vector<std::string>& add) {
  std::vector<std::string> out;
  for (char** e = environ; e && *e; ++e) {
    const std::string kv = *e;
    const std::string key = kv.substr(0, kv.find('='));
    const bool replaced = std::any_of(add.begin(), add.end(), [&](const std::string& a) {
      return a.compare(0, key.size() + 1, key + "=") == 0;
    });
    if (!replaced) out.push_back(kv);
  }
  out.insert(out.end(), add.begin(), add.end());
  return out;
}

std::string tail_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return output_tail(
      std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()));
}

// In the child, after fork: only async-signal-safe calls.
[[noreturn]] void exec_child(char* const* argv, char* const* envp, int out_fd, int null_fd) {
  ::setpgid(0, 0);  // its own group: a timeout kills what it started too
  ::dup2(null_fd, 0);
  ::dup2(out_fd, 1);
  ::dup2(out_fd, 2);
  ::close_range(3, ~0U, 0);  // none of the server's sockets or files
  sigset_t none;
  ::sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::signal(SIGPIPE, SIG_DFL);
  ::execvpe(argv[0], argv, envp);
  ::_exit(127);
}

}  // namespace

std::string output_tail(std::string text) {
  if (text.size() > kOutputTail) text = "..." + text.substr(text.size() - kOutputTail);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  return text;
}

ProvisionResult run_provision_call(const ProvisionCall& call, const std::string& log_path,
                                   const std::atomic<bool>* cancel) {
  if (!call.url.empty()) return run_webhook_call(call, log_path, cancel);
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  ProvisionResult r;
  r.call = call;
  auto finish = [&] {
    r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    return r;
  };
  if (call.argv.empty()) {
    r.output = "no provisioner command";
    return finish();
  }
  std::vector<std::string> env = call_environment(call.env);
  std::vector<char*> argv, envp;
  for (const auto& a : call.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  const int out_fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (out_fd < 0) {
    r.output = "cannot write " + log_path + ": " + std::strerror(errno);
    return finish();
  }
  const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  const pid_t pid = null_fd < 0 ? -1 : ::fork();
  if (pid == 0) exec_child(argv.data(), envp.data(), out_fd, null_fd);
  ::close(out_fd);
  if (null_fd >= 0) ::close(null_fd);
  if (pid < 0) {
    r.output = std::string("cannot start the provisioner: ") + std::strerror(errno);
    return finish();
  }
  ::setpgid(pid, pid);  // also here: no race with a kill before the child ran setpgid
  const auto deadline = t0 + std::chrono::nanoseconds(call.timeout_ns);
  int status = 0;
  for (;;) {
    const pid_t w = ::waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    const bool cancelled = cancel && cancel->load();
    if (w < 0 || Clock::now() >= deadline || cancelled) {
      ::kill(-pid, SIGKILL);
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      r.timed_out = !cancelled;
      r.output = tail_of(log_path);
      r.output += std::string(r.output.empty() ? "" : "\n") +
                  (cancelled ? "killed: the server is stopping"
                             : "killed after its timeout of " +
                                   std::to_string(call.timeout_ns / 1'000'000) + " ms");
      return finish();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  r.output = tail_of(log_path);
  if (WIFEXITED(status)) {
    r.exit_code = WEXITSTATUS(status);
    r.ok = r.exit_code == 0;
    if (r.exit_code == 127 && r.output.empty()) r.output = "cannot run " + call.argv.front();
  } else if (WIFSIGNALED(status)) {
    r.output += std::string(r.output.empty() ? "" : "\n") + "killed by signal " +
                std::to_string(WTERMSIG(status));
  }
  return finish();
}

ProvisionRunner::ProvisionRunner(std::string dir, int workers, std::function<void()> wake)
    : dir_(std::move(dir)), wake_(std::move(wake)) {
  for (int i = 0; i < workers; ++i) threads_.emplace_back([this] { work(); });
}

ProvisionRunner::~ProvisionRunner() {
  stop();
}

void ProvisionRunner::submit(std::vector<ProvisionCall> calls) {
  if (calls.empty()) return;
  {
    std::lock_guard lk(mu_);
    if (stopping_) return;
    for (auto& c : calls) queue_.push_back(std::move(c));
  }
  cv_.notify_all();
}

std::vector<ProvisionResult> ProvisionRunner::take_results() {
  std::lock_guard lk(mu_);
  std::vector<ProvisionResult> out;
  out.swap(results_);
  return out;
}

void ProvisionRunner::stop() {
  {
    std::lock_guard lk(mu_);
    if (stopping_ && threads_.empty()) return;
    stopping_ = true;
    queue_.clear();
  }
  cancel_ = true;
  cv_.notify_all();
  for (auto& t : threads_) t.join();
  threads_.clear();
}

void ProvisionRunner::work() {
  for (;;) {
    ProvisionCall call;
    {
      std::unique_lock lk(mu_);
      cv_.wait(lk, [&] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      call = std::move(queue_.front());
      queue_.pop_front();
    }
    std::error_code ec;
    std::filesystem::create_directories(dir_, ec);  // the call says so if it failed
    const std::string log = dir_ + "/" + call.node + "." + call.op + ".log";
    ProvisionResult r = run_provision_call(call, log, &cancel_);
    {
      std::lock_guard lk(mu_);
      if (stopping_) return;
      results_.push_back(std::move(r));
    }
    if (wake_) wake_();
  }
}

}  // namespace sluice::server
