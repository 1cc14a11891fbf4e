// File: src/nn/conv_test.cc
//
// The layers on hand-drawn blocks, and their use under DDP.
#include "tessera/nn/conv.h"

#include "gtest/gtest.h"
#include "tessera/dist/parallel.h"
#include "tessera/nn/aggregate.h"

namespace tessera::nn {
namespace {

// A block drawn by hand: 5 sources, the first 2 are the destinations.
//   dst 0 <- src 2, src 3, src 0      dst 1 <- (nothing)
dist::Block HandBlock() {
  return dist::Block::Untyped(torch::tensor({10, 11, 12, 13, 14}), torch::tensor({0, 3, 3}),
                              torch::tensor({2, 3, 0}), torch::tensor({7, 8, 9}));
}

TEST(NnTest, MeanAggregateAveragesInEdges) {
  torch::Tensor h = torch::arange(15, torch::kFloat32).reshape({5, 3});
  torch::Tensor mean = mean_aggregate(HandBlock(), h);
  EXPECT_TRUE(torch::allclose(mean[0], (h[2] + h[3] + h[0]) / 3));
  EXPECT_TRUE(torch::equal(mean[1], torch::zeros({3})));  // No in-edges: zero.
  EXPECT_THROW(mean_aggregate(HandBlock(), torch::zeros({4, 3})), dist::Error);
}

// Both orders (aggregate then project, or project then aggregate) give
// W_self h_dst + W_neigh mean + b, and gradients reach every weight.
TEST(NnTest, SageConvMatchesTheFormula) {
  for (auto [in, out] : {std::pair<int64_t, int64_t>{3, 4}, {4, 2}}) {
    torch::manual_seed(1);
    SAGEConv conv(in, out);
    torch::Tensor h = torch::randn({5, in});
    dist::Block block = HandBlock();
    torch::Tensor y = conv->forward(block, h);
    ASSERT_EQ(y.sizes().vec(), (std::vector<int64_t>{2, out}));
    auto params = conv->named_parameters();
    torch::Tensor w_self = params["fc_self.weight"], b = params["fc_self.bias"];
    torch::Tensor w_neigh = params["fc_neigh.weight"];
    torch::Tensor mean = torch::stack({(h[2] + h[3] + h[0]) / 3, torch::zeros({in})});
    torch::Tensor expected = h.slice(0, 0, 2).matmul(w_self.t()) + b + mean.matmul(w_neigh.t());
    EXPECT_TRUE(torch::allclose(y, expected, 1e-5, 1e-6)) << in << " -> " << out;
    y.sum().backward();
    for (const auto& p : conv->parameters()) EXPECT_TRUE(p.grad().defined());
    EXPECT_THROW(conv->forward(block, torch::zeros({5, in + 1})), dist::Error);
  }
}

TEST(NnTest, SageStacksLayersAndChecksBlocks) {
  SAGE model(3, 8, 2, 2, 0.5);
  dist::Block b0(dist::Block::Untyped(torch::tensor({1, 2, 3}), torch::tensor({0, 1, 2}),
                                      torch::tensor({2, 0}), torch::tensor({0, 1})));
  dist::Block b1(dist::Block::Untyped(torch::tensor({1, 2}), torch::tensor({0, 1}),
                                      torch::tensor({1}), torch::tensor({2})));
  model->eval();
  torch::Tensor y = model->forward({b0, b1}, torch::randn({3, 3}));
  EXPECT_EQ(y.sizes().vec(), (std::vector<int64_t>{1, 2}));
  EXPECT_THROW(model->forward({b0}, torch::randn({3, 3})), dist::Error);
  EXPECT_THROW(SAGE(3, 8, 2, 0, 0.5), dist::Error);
}

// One trainer: DDP buckets cover every parameter once, last layers first,
// and synchronising changes nothing.
TEST(NnTest, DdpWithOneTrainerIsTransparent) {
  dist::initialize("", {.getenv = [](const char*) -> const char* { return nullptr; }});
  SAGE model(3, 8, 2, 2, 0);
  dist::DistributedDataParallel ddp(model.ptr(), {.bucket_cap_mb = 0.0001});
  EXPECT_EQ(ddp.world_size(), 1);
  std::vector<int64_t> seen;
  for (const auto& bucket : ddp.bucket_params())
    seen.insert(seen.end(), bucket.begin(), bucket.end());
  const int64_t n = static_cast<int64_t>(model->parameters().size());
  ASSERT_EQ(static_cast<int64_t>(seen.size()), n);
  for (int64_t i = 0; i < n; ++i) EXPECT_EQ(seen[i], n - 1 - i);
  EXPECT_GT(ddp.bucket_params().size(), 1u);  // The tiny cap splits them.
  dist::Block b0(dist::Block::Untyped(torch::tensor({1, 2}), torch::tensor({0, 1}),
                                      torch::tensor({1}), torch::tensor({0})));
  dist::Block b1(dist::Block::Untyped(torch::tensor({1}), torch::tensor({0, 0}),
                                      torch::zeros({0}, torch::kInt64),
                                      torch::zeros({0}, torch::kInt64)));
  torch::Tensor loss = model->forward({b0, b1}, torch::randn({2, 3})).sum();
  loss.backward();
  std::vector<torch::Tensor> grads;
  for (const auto& p : model->parameters()) grads.push_back(p.grad().clone());
  dist::SyncStats stats = ddp.synchronize();
  EXPECT_EQ(stats.wait_seconds, 0);
  for (size_t i = 0; i < grads.size(); ++i) {
    EXPECT_TRUE(torch::equal(model->parameters()[i].grad(), grads[i]));
  }
  dist::exit_client();
}

// The model outlives its DDP wrapper: later backward passes still work.
TEST(NnTest, ModelOutlivesDdp) {
  dist::initialize("", {.getenv = [](const char*) -> const char* { return nullptr; }});
  SAGEConv conv(3, 2);
  { dist::DistributedDataParallel ddp(conv.ptr()); }
  dist::Block b(dist::Block::Untyped(torch::tensor({1, 2}), torch::tensor({0, 1}),
                                     torch::tensor({1}), torch::tensor({0})));
  conv->forward(b, torch::randn({2, 3})).sum().backward();
  for (const auto& p : conv->parameters()) EXPECT_TRUE(p.grad().defined());
  dist::exit_client();
}

}  // namespace
}  // namespace tessera::nn
