// read_philly (the Philly CSV of `sluice sim run --trace-format philly`), then check_against
// the Philly example configuration, as the simulator does.
#include "fuzz_util.h"
#include "sim/trace_philly.h"

namespace {

const sluice::Config& philly_config() {
  static const sluice::Config config = [] {
    using namespace sluice;
    LoadOutput out = load({{"cluster.yaml", fuzz::repo_file("examples/philly/cluster.yaml")},
                           {"queues.yaml", fuzz::repo_file("examples/philly/queues-sluice.yaml")}},
                          {});
    if (!out.ok()) std::abort();
    return out.config;
  }();
  return config;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sluice;
  sim::PhillyOptions options;
  options.gpus_per_node = sim::max_gpus_per_node(philly_config());
  sim::TraceOutput out = sim::read_philly("trace.csv", fuzz::bytes(data, size), options);
  for (const sim::TraceJob& tj : out.jobs) {
    const PodSet& ps = tj.job.pod_sets.at(0);
    // The gang shape covers the row's GPUs exactly, each pod within a node.
    if (ps.count < 1 || ps.gpus < 1 || ps.gpus > options.gpus_per_node) std::abort();
  }
  sim::check_against(out, philly_config());
  return 0;
}
