// The openb readers: the pod list (read_openb), and the node list turned into a Cluster
// document (openb_nodes_to_cluster_yaml), which the simulator then loads as configuration.
#include "fuzz_util.h"
#include "sim/trace_openb.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sluice;
  const std::string text = fuzz::bytes(data, size);
  (void)sim::read_openb("pods.csv", text, sim::OpenbOptions{});
  if (sim::is_openb_node_list(text)) {
    std::vector<std::string> errors;
    const std::string yaml = sim::openb_nodes_to_cluster_yaml("nodes.csv", text, errors);
    if (!yaml.empty()) {
      // What the converter writes is well-formed YAML (names are quoted), whatever the rows;
      // load() may still refuse it for what the rows say (two nodes of one name).
      LoadOutput out = load({{"nodes.yaml", yaml}}, {});
      for (const std::string& e : out.errors)
        if (e.find("malformed YAML") != std::string::npos) {
          std::fprintf(stderr, "converted node list does not parse: %s\n%s\n", e.c_str(),
                       yaml.c_str());
          std::abort();
        }
    }
  }
  return 0;
}
