// File: src/loader/hetero_loader_test.cc
//
// Typed mini-batches on the hand-drawn shop graph (src/sampling/
// typed_test_graph.h), standalone and on two machines over loopback:
// heterogeneous blocks chain, hold only real edges of their relation between
// nodes of the right types, and take min(fanout, degree) in-edges of each
// relation per destination; an int fanout is per relation (DGL); link
// prediction draws negatives from the relation's destination type.
#include <map>
#include <set>

#include "gtest/gtest.h"
#include "src/base/test_util.h"
#include "src/kvstore/local_store.h"
#include "src/kvstore/test_cluster.h"
#include "src/loader/minibatch.h"
#include "src/sampling/typed_test_graph.h"

namespace tessera::loader {
namespace {

class HeteroLoaderTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new tessera::testing::TempDir();
    Graph g = sampling::typed_test::ShopGraph();
    for (int parts : {1, 2}) {
      PartitionOptions options;
      auto result =
          PartitionGraph(g, "shop", parts, dir_->path() + "/p" + std::to_string(parts), options);
      ASSERT_TRUE(result.ok()) << result.status();
      (parts == 1 ? one_ : two_) = new std::string(result->config_path);
    }
  }
  static void TearDownTestSuite() {
    delete one_;
    delete two_;
    delete dir_;
  }

  // Every edge of the graph: endpoints by homogeneous edge id.
  struct Edges {
    std::vector<int64_t> src, dst;
  };
  static Edges AllEdges(kv::KvStore& store) {
    int64_t e = store.book().num_edges();
    std::vector<int64_t> all(e);
    for (int64_t i = 0; i < e; ++i) all[i] = i;
    Edges out{std::vector<int64_t>(e), std::vector<int64_t>(e)};
    EXPECT_TRUE(store.FindEdges(all, out.src.data(), out.dst.data()).ok());
    return out;
  }

  // Checks a typed batch against the graph; `fanout(l, r)` is layer l's
  // fanout of relation r.
  template <typename Fanout>
  static void CheckHeteroBatch(kv::KvStore& store, const HeteroMiniBatch& batch, Fanout fanout) {
    const PartitionBook& book = store.book();
    Edges all = AllEdges(store);
    const int T = book.num_ntypes(), R = book.num_etypes();
    // The seeds, by type, in seed order.
    std::vector<std::vector<int64_t>> seeds(T);
    for (int64_t s : batch.seeds) {
      auto [t, id] = book.MapToPerNtype(s);
      seeds[t].push_back(id);
    }
    ASSERT_FALSE(batch.blocks.empty());
    EXPECT_EQ(batch.blocks.back().dst_nodes, seeds);
    for (size_t l = 0; l + 1 < batch.blocks.size(); ++l) {
      EXPECT_EQ(batch.blocks[l].dst_nodes, batch.blocks[l + 1].src_nodes) << "layer " << l;
    }
    for (size_t l = 0; l < batch.blocks.size(); ++l) {
      const sampling::HeteroBlock& b = batch.blocks[l];
      ASSERT_EQ(b.num_ntypes(), T);
      ASSERT_EQ(b.num_etypes(), R);
      for (int t = 0; t < T; ++t) {
        ASSERT_EQ(b.homo_src_nodes[t].size(), b.src_nodes[t].size());
        for (size_t i = 0; i < b.src_nodes[t].size(); ++i) {
          EXPECT_EQ(book.MapToHomoNid(t, b.src_nodes[t][i]), b.homo_src_nodes[t][i]);
        }
      }
      for (int r = 0; r < R; ++r) {
        const EdgeType& et = book.etypes()[r];
        int s = *book.NodeTypeId(et.src_type), d = *book.NodeTypeId(et.dst_type);
        const sampling::HeteroBlockEdges& e = b.edges[r];
        std::map<int64_t, int64_t> picked;  // Destination index -> edges.
        std::set<int64_t> distinct;
        for (int64_t i = 0; i < e.size(); ++i) {
          int64_t eid = e.homo_eids[i];
          EXPECT_EQ(book.MapToPerEtype(eid), std::make_pair(r, e.eids[i]));
          EXPECT_EQ(all.src[eid], b.homo_src_nodes[s][e.src[i]]) << et.Canonical();
          EXPECT_EQ(all.dst[eid], book.MapToHomoNid(d, b.dst_nodes[d][e.dst[i]]))
              << et.Canonical();
          ++picked[e.dst[i]];
          EXPECT_TRUE(distinct.insert(eid).second) << "edge " << eid << " twice";
        }
        // min(fanout, in-degree of the relation) per destination of type d.
        for (int64_t j = 0; j < b.num_dst(d); ++j) {
          int64_t homo = book.MapToHomoNid(d, b.dst_nodes[d][j]);
          int64_t degree = 0;
          for (int64_t eid = 0; eid < book.num_edges(); ++eid) {
            degree += all.dst[eid] == homo && book.MapToPerEtype(eid).first == r;
          }
          int64_t f = fanout(l, r);
          EXPECT_EQ(picked[j], f < 0 ? degree : std::min(f, degree))
              << "layer " << l << ", " << et.Canonical() << ", node " << homo;
        }
      }
    }
  }

  static tessera::testing::TempDir* dir_;
  static std::string* one_;
  static std::string* two_;
};

tessera::testing::TempDir* HeteroLoaderTest::dir_ = nullptr;
std::string* HeteroLoaderTest::one_ = nullptr;
std::string* HeteroLoaderTest::two_ = nullptr;

TEST_F(HeteroLoaderTest, PerRelationFanoutsGiveChainedTypedBlocks) {
  auto standalone = kv::LocalKvStore::Open(*one_);
  ASSERT_TRUE(standalone.ok()) << standalone.status();
  kv::testing::TestCluster cluster(*two_, 2, 1);
  auto client = cluster.Connect(0, 1);
  ASSERT_NE(client, nullptr);
  // Relations: [0] user:buys:item, [1] item:bought-by:user, [2]
  // user:follows:user, [3] item:has:tag.
  NeighborSpec spec{.etype_fanouts = {{-1, 1, 0, -1}, {2, 0, 1, -1}}};
  for (kv::KvStore* store : {static_cast<kv::KvStore*>(standalone->get()),
                             static_cast<kv::KvStore*>(client.get())}) {
    const PartitionBook& book = store->book();
    // Seeds: every item, user 2 and tag 1, mixed.
    std::vector<int64_t> seeds = {book.MapToHomoNid(1, 3), book.MapToHomoNid(0, 2),
                                  book.MapToHomoNid(1, 0), book.MapToHomoNid(2, 1),
                                  book.MapToHomoNid(1, 1), book.MapToHomoNid(1, 2)};
    for (uint64_t seed : {1, 2, 3}) {
      auto batch = SampleHeteroBlocks(*store, seeds, spec, seed);
      ASSERT_TRUE(batch.ok()) << batch.status();
      CheckHeteroBatch(*store, *batch,
                       [&](size_t l, int r) { return spec.etype_fanouts[l][r]; });
      EXPECT_GT(batch->num_sampled_edges(), 0);
    }
    // An int fanout on a typed graph is per relation (DGL): 1 in-edge of
    // each relation, not 1 in all.
    NeighborSpec one{.fanouts = {1}};
    auto batch = SampleHeteroBlocks(*store, seeds, one, 4);
    ASSERT_TRUE(batch.ok()) << batch.status();
    CheckHeteroBatch(*store, *batch, [](size_t, int) { return int64_t{1}; });
    // The homogeneous blocks of the same request hold the same edges.
    auto homo = SampleBlocks(*store, seeds, one, 4);
    ASSERT_TRUE(homo.ok()) << homo.status();
    std::multiset<int64_t> typed_eids, homo_eids(homo->blocks[0].eids.begin(),
                                                  homo->blocks[0].eids.end());
    for (const auto& e : batch->blocks[0].edges) {
      typed_eids.insert(e.homo_eids.begin(), e.homo_eids.end());
    }
    EXPECT_EQ(typed_eids, homo_eids);

    auto bad = SampleHeteroBlocks(*store, seeds, {.etype_fanouts = {{1, 1}}}, 1);
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.status().message().find("2 per-relation fanouts; the graph has 4 relations"),
              std::string::npos)
        << bad.status();
    bad = SampleHeteroBlocks(*store, seeds, {.etype_fanouts = {{1, -2, 1, 1}}}, 1);
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.status().message().find("item:bought-by:user"), std::string::npos)
        << bad.status();
    bad = SampleHeteroBlocks(*store, seeds, {.fanouts = {1}, .etype_fanouts = {{1, 1, 1, 1}}}, 1);
    EXPECT_FALSE(bad.ok());
    bad = SampleHeteroBlocks(*store, seeds, {.fanouts = {1}, .dir = sampling::EdgeDir::kOut}, 1);
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.status().message().find("reverse relations"), std::string::npos);
  }
}

TEST_F(HeteroLoaderTest, NegativesComeFromTheRelationsDestinationType) {
  auto store = kv::LocalKvStore::Open(*one_);
  ASSERT_TRUE(store.ok()) << store.status();
  const PartitionBook& book = (*store)->book();
  // Every buys edge (user -> item) and every has edge (item -> tag).
  std::vector<int64_t> eids;
  for (int r : {0, 3}) {
    for (int64_t i = 0; i < book.NumEdgesOfType(r); ++i) eids.push_back(book.MapToHomoEid(r, i));
  }
  EdgeSpec spec{.neighbors = {.fanouts = {2}}, .negatives = 20};
  ASSERT_TRUE(ValidateEdgeSpec(spec, book).ok());
  auto batch = SampleEdgeBatch(**store, eids, spec, 9);
  ASSERT_TRUE(batch.ok()) << batch.status();
  const auto& nodes = batch->mini.seeds;
  ASSERT_EQ(batch->negative.dst.size(), eids.size() * 20);
  std::set<int64_t> tags_drawn, items_drawn;
  for (size_t j = 0; j < batch->negative.dst.size(); ++j) {
    int r = book.MapToPerEtype(eids[j / 20]).first;
    auto [t, id] = book.MapToPerNtype(nodes[batch->negative.dst[j]]);
    EXPECT_EQ(t, r == 0 ? 1 : 2) << "negative " << j << " of relation " << r;
    (t == 1 ? items_drawn : tags_drawn).insert(id);
  }
  // Uniform over the type: 200 draws reach every item, 120 every tag.
  EXPECT_EQ(items_drawn.size(), 4u);
  EXPECT_EQ(tags_drawn.size(), 2u);
}

}  // namespace
}  // namespace tessera::loader
