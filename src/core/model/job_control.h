#pragma once
// Slurm's job-control vocabulary as sluice reads it (docs/cli.md): job arrays (`--array`) and
// dependencies (`--dependency`). Pure parsers: the job reader checks a submission's text with
// them, the server reads the stored text again when it decides whether a job may start.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/model/job.h"
#include "core/model/result.h"

namespace sluice {

// An array's task indexes, ascending and distinct, and its throttle (0: none).
struct ArraySpec {
  std::vector<int32_t> tasks;
  int32_t throttle = 0;
};
inline constexpr int32_t kMaxArrayIndex = 1'000'000;  // Slurm's MaxArraySize is 1001 by default
inline constexpr size_t kMaxArrayTasks = 10'000;      // tasks per submission

// "0-99%10", "1,3,5-7", "0-15:4", "7": comma-separated indexes and ranges (a range may have a
// step after ':'), then optionally "%N". Errors say what is wrong in words.
Result<ArraySpec> parse_array_spec(std::string_view text);

enum class DepKind : uint8_t { kAfter, kAfterAny, kAfterOk, kAfterNotOk, kSingleton };
const char* dep_kind_name(DepKind k);

// A job a dependency waits for: "12" (a job, or every task of the array 12), "12_3" (task 3 of
// array 12).
struct DepTarget {
  JobId job = 0;
  int32_t task = -1;
};

struct Dependency {
  DepKind kind = DepKind::kAfterOk;
  std::vector<DepTarget> targets;  // empty for singleton
};

// "afterok:12:13,afterany:14_2,singleton": every part must be met (Slurm's ','). Slurm's '?'
// (any of) and aftercorr/aftershards/afterburstbuffer are refused with a message.
Result<std::vector<Dependency>> parse_dependency(std::string_view text);

}  // namespace sluice
