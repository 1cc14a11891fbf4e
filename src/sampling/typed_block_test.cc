// File: src/sampling/typed_block_test.cc
#include <algorithm>
#include <map>
#include <numeric>
#include <set>

#include "fmt/format.h"
#include "gtest/gtest.h"
#include "src/base/random.h"
#include "src/base/test_util.h"
#include "src/sampling/block.h"
#include "src/sampling/typed_test_graph.h"

namespace tessera::sampling {
namespace {

// The shop graph's types in one partition (typed_test_graph.h): users
// 0-3, items 4-7, tags 8-9; edge ids buys 0-9, bought-by 10-19, follows
// 20-26, has 27-32.
PartitionBook ShopBook() {
  TypeLayout layout{{"user", "item", "tag"},
                    {{"user", "buys", "item"},
                     {"item", "bought-by", "user"},
                     {"user", "follows", "user"},
                     {"item", "has", "tag"}},
                    {4, 4, 2},
                    {10, 10, 7, 6}};
  auto book = PartitionBook::CreateTyped(std::move(layout), 0);
  EXPECT_TRUE(book.ok()) << book.status();
  return std::move(*book);
}

// One relation's edges in the order of the input, before the CSR:
// (source index, destination index, per-relation id).
struct Coo {
  std::vector<int64_t> src, dst, eids;
};

// to_block by the definition, with maps: per type, the seeds, then the other
// sources in increasing id order; per relation, the input's edges in input
// order (as Coo) and their CSR, a stable sort by destination.
struct Expected {
  Block block;
  std::vector<Coo> coo;
};

Expected BruteForce(const PartitionBook& book, std::span<const int64_t> seeds,
                    std::span<const int64_t> src, std::span<const int64_t> dst,
                    std::span<const int64_t> eids) {
  Expected x;
  Block& b = x.block;
  b.num_dst_nodes.assign(book.num_ntypes(), 0);
  b.src_nodes.resize(book.num_ntypes());
  b.homo_src_nodes.resize(book.num_ntypes());
  b.edges.resize(book.num_etypes());
  x.coo.resize(book.num_etypes());
  std::map<int64_t, int64_t> src_index, dst_index;
  for (int64_t s : seeds) {
    auto [t, id] = book.MapToPerNtype(s);
    dst_index[s] = src_index[s] = b.num_dst_nodes[t]++;
    b.src_nodes[t].push_back(id);
    b.homo_src_nodes[t].push_back(s);
  }
  for (int64_t u : std::set<int64_t>(src.begin(), src.end())) {
    if (src_index.count(u)) continue;
    auto [t, id] = book.MapToPerNtype(u);
    src_index[u] = static_cast<int64_t>(b.src_nodes[t].size());
    b.src_nodes[t].push_back(id);
    b.homo_src_nodes[t].push_back(u);
  }
  for (size_t e = 0; e < src.size(); ++e) {
    auto [r, id] = book.MapToPerEtype(eids[e]);
    x.coo[r].src.push_back(src_index.at(src[e]));
    x.coo[r].dst.push_back(dst_index.at(dst[e]));
    x.coo[r].eids.push_back(id);
  }
  for (int r = 0; r < book.num_etypes(); ++r) {
    BlockEdges& out = b.edges[r];
    out.src_type = *book.NodeTypeId(book.etypes()[r].src_type);
    out.dst_type = *book.NodeTypeId(book.etypes()[r].dst_type);
    const int64_t num_dst = b.num_dst_nodes[out.dst_type];
    const Coo& c = x.coo[r];
    std::vector<size_t> order(c.dst.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t i, size_t j) { return c.dst[i] < c.dst[j]; });
    out.indptr.assign(num_dst + 1, 0);
    for (size_t i : order) {
      out.indices.push_back(c.src[i]);
      out.eids.push_back(c.eids[i]);
      ++out.indptr[c.dst[i] + 1];
    }
    for (int64_t d = 0; d < num_dst; ++d) out.indptr[d + 1] += out.indptr[d];
  }
  return x;
}

// The destination index of each edge of relation r, from the CSR.
std::vector<int64_t> EdgeDst(const BlockEdges& e) {
  std::vector<int64_t> out;
  for (size_t d = 0; d + 1 < e.indptr.size(); ++d) {
    for (int64_t k = e.indptr[d]; k < e.indptr[d + 1]; ++k) out.push_back(static_cast<int64_t>(d));
  }
  return out;
}

// `got` equals `want` (BruteForce of the input whose edge ids were `eids`):
// the same nodes, and relation by relation the same CSR, which holds the
// input's edges of that relation.
void ExpectSame(const PartitionBook& book, const Block& got, const Expected& want,
                std::span<const int64_t> eids) {
  EXPECT_EQ(got.num_dst_nodes, want.block.num_dst_nodes);
  EXPECT_EQ(got.src_nodes, want.block.src_nodes);
  EXPECT_EQ(got.homo_src_nodes, want.block.homo_src_nodes);
  ASSERT_EQ(got.num_etypes(), want.block.num_etypes());
  for (int r = 0; r < got.num_etypes(); ++r) {
    const BlockEdges& g = got.edges[r];
    const BlockEdges& w = want.block.edges[r];
    EXPECT_EQ(g.src_type, w.src_type) << "relation " << r;
    EXPECT_EQ(g.dst_type, w.dst_type) << "relation " << r;
    EXPECT_EQ(g.indptr, w.indptr) << "relation " << r;
    EXPECT_EQ(g.indices, w.indices) << "relation " << r;
    EXPECT_EQ(g.eids, w.eids) << "relation " << r;
  }
  std::vector<std::multiset<int64_t>> input_eids(book.num_etypes()), got_eids(book.num_etypes());
  for (int64_t e : eids) input_eids[book.MapToPerEtype(e).first].insert(e);
  for (int r = 0; r < got.num_etypes(); ++r) {
    for (int64_t id : got.edges[r].eids) got_eids[r].insert(book.MapToHomoEid(r, id));
    EXPECT_EQ(got_eids[r], input_eids[r]) << "relation " << r;
  }
}

// Seeds i1, u0, t0 and their sampled in-edges (global ids):
//
//   u3 --buys[8]--> i1 <--buys[1]-- u0
//   i0 --bought-by[10]--> u0 <--follows[22]-- u1,  u3 --follows[25]--> u0
//   i1 --has[29]--> t0 <--has[30]-- i2
TEST(TypedBlockTest, PerTypeNodesDstFirstThenById) {
  PartitionBook book = ShopBook();
  std::vector<int64_t> seeds = {5, 0, 8};
  std::vector<int64_t> src = {3, 0, 4, 1, 3, 5, 6};
  std::vector<int64_t> dst = {5, 5, 0, 0, 0, 8, 8};
  std::vector<int64_t> eid = {8, 1, 10, 22, 25, 29, 30};
  auto b = ToBlock(book, seeds, src, dst, eid);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->num_dst_nodes, (std::vector<int64_t>{1, 1, 1}));
  // Users: u0 (a seed), then u1, u3 by id; items: i1 (a seed), then i0, i2.
  EXPECT_EQ(b->src_nodes, (std::vector<UninitVector<int64_t>>{{0, 1, 3}, {1, 0, 2}, {0}}));
  EXPECT_EQ(b->homo_src_nodes, (std::vector<UninitVector<int64_t>>{{0, 1, 3}, {5, 4, 6}, {8}}));
  EXPECT_EQ(b->edges[0].indices, (UninitVector<int64_t>{2, 0}));  // buys: u3, u0 -> i1.
  EXPECT_EQ(b->edges[0].indptr, (UninitVector<int64_t>{0, 2}));
  EXPECT_EQ(b->edges[0].eids, (UninitVector<int64_t>{8, 1}));
  EXPECT_EQ(b->edges[1].indices, (UninitVector<int64_t>{1}));  // bought-by: i0 -> u0.
  EXPECT_EQ(b->edges[1].eids, (UninitVector<int64_t>{0}));
  EXPECT_EQ(b->edges[2].indices, (UninitVector<int64_t>{1, 2}));  // follows: u1, u3 -> u0.
  EXPECT_EQ(b->edges[2].eids, (UninitVector<int64_t>{2, 5}));
  EXPECT_EQ(b->edges[3].indices, (UninitVector<int64_t>{0, 2}));  // has: i1, i2 -> t0.
  EXPECT_EQ(b->edges[3].eids, (UninitVector<int64_t>{2, 3}));
  EXPECT_EQ((std::vector<int>{b->edges[3].src_type, b->edges[3].dst_type}),
            (std::vector<int>{1, 2}));
  EXPECT_EQ(book.MapToHomoEid(3, b->edges[3].eids[1]), 30);
  EXPECT_EQ(b->num_edges(), 7);
  EXPECT_EQ(b->NextSeeds(), (std::vector<int64_t>{0, 1, 3, 5, 4, 6, 8}));
  ExpectSame(book, *b, BruteForce(book, seeds, src, dst, eid), eid);
}

TEST(TypedBlockTest, BadInputIsAClearError) {
  PartitionBook book = ShopBook();
  auto message = [&](std::vector<int64_t> seeds, std::vector<int64_t> src, std::vector<int64_t> dst,
                     std::vector<int64_t> eid) {
    auto b = ToBlock(book, seeds, src, dst, eid);
    EXPECT_EQ(b.status().code(), absl::StatusCode::kInvalidArgument);
    return std::string(b.status().message());
  };
  EXPECT_THAT(message({5}, {0}, {6}, {1}), HasSubstr("edge 0 (0 -> 6) does not end at a seed"));
  EXPECT_THAT(message({5, 5}, {}, {}, {}), HasSubstr("seed 5 appears twice"));
  // An item as the source of a buys edge.
  EXPECT_THAT(message({5}, {4}, {5}, {1}),
              HasSubstr("edge 0 (4 -> 5, id 1) of relation 'user:buys:item' does not start at a "
                        "node of type 'user' (node 4 is a 'item')"));
  // A follows edge ending at an item.
  EXPECT_THAT(message({5}, {0}, {5}, {22}), HasSubstr("does not end at a node of type 'user'"));
  // A buys edge from a seed of the wrong type (checked on the seed path too).
  EXPECT_THAT(message({5, 6}, {6}, {5}, {1}), HasSubstr("does not start at a node of type 'user'"));
  EXPECT_THAT(message({10}, {}, {}, {}),
              HasSubstr("seed 0 is node 10, outside the graph's 10 nodes"));
  EXPECT_THAT(message({5}, {0}, {5}, {33}),
              HasSubstr("edge 0 has id 33, outside the graph's 33 edges"));
  EXPECT_THAT(message({5}, {0, 0}, {5, -1}, {1, 2}),
              HasSubstr("the destination of edge 1 is node -1, outside the graph's 10 nodes"));
  EXPECT_THAT(message({5}, {0, 0}, {5, 5}, {1, -4}), HasSubstr("edge 1 has id -4"));
  // The first edge's destination is checked too (-1 is no "previous destination").
  EXPECT_THAT(message({5}, {0}, {-1}, {1}),
              HasSubstr("the destination of edge 0 is node -1, outside the graph's 10 nodes"));
  EXPECT_THAT(message({5}, {0, 1}, {5}, {1}), HasSubstr("differ in length"));
  // Sources outside the graph, below and above.
  EXPECT_THAT(message({5}, {0, -1}, {5, 5}, {1, 2}),
              HasSubstr("the source of edge 1 is node -1, outside the graph's 10 nodes"));
  EXPECT_THAT(message({5}, {10}, {5}, {1}),
              HasSubstr("the source of edge 0 is node 10, outside the graph's 10 nodes"));
  // No seeds: any edge is refused (-1 as outside the graph).
  EXPECT_THAT(message({}, {0}, {5}, {1}), HasSubstr("edge 0 (0 -> 5) does not end at a seed"));
  EXPECT_THAT(message({}, {0}, {-1}, {1}), HasSubstr("the destination of edge 0 is node -1"));
}

// No edges: every seed is its type's only source, every relation is empty;
// no seeds either: every type and relation is empty.
TEST(TypedBlockTest, ZeroEdges) {
  PartitionBook book = ShopBook();
  const std::vector<int64_t> none;
  auto b = ToBlock(book, std::vector<int64_t>{5, 0, 8, 4}, none, none, none);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->num_dst_nodes, (std::vector<int64_t>{1, 2, 1}));
  EXPECT_EQ(b->src_nodes, (std::vector<UninitVector<int64_t>>{{0}, {1, 0}, {0}}));
  EXPECT_EQ(b->homo_src_nodes, (std::vector<UninitVector<int64_t>>{{0}, {5, 4}, {8}}));
  ASSERT_EQ(b->num_etypes(), 4);
  EXPECT_EQ(b->num_edges(), 0);
  EXPECT_EQ(b->NextSeeds(), (std::vector<int64_t>{0, 5, 4, 8}));
  auto empty = ToBlock(book, none, none, none, none);
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->num_ntypes(), 3);
  EXPECT_EQ(empty->num_etypes(), 4);
  for (int t = 0; t < 3; ++t) EXPECT_EQ(empty->num_src(t), 0);
  EXPECT_EQ(empty->num_edges(), 0);
  EXPECT_TRUE(empty->NextSeeds().empty());
}

// A relation whose edges arrive with their destinations out of order (not
// as sampled): the CSR is built by the stable scatter, each destination's
// edges kept in input order.
TEST(TypedBlockTest, EdgesOutOfDestinationOrderAreScatteredStably) {
  PartitionBook book = ShopBook();
  // Seeds u0, u1; follows edges u2 -> u1, u3 -> u0, u3 -> u1, u1 -> u0.
  std::vector<int64_t> seeds = {0, 1}, src = {2, 3, 3, 1}, dst = {1, 0, 1, 0};
  std::vector<int64_t> eid = {20, 21, 22, 23};
  auto b = ToBlock(book, seeds, src, dst, eid);
  ASSERT_TRUE(b.ok()) << b.status();
  const BlockEdges& follows = b->edges[2];
  EXPECT_EQ(follows.indptr, (UninitVector<int64_t>{0, 2, 4}));
  EXPECT_EQ(follows.eids, (UninitVector<int64_t>{1, 3, 0, 2}));  // u0's, then u1's.
  EXPECT_EQ(follows.indices, (UninitVector<int64_t>{3, 1, 2, 3}));
  ExpectSame(book, *b, BruteForce(book, seeds, src, dst, eid), eid);
}

// A book of one type and one relation gives the untyped block (its global
// ids are its per-type ids), after the typed path's checks and messages.
TEST(TypedBlockTest, OneTypeBookGivesTheUntypedBlockAfterTheSameChecks) {
  TypeLayout layout{{"paper"}, {{"paper", "cites", "paper"}}, {10}, {7}};
  auto book = PartitionBook::CreateTyped(std::move(layout), 0);
  ASSERT_TRUE(book.ok()) << book.status();
  std::vector<int64_t> seeds = {4, 2}, src = {9, 4, 1}, dst = {4, 2, 2}, eid = {6, 0, 3};
  auto b = ToBlock(*book, seeds, src, dst, eid);
  ASSERT_TRUE(b.ok()) << b.status();
  auto untyped = ToBlock(seeds, src, dst, eid);
  ASSERT_TRUE(untyped.ok()) << untyped.status();
  EXPECT_FALSE(b->typed());
  EXPECT_EQ(b->src_nodes, untyped->src_nodes);
  EXPECT_EQ(b->edges[0].indptr, untyped->edges[0].indptr);
  EXPECT_EQ(b->edges[0].indices, untyped->edges[0].indices);
  EXPECT_EQ(b->edges[0].eids, untyped->edges[0].eids);
  auto message = [&](std::vector<int64_t> s, std::vector<int64_t> u, std::vector<int64_t> v,
                     std::vector<int64_t> e) {
    auto bad = ToBlock(*book, s, u, v, e);
    EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
    return std::string(bad.status().message());
  };
  EXPECT_THAT(message({10}, {}, {}, {}),
              HasSubstr("seed 0 is node 10, outside the graph's 10 nodes"));
  EXPECT_THAT(message({4}, {-1}, {4}, {0}), HasSubstr("the source of edge 0 is node -1"));
  EXPECT_THAT(message({4}, {1}, {11}, {0}), HasSubstr("the destination of edge 0 is node 11"));
  EXPECT_THAT(message({4}, {1}, {4}, {7}),
              HasSubstr("edge 0 has id 7, outside the graph's 7 edges"));
  EXPECT_THAT(message({4, 4}, {}, {}, {}), HasSubstr("to_block: seed 4 appears twice"));
  EXPECT_THAT(message({4}, {1}, {2}, {0}), HasSubstr("edge 0 (1 -> 2) does not end at a seed"));
}

// One relation (no relation bits in the sort key) between two node types.
TEST(TypedBlockTest, OneRelationChecksSourceTypes) {
  TypeLayout layout{{"a", "b"}, {{"b", "r", "a"}}, {3, 2}, {5}};
  auto book = PartitionBook::CreateTyped(std::move(layout), 0);
  ASSERT_TRUE(book.ok()) << book.status();
  // a: nodes 0-2, b: nodes 3-4. Seeds a0, a2; b4 -> a0, b3 -> a0, b4 -> a2.
  std::vector<int64_t> seeds = {0, 2}, src = {4, 3, 4}, dst = {0, 0, 2}, eid = {0, 3, 4};
  auto b = ToBlock(*book, seeds, src, dst, eid);
  ASSERT_TRUE(b.ok()) << b.status();
  ExpectSame(*book, *b, BruteForce(*book, seeds, src, dst, eid), eid);
  EXPECT_EQ(b->homo_src_nodes, (std::vector<UninitVector<int64_t>>{{0, 2}, {3, 4}}));
  // a1 (not a seed) and a2 (a seed) are no b.
  for (int64_t wrong : {1, 2}) {
    src[1] = wrong;
    auto bad = ToBlock(*book, seeds, src, dst, eid);
    EXPECT_THAT(bad.status().message(),
                HasSubstr(fmt::format(
                    "edge 1 ({} -> 0, id 3) of relation 'b:r:a' does not start at a node of type "
                    "'b' (node {} is a 'a')",
                    wrong, wrong)))
        << bad.status();
  }
}

// Two layers sampled from a real two-part partition of the shop graph, each
// seed at the part that owns it: every block matches the brute force, and
// layers chain (the inner block's destinations are the outer's sources).
TEST(TypedBlockTest, LayersFromRealPartitionsMatchBruteForceAndChain) {
  testing::TempDir dir;
  Graph graph = typed_test::ShopGraph();
  auto pg = typed_test::PartitionAndLoad(graph, 2, dir.path());
  ASSERT_TRUE(pg.ok()) << pg.status();
  const PartitionBook& book = pg->book();
  auto sample = [&](const std::vector<int64_t>& seeds, const NeighborOptions& o) {
    SampledEdges all;
    for (int64_t s : seeds) {  // One call per seed, at its owner.
      auto r = pg->graphs[book.NodeOwner(s)]->SampleNeighbors(std::vector<int64_t>{s}, o);
      EXPECT_TRUE(r.ok()) << r.status();
      all.src.insert(all.src.end(), r->src.begin(), r->src.end());
      all.dst.insert(all.dst.end(), r->dst.begin(), r->dst.end());
      all.eid.insert(all.eid.end(), r->eid.begin(), r->eid.end());
    }
    return all;
  };
  // Output seeds: items i1 and i3, tag t1 (original ids), in new ids.
  std::vector<int64_t> seeds = {pg->NewNid(5), pg->NewNid(9), pg->NewNid(7)};
  for (uint64_t s : {1u, 2u, 3u}) {
    NeighborOptions o{.etype_fanouts = {2, 2, 1, 1}, .seed = s};
    SampledEdges outer_edges = sample(seeds, o);
    auto outer = ToBlock(book, seeds, outer_edges.src, outer_edges.dst, outer_edges.eid);
    ASSERT_TRUE(outer.ok()) << outer.status();
    ExpectSame(book, *outer,
               BruteForce(book, seeds, outer_edges.src, outer_edges.dst, outer_edges.eid),
               outer_edges.eid);
    std::vector<int64_t> next = outer->NextSeeds();
    SampledEdges inner_edges = sample(next, o);
    auto inner = ToBlock(book, next, inner_edges.src, inner_edges.dst, inner_edges.eid);
    ASSERT_TRUE(inner.ok()) << inner.status();
    ExpectSame(book, *inner,
               BruteForce(book, next, inner_edges.src, inner_edges.dst, inner_edges.eid),
               inner_edges.eid);
    for (int t = 0; t < book.num_ntypes(); ++t) {
      EXPECT_TRUE(std::ranges::equal(inner->dst_nodes(t), outer->src_nodes[t])) << "type " << t;
    }
    // Per-type ids and relations name the original nodes and edges.
    for (int r = 0; r < inner->num_etypes(); ++r) {
      const EdgeType& et = book.etypes()[r];
      int s_type = *book.NodeTypeId(et.src_type), d_type = *book.NodeTypeId(et.dst_type);
      const BlockEdges& e = inner->edges[r];
      const std::vector<int64_t> edge_dst = EdgeDst(e);
      for (int64_t k = 0; k < e.size(); ++k) {
        int64_t homo_src = book.MapToHomoNid(s_type, inner->src_nodes[s_type][e.indices[k]]);
        int64_t homo_dst = book.MapToHomoNid(d_type, inner->dst_nodes(d_type)[edge_dst[k]]);
        int64_t orig = pg->orig_eid[book.MapToHomoEid(r, e.eids[k])];
        EXPECT_EQ(graph.src_ids()[orig], pg->orig_nid[homo_src]);
        EXPECT_EQ(graph.dst_ids()[orig], pg->orig_nid[homo_dst]);
        EXPECT_EQ(typed_test::RelationOf(graph, orig), r);
      }
    }
  }
}

// Large random layers (the radix-sort path) over a two-part book. Some edge
// ids and sources are the first or last of a (part, type) block: the typed ToBlock
// finds blocks through a table of id buckets, and the buckets that straddle
// two blocks take another path.
TEST(TypedBlockTest, LargeRandomLayerMatchesBruteForce) {
  TypeLayout layout{{"a", "b"},
                    {{"a", "x", "b"}, {"b", "y", "a"}, {"a", "z", "a"}},
                    {3000, 2000, 2500, 1500},
                    {40000, 30000, 20000, 35000, 25000, 15000}};
  auto book = PartitionBook::CreateTyped(std::move(layout), 0);
  ASSERT_TRUE(book.ok()) << book.status();
  Rng rng(5);
  auto node_of = [&](int t) {
    return book->MapToHomoNid(t, static_cast<int64_t>(rng.Below(book->NumNodesOfType(t))));
  };
  // The first or last per-type id of a random part's block.
  auto block_end = [&](const std::vector<int64_t>& offsets) {
    const size_t p = rng.Below(offsets.size() - 1);
    return rng.Below(2) ? offsets[p] : offsets[p + 1] - 1;
  };
  std::vector<int64_t> seeds;
  std::set<int64_t> seen;
  while (seeds.size() < 1500) {
    int64_t v = node_of(static_cast<int>(rng.Below(2)));
    if (seen.insert(v).second) seeds.push_back(v);
  }
  std::vector<int64_t> src, dst, eid;
  for (int64_t s : seeds) {
    int t = book->MapToPerNtype(s).first;
    for (int k = 0; k < 6; ++k) {
      int r = t == 1 ? 0 : (k % 2 ? 1 : 2);  // Relations ending at the seed's type.
      int src_type = r == 1 ? 1 : 0;
      int64_t u = node_of(src_type);
      if (k == 3) u = book->MapToHomoNid(src_type, block_end(book->TypedNodeOffsets(src_type)));
      if (k == 5) {  // Some sources are seeds of the right type.
        int64_t candidate = seeds[rng.Below(seeds.size())];
        if (book->MapToPerNtype(candidate).first == src_type) u = candidate;
      }
      src.push_back(u);
      dst.push_back(s);
      eid.push_back(
          book->MapToHomoEid(r, k == 4 ? block_end(book->TypedEdgeOffsets(r))
                                       : static_cast<int64_t>(rng.Below(book->NumEdgesOfType(r)))));
    }
  }
  auto b = ToBlock(*book, seeds, src, dst, eid);
  ASSERT_TRUE(b.ok()) << b.status();
  ExpectSame(*book, *b, BruteForce(*book, seeds, src, dst, eid), eid);
  EXPECT_EQ(b->num_edges(), static_cast<int64_t>(src.size()));
}

// A book of 301 parts: 300 with 0-3 nodes of each type and 0-3 edges of
// each relation (many blocks empty), and one (part 150) with large blocks.
// the typed ToBlock's id buckets are then 16 ids wide, and around the small
// blocks nearly every bucket straddles two or more of them (the binary
// search path), as does the last one (the book ends with small blocks).
// Large (radix sort) and small layers, sources and edge ids almost all in
// the small blocks, match the brute force.
TEST(TypedBlockTest, ManyPartsWithMostBucketsMixedMatchBruteForce) {
  constexpr int kParts = 301, kBig = 150;
  Rng rng(11);
  TypeLayout layout{{"a", "b"}, {{"a", "x", "b"}, {"b", "y", "a"}, {"a", "z", "a"}}, {}, {}};
  for (int p = 0; p < kParts; ++p) {
    for (int t = 0; t < 2; ++t) {
      layout.node_counts.push_back(p == kBig ? 60000 : static_cast<int64_t>(rng.Below(4)));
    }
    for (int r = 0; r < 3; ++r) {
      layout.edge_counts.push_back(p == kBig ? 70000 : static_cast<int64_t>(rng.Below(4)));
    }
  }
  auto book = PartitionBook::CreateTyped(std::move(layout), 0);
  ASSERT_TRUE(book.ok()) << book.status();
  // A random id of type t (node) or relation r (edge), in a small block but
  // one time in 20, often a block's first or last.
  auto pick = [&](auto range_of, int type) {
    for (;;) {
      const int p = rng.Below(20) == 0 ? kBig : static_cast<int>(rng.Below(kParts));
      auto [start, end] = range_of(type, p);
      if (start == end) continue;
      switch (rng.Below(3)) {
        case 0:
          return start;
        case 1:
          return end - 1;
        default:
          return start + static_cast<int64_t>(rng.Below(end - start));
      }
    }
  };
  auto node_of = [&](int t) {
    return pick([&](int u, int p) { return book->NodeTypeRange(u, p); }, t);
  };
  auto edge_of = [&](int r) {
    return pick([&](int u, int p) { return book->EdgeTypeRange(u, p); }, r);
  };
  for (size_t num_seeds : {40, 400}) {  // 240 edges (std::sort), 2400 (radix sort).
    std::vector<int64_t> seeds;
    std::set<int64_t> seen;
    while (seeds.size() < num_seeds) {
      const int64_t v = node_of(static_cast<int>(rng.Below(2)));
      if (seen.insert(v).second) seeds.push_back(v);
    }
    std::vector<int64_t> src, dst, eid;
    for (int64_t s : seeds) {
      const int t = book->MapToPerNtype(s).first;
      for (int k = 0; k < 6; ++k) {
        const int r = t == 1 ? 0 : (k % 2 ? 1 : 2);  // Relations ending at the seed's type.
        const int src_type = r == 1 ? 1 : 0;
        int64_t u = node_of(src_type);
        if (k == 5) {  // Some sources are seeds of the right type.
          const int64_t candidate = seeds[rng.Below(seeds.size())];
          if (book->MapToPerNtype(candidate).first == src_type) u = candidate;
        }
        src.push_back(u);
        dst.push_back(s);
        eid.push_back(edge_of(r));
      }
    }
    auto b = ToBlock(*book, seeds, src, dst, eid);
    ASSERT_TRUE(b.ok()) << b.status();
    ExpectSame(*book, *b, BruteForce(*book, seeds, src, dst, eid), eid);
    // One source of the wrong type, a seed or not, in the middle of the
    // batch: the error names that edge.
    const size_t bad = src.size() / 2;
    const int want = book->MapToPerNtype(src[bad]).first;
    for (bool seed : {false, true}) {
      std::vector<int64_t> wrong_src = src;
      if (seed) {
        for (int64_t v : seeds) {
          if (book->MapToPerNtype(v).first != want) wrong_src[bad] = v;
        }
      } else {
        do {
          wrong_src[bad] = node_of(1 - want);
        } while (seen.count(wrong_src[bad]));
      }
      ASSERT_NE(book->MapToPerNtype(wrong_src[bad]).first, want);
      auto e = ToBlock(*book, seeds, wrong_src, dst, eid);
      EXPECT_THAT(e.status().message(), HasSubstr(fmt::format("edge {} ({} -> {}, id {})", bad,
                                                              wrong_src[bad], dst[bad], eid[bad])))
          << e.status();
      EXPECT_THAT(e.status().message(), HasSubstr("does not start at a node of type"))
          << e.status();
    }
  }
}

// A source of a type no relation starts at (tags: its sources are its
// seeds only, with no room for more) is refused before it is placed, in a
// batch large enough for the radix sort.
TEST(TypedBlockTest, SourceOfATypeWithNoRelationsIsRefused) {
  PartitionBook book = ShopBook();
  Rng rng(3);
  // Seeds i1 and t0; buys edges from random users to i1, and at edge 300 a
  // has edge from t1 (not a seed) to t0.
  std::vector<int64_t> seeds = {5, 8}, src, dst, eid;
  for (int e = 0; e < 600; ++e) {
    src.push_back(static_cast<int64_t>(rng.Below(4)));
    dst.push_back(5);
    eid.push_back(static_cast<int64_t>(rng.Below(10)));
  }
  src[300] = 9;
  dst[300] = 8;
  eid[300] = 27;
  auto b = ToBlock(book, seeds, src, dst, eid);
  EXPECT_THAT(
      b.status().message(),
      HasSubstr("edge 300 (9 -> 8, id 27) of relation 'item:has:tag' does not start at a node of "
                "type 'item' (node 9 is a 'tag')"))
      << b.status();
  // The seed t0 as that source is refused too, and a valid has edge (i2 ->
  // t0) is accepted.
  src[300] = 8;
  EXPECT_THAT(ToBlock(book, seeds, src, dst, eid).status().message(),
              HasSubstr("(node 8 is a 'tag')"));
  src[300] = 6;
  auto ok = ToBlock(book, seeds, src, dst, eid);
  ASSERT_TRUE(ok.ok()) << ok.status();
  ExpectSame(book, *ok, BruteForce(book, seeds, src, dst, eid), eid);
}

}  // namespace
}  // namespace tessera::sampling
