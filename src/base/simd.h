// File: src/base/simd.h
//
// TESSERA_SIMD_CLONES compiles a hot loop's function for AVX-512, AVX2 and
// the baseline, and picks the best at load time (GCC's target_clones): the
// Debian packages target plain x86-64, so without it loops vectorise for
// SSE2 only. Elsewhere (clang, other CPUs) it is empty.
#ifndef TESSERA_SRC_BASE_SIMD_H_
#define TESSERA_SRC_BASE_SIMD_H_

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define TESSERA_SIMD_CLONES \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define TESSERA_SIMD_CLONES
#endif

#endif  // TESSERA_SRC_BASE_SIMD_H_
