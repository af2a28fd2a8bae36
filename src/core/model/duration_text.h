#pragma once
// Durations as short text for people: the one formatter that the server's messages (predicted
// starts, walltimes) and the command's tables (elapsed time, ages) share.
#include <cstdint>
#include <string>

namespace sluice {

enum class DurationStyle {
  kTwoUnits,     // "1d02h", "1h02m", "9m50s", "40s"
  kLargestUnit,  // "5d", "47h", "119m", "119s": a unit once the value is two of it (kubectl's AGE)
};

// Whole seconds as text; negative prints "0s".
std::string duration_text(int64_t seconds, DurationStyle style = DurationStyle::kTwoUnits);

}  // namespace sluice
