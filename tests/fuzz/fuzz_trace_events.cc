// read_sluice_events: the server's event log (JSON lines) replayed by the simulator.
#include "fuzz_util.h"
#include "sim/trace_events.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sluice;
  sim::TraceOutput out = sim::read_sluice_events("events.jsonl", fuzz::bytes(data, size));
  for (const sim::TraceJob& tj : out.jobs)
    if (tj.duration_ns < 0 || tj.job.walltime_ns < 0) std::abort();  // spans run forwards
  return 0;
}
