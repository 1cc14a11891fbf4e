// File: include/tessera/nn/aggregate.h
//
// Message aggregation over a block as CSR kernels (what DGL's SpMM
// `copy_u` / `u_mul_e` with sum, mean and max reductions do), with their
// backward, for the layers of tessera::nn and tessera.nn:
//
//   // out[d] = mean over the edges s -> d of h[s]    (autograd through h)
//   const auto& e = block.edges_of();  // The block's only relation.
//   torch::Tensor out = tessera::nn::aggregate(e.indptr, e.indices, h,
//                                              tessera::nn::Reduce::kMean);
//
// The graph is a CSR over destinations: edge k (its position in `indices`)
// goes from source indices[k] to the destination d with indptr[d] <= k <
// indptr[d + 1]. Per-edge values (`edge_weight`) are in that order.
//
// Forward and backward run on LibTorch's intra-op threads
// (torch::set_num_threads), a range of destinations (forward) or sources
// (backward) per thread: no per-edge intermediate tensor, no atomics. The
// backward of the source rows walks the transposed CSR (`CsrTranspose`),
// built on first use unless the caller passes one (a loader can build it
// off the training thread).
#ifndef TESSERA_INCLUDE_TESSERA_NN_AGGREGATE_H_
#define TESSERA_INCLUDE_TESSERA_NN_AGGREGATE_H_

#include <torch/types.h>

#include <string>
#include <vector>

namespace tessera::nn {

enum class Reduce {
  kSum,   // out[d] = sum_e w_e h[s_e]
  kMean,  // the sum divided by d's in-degree (0 without in-edges)
  kMax,   // element-wise max of w_e h[s_e] (0 without in-edges); the
          // gradient goes to the edge that gave each maximum
};

// Parses "sum", "mean" or "max"; throws tessera::dist::Error otherwise (all
// errors here are dist::Error, include/tessera/dist.h).
Reduce ParseReduce(const std::string& name);

// The CSR by source of a CSR by destination: for source s, its out-edges
// are positions t_indptr[s] .. t_indptr[s + 1] of t_dst (their destinations,
// increasing) and t_eid (their positions k in the original `indices`).
struct CsrTranspose {
  torch::Tensor t_indptr;  // int64 [num_src + 1]
  torch::Tensor t_dst;     // int64 [num_edges]
  torch::Tensor t_eid;     // int64 [num_edges]
};

// Builds the transpose of (indptr, indices) over `num_src` sources.
// Throws dist::Error on a malformed CSR (indptr not starting at 0,
// decreasing or not ending at indices.size(0); a source outside
// [0, num_src)).
CsrTranspose TransposeCsr(const torch::Tensor& indptr, const torch::Tensor& indices,
                          int64_t num_src);

// Aggregates source rows `h` ([num_src, F] or [num_src, H, F'], float or
// double) along the edges of the CSR (indptr int64 [num_dst + 1], indices
// int64 [num_edges]) into [num_dst, ...] of h's trailing shape.
// `edge_weight`, when defined, multiplies each edge's message: [num_edges]
// or [num_edges, 1] (one value per edge) or [num_edges, H] (one per head:
// h's columns are H groups of F / H). Differentiable in h and edge_weight.
// `transpose`, when given, must be TransposeCsr(indptr, indices,
// h.size(0)); it is used by the backward (not checked again).
// Throws dist::Error (naming the problem) on mismatched shapes,
// dtypes or a malformed CSR.
torch::Tensor aggregate(const torch::Tensor& indptr, const torch::Tensor& indices,
                        const torch::Tensor& h, Reduce reduce,
                        const torch::Tensor& edge_weight = {},
                        const CsrTranspose* transpose = nullptr);

// Softmax of per-edge scores [num_edges, H] over each destination's
// in-edges (DGL's edge_softmax on a block). Differentiable in scores.
torch::Tensor edge_softmax(const torch::Tensor& indptr, const torch::Tensor& scores);

// Per edge of the CSR (in CSR order), u's row of its source plus v's row of
// its destination: u [num_src, ...], v [num_dst, ...] of one trailing shape
// give [num_edges, ...] (DGL's u_add_v, GAT's attention logits).
// Differentiable in u and v.
torch::Tensor u_add_v(const torch::Tensor& indptr, const torch::Tensor& indices,
                      const torch::Tensor& u, const torch::Tensor& v);

// The edges of a relational layer grouped for R-GCN: the messages of one
// (relation, destination) pair are summed first, then each relation's pairs
// go through that relation's weight in one GEMM, and the pairs are summed
// into their destinations (sum_r sum_{e of r} norm_e W_r h_src =
// sum_r W_r (sum_{e of r} norm_e h_src): DGL's result, one matmul per
// (destination, relation) pair instead of per edge).
struct RelationGroups {
  int64_t num_src = 0, num_dst = 0, num_rels = 0;
  torch::Tensor pair_indptr;  // int64 [P + 1]: pairs ordered by (relation, destination)
  torch::Tensor pair_src;     // int64 [E]: sources, grouped by pair
  torch::Tensor pair_eid;     // int64 [E]: each one's position in the input edges
  torch::Tensor rel_pairs;    // int64 [num_rels]: pairs of each relation
  torch::Tensor dst_indptr;   // int64 [num_dst + 1]: CSR of destinations over pairs
  torch::Tensor dst_pairs;    // int64 [P]
};

// Groups edges (src[k] -> dst[k] of relation etypes[k], int64 [E] each) of
// a graph with num_src sources and num_dst destinations. Throws dist::Error
// on an index or relation out of range or tensors of different lengths.
RelationGroups GroupByRelation(const torch::Tensor& src, const torch::Tensor& dst,
                               const torch::Tensor& etypes, int64_t num_src, int64_t num_dst,
                               int64_t num_rels);

// sum over in-edges e = (s -> d) of relation r of norm_e h[s] W_r:
// h [num_src, in], weights [num_rels, in, out] (or a list of num_rels
// [in, out] matrices), norm [E] / [E, 1] in the input edge order or
// undefined (1). Returns [num_dst, out]; differentiable in h, the weights
// and norm (first derivatives only).
torch::Tensor relation_aggregate(const RelationGroups& groups, const torch::Tensor& h,
                                 const std::vector<torch::Tensor>& weights,
                                 const torch::Tensor& norm = {});

// ---------------------------------------------------------------- narrow linear maps

// x W^T + b (torch::nn::functional::linear) for float32 x [N, in] and a
// weight [out, in] with out <= kNarrowLinearMaxOut, on CPUs with AVX-512: a
// GNN's first layer projects every sampled node to a few columns, a shape
// general BLAS blocks badly. Multi-threaded forward and weight gradient in
// register tiles; the input's gradient (when x requires one) is torch::mm.
// Other shapes, dtypes and CPUs go to functional::linear. Differentiable in
// x, weight and bias; throws dist::Error on mismatched shapes.
inline constexpr int64_t kNarrowLinearMaxOut = 32;
bool narrow_linear_applies(const torch::Tensor& x, const torch::Tensor& weight);
torch::Tensor narrow_linear(const torch::Tensor& x, const torch::Tensor& weight,
                            const torch::Tensor& bias = {});

// ---------------------------------------------------------------- dropout

// torch::nn::functional::dropout's distribution (each element zeroed with
// probability p, the others scaled by 1 / (1 - p); x itself when not
// training or p is 0) from a counter-based hash of the element's index
// instead of one Bernoulli draw per element, which LibTorch's CPU
// bernoulli_ makes serially (~20x slower). The hash's key is drawn from
// torch's default generator, so torch::manual_seed repeats the masks; the
// backward recomputes the mask instead of keeping it (it is not itself
// differentiable: no double backward). float32 and float64 CPU tensors;
// other floating types and devices go to torch::dropout. Throws dist::Error
// when p is outside [0, 1] or x is not floating-point. Call it qualified:
// argument-dependent lookup also finds at::dropout.
torch::Tensor dropout(const torch::Tensor& x, double p, bool training = true);

}  // namespace tessera::nn

#endif  // TESSERA_INCLUDE_TESSERA_NN_AGGREGATE_H_
