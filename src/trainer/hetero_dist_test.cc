// File: src/trainer/hetero_dist_test.cc
//
// The trainer API on a heterogeneous graph (a small generated ogbn-mag
// shape), standalone on a one-part partition and distributed against two KV
// servers (threads of this process, real sockets and shared memory) serving
// a two-part partition: types, per-type counts, nodes(ntype).data / edges,
// typed DistTensors, per-type node_split and the id mappings, each checked
// against the partition's files.
#include <fstream>
#include <map>
#include <set>

#include "gtest/gtest.h"
#include "include/tessera/dist.h"
#include "include/tessera/embedding.h"
#include "include/tessera/nn.h"
#include "src/base/test_util.h"
#include "src/graph/hetero_generator.h"
#include "src/graph/npy.h"
#include "src/graph/readers.h"
#include "src/kvstore/test_cluster.h"
#include "src/partition/load_partition.h"

namespace tessera::dist {
namespace {

struct MagFixture {
  std::string config;
  Graph graph;  // The input, for reference.
  std::vector<int64_t> orig_nids;
};

// Generates a 3000-node mag-shaped graph and partitions it into `parts`.
MagFixture MakeMag(const std::string& dir, int parts) {
  MagFixture f;
  HeteroGenerateOptions o;
  o.num_nodes = 3000;
  o.feat_dim = 8;
  o.num_classes = 5;
  o.num_threads = 1;
  auto stats = GenerateMagGraph(o, dir + "/mag");
  EXPECT_TRUE(stats.ok()) << stats.status();
  auto graph = ReadGraph(dir + "/mag");
  EXPECT_TRUE(graph.ok()) << graph.status();
  PartitionOptions po;
  po.return_mapping = true;
  auto result = PartitionGraph(*graph, "mag", parts, dir + "/parts", po);
  EXPECT_TRUE(result.ok()) << result.status();
  f.config = result.ok() ? result->config_path : "";
  f.graph = std::move(*graph);
  auto nids = ReadNpy(dir + "/parts/orig_nids.npy");
  EXPECT_TRUE(nids.ok());
  auto s = nids->span<int64_t>();
  f.orig_nids.assign(s.begin(), s.end());
  return f;
}

void Check(const MagFixture& f, int rank, int world) {
  DistGraph g("mag", f.config);
  const Graph& in = f.graph;
  EXPECT_EQ(g.ntypes(), in.ntypes);
  ASSERT_EQ(g.canonical_etypes(), in.etypes);
  EXPECT_EQ(g.etypes()[0], in.etypes[0].relation);
  EXPECT_EQ(g.num_nodes(), in.num_nodes);
  for (size_t t = 0; t < in.ntypes.size(); ++t) {
    EXPECT_EQ(g.num_nodes(in.ntypes[t]), in.ntype_offsets[t + 1] - in.ntype_offsets[t]);
  }
  for (size_t r = 0; r < in.etypes.size(); ++r) {
    EXPECT_EQ(g.num_edges(in.etypes[r].Canonical()), in.etype_offsets[r + 1] - in.etype_offsets[r]);
  }
  EXPECT_EQ(g.num_edges("writes"), g.num_edges("author:writes:paper"));
  EXPECT_EQ(g.to_canonical_etype("cites").Canonical(), "paper:cites:paper");
  EXPECT_THROW(g.num_nodes("venue"), Error);
  try {
    g.ndata("feat");
    FAIL() << "ndata on a heterograph";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the graph has 4 node types"), std::string::npos)
        << e.what();
  }

  // Paper features by per-type id equal the input's rows of the same paper.
  const int paper = g.get_ntype_id("paper");
  auto schemes = g.nodes("paper").schemes();
  ASSERT_TRUE(schemes.count("feat"));
  EXPECT_EQ(schemes["feat"].shape, (std::vector<int64_t>{8}));
  EXPECT_TRUE(g.nodes("author").schemes().empty());
  const int64_t papers = g.num_nodes("paper");
  torch::Tensor ids = torch::tensor({int64_t{0}, papers - 1, papers / 2, int64_t{3}});
  torch::Tensor feat = g.nodes("paper").data("feat")[ids];
  torch::Tensor homo = g.map_to_homo_nid(ids, "paper");
  const Array& input_feat = in.ntype_data[paper].at("feat");
  for (int64_t i = 0; i < ids.size(0); ++i) {
    const int64_t orig = f.orig_nids[homo[i].item<int64_t>()] - in.ntype_offsets[paper];
    torch::Tensor want = torch::from_blob(
        const_cast<float*>(input_feat.span<float>().data() + orig * 8), {8}, torch::kFloat32);
    EXPECT_TRUE(torch::equal(feat[i], want)) << "paper " << ids[i].item<int64_t>();
  }
  auto [types, per] = g.map_to_per_ntype(homo);
  EXPECT_TRUE(torch::equal(types, torch::full({4}, paper, torch::kInt64)));
  EXPECT_TRUE(torch::equal(per, ids));
  EXPECT_THROW(g.map_to_homo_nid(torch::tensor({papers}), "paper"), Error);

  // A learned embedding for the featureless authors (DGL's DistEmbedding on
  // ogbn-mag): a typed tensor addressed by author ids.
  const int64_t authors = g.num_nodes("author");
  {
    DistTensor emb({authors, 4}, torch::kFloat32, "emb", Init::Uniform(-1, 1, 3), PartPolicy::kAuto,
                   false, "author");
    EXPECT_EQ(emb.type_name(), "author");
    EXPECT_EQ(emb.key(), "node/author/emb");
    torch::Tensor rows = torch::full({2, 4}, 7.0f);
    if (rank == 0) emb.set(torch::tensor({int64_t{0}, authors - 1}), rows);
    g.barrier();
    EXPECT_TRUE(torch::equal(emb[torch::tensor({authors - 1, int64_t{0}})], rows));
    EXPECT_THROW(emb[torch::tensor({authors})], Error);
    // Shape must match the type; a count that fits no type is an error.
    EXPECT_THROW(DistTensor({authors + 1, 4}, torch::kFloat32, "bad", Init::Zeros(),
                            PartPolicy::kNode, false, "author"),
                 Error);
    EXPECT_THROW(DistTensor({7, 4}, torch::kFloat32, "bad"), Error);
    // An edge tensor of one relation, found by its count when unique.
    DistTensor w({g.num_edges("paper:has_topic:field_of_study")}, torch::kFloat32, "w",
                 Init::Zeros(), PartPolicy::kEdge, false, "has_topic");
    EXPECT_EQ(w.key(), "edge/paper:has_topic:field_of_study/w");
    g.barrier();
  }

  // A trainable embedding of the authors with a sparse optimizer: one
  // Adagrad step moves exactly the rows that were used.
  {
    DistEmbedding emb(authors, 4, "author_emb", Init::Uniform(-1, 1, 9), PartPolicy::kAuto,
                      "author");
    EXPECT_EQ(emb.weight().key(), "node/author/author_emb");
    SparseAdagrad adagrad({emb}, 0.5);
    torch::Tensor used = torch::tensor({int64_t{1}, authors - 2});
    torch::Tensor before = emb.weight()[torch::arange(authors)];
    torch::Tensor rows = emb(used);
    rows.sum().backward();
    adagrad.step();
    g.barrier();
    torch::Tensor after = emb.weight()[torch::arange(authors)];
    torch::Tensor changed = (after != before).any(1);
    EXPECT_EQ(changed.sum().item<int64_t>(), 2);
    EXPECT_TRUE(changed[1].item<bool>() && changed[authors - 2].item<bool>());
    // Adagrad's first step moves every used weight by -lr (gradient 1).
    EXPECT_TRUE(torch::allclose(after[1], before[1] - 0.5, 1e-4, 1e-5));
  }

  // Per-type node_split: every training paper goes to exactly one trainer.
  torch::Tensor mask = g.nodes("paper").data("train_mask")[torch::arange(papers)];
  SplitOptions so;
  so.type = "paper";
  so.rank = rank;
  so.num_trainers = world;
  torch::Tensor mine = node_split(mask, g.partition_book(), so);
  EXPECT_GT(mine.size(0), 0);
  EXPECT_TRUE(mask.index_select(0, mine).to(torch::kBool).all().item<bool>());
  int64_t total = mask.to(torch::kInt64).sum().item<int64_t>();
  int64_t count = 0;
  for (int r = 0; r < world; ++r) {
    so.rank = r;
    count += node_split(mask, g.partition_book(), so).size(0);
  }
  EXPECT_EQ(count, total);
  so.type = "";
  EXPECT_THROW(node_split(mask, g.partition_book(), so), Error);  // Which type?
  SplitOptions from_dist;
  from_dist.rank = rank;
  from_dist.num_trainers = world;
  torch::Tensor same = node_split(g.nodes("paper").data("train_mask"), g.partition_book(),
                                  from_dist);
  EXPECT_TRUE(torch::equal(same, mine));
  // A mask of another type than asked for, or edge data given to node_split.
  from_dist.type = "author";
  EXPECT_THROW(node_split(g.nodes("paper").data("train_mask"), g.partition_book(), from_dist),
               Error);
  from_dist.type = "";
  DistTensor edge_mask({g.num_edges("cites")}, torch::kUInt8, "cites_mask", Init::Zeros(),
                       PartPolicy::kEdge, false, "cites");
  EXPECT_THROW(node_split(edge_mask, g.partition_book(), from_dist), Error);
  EXPECT_EQ(edge_split(edge_mask, g.partition_book(), from_dist).size(0), 0);
}

std::function<const char*(const char*)> NoEnv() {
  return [](const char*) -> const char* { return nullptr; };
}

TEST(HeteroDistTest, Standalone) {
  tessera::testing::TempDir dir;
  MagFixture f = MakeMag(dir.path(), 1);
  initialize("", {.getenv = NoEnv()});
  Check(f, 0, 1);
  exit_client();
}

TEST(HeteroDistTest, Distributed) {
  tessera::testing::TempDir dir;
  MagFixture f = MakeMag(dir.path(), 2);
  kv::testing::TestCluster cluster(f.config, 2, 1);
  std::string ip_config = dir / "ip_config.txt";
  {
    std::ofstream out(ip_config);
    for (const std::string& e : cluster.endpoints()) {
      out << "127.0.0.1 " << e.substr(e.rfind(':') + 1) << "\n";
    }
  }
  std::map<std::string, std::string> env = {{"TESSERA_JOB_ID", cluster.job()},
                                            {"TESSERA_JOB_TOKEN", "t"},
                                            {"TESSERA_JOB_KEY", cluster.key()},
                                            {"TESSERA_IP_CONFIG", ip_config},
                                            {"TESSERA_PART_CONFIG", f.config},
                                            {"TESSERA_NUM_SERVERS", "1"},
                                            {"TESSERA_MACHINE_ID", "0"},
                                            {"RANK", "0"},
                                            {"WORLD_SIZE", "1"}};
  auto ctx = initialize("", {.getenv = [&](const char* n) -> const char* {
                          auto it = env.find(n);
                          return it == env.end() ? nullptr : it->second.c_str();
                        }});
  ASSERT_FALSE(ctx->standalone());
  Check(f, 0, 2);
  exit_client();
}

// A block of 3 destinations and 5 sources (destinations first); edges
// (source index, destination index, relation).
Block SmallBlock() {
  Block b;
  b.src_nodes = torch::tensor({10, 11, 12, 13, 14}, torch::kInt64);
  b.indptr = torch::tensor({0, 3, 4, 7}, torch::kInt64);
  b.indices = torch::tensor({3, 4, 1, 0, 3, 4, 2}, torch::kInt64);
  b.eids = torch::arange(7, torch::kInt64);
  return b;
}

TEST(RelGraphConvTest, MatchesTheFormula) {
  torch::manual_seed(1);
  Block b = SmallBlock();
  torch::Tensor etypes = torch::tensor({0, 1, 1, 2, 0, 0, 2}, torch::kInt64);
  for (int64_t bases : {-1, 2}) {
    nn::RelGraphConv conv(4, 2, 3, bases);
    torch::Tensor h = torch::randn({5, 4});
    torch::Tensor out = conv->forward(b, h, etypes);
    ASSERT_EQ(out.sizes().vec(), (std::vector<int64_t>{3, 2}));
    torch::Tensor w = conv->relation_weights();  // [3, 4, 2]
    torch::Tensor self = conv->named_parameters()["self_loop.weight"];
    torch::Tensor bias = conv->named_parameters()["bias"];
    auto indptr = b.indptr.accessor<int64_t, 1>();
    auto indices = b.indices.accessor<int64_t, 1>();
    auto rel = etypes.accessor<int64_t, 1>();
    for (int64_t d = 0; d < 3; ++d) {
      torch::Tensor want = torch::matmul(h[d], self.t()) + bias;
      for (int64_t k = indptr[d]; k < indptr[d + 1]; ++k) {
        int64_t same = 0;  // d's in-edges of this relation.
        for (int64_t j = indptr[d]; j < indptr[d + 1]; ++j) same += rel[j] == rel[k];
        want = want + torch::matmul(h[indices[k]], w[rel[k]]) / static_cast<double>(same);
      }
      EXPECT_TRUE(torch::allclose(out[d], want, 1e-5, 1e-6))
          << "bases " << bases << " dst " << d << ": " << out[d] << " vs " << want;
    }
    // Gradients reach the bases (and the coefficients with a regulariser).
    out.sum().backward();
    EXPECT_TRUE(conv->named_parameters()["bases"].grad().defined());
    EXPECT_EQ(conv->named_parameters().contains("coeff"), bases == 2);
  }
}

TEST(RelGraphConvTest, RejectsMismatchedInput) {
  Block b = SmallBlock();
  nn::RelGraphConv conv(4, 2, 3);
  torch::Tensor h = torch::randn({5, 4});
  EXPECT_THROW(conv->forward(b, h, torch::tensor({0, 1, 1, 3, 0, 0, 2})), Error);  // Relation 3.
  EXPECT_THROW(conv->forward(b, h, torch::tensor({0, 1})), Error);
  EXPECT_THROW(conv->forward(b, torch::randn({4, 4}), torch::zeros({7}, torch::kInt64)), Error);
  EXPECT_THROW(nn::RelGraphConv(4, 2, 0), Error);
  nn::RGCN model(4, 8, 3, 3, 2, 2, 0.0);
  EXPECT_THROW(model->forward({b}, {torch::zeros({7}, torch::kInt64)}, h), Error);  // 2 layers.
}

}  // namespace
}  // namespace tessera::dist
