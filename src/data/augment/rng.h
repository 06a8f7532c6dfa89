// Per-sample random numbers. Every random draw of a sample comes from a generator seeded by
// (seed, epoch, sample index), so a batch does not depend on which thread built it or when, and a
// resumed run continues the same stream. The generator is SplitMix64-seeded xoshiro256**.
#pragma once
#include <cmath>
#include <cstdint>

namespace kestrel {

class SampleRng {
 public:
  SampleRng(uint64_t seed, uint64_t epoch, uint64_t index, uint64_t stream = 0) {
    uint64_t x = seed * 0x9E3779B97F4A7C15ull ^ (epoch + 0x632BE59BD9B4E019ull) * 0xD1B54A32D192ED03ull ^
                 (index + 1) * 0xBF58476D1CE4E5B9ull ^ (stream + 7) * 0x94D049BB133111EBull;
    for (auto& w : s_) w = splitmix(x);
  }
  uint64_t next_u64() {
    const uint64_t r = rotl(s_[1] * 5, 7) * 9, t = s_[1] << 17;
    s_[2] ^= s_[0], s_[3] ^= s_[1], s_[1] ^= s_[2], s_[0] ^= s_[3], s_[2] ^= t, s_[3] = rotl(s_[3], 45);
    return r;
  }
  // Uniform double in [0, 1) with 53 random bits (like Python's random.random()).
  double random() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }
  double uniform(double a, double b) { return a + (b - a) * random(); }
  // Uniform integer in [0, n).
  uint64_t below(uint64_t n) { return static_cast<uint64_t>(random() * static_cast<double>(n)); }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  static uint64_t splitmix(uint64_t& x) {
    uint64_t z = (x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  uint64_t s_[4];
};

}  // namespace kestrel
