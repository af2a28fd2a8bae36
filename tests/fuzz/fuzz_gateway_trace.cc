// load_inference_trace: the Azure LLM inference trace `sluice gateway replay` reads.
#include "fuzz_util.h"
#include "gateway/trace.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sluice::gateway;
  static sluice::fuzz::MemFile file;
  const TraceResult r = load_inference_trace(file.write(sluice::fuzz::bytes(data, size)));
  for (size_t i = 1; i < r.requests.size(); ++i)
    if (r.requests[i].arrival_us < r.requests[i - 1].arrival_us) std::abort();  // sorted
  const ServiceModel model;
  for (const TraceRequest& q : r.requests) (void)model.service_us(q);
  return 0;
}
