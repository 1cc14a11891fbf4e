// Tests of the CSR aggregation kernels (include/tessera/nn/aggregate.h) against
// per-edge reference computations with torch's own ops, forward and
// backward.
#include "tessera/nn/aggregate.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <functional>
#include <tuple>

#include "fmt/format.h"
#include "tessera/dist.h"

using ::testing::HasSubstr;

namespace tessera::nn {
namespace {

// The hand-drawn block of tessera's nn tests (destinations are the first 3
// of 5 sources):
//
//   src 0 -> dst 0      src 3 -> dst 0
//   src 1 -> dst 0      src 0 -> dst 1
//   src 4 -> dst 1      (dst 2: no in-edges)
torch::Tensor HandIndptr() { return torch::tensor({0, 3, 5, 5}, torch::kInt64); }
torch::Tensor HandIndices() { return torch::tensor({0, 1, 3, 0, 4}, torch::kInt64); }

// A random CSR: num_dst rows of 0..max_deg edges from num_src sources.
std::pair<torch::Tensor, torch::Tensor> RandomCsr(int64_t num_dst, int64_t num_src, int64_t max_deg,
                                                  uint64_t seed) {
  torch::manual_seed(seed);
  torch::Tensor deg = torch::randint(0, max_deg + 1, {num_dst}, torch::kInt64);
  torch::Tensor indptr = torch::cat({torch::zeros({1}, torch::kInt64), deg.cumsum(0)});
  int64_t E = indptr[-1].item<int64_t>();
  return {indptr, torch::randint(0, num_src, {E}, torch::kInt64)};
}

torch::Tensor EdgeDst(const torch::Tensor& indptr) {
  return torch::repeat_interleave(indptr.slice(0, 1) - indptr.slice(0, 0, -1));
}

// The reference: per-edge messages, then index_add (sum / mean) or
// scatter_reduce (max), with torch's autograd.
torch::Tensor Reference(const torch::Tensor& indptr, const torch::Tensor& indices,
                        const torch::Tensor& h, Reduce reduce, const torch::Tensor& w) {
  const int64_t num_dst = indptr.size(0) - 1, E = indices.size(0);
  torch::Tensor dst = EdgeDst(indptr);
  torch::Tensor msg = h.index_select(0, indices);  // [E, ...]
  if (w.defined()) {
    std::vector<int64_t> shape{E};
    if (w.dim() == 2 && w.size(1) > 1) {
      // [E, H] against [E, H, F'].
      msg = msg.view({E, w.size(1), -1}) * w.unsqueeze(2);
      msg = msg.view(h.index_select(0, indices).sizes());
    } else {
      msg = msg * w.reshape({E, 1});
    }
  }
  std::vector<int64_t> out_shape(h.sizes().begin(), h.sizes().end());
  out_shape[0] = num_dst;
  if (reduce == Reduce::kMax) {
    torch::Tensor flat = msg.reshape({E, -1});
    torch::Tensor index = dst.unsqueeze(1).expand_as(flat);
    torch::Tensor out = torch::zeros({num_dst, flat.size(1)}, h.options())
                            .scatter_reduce(0, index, flat, "amax", /*include_self=*/false);
    return out.view(out_shape);
  }
  torch::Tensor out = torch::zeros(out_shape, h.options()).index_add(0, dst, msg);
  if (reduce == Reduce::kMean) {
    torch::Tensor deg = (indptr.slice(0, 1) - indptr.slice(0, 0, -1)).clamp_min(1).to(h.dtype());
    std::vector<int64_t> view(out_shape.size(), 1);
    view[0] = num_dst;
    out = out / deg.view(view);
  }
  return out;
}

// Forward and both gradients of the kernel equal the reference's.
void ExpectMatchesReference(const torch::Tensor& indptr, const torch::Tensor& indices,
                            torch::Tensor h, Reduce reduce, torch::Tensor w, double tol) {
  h = h.detach().requires_grad_(true);
  if (w.defined()) w = w.detach().requires_grad_(true);
  torch::Tensor got = aggregate(indptr, indices, h, reduce, w);
  torch::Tensor want = Reference(indptr, indices, h, reduce, w);
  ASSERT_EQ(got.sizes(), want.sizes());
  EXPECT_TRUE(torch::allclose(got, want, tol, tol)) << (got - want).abs().max();
  torch::Tensor g = torch::randn_like(want);
  std::vector<torch::Tensor> inputs{h};
  if (w.defined()) inputs.push_back(w);
  auto got_grads = torch::autograd::grad({got}, inputs, {g});
  auto want_grads = torch::autograd::grad({want}, inputs, {g});
  for (size_t i = 0; i < inputs.size(); ++i) {
    EXPECT_TRUE(torch::allclose(got_grads[i], want_grads[i], tol, tol))
        << "gradient " << i << ": " << (got_grads[i] - want_grads[i]).abs().max();
  }
}

TEST(AggregateTest, HandBlockSumMeanMax) {
  torch::Tensor h = torch::arange(10, torch::kFloat32).view({5, 2});
  torch::Tensor sum = aggregate(HandIndptr(), HandIndices(), h, Reduce::kSum);
  EXPECT_TRUE(torch::equal(
      sum, torch::tensor({{0 + 2 + 6, 1 + 3 + 7}, {0 + 8, 1 + 9}, {0, 0}}, torch::kFloat32)));
  torch::Tensor mean = aggregate(HandIndptr(), HandIndices(), h, Reduce::kMean);
  EXPECT_TRUE(torch::allclose(mean[0], (h[0] + h[1] + h[3]) / 3));
  EXPECT_TRUE(torch::equal(mean[2], torch::zeros({2})));
  torch::Tensor max = aggregate(HandIndptr(), HandIndices(), -h, Reduce::kMax);
  EXPECT_TRUE(torch::equal(max, torch::tensor({{0, -1}, {0, -1}, {0, 0}}, torch::kFloat32)));
}

TEST(AggregateTest, NoEdgesAndNoSources) {
  torch::Tensor indptr = torch::zeros({3}, torch::kInt64), none = torch::empty({0}, torch::kInt64);
  for (Reduce reduce : {Reduce::kSum, Reduce::kMean, Reduce::kMax}) {
    torch::Tensor h = torch::randn({0, 4, 2}, torch::requires_grad());
    torch::Tensor out = aggregate(indptr, none, h, reduce);
    EXPECT_TRUE(torch::equal(out, torch::zeros({2, 4, 2})));
    out.sum().backward();
    EXPECT_EQ(h.grad().sizes(), h.sizes());
  }
}

TEST(AggregateTest, MatchesPerEdgeReferenceForwardAndBackward) {
  for (int threads : {1, 2}) {
    torch::set_num_threads(threads);
    auto [indptr, indices] = RandomCsr(300, 500, 12, 7);
    const int64_t E = indices.size(0);
    for (Reduce reduce : {Reduce::kSum, Reduce::kMean, Reduce::kMax}) {
      SCOPED_TRACE(static_cast<int>(reduce));
      for (int64_t F : {1, 16, 37}) {
        ExpectMatchesReference(indptr, indices, torch::randn({500, F}), reduce, {}, 1e-5);
        ExpectMatchesReference(indptr, indices, torch::randn({500, F}), reduce, torch::rand({E}),
                               1e-5);
        ExpectMatchesReference(indptr, indices, torch::randn({500, F}), reduce, torch::rand({E, 1}),
                               1e-5);
      }
      // One weight per head over [N, H, F'] rows (GAT), in double.
      ExpectMatchesReference(indptr, indices, torch::randn({500, 4, 5}, torch::kFloat64), reduce,
                             torch::rand({E, 4}, torch::kFloat64), 1e-10);
    }
  }
  torch::set_num_threads(1);
}

TEST(AggregateTest, GivenTransposeIsUsed) {
  auto [indptr, indices] = RandomCsr(50, 80, 6, 3);
  CsrTranspose t = TransposeCsr(indptr, indices, 80);
  // The transpose lists every edge once, sources in order, destinations
  // increasing within a source.
  torch::Tensor t_indptr = t.t_indptr;
  EXPECT_EQ(t_indptr[-1].item<int64_t>(), indices.size(0));
  EXPECT_TRUE(
      torch::equal(indices.index_select(0, t.t_eid),
                   torch::repeat_interleave(t_indptr.slice(0, 1) - t_indptr.slice(0, 0, -1))));
  EXPECT_TRUE(torch::equal(EdgeDst(indptr).index_select(0, t.t_eid), t.t_dst));
  torch::Tensor h = torch::randn({80, 8}, torch::requires_grad());
  aggregate(indptr, indices, h, Reduce::kMean, {}, &t).sum().backward();
  torch::Tensor want =
      torch::autograd::grad({Reference(indptr, indices, h, Reduce::kMean, {}).sum()}, {h})[0];
  EXPECT_TRUE(torch::allclose(h.grad(), want, 1e-5, 1e-5));
  CsrTranspose wrong = TransposeCsr(indptr, indices, 81);
  EXPECT_THROW(aggregate(indptr, indices, h, Reduce::kMean, {}, &wrong), dist::Error);
}

TEST(AggregateTest, MalformedInputIsAnErrorNotACrash) {
  torch::Tensor h = torch::randn({5, 2});
  auto message = [&](const torch::Tensor& indptr, const torch::Tensor& indices,
                     const torch::Tensor& x, const torch::Tensor& w) -> std::string {
    try {
      aggregate(indptr, indices, x, Reduce::kSum, w);
    } catch (const dist::Error& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_THAT(message(HandIndptr(), torch::tensor({0, 1, 5, 0, 4}), h, {}),
              HasSubstr("outside [0, 5)"));
  EXPECT_THAT(message(HandIndptr(), torch::tensor({0, -1, 3, 0, 4}), h, {}), HasSubstr("outside"));
  EXPECT_THAT(message(torch::tensor({0, 3, 2, 5}), HandIndices(), h, {}), HasSubstr("decreases"));
  EXPECT_THAT(message(torch::tensor({0, 3, 5, 6}), HandIndices(), h, {}), HasSubstr("not from 0"));
  EXPECT_THAT(message(HandIndptr(), HandIndices().to(torch::kInt32), h, {}), HasSubstr("int64"));
  EXPECT_THAT(message(HandIndptr(), HandIndices(), h.to(torch::kInt64), {}), HasSubstr("float32"));
  EXPECT_THAT(message(HandIndptr(), HandIndices(), h, torch::ones({4})), HasSubstr("edge_weight"));
  EXPECT_THAT(message(HandIndptr(), HandIndices(), h, torch::ones({5, 3})), HasSubstr("heads"));
  EXPECT_THROW(TransposeCsr(HandIndptr(), HandIndices(), 4), dist::Error);
  EXPECT_THROW(ParseReduce("min"), dist::Error);
}

// The backward walks the CSR and transpose the forward was given: written
// since through memory autograd does not track, an index out of range is an
// error, never a read or write outside the buffers (it was a SIGSEGV).
TEST(AggregateTest, CsrWrittenBeforeTheBackwardIsAnErrorNotACrash) {
  auto written =
      [](const std::function<void(torch::Tensor&, torch::Tensor&, CsrTranspose&)>& corrupt,
         Reduce reduce) -> std::string {
    torch::Tensor indptr = HandIndptr(), indices = HandIndices();
    CsrTranspose t = TransposeCsr(indptr, indices, 5);
    torch::Tensor h = torch::randn({5, 4}, torch::requires_grad());
    torch::Tensor w = torch::rand({5}, torch::requires_grad());
    torch::Tensor out = aggregate(indptr, indices, h, reduce, w, &t);
    corrupt(indptr, indices, t);
    try {
      out.sum().backward();
    } catch (const std::exception& e) {
      return e.what();
    }
    return "no error";
  };
  auto poke = [](torch::Tensor& x, int64_t i, int64_t v) { x.data_ptr<int64_t>()[i] = v; };
  for (Reduce reduce : {Reduce::kSum, Reduce::kMean, Reduce::kMax}) {
    EXPECT_THAT(
        written([&](auto&, auto& indices, auto&) { poke(indices, 4, int64_t{1} << 40); }, reduce),
        HasSubstr("out of range"));
    EXPECT_THAT(written([&](auto&, auto&, auto& t) { poke(t.t_dst, 0, -3); }, reduce),
                HasSubstr("out of range"));
    EXPECT_THAT(written([&](auto&, auto&, auto& t) { poke(t.t_eid, 2, 99); }, reduce),
                HasSubstr("out of range"));
    EXPECT_THAT(written([&](auto& indptr, auto&, auto&) { poke(indptr, 3, 9); }, reduce),
                HasSubstr("not from 0"));
    EXPECT_THAT(written([&](auto&, auto&, auto& t) { poke(t.t_indptr, 2, 1); }, reduce),
                HasSubstr("decreases"));
  }
}

TEST(AggregateTest, EdgeSoftmaxPerDestination) {
  auto [indptr, indices] = RandomCsr(40, 60, 7, 11);
  const int64_t E = indices.size(0);
  torch::Tensor scores = torch::randn({E, 3}, torch::dtype(torch::kFloat64).requires_grad(true));
  torch::Tensor got = edge_softmax(indptr, scores);
  // Reference: a softmax over each destination's slice.
  std::vector<torch::Tensor> rows;
  for (int64_t d = 0; d + 1 < indptr.size(0); ++d) {
    int64_t b = indptr[d].item<int64_t>(), e = indptr[d + 1].item<int64_t>();
    if (e > b) rows.push_back(torch::softmax(scores.slice(0, b, e), 0));
  }
  torch::Tensor want = torch::cat(rows);
  EXPECT_TRUE(torch::allclose(got, want, 1e-12, 1e-12));
  torch::Tensor g = torch::randn_like(want);
  auto a = torch::autograd::grad({got}, {scores}, {g});
  auto b = torch::autograd::grad({want}, {scores}, {g});
  EXPECT_TRUE(torch::allclose(a[0], b[0], 1e-12, 1e-12));
}

// u_add_v: per edge in CSR order, u's row of its source plus v's row of its
// destination, with the gradients of index_select + add, and the same
// gradients as differentiable operations under create_graph.
TEST(AggregateTest, UAddVPerEdgeAndItsGradients) {
  auto [indptr, indices] = RandomCsr(40, 60, 7, 13);
  const auto opts = torch::dtype(torch::kFloat64).requires_grad(true);
  torch::Tensor u = torch::randn({60, 2, 3}, opts), v = torch::randn({40, 2, 3}, opts);
  torch::Tensor got = u_add_v(indptr, indices, u, v);
  torch::Tensor want = u.index_select(0, indices) + v.index_select(0, EdgeDst(indptr));
  ASSERT_EQ(got.sizes(), want.sizes());
  EXPECT_TRUE(torch::equal(got, want));
  torch::Tensor g = torch::randn_like(want);
  auto a = torch::autograd::grad({got}, {u, v}, {g});
  auto b = torch::autograd::grad({want}, {u, v}, {g});
  EXPECT_TRUE(torch::allclose(a[0], b[0], 1e-12, 1e-12));
  EXPECT_TRUE(torch::allclose(a[1], b[1], 1e-12, 1e-12));
  // create_graph: the gradients are themselves differentiable in g.
  torch::Tensor gg = g.clone().requires_grad_(true);
  auto c = torch::autograd::grad({u_add_v(indptr, indices, u, v)}, {u, v}, {gg}, true, true);
  EXPECT_TRUE(torch::allclose(c[0], b[0], 1e-12, 1e-12));
  EXPECT_TRUE(torch::allclose(c[1], b[1], 1e-12, 1e-12));
  auto d = torch::autograd::grad({(c[0] * c[0]).sum() + c[1].sum()}, {gg});
  torch::Tensor gr = g.clone().requires_grad_(true);
  torch::Tensor ref_u =
      torch::zeros({60, 6}, torch::kFloat64).index_add(0, indices, gr.view({-1, 6}));
  torch::Tensor ref_v =
      torch::zeros({40, 6}, torch::kFloat64).index_add(0, EdgeDst(indptr), gr.view({-1, 6}));
  auto f = torch::autograd::grad({(ref_u * ref_u).sum() + ref_v.sum()}, {gr});
  EXPECT_TRUE(torch::allclose(d[0], f[0], 1e-12, 1e-12));
}

TEST(AggregateTest, UAddVRefusesWhatDoesNotFit) {
  auto [indptr, indices] = RandomCsr(10, 20, 4, 5);
  torch::Tensor u = torch::randn({20, 4}), v = torch::randn({10, 4});
  EXPECT_NO_THROW(u_add_v(indptr, indices, u, v));
  // A source past u's rows, a v without a row per destination, another
  // trailing shape, another dtype, integer rows: errors naming the problem.
  torch::Tensor far = indices.clone();
  if (far.size(0) > 0) far[0] = 20;
  if (far.size(0) > 0) EXPECT_THROW(u_add_v(indptr, far, u, v), dist::Error);
  EXPECT_THROW(u_add_v(indptr, indices, u, torch::randn({9, 4})), dist::Error);
  EXPECT_THROW(u_add_v(indptr, indices, u, torch::randn({10, 3})), dist::Error);
  EXPECT_THROW(u_add_v(indptr, indices, u, v.to(torch::kFloat64)), dist::Error);
  EXPECT_THROW(u_add_v(indptr, indices, u.to(torch::kInt64), v.to(torch::kInt64)), dist::Error);
  EXPECT_THROW(u_add_v(indptr, indices, u.to(torch::kHalf), v.to(torch::kHalf)), dist::Error);
  // No edges: an empty [0, 4].
  torch::Tensor none = torch::zeros({11}, torch::kInt64);
  EXPECT_EQ(u_add_v(none, torch::zeros({0}, torch::kInt64), u, v).sizes(),
            torch::IntArrayRef({0, 4}));
}

// Relations on the hand-drawn block: edges 0, 1, 3 of relation 0, edges 2,
// 4 of relation 1; so the pairs are (0, dst 0), (0, dst 1), (1, dst 0),
// (1, dst 1).
TEST(AggregateTest, GroupByRelationOnHandBlock) {
  torch::Tensor rel = torch::tensor({0, 0, 1, 0, 1}, torch::kInt64);
  RelationGroups g = GroupByRelation(HandIndices(), EdgeDst(HandIndptr()), rel, 5, 3, 2);
  EXPECT_EQ(g.pair_indptr.sizes(), torch::IntArrayRef({5}));
  EXPECT_TRUE(torch::equal(g.pair_indptr, torch::tensor({0, 2, 3, 4, 5}, torch::kInt64)));
  EXPECT_TRUE(torch::equal(g.pair_eid, torch::tensor({0, 1, 3, 2, 4}, torch::kInt64)));
  EXPECT_TRUE(torch::equal(g.pair_src, torch::tensor({0, 1, 0, 3, 4}, torch::kInt64)));
  EXPECT_TRUE(torch::equal(g.rel_pairs, torch::tensor({2, 2}, torch::kInt64)));
  EXPECT_TRUE(torch::equal(g.dst_indptr, torch::tensor({0, 2, 4, 4}, torch::kInt64)));
  EXPECT_TRUE(torch::equal(g.dst_pairs, torch::tensor({0, 2, 1, 3}, torch::kInt64)));
  EXPECT_THROW(GroupByRelation(HandIndices(), EdgeDst(HandIndptr()), rel, 5, 3, 1), dist::Error);
  EXPECT_THROW(GroupByRelation(HandIndices(), EdgeDst(HandIndptr()), rel, 4, 3, 2), dist::Error);
}

TEST(AggregateTest, RelationAggregateMatchesPerEdgeProducts) {
  torch::set_num_threads(2);
  auto [indptr, indices] = RandomCsr(200, 300, 10, 5);
  const int64_t E = indices.size(0), R = 4;
  torch::Tensor rel = torch::randint(0, R - 1, {E}, torch::kInt64);  // relation 3 unused
  torch::Tensor dst = EdgeDst(indptr);
  torch::Tensor h = torch::randn({300, 6}, torch::dtype(torch::kFloat64).requires_grad(true));
  torch::Tensor w = torch::randn({R, 6, 5}, torch::dtype(torch::kFloat64).requires_grad(true));
  torch::Tensor norm = torch::rand({E, 1}, torch::dtype(torch::kFloat64).requires_grad(true));
  RelationGroups g = GroupByRelation(indices, dst, rel, 300, 200, R);
  torch::Tensor got = relation_aggregate(g, h, w.unbind(0), norm);
  torch::Tensor msg =
      torch::bmm(h.index_select(0, indices).unsqueeze(1), w.index_select(0, rel)).squeeze(1) * norm;
  torch::Tensor want = torch::zeros({200, 5}, torch::kFloat64).index_add(0, dst, msg);
  EXPECT_TRUE(torch::allclose(got, want, 1e-10, 1e-10));
  torch::Tensor gout = torch::randn_like(want);
  auto a = torch::autograd::grad({got}, {h, w, norm}, {gout});
  auto b = torch::autograd::grad({want}, {h, w, norm}, {gout});
  for (size_t i = 0; i < 3; ++i) EXPECT_TRUE(torch::allclose(a[i], b[i], 1e-10, 1e-10)) << i;
  torch::set_num_threads(1);
}

// (Qualified: at::dropout is found by argument-dependent lookup too.)
TEST(DropoutTest, DropsAtRateScalesAndRepeatsInTheBackward) {
  torch::set_num_threads(2);
  const double p = 0.3;
  // No element is 0, so y == 0 means dropped (torch::randn draws an exact
  // 0.0f in about one run in twenty at this size).
  torch::Tensor x = (torch::rand({1000, 1000}) + 0.5).requires_grad_(true);
  torch::manual_seed(7);
  torch::Tensor y = tessera::nn::dropout(x, p);
  torch::Tensor dropped = (y == 0);
  const double rate = dropped.to(torch::kFloat64).mean().item<double>();
  EXPECT_NEAR(rate, p, 0.003);  // 1M draws: sd 0.00046.
  // Neighbours are independent: both dropped at rate p^2.
  torch::Tensor flat = dropped.reshape({-1});
  const double pairs =
      (flat.slice(0, 1) & flat.slice(0, 0, -1)).to(torch::kFloat64).mean().item<double>();
  EXPECT_NEAR(pairs, p * p, 0.003);
  // Every row and column is dropped at about the same rate.
  torch::Tensor per_row = dropped.to(torch::kFloat64).mean(1);
  EXPECT_LT((per_row - p).abs().max().item<double>(), 0.08);
  torch::Tensor kept = ~dropped;
  EXPECT_TRUE(torch::allclose(y.masked_select(kept), x.masked_select(kept) / (1 - p)));
  // The backward uses the forward's mask.
  y.sum().backward();
  torch::Tensor want = kept.to(torch::kFloat32) / (1 - p);
  EXPECT_TRUE(torch::allclose(x.grad(), want));
  // torch::manual_seed repeats the mask; the next call draws another one.
  torch::manual_seed(7);
  torch::Tensor again = tessera::nn::dropout(x.detach(), p);
  EXPECT_TRUE(torch::equal(again == 0, dropped));
  EXPECT_FALSE(torch::equal(tessera::nn::dropout(x.detach(), p) == 0, dropped));
  // Doubles, evaluation, p = 0 and p = 1, bad input.
  torch::Tensor d = torch::ones({4096}, torch::kFloat64);
  EXPECT_NEAR((tessera::nn::dropout(d, 0.5) == 0).to(torch::kFloat64).mean().item<double>(), 0.5,
              0.05);
  EXPECT_TRUE(tessera::nn::dropout(x, p, /*training=*/false).is_same(x));
  EXPECT_TRUE(tessera::nn::dropout(x, 0).is_same(x));
  EXPECT_EQ(tessera::nn::dropout(x.detach(), 1).abs().sum().item<double>(), 0);
  EXPECT_THROW(tessera::nn::dropout(x, 1.5), dist::Error);
  EXPECT_THROW(tessera::nn::dropout(torch::ones({3}, torch::kInt64), 0.5), dist::Error);
  // Half precision goes to torch's dropout.
  torch::Tensor half = torch::ones({4096}, torch::kBFloat16);
  EXPECT_NEAR((tessera::nn::dropout(half, 0.5) == 0).to(torch::kFloat64).mean().item<double>(), 0.5,
              0.05);
  torch::set_num_threads(1);
}

TEST(NarrowLinearTest, MatchesLinearForwardAndBackward) {
  for (int threads : {1, 2}) {
    torch::set_num_threads(threads);
    for (int64_t out : {1, 16, 17, 32, 33}) {
      for (int64_t n : {0, 5, 8, 1003, 5000}) {
        SCOPED_TRACE(fmt::format("threads {} out {} rows {}", threads, out, n));
        torch::Tensor x = torch::randn({n, 37}, torch::requires_grad());
        torch::Tensor w = torch::randn({out, 37}, torch::requires_grad());
        torch::Tensor b = torch::randn({out}, torch::requires_grad());
        EXPECT_EQ(narrow_linear_applies(x, w), out <= 32 && __builtin_cpu_supports("avx512f"));
        torch::Tensor got = narrow_linear(x, w, b);
        torch::Tensor want = torch::nn::functional::linear(x, w, b);
        ASSERT_EQ(got.sizes(), want.sizes());
        EXPECT_TRUE(torch::allclose(got, want, 1e-4, 1e-4));
        torch::Tensor g = torch::randn_like(want);
        auto a = torch::autograd::grad({got}, {x, w, b}, {g});
        auto c = torch::autograd::grad({want}, {x, w, b}, {g});
        for (size_t i = 0; i < 3; ++i) {
          EXPECT_TRUE(torch::allclose(a[i], c[i], 1e-3, 1e-3))
              << i << ": " << (a[i] - c[i]).abs().max();
        }
      }
    }
  }
  // Without a bias, and with an input that needs no gradient (a first layer).
  torch::Tensor x = torch::randn({300, 100});
  torch::Tensor w = torch::randn({16, 100}, torch::requires_grad());
  narrow_linear(x, w).sum().backward();
  torch::Tensor want = torch::autograd::grad({torch::nn::functional::linear(x, w).sum()}, {w})[0];
  EXPECT_TRUE(torch::allclose(w.grad(), want, 1e-3, 1e-3));
  EXPECT_THROW(narrow_linear(x, torch::randn({16, 99})), dist::Error);
  EXPECT_THROW(narrow_linear(x, w, torch::randn({15})), dist::Error);
  torch::set_num_threads(1);
}

}  // namespace
}  // namespace tessera::nn
