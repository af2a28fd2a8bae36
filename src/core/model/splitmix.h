#pragma once
// splitmix64's finaliser: a 64-bit value mixed into another, for seeded, portable hashing (the
// simulator's memory model, generated names, trace ids). Not for secrets.
#include <cstdint>

namespace sluice {

inline uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace sluice
