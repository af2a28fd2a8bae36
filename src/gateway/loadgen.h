#pragma once
// Open-loop HTTP load generator for `sluice gateway replay`: requests leave at scheduled times
// whether or not earlier ones were answered (a closed-loop tool like wrk slows down with the
// server and hides overload). Arrivals are a constant-rate Poisson or uniform process, or a
// recorded inference trace compressed in time to a multiple of the pool's capacity.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "gateway/trace.h"

namespace sluice::gateway {

struct LoadOptions {
  std::string target = "127.0.0.1:8080";
  std::string path = "/v1/completions";
  // Constant-rate mode (used when trace_file is empty).
  double rate = 100.0;
  double duration_s = 10.0;
  bool poisson = true;
  std::int64_t service_us = -1;  // sent as x-service-us when >= 0
  // Trace mode.
  std::string trace_file;
  double load = 1.0;  // offered rate as a multiple of capacity
  int slots = 0;      // total backend concurrency of the pool: capacity = slots / mean service
  ServiceModel model;
  double max_duration_s = 30.0;
  std::int64_t max_requests = 1000000;
  // Both modes.
  std::string class_mix;  // e.g. "critical=0.2,standard=0.5,sheddable=0.3"; empty: no header
  std::uint64_t seed = 1;
  std::int64_t timeout_ms = 30000;
  int max_connections = 4096;
  std::vector<std::pair<std::string, std::string>> headers;
  bool json = false;
};

// Runs the load and prints a summary (text, or one JSON object with `json`). Returns 0, or 2 on
// bad options, or 3 when some request got no answer (reset, timeout, connect failure).
int run_load(const LoadOptions& opts);

}  // namespace sluice::gateway
