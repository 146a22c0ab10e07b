// The switch's own random numbers (RED marking, random loss): SplitMix64
// (Steele, Lea, Flood, "Fast splittable pseudorandom number generators",
// OOPSLA 2014). Seeded per switch, so a run replays exactly.
#pragma once

#include <cstdint>

namespace tita::fabric {

class Rng {
 public:
  explicit Rng(uint64_t seed = 1) : state_(seed) {}
  void seed(uint64_t s) { state_ = s; }

  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1), 53 bits.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

 private:
  uint64_t state_;
};

// The SplitMix64 output function on its own: a 64-bit mixer for hashing.
constexpr uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace tita::fabric
