// load(): every configuration kind, cross references, validation and the jobs in the same
// files; then summarize() of what loaded, as `sluice check` prints it. The first byte picks
// strict mode and whether the input is split into two sources at the first NUL.
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sluice;
  if (size == 0) return 0;
  LoadOptions options;
  options.strict = data[0] & 1;
  std::string text = fuzz::bytes(data + 1, size - 1);
  std::vector<Source> sources;
  const size_t nul = text.find('\0');
  if ((data[0] & 2) && nul != std::string::npos) {
    sources.push_back({"a.yaml", text.substr(0, nul)});
    sources.push_back({"b.yaml", text.substr(nul + 1)});
  } else {
    sources.push_back({"config.yaml", std::move(text)});
  }
  LoadOutput out = load(sources, options);
  if (out.ok()) (void)summarize(out.config);
  return 0;
}
