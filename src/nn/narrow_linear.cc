// File: src/nn/narrow_linear.cc
//
// x W^T (+ b) for narrow outputs (include/tessera/nn/aggregate.h,
// narrow_linear). A GNN's first layer maps every sampled node (~100k rows
// of 100 features per GraphSAGE batch) to a few columns; on that shape
// OpenBLAS's GEMM and its weight gradient were 63 % of a GraphSAGE step.
// Here, with AVX-512: the forward keeps 8 rows x 16 (or 32) outputs in
// registers while the inner dimension streams by (one broadcast FMA per
// row and input); the weight gradient keeps 12 inputs x 16 (or 32) outputs
// in registers over a tile of rows that stays in L2, one partial sum per
// thread. Without AVX-512, or wider outputs, torch's linear runs instead.
#include <ATen/Parallel.h>
#include <torch/autograd.h>
#include <torch/nn/functional/linear.h>

#include <algorithm>
#include <cstdint>

#include "fmt/format.h"
#include "tessera/dist.h"
#include "tessera/nn/aggregate.h"

#if defined(__x86_64__) && defined(__GNUC__)
#define TESSERA_NARROW_LINEAR 1
#include <immintrin.h>
#else
#define TESSERA_NARROW_LINEAR 0
#endif

namespace tessera::nn {

#if TESSERA_NARROW_LINEAR
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

constexpr int64_t kRows = 8;     // Forward: rows per register tile.
constexpr int64_t kInputs = 12;  // Weight gradient: inputs per register tile.
constexpr int64_t kTile = 256;   // Weight gradient: rows per cache tile.

bool HaveAvx512() {
  static const bool have = __builtin_cpu_supports("avx512f");
  return have;
}

// y[r0, r1) = x wt + b, V = out_pad / 16 vectors per row: x [n, in], wt
// [in, 16 V] (W^T, zero columns past `out`), b [16 V] (zero past `out`), y
// [n, out].
template <int V>
__attribute__((target("avx512f"))) void ForwardRows(const float* x, const float* wt, const float* b,
                                                    float* y, int64_t in, int64_t out, int64_t r0,
                                                    int64_t r1) {
  const __mmask16 tail = static_cast<__mmask16>((1u << (out - 16 * (V - 1))) - 1);
  int64_t r = r0;
  for (; r + kRows <= r1; r += kRows) {
    __m512 acc[kRows][V];
    for (int i = 0; i < kRows; ++i) {
      for (int v = 0; v < V; ++v) acc[i][v] = _mm512_loadu_ps(b + 16 * v);
    }
    const float* xr = x + r * in;
    for (int64_t k = 0; k < in; ++k) {
      __m512 w[V];
      for (int v = 0; v < V; ++v) w[v] = _mm512_loadu_ps(wt + k * 16 * V + 16 * v);
      for (int i = 0; i < kRows; ++i) {
        const __m512 xv = _mm512_set1_ps(xr[i * in + k]);
        for (int v = 0; v < V; ++v) acc[i][v] = _mm512_fmadd_ps(xv, w[v], acc[i][v]);
      }
    }
    for (int i = 0; i < kRows; ++i) {
      float* o = y + (r + i) * out;
      for (int v = 0; v + 1 < V; ++v) _mm512_storeu_ps(o + 16 * v, acc[i][v]);
      _mm512_mask_storeu_ps(o + 16 * (V - 1), tail, acc[i][V - 1]);
    }
  }
  for (; r < r1; ++r) {  // The last rows, one at a time.
    __m512 acc[V];
    for (int v = 0; v < V; ++v) acc[v] = _mm512_loadu_ps(b + 16 * v);
    for (int64_t k = 0; k < in; ++k) {
      const __m512 xv = _mm512_set1_ps(x[r * in + k]);
      for (int v = 0; v < V; ++v) {
        acc[v] = _mm512_fmadd_ps(xv, _mm512_loadu_ps(wt + k * 16 * V + 16 * v), acc[v]);
      }
    }
    float* o = y + r * out;
    for (int v = 0; v + 1 < V; ++v) _mm512_storeu_ps(o + 16 * v, acc[v]);
    _mm512_mask_storeu_ps(o + 16 * (V - 1), tail, acc[V - 1]);
  }
}

// gwt [in, 16 V] += x[r0, r1)^T g[r0, r1): g [n, out].
template <int V>
__attribute__((target("avx512f"))) void WeightGradRows(const float* x, const float* g, float* gwt,
                                                       int64_t in, int64_t out, int64_t r0,
                                                       int64_t r1) {
  const __mmask16 tail = static_cast<__mmask16>((1u << (out - 16 * (V - 1))) - 1);
  for (int64_t t = r0; t < r1; t += kTile) {
    const int64_t t1 = std::min(r1, t + kTile);
    for (int64_t k0 = 0; k0 < in; k0 += kInputs) {
      const int64_t ks = std::min(kInputs, in - k0);
      __m512 acc[kInputs][V];
      for (int a = 0; a < kInputs; ++a) {
        for (int v = 0; v < V; ++v) acc[a][v] = _mm512_setzero_ps();
      }
      for (int64_t r = t; r < t1; ++r) {
        __m512 gv[V];
        for (int v = 0; v + 1 < V; ++v) gv[v] = _mm512_loadu_ps(g + r * out + 16 * v);
        gv[V - 1] = _mm512_maskz_loadu_ps(tail, g + r * out + 16 * (V - 1));
        const float* xr = x + r * in + k0;
        // Constant bounds everywhere, so that acc stays in registers; inputs
        // past `in` (the last chunk) count as zeros and are never read.
        for (int a = 0; a < kInputs; ++a) {
          const __m512 xv = _mm512_set1_ps(a < ks ? xr[a] : 0.0f);
          for (int v = 0; v < V; ++v) acc[a][v] = _mm512_fmadd_ps(xv, gv[v], acc[a][v]);
        }
      }
      for (int a = 0; a < kInputs; ++a) {
        if (a >= ks) break;
        for (int v = 0; v < V; ++v) {
          float* p = gwt + (k0 + a) * 16 * V + 16 * v;
          _mm512_storeu_ps(p, _mm512_add_ps(_mm512_loadu_ps(p), acc[a][v]));
        }
      }
    }
  }
}

int Vectors(int64_t out) { return static_cast<int>((out + 15) / 16); }

class NarrowLinearOp : public torch::autograd::Function<NarrowLinearOp> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, torch::Tensor x, torch::Tensor weight,
                               c10::optional<torch::Tensor> bias) {
    const int64_t n = x.size(0), in = x.size(1), out = weight.size(0);
    const int V = Vectors(out);
    torch::Tensor wt = torch::zeros({in, 16 * V}, x.options());
    wt.narrow(1, 0, out).copy_(weight.detach().t());
    torch::Tensor b = torch::zeros({16 * V}, x.options());
    if (bias) b.narrow(0, 0, out).copy_(bias->detach());
    torch::Tensor y = torch::empty({n, out}, x.options());
    const float* xp = x.data_ptr<float>();
    const float* wp = wt.data_ptr<float>();
    const float* bp = b.data_ptr<float>();
    float* yp = y.data_ptr<float>();
    at::parallel_for(0, (n + kRows - 1) / kRows, 32, [&](int64_t b0, int64_t b1) {
      const int64_t r0 = b0 * kRows, r1 = std::min(n, b1 * kRows);
      if (V == 1) {
        ForwardRows<1>(xp, wp, bp, yp, in, out, r0, r1);
      } else {
        ForwardRows<2>(xp, wp, bp, yp, in, out, r0, r1);
      }
    });
    ctx->save_for_backward({x, weight});
    ctx->saved_data["bias"] = bias.has_value();
    return y;
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor& x = saved[0];
    const torch::Tensor& weight = saved[1];
    torch::Tensor g = grads[0].contiguous();
    const int64_t n = x.size(0), in = x.size(1), out = weight.size(0);
    const int V = Vectors(out);
    torch::Tensor grad_x, grad_w, grad_b;
    if (ctx->needs_input_grad(0)) grad_x = torch::mm(g, weight);
    if (ctx->needs_input_grad(1) && torch::GradMode::is_enabled()) {
      grad_w = torch::mm(g.t(), x);  // create_graph: differentiable.
    } else if (ctx->needs_input_grad(1)) {
      // One partial sum per thread (rows split in whole cache tiles), then
      // their total.
      const int64_t threads = at::get_num_threads();
      torch::Tensor partial = torch::zeros({threads, in, 16 * V}, x.options());
      const float* xp = x.data_ptr<float>();
      const float* gp = g.data_ptr<float>();
      float* pp = partial.data_ptr<float>();
      at::parallel_for(0, (n + kTile - 1) / kTile, 1, [&](int64_t t0, int64_t t1) {
        float* mine = pp + at::get_thread_num() * in * 16 * V;
        const int64_t r0 = t0 * kTile, r1 = std::min(n, t1 * kTile);
        if (V == 1) {
          WeightGradRows<1>(xp, gp, mine, in, out, r0, r1);
        } else {
          WeightGradRows<2>(xp, gp, mine, in, out, r0, r1);
        }
      });
      grad_w = partial.sum(0).narrow(1, 0, out).t().contiguous();
    }
    if (ctx->saved_data["bias"].toBool() && ctx->needs_input_grad(2)) grad_b = g.sum(0);
    return {grad_x, grad_w, grad_b};
  }
};

}  // namespace
#endif  // TESSERA_NARROW_LINEAR

bool narrow_linear_applies(const torch::Tensor& x, const torch::Tensor& weight) {
#if !TESSERA_NARROW_LINEAR
  return false;
#else
  return HaveAvx512() && x.dim() == 2 && x.scalar_type() == torch::kFloat32 &&
         weight.scalar_type() == torch::kFloat32 && weight.dim() == 2 && weight.size(0) >= 1 &&
         weight.size(0) <= kNarrowLinearMaxOut && x.size(1) == weight.size(1) &&
         x.device().is_cpu() && weight.device().is_cpu();
#endif
}

torch::Tensor narrow_linear(const torch::Tensor& x, const torch::Tensor& weight,
                            const torch::Tensor& bias) {
  if (x.dim() != 2 || weight.dim() != 2 || x.size(1) != weight.size(1)) {
    throw dist::Error(fmt::format("narrow_linear: input [{}] and weight [{}] do not match",
                                  fmt::join(x.sizes(), ", "), fmt::join(weight.sizes(), ", ")));
  }
  if (bias.defined() && (bias.dim() != 1 || bias.size(0) != weight.size(0))) {
    throw dist::Error(fmt::format("narrow_linear: bias [{}] for {} outputs",
                                  fmt::join(bias.sizes(), ", "), weight.size(0)));
  }
  if (!narrow_linear_applies(x, weight) ||
      (bias.defined() && bias.scalar_type() != torch::kFloat32)) {
    return torch::nn::functional::linear(x, weight, bias);
  }
#if TESSERA_NARROW_LINEAR
  c10::optional<torch::Tensor> b;
  if (bias.defined()) b = bias;
  return NarrowLinearOp::apply(x.contiguous(), weight, b);
#else
  return torch::nn::functional::linear(x, weight, bias);  // Not reached: never applies.
#endif
}

}  // namespace tessera::nn
