// File: src/nn/aggregate.cc
//
// CSR aggregation kernels and their backward (include/tessera/nn/aggregate.h).
//
// Every kernel is a loop over a range of rows, one range per intra-op
// thread (at::parallel_for): the forward over destinations, the backward of
// the source rows over sources (through the transposed CSR), the backward of
// edge weights over destinations again. Each thread writes only its own
// rows, so there are no atomics and no per-edge intermediate tensors. The
// float loops are compiled for AVX-512, AVX2 + FMA and baseline x86-64, the
// best picked at load time (target_clones), since Debian builds for the
// baseline.
#include "tessera/nn/aggregate.h"

#include <ATen/Parallel.h>
#include <torch/autograd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <limits>
#include <string>

#include "fmt/format.h"
#include "src/base/simd.h"
#include "tessera/dist.h"

#define TESSERA_INLINE inline __attribute__((always_inline))

namespace tessera::nn {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

// Prefetches source row `s` of `base` (rows of `bytes`), an index read a few
// edges ahead. Unsigned arithmetic: an index not yet validated cannot make
// the address computation undefined, and a prefetch never faults.
TESSERA_INLINE void PrefetchRow(const void* base, int64_t s, int64_t bytes) {
  __builtin_prefetch(reinterpret_cast<const void*>(
      reinterpret_cast<uintptr_t>(base) + static_cast<uint64_t>(s) * static_cast<uint64_t>(bytes)));
}
constexpr int64_t kPrefetchDistance = 8;

// The arguments of every row kernel. `width` = columns per head, `heads` =
// per-edge values per edge (1 without weights or with one per edge).
template <typename T>
struct Args {
  const int64_t* indptr;
  const int64_t* indices;
  int64_t num_src, num_dst, num_edges, heads, width;
  const T* h;        // [num_src, heads * width]
  const T* w;        // [num_edges, heads] or null
  const T* inv_deg;  // [num_dst] (backward of mean) or null
  // Transposed CSR (backward of the source rows).
  const int64_t* t_indptr;
  const int64_t* t_dst;
  const int64_t* t_eid;
  const T* grad;  // [num_dst, F] (backward)
  int64_t* arg;   // [num_dst, F] edge of each maximum (max)
  T* out;
};

// ---------------------------------------------------------------- forward

// out[d] = sum (or mean) of w_e h[s_e]; returns false if some source index
// is outside [0, num_src) (those edges are skipped).
template <typename T>
TESSERA_INLINE bool SumRowsImpl(const Args<T>& a, bool mean, int64_t d0, int64_t d1) {
  const int64_t H = a.heads, W = a.width, F = H * W;
  const T* __restrict h = a.h;
  bool ok = true;
  for (int64_t d = d0; d < d1; ++d) {
    T* __restrict o = a.out + d * F;
    for (int64_t j = 0; j < F; ++j) o[j] = T(0);
    const int64_t begin = a.indptr[d], end = a.indptr[d + 1];
    for (int64_t k = begin; k < end; ++k) {
      if (k + kPrefetchDistance < a.num_edges) {
        PrefetchRow(h, a.indices[k + kPrefetchDistance], F * static_cast<int64_t>(sizeof(T)));
      }
      const int64_t s = a.indices[k];
      if (static_cast<uint64_t>(s) >= static_cast<uint64_t>(a.num_src)) {
        ok = false;
        continue;
      }
      const T* __restrict x = h + s * F;
      if (a.w == nullptr) {
        for (int64_t j = 0; j < F; ++j) o[j] += x[j];
      } else if (H == 1) {
        const T w = a.w[k];
        for (int64_t j = 0; j < F; ++j) o[j] += w * x[j];
      } else {
        for (int64_t c = 0; c < H; ++c) {
          const T w = a.w[k * H + c];
          for (int64_t j = c * W; j < (c + 1) * W; ++j) o[j] += w * x[j];
        }
      }
    }
    if (mean && end > begin) {
      const T scale = T(1) / static_cast<T>(end - begin);
      for (int64_t j = 0; j < F; ++j) o[j] *= scale;
    }
  }
  return ok;
}

// out[d][j] = max of w_e h[s_e][j]; arg[d][j] = the edge giving it (-1 and
// out 0 without in-edges).
template <typename T>
TESSERA_INLINE bool MaxRowsImpl(const Args<T>& a, int64_t d0, int64_t d1) {
  const int64_t H = a.heads, W = a.width, F = H * W;
  const T* __restrict h = a.h;
  bool ok = true;
  for (int64_t d = d0; d < d1; ++d) {
    T* __restrict o = a.out + d * F;
    int64_t* __restrict arg = a.arg + d * F;
    for (int64_t j = 0; j < F; ++j) {
      o[j] = -std::numeric_limits<T>::infinity();
      arg[j] = -1;
    }
    const int64_t begin = a.indptr[d], end = a.indptr[d + 1];
    for (int64_t k = begin; k < end; ++k) {
      const int64_t s = a.indices[k];
      if (static_cast<uint64_t>(s) >= static_cast<uint64_t>(a.num_src)) {
        ok = false;
        continue;
      }
      const T* __restrict x = h + s * F;
      for (int64_t c = 0; c < H; ++c) {
        const T w = a.w == nullptr ? T(1) : a.w[k * H + c];
        for (int64_t j = c * W; j < (c + 1) * W; ++j) {
          const T v = w * x[j];
          const bool more = v > o[j];
          o[j] = more ? v : o[j];
          arg[j] = more ? k : arg[j];
        }
      }
    }
    for (int64_t j = 0; j < F; ++j) {
      if (arg[j] < 0) o[j] = T(0);
    }
  }
  return ok;
}

// ---------------------------------------------------------------- backward

// grad_h[s] = sum over s's out-edges e = (s -> d) of w_e inv_deg[d] grad[d]
// (sum / mean), or for max the columns where e gave d's maximum. Returns
// false if a destination or edge of the transpose is out of range (the
// saved CSR was written since the forward; those edges are skipped).
template <typename T>
TESSERA_INLINE bool GradSourceImpl(const Args<T>& a, bool max, int64_t s0, int64_t s1) {
  const int64_t H = a.heads, W = a.width, F = H * W;
  const T* __restrict grad = a.grad;
  bool ok = true;
  for (int64_t s = s0; s < s1; ++s) {
    T* __restrict g = a.out + s * F;
    for (int64_t j = 0; j < F; ++j) g[j] = T(0);
    const int64_t begin = a.t_indptr[s], end = a.t_indptr[s + 1];
    for (int64_t p = begin; p < end; ++p) {
      const int64_t d = a.t_dst[p];
      if (static_cast<uint64_t>(d) >= static_cast<uint64_t>(a.num_dst) ||
          ((max || a.w != nullptr) &&  // Only they read the edge.
           static_cast<uint64_t>(a.t_eid[p]) >= static_cast<uint64_t>(a.num_edges))) {
        ok = false;
        continue;
      }
      if (p + kPrefetchDistance < end) {
        PrefetchRow(grad, a.t_dst[p + kPrefetchDistance], F * static_cast<int64_t>(sizeof(T)));
      }
      const T* __restrict x = grad + d * F;
      const T scale = a.inv_deg == nullptr ? T(1) : a.inv_deg[d];
      if (max) {
        const int64_t e = a.t_eid[p];
        const int64_t* __restrict arg = a.arg + d * F;
        for (int64_t c = 0; c < H; ++c) {
          const T w = a.w == nullptr ? T(1) : a.w[e * H + c];
          for (int64_t j = c * W; j < (c + 1) * W; ++j) g[j] += arg[j] == e ? w * x[j] : T(0);
        }
      } else if (a.w == nullptr) {
        for (int64_t j = 0; j < F; ++j) g[j] += scale * x[j];
      } else if (H == 1) {
        const T w = scale * a.w[a.t_eid[p]];
        for (int64_t j = 0; j < F; ++j) g[j] += w * x[j];
      } else {
        const int64_t e = a.t_eid[p];
        for (int64_t c = 0; c < H; ++c) {
          const T w = scale * a.w[e * H + c];
          for (int64_t j = c * W; j < (c + 1) * W; ++j) g[j] += w * x[j];
        }
      }
    }
  }
  return ok;
}

// grad_w[e][c] = inv_deg[d] dot(grad[d], h[s]) over head c's columns (sum /
// mean), or over the columns where e gave d's maximum (max). Returns false
// if a source is out of range (as GradSourceImpl).
template <typename T>
TESSERA_INLINE bool GradWeightImpl(const Args<T>& a, bool max, int64_t d0, int64_t d1) {
  const int64_t H = a.heads, W = a.width, F = H * W;
  bool ok = true;
  for (int64_t d = d0; d < d1; ++d) {
    const T* __restrict x = a.grad + d * F;
    const T scale = a.inv_deg == nullptr ? T(1) : a.inv_deg[d];
    for (int64_t k = a.indptr[d]; k < a.indptr[d + 1]; ++k) {
      if (static_cast<uint64_t>(a.indices[k]) >= static_cast<uint64_t>(a.num_src)) {
        ok = false;
        continue;
      }
      const T* __restrict y = a.h + a.indices[k] * F;
      for (int64_t c = 0; c < H; ++c) {
        T dot = T(0);
        if (max) {
          const int64_t* __restrict arg = a.arg + d * F;
          for (int64_t j = c * W; j < (c + 1) * W; ++j) dot += arg[j] == k ? x[j] * y[j] : T(0);
        } else {
          for (int64_t j = c * W; j < (c + 1) * W; ++j) dot += x[j] * y[j];
        }
        a.out[k * H + c] = scale * dot;
      }
    }
  }
  return ok;
}

// The float instances, cloned per instruction set; double uses the
// baseline.
TESSERA_SIMD_CLONES bool SumRowsF(const Args<float>& a, bool mean, int64_t d0, int64_t d1) {
  return SumRowsImpl(a, mean, d0, d1);
}
TESSERA_SIMD_CLONES bool MaxRowsF(const Args<float>& a, int64_t d0, int64_t d1) {
  return MaxRowsImpl(a, d0, d1);
}
TESSERA_SIMD_CLONES bool GradSourceF(const Args<float>& a, bool max, int64_t s0, int64_t s1) {
  return GradSourceImpl(a, max, s0, s1);
}
TESSERA_SIMD_CLONES bool GradWeightF(const Args<float>& a, bool max, int64_t d0, int64_t d1) {
  return GradWeightImpl(a, max, d0, d1);
}
bool SumRows(const Args<float>& a, bool mean, int64_t d0, int64_t d1) {
  return SumRowsF(a, mean, d0, d1);
}
bool SumRows(const Args<double>& a, bool mean, int64_t d0, int64_t d1) {
  return SumRowsImpl(a, mean, d0, d1);
}
bool MaxRows(const Args<float>& a, int64_t d0, int64_t d1) { return MaxRowsF(a, d0, d1); }
bool MaxRows(const Args<double>& a, int64_t d0, int64_t d1) { return MaxRowsImpl(a, d0, d1); }
bool GradSource(const Args<float>& a, bool max, int64_t s0, int64_t s1) {
  return GradSourceF(a, max, s0, s1);
}
bool GradSource(const Args<double>& a, bool max, int64_t s0, int64_t s1) {
  return GradSourceImpl(a, max, s0, s1);
}
bool GradWeight(const Args<float>& a, bool max, int64_t d0, int64_t d1) {
  return GradWeightF(a, max, d0, d1);
}
bool GradWeight(const Args<double>& a, bool max, int64_t d0, int64_t d1) {
  return GradWeightImpl(a, max, d0, d1);
}

// Rows per task so that each holds some 32k multiply-adds.
int64_t Grain(int64_t rows, int64_t edges, int64_t width) {
  const int64_t per_row = std::max<int64_t>(1, (edges / std::max<int64_t>(rows, 1) + 1) * width);
  return std::max<int64_t>(1, (int64_t{1} << 15) / per_row);
}

// Error unless `t` is on the CPU (a 'meta' tensor has no data to read or write).
void CheckCpu(const torch::Tensor& t, const char* op, const char* what) {
  if (t.defined() && !t.device().is_cpu()) {
    throw dist::Error(fmt::format("{}: {} is on device '{}'; these kernels run on the CPU", op,
                                  what, t.device().str()));
  }
}

void CheckIndex(const torch::Tensor& t, const char* what) {
  CheckCpu(t, "aggregate", what);
  if (t.scalar_type() != torch::kInt64 || t.dim() != 1 || !t.is_contiguous()) {
    throw dist::Error(
        fmt::format("aggregate: {} must be a contiguous 1-D int64 tensor, got {} "
                    "of shape [{}]",
                    what, c10::toString(t.scalar_type()), fmt::join(t.sizes(), ", ")));
  }
}

// Checks indptr: starts at 0, never decreases, ends at num_edges.
void CheckIndptr(const torch::Tensor& indptr, int64_t num_edges) {
  CheckIndex(indptr, "indptr");
  if (indptr.size(0) < 1)
    throw dist::Error("aggregate: indptr is empty (it has num_dst + 1 entries)");
  const int64_t* p = indptr.data_ptr<int64_t>();
  const int64_t n = indptr.size(0) - 1;
  if (p[0] != 0 || p[n] != num_edges) {
    throw dist::Error(fmt::format(
        "aggregate: indptr runs from {} to {}, not from 0 to the {} edges", p[0], p[n], num_edges));
  }
  for (int64_t d = 0; d < n; ++d) {
    if (p[d + 1] < p[d]) {
      throw dist::Error(fmt::format("aggregate: indptr decreases at destination {} ({} -> {})", d,
                                    p[d], p[d + 1]));
    }
  }
}

// The saved CSR (and transpose) again before a backward walks them: their
// memory may have been written since the forward through a view autograd
// does not track (numpy, .data). The kernels check each index they read.
void CheckSavedCsr(const torch::Tensor& indptr, const torch::Tensor& indices, int64_t num_src,
                   const torch::Tensor& t_indptr, const torch::Tensor& t_dst,
                   const torch::Tensor& t_eid) {
  CheckIndptr(indptr, indices.size(0));
  if (!t_indptr.defined()) return;
  if (t_indptr.size(0) != num_src + 1 || t_dst.size(0) != indices.size(0) ||
      t_eid.size(0) != indices.size(0)) {
    throw dist::Error("aggregate: the transpose has changed size since the forward");
  }
  CheckIndptr(t_indptr, t_dst.size(0));
}

// The destination of each edge of a CSR: [num_edges].
torch::Tensor EdgeDestinations(const torch::Tensor& indptr) {
  const int64_t num_dst = indptr.size(0) - 1;
  return torch::repeat_interleave(torch::arange(num_dst, indptr.options()),
                                  indptr.slice(0, 1) - indptr.slice(0, 0, -1));
}

template <typename T>
Args<T> MakeArgs(const torch::Tensor& indptr, const torch::Tensor& indices, const torch::Tensor& h,
                 const torch::Tensor& w, int64_t heads) {
  Args<T> a{};
  a.indptr = indptr.data_ptr<int64_t>();
  a.indices = indices.data_ptr<int64_t>();
  a.num_src = h.size(0);
  a.num_dst = indptr.size(0) - 1;
  a.num_edges = indices.size(0);
  a.heads = heads;
  a.width = h.size(1) / heads;  // h is [num_src, F] here.
  a.h = h.data_ptr<T>();
  a.w = w.defined() ? w.data_ptr<T>() : nullptr;
  return a;
}

// 1 / in-degree per destination (0 without in-edges), for the backward of
// the mean.
torch::Tensor InverseDegrees(const torch::Tensor& indptr, torch::ScalarType dtype) {
  torch::Tensor deg = (indptr.slice(0, 1) - indptr.slice(0, 0, -1)).to(dtype);
  return torch::where(deg > 0, deg.reciprocal(), torch::zeros_like(deg));
}

class AggregateOp : public torch::autograd::Function<AggregateOp> {
 public:
  // h [num_src, F] contiguous; w [num_edges, heads] contiguous or undefined;
  // the transpose's tensors undefined until the backward builds them.
  // (Optional tensors, since autograd refuses undefined tensor inputs.)
  static torch::Tensor forward(AutogradContext* ctx, torch::Tensor h,
                               c10::optional<torch::Tensor> w_opt, torch::Tensor indptr,
                               torch::Tensor indices, c10::optional<torch::Tensor> t_indptr,
                               c10::optional<torch::Tensor> t_dst,
                               c10::optional<torch::Tensor> t_eid, int64_t reduce, int64_t heads) {
    const torch::Tensor w = w_opt.value_or(torch::Tensor());
    const int64_t num_dst = indptr.size(0) - 1, F = h.size(1);
    torch::Tensor out = torch::empty({num_dst, F}, h.options());
    torch::Tensor arg;
    if (reduce == static_cast<int64_t>(Reduce::kMax))
      arg = torch::empty({num_dst, F}, indptr.options());
    std::atomic<bool> ok{true};
    AT_DISPATCH_FLOATING_TYPES(h.scalar_type(), "tessera::nn::aggregate", [&] {
      Args<scalar_t> a = MakeArgs<scalar_t>(indptr, indices, h, w, heads);
      a.out = out.data_ptr<scalar_t>();
      a.arg = arg.defined() ? arg.data_ptr<int64_t>() : nullptr;
      at::parallel_for(0, num_dst, Grain(num_dst, a.num_edges, F), [&](int64_t d0, int64_t d1) {
        bool fine = reduce == static_cast<int64_t>(Reduce::kMax)
                        ? MaxRows(a, d0, d1)
                        : SumRows(a, reduce == static_cast<int64_t>(Reduce::kMean), d0, d1);
        if (!fine) ok.store(false, std::memory_order_relaxed);
      });
    });
    if (!ok.load()) {
      throw dist::Error(
          fmt::format("aggregate: a source index is outside [0, {}) (the rows of h)", h.size(0)));
    }
    // The CSR is saved as a variable so that an in-place change of it
    // before the backward is autograd's error.
    ctx->save_for_backward({h, w, indptr, indices, t_indptr.value_or(torch::Tensor()),
                            t_dst.value_or(torch::Tensor()), t_eid.value_or(torch::Tensor())});
    if (arg.defined()) ctx->saved_data["arg"] = arg;
    ctx->saved_data["reduce"] = reduce;
    ctx->saved_data["heads"] = heads;
    return out;
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    const torch::autograd::variable_list saved = ctx->get_saved_variables();
    const torch::Tensor& h = saved[0];
    const torch::Tensor& w = saved[1];
    const torch::Tensor& indptr = saved[2];
    const torch::Tensor& indices = saved[3];
    CheckSavedCsr(indptr, indices, h.size(0), saved[4], saved[5], saved[6]);
    torch::Tensor grad = grads[0].contiguous();
    const int64_t reduce = ctx->saved_data["reduce"].toInt();
    const int64_t heads = ctx->saved_data["heads"].toInt();
    const bool max = reduce == static_cast<int64_t>(Reduce::kMax);
    if (torch::GradMode::is_enabled()) {  // create_graph: a backward autograd can differentiate.
      return DifferentiableBackward(ctx, saved, grad, reduce, heads);
    }
    torch::Tensor arg = max ? ctx->saved_data["arg"].toTensor() : torch::Tensor();
    const int64_t num_dst = indptr.size(0) - 1, F = h.size(1);
    torch::Tensor inv_deg;
    if (reduce == static_cast<int64_t>(Reduce::kMean))
      inv_deg = InverseDegrees(indptr, h.scalar_type());
    torch::Tensor grad_h, grad_w;
    std::atomic<bool> ok{true};
    AT_DISPATCH_FLOATING_TYPES(h.scalar_type(), "tessera::nn::aggregate_backward", [&] {
      Args<scalar_t> a = MakeArgs<scalar_t>(indptr, indices, h, w, heads);
      a.grad = grad.data_ptr<scalar_t>();
      a.arg = arg.defined() ? arg.data_ptr<int64_t>() : nullptr;
      a.inv_deg = inv_deg.defined() ? inv_deg.data_ptr<scalar_t>() : nullptr;
      if (ctx->needs_input_grad(0)) {
        torch::Tensor t_indptr = saved[4], t_dst = saved[5], t_eid = saved[6];
        if (!t_indptr.defined()) {
          CsrTranspose t = TransposeCsr(indptr, indices, h.size(0));
          t_indptr = t.t_indptr, t_dst = t.t_dst, t_eid = t.t_eid;
        }
        a.t_indptr = t_indptr.data_ptr<int64_t>();
        a.t_dst = t_dst.data_ptr<int64_t>();
        a.t_eid = t_eid.data_ptr<int64_t>();
        grad_h = torch::empty_like(h);
        a.out = grad_h.data_ptr<scalar_t>();
        at::parallel_for(0, a.num_src, Grain(a.num_src, a.num_edges, F),
                         [&](int64_t s0, int64_t s1) {
                           if (!GradSource(a, max, s0, s1)) ok.store(false);
                         });
      }
      if (w.defined() && ctx->needs_input_grad(1)) {
        grad_w = torch::empty_like(w);
        a.out = grad_w.data_ptr<scalar_t>();
        at::parallel_for(0, num_dst, Grain(num_dst, a.num_edges, F), [&](int64_t d0, int64_t d1) {
          if (!GradWeight(a, max, d0, d1)) ok.store(false);
        });
      }
    });
    if (!ok.load()) {
      throw dist::Error(
          "aggregate (backward): a source, destination or edge index of the graph is out of "
          "range; was the graph changed since the forward?");
    }
    return {grad_h, grad_w, {}, {}, {}, {}, {}, {}, {}};
  }

 private:
  // The same gradients from differentiable operations (a second
  // derivative, for gradient penalties): for sum and mean the source rows
  // through the aggregation of the transposed CSR and the weights as
  // per-edge dot products; for max each maximum's gradient put back at its
  // edge's source row and weight.
  static tensor_list DifferentiableBackward(AutogradContext* ctx,
                                            const torch::autograd::variable_list& saved,
                                            torch::Tensor grad, int64_t reduce, int64_t heads) {
    const torch::Tensor &h = saved[0], &w = saved[1], &indptr = saved[2], &indices = saved[3];
    torch::Tensor grad_h, grad_w;
    if (reduce == static_cast<int64_t>(Reduce::kMax)) {
      const torch::Tensor arg = ctx->saved_data["arg"].toTensor();  // [D, F]; -1: no edge.
      const torch::Tensor taken = arg >= 0;
      const torch::Tensor edge = arg.masked_select(taken);
      const torch::Tensor col =
          torch::arange(arg.size(1), arg.options()).expand_as(arg).masked_select(taken);
      const torch::Tensor head = col.div(h.size(1) / heads, "floor");
      const torch::Tensor src = indices.index_select(0, edge);
      const torch::Tensor g = grad.masked_select(taken);
      if (ctx->needs_input_grad(0)) {
        const torch::Tensor scaled = w.defined() ? g * w.index({edge, head}) : g;
        grad_h = torch::zeros_like(h).index_put({src, col}, scaled, /*accumulate=*/true);
      }
      if (w.defined() && ctx->needs_input_grad(1)) {
        grad_w = torch::zeros_like(w).index_put({edge, head}, g * h.index({src, col}), true);
      }
      return {grad_h, grad_w, {}, {}, {}, {}, {}, {}, {}};
    }
    if (reduce == static_cast<int64_t>(Reduce::kMean))
      grad = grad * InverseDegrees(indptr, h.scalar_type()).unsqueeze(1);
    if (ctx->needs_input_grad(0)) {
      CsrTranspose t = saved[4].defined() ? CsrTranspose{saved[4], saved[5], saved[6]}
                                          : TransposeCsr(indptr, indices, h.size(0));
      torch::Tensor tw = w.defined() ? w.index_select(0, t.t_eid) : torch::Tensor();
      grad_h = aggregate(t.t_indptr, t.t_dst, grad, Reduce::kSum, tw);
    }
    if (w.defined() && ctx->needs_input_grad(1)) {
      const int64_t E = indices.size(0);
      grad_w = (grad.index_select(0, EdgeDestinations(indptr)) * h.index_select(0, indices))
                   .view({E, heads, h.size(1) / heads})
                   .sum(-1);
    }
    return {grad_h, grad_w, {}, {}, {}, {}, {}, {}, {}};
  }
};

// Softmax over each destination's in-edges, per head: scores [E, H].
class EdgeSoftmaxOp : public torch::autograd::Function<EdgeSoftmaxOp> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, torch::Tensor scores, torch::Tensor indptr) {
    torch::Tensor y = torch::empty_like(scores);
    const int64_t num_dst = indptr.size(0) - 1, H = scores.size(1);
    AT_DISPATCH_FLOATING_TYPES(scores.scalar_type(), "tessera::nn::edge_softmax", [&] {
      const int64_t* p = indptr.data_ptr<int64_t>();
      const scalar_t* x = scores.data_ptr<scalar_t>();
      scalar_t* out = y.data_ptr<scalar_t>();
      at::parallel_for(0, num_dst, Grain(num_dst, scores.size(0), 4 * H),
                       [&](int64_t d0, int64_t d1) {
                         for (int64_t d = d0; d < d1; ++d) {
                           for (int64_t c = 0; c < H; ++c) {
                             scalar_t peak = -std::numeric_limits<scalar_t>::infinity();
                             for (int64_t k = p[d]; k < p[d + 1]; ++k)
                               peak = std::max(peak, x[k * H + c]);
                             scalar_t total = 0;
                             for (int64_t k = p[d]; k < p[d + 1]; ++k) {
                               out[k * H + c] = std::exp(x[k * H + c] - peak);
                               total += out[k * H + c];
                             }
                             for (int64_t k = p[d]; k < p[d + 1]; ++k) out[k * H + c] /= total;
                           }
                         }
                       });
    });
    ctx->save_for_backward({y, indptr});  // indptr changed in place: autograd's error.
    return y;
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    const torch::Tensor y = ctx->get_saved_variables()[0];
    const torch::Tensor indptr = ctx->get_saved_variables()[1];
    CheckIndptr(indptr, y.size(0));  // Written through an untracked view since?
    torch::Tensor g = grads[0].contiguous();
    if (torch::GradMode::is_enabled()) {  // create_graph: differentiable operations.
      const int64_t E = y.size(0);
      torch::Tensor dot =
          aggregate(indptr, torch::arange(E, indptr.options()), g * y, Reduce::kSum);
      return {y * (g - dot.index_select(0, EdgeDestinations(indptr))), {}};
    }
    torch::Tensor gs = torch::empty_like(y);
    const int64_t num_dst = indptr.size(0) - 1, H = y.size(1);
    AT_DISPATCH_FLOATING_TYPES(y.scalar_type(), "tessera::nn::edge_softmax_backward", [&] {
      const int64_t* p = indptr.data_ptr<int64_t>();
      const scalar_t* yy = y.data_ptr<scalar_t>();
      const scalar_t* gg = g.data_ptr<scalar_t>();
      scalar_t* out = gs.data_ptr<scalar_t>();
      at::parallel_for(0, num_dst, Grain(num_dst, y.size(0), 4 * H), [&](int64_t d0, int64_t d1) {
        for (int64_t d = d0; d < d1; ++d) {
          for (int64_t c = 0; c < H; ++c) {
            scalar_t dot = 0;
            for (int64_t k = p[d]; k < p[d + 1]; ++k) dot += gg[k * H + c] * yy[k * H + c];
            for (int64_t k = p[d]; k < p[d + 1]; ++k) {
              out[k * H + c] = yy[k * H + c] * (gg[k * H + c] - dot);
            }
          }
        }
      });
    });
    return {gs, {}};
  }
};

// Per edge in CSR order, the sum of its source's and its destination's row
// ([E, K] from [num_src, K] and [num_dst, K]): DGL's u_add_v.
class UAddVOp : public torch::autograd::Function<UAddVOp> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, torch::Tensor u, torch::Tensor v,
                               torch::Tensor indptr, torch::Tensor indices) {
    const int64_t num_dst = indptr.size(0) - 1, E = indices.size(0), K = u.size(1);
    torch::Tensor out = torch::empty({E, K}, u.options());
    std::atomic<bool> ok{true};
    AT_DISPATCH_FLOATING_TYPES(u.scalar_type(), "tessera::nn::u_add_v", [&] {
      const int64_t *p = indptr.data_ptr<int64_t>(), *src = indices.data_ptr<int64_t>();
      const scalar_t *uu = u.data_ptr<scalar_t>(), *vv = v.data_ptr<scalar_t>();
      scalar_t* o = out.data_ptr<scalar_t>();
      const int64_t num_src = u.size(0);
      at::parallel_for(0, num_dst, Grain(num_dst, E, K), [&](int64_t d0, int64_t d1) {
        for (int64_t d = d0; d < d1; ++d) {
          for (int64_t k = p[d]; k < p[d + 1]; ++k) {
            if (src[k] < 0 || src[k] >= num_src) {
              ok.store(false);
              return;
            }
            for (int64_t c = 0; c < K; ++c) o[k * K + c] = uu[src[k] * K + c] + vv[d * K + c];
          }
        }
      });
    });
    if (!ok.load()) {
      throw dist::Error(
          fmt::format("u_add_v: a source index is outside [0, {}) (the rows of u)", u.size(0)));
    }
    ctx->save_for_backward({indptr, indices});
    ctx->saved_data["num_src"] = u.size(0);
    return out;
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    const torch::Tensor indptr = ctx->get_saved_variables()[0];
    const torch::Tensor indices = ctx->get_saved_variables()[1];
    const int64_t num_src = ctx->saved_data["num_src"].toInt();
    CheckIndptr(indptr, indices.size(0));  // Written through an untracked view since?
    torch::Tensor g = grads[0].contiguous();
    const int64_t num_dst = indptr.size(0) - 1, E = g.size(0), K = g.size(1);
    if (torch::GradMode::is_enabled()) {  // create_graph: differentiable operations.
      return {torch::zeros({num_src, K}, g.options()).index_add(0, indices, g),
              torch::zeros({num_dst, K}, g.options()).index_add(0, EdgeDestinations(indptr), g),
              {},
              {}};
    }
    torch::Tensor grad_u = torch::zeros({num_src, K}, g.options());
    torch::Tensor grad_v = torch::empty({num_dst, K}, g.options());
    bool ok = true;
    AT_DISPATCH_FLOATING_TYPES(g.scalar_type(), "tessera::nn::u_add_v_backward", [&] {
      const int64_t *p = indptr.data_ptr<int64_t>(), *src = indices.data_ptr<int64_t>();
      const scalar_t* gg = g.data_ptr<scalar_t>();
      scalar_t *gu = grad_u.data_ptr<scalar_t>(), *gv = grad_v.data_ptr<scalar_t>();
      at::parallel_for(0, num_dst, Grain(num_dst, E, K), [&](int64_t d0, int64_t d1) {
        for (int64_t d = d0; d < d1; ++d) {
          for (int64_t c = 0; c < K; ++c) gv[d * K + c] = 0;
          for (int64_t k = p[d]; k < p[d + 1]; ++k) {
            for (int64_t c = 0; c < K; ++c) gv[d * K + c] += gg[k * K + c];
          }
        }
      });
      // The sources' sums: one pass in edge order (E * K additions, with
      // no atomics; the rows are narrow, K heads).
      for (int64_t k = 0; k < E && ok; ++k) {
        if (src[k] < 0 || src[k] >= num_src) {
          ok = false;
          break;
        }
        for (int64_t c = 0; c < K; ++c) gu[src[k] * K + c] += gg[k * K + c];
      }
    });
    if (!ok) {
      throw dist::Error(
          "u_add_v (backward): a source index is out of range; was the graph changed since the "
          "forward?");
    }
    return {grad_u, grad_v, {}, {}};
  }
};

}  // namespace

Reduce ParseReduce(const std::string& name) {
  if (name == "sum") return Reduce::kSum;
  if (name == "mean") return Reduce::kMean;
  if (name == "max") return Reduce::kMax;
  throw dist::Error(
      fmt::format("aggregate: reduce must be \"sum\", \"mean\" or \"max\", got "
                  "\"{}\"",
                  name));
}

CsrTranspose TransposeCsr(const torch::Tensor& indptr, const torch::Tensor& indices,
                          int64_t num_src) {
  CheckIndex(indices, "indices");
  CheckIndptr(indptr, indices.size(0));
  if (num_src < 0) throw dist::Error(fmt::format("TransposeCsr: {} sources", num_src));
  const int64_t num_dst = indptr.size(0) - 1, num_edges = indices.size(0);
  CsrTranspose t;
  t.t_indptr = torch::zeros({num_src + 1}, torch::kInt64);
  t.t_dst = torch::empty({num_edges}, torch::kInt64);
  t.t_eid = torch::empty({num_edges}, torch::kInt64);
  const int64_t* p = indptr.data_ptr<int64_t>();
  const int64_t* idx = indices.data_ptr<int64_t>();
  int64_t* tp = t.t_indptr.data_ptr<int64_t>();
  int64_t* td = t.t_dst.data_ptr<int64_t>();
  int64_t* te = t.t_eid.data_ptr<int64_t>();
  // Counting sort by source: count, prefix-sum into starts, then place
  // edges in destination order (so each source's destinations increase).
  for (int64_t k = 0; k < num_edges; ++k) {
    const int64_t s = idx[k];
    if (static_cast<uint64_t>(s) >= static_cast<uint64_t>(num_src)) {
      throw dist::Error(
          fmt::format("aggregate: edge {} has source {}, outside [0, {})", k, s, num_src));
    }
    ++tp[s + 1];
  }
  for (int64_t s = 0; s < num_src; ++s) tp[s + 1] += tp[s];
  std::vector<int64_t> cursor(tp, tp + num_src);
  for (int64_t d = 0; d < num_dst; ++d) {
    for (int64_t k = p[d]; k < p[d + 1]; ++k) {
      const int64_t at = cursor[static_cast<size_t>(idx[k])]++;
      td[at] = d;
      te[at] = k;
    }
  }
  return t;
}

torch::Tensor aggregate(const torch::Tensor& indptr, const torch::Tensor& indices,
                        const torch::Tensor& h, Reduce reduce, const torch::Tensor& edge_weight,
                        const CsrTranspose* transpose) {
  CheckIndex(indices, "indices");
  CheckIndptr(indptr, indices.size(0));
  CheckCpu(h, "aggregate", "h");
  CheckCpu(edge_weight, "aggregate", "edge_weight");
  const int64_t num_edges = indices.size(0);
  if (h.dim() < 1 || !(h.scalar_type() == torch::kFloat32 || h.scalar_type() == torch::kFloat64)) {
    throw dist::Error(
        fmt::format("aggregate: h must be float32 or float64 rows, got {} of shape [{}]",
                    c10::toString(h.scalar_type()), fmt::join(h.sizes(), ", ")));
  }
  std::vector<int64_t> out_shape(h.sizes().begin(), h.sizes().end());
  out_shape[0] = indptr.size(0) - 1;
  int64_t F = 1;
  for (int64_t i = 1; i < h.dim(); ++i) F *= h.size(i);
  torch::Tensor rows = h.reshape({h.size(0), F}).contiguous();
  torch::Tensor w;
  int64_t heads = 1;
  if (edge_weight.defined()) {
    const bool shape_ok =
        (edge_weight.dim() == 1 || edge_weight.dim() == 2) && edge_weight.size(0) == num_edges;
    if (!shape_ok || !edge_weight.is_floating_point()) {
      throw dist::Error(
          fmt::format("aggregate: edge_weight must be floating [{}] or [{}, H], got "
                      "{} of shape [{}]",
                      num_edges, num_edges, c10::toString(edge_weight.scalar_type()),
                      fmt::join(edge_weight.sizes(), ", ")));
    }
    heads = edge_weight.dim() == 2 ? edge_weight.size(1) : 1;
    if (heads < 1 || F % heads != 0) {
      throw dist::Error(
          fmt::format("aggregate: {} features do not split into the {} heads of "
                      "edge_weight",
                      F, heads));
    }
    w = edge_weight.to(h.scalar_type()).reshape({num_edges, heads}).contiguous();
  }
  c10::optional<torch::Tensor> t_indptr, t_dst, t_eid;
  if (transpose != nullptr) {
    const CsrTranspose& t = *transpose;
    if (!t.t_indptr.defined() || t.t_indptr.size(0) != h.size(0) + 1 ||
        t.t_dst.size(0) != num_edges || t.t_eid.size(0) != num_edges) {
      throw dist::Error("aggregate: the transpose given is not that of this CSR and h");
    }
    t_indptr = t.t_indptr, t_dst = t.t_dst, t_eid = t.t_eid;
  }
  c10::optional<torch::Tensor> weight;
  if (w.defined()) weight = w;
  torch::Tensor out = AggregateOp::apply(rows, weight, indptr, indices, t_indptr, t_dst, t_eid,
                                         static_cast<int64_t>(reduce), heads);
  return out.view(out_shape);
}

torch::Tensor edge_softmax(const torch::Tensor& indptr, const torch::Tensor& scores) {
  if (scores.dim() < 1 || !scores.is_floating_point()) {
    throw dist::Error("edge_softmax: scores must be floating [num_edges] or [num_edges, H]");
  }
  CheckCpu(scores, "edge_softmax", "scores");
  CheckIndptr(indptr, scores.size(0));
  const int64_t E = scores.size(0);
  torch::Tensor flat = scores.reshape({E, E == 0 ? 1 : scores.numel() / E}).contiguous();
  return EdgeSoftmaxOp::apply(flat, indptr).view(scores.sizes());
}

torch::Tensor u_add_v(const torch::Tensor& indptr, const torch::Tensor& indices,
                      const torch::Tensor& u, const torch::Tensor& v) {
  CheckIndex(indices, "indices");
  CheckIndptr(indptr, indices.size(0));
  CheckCpu(u, "u_add_v", "u");
  CheckCpu(v, "u_add_v", "v");
  const int64_t num_dst = indptr.size(0) - 1;
  const bool real = u.scalar_type() == torch::kFloat32 || u.scalar_type() == torch::kFloat64;
  if (u.dim() < 1 || v.dim() < 1 || !real || u.scalar_type() != v.scalar_type() ||
      v.size(0) != num_dst || u.sizes().slice(1) != v.sizes().slice(1)) {
    throw dist::Error(fmt::format(
        "u_add_v: u [num_src, ...] and v [{} destinations, ...] must be float32 or float64, of "
        "one dtype and one trailing shape; got {} [{}] and {} [{}]",
        num_dst, c10::toString(u.scalar_type()), fmt::join(u.sizes(), ", "),
        c10::toString(v.scalar_type()), fmt::join(v.sizes(), ", ")));
  }
  int64_t K = 1;
  std::vector<int64_t> shape = {indices.size(0)};
  for (int64_t d : u.sizes().slice(1)) {
    K *= d;
    shape.push_back(d);
  }
  torch::Tensor out = UAddVOp::apply(u.reshape({u.size(0), K}).contiguous(),
                                     v.reshape({num_dst, K}).contiguous(), indptr, indices);
  return out.view(shape);
}

RelationGroups GroupByRelation(const torch::Tensor& src, const torch::Tensor& dst,
                               const torch::Tensor& etypes, int64_t num_src, int64_t num_dst,
                               int64_t num_rels) {
  CheckIndex(src, "src");
  CheckIndex(dst, "dst");
  CheckIndex(etypes, "etypes");
  const int64_t E = src.size(0);
  if (dst.size(0) != E || etypes.size(0) != E) {
    throw dist::Error(
        fmt::format("relation groups: {} sources, {} destinations and {} relations "
                    "for the edges",
                    E, dst.size(0), etypes.size(0)));
  }
  if (num_src < 0 || num_dst < 0 || num_rels < 1) {
    throw dist::Error(fmt::format("relation groups: {} sources, {} destinations, {} relations",
                                  num_src, num_dst, num_rels));
  }
  const int64_t* s = src.data_ptr<int64_t>();
  const int64_t* d = dst.data_ptr<int64_t>();
  const int64_t* r = etypes.data_ptr<int64_t>();
  for (int64_t k = 0; k < E; ++k) {
    if (static_cast<uint64_t>(s[k]) >= static_cast<uint64_t>(num_src) ||
        static_cast<uint64_t>(d[k]) >= static_cast<uint64_t>(num_dst) ||
        static_cast<uint64_t>(r[k]) >= static_cast<uint64_t>(num_rels)) {
      throw dist::Error(
          fmt::format("relation groups: edge {} ({} -> {}, relation {}) is outside "
                      "{} sources, {} destinations, {} relations",
                      k, s[k], d[k], r[k], num_src, num_dst, num_rels));
    }
  }
  // Two stable counting sorts, by destination then by relation: edges in
  // (relation, destination) order, each pair's edges in input order.
  std::vector<int64_t> by_dst(static_cast<size_t>(E)), order(static_cast<size_t>(E));
  {
    std::vector<int64_t> start(static_cast<size_t>(num_dst) + 1, 0);
    for (int64_t k = 0; k < E; ++k) ++start[static_cast<size_t>(d[k]) + 1];
    for (int64_t v = 0; v < num_dst; ++v) start[v + 1] += start[v];
    for (int64_t k = 0; k < E; ++k) by_dst[static_cast<size_t>(start[d[k]]++)] = k;
  }
  RelationGroups g;
  g.num_src = num_src, g.num_dst = num_dst, g.num_rels = num_rels;
  g.rel_pairs = torch::zeros({num_rels}, torch::kInt64);
  {
    std::vector<int64_t> start(static_cast<size_t>(num_rels) + 1, 0);
    for (int64_t k = 0; k < E; ++k) ++start[static_cast<size_t>(r[k]) + 1];
    for (int64_t v = 0; v < num_rels; ++v) start[v + 1] += start[v];
    for (int64_t k : by_dst) order[static_cast<size_t>(start[r[k]]++)] = k;
  }
  g.pair_src = torch::empty({E}, torch::kInt64);
  g.pair_eid = torch::empty({E}, torch::kInt64);
  int64_t* ps = g.pair_src.data_ptr<int64_t>();
  int64_t* pe = g.pair_eid.data_ptr<int64_t>();
  int64_t* rel_pairs = g.rel_pairs.data_ptr<int64_t>();
  std::vector<int64_t> pair_indptr{0}, pair_dst;
  for (int64_t i = 0; i < E; ++i) {
    const int64_t k = order[static_cast<size_t>(i)];
    if (i > 0) {
      const int64_t prev = order[static_cast<size_t>(i - 1)];
      if (r[k] != r[prev] || d[k] != d[prev]) pair_indptr.push_back(i);
    }
    if (pair_indptr.size() > pair_dst.size()) {
      pair_dst.push_back(d[k]);
      ++rel_pairs[r[k]];
    }
    ps[i] = s[k];
    pe[i] = k;
  }
  if (E > 0) pair_indptr.push_back(E);
  const int64_t P = static_cast<int64_t>(pair_dst.size());
  g.pair_indptr = torch::tensor(pair_indptr, torch::kInt64);
  // Destinations over pairs: a counting sort of the pairs by destination.
  g.dst_indptr = torch::zeros({num_dst + 1}, torch::kInt64);
  g.dst_pairs = torch::empty({P}, torch::kInt64);
  int64_t* di = g.dst_indptr.data_ptr<int64_t>();
  int64_t* dp = g.dst_pairs.data_ptr<int64_t>();
  for (int64_t p = 0; p < P; ++p) ++di[pair_dst[static_cast<size_t>(p)] + 1];
  for (int64_t v = 0; v < num_dst; ++v) di[v + 1] += di[v];
  std::vector<int64_t> cursor(di, di + num_dst);
  for (int64_t p = 0; p < P; ++p)
    dp[cursor[static_cast<size_t>(pair_dst[static_cast<size_t>(p)])]++] = p;
  return g;
}

namespace {

// rows [P, in] in segments of `counts` rows, segment r times weights[r]
// ([R, in, out]) into one [P, out] tensor. The backward writes each
// segment's input gradient into one [P, in] tensor: as one torch::mm per
// narrow()ed segment, every segment's backward would allocate a zeroed
// [P, in] tensor and add it to the others (R times the work).
class SegmentMmOp : public torch::autograd::Function<SegmentMmOp> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, torch::Tensor rows, torch::Tensor weights,
                               std::vector<int64_t> counts) {
    torch::Tensor out = torch::empty({rows.size(0), weights.size(2)}, rows.options());
    int64_t offset = 0;
    for (size_t r = 0; r < counts.size(); ++r) {
      if (counts[r] > 0) {
        torch::Tensor part = out.narrow(0, offset, counts[r]);
        torch::mm_out(part, rows.narrow(0, offset, counts[r]), weights[static_cast<int64_t>(r)]);
      }
      offset += counts[r];
    }
    ctx->save_for_backward({rows, weights});
    ctx->saved_data["counts"] = c10::IValue(counts);
    return out;
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    const torch::Tensor rows = ctx->get_saved_variables()[0];
    const torch::Tensor weights = ctx->get_saved_variables()[1];
    const std::vector<int64_t> counts = ctx->saved_data["counts"].toIntVector();
    const torch::Tensor grad = grads[0].contiguous();
    if (torch::GradMode::is_enabled())
      return DifferentiableBackward(ctx, rows, weights, counts, grad);
    torch::Tensor grad_rows, grad_weights;
    if (ctx->needs_input_grad(0)) grad_rows = torch::empty_like(rows);
    if (ctx->needs_input_grad(1)) grad_weights = torch::zeros_like(weights);
    int64_t offset = 0;
    for (size_t r = 0; r < counts.size(); ++r) {
      const int64_t n = counts[r];
      if (n > 0) {
        torch::Tensor g = grad.narrow(0, offset, n);
        const int64_t rel = static_cast<int64_t>(r);
        if (grad_rows.defined()) {
          torch::Tensor part = grad_rows.narrow(0, offset, n);
          torch::mm_out(part, g, weights[rel].t());
        }
        if (grad_weights.defined()) {
          torch::Tensor part = grad_weights[rel];
          torch::mm_out(part, rows.narrow(0, offset, n).t(), g);
        }
      }
      offset += n;
    }
    return {grad_rows, grad_weights, torch::Tensor()};
  }

 private:
  // The same from out-of-place products (create_graph: differentiable).
  static tensor_list DifferentiableBackward(AutogradContext* ctx, const torch::Tensor& rows,
                                            const torch::Tensor& weights,
                                            const std::vector<int64_t>& counts,
                                            const torch::Tensor& grad) {
    std::vector<torch::Tensor> grad_rows, grad_weights;
    int64_t offset = 0;
    for (size_t r = 0; r < counts.size(); ++r) {
      const torch::Tensor w = weights[static_cast<int64_t>(r)];
      const torch::Tensor g = grad.narrow(0, offset, counts[r]);
      grad_rows.push_back(g.mm(w.t()));
      grad_weights.push_back(rows.narrow(0, offset, counts[r]).t().mm(g));
      offset += counts[r];
    }
    return {ctx->needs_input_grad(0) ? torch::cat(grad_rows) : torch::Tensor(),
            ctx->needs_input_grad(1) ? torch::stack(grad_weights) : torch::Tensor(),
            torch::Tensor()};
  }
};

}  // namespace

torch::Tensor relation_aggregate(const RelationGroups& groups, const torch::Tensor& h,
                                 const std::vector<torch::Tensor>& weights,
                                 const torch::Tensor& norm) {
  const int64_t E = groups.pair_src.size(0);
  if (h.dim() != 2 || h.size(0) != groups.num_src) {
    throw dist::Error(fmt::format("relation_aggregate: input of shape [{}] for {} sources",
                                  fmt::join(h.sizes(), ", "), groups.num_src));
  }
  if (static_cast<int64_t>(weights.size()) != groups.num_rels) {
    throw dist::Error(fmt::format("relation_aggregate: {} weights for {} relations", weights.size(),
                                  groups.num_rels));
  }
  const int64_t in = h.size(1), out_feats = weights.front().size(-1);
  CheckCpu(h, "relation_aggregate", "the input");
  CheckCpu(norm, "relation_aggregate", "norm");
  for (const torch::Tensor& w : weights) {
    CheckCpu(w, "relation_aggregate", "a weight");
    if (w.scalar_type() != h.scalar_type()) {
      throw dist::Error(fmt::format("relation_aggregate: a weight is {}, the input {}",
                                    c10::toString(w.scalar_type()),
                                    c10::toString(h.scalar_type())));
    }
    if (w.dim() != 2 || w.size(0) != in || w.size(1) != out_feats) {
      throw dist::Error(fmt::format("relation_aggregate: a weight of shape [{}], expected [{}, {}]",
                                    fmt::join(w.sizes(), ", "), in, out_feats));
    }
  }
  torch::Tensor w;
  if (norm.defined()) {
    if (norm.numel() != E || (norm.dim() == 2 && norm.size(1) != 1) || norm.dim() > 2) {
      throw dist::Error(fmt::format("relation_aggregate: norm of shape [{}] for {} edges",
                                    fmt::join(norm.sizes(), ", "), E));
    }
    w = norm.reshape({E}).index_select(0, groups.pair_eid);
  }
  // Per pair the (normed) sum of its messages, pairs in relation order,
  // then each relation's pairs times its weight. Every relation's weight
  // takes part, even without pairs (a zero gradient), so that DDP sees
  // every parameter used.
  torch::Tensor agg = aggregate(groups.pair_indptr, groups.pair_src, h, Reduce::kSum, w);
  const int64_t* rel_pairs = groups.rel_pairs.data_ptr<int64_t>();
  std::vector<int64_t> counts(rel_pairs, rel_pairs + groups.num_rels);
  torch::Tensor m = SegmentMmOp::apply(agg.contiguous(), torch::stack(weights), counts);
  return aggregate(groups.dst_indptr, groups.dst_pairs, m, Reduce::kSum);
}

}  // namespace tessera::nn
