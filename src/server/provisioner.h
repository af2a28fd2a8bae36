#pragma once
// Runs the node pools' provisioner calls (docs/autoscaling.md) off the scheduling thread: a few
// worker threads each run one call at a time, either a child process (its own process group,
// the server's descriptors closed, stdout and stderr to a file whose tail is kept, killed with
// its group at the call's timeout) or a webhook's POST (cancelled at the call's timeout). A
// provisioner that hangs or fails costs a worker for at most its timeout, never the scheduling
// loop: the loop only queues calls and takes results.
#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "server/node_pools.h"

namespace sluice::server {

// Runs one call to its end (or its timeout, or `cancel`): the command, or the webhook.
// `log_path`: where its output goes (truncated first).
ProvisionResult run_provision_call(const ProvisionCall& call, const std::string& log_path,
                                   const std::atomic<bool>* cancel = nullptr);

// What a call's result keeps of its output: the last 2 KiB, without trailing newlines.
std::string output_tail(std::string text);
// A webhook's call (provisioner_webhook.cc): a POST of call.body to call.url, with the bearer
// token of call.token_file; 2xx is ok, another status failed, no answer in time a timeout.
ProvisionResult run_webhook_call(const ProvisionCall& call, const std::string& log_path,
                                 const std::atomic<bool>* cancel = nullptr);
// The token of a bearerTokenFile: its content less trailing newlines, printable, no spaces, at
// most 8 KiB. None (and *error, which names the file, never its content) when it cannot be
// read or holds no token.
std::optional<std::string> read_bearer_token(const std::string& path, std::string* error);

class ProvisionRunner {
 public:
  // `dir`: the calls' output files; `wake`: called (from a worker) when a result is ready.
  ProvisionRunner(std::string dir, int workers, std::function<void()> wake);
  ~ProvisionRunner();  // stop()
  ProvisionRunner(const ProvisionRunner&) = delete;
  ProvisionRunner& operator=(const ProvisionRunner&) = delete;

  void submit(std::vector<ProvisionCall> calls);
  std::vector<ProvisionResult> take_results();
  // Calls not started are dropped; running ones are killed (their process groups).
  void stop();

 private:
  void work();

  std::string dir_;
  std::function<void()> wake_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<ProvisionCall> queue_;
  std::vector<ProvisionResult> results_;
  bool stopping_ = false;
  std::atomic<bool> cancel_{false};
  std::vector<std::thread> threads_;
};

}  // namespace sluice::server
