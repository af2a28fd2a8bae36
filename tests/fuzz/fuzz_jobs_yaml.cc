// parse_jobs' YAML path forced (what `sluice submit` of a YAML file and the JSON path's fallback
// take), on any text.
#include "config/parse_jobs.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sluice;
  (void)config_detail::parse_jobs_yaml({"jobs.yaml", fuzz::bytes(data, size)},
                                       fuzz::example_config());
  return 0;
}
