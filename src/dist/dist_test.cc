// File: src/dist/dist_test.cc
//
// The trainer API in both modes. The same checks (Check below) run
// standalone, on a one-part Cora partition loaded in process, and
// distributed, against two KV servers (threads of this process, real
// sockets and shared memory) serving a two-part Cora partition.
#include "tessera/dist.h"

#include <sys/socket.h>
#include <sys/uio.h>
#include <torch/optim/adam.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>

#include "gtest/gtest.h"
#include "src/dist/dist_test_env.h"
#include "src/kvstore/test_cluster.h"
#include "tessera/dist/embedding.h"
#include "tessera/dist/parallel.h"
#include "tessera/nn.h"
#include "tessera/partition/load_partition.h"

namespace tessera::dist {
namespace {

// Row `gid` of node array `name`, read from the partition files.
torch::Tensor FileRows(const std::string& config, const std::string& name,
                       const std::vector<int64_t>& gids) {
  auto book = ReadPartitionConfig(config)->Book(0);
  std::vector<torch::Tensor> rows;
  for (int64_t gid : gids) {
    int p = book->NodeOwner(gid);
    auto part = LoadPartition(config, p);
    const Array& a = part->node_data.at(name);
    torch::Tensor all = torch::from_blob(const_cast<void*>(a.data()), a.shape(),
                                         name == "label" ? torch::kInt64 : torch::kFloat32);
    rows.push_back(all[gid - book->NodeRange(p).first].clone());
  }
  return torch::stack(rows);
}

// What a training program does, identical in both modes.
void Check(const std::string& config, int rank) {
  DistGraph g("cora", config);
  EXPECT_EQ(g.num_nodes(), 2708);
  EXPECT_EQ(g.num_edges(), 10556);
  EXPECT_EQ(g.rank(), rank);
  auto schemes = g.node_attr_schemes();
  ASSERT_TRUE(schemes.count("feat"));
  EXPECT_EQ(schemes["feat"].shape, (std::vector<int64_t>{1433}));
  EXPECT_EQ(schemes["label"].dtype, torch::kInt64);

  std::vector<int64_t> gids = {0, 2707, 1400, 1400, 3};
  torch::Tensor ids = torch::tensor(gids, torch::kInt32);  // Any integer dtype.
  torch::Tensor x = g.ndata("feat")[ids];
  EXPECT_EQ(x.sizes().vec(), (std::vector<int64_t>{5, 1433}));
  EXPECT_TRUE(torch::equal(x, FileRows(config, "feat", gids)));
  EXPECT_TRUE(torch::equal(g.ndata("label")[ids], FileRows(config, "label", gids)));
  EXPECT_THROW(g.ndata("feat")[torch::tensor({2708})], Error);
  EXPECT_THROW(g.ndata("feat")[torch::tensor({0.5})], Error);
  EXPECT_THROW(g.ndata("nope"), Error);

  {
    DistTensor h({2708, 3}, torch::kFloat32, "h", Init::Uniform(-1, 1, 5));
    EXPECT_EQ(h.part_policy(), PartPolicy::kNode);
    torch::Tensor all = h[torch::arange(2708)];
    EXPECT_TRUE((all >= -1).all().item<bool>() && (all < 1).all().item<bool>());
    // Same values as a second handle on the same tensor.
    DistTensor again({2708, 3}, torch::kFloat32, "h");
    EXPECT_TRUE(torch::equal(again[torch::arange(2708)], all));
    torch::Tensor rows = torch::ones({2, 3});
    h.set(torch::tensor({7, 2000}), rows);
    h.add(torch::tensor({7, 2000}), rows);
    EXPECT_TRUE(torch::equal(h[torch::tensor({2000, 7})], 2 * rows));
    EXPECT_THROW(h.set(torch::tensor({7}), torch::ones({1, 4})), Error);
    // local_partition(): this machine's rows in place, both ways.
    const int part = g.partition_book().part_id();
    auto [first, end] = h.id_range(part);
    EXPECT_EQ(h.id_range(g.partition_book().num_partitions() - 1).second, 2708);
    EXPECT_THROW(h.id_range(g.partition_book().num_partitions()), Error);
    torch::Tensor view = h.local_partition();
    EXPECT_EQ(view.sizes().vec(), (std::vector<int64_t>{end - first, 3}));
    EXPECT_TRUE(torch::equal(view, h[torch::arange(first, end)]));
    view[1].fill_(42);
    EXPECT_TRUE(torch::equal(h[torch::tensor({first + 1})], torch::full({1, 3}, 42.0)));
    h.set(torch::tensor({first}), torch::full({1, 3}, -7.0));
    EXPECT_TRUE(torch::equal(view[0], torch::full({3}, -7.0)));
    EXPECT_THROW(DistTensor({2708, 4}, torch::kFloat32, "h"), Error);  // Shape clash.
    EXPECT_THROW(DistTensor({5, 4}, torch::kFloat32, "bad"), Error);   // No policy fits.
    DistTensor e({10556}, torch::kInt64, "", Init::Zeros());
    EXPECT_EQ(e.part_policy(), PartPolicy::kEdge);
    EXPECT_EQ(e[torch::tensor({10555})].item<int64_t>(), 0);
  }
  // The non-persistent "h" went with its creating handle.
  EXPECT_THROW(g.ndata("h"), Error);
  g.barrier();
}

// Sampling, loaders and splitting, identical in both modes.
void CheckSampling(const std::string& config) {
  DistGraph g("cora", config);
  torch::Tensor seeds = torch::tensor({0, 5, 1400, 2707});
  torch::Tensor deg = g.in_degrees(seeds);
  Subgraph sg = sample_neighbors(g, seeds, 3, {.seed = 1});
  for (int64_t i = 0; i < 4; ++i) {
    EXPECT_EQ((sg.dst == seeds[i]).sum().item<int64_t>(),
              std::min<int64_t>(3, deg[i].item<int64_t>()));
  }
  auto [src, dst] = g.find_edges(sg.eids);  // Every sampled edge is an edge of the graph.
  EXPECT_TRUE(torch::equal(src, sg.src) && torch::equal(dst, sg.dst));
  EXPECT_TRUE(torch::equal(sample_neighbors(g, seeds, 3, {.seed = 1}).eids, sg.eids));
  Subgraph all = in_subgraph(g, seeds);
  EXPECT_EQ(all.num_edges(), deg.sum().item<int64_t>());
  Subgraph out = sample_neighbors(g, seeds, -1, {.edge_dir = "out"});
  EXPECT_EQ(out.num_edges(), g.out_degrees(seeds).sum().item<int64_t>());
  EXPECT_TRUE((out.src.unsqueeze(1) == seeds.unsqueeze(0)).any(1).all().item<bool>());
  EXPECT_EQ(g.in_degrees().sum().item<int64_t>(), 10556);
  EXPECT_EQ(g.out_degrees().sum().item<int64_t>(), 10556);
  // Excluding every in-edge but one of each seed leaves exactly that one.
  torch::Tensor keep = torch::ones({all.num_edges()}, torch::kBool);
  std::map<int64_t, bool> kept;
  for (int64_t i = 0; i < all.num_edges(); ++i) {
    int64_t d = all.dst[i].item<int64_t>();
    if (!kept[d]) {
      kept[d] = true;
      keep[i] = false;
    }
  }
  Subgraph one = sample_neighbors(g, seeds, 5, {.exclude_edges = all.eids.masked_select(keep)});
  EXPECT_EQ(one.num_edges(), static_cast<int64_t>(kept.size()));
  EXPECT_THROW(sample_neighbors(g, seeds, 3, {.edge_dir = "sideways"}), Error);
  EXPECT_THROW(sample_neighbors(g, seeds, 3, {.prob = "nope"}), Error);
  EXPECT_THROW(sample_neighbors(g, torch::tensor({2708}), 3), Error);
  EdgeSubgraph es = edge_subgraph(g, torch::tensor({10, 20, 30}));
  auto [es_src, es_dst] = g.find_edges(torch::tensor({10, 20, 30}));
  EXPECT_TRUE(torch::equal(es.nodes.index_select(0, es.src), es_src));
  EXPECT_TRUE(torch::equal(es.nodes.index_select(0, es.dst), es_dst));

  // node_split: 4 trainers share the 140 training nodes, 35 each, once each.
  torch::Tensor mask = g.ndata("train_mask")[torch::arange(2708)];
  torch::Tensor train = torch::nonzero(mask).flatten();
  SplitOptions half{.rank = 1, .num_trainers = 2};
  torch::Tensor second = node_split(mask, g.partition_book(), half);
  EXPECT_EQ(second.size(0), 70);
  EXPECT_TRUE(torch::equal(node_split(g.ndata("train_mask"), g.partition_book(), half), second));
  std::vector<torch::Tensor> shares;
  for (int r = 0; r < 4; ++r) {
    shares.push_back(node_split(mask, g.partition_book(), {.rank = r, .num_trainers = 4}));
    EXPECT_EQ(shares.back().size(0), 35);
  }
  EXPECT_TRUE(torch::equal(std::get<0>(torch::sort(torch::cat(shares))), train));
  EXPECT_EQ(edge_split(torch::arange(100), g.partition_book(), half).size(0), 50);
  EXPECT_THROW(node_split(torch::ones({5}, torch::kBool), g.partition_book()), Error);

  // Node loader: the same batches with 0 or 2 sampler threads; every
  // training node once per epoch; layers chained.
  auto epoch_of = [&](int workers) {
    DistNodeDataLoader loader(
        g, train, {.fanouts = {4, 3}},
        {.batch_size = 32, .shuffle = true, .seed = 3, .num_workers = workers});
    EXPECT_EQ(loader.size(), 5);
    std::vector<MiniBatch> batches;
    for (const MiniBatch& b : loader) batches.push_back(b);
    return batches;
  };
  std::vector<MiniBatch> serial = epoch_of(0), threaded = epoch_of(2);
  ASSERT_EQ(serial.size(), 5u);
  ASSERT_EQ(threaded.size(), 5u);
  std::vector<torch::Tensor> seen;
  for (size_t b = 0; b < serial.size(); ++b) {
    EXPECT_TRUE(torch::equal(serial[b].seeds[0], threaded[b].seeds[0]));
    EXPECT_TRUE(
        torch::equal(serial[b].blocks[0].edges[0].eids, threaded[b].blocks[0].edges[0].eids));
    EXPECT_TRUE(torch::equal(serial[b].blocks[1].dst_nodes(), serial[b].seeds[0]));
    EXPECT_TRUE(torch::equal(serial[b].blocks[0].dst_nodes(), serial[b].blocks[1].src_nodes[0]));
    EXPECT_TRUE(torch::equal(serial[b].input_nodes[0], serial[b].blocks[0].src_nodes[0]));
    const Block& blk = serial[b].blocks[1];
    EXPECT_EQ(blk.edges_of().edge_dst().size(0), blk.num_edges());
    seen.push_back(serial[b].seeds[0]);
  }
  EXPECT_TRUE(torch::equal(std::get<0>(torch::sort(torch::cat(seen))), train));
  EXPECT_THROW(DistNodeDataLoader(g, train, {.fanouts = {}}), Error);
  EXPECT_THROW(DistNodeDataLoader(g, train, {.fanouts = {2}, .prob = "nope"}), Error);

  // Prefetching: the sampler threads pull each batch's input features and
  // seed labels (from both machines when distributed) into its blocks.
  for (int workers : {0, 2}) {
    DistNodeDataLoader loader(
        g, train,
        {.fanouts = {4, 3}, .prefetch_node_feats = {"feat"}, .prefetch_labels = {"label"}},
        {.batch_size = 32, .shuffle = true, .seed = 3, .num_workers = workers});
    int64_t n = 0;
    for (const MiniBatch& b : loader) {
      ++n;
      EXPECT_TRUE(
          torch::equal(b.blocks.front().srcdata.at("feat"), g.ndata("feat")[b.input_nodes[0]]));
      EXPECT_TRUE(torch::equal(b.blocks.back().dstdata.at("label"), g.ndata("label")[b.seeds[0]]));
      EXPECT_TRUE(b.blocks.back().srcdata.empty());
      EXPECT_TRUE(b.blocks.front().dstdata.empty());
    }
    EXPECT_EQ(n, 5);
  }
  {
    // Added while the loader exists (as tessera.distributed does on a
    // script's first read): batches sampled afterwards carry the rows.
    DistNodeDataLoader loader(g, train, {.fanouts = {4, 3}},
                              {.batch_size = 32, .seed = 3, .num_workers = 2});
    loader.add_prefetch("feat", false);
    loader.add_prefetch("feat", false);  // Once is enough.
    loader.add_prefetch("label", true);
    EXPECT_THROW(loader.add_prefetch("nope", true), Error);
    for (const MiniBatch& b : loader) {
      EXPECT_TRUE(
          torch::equal(b.blocks.front().srcdata.at("feat"), g.ndata("feat")[b.input_nodes[0]]));
      EXPECT_TRUE(torch::equal(b.blocks.back().dstdata.at("label"), g.ndata("label")[b.seeds[0]]));
      EXPECT_EQ(b.blocks.front().srcdata.size(), 1u);
    }
  }
  EXPECT_THROW(DistNodeDataLoader(g, train, {.fanouts = {2}, .prefetch_node_feats = {"nope"}}),
               Error);
  EXPECT_THROW(
      DistEdgeDataLoader(g, torch::arange(10), {.fanouts = {2}, .prefetch_labels = {"no"}}), Error);

  // Edge loader: pairs are the batch's edges; they are not sampled.
  DistEdgeDataLoader edges(g, torch::arange(200), {.fanouts = {3}}, {.batch_size = 50},
                           {.negatives = 2, .exclude = "self"});
  int64_t batches = 0;
  for (const EdgeMiniBatch& b : edges) {
    ++batches;
    auto [s, d] = g.find_edges(b.eids);
    const PairGraph::Relation& pos = b.positive.edges_of();
    EXPECT_TRUE(torch::equal(b.positive.nodes[0].index_select(0, pos.src), s));
    EXPECT_TRUE(torch::equal(b.positive.nodes[0].index_select(0, pos.dst), d));
    EXPECT_TRUE(torch::equal(pos.eids, b.eids));
    EXPECT_EQ(b.negative.edges_of().dst.size(0), 2 * b.eids.size(0));
    EXPECT_FALSE(
        (b.blocks[0].edges[0].eids.unsqueeze(1) == b.eids.unsqueeze(0)).any().item<bool>());
  }
  EXPECT_EQ(batches, 4);
  EXPECT_THROW(DistEdgeDataLoader(g, torch::arange(5), {.fanouts = {3}}, {}, {.exclude = "x"}),
               Error);

  // Generic loader; an exception in collate reaches the loop.
  DistDataLoader<int64_t> sums(torch::arange(10),
                               [](const torch::Tensor& rows) { return rows.sum().item<int64_t>(); },
                               {.batch_size = 3, .num_workers = 1});
  std::vector<int64_t> got;
  for (int64_t v : sums) got.push_back(v);
  EXPECT_EQ(got, (std::vector<int64_t>{3, 12, 21, 9}));
  DistDataLoader<int64_t> failing(torch::arange(10),
                                  [](const torch::Tensor& rows) -> int64_t {
                                    if ((rows == 7).any().item<bool>())
                                      throw std::runtime_error("no sevens");
                                    return 0;
                                  },
                                  {.batch_size = 3, .num_workers = 2});
  EXPECT_THAT(
      [&] {
        for (int64_t v : failing) (void)v;
      },
      ThrowsMessage<Error>(HasSubstr("no sevens")));
}

// Learnable embeddings and the sparse optimizers, identical in both modes:
// the updates match the formulas, only looked-up rows change, and the
// embedding and optimizer state survive save and load.
void CheckEmbedding(const std::string& config, const std::string& dir) {
  DistGraph g("cora", config);
  torch::Tensor all = torch::arange(2708);
  torch::Tensor ids = torch::tensor({5, 9, 5, 2000});  // 5 twice: its gradients averaged.
  torch::Tensor coef =
      torch::tensor({{1.f, -2.f, 0.5f}, {3.f, 1.f, -1.f}, {1.f, 1.f, 1.f}, {-0.25f, 4.f, 2.f}});
  torch::Tensor unique = torch::tensor({5, 9, 2000});
  torch::Tensor g_rows = torch::stack({(coef[0] + coef[2]) / 2, coef[1], coef[3]});
  const double lr = 0.1;

  DistEmbedding emb(2708, 3, "emb_adagrad", Init::Uniform(-1, 1, 3));
  SparseAdagrad adagrad({emb}, lr);
  torch::Tensor w0 = emb.weight()[all];
  for (int step = 1; step <= 2; ++step) {
    torch::Tensor h = emb(ids);
    EXPECT_TRUE(h.requires_grad());
    (h * coef).sum().backward();
    adagrad.step();
    // sum = step * g^2; each step moves by lr * g / sqrt(k g^2) for k = 1..step.
    torch::Tensor moved = torch::zeros_like(g_rows);
    for (int k = 1; k <= step; ++k)
      moved += lr * g_rows / (torch::sqrt(k * g_rows * g_rows) + 1e-10);
    EXPECT_TRUE(
        torch::allclose(emb.weight()[unique], w0.index_select(0, unique) - moved, 1e-5, 1e-6));
    EXPECT_TRUE(
        torch::allclose(g.ndata("emb_adagrad.adagrad_sum")[unique], step * g_rows * g_rows));
  }
  torch::Tensor untouched = torch::tensor({0, 6, 2001, 2707});
  EXPECT_TRUE(torch::equal(emb.weight()[untouched], w0.index_select(0, untouched)));

  // Adam: the first step of each row moves it by lr * g / (|g| + eps).
  DistEmbedding emb_adam(2708, 3, "emb_adam", Init::Normal(0, 1, 4));
  SparseAdam adam({emb_adam}, lr);
  torch::Tensor a0 = emb_adam.weight()[all];
  (emb_adam(ids) * coef).sum().backward();
  adam.step();
  EXPECT_TRUE(torch::allclose(emb_adam.weight()[unique],
                              a0.index_select(0, unique) - lr * g_rows / (g_rows.abs() + 1e-8),
                              1e-5, 1e-6));
  torch::Tensor steps = g.ndata("emb_adam.adam_step")[all].reshape({-1});
  EXPECT_EQ(steps.sum().item<float>(), 3.f);  // One step for each of the three rows.
  EXPECT_EQ(steps[5].item<float>(), 1.f);
  // Steps with other gradients, betas and a large eps follow torch.optim.Adam.
  DistEmbedding emb_ref(2708, 3, "emb_adam_ref", Init::Normal(0, 1, 5));
  SparseAdam adam_ref({emb_ref}, lr, {0.8, 0.95}, 0.1);
  torch::Tensor dense = emb_ref.weight()[unique].clone().requires_grad_(true);
  torch::optim::Adam reference({dense}, torch::optim::AdamOptions(lr).betas({0.8, 0.95}).eps(0.1));
  for (int step = 1; step <= 4; ++step) {
    const double scale = step % 2 == 0 ? -0.5 * step : 1.0 * step;  // Sign and size vary.
    (emb_ref(ids) * coef * scale).sum().backward();
    adam_ref.step();
    reference.zero_grad();
    dense.mutable_grad() = g_rows * scale;
    reference.step();
    // Float rounding differs between the two (the moves are ~0.1 a step).
    EXPECT_TRUE(torch::allclose(emb_ref.weight()[unique], dense.detach(), 1e-4, 1e-5))
        << "step " << step << ": " << emb_ref.weight()[unique] << " against " << dense;
  }

  // Lookups in eval mode or without gradients are not recorded.
  emb.eval();
  torch::Tensor before = emb.weight()[all];
  EXPECT_FALSE(emb(ids).requires_grad());
  adagrad.step();
  EXPECT_TRUE(torch::equal(emb.weight()[all], before));
  emb.train();
  {
    torch::NoGradGuard no_grad;
    EXPECT_FALSE(emb(ids).requires_grad());
  }
  adagrad.step();  // Nothing recorded: a no-op.
  // zero_grad() forgets recorded lookups.
  (emb(ids) * coef).sum().backward();
  adagrad.zero_grad();
  adagrad.step();
  EXPECT_TRUE(torch::equal(emb.weight()[all], before));

  // Save, change, load: the rows and the optimizer state come back (checkpoint
  // folders, replaced by a second save).
  emb.save(dir + "/emb");
  emb.save(dir + "/emb");
  adagrad.save(dir + "/opt");
  torch::Tensor state = g.ndata("emb_adagrad.adagrad_sum")[all];
  emb.weight().set(unique, torch::zeros({3, 3}));
  g.ndata("emb_adagrad.adagrad_sum").set(unique, torch::zeros({3, 3}));
  const torch::Tensor draw = torch::rand({3});
  emb.load(dir + "/emb");
  adagrad.load(dir + "/opt");
  EXPECT_TRUE(torch::equal(emb.weight()[all], before));
  EXPECT_TRUE(torch::equal(g.ndata("emb_adagrad.adagrad_sum")[all], state));
  EXPECT_FALSE(torch::equal(torch::rand({3}), draw));  // The random state is left alone.
  // It holds emb_adagrad only.
  EXPECT_THAT([&] { emb_adam.load(dir + "/emb"); },
              ThrowsMessage<Error>(HasSubstr("holds no tensor node/emb_adam")));
  EXPECT_THROW(emb.load(dir + "/missing"), Error);
  EXPECT_THROW(SparseAdam({emb}, -1), Error);
  EXPECT_THROW(DistEmbedding(2708, 0, "emb_zero"), Error);
}

// Layer-wise inference over DistTensors gives what the model computes on
// full-neighbour blocks, with and without storing the next layer's
// projection (hidden 64 -> 7 classes narrows; 8 -> 7 does not).
void CheckInference(const std::string& config) {
  DistGraph g("cora", config);
  torch::Tensor nodes = torch::tensor({0, 7, 1400, 2707});
  for (int64_t hidden : {64, 8}) {
    torch::manual_seed(5);
    nn::SAGE model(1433, hidden, 7, 2, 0.5);
    DistTensor y = model->inference(g, g.ndata("feat"), 500);
    EXPECT_EQ(y.shape(), (std::vector<int64_t>{2708, 7}));
    model->eval();
    torch::NoGradGuard no_grad;
    DistNodeDataLoader full(g, nodes, {.fanouts = {-1, -1}}, {.batch_size = 4});
    for (const MiniBatch& batch : full) {
      torch::Tensor expected = model->forward(batch.blocks, g.ndata("feat")[batch.input_nodes[0]]);
      EXPECT_TRUE(torch::allclose(y[batch.seeds[0]], expected, 1e-4, 1e-5)) << "hidden " << hidden;
    }
  }
}

TEST(DistTest, Standalone) {
  tessera::testing::TempDir dir;
  std::string config = kvstore::testing::PartitionCora(dir.path(), 1);
  // Before initialize: an error that names the call to make, in both languages.
  EXPECT_THAT([&] { DistGraph g("cora", config); },
              ThrowsMessage<Error>(HasSubstr("call tessera.distributed.initialize() (C++: "
                                             "tessera::dist::initialize()) first")));
  auto ctx = initialize("", {.getenv = [](const char*) -> const char* { return nullptr; }});
  EXPECT_TRUE(ctx->standalone());
  Check(config, 0);
  CheckSampling(config);
  CheckEmbedding(config, dir.path());
  CheckInference(config);
  {
    // Delete(): gone at once, persistent or not; its handles fail; the name
    // is created anew; and the deleted handle's destructor does not delete
    // the new tensor of the same name.
    DistGraph g("cora", config);
    DistTensor kept({2708, 2}, torch::kFloat32, "doomed", Init::Uniform(0, 1, 3), PartPolicy::kAuto,
                    /*persistent=*/true);
    kept.Delete();
    EXPECT_THAT([&] { kept[torch::tensor({0})]; }, ThrowsMessage<Error>(HasSubstr("doomed")));
    auto doomed =
        std::make_unique<DistTensor>(std::vector<int64_t>{2708, 2}, torch::kFloat32, "doomed");
    EXPECT_TRUE(doomed->created());
    doomed->Delete();
    DistTensor anew({2708, 2}, torch::kFloat32, "doomed", Init::Uniform(1, 2, 4));
    EXPECT_TRUE(anew.created());
    doomed.reset();
    torch::Tensor rows = anew[torch::arange(2708)];
    EXPECT_TRUE((rows >= 1).all().item<bool>() && (rows < 2).all().item<bool>());
  }
  exit_client();
}

// A trainer whose peer dies (killed, or its host gone) must see an error on
// the socket, not die of SIGPIPE: Gloo writes with writev, and a trainer
// killed by SIGPIPE was blamed by the launcher for its peer's death.
TEST(DistTest, InitializeIgnoresSigpipeSoAWriteToADeadPeerIsAnError) {
  std::signal(SIGPIPE, SIG_DFL);
  auto ctx = initialize("", {.getenv = [](const char*) -> const char* { return nullptr; }});
  struct sigaction now {};
  ASSERT_EQ(sigaction(SIGPIPE, nullptr, &now), 0);
  EXPECT_EQ(now.sa_handler, SIG_IGN);
  int fds[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  close(fds[1]);
  char byte = 0;
  struct iovec iov {
    &byte, 1
  };
  EXPECT_EQ(writev(fds[0], &iov, 1), -1);  // Without the fix, SIGPIPE ends the test here.
  EXPECT_EQ(errno, EPIPE);
  close(fds[0]);
  exit_client();
}

TEST(DistTest, StandaloneRefusesAMultiPartConfig) {
  tessera::testing::TempDir dir;
  std::string config = kvstore::testing::PartitionCora(dir.path(), 2);
  initialize("", {.getenv = [](const char*) -> const char* { return nullptr; }});
  EXPECT_THAT([&] { DistGraph g("cora", config); }, ThrowsMessage<Error>(HasSubstr("one-part")));
  exit_client();
}

TEST(DistTest, Distributed) {
  tessera::testing::TempDir dir;
  std::string config = kvstore::testing::PartitionCora(dir.path(), 2);
  kvstore::testing::TestCluster cluster(config, 2, 1);
  testing::TrainerEnv env(cluster, dir.path(), config);
  auto ctx = initialize("", {.getenv = env.getenv()});
  EXPECT_FALSE(ctx->standalone());
  Check(config, 0);
  CheckSampling(config);
  CheckEmbedding(config, dir.path());
  CheckInference(config);
  EXPECT_THROW(DistGraph("citeseer", config), Error);
  exit_client();
}

// Ending a job never masks its result: servers that stopped (or are too
// loaded to answer the goodbye in time) make exit_client() log a warning
// naming them, not throw, which would end a finished program in
// std::terminate.
TEST(DistTest, ExitClientWarnsWhenServersDoNotAnswerGoodbye) {
  tessera::testing::TempDir dir;
  std::string config = kvstore::testing::PartitionCora(dir.path(), 2);
  auto cluster = std::make_unique<kvstore::testing::TestCluster>(config, 2, 1);
  testing::TrainerEnv env(*cluster, dir.path(), config);
  // Captured from before the client's threads start (spdlog's default logger
  // must not change while they may log).
  auto log = std::make_unique<testing::CapturedLog>("%l %v");
  // Heartbeats would not notice the servers' end before the goodbye.
  EXPECT_FALSE(initialize("", {.heartbeat_timeout_s = 120, .getenv = env.getenv()})->standalone());
  cluster.reset();  // Every server stops; the client does not know yet.

  EXPECT_NO_THROW(exit_client());  // Its threads are gone after it.
  std::string text = log->text();
  log.reset();
  EXPECT_THAT(text, HasSubstr("warning client 0: goodbye not confirmed (server 0")) << text;
  EXPECT_THAT(text, HasSubstr("did not answer goodbye in time")) << text;
  EXPECT_NO_THROW(exit_client());  // Idempotent.
}

// TESSERA_HEARTBEAT_TIMEOUT_S / TESSERA_CALL_TIMEOUT_S override the options;
// a bad value is an error naming the variable, before any connection is tried.
TEST(DistTest, TimeoutsFromTheEnvironmentAreChecked) {
  tessera::testing::TempDir dir;
  std::string ip_config = dir / "ip_config.txt";
  std::ofstream(ip_config) << "127.0.0.1 1\n";
  std::map<std::string, std::string> vars = {{"TESSERA_JOB_ID", "jtest"},
                                             {"TESSERA_JOB_TOKEN", "t"},
                                             {"TESSERA_JOB_ENCRYPTION", "off"},
                                             {"TESSERA_IP_CONFIG", ip_config},
                                             {"TESSERA_PART_CONFIG", dir / "none.json"},
                                             {"TESSERA_NUM_SERVERS", "1"},
                                             {"TESSERA_MACHINE_ID", "0"},
                                             {"RANK", "0"},
                                             {"WORLD_SIZE", "1"}};
  InitOptions options{.getenv = [&](const char* n) -> const char* {
    auto it = vars.find(n);
    return it == vars.end() ? nullptr : it->second.c_str();
  }};
  for (std::string name : {"TESSERA_HEARTBEAT_TIMEOUT_S", "TESSERA_CALL_TIMEOUT_S"}) {
    for (const char* bad : {"soon", "0", "-3", "1e9"}) {
      vars[name] = bad;
      try {
        initialize("", options);
        exit_client();
        ADD_FAILURE() << "no error for " << name << "=" << bad;
      } catch (const Error& e) {
        EXPECT_THAT(e.what(), HasSubstr(name + "='" + bad + "' is not a number of seconds"))
            << e.what();
      }
    }
    vars.erase(name);
  }
}

}  // namespace
}  // namespace tessera::dist
