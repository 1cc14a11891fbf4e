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

// Sorts `a` by its bits [lo, hi), stably (LSD radix, 11 bits a pass); the
// bits below `lo` hold each entry's original index, so for short arrays a
// plain sort of the whole value gives the same order.
inline void RadixSort(std::vector<uint64_t>& a, int lo, int hi, std::vector<uint64_t>& tmp) {
  if (a.size() < 512) {
    std::sort(a.begin(), a.end());
    return;
  }
  constexpr int kDigit = 11;
  tmp.resize(a.size());
  std::vector<size_t> count;
  for (int shift = lo; shift < hi; shift += kDigit) {
    int width = std::min(kDigit, hi - shift);
    uint64_t mask = (uint64_t{1} << width) - 1;
    count.assign((size_t{1} << width) + 1, 0);
    for (uint64_t x : a) ++count[((x >> shift) & mask) + 1];
    for (size_t b = 1; b < count.size(); ++b) count[b] += count[b - 1];
    for (uint64_t x : a) tmp[count[(x >> shift) & mask]++] = x;
    a.swap(tmp);
  }
}

}  // namespace tessera::sampling::internal

#endif  // TESSERA_SRC_SAMPLING_RADIX_SORT_H_
