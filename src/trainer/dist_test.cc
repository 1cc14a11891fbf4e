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

TEST(DistTest, Standalone) {
  tessera::testing::TempDir dir;
  std::string config = kv::testing::PartitionCora(dir.path(), 1);
  auto ctx = initialize("", {.getenv = [](const char*) -> const char* { return nullptr; }});
  EXPECT_TRUE(ctx->standalone());
  Check(config, 0);
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
  EXPECT_THROW(DistGraph("citeseer", config), Error);
  exit_client();
}

}  // namespace
}  // namespace tessera::dist
