#pragma once
// `sluice run --time`: Slurm's time limit formats (sbatch --time), so a Slurm user's habits keep
// their meaning. A bare number is minutes, as in Slurm; machine inputs (YAML `walltime:`,
// `sluice sim` traces) keep their own rules (docs/config.md: plain numbers there are seconds).
#include <cstdint>
#include <optional>
#include <string>

namespace sluice::cli {

struct TimeLimit {
  int64_t seconds = 0;  // 0: no limit ("UNLIMITED", "INFINITE")
};

// "90" (minutes), "MM:SS", "HH:MM:SS", "D-HH", "D-HH:MM", "D-HH:MM:SS", "UNLIMITED" / "INFINITE",
// or a duration with units ("90s", "30m", "2h", "1h30m", "1d"). nullopt when none of these, zero,
// or longer than 365 days.
std::optional<TimeLimit> parse_time_limit(const std::string& text);

// The limit as a duration the job document carries: "5400s" ("" for no limit).
std::string time_limit_duration(const TimeLimit& limit);

}  // namespace sluice::cli
