// File: src/sampling/radix_sort.h
//
// The packed-key radix sort the block builders share (internal to
// src/sampling): keys are (value << index_bits) | index, so sorting by the
// value bits keeps entries of equal value in index order.
#ifndef TESSERA_SRC_SAMPLING_RADIX_SORT_H_
#define TESSERA_SRC_SAMPLING_RADIX_SORT_H_

#include <algorithm>
#include <cstdint>
#include <vector>

namespace tessera::sampling::internal {

// Bits needed for values up to v (0 for 0).
inline int BitsFor(uint64_t v) { return v == 0 ? 0 : 64 - __builtin_clzll(v); }

// Sorts `a` by its bits [lo, hi), stably (LSD radix, 11 bits a pass, the
// counts of every pass taken in one read); the bits below `lo` hold each
// entry's original index, so for short arrays a plain sort of the whole
// value gives the same order. `Vec` is a vector of uint64_t (any allocator).
template <typename Vec>
inline void RadixSort(Vec& a, int lo, int hi, Vec& tmp) {
  if (a.size() < 512) {
    std::sort(a.begin(), a.end());
    return;
  }
  constexpr int kDigit = 11;
  constexpr size_t kBuckets = size_t{1} << kDigit;
  const int passes = hi > lo ? (hi - lo + kDigit - 1) / kDigit : 0;
  if (passes == 0) return;
  tmp.resize(a.size());
  std::vector<size_t> count(static_cast<size_t>(passes) * kBuckets, 0);
  auto mask_of = [&](int p) {
    return (uint64_t{1} << std::min(kDigit, hi - (lo + p * kDigit))) - 1;
  };
  if (passes == 2) {  // The common case (ids up to 2^22), unrolled.
    const uint64_t mask0 = mask_of(0), mask1 = mask_of(1);
    const int shift1 = lo + kDigit;
    for (uint64_t x : a) {
      ++count[(x >> lo) & mask0];
      ++count[kBuckets + ((x >> shift1) & mask1)];
    }
  } else {
    for (uint64_t x : a) {
      for (int p = 0; p < passes; ++p) {
        ++count[p * kBuckets + ((x >> (lo + p * kDigit)) & mask_of(p))];
      }
    }
  }
  for (int p = 0; p < passes; ++p) {
    size_t* c = count.data() + p * kBuckets;
    size_t sum = 0;
    for (size_t b = 0; b < kBuckets; ++b) {
      const size_t n = c[b];
      c[b] = sum;
      sum += n;
    }
    const int shift = lo + p * kDigit;
    const uint64_t mask = mask_of(p);
    for (uint64_t x : a) tmp[c[(x >> shift) & mask]++] = x;
    a.swap(tmp);
  }
}

}  // namespace tessera::sampling::internal

#endif  // TESSERA_SRC_SAMPLING_RADIX_SORT_H_
