#pragma once
// Node-name lists as Slurm writes them: "n[1-64]", "gpu[01-08,12]", "a,b,c[1-3]".
#include <string>
#include <string_view>
#include <vector>

#include "core/model/result.h"

namespace sluice::agent {

// Expands into names in the written order; duplicates are an error. A range start with leading
// zeros pads every number to its width ("n[01-10]" -> n01..n10). At most 4096 names.
Result<std::vector<std::string>> expand_node_names(std::string_view spec);

}  // namespace sluice::agent
