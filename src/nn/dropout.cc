// File: src/nn/dropout.cc
//
// Dropout whose mask is a hash of (key, element index), not a Bernoulli
// draw per element (include/tessera/nn/aggregate.h, dropout). LibTorch 1.13's
// CPU bernoulli_ draws each element from one mt19937 stream on one thread:
// 7 ns per element, 8 % of an R-GCN epoch. A counter-based mask vectorises,
// splits over threads, and is recomputed in the backward instead of kept.
#include <ATen/Parallel.h>
#include <torch/autograd.h>

#include <cstdint>
#include <limits>

#include "fmt/format.h"
#include "src/base/simd.h"
#include "tessera/dist.h"
#include "tessera/nn/aggregate.h"

namespace tessera::nn {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

// murmur3's 32-bit finaliser: every input bit flips each output bit with
// probability ~1/2.
inline __attribute__((always_inline)) uint32_t Mix(uint32_t h) {
  h ^= h >> 16;
  h *= 0x85ebca6bu;
  h ^= h >> 13;
  h *= 0xc2b2ae35u;
  h ^= h >> 16;
  return h;
}

struct Mask {
  uint32_t k0, k1;     // The key.
  uint32_t threshold;  // An element is kept when its hash is >= threshold.
  double scale;        // 1 / (1 - p).
};

// Element i's hash: two mixing rounds over the index and the key.
inline __attribute__((always_inline)) uint32_t HashOf(const Mask& m, uint64_t i) {
  uint32_t lo = static_cast<uint32_t>(i), hi = static_cast<uint32_t>(i >> 32);
  return Mix(Mix(lo ^ m.k0) + (hi ^ m.k1) * 0x9e3779b1u);
}

// y[i] = keep(i) ? x[i] * scale : 0 for i in [begin, end).
template <typename T>
inline __attribute__((always_inline)) void ApplyImpl(const Mask& m, const T* x, T* y, int64_t begin,
                                                     int64_t end) {
  const T scale = static_cast<T>(m.scale);
  for (int64_t i = begin; i < end; ++i) {
    y[i] = HashOf(m, static_cast<uint64_t>(i)) >= m.threshold ? x[i] * scale : T(0);
  }
}

TESSERA_SIMD_CLONES void ApplyRange(const Mask& m, const float* x, float* y, int64_t b, int64_t e) {
  ApplyImpl(m, x, y, b, e);
}
TESSERA_SIMD_CLONES void ApplyRange(const Mask& m, const double* x, double* y, int64_t b,
                                    int64_t e) {
  ApplyImpl(m, x, y, b, e);
}

// out = mask(in) on LibTorch's intra-op threads; in contiguous.
torch::Tensor Apply(const Mask& m, const torch::Tensor& in) {
  torch::Tensor out = torch::empty_like(in, at::MemoryFormat::Contiguous);
  const int64_t n = in.numel();
  AT_DISPATCH_FLOATING_TYPES(in.scalar_type(), "tessera::nn::dropout", [&] {
    const scalar_t* x = in.data_ptr<scalar_t>();
    scalar_t* y = out.data_ptr<scalar_t>();
    at::parallel_for(0, n, 1 << 16, [&](int64_t b, int64_t e) { ApplyRange(m, x, y, b, e); });
  });
  return out;
}

class DropoutOp : public torch::autograd::Function<DropoutOp> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, torch::Tensor x, int64_t key, double p) {
    const double keep = 1 - p;
    const double threshold = p * 4294967296.0;
    Mask m{static_cast<uint32_t>(key), static_cast<uint32_t>(static_cast<uint64_t>(key) >> 32),
           threshold >= 4294967295.0 ? std::numeric_limits<uint32_t>::max()
                                     : static_cast<uint32_t>(threshold),
           1 / keep};
    ctx->saved_data["key"] = key;
    ctx->saved_data["p"] = p;
    return Apply(m, x);
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    // The same mask, recomputed from the key; through apply(), so that a
    // backward with create_graph=True is differentiable (dropout is linear).
    torch::Tensor g = grads[0].contiguous();
    torch::Tensor dx =
        DropoutOp::apply(g, ctx->saved_data["key"].toInt(), ctx->saved_data["p"].toDouble());
    return {dx, torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor dropout(const torch::Tensor& x, double p, bool training) {
  if (!(p >= 0 && p <= 1)) {
    throw dist::Error(fmt::format("dropout: probability {} is outside [0, 1]", p));
  }
  if (!x.is_floating_point()) {
    throw dist::Error(fmt::format("dropout: a floating-point tensor is expected, not {}",
                                  c10::toString(x.scalar_type())));
  }
  if (!training || p == 0) return x;
  const auto dtype = x.scalar_type();
  if (!x.device().is_cpu() || (dtype != torch::kFloat32 && dtype != torch::kFloat64)) {
    return torch::dropout(x, p, training);  // Half precision, other devices: torch's.
  }
  if (p == 1) return x * 0;  // Keeps the graph (and x's dtype) as torch does.
  // The key from torch's default generator: torch::manual_seed repeats it.
  int64_t key =
      torch::randint(std::numeric_limits<int64_t>::max(), {1}, torch::kInt64).item<int64_t>();
  return DropoutOp::apply(x.contiguous(), key, p);
}

}  // namespace tessera::nn
