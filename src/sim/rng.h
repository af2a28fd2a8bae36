#pragma once
// The simulator's one seeded generator (house rule 5). Draws are computed here from raw 64-bit
// outputs rather than with <random> distributions, whose algorithms differ between standard
// libraries: the same seed gives the same trace everywhere.
#include <cmath>
#include <cstdint>
#include <random>

namespace sluice::sim {

class Rng {
 public:
  explicit Rng(uint64_t seed) : engine_(seed) {}
  // Uniform in [0, 1).
  double uniform() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }
  // Exponential with the given rate (> 0).
  double exponential(double rate) { return -std::log1p(-uniform()) / rate; }
  // Log-uniform in [lo, hi] (0 < lo <= hi).
  double log_uniform(double lo, double hi) {
    return std::exp(std::log(lo) + uniform() * (std::log(hi) - std::log(lo)));
  }
  // Uniform integer in [0, n) (n > 0).
  uint64_t below(uint64_t n) { return engine_() % n; }

 private:
  std::mt19937_64 engine_;
};

}  // namespace sluice::sim
