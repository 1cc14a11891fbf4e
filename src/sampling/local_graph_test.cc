// File: src/sampling/local_graph_test.cc
//
// LocalGraph on real partitions of Cora, checked edge by edge against the
// original graph through orig_nids / orig_eids.
#include "src/sampling/local_graph.h"

#include <map>
#include <set>
#include <tuple>

#include "gtest/gtest.h"
#include "src/base/test_util.h"
#include "src/graph/npy.h"
#include "src/partition/partition.h"
#include "tessera/graph/readers.h"

namespace tessera::sampling {
namespace {

using Edge = std::tuple<int64_t, int64_t, int64_t>;  // (src, dst, eid), original ids.

class LocalGraphTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto graph = ReadGraph(testing::TestDataDir() + "/cora");
    ASSERT_TRUE(graph.ok()) << graph.status();
    graph_ = std::move(*graph);
    for (int64_t e = 0; e < graph_.num_edges(); ++e) {
      Edge edge{graph_.src_ids()[e], graph_.dst_ids()[e], e};
      in_[graph_.dst_ids()[e]].insert(edge);
      out_[graph_.src_ids()[e]].insert(edge);
    }
  }

  // Partitions Cora into `parts` and loads every part's LocalGraph.
  void Partition(int parts, int hops = 1) {
    PartitionOptions options;
    options.return_mapping = true;
    options.num_hops = hops;
    auto result = PartitionGraph(graph_, "cora", parts, dir_.path(), options);
    ASSERT_TRUE(result.ok()) << result.status();
    orig_nid_ = std::move(*ReadNpy(dir_.path() + "/orig_nids.npy"));
    orig_eid_ = std::move(*ReadNpy(dir_.path() + "/orig_eids.npy"));
    for (int p = 0; p < parts; ++p) {
      auto part = LoadPartition(result->config_path, p);
      ASSERT_TRUE(part.ok()) << part.status();
      auto shared = std::make_shared<const LocalPartition>(std::move(*part));
      auto g = LocalGraph::Create(PartArraysOf(shared));
      ASSERT_TRUE(g.ok()) << g.status();
      graphs_.push_back(*g);
    }
  }

  Edge Orig(int64_t src, int64_t dst, int64_t eid) const {
    return {orig_nid_.span<int64_t>()[src], orig_nid_.span<int64_t>()[dst],
            orig_eid_.span<int64_t>()[eid]};
  }
  std::vector<int64_t> Owned(const LocalGraph& g) const {
    std::vector<int64_t> ids;
    for (int64_t v = g.node_range().first; v < g.node_range().second; ++v) ids.push_back(v);
    return ids;
  }

  testing::TempDir dir_;
  Graph graph_;
  std::map<int64_t, std::set<Edge>> in_, out_;
  Array orig_nid_, orig_eid_;
  std::vector<std::shared_ptr<const LocalGraph>> graphs_;
};

TEST_F(LocalGraphTest, AllInAndOutEdgesMatchTheOriginalGraph) {
  Partition(3);
  int64_t seen_in = 0, seen_out = 0;
  for (const auto& g : graphs_) {
    std::vector<int64_t> seeds = Owned(*g);
    for (EdgeDir dir : {EdgeDir::kIn, EdgeDir::kOut}) {
      auto r = g->SampleNeighbors(seeds, {.fanout = -1, .dir = dir});
      ASSERT_TRUE(r.ok()) << r.status();
      std::map<int64_t, std::set<Edge>> got;
      for (size_t i = 0; i < r->size(); ++i) {
        Edge e = Orig(r->src[i], r->dst[i], r->eid[i]);
        int64_t seed = dir == EdgeDir::kIn ? std::get<1>(e) : std::get<0>(e);
        EXPECT_TRUE(got[seed].insert(e).second);
      }
      for (int64_t v : seeds) {
        int64_t orig = orig_nid_.span<int64_t>()[v];
        const auto& want = dir == EdgeDir::kIn ? in_[orig] : out_[orig];
        EXPECT_EQ(got[orig], want) << "node " << orig;
        (dir == EdgeDir::kIn ? seen_in : seen_out) += static_cast<int64_t>(want.size());
      }
    }
    // Degrees and edge endpoints.
    std::vector<int64_t> in_deg(seeds.size()), out_deg(seeds.size());
    ASSERT_TRUE(g->InDegrees(seeds, in_deg.data()).ok());
    ASSERT_TRUE(g->OutDegrees(seeds, out_deg.data()).ok());
    for (size_t i = 0; i < seeds.size(); ++i) {
      int64_t orig = orig_nid_.span<int64_t>()[seeds[i]];
      EXPECT_EQ(in_deg[i], static_cast<int64_t>(in_[orig].size()));
      EXPECT_EQ(out_deg[i], static_cast<int64_t>(out_[orig].size()));
    }
    std::vector<int64_t> eids;
    for (int64_t e = g->edge_range().first; e < g->edge_range().second; ++e) eids.push_back(e);
    std::vector<int64_t> src(eids.size()), dst(eids.size());
    ASSERT_TRUE(g->FindEdges(eids, src.data(), dst.data()).ok());
    for (size_t i = 0; i < eids.size(); ++i) {
      auto [s, d, e] = Orig(src[i], dst[i], eids[i]);
      EXPECT_EQ(graph_.src_ids()[e], s);
      EXPECT_EQ(graph_.dst_ids()[e], d);
    }
  }
  EXPECT_EQ(seen_in, graph_.num_edges());
  EXPECT_EQ(seen_out, graph_.num_edges());
}

TEST_F(LocalGraphTest, SampledEdgesAreRealAndRespectFanoutWeightsAndExclusion) {
  Partition(2);
  for (const auto& g : graphs_) {
    std::vector<int64_t> seeds = Owned(*g);
    // Exclude every edge whose original id is divisible by 3.
    std::vector<int64_t> exclude;
    for (int64_t e = 0; e < graph_.num_edges(); ++e) {
      if (orig_eid_.span<int64_t>()[e] % 3 == 0) exclude.push_back(e);
    }
    // Weights: zero for odd original edge ids.
    std::vector<float> weights;
    for (int64_t e = g->edge_range().first; e < g->edge_range().second; ++e) {
      weights.push_back(orig_eid_.span<int64_t>()[e] % 2 == 0 ? 1.0f : 0.0f);
    }
    for (EdgeDir dir : {EdgeDir::kIn, EdgeDir::kOut}) {
      for (bool weighted : {false, true}) {
        if (weighted && dir == EdgeDir::kOut) continue;
        NeighborOptions o{.fanout = 3, .dir = dir, .exclude = exclude, .seed = 5};
        if (weighted) o.weights = weights;
        auto r = g->SampleNeighbors(seeds, o);
        ASSERT_TRUE(r.ok()) << r.status();
        std::map<int64_t, int64_t> count;
        for (size_t i = 0; i < r->size(); ++i) {
          Edge e = Orig(r->src[i], r->dst[i], r->eid[i]);
          int64_t seed = dir == EdgeDir::kIn ? std::get<1>(e) : std::get<0>(e);
          const auto& real = dir == EdgeDir::kIn ? in_[seed] : out_[seed];
          EXPECT_TRUE(real.count(e)) << "not an edge of the graph";
          EXPECT_NE(std::get<2>(e) % 3, 0) << "excluded edge sampled";
          if (weighted) {
            EXPECT_EQ(std::get<2>(e) % 2, 0) << "zero-weight edge sampled";
          }
          ++count[seed];
        }
        for (int64_t v : seeds) {
          int64_t orig = orig_nid_.span<int64_t>()[v];
          int64_t allowed = 0;
          for (const Edge& e : dir == EdgeDir::kIn ? in_[orig] : out_[orig]) {
            allowed += std::get<2>(e) % 3 != 0 && (!weighted || std::get<2>(e) % 2 == 0);
          }
          EXPECT_EQ(count[orig], std::min<int64_t>(3, allowed)) << "node " << orig;
        }
      }
    }
    auto again = g->SampleNeighbors(seeds, {.fanout = 3, .seed = 5});
    auto same = g->SampleNeighbors(seeds, {.fanout = 3, .seed = 5, .num_threads = 3});
    EXPECT_EQ(again->eid, same->eid);
  }
}

TEST_F(LocalGraphTest, BadRequestsAreErrors) {
  Partition(2);
  const LocalGraph& g = *graphs_[0];
  int64_t foreign = graphs_[1]->node_range().first;
  EXPECT_EQ(g.SampleNeighbors(std::vector<int64_t>{foreign}, {}).status().code(),
            absl::StatusCode::kOutOfRange);
  int64_t foreign_edge = graphs_[1]->edge_range().first, src = 0, dst = 0;
  EXPECT_EQ(g.FindEdges(std::vector<int64_t>{foreign_edge}, &src, &dst).code(),
            absl::StatusCode::kOutOfRange);
  std::vector<float> few(3, 1.0f);
  EXPECT_FALSE(g.SampleNeighbors(Owned(g), {.fanout = 2, .weights = few}).ok());
  std::vector<float> all(g.num_owned_edges(), 1.0f);
  EXPECT_EQ(g.SampleNeighbors(Owned(g), {.fanout = 2, .dir = EdgeDir::kOut, .weights = all})
                .status()
                .code(),
            absl::StatusCode::kUnimplemented);
}

TEST_F(LocalGraphTest, PartitionsWithoutHaloAreRefusedWithAReason) {
  PartitionOptions options;
  options.num_hops = 0;
  auto result = PartitionGraph(graph_, "cora", 2, dir_.path(), options);
  ASSERT_TRUE(result.ok()) << result.status();
  auto part = LoadPartition(result->config_path, 0);
  ASSERT_TRUE(part.ok());
  auto g =
      LocalGraph::Create(PartArraysOf(std::make_shared<const LocalPartition>(std::move(*part))));
  ASSERT_FALSE(g.ok());
  EXPECT_THAT(g.status().message(), HasSubstr("--num-hops")) << g.status();
}

// A homogeneous part has one relation: one per-relation fanout is the
// single fanout (relation 0's stream is the single-fanout stream), and
// more are an error naming both counts.
TEST_F(LocalGraphTest, HomogeneousPartsHaveOneRelation) {
  Partition(2);
  for (const auto& g : graphs_) {
    EXPECT_FALSE(g->typed());
    EXPECT_EQ(g->num_etypes(), 1);
    std::vector<int64_t> seeds = Owned(*g);
    for (EdgeDir dir : {EdgeDir::kIn, EdgeDir::kOut}) {
      for (bool replace : {false, true}) {
        auto single = g->SampleNeighbors(seeds, {.fanout = 3, .dir = dir, .replace = replace});
        auto per = g->SampleNeighbors(
            seeds, {.etype_fanouts = {3}, .dir = dir, .replace = replace, .num_threads = 2});
        ASSERT_TRUE(single.ok() && per.ok());
        EXPECT_EQ(single->eid, per->eid);
        EXPECT_EQ(single->src, per->src);
      }
    }
    auto two = g->SampleNeighbors(seeds, {.etype_fanouts = {3, 3}});
    EXPECT_THAT(two.status().message(), HasSubstr("2 per-relation fanouts given but partition"))
        << two.status();
    EXPECT_THAT(two.status().message(), HasSubstr("has 1 relations"));
  }
}

}  // namespace
}  // namespace tessera::sampling
