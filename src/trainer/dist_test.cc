// File: src/trainer/dist_test.cc
//
// The trainer API in both modes. The same checks (Check below) run
// standalone, on a one-part Cora partition loaded in process, and
// distributed, against two KV servers (threads of this process, real
// sockets and shared memory) serving a two-part Cora partition.
#include "include/tessera/dist.h"

#include <fstream>
#include <map>

#include "gtest/gtest.h"
#include "src/kvstore/test_cluster.h"
#include "src/partition/load_partition.h"

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
    EXPECT_TRUE(torch::equal(serial[b].seeds, threaded[b].seeds));
    EXPECT_TRUE(torch::equal(serial[b].blocks[0].eids, threaded[b].blocks[0].eids));
    EXPECT_TRUE(torch::equal(serial[b].blocks[1].dst_nodes(), serial[b].seeds));
    EXPECT_TRUE(torch::equal(serial[b].blocks[0].dst_nodes(), serial[b].blocks[1].src_nodes));
    EXPECT_TRUE(torch::equal(serial[b].input_nodes, serial[b].blocks[0].src_nodes));
    const Block& blk = serial[b].blocks[1];
    EXPECT_EQ(blk.edge_dst().size(0), blk.num_edges());
    seen.push_back(serial[b].seeds);
  }
  EXPECT_TRUE(torch::equal(std::get<0>(torch::sort(torch::cat(seen))), train));
  EXPECT_THROW(DistNodeDataLoader(g, train, {.fanouts = {}}), Error);
  EXPECT_THROW(DistNodeDataLoader(g, train, {.fanouts = {2}, .prob = "nope"}), Error);

  // Edge loader: pairs are the batch's edges; they are not sampled.
  DistEdgeDataLoader edges(g, torch::arange(200), {.fanouts = {3}}, {.batch_size = 50},
                           {.negatives = 2, .exclude = "self"});
  int64_t batches = 0;
  for (const EdgeMiniBatch& b : edges) {
    ++batches;
    auto [s, d] = g.find_edges(b.eids);
    EXPECT_TRUE(torch::equal(b.pair_nodes.index_select(0, b.pos_src), s));
    EXPECT_TRUE(torch::equal(b.pair_nodes.index_select(0, b.pos_dst), d));
    EXPECT_EQ(b.neg_dst.size(0), 2 * b.eids.size(0));
    EXPECT_FALSE((b.blocks[0].eids.unsqueeze(1) == b.eids.unsqueeze(0)).any().item<bool>());
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
  try {
    for (int64_t v : failing) (void)v;
    FAIL() << "expected the collate error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no sevens"), std::string::npos) << e.what();
  }
}

TEST(DistTest, Standalone) {
  tessera::testing::TempDir dir;
  std::string config = kv::testing::PartitionCora(dir.path(), 1);
  auto ctx = initialize("", {.getenv = [](const char*) -> const char* { return nullptr; }});
  EXPECT_TRUE(ctx->standalone());
  Check(config, 0);
  CheckSampling(config);
  exit_client();
}

TEST(DistTest, StandaloneRefusesAMultiPartConfig) {
  tessera::testing::TempDir dir;
  std::string config = kv::testing::PartitionCora(dir.path(), 2);
  initialize("", {.getenv = [](const char*) -> const char* { return nullptr; }});
  try {
    DistGraph g("cora", config);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("one-part"), std::string::npos) << e.what();
  }
  exit_client();
}

TEST(DistTest, Distributed) {
  tessera::testing::TempDir dir;
  std::string config = kv::testing::PartitionCora(dir.path(), 2);
  kv::testing::TestCluster cluster(config, 2, 1);
  std::string ip_config = dir / "ip_config.txt";
  {
    std::ofstream out(ip_config);
    for (const std::string& e : cluster.endpoints()) {
      out << "127.0.0.1 " << e.substr(e.rfind(':') + 1) << "\n";
    }
  }
  std::map<std::string, std::string> env = {{"TESSERA_JOB_ID", cluster.job()},
                                            {"TESSERA_JOB_TOKEN", "t"},
                                            {"TESSERA_IP_CONFIG", ip_config},
                                            {"TESSERA_PART_CONFIG", config},
                                            {"TESSERA_NUM_SERVERS", "1"},
                                            {"TESSERA_MACHINE_ID", "0"},
                                            {"RANK", "0"},
                                            {"WORLD_SIZE", "1"}};
  auto ctx = initialize("", {.getenv = [&](const char* n) -> const char* {
                          auto it = env.find(n);
                          return it == env.end() ? nullptr : it->second.c_str();
                        }});
  EXPECT_FALSE(ctx->standalone());
  Check(config, 0);
  CheckSampling(config);
  EXPECT_THROW(DistGraph("citeseer", config), Error);
  exit_client();
}

}  // namespace
}  // namespace tessera::dist
