#pragma once
// Sends finished spans (tracing.h) to an OpenTelemetry collector over OTLP/HTTP with the JSON
// encoding (POST ENDPOINT, Content-Type application/json), in batches, from its own thread.
// Never blocks its caller: the queue is bounded and spans beyond it are dropped (counted). A
// failed POST is logged once per run of failures and its batch dropped: traces are diagnostics,
// never worth stalling the scheduler for.
#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/model/result.h"
#include "server/tracing.h"

namespace sluice::server {

struct OtlpOptions {
  // http://HOST:PORT[/PATH]; no path: /v1/traces (OTLP's default). https is not supported:
  // send to a collector on the same machine or network.
  std::string endpoint;
  std::string service_name = "sluice";
  size_t max_queued = 20'000;  // spans
  size_t max_batch = 512;      // spans per request
  int flush_ms = 200;          // how long a span may wait for its batch
  std::function<void(const std::string&)> log;
};

// The endpoint of the environment, as OpenTelemetry SDKs read it: OTEL_EXPORTER_OTLP_TRACES_
// ENDPOINT as is, else OTEL_EXPORTER_OTLP_ENDPOINT + "/v1/traces"; empty when neither is set.
std::string otlp_endpoint_from_env();

class OtlpExporter {
 public:
  static Result<std::unique_ptr<OtlpExporter>> create(OtlpOptions options);
  ~OtlpExporter();  // sends what is queued (bounded by the HTTP timeouts), then stops
  OtlpExporter(const OtlpExporter&) = delete;
  OtlpExporter& operator=(const OtlpExporter&) = delete;

  void add(std::vector<Span> spans);
  uint64_t sent() const { return sent_; }
  uint64_t dropped() const { return dropped_; }

 private:
  OtlpExporter() = default;
  void run();
  bool post(const std::vector<Span>& batch);

  OtlpOptions options_;
  std::string host_;
  int port_ = 0;
  std::string path_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Span> queue_;
  bool stopping_ = false;
  bool failing_ = false;
  std::atomic<uint64_t> sent_{0}, dropped_{0};
  std::thread thread_;
};

}  // namespace sluice::server
