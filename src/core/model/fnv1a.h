#pragma once
// FNV-1a, 64 bit: a stable hash of a text, the same on every machine and build (a namespace's
// pod uid, the check of an agent state file's slot). Not for secrets.
#include <cstdint>
#include <string_view>

namespace sluice {

inline uint64_t fnv1a64(std::string_view text) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

}  // namespace sluice
