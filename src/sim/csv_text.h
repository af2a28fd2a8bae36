#pragma once
// Splitting the lines of the trace files into fields. The formats here have no quoting: a
// separator always separates. For the non-empty parts of a list (`|`-separated GPU models, a
// comma list of names) there is proto::split_list (proto/split.h).
#include <string>
#include <string_view>
#include <vector>

namespace sluice::sim {

// The pieces of `s` between the separators, empty ones included: "a,,b" -> a, "", b; "" -> "".
std::vector<std::string> split_fields(std::string_view s, char sep);

// One CSV line's fields (split_fields on ','), without a trailing '\r'.
std::vector<std::string> split_csv(std::string_view line);

}  // namespace sluice::sim
