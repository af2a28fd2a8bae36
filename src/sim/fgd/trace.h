#pragma once
// Readers for the Alibaba openb trace files used by the FGD experiment (see
// ../shared/traces/alibaba-openb/FGD_EXPERIMENT.md). Bad rows are errors naming file:line and
// the problem; nothing aborts.
#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/model/result.h"

namespace sluice::sim::fgd {

inline constexpr int kColumns = 131;  // allocation curve columns 0..130 (% of capacity arrived)
using Curve = std::array<double, kColumns>;

struct TraceNode {
  std::string name;
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  int32_t gpus = 0;
  std::string model;
};

struct TracePod {
  std::string name;
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  int32_t num_gpu = 0;
  int32_t gpu_milli = 0;              // per GPU; 1000 for whole GPUs
  std::vector<std::string> gpu_spec;  // allowed models; empty = any
};

// `sn,cpu_milli,memory_mib,gpu,model` (columns found by header name).
Result<std::vector<TraceNode>> read_nodes(const std::string& path);
// `name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,...` (extra columns ignored).
Result<std::vector<TracePod>> read_pods(const std::string& path);
// Published curves: sc_policy (e.g. "06-FGD") -> one curve per seed.
Result<std::map<std::string, std::vector<Curve>>> read_expected(const std::string& path);

}  // namespace sluice::sim::fgd
