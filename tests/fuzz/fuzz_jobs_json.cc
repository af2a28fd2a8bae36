// parse_jobs on any body, as the server's POST /v1/jobs takes it: the JSON fast path, falling
// back to the YAML path. Also the fast path's document builder on its own.
#include "config/json_documents.h"
#include "config/parse_jobs.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sluice;
  const std::string text = fuzz::bytes(data, size);
  (void)config_detail::json_documents(text);
  JobsOutput out = parse_jobs({"body.json", text}, fuzz::example_config());
  // A job parsed without errors is resolved: its pod sets are never empty.
  if (out.errors.empty())
    for (const Job& j : out.jobs)
      if (j.pod_sets.empty()) std::abort();
  return 0;
}
