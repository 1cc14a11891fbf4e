// File: src/loader/typed_loader_test.cc
//
// Typed mini-batches on the hand-drawn shop graph (src/sampling/
// typed_test_graph.h), standalone and on two machines over loopback:
// heterogeneous blocks chain, hold only real edges of their relation between
// nodes of the right types, and take min(fanout, degree) in-edges of each
// relation per destination; an int fanout is per relation (DGL); link
// prediction draws negatives from the relation's destination type, and
// typed edge batches pair each relation's edges over the batch's typed nodes
// (checked against the hand-drawn input), with typed negatives and every
// exclusion mode.
#include <algorithm>
#include <map>
#include <random>
#include <set>

#include "fmt/format.h"
#include "gtest/gtest.h"
#include "src/base/test_util.h"
#include "src/kvstore/local_store.h"
#include "src/kvstore/test_cluster.h"
#include "src/loader/minibatch.h"
#include "src/sampling/typed_test_graph.h"

namespace tessera::loader {
namespace {

class TypedLoaderTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new tessera::testing::TempDir();
    Graph g = sampling::typed_test::ShopGraph();
    for (int parts : {1, 2}) {
      PartitionOptions options;
      options.return_mapping = true;
      const std::string out = dir_->path() + "/p" + std::to_string(parts);
      auto result = PartitionGraph(g, "shop", parts, out, options);
      ASSERT_TRUE(result.ok()) << result.status();
      (parts == 1 ? one_ : two_) = new std::string(result->config_path);
      maps_[parts - 1] = new Mapping{testing::NpyValues(out + "/orig_nids.npy"),
                                     testing::NpyValues(out + "/orig_eids.npy")};
    }
  }
  static void TearDownTestSuite() {
    delete one_;
    delete two_;
    delete maps_[0];
    delete maps_[1];
    delete dir_;
  }

  // New id -> original id of a partitioning.
  struct Mapping {
    std::vector<int64_t> orig_nid, orig_eid;
  };

  // Every edge of the graph: endpoints by homogeneous edge id.
  struct Edges {
    std::vector<int64_t> src, dst;
  };
  static Edges AllEdges(kvstore::Services& store) {
    int64_t e = store.book().num_edges();
    std::vector<int64_t> all(e);
    for (int64_t i = 0; i < e; ++i) all[i] = i;
    Edges out{std::vector<int64_t>(e), std::vector<int64_t>(e)};
    EXPECT_TRUE(store.graph().FindEdges(all, out.src.data(), out.dst.data()).ok());
    return out;
  }

  // Checks a typed batch against the graph; `fanout(l, r)` is layer l's
  // fanout of relation r; no edge of `excluded` (homogeneous ids) is
  // sampled, and the fanout is filled from the others.
  template <typename Fanout>
  static void CheckTypedBatch(kvstore::Services& store, const MiniBatch& batch, Fanout fanout,
                              const std::set<int64_t>& excluded = {}) {
    const PartitionBook& book = store.book();
    Edges all = AllEdges(store);
    const int T = book.num_ntypes(), R = book.num_etypes();
    // The seeds, by type, in seed order.
    std::vector<UninitVector<int64_t>> seeds(T);
    for (int64_t s : batch.seeds) {
      auto [t, id] = book.MapToPerNtype(s);
      seeds[t].push_back(id);
    }
    ASSERT_FALSE(batch.blocks.empty());
    for (int t = 0; t < T; ++t) {
      EXPECT_TRUE(std::ranges::equal(batch.blocks.back().dst_nodes(t), seeds[t])) << "type " << t;
      for (size_t l = 0; l + 1 < batch.blocks.size(); ++l) {
        EXPECT_TRUE(
            std::ranges::equal(batch.blocks[l].dst_nodes(t), batch.blocks[l + 1].src_nodes[t]))
            << "layer " << l << ", type " << t;
      }
    }
    for (size_t l = 0; l < batch.blocks.size(); ++l) {
      const sampling::Block& b = batch.blocks[l];
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
        const sampling::BlockEdges& e = b.edges[r];
        ASSERT_EQ(e.src_type, s);
        ASSERT_EQ(e.dst_type, d);
        ASSERT_EQ(static_cast<int64_t>(e.indptr.size()), b.num_dst(d) + 1);
        std::vector<int64_t> edge_dst;
        for (int64_t j = 0; j < b.num_dst(d); ++j) edge_dst.resize(e.indptr[j + 1], j);
        std::map<int64_t, int64_t> picked;  // Destination index -> edges.
        std::set<int64_t> distinct;
        for (int64_t i = 0; i < e.size(); ++i) {
          // The per-relation id is one of r's; its homogeneous id maps back.
          ASSERT_GE(e.eids[i], 0) << et.Canonical();
          ASSERT_LT(e.eids[i], book.NumEdgesOfType(r)) << et.Canonical();
          int64_t eid = book.MapToHomoEid(r, e.eids[i]);
          EXPECT_EQ(book.MapToPerEtype(eid), std::make_pair(r, e.eids[i]));
          EXPECT_EQ(all.src[eid], b.homo_src_nodes[s][e.indices[i]]) << et.Canonical();
          EXPECT_EQ(all.dst[eid], book.MapToHomoNid(d, b.dst_nodes(d)[edge_dst[i]]))
              << et.Canonical();
          ++picked[edge_dst[i]];
          EXPECT_TRUE(distinct.insert(eid).second) << "edge " << eid << " twice";
          EXPECT_FALSE(excluded.count(eid)) << "excluded edge " << eid << " sampled";
        }
        // min(fanout, in-degree of the relation) per destination of type d.
        for (int64_t j = 0; j < b.num_dst(d); ++j) {
          int64_t homo = book.MapToHomoNid(d, b.dst_nodes(d)[j]);
          int64_t degree = 0;
          for (int64_t eid = 0; eid < book.num_edges(); ++eid) {
            degree +=
                all.dst[eid] == homo && book.MapToPerEtype(eid).first == r && !excluded.count(eid);
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
  static Mapping* maps_[2];  // Of one_ and two_.
};

tessera::testing::TempDir* TypedLoaderTest::dir_ = nullptr;
std::string* TypedLoaderTest::one_ = nullptr;
std::string* TypedLoaderTest::two_ = nullptr;
TypedLoaderTest::Mapping* TypedLoaderTest::maps_[2] = {nullptr, nullptr};

TEST_F(TypedLoaderTest, PerRelationFanoutsGiveChainedTypedBlocks) {
  auto standalone = kvstore::LocalKvStore::Open(*one_);
  ASSERT_TRUE(standalone.ok()) << standalone.status();
  kvstore::testing::TestCluster cluster(*two_, 2, 1);
  auto client = cluster.Connect(0, 1);
  ASSERT_NE(client, nullptr);
  // Relations: [0] user:buys:item, [1] item:bought-by:user, [2]
  // user:follows:user, [3] item:has:tag.
  NeighborSpec spec{.etype_fanouts = {{-1, 1, 0, -1}, {2, 0, 1, -1}}};
  for (kvstore::Services* store : {static_cast<kvstore::Services*>(standalone->get()),
                                   static_cast<kvstore::Services*>(client.get())}) {
    const PartitionBook& book = store->book();
    // Seeds: every item, user 2 and tag 1, mixed.
    std::vector<int64_t> seeds = {book.MapToHomoNid(1, 3), book.MapToHomoNid(0, 2),
                                  book.MapToHomoNid(1, 0), book.MapToHomoNid(2, 1),
                                  book.MapToHomoNid(1, 1), book.MapToHomoNid(1, 2)};
    for (uint64_t seed : {1, 2, 3}) {
      auto batch = SampleBlocks(store->graph(), seeds, spec, seed);
      ASSERT_TRUE(batch.ok()) << batch.status();
      CheckTypedBatch(*store, *batch, [&](size_t l, int r) { return spec.etype_fanouts[l][r]; });
      EXPECT_GT(batch->num_sampled_edges(), 0);
    }
    // An int fanout on a typed graph is per relation (DGL): 1 in-edge of
    // each relation, not 1 in all.
    NeighborSpec one{.fanouts = {1}};
    auto batch = SampleBlocks(store->graph(), seeds, one, 4);
    ASSERT_TRUE(batch.ok()) << batch.status();
    CheckTypedBatch(*store, *batch, [](size_t, int) { return int64_t{1}; });
    // The homogeneous blocks of the same request hold the same edges.
    NeighborSpec untyped = one;
    untyped.typed = false;
    auto homo = SampleBlocks(store->graph(), seeds, untyped, 4);
    ASSERT_TRUE(homo.ok()) << homo.status();
    ASSERT_FALSE(homo->blocks[0].typed());
    ASSERT_EQ(homo->blocks[0].num_etypes(), 1);
    std::multiset<int64_t> typed_eids,
        homo_eids(homo->blocks[0].edges[0].eids.begin(), homo->blocks[0].edges[0].eids.end());
    for (int r = 0; r < batch->blocks[0].num_etypes(); ++r) {
      for (int64_t id : batch->blocks[0].edges[r].eids) typed_eids.insert(book.MapToHomoEid(r, id));
    }
    EXPECT_EQ(typed_eids, homo_eids);

    auto bad = SampleBlocks(store->graph(), seeds, {.etype_fanouts = {{1, 1}}}, 1);
    ASSERT_FALSE(bad.ok());
    EXPECT_THAT(bad.status().message(),
                HasSubstr("2 per-relation fanouts; the graph has 4 relations"))
        << bad.status();
    bad = SampleBlocks(store->graph(), seeds, {.etype_fanouts = {{1, -2, 1, 1}}}, 1);
    ASSERT_FALSE(bad.ok());
    EXPECT_THAT(bad.status().message(), HasSubstr("item:bought-by:user")) << bad.status();
    bad = SampleBlocks(store->graph(), seeds, {.fanouts = {1}, .etype_fanouts = {{1, 1, 1, 1}}}, 1);
    EXPECT_FALSE(bad.ok());
    bad = SampleBlocks(store->graph(), seeds, {.fanouts = {1}, .dir = sampling::EdgeDir::kOut}, 1);
    ASSERT_FALSE(bad.ok());
    EXPECT_THAT(bad.status().message(), HasSubstr("reverse relations"));
  }
}

TEST_F(TypedLoaderTest, NegativesComeFromTheRelationsDestinationType) {
  auto store = kvstore::LocalKvStore::Open(*one_);
  ASSERT_TRUE(store.ok()) << store.status();
  const PartitionBook& book = (*store)->book();
  // Every buys edge (user -> item) and every has edge (item -> tag).
  std::vector<int64_t> eids;
  for (int r : {0, 3}) {
    for (int64_t i = 0; i < book.NumEdgesOfType(r); ++i) eids.push_back(book.MapToHomoEid(r, i));
  }
  // Untyped batches (one type of global ids) on the typed graph.
  EdgeSpec spec{.neighbors = {.fanouts = {2}, .typed = false}, .negatives = 20};
  ASSERT_TRUE(ValidateEdgeSpec(spec, book).ok());
  auto batch = SampleEdgeBatch((*store)->graph(), eids, spec, 9);
  ASSERT_TRUE(batch.ok()) << batch.status();
  const auto& nodes = batch->mini.seeds;
  ASSERT_EQ(batch->negative[0].dst.size(), eids.size() * 20);
  std::set<int64_t> tags_drawn, items_drawn;
  for (size_t j = 0; j < batch->negative[0].dst.size(); ++j) {
    int r = book.MapToPerEtype(eids[j / 20]).first;
    auto [t, id] = book.MapToPerNtype(nodes[batch->negative[0].dst[j]]);
    EXPECT_EQ(t, r == 0 ? 1 : 2) << "negative " << j << " of relation " << r;
    (t == 1 ? items_drawn : tags_drawn).insert(id);
  }
  // Uniform over the type: 200 draws reach every item, 120 every tag.
  EXPECT_EQ(items_drawn.size(), 4u);
  EXPECT_EQ(tags_drawn.size(), 2u);
}

// Relations: [0] user:buys:item, [1] item:bought-by:user (buys reversed),
// [2] user:follows:user, [3] item:has:tag. One epoch of typed edge batches
// over every buys, follows and has edge (three destination types), for each
// exclusion mode, standalone and on two machines.
TEST_F(TypedLoaderTest, TypedEdgeBatchesPairEachRelationWithTypedNegativesAndExclusion) {
  const Graph input = sampling::typed_test::ShopGraph();
  auto in_src = input.src.span<int64_t>(), in_dst = input.dst.span<int64_t>();
  auto standalone = kvstore::LocalKvStore::Open(*one_);
  ASSERT_TRUE(standalone.ok()) << standalone.status();
  kvstore::testing::TestCluster cluster(*two_, 2, 1);
  auto client = cluster.Connect(0, 1);
  ASSERT_NE(client, nullptr);
  const std::vector<std::pair<kvstore::Services*, const Mapping*>> stores = {
      {standalone->get(), maps_[0]}, {client.get(), maps_[1]}};
  for (const auto& [store, map] : stores) {
    const PartitionBook& book = store->book();
    const int T = book.num_ntypes(), R = book.num_etypes();
    Edges all = AllEdges(*store);
    // Each edge's reverse by endpoints (itself if it has none).
    std::map<std::pair<int64_t, int64_t>, int64_t> by_pair;
    for (int64_t e = 0; e < book.num_edges(); ++e) by_pair[{all.src[e], all.dst[e]}] = e;
    std::vector<int64_t> reverse(book.num_edges());
    for (int64_t e = 0; e < book.num_edges(); ++e) {
      auto it = by_pair.find({all.dst[e], all.src[e]});
      reverse[e] = it == by_pair.end() ? e : it->second;
    }
    for (Exclude mode :
         {Exclude::kNone, Exclude::kSelf, Exclude::kReverseId, Exclude::kReverseTypes}) {
      SCOPED_TRACE(::testing::Message() << "exclude mode " << static_cast<int>(mode) << ", "
                                        << book.num_partitions() << " part(s)");
      const int k = 40;
      EdgeSpec spec{.neighbors = {.fanouts = {-1, -1}}, .negatives = k, .exclude = mode};
      if (mode == Exclude::kReverseId) spec.reverse_eids = reverse;
      // has has no reverse relation: reverse_types batches leave it out.
      if (mode == Exclude::kReverseTypes) spec.reverse_etypes = {1, 0, 2, -1};
      ASSERT_TRUE(ValidateEdgeSpec(spec, book).ok()) << ValidateEdgeSpec(spec, book);
      std::vector<int64_t> eids;
      for (int r : {0, 2, 3}) {
        if (r == 3 && mode == Exclude::kReverseTypes) continue;
        for (int64_t i = 0; i < book.NumEdgesOfType(r); ++i)
          eids.push_back(book.MapToHomoEid(r, i));
      }
      std::shuffle(eids.begin(), eids.end(), std::mt19937(static_cast<int>(mode)));
      std::multiset<int64_t> positives;
      std::vector<std::map<int64_t, int64_t>> negatives(R);  // Per relation: orig dst -> draws.
      for (size_t start = 0; start < eids.size(); start += 5) {
        std::span<const int64_t> batch_eids(eids.data() + start,
                                            std::min<size_t>(5, eids.size() - start));
        auto batch = SampleEdgeBatch(store->graph(), batch_eids, spec, 100 + start);
        ASSERT_TRUE(batch.ok()) << batch.status();
        const EdgeBatch& b = *batch;
        EXPECT_EQ(b.eids, std::vector<int64_t>(batch_eids.begin(), batch_eids.end()));
        // Blocks: real edges, chained, none excluded, fanout -1 filled.
        std::set<int64_t> excluded;
        for (int64_t e : batch_eids) {
          if (mode == Exclude::kNone) break;
          excluded.insert(e);
          if (mode == Exclude::kReverseId) excluded.insert(reverse[e]);
          if (mode == Exclude::kReverseTypes) {
            auto [r, id] = book.MapToPerEtype(e);
            excluded.insert(book.MapToHomoEid(spec.reverse_etypes[r], id));
          }
        }
        CheckTypedBatch(
            *store, b.mini, [](size_t, int) { return int64_t{-1}; }, excluded);
        // The pair graphs' nodes: the last block's dst nodes, ascending per type.
        std::vector<std::vector<int64_t>> nodes;
        for (int t = 0; t < T; ++t) {
          auto dst = b.mini.blocks.back().dst_nodes(t);
          nodes.emplace_back(dst.begin(), dst.end());
        }
        for (int t = 0; t < T; ++t) EXPECT_TRUE(std::is_sorted(nodes[t].begin(), nodes[t].end()));
        ASSERT_EQ(static_cast<int>(b.positive.size()), R);
        ASSERT_EQ(static_cast<int>(b.negative.size()), R);
        size_t batch_positives = 0;
        for (int r = 0; r < R; ++r) {
          const EdgeType& et = book.etypes()[r];
          const int s = *book.NodeTypeId(et.src_type), d = *book.NodeTypeId(et.dst_type);
          const PairEdges& pos = b.positive[r];
          const PairEdges& neg = b.negative[r];
          ASSERT_EQ(pos.src.size(), pos.eids.size()) << et.Canonical();
          EXPECT_TRUE(neg.eids.empty());
          ASSERT_EQ(pos.dst.size(), pos.src.size());
          ASSERT_EQ(neg.src.size(), k * pos.src.size()) << et.Canonical();
          ASSERT_EQ(neg.dst.size(), neg.src.size());
          batch_positives += pos.src.size();
          // An endpoint in original ids: index -> per-type id -> new id -> input id.
          auto orig = [&](int t, int64_t index) {
            EXPECT_LT(index, static_cast<int64_t>(nodes[t].size()));
            return map->orig_nid[book.MapToHomoNid(t, nodes[t][index])];
          };
          for (size_t i = 0; i < pos.src.size(); ++i) {
            int64_t homo = book.MapToHomoEid(r, pos.eids[i]);
            positives.insert(homo);
            // The input's edge: its relation and endpoints.
            int64_t in_eid = map->orig_eid[homo];
            EXPECT_EQ(sampling::typed_test::RelationOf(input, in_eid), r);
            EXPECT_EQ(orig(s, pos.src[i]), in_src[in_eid]) << et.Canonical() << " edge " << homo;
            EXPECT_EQ(orig(d, pos.dst[i]), in_dst[in_eid]) << et.Canonical() << " edge " << homo;
            for (size_t j = i * k; j < (i + 1) * k; ++j) {
              EXPECT_EQ(neg.src[j], pos.src[i]) << "a negative keeps its edge's source";
              int64_t v = orig(d, neg.dst[j]);
              EXPECT_GE(v, input.ntype_offsets[d]) << et.Canonical() << ": not a " << et.dst_type;
              EXPECT_LT(v, input.ntype_offsets[d + 1])
                  << et.Canonical() << ": not a " << et.dst_type;
              ++negatives[r][v];
            }
          }
        }
        EXPECT_EQ(batch_positives, batch_eids.size());
      }
      // Every edge exactly once per epoch.
      EXPECT_EQ(positives, std::multiset<int64_t>(eids.begin(), eids.end()));
      // Negatives are uniform over the destination type, unlike the positives
      // (i0 ends 4 of the 10 buys edges, i2 one; u0 3 of the 7 follows edges;
      // t0 4 of the 6 has edges): each node draws about its share.
      for (int r : {0, 2, 3}) {
        if (r == 3 && mode == Exclude::kReverseTypes) continue;
        const int d = *book.NodeTypeId(book.etypes()[r].dst_type);
        const int64_t count = input.ntype_offsets[d + 1] - input.ntype_offsets[d];
        const double share = static_cast<double>(k * book.NumEdgesOfType(r)) / count;
        ASSERT_EQ(static_cast<int64_t>(negatives[r].size()), count) << book.etypes()[r].Canonical();
        for (const auto& [v, draws] : negatives[r]) {
          EXPECT_GT(draws, 0.7 * share) << book.etypes()[r].Canonical() << " node " << v;
          EXPECT_LT(draws, 1.3 * share) << book.etypes()[r].Canonical() << " node " << v;
        }
      }
    }
    // A has edge under reverse_types, has having no reverse: an error naming it.
    EdgeSpec spec{.neighbors = {.fanouts = {1}},
                  .exclude = Exclude::kReverseTypes,
                  .reverse_etypes = {1, 0, 2, -1}};
    std::vector<int64_t> one = {book.MapToHomoEid(0, 0), book.MapToHomoEid(3, 1)};
    auto bad = SampleEdgeBatch(store->graph(), one, spec, 1);
    ASSERT_FALSE(bad.ok());
    EXPECT_THAT(bad.status().message(), HasSubstr("relation item:has:tag")) << bad.status();
    EXPECT_THAT(bad.status().message(), HasSubstr("no reverse relation"));
  }
}

// reverse_types needs one entry per relation, each reverse going the other
// way with as many edges; errors name the relations.
TEST_F(TypedLoaderTest, ReverseTypesAreCheckedAgainstTheBook) {
  auto store = kvstore::LocalKvStore::Open(*one_);
  ASSERT_TRUE(store.ok()) << store.status();
  const PartitionBook& book = (*store)->book();
  EdgeSpec spec{.neighbors = {.fanouts = {2}}, .exclude = Exclude::kReverseTypes};
  auto message = [&](const PartitionBook& b) {
    Status status = ValidateEdgeSpec(spec, b);
    EXPECT_FALSE(status.ok());
    return std::string(status.message());
  };
  spec.reverse_etypes = {1, 0};
  EXPECT_THAT(message(book), HasSubstr("one reverse relation per relation (4), got 2"));
  spec.reverse_etypes = {2, 0, 2, -1};  // buys reversed by follows: user -> user.
  EXPECT_THAT(message(book),
              HasSubstr("relation user:follows:user cannot be the reverse of relation "
                        "user:buys:item: the reverse must go from item to user"))
      << message(book);
  spec.reverse_etypes = {1, 0, 2, 7};
  EXPECT_THAT(message(book), HasSubstr("the reverse of relation item:has:tag is relation id 7"));
  spec.reverse_etypes = {1, 0, 2, -1};
  EXPECT_TRUE(ValidateEdgeSpec(spec, book).ok());
  // A book whose bought-by has one edge fewer than buys.
  TypeLayout layout = book.layout();
  layout.edge_counts[1] -= 1;
  auto shorter = PartitionBook::CreateTyped(layout, 0);
  ASSERT_TRUE(shorter.ok()) << shorter.status();
  EXPECT_THAT(message(*shorter), HasSubstr("relation user:buys:item has 10 edges but its reverse "
                                           "item:bought-by:user has 9"))
      << message(*shorter);
  spec.exclude = Exclude::kSelf;
  EXPECT_THAT(message(book), HasSubstr("reverse_etypes given, but exclude is not reverse_types"));
}

// A graph service whose find_edges answers carry a forged source for the
// first edge (what a lying machine could send); everything else is `real`'s.
class ForgedSources : public kvstore::GraphService {
 public:
  ForgedSources(kvstore::GraphService& real, int64_t source) : real_(real), source_(source) {}
  const PartitionBook& book() const override { return real_.book(); }
  StatusOr<sampling::SampledEdges> SampleNeighbors(std::span<const int64_t> seeds,
                                                   const kvstore::SampleRequest& request) override {
    return real_.SampleNeighbors(seeds, request);
  }
  Status FindEdges(std::span<const int64_t> eids, int64_t* src, int64_t* dst) override {
    RETURN_IF_ERROR(real_.FindEdges(eids, src, dst));
    src[0] = source_;
    return absl::OkStatus();
  }
  Status Degrees(std::span<const int64_t> nids, sampling::EdgeDir dir, int etype,
                 int64_t* out) override {
    return real_.Degrees(nids, dir, etype, out);
  }

 private:
  kvstore::GraphService& real_;
  int64_t source_;
};

// Endpoints from the machines are checked against the relation's types: a
// source out of the graph or of the wrong type is DataLoss naming the edge,
// not a pair that indexes another type's nodes (or a read outside the book).
TEST_F(TypedLoaderTest, TypedEdgeBatchesRefuseForgedEndpoints) {
  auto store = kvstore::LocalKvStore::Open(*one_);
  ASSERT_TRUE(store.ok()) << store.status();
  const PartitionBook& book = (*store)->book();
  // A buys edge (user -> item); a tag is no user.
  const std::vector<int64_t> eids = {book.MapToHomoEid(0, 1)};
  const EdgeSpec spec{.neighbors = {.fanouts = {1}}, .negatives = 1};
  ASSERT_TRUE(ValidateEdgeSpec(spec, book).ok());
  ASSERT_TRUE(SampleEdgeBatch((*store)->graph(), eids, spec, 3).ok());
  for (int64_t forged : {int64_t{-1}, book.num_nodes(), book.MapToHomoNid(2, 0)}) {
    ForgedSources liar((*store)->graph(), forged);
    auto batch = SampleEdgeBatch(liar, eids, spec, 3);
    EXPECT_EQ(batch.status().code(), absl::StatusCode::kDataLoss) << batch.status();
    EXPECT_THAT(
        batch.status().message(),
        HasSubstr(fmt::format("edge {} of relation user:buys:item has source {}, not a node of "
                              "type 'user'",
                              eids[0], forged)))
        << batch.status();
  }
}

}  // namespace
}  // namespace tessera::loader
