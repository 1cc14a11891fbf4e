// File: src/trainer/narrow_linear.cc
//
// x W^T + b for narrow outputs (include/tessera/aggregate.h,
// narrow_linear): the first layer of a GNN maps many input rows (every
// sampled node) to few columns, a shape general GEMM libraries block badly
// (OpenBLAS: 10 GFLOPS forward, 3 backward on this machine's vCPUs). Here a
// row tile of 8 rows x 16 columns stays in registers while the inner
// dimension streams by, and the weight gradient is summed per thread over
// row tiles that stay in L2, then reduced.
#include <ATen/Parallel.h>
#include <torch/autograd.h>
#include <torch/nn/functional/linear.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "fmt/format.h"
#include "include/tessera/aggregate.h"
#include "include/tessera/dist.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define TESSERA_SIMD_CLONES \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define TESSERA_SIMD_CLONES
#endif

namespace tessera::nn {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

constexpr int64_t kCols = 16;  // Output columns per register tile.
constexpr int64_t kRows = 8;   // Input rows per register tile.

// y[r0..r1) = x wt (+ b): x [n, in], wt [in, out_pad] (out padded to
// kCols with zero columns), y [n, out].
TESSERA_SIMD_CLONES void ForwardRows(const float* __restrict x, const float* __restrict wt,
                                     const float* __restrict bias, float* __restrict y,
                                     int64_t in, int64_t out, int64_t out_pad, int64_t r0,
                                     int64_t r1) {
  for (int64_t c = 0; c < out_pad; c += kCols) {
    const int64_t width = std::min(kCols, out - c);
    for (int64_t r = r0; r < r1; r += kRows) {
      const int64_t rows = std::min(kRows, r1 - r);
      float acc[kRows][kCols] = {};
      if (rows == kRows) {
        for (int64_t k = 0; k < in; ++k) {
          const float* __restrict w = wt + k * out_pad + c;
          for (int64_t i = 0; i < kRows; ++i) {
            const float v = x[(r + i) * in + k];
            for (int64_t j = 0; j < kCols; ++j) acc[i][j] += v * w[j];
          }
        }
      } else {
        for (int64_t k = 0; k < in; ++k) {
          const float* __restrict w = wt + k * out_pad + c;
          for (int64_t i = 0; i < rows; ++i) {
            const float v = x[(r + i) * in + k];
            for (int64_t j = 0; j < kCols; ++j) acc[i][j] += v * w[j];
          }
        }
      }
      for (int64_t i = 0; i < rows; ++i) {
        float* __restrict o = y + (r + i) * out + c;
        for (int64_t j = 0; j < width; ++j) o[j] = acc[i][j] + (bias ? bias[c + j] : 0.0f);
      }
    }
  }
}

// gwt [in, out_pad] += x[r0..r1)^T g[r0..r1): g [n, out]. Rows in tiles
// that stay in cache while every block of 8 inputs x 16 outputs is summed
// in registers.
TESSERA_SIMD_CLONES void WeightGradRows(const float* __restrict x, const float* __restrict g,
                                        float* __restrict gwt, int64_t in, int64_t out,
                                        int64_t out_pad, int64_t r0, int64_t r1) {
  constexpr int64_t kTile = 256, kIn = 8;
  float gpad[kTile][kCols];
  for (int64_t t = r0; t < r1; t += kTile) {
    const int64_t rows = std::min(kTile, r1 - t);
    for (int64_t c = 0; c < out_pad; c += kCols) {
      const int64_t width = std::min(kCols, out - c);
      for (int64_t i = 0; i < rows; ++i) {
        for (int64_t j = 0; j < kCols; ++j) gpad[i][j] = j < width ? g[(t + i) * out + c + j] : 0.0f;
      }
      for (int64_t k = 0; k < in; k += kIn) {
        const int64_t ks = std::min(kIn, in - k);
        float acc[kIn][kCols] = {};
        for (int64_t i = 0; i < rows; ++i) {
          const float* __restrict xr = x + (t + i) * in + k;
          for (int64_t a = 0; a < kIn; ++a) {
            const float v = a < ks ? xr[a] : 0.0f;
            for (int64_t j = 0; j < kCols; ++j) acc[a][j] += v * gpad[i][j];
          }
        }
        for (int64_t a = 0; a < ks; ++a) {
          for (int64_t j = 0; j < kCols; ++j) gwt[(k + a) * out_pad + c + j] += acc[a][j];
        }
      }
    }
  }
}

int64_t Padded(int64_t out) { return (out + kCols - 1) / kCols * kCols; }

// wt [in, out_pad]: W^T with zero columns up to a multiple of kCols.
torch::Tensor PaddedTranspose(const torch::Tensor& weight) {
  const int64_t out = weight.size(0), in = weight.size(1);
  torch::Tensor wt = torch::zeros({in, Padded(out)}, weight.options());
  wt.narrow(1, 0, out).copy_(weight.t());
  return wt;
}

class NarrowLinearOp : public torch::autograd::Function<NarrowLinearOp> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, torch::Tensor x, torch::Tensor weight,
                               c10::optional<torch::Tensor> bias) {
    const int64_t n = x.size(0), in = x.size(1), out = weight.size(0);
    torch::Tensor wt = PaddedTranspose(weight.detach());
    torch::Tensor b = bias ? bias->detach().contiguous() : torch::Tensor();
    torch::Tensor y = torch::empty({n, out}, x.options());
    const float* xp = x.data_ptr<float>();
    const float* wp = wt.data_ptr<float>();
    const float* bp = b.defined() ? b.data_ptr<float>() : nullptr;
    float* yp = y.data_ptr<float>();
    const int64_t out_pad = Padded(out);
    at::parallel_for(0, (n + kRows - 1) / kRows, 64, [&](int64_t t0, int64_t t1) {
      ForwardRows(xp, wp, bp, yp, in, out, out_pad, t0 * kRows, std::min(n, t1 * kRows));
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
    const int64_t n = x.size(0), in = x.size(1), out = weight.size(0), out_pad = Padded(out);
    torch::Tensor grad_x, grad_w, grad_b;
    if (ctx->needs_input_grad(0)) grad_x = torch::mm(g, weight);
    if (ctx->needs_input_grad(1)) {
      // One partial sum per thread, then their total.
      const int64_t threads = at::get_num_threads();
      torch::Tensor partial = torch::zeros({threads, in, out_pad}, x.options());
      const float* xp = x.data_ptr<float>();
      const float* gp = g.data_ptr<float>();
      float* pp = partial.data_ptr<float>();
      const int64_t tiles = (n + 255) / 256;
      at::parallel_for(0, tiles, 1, [&](int64_t t0, int64_t t1) {
        float* mine = pp + at::get_thread_num() * in * out_pad;
        WeightGradRows(xp, gp, mine, in, out, out_pad, t0 * 256, std::min(n, t1 * 256));
      });
      grad_w = partial.sum(0).narrow(1, 0, out).t().contiguous();
    }
    if (ctx->saved_data["bias"].toBool() && ctx->needs_input_grad(2)) grad_b = g.sum(0);
    return {grad_x, grad_w, grad_b};
  }
};

}  // namespace

bool narrow_linear_applies(const torch::Tensor& x, const torch::Tensor& weight) {
  return x.dim() == 2 && x.scalar_type() == torch::kFloat32 && x.is_contiguous() &&
         weight.scalar_type() == torch::kFloat32 && weight.dim() == 2 &&
         weight.size(0) <= kNarrowLinearMaxOut && x.size(1) == weight.size(1) &&
         x.device().is_cpu();
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
  if (!narrow_linear_applies(x.contiguous(), weight)) {
    return torch::nn::functional::linear(x, weight, bias);
  }
  c10::optional<torch::Tensor> b;
  if (bias.defined()) b = bias.to(torch::kFloat32);
  return NarrowLinearOp::apply(x.contiguous(), weight, b);
}

}  // namespace tessera::nn
