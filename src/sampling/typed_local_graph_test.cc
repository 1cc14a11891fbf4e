// File: src/sampling/typed_local_graph_test.cc
//
// LocalGraph on typed partitions of the hand-drawn shop graph
// (typed_test_graph.h): every sampled edge checked against the original
// graph through orig_nids / orig_eids, per seed and relation.
#include <map>
#include <set>

#include "fmt/format.h"
#include "gtest/gtest.h"
#include "src/base/test_util.h"
#include "src/sampling/local_graph.h"
#include "src/sampling/typed_test_graph.h"

namespace tessera::sampling {
namespace {

using typed_test::PartitionAndLoad;
using typed_test::PartitionedGraph;
using typed_test::TypedEdge;

// (seed's original id, relation) -> the edges sampled for it, in order.
using PerSeed = std::map<std::pair<int64_t, int>, std::vector<TypedEdge>>;

class TypedLocalGraphTest : public ::testing::Test {
 protected:
  void SetUp() override {
    graph_ = typed_test::ShopGraph();
    ASSERT_TRUE(graph_.Validate("shop").ok());
    for (int64_t e = 0; e < graph_.num_edges(); ++e) {
      TypedEdge edge{graph_.src_ids()[e], graph_.dst_ids()[e], e,
                     typed_test::RelationOf(graph_, e)};
      in_[{edge.dst, edge.relation}].insert(edge);
      out_[{edge.src, edge.relation}].insert(edge);
    }
  }

  PartitionedGraph Partition(int parts, PartMethod method = PartMethod::kMetis) {
    auto p = PartitionAndLoad(graph_, parts, dir_ / fmt::format("p{}", ++made_), method);
    EXPECT_TRUE(p.ok()) << p.status();
    return p.ok() ? std::move(*p) : PartitionedGraph{};
  }

  static std::vector<int64_t> Owned(const LocalGraph& g) {
    std::vector<int64_t> ids;
    for (int64_t v = g.node_range().first; v < g.node_range().second; ++v) ids.push_back(v);
    return ids;
  }

  // Samples every owned node of every part; checks that each edge exists
  // with its relation and that a seed's edges come relation by relation.
  PerSeed SampleAll(const PartitionedGraph& pg, const NeighborOptions& o) {
    PerSeed got;
    for (const auto& g : pg.graphs) {
      std::vector<int64_t> seeds = Owned(*g);
      auto r = g->SampleNeighbors(seeds, o);
      EXPECT_TRUE(r.ok()) << r.status();
      if (!r.ok()) continue;
      for (size_t i = 0; i < seeds.size(); ++i) {
        int previous = -1;
        for (int64_t k = r->offsets[i]; k < r->offsets[i + 1]; ++k) {
          TypedEdge e = pg.Orig(r->src[k], r->dst[k], r->eid[k]);
          int64_t seed = o.dir == EdgeDir::kIn ? e.dst : e.src;
          EXPECT_EQ(seed, pg.orig_nid[seeds[i]]);
          EXPECT_EQ(e.relation, typed_test::RelationOf(graph_, e.eid)) << "wrong relation";
          EXPECT_EQ(graph_.src_ids()[e.eid], e.src) << "edge " << e.eid;
          EXPECT_EQ(graph_.dst_ids()[e.eid], e.dst) << "edge " << e.eid;
          if (!o.etype_fanouts.empty()) {
            EXPECT_GE(e.relation, previous) << "not grouped";
          }
          previous = e.relation;
          got[{seed, e.relation}].push_back(e);
        }
      }
    }
    return got;
  }

  const std::map<std::pair<int64_t, int>, std::set<TypedEdge>>& Truth(EdgeDir dir) const {
    return dir == EdgeDir::kIn ? in_ : out_;
  }

  testing::TempDir dir_;
  int made_ = 0;
  Graph graph_;
  std::map<std::pair<int64_t, int>, std::set<TypedEdge>> in_, out_;
};

TEST_F(TypedLocalGraphTest, EveryEdgeOfEveryRelationInAndOut) {
  for (int parts : {1, 2, 3}) {
    PartitionedGraph pg = Partition(parts, parts == 3 ? PartMethod::kRandom : PartMethod::kMetis);
    ASSERT_EQ(pg.graphs.size(), static_cast<size_t>(parts));
    for (const auto& g : pg.graphs) {
      EXPECT_TRUE(g->typed());
      EXPECT_EQ(g->num_etypes(), 4);
    }
    for (EdgeDir dir : {EdgeDir::kIn, EdgeDir::kOut}) {
      for (bool per_relation : {false, true}) {
        NeighborOptions o{.fanout = -1, .dir = dir};
        if (per_relation) o.etype_fanouts = {-1, -1, -1, -1};
        PerSeed got = SampleAll(pg, o);
        std::map<std::pair<int64_t, int>, std::set<TypedEdge>> as_sets;
        for (const auto& [key, edges] : got) as_sets[key] = {edges.begin(), edges.end()};
        EXPECT_EQ(as_sets, Truth(dir)) << parts << " parts, per_relation " << per_relation;
      }
    }
    // Degrees, and the endpoints of every owned edge (FindEdges reads the
    // edge id -> position index of the typed layout).
    for (const auto& g : pg.graphs) {
      std::vector<int64_t> seeds = Owned(*g);
      std::vector<int64_t> in_deg(seeds.size()), out_deg(seeds.size());
      ASSERT_TRUE(g->InDegrees(seeds, in_deg.data()).ok());
      ASSERT_TRUE(g->OutDegrees(seeds, out_deg.data()).ok());
      for (size_t i = 0; i < seeds.size(); ++i) {
        int64_t v = pg.orig_nid[seeds[i]], want_in = 0, want_out = 0;
        for (int r = 0; r < 4; ++r) {
          want_in += in_.count({v, r}) ? static_cast<int64_t>(in_.at({v, r}).size()) : 0;
          want_out += out_.count({v, r}) ? static_cast<int64_t>(out_.at({v, r}).size()) : 0;
        }
        EXPECT_EQ(in_deg[i], want_in) << "node " << v;
        EXPECT_EQ(out_deg[i], want_out) << "node " << v;
      }
      std::vector<int64_t> eids;
      for (int64_t e = g->edge_range().second - 1; e >= g->edge_range().first; --e) {
        eids.push_back(e);  // Reverse order: answers follow the request.
      }
      std::vector<int64_t> src(eids.size()), dst(eids.size());
      ASSERT_TRUE(g->FindEdges(eids, src.data(), dst.data()).ok());
      for (size_t i = 0; i < eids.size(); ++i) {
        int64_t e = pg.orig_eid[eids[i]];
        EXPECT_EQ(pg.orig_nid[src[i]], graph_.src_ids()[e]) << "edge " << e;
        EXPECT_EQ(pg.orig_nid[dst[i]], graph_.dst_ids()[e]) << "edge " << e;
      }
    }
  }
}

// Per (seed, relation): min(fanout, degree) distinct edges without
// replacement, exactly fanout with replacement (when the degree is > 0),
// every edge for -1 and none for 0; in-edges and out-edges.
TEST_F(TypedLocalGraphTest, PerRelationFanoutsGiveTheRightCounts) {
  for (int parts : {1, 2}) {
    PartitionedGraph pg = Partition(parts);
    for (EdgeDir dir : {EdgeDir::kIn, EdgeDir::kOut}) {
      for (bool replace : {false, true}) {
        for (uint64_t seed : {1u, 2u, 3u}) {
          NeighborOptions o{
              .etype_fanouts = {2, 1, 0, -1}, .dir = dir, .replace = replace, .seed = seed};
          PerSeed got = SampleAll(pg, o);
          for (const auto& [key, truth] : Truth(dir)) {
            int64_t degree = static_cast<int64_t>(truth.size());
            int64_t fanout = o.etype_fanouts[key.second];
            const std::vector<TypedEdge>& edges = got[key];
            std::set<TypedEdge> distinct(edges.begin(), edges.end());
            for (const TypedEdge& e : edges) EXPECT_TRUE(truth.count(e)) << "not its edge";
            if (fanout == -1) {
              EXPECT_EQ(distinct, truth);
              EXPECT_EQ(edges.size(), truth.size());
            } else if (replace) {
              EXPECT_EQ(static_cast<int64_t>(edges.size()), degree > 0 ? fanout : 0);
            } else {
              EXPECT_EQ(static_cast<int64_t>(edges.size()), std::min(fanout, degree))
                  << "node " << key.first << " relation " << key.second;
              EXPECT_EQ(distinct.size(), edges.size()) << "repeated edge";
            }
          }
          for (const auto& [key, edges] : got) {
            EXPECT_TRUE(Truth(dir).count(key)) << "edges for a relation the node lacks";
          }
        }
      }
    }
  }
}

// The same original edges whichever partitioning: all of them with -1, the
// same counts per (seed, relation) with a fanout.
TEST_F(TypedLocalGraphTest, OnePartAndTwoPartsAgreeInOriginalIds) {
  PartitionedGraph one = Partition(1), two = Partition(2);
  ASSERT_NE(one.orig_nid, two.orig_nid) << "the partitionings should reshuffle differently";
  for (EdgeDir dir : {EdgeDir::kIn, EdgeDir::kOut}) {
    NeighborOptions all{.etype_fanouts = {-1, -1, -1, -1}, .dir = dir};
    PerSeed a = SampleAll(one, all), b = SampleAll(two, all);
    for (auto* m : {&a, &b}) {
      for (auto& [key, edges] : *m) std::sort(edges.begin(), edges.end());
    }
    EXPECT_EQ(a, b);
    NeighborOptions some{.etype_fanouts = {1, 2, 1, 3}, .dir = dir, .seed = 9};
    a = SampleAll(one, some);
    b = SampleAll(two, some);
    ASSERT_EQ(a.size(), b.size());
    for (const auto& [key, edges] : a) EXPECT_EQ(edges.size(), b[key].size());
  }
}

// A (seed, relation)'s stream depends on the call's seed, the node's global
// id and the relation only: not on threads, the split of the seeds into
// calls, nor the other relations' fanouts.
TEST_F(TypedLocalGraphTest, ResultsDependOnlyOnSeedNodeAndRelation) {
  PartitionedGraph pg = Partition(2);
  for (EdgeDir dir : {EdgeDir::kIn, EdgeDir::kOut}) {
    for (bool replace : {false, true}) {
      const LocalGraph& g = *pg.graphs[0];
      std::vector<int64_t> seeds;
      for (int rep = 0; rep < 300; ++rep) {  // 300 copies: enough for several threads.
        for (int64_t v : Owned(g)) seeds.push_back(v);
      }
      NeighborOptions o{.etype_fanouts = {2, 1, 2, 1}, .dir = dir, .replace = replace, .seed = 4};
      auto whole = g.SampleNeighbors(seeds, o);
      ASSERT_TRUE(whole.ok()) << whole.status();
      NeighborOptions threaded = o;
      threaded.num_threads = 4;
      auto many = g.SampleNeighbors(seeds, threaded);
      ASSERT_TRUE(many.ok());
      EXPECT_EQ(whole->eid, many->eid);
      EXPECT_EQ(whole->src, many->src);
      // One call per seed: the same edges.
      std::vector<int64_t> one_by_one;
      for (size_t i = 0; i < Owned(g).size(); ++i) {
        auto r = g.SampleNeighbors(std::span<const int64_t>(seeds).subspan(i, 1), o);
        ASSERT_TRUE(r.ok());
        one_by_one.insert(one_by_one.end(), r->eid.begin(), r->eid.end());
      }
      std::vector<int64_t> first_copy(whole->eid.begin(),
                                      whole->eid.begin() + whole->offsets[Owned(g).size()]);
      EXPECT_EQ(one_by_one, first_copy);
      // Every copy of a seed samples the same edges.
      for (size_t i = Owned(g).size(); i < seeds.size(); ++i) {
        size_t j = i % Owned(g).size();
        EXPECT_TRUE(std::equal(
            whole->eid.begin() + whole->offsets[i], whole->eid.begin() + whole->offsets[i + 1],
            whole->eid.begin() + whole->offsets[j], whole->eid.begin() + whole->offsets[j + 1]));
      }
      // Changing relations 1 and 3 leaves relations 0 and 2 alone.
      NeighborOptions other = o;
      other.etype_fanouts = {2, 0, 2, -1};
      std::vector<int64_t> owned = Owned(g);
      auto a = g.SampleNeighbors(owned, o), b = g.SampleNeighbors(owned, other);
      ASSERT_TRUE(a.ok() && b.ok());
      auto keep = [&](const SampledEdges& s) {
        std::vector<int64_t> kept;
        for (int64_t e : s.eid) {
          int r = pg.book().MapToPerEtype(e).first;
          if (r == 0 || r == 2) kept.push_back(e);
        }
        return kept;
      };
      EXPECT_EQ(keep(*a), keep(*b));
    }
  }
}

// Weights come per owned edge in edge-id order: the part's rows of each
// relation's edge array, in relation order. Zero-weight edges (original id
// divisible by 3) are never picked, and fill the fanout from the rest.
TEST_F(TypedLocalGraphTest, WeightsAndExclusionOnTypedPartitions) {
  PartitionedGraph pg = Partition(2);
  for (size_t p = 0; p < pg.graphs.size(); ++p) {
    const LocalGraph& g = *pg.graphs[p];
    std::vector<float> weights = pg.Weights(static_cast<int>(p));
    ASSERT_EQ(static_cast<int64_t>(weights.size()), g.num_owned_edges());
    for (int64_t e = g.edge_range().first; e < g.edge_range().second; ++e) {
      ASSERT_EQ(weights[e - g.edge_range().first], static_cast<float>(pg.orig_eid[e] % 3));
    }
    std::vector<int64_t> exclude;  // Original ids 1 mod 4.
    for (int64_t e = 0; e < static_cast<int64_t>(pg.orig_eid.size()); ++e) {
      if (pg.orig_eid[e] % 4 == 1) exclude.push_back(e);
    }
    for (bool replace : {false, true}) {
      for (bool weighted : {false, true}) {
        NeighborOptions o{.etype_fanouts = {2, 2, 1, 3}, .replace = replace, .seed = 7};
        if (weighted) o.weights = weights;
        o.exclude = exclude;
        auto r = g.SampleNeighbors(Owned(g), o);
        ASSERT_TRUE(r.ok()) << r.status();
        if (weighted) {  // Each relation's own rows give the same edges.
          std::vector<RelationWeights> rel;
          for (int t = 0; t < 4; ++t) {
            auto [begin, stop] = pg.book().EdgeTypeRange(t, static_cast<int>(p));
            rel.push_back({std::span<const float>(weights).subspan(begin - g.edge_range().first,
                                                                   stop - begin),
                           begin});
          }
          NeighborOptions by_relation = o;
          by_relation.weights = {};
          by_relation.relation_weights = rel;
          auto same = g.SampleNeighbors(Owned(g), by_relation);
          ASSERT_TRUE(same.ok()) << same.status();
          EXPECT_EQ(same->eid, r->eid);
          EXPECT_EQ(same->src, r->src);
          rel[2].eid_base = g.edge_range().second - 1;  // Past the part's edges.
          by_relation.relation_weights = rel;
          auto outside = g.SampleNeighbors(Owned(g), by_relation);
          EXPECT_THAT(outside.status().message(), HasSubstr("weights of relation 2 from edge"))
              << outside.status();
        }
        std::map<std::pair<int64_t, int>, int64_t> count;
        for (size_t i = 0; i < r->size(); ++i) {
          TypedEdge e = pg.Orig(r->src[i], r->dst[i], r->eid[i]);
          EXPECT_NE(e.eid % 4, 1) << "excluded edge picked";
          if (weighted) {
            EXPECT_NE(e.eid % 3, 0) << "zero-weight edge picked";
          }
          ++count[{e.dst, e.relation}];
        }
        for (int64_t v : Owned(g)) {
          for (int rel = 0; rel < 4; ++rel) {
            std::pair<int64_t, int> key{pg.orig_nid[v], rel};
            int64_t allowed = 0;
            if (in_.count(key)) {
              for (const TypedEdge& e : in_.at(key)) {
                allowed += e.eid % 4 != 1 && (!weighted || e.eid % 3 != 0);
              }
            }
            int64_t fanout = o.etype_fanouts[rel];
            int64_t want = replace ? (allowed > 0 ? fanout : 0) : std::min(fanout, allowed);
            EXPECT_EQ(count[key], want) << "node " << key.first << " relation " << rel;
          }
        }
      }
    }
    std::vector<float> few(3, 1.0f);
    EXPECT_FALSE(g.SampleNeighbors(Owned(g), {.fanout = 2, .weights = few}).ok());
  }
}

TEST_F(TypedLocalGraphTest, BadFanoutVectorsAreClearErrors) {
  PartitionedGraph pg = Partition(2);
  const LocalGraph& g = *pg.graphs[0];
  std::vector<int64_t> seeds = Owned(g);
  auto three = g.SampleNeighbors(seeds, {.etype_fanouts = {1, 2, 3}});
  EXPECT_EQ(three.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(three.status().message(),
              HasSubstr("3 per-relation fanouts given but partition 0 has 4 "
                        "relations"))
      << three.status();
  auto negative = g.SampleNeighbors(seeds, {.etype_fanouts = {1, -2, 3, 4}});
  EXPECT_THAT(negative.status().message(), HasSubstr("fanout -2 of relation 1 is invalid"))
      << negative.status();
  auto absurd = g.SampleNeighbors(
      seeds, {.etype_fanouts = {int64_t{1} << 62, int64_t{1} << 62, 1, 1}, .replace = true});
  EXPECT_EQ(absurd.status().code(), absl::StatusCode::kResourceExhausted) << absurd.status();
}

// Arrays that do not fit the typed layout are refused when the graph is
// made, not while sampling.
TEST_F(TypedLocalGraphTest, CreateRefusesInconsistentTypedArrays) {
  PartitionedGraph pg = Partition(1);
  PartArrays good = PartArraysOf(pg.parts[0]);
  PartArrays no_types = good;  // A typed part given as if homogeneous.
  no_types.etype = {};
  no_types.num_etypes = 1;
  auto g = LocalGraph::Create(no_types);
  ASSERT_FALSE(g.ok());
  EXPECT_THAT(g.status().message(), HasSubstr("needs its relation of each edge (etype)"))
      << g.status();
  PartArrays missing = good;
  missing.etype = {};
  EXPECT_THAT(LocalGraph::Create(missing).status().message(),
              HasSubstr("4 relations but no relation per edge"));
  std::vector<int32_t> etype(good.etype.begin(), good.etype.end());
  etype[3] = 4;
  PartArrays out_of_range = good;
  out_of_range.etype = etype;
  auto bad = LocalGraph::Create(out_of_range);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(bad.status().message(), HasSubstr("stored edge 3 has relation 4")) << bad.status();
  etype = {good.etype.begin(), good.etype.end()};
  // Swap the relations of a row with two relations: rows must be grouped.
  int64_t row = -1;
  for (int64_t v = 0; v + 1 < static_cast<int64_t>(good.indptr.size()) && row < 0; ++v) {
    if (good.indptr[v + 1] - good.indptr[v] >= 2 &&
        etype[good.indptr[v]] != etype[good.indptr[v + 1] - 1]) {
      row = v;
    }
  }
  ASSERT_GE(row, 0);
  std::swap(etype[good.indptr[row]], etype[good.indptr[row + 1] - 1]);
  PartArrays unsorted = good;
  unsorted.etype = etype;
  EXPECT_THAT(LocalGraph::Create(unsorted).status().message(),
              HasSubstr("increasing id and relation"));
}

}  // namespace
}  // namespace tessera::sampling
