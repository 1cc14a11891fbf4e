// File: src/base/random.h
//
// Rng: a small, fast, deterministic pseudo-random generator (xoshiro256++,
// seeded through splitmix64). Streams are derived from (seed, stream, index)
// so that work split into chunks gives the same numbers whatever the number of
// threads. Not thread-safe: one Rng per thread.
#ifndef TESSERA_SRC_BASE_RANDOM_H_
#define TESSERA_SRC_BASE_RANDOM_H_

#include <cmath>
#include <cstdint>

namespace tessera {

inline uint64_t SplitMix64(uint64_t* state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

class Rng {
 public:
  explicit Rng(uint64_t seed, uint64_t stream = 0, uint64_t index = 0) {
    uint64_t sm = seed ^ (0x6A09E667F3BCC909ull * (stream + 1)) ^ (0xBB67AE8584CAA73Bull * index);
    for (uint64_t& word : s_) word = SplitMix64(&sm);
  }

  uint64_t Next() {
    const uint64_t result = Rotl(s_[0] + s_[3], 23) + s_[0];
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = Rotl(s_[3], 45);
    return result;
  }
  // Uniform in [0, 1).
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }
  // Uniform in [0, n) (Lemire's multiply-shift; bias below 2^-64 * n).
  uint64_t Below(uint64_t n) {
    __extension__ using Uint128 = unsigned __int128;
    return static_cast<uint64_t>((static_cast<Uint128>(Next()) * n) >> 64);
  }
  // Standard normal (Marsaglia polar method; caches the second value).
  double Normal() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    double u, v, s;
    do {
      u = 2.0 * Uniform() - 1.0;
      v = 2.0 * Uniform() - 1.0;
      s = u * u + v * v;
    } while (s >= 1.0 || s == 0.0);
    double f = std::sqrt(-2.0 * std::log(s) / s);
    spare_ = v * f;
    has_spare_ = true;
    return u * f;
  }

 private:
  static uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
  double spare_ = 0;
  bool has_spare_ = false;
};

}  // namespace tessera

#endif  // TESSERA_SRC_BASE_RANDOM_H_
