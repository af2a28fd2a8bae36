// The FGD experiment's readers (src/sim/fgd/trace.cc): node list, pod list and the published
// curves, each read from a file (a memfd here). The first byte picks the reader.
#include "fuzz_util.h"
#include "sim/fgd/trace.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sluice::sim::fgd;
  static sluice::fuzz::MemFile file;
  if (size == 0) return 0;
  const std::string& path = file.write(sluice::fuzz::bytes(data + 1, size - 1));
  switch (data[0] % 3) {
    case 0:
      (void)read_nodes(path);
      break;
    case 1:
      (void)read_pods(path);
      break;
    default:
      (void)read_expected(path);
      break;
  }
  return 0;
}
