#pragma once
// Reader for the Azure LLM inference traces (`TIMESTAMP,ContextTokens,GeneratedTokens`, one row
// per request) and the service-time model that turns token counts into backend time.
#include <cstdint>
#include <string>
#include <vector>

namespace sluice::gateway {

struct TraceRequest {
  std::int64_t arrival_us = 0;  // from the first request of the trace
  std::int32_t context_tokens = 0;
  std::int32_t generated_tokens = 0;
};

struct TraceResult {
  std::vector<TraceRequest> requests;  // sorted by arrival
  std::string error;                   // "FILE:LINE: message" on failure
  bool ok() const { return error.empty(); }
};

TraceResult load_inference_trace(const std::string& path);

// Backend time of one request: prefill cost per context token plus decode cost per generated
// token plus a fixed overhead. Integer microseconds.
struct ServiceModel {
  std::int64_t base_us = 2000;
  std::int64_t us_per_context_token = 10;
  std::int64_t us_per_generated_token = 250;
  std::int64_t service_us(const TraceRequest& r) const {
    return base_us + us_per_context_token * r.context_tokens +
           us_per_generated_token * r.generated_tokens;
  }
};

// The traces directory: $SLUICE_TRACES, else `../shared/traces` relative to `repo_root`.
std::string traces_dir(const std::string& repo_root);

}  // namespace sluice::gateway
