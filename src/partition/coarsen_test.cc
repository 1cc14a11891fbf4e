#include "src/partition/coarsen.h"

#include <map>
#include <set>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

using ::testing::HasSubstr;

namespace tessera {
namespace {

// A symmetric graph built from undirected weighted edges, in METIS's layout.
struct TestGraph {
  std::vector<int32_t> xadj, adjncy, adjwgt, vwgt;
  int ncon = 1;
  TestGraph(int n, const std::vector<std::tuple<int, int, int>>& edges, std::vector<int32_t> w,
            int constraints)
      : vwgt(std::move(w)), ncon(constraints) {
    std::vector<std::vector<std::pair<int, int>>> rows(n);
    for (auto [u, v, weight] : edges) {
      rows[u].push_back({v, weight});
      rows[v].push_back({u, weight});
    }
    xadj.push_back(0);
    for (const auto& row : rows) {
      for (auto [v, weight] : row) {
        adjncy.push_back(v);
        adjwgt.push_back(weight);
      }
      xadj.push_back(static_cast<int32_t>(adjncy.size()));
    }
  }
  CsrView view() const { return {xadj, adjncy, adjwgt, vwgt, ncon}; }
};

// A ring of 8 cliques of 6 nodes (clique c holds nodes 6c .. 6c+5): every
// clique edge weighs 3, and one edge of weight 1 joins node 6c+5 to node
// 6(c+1) of the next clique.
//
//     [0-5]--[6-11]--[12-17]--...--[42-47]--(back to [0-5])
TestGraph RingOfCliques(std::vector<int32_t> vwgt, int ncon) {
  std::vector<std::tuple<int, int, int>> edges;
  for (int c = 0; c < 8; ++c) {
    for (int i = 0; i < 6; ++i) {
      for (int j = i + 1; j < 6; ++j) edges.push_back({6 * c + i, 6 * c + j, 3});
    }
    edges.push_back({6 * c + 5, 6 * ((c + 1) % 8), 1});
  }
  return TestGraph(48, edges, std::move(vwgt), ncon);
}

TEST(Coarsen, CliquesBecomeTheClustersAndTheRingIsContracted) {
  std::vector<int32_t> vwgt(48 * 2);
  for (int v = 0; v < 48; ++v) {
    vwgt[2 * v] = 1;
    vwgt[2 * v + 1] = v % 3;  // A second constraint with other weights.
  }
  TestGraph g = RingOfCliques(vwgt, 2);
  std::vector<int32_t> size(48, 1);
  auto c = Contract(g.view(), size, /*max_cluster_size=*/6);
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->size.size(), 8u);
  for (int v = 0; v < 48; ++v) EXPECT_EQ(c->cmap[v], c->cmap[6 * (v / 6)]) << v;
  std::set<int32_t> ids(c->cmap.begin(), c->cmap.end());
  EXPECT_EQ(ids.size(), 8u);
  for (int k = 0; k < 8; ++k) {
    EXPECT_EQ(c->size[k], 6);
    EXPECT_EQ(c->vwgt[2 * k], 6);
    EXPECT_EQ(c->vwgt[2 * k + 1], 6);  // 0+1+2 twice in every clique.
  }
  // The coarse graph is the ring: each cluster has its two neighbours, once,
  // with the joining edge's weight; the clique edges are gone.
  CsrView cv = c->view();
  EXPECT_EQ(cv.num_entries(), 16);
  for (int c0 = 0; c0 < 8; ++c0) {
    const int32_t k = c->cmap[6 * c0];
    std::map<int32_t, int32_t> row;
    for (int32_t i = cv.xadj[k]; i < cv.xadj[k + 1]; ++i) row[cv.adjncy[i]] += cv.adjwgt[i];
    const std::map<int32_t, int32_t> want = {{c->cmap[6 * ((c0 + 1) % 8)], 1},
                                             {c->cmap[6 * ((c0 + 7) % 8)], 1}};
    EXPECT_EQ(row, want) << "clique " << c0;
  }
  // Two levels: the ring of 8 contracts again, within the cap.
  auto c2 = Contract(cv, c->size, /*max_cluster_size=*/12);
  ASSERT_TRUE(c2.ok());
  EXPECT_LT(c2->size.size(), 8u);
  int64_t total = 0;
  for (int32_t s : c2->size) {
    EXPECT_LE(s, 12);
    total += s;
  }
  EXPECT_EQ(total, 48);
}

TEST(Coarsen, NoClusterExceedsTheCap) {
  TestGraph g = RingOfCliques(std::vector<int32_t>(48, 1), 1);
  std::vector<int32_t> size(48);
  for (int v = 0; v < 48; ++v) size[v] = 1 + v % 3;
  for (int64_t cap : {3, 4, 7}) {
    auto c = Contract(g.view(), size, cap);
    ASSERT_TRUE(c.ok());
    std::map<int32_t, int64_t> cluster;
    for (int v = 0; v < 48; ++v) cluster[c->cmap[v]] += size[v];
    for (auto [k, s] : cluster) {
      EXPECT_LE(s, cap) << "cluster " << k;
      EXPECT_EQ(c->size[k], s);
    }
    EXPECT_LT(cluster.size(), 48u) << "cap " << cap << ": nothing merged";
  }
}

TEST(Coarsen, SummedWeightsBeyond32BitsAreAClearError) {
  std::vector<int32_t> vwgt(48, 1);
  vwgt[0] = vwgt[1] = 2'000'000'000;
  TestGraph g = RingOfCliques(vwgt, 1);
  auto c = Contract(g.view(), std::vector<int32_t>(48, 1), 6);
  ASSERT_EQ(c.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(c.status().message(), HasSubstr("exceeds 32 bits")) << c.status();
}

// Nodes 0-1 and 2-3 pair up (a cap of 2); the two entries between the
// pairs merge into one of 3e9.
//
//   0 ==2e9== 1
//    \        /
//   1.5e9  1.5e9
//       \  /
//        2 ==2e9== 3
TEST(Coarsen, MergedEdgeWeightsBeyond32BitsAreAClearError) {
  TestGraph g(
      4,
      {{0, 1, 2'000'000'000}, {2, 3, 2'000'000'000}, {0, 2, 1'500'000'000}, {1, 2, 1'500'000'000}},
      std::vector<int32_t>(4, 1), 1);
  auto c = Contract(g.view(), std::vector<int32_t>(4, 1), 2);
  ASSERT_EQ(c.status().code(), absl::StatusCode::kResourceExhausted) << c.status();
  EXPECT_THAT(c.status().message(), HasSubstr("merged edge weight 3000000000 exceeds 32 bits"))
      << c.status();
}

TEST(Coarsen, RefinementMendsASplitCliqueWithinTheBalance) {
  TestGraph g = RingOfCliques(std::vector<int32_t>(48, 1), 1);
  // Parts: cliques 0-3 in part 0, 4-7 in part 1 (the ring cut twice), with
  // node 8 (clique 1) and node 39 (clique 6) swapped: 24 nodes each.
  std::vector<int32_t> part(48);
  for (int v = 0; v < 48; ++v) part[v] = v < 24 ? 0 : 1;
  part[8] = 1;
  part[39] = 0;
  EXPECT_EQ(WeightedCut(g.view(), part), 2 * (2 + 5 * 3 + 5 * 3));
  // With room (a limit of 26 nodes), both move home.
  std::vector<int32_t> mended = part;
  EXPECT_EQ(RefineParts(g.view(), 2, 1.1, mended), 2);
  EXPECT_EQ(WeightedCut(g.view(), mended), 2 * 2);
  for (int v = 0; v < 48; ++v) EXPECT_EQ(mended[v], v < 24 ? 0 : 1) << v;
  // Without (a limit of 24), neither may: each move would fill a part to 25.
  std::vector<int32_t> kept = part;
  EXPECT_EQ(RefineParts(g.view(), 2, 1.0, kept), 0);
  EXPECT_EQ(kept, part);
}

TEST(Coarsen, ANodeLeavesAPartOverItsLimitAtNoCostInCut) {
  // The path 0-1-2-3-4-5, nodes 0-3 in part 0 and 4-5 in part 1. Node 3
  // cuts as much in either part.
  TestGraph g(6, {{0, 1, 1}, {1, 2, 1}, {2, 3, 1}, {3, 4, 1}, {4, 5, 1}},
              std::vector<int32_t>(6, 1), 1);
  const std::vector<int32_t> part = {0, 0, 0, 0, 1, 1};
  // A limit of 3: part 0 is over it, and node 3 leaves at no cost.
  std::vector<int32_t> balanced = part;
  EXPECT_EQ(RefineParts(g.view(), 2, 1.0, balanced), 1);
  EXPECT_EQ(balanced, (std::vector<int32_t>{0, 0, 0, 1, 1, 1}));
  EXPECT_EQ(WeightedCut(g.view(), balanced), 2);
  // A limit of 4: nothing is over, and a move that gains nothing is not made.
  std::vector<int32_t> kept = part;
  EXPECT_EQ(RefineParts(g.view(), 2, 1.4, kept), 0);
  EXPECT_EQ(kept, part);
}

// Two cliques of 5 (edges of weight 3) joined by one edge of weight 1, in
// 3 parts with a limit of max(floor(1.5 * 3.33), 4) = 5 nodes and a floor of
// floor(3.33 / 2) = 1 (imbalance 1.5):
//
//   [0 1 2 3 4] --1-- [5 6 7 8 9]
TEST(Coarsen, RefinementDrainsNoPartBelowItsFloor) {
  std::vector<std::tuple<int, int, int>> edges = {{4, 5, 1}};
  for (int c : {0, 5}) {
    for (int i = 0; i < 5; ++i) {
      for (int j = i + 1; j < 5; ++j) edges.push_back({c + i, c + j, 3});
    }
  }
  TestGraph g(10, edges, std::vector<int32_t>(10, 1), 1);
  // Part 1 holds node 4 alone, which cuts less with its clique in part 0,
  // where there is room; but part 1 is at its floor, so it stays (moving it
  // emptied the part).
  const std::vector<int32_t> part = {0, 0, 0, 0, 1, 2, 2, 2, 2, 2};
  std::vector<int32_t> refined = part;
  EXPECT_EQ(RefineParts(g.view(), 3, 1.5, refined), 0);
  EXPECT_EQ(refined, part);
  // Part 1 one node above its floor (nodes 4 and 5): node 4 leaves for part
  // 0; node 5 would leave for part 2 too, but part 1 is then at its floor.
  const std::vector<int32_t> roomy = {0, 0, 0, 0, 1, 1, 2, 2, 2, 2};
  const std::vector<int32_t> want = {0, 0, 0, 0, 0, 1, 2, 2, 2, 2};
  refined = roomy;
  EXPECT_EQ(RefineParts(g.view(), 3, 1.5, refined), 1);
  EXPECT_EQ(refined, want);
  // A second constraint no node has weight in (total 0) bounds nothing.
  std::vector<int32_t> two(20, 0);
  for (int v = 0; v < 10; ++v) two[2 * v] = 1;
  TestGraph weighted(10, edges, two, 2);
  refined = roomy;
  EXPECT_EQ(RefineParts(weighted.view(), 3, 1.5, refined), 1);
  EXPECT_EQ(refined, want);
}

}  // namespace
}  // namespace tessera
