#pragma once
// What `sluice up` prints while it runs: a line of job counts per state whenever they change,
// and a table of the jobs when it stops. It asks the server over HTTP, as any client would.
#include <chrono>
#include <string>

#include "net/client.h"

namespace sluice::cli {

class UpStatus {
 public:
  explicit UpStatus(const std::string& url);

  net::Client& client() { return cli_; }
  // Seconds since this was made (the demo's clock).
  double elapsed() const;
  // "[ 12.3s] pending=1 running=3 preemptions=1", when it changed since the last line.
  void print_if_changed();
  // ID, NAME, NAMESPACE, QUEUE, STATE, GPUS, PREEMPT and where each job runs (or why not).
  void print_jobs_table();

 private:
  net::Client cli_;
  std::chrono::steady_clock::time_point t0_;
  std::string last_;
};

}  // namespace sluice::cli
