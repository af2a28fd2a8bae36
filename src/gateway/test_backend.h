#pragma once
// A model backend stand-in for tests and benchmarks: an HTTP/1.1 server whose requests take a
// configurable service time and run at most `concurrency` at a time (the rest wait in FIFO
// order, like a GPU server with a fixed number of batch slots).
//
// Per request, the service time is the `x-service-us` header when present, else `service_ms`,
// times `service_scale`.
// A request with `x-hold: 1` stays in service until `/_release` is requested. `/healthz` answers
// 200 at once; `/_stats` gives counts as JSON.
#include <cstdint>
#include <string>

namespace sluice::gateway {

struct TestBackendOptions {
  std::string listen = "127.0.0.1:0";
  std::string port_file;
  std::string name = "backend";
  double service_ms = 10.0;
  int concurrency = 4;         // 0: unlimited
  double service_scale = 1.0;  // multiplies every service time (a smaller, faster model: < 1)
  int max_waiting = 100000;    // beyond this a request is answered 503 at once
  std::int64_t max_body_bytes = 16 << 20;
};

// Runs until SIGTERM/SIGINT. Returns the exit code.
int run_test_backend(const TestBackendOptions& opts);

}  // namespace sluice::gateway
