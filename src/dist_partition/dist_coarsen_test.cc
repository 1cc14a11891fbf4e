// Coarsening and refinement of part_method metis (dist_coarsen.cc) on
// thread ranks, over a hand-drawn graph: 8 cliques of 6 nodes in a ring.
// Clique c holds nodes c, c + 8, ..., c + 40, so that with 2 or 3 ranks
// every clique has nodes on several ranks; inside a clique every ordered
// pair is an edge (symmetrised weight 2), and one edge c -> c + 1 (mod 8)
// joins neighbouring cliques (weight 1):
//
//        K0 --> K1 --> K2 --> K3
//        ^                     |        Ki = {i, i + 8, i + 16, ..., i + 40},
//        |                     v        a clique (K6); the ring edge leaves
//        K7 <-- K6 <-- K5 <-- K4        node i for node i + 1.
//
// With 2 ranks, rank 0 homes nodes 0-23 (three nodes of every clique).
#include <map>
#include <numeric>
#include <set>

#include "gtest/gtest.h"
#include "src/dist_partition/dist_internal.h"

namespace tessera::dist_partition::internal {
namespace {

constexpr int64_t kCliques = 8, kCliqueSize = 6, kNodes = kCliques * kCliqueSize;

int64_t CliqueOf(int64_t v) { return v % kCliques; }

std::vector<std::pair<int64_t, int64_t>> RingOfCliques() {
  std::vector<std::pair<int64_t, int64_t>> edges;
  for (int64_t c = 0; c < kCliques; ++c) {
    for (int64_t i = 0; i < kCliqueSize; ++i) {
      for (int64_t j = 0; j < kCliqueSize; ++j) {
        if (i != j) edges.push_back({c + kCliques * i, c + kCliques * j});
      }
    }
    edges.push_back({c, (c + 1) % kCliques});
  }
  return edges;
}

// home: the nodes each rank homes (P + 1 bounds; default even).
Layout RanksLayout(int rank, int ranks, int parts, std::vector<int64_t> home = {}) {
  Layout layout;
  layout.num_ranks = ranks;
  layout.rank = rank;
  layout.num_parts = parts;
  layout.home = home.empty() ? EvenBounds(kNodes, ranks) : std::move(home);
  layout.reads = layout.home;
  return layout;
}

// This rank's symmetrised adjacency (each rank reads an even share).
StatusOr<Adjacency> RankAdjacency(Comm& comm, const Layout& layout) {
  const auto edges = RingOfCliques();
  const auto bounds = EvenBounds(static_cast<int64_t>(edges.size()), comm.size());
  EdgeSlice slice;
  for (int64_t e = bounds[comm.rank()]; e < bounds[comm.rank() + 1]; ++e) {
    slice.src.push_back(edges[e].first);
    slice.dst.push_back(edges[e].second);
  }
  return BuildAdjacency(comm, layout, slice);
}

// What every rank returns: its level's coarse graph and the coarse ids of
// its home nodes.
struct RankCoarse {
  Coarse coarse;
  Layout layout;
};

// Node v weighs WeightOf(v): 1 unless the test says otherwise.
int64_t UnitWeight(int64_t) { return 1; }

std::vector<RankCoarse> CoarsenOnRanks(int ranks, int64_t max_cluster_weight,
                                       int64_t (*weight_of)(int64_t) = UnitWeight,
                                       std::vector<int64_t> home = {}) {
  std::vector<RankCoarse> out(ranks);
  auto results = RunThreadRanks(ranks, [&](Comm& comm) -> Status {
    const int r = comm.rank();
    comm.set_round_bytes(40);  // Several rounds in every exchange.
    out[r].layout = RanksLayout(r, ranks, 2, home);
    ASSIGN_OR_RETURN(Adjacency a, RankAdjacency(comm, out[r].layout));
    std::vector<int64_t> weight;
    for (int64_t v = out[r].layout.home_begin(); v < out[r].layout.home_end(); ++v) {
      weight.push_back(weight_of(v));
    }
    ASSIGN_OR_RETURN(out[r].coarse, Coarsen(comm, out[r].layout, a, weight, max_cluster_weight, 7));
    return absl::OkStatus();
  });
  for (const Status& st : results) EXPECT_TRUE(st.ok()) << st;
  return out;
}

// The coarse graph every rank's pieces describe, as (from, to) -> weight,
// and each coarse node's weight; checked against the contraction of the
// fine graph by the coarse ids the ranks gave its nodes.
void ExpectContractionOfTheFineGraph(const std::vector<RankCoarse>& ranks,
                                     int64_t (*weight_of)(int64_t) = UnitWeight) {
  std::vector<int64_t> coarse_of;  // Fine node -> coarse id.
  for (const RankCoarse& rc : ranks) {
    coarse_of.insert(coarse_of.end(), rc.coarse.coarse_of_home.begin(),
                     rc.coarse.coarse_of_home.end());
  }
  ASSERT_EQ(static_cast<int64_t>(coarse_of.size()), kNodes);
  const int64_t num_coarse = ranks[0].coarse.layout.home.back();
  std::map<std::pair<int64_t, int64_t>, int64_t> want_arcs, got_arcs;
  for (const auto& [u, v] : RingOfCliques()) {
    const int64_t cu = coarse_of[u], cv = coarse_of[v];
    ASSERT_TRUE(cu >= 0 && cu < num_coarse && cv >= 0 && cv < num_coarse);
    if (cu == cv) continue;
    ++want_arcs[{cu, cv}];
    ++want_arcs[{cv, cu}];
  }
  std::vector<int64_t> want_weight(num_coarse, 0), got_weight;
  for (int64_t v = 0; v < kNodes; ++v) want_weight[coarse_of[v]] += weight_of(v);
  for (const RankCoarse& rc : ranks) {
    const Coarse& c = rc.coarse;
    EXPECT_EQ(c.layout.home, ranks[0].coarse.layout.home);
    const int64_t base = c.layout.home_begin();
    ASSERT_EQ(c.graph.xadj.size(), c.weight.size() + 1);
    for (size_t row = 0; row + 1 < c.graph.xadj.size(); ++row) {
      for (int64_t k = c.graph.xadj[row]; k < c.graph.xadj[row + 1]; ++k) {
        EXPECT_TRUE(
            got_arcs
                .insert({{base + static_cast<int64_t>(row), c.graph.adjncy[k]}, c.graph.adjwgt[k]})
                .second)
            << "arc listed twice";
      }
    }
    got_weight.insert(got_weight.end(), c.weight.begin(), c.weight.end());
  }
  EXPECT_EQ(got_arcs, want_arcs);
  EXPECT_EQ(got_weight, want_weight);
}

TEST(DistCoarsen, CliquesBecomeClustersAndTheRingTheirGraph) {
  for (int ranks : {1, 2, 3}) {
    SCOPED_TRACE(ranks);
    auto got = CoarsenOnRanks(ranks, kCliqueSize);
    ExpectContractionOfTheFineGraph(got);
    // Each clique is one cluster: 8 coarse nodes of weight 6 in a ring
    // whose arcs weigh 1.
    std::map<int64_t, std::set<int64_t>> cliques_of_cluster;
    int64_t fine = 0;
    for (const RankCoarse& rc : got) {
      for (int64_t c : rc.coarse.coarse_of_home) cliques_of_cluster[c].insert(CliqueOf(fine++));
    }
    EXPECT_EQ(static_cast<int64_t>(cliques_of_cluster.size()), kCliques);
    for (const auto& [cluster, cliques] : cliques_of_cluster) EXPECT_EQ(cliques.size(), 1u);
    for (const RankCoarse& rc : got) {
      for (int64_t w : rc.coarse.weight) EXPECT_EQ(w, kCliqueSize);
      for (int64_t w : rc.coarse.graph.adjwgt) EXPECT_EQ(w, 1);
      for (size_t row = 0; row + 1 < rc.coarse.graph.xadj.size(); ++row) {
        EXPECT_EQ(rc.coarse.graph.xadj[row + 1] - rc.coarse.graph.xadj[row], 2);
      }
    }
  }
}

TEST(DistCoarsen, NoClusterOutweighsTheCap) {
  for (int ranks : {1, 2, 3}) {
    SCOPED_TRACE(ranks);
    auto got = CoarsenOnRanks(ranks, 4);
    ExpectContractionOfTheFineGraph(got);
    int64_t clusters = 0;
    for (const RankCoarse& rc : got) {
      for (int64_t w : rc.coarse.weight) {
        EXPECT_LE(w, 4);
        EXPECT_GE(w, 1);
      }
      clusters += static_cast<int64_t>(rc.coarse.weight.size());
    }
    // Clusters of at most 4: at least 2 per clique; and it did contract.
    EXPECT_GE(clusters, 2 * kCliques);
    EXPECT_LT(clusters, kNodes);
  }
}

// Weights 1 to 3 (node v: 1 + v % 3, so a clique weighs 12), the cap 7,
// and 4 ranks of which rank 2 homes no node: every cluster within the cap,
// the contraction exact, and the coarse nodes spread over all 4 ranks.
int64_t MixedWeight(int64_t v) { return 1 + v % 3; }

TEST(DistCoarsen, MixedWeightsAndARankWithoutNodes) {
  auto got = CoarsenOnRanks(4, 7, MixedWeight, {0, 16, 32, 32, 48});
  ExpectContractionOfTheFineGraph(got, MixedWeight);
  int64_t total = 0;
  for (const RankCoarse& rc : got) {
    EXPECT_GT(rc.coarse.weight.size(), 0u) << "rank " << rc.layout.rank;
    for (int64_t w : rc.coarse.weight) {
      EXPECT_LE(w, 7);
      total += w;
    }
  }
  EXPECT_EQ(total, 2 * kNodes);  // Weights 1, 2, 3 in turn: 2 on average.
  EXPECT_EQ(got[2].coarse.coarse_of_home.size(), 0u);
}

// Parts by clique: cliques 0-2 and half of clique 3 in part 0, the rest in
// part 1 (21 and 27 nodes; the limit is max(floor(1.03 * 24), 24) = 24).
// Refinement moves clique 3's other half to part 0: cut 2 ring edges, 24
// and 24 nodes. Projection gives each fine node its cluster's part.
TEST(DistCoarsen, RefinementMendsASplitCliqueWithinTheBalance) {
  for (int ranks : {1, 2, 3}) {
    SCOPED_TRACE(ranks);
    std::vector<std::vector<int32_t>> parts(ranks);
    auto results = RunThreadRanks(ranks, [&](Comm& comm) -> Status {
      const int r = comm.rank();
      const Layout layout = RanksLayout(r, ranks, 2);
      ASSIGN_OR_RETURN(Adjacency a, RankAdjacency(comm, layout));
      for (int64_t v = layout.home_begin(); v < layout.home_end(); ++v) {
        const int64_t c = CliqueOf(v);
        parts[r].push_back(c < 3 || (c == 3 && v < kNodes / 2) ? 0 : 1);
      }
      std::vector<int64_t> weight(parts[r].size(), 1);
      ASSIGN_OR_RETURN(int64_t moved, RefineParts(comm, layout, a, weight, parts[r]));
      if (moved != 3) return absl::InternalError(StrCat(moved, " moves, want 3"));
      return absl::OkStatus();
    });
    for (const Status& st : results) ASSERT_TRUE(st.ok()) << st;
    std::vector<int32_t> part;
    for (const auto& p : parts) part.insert(part.end(), p.begin(), p.end());
    int64_t cut = 0;
    for (const auto& [u, v] : RingOfCliques()) cut += part[u] != part[v];
    EXPECT_EQ(cut, 2);
    EXPECT_EQ(std::count(part.begin(), part.end(), 0), kNodes / 2);
  }
}

TEST(DistCoarsen, ProjectionGivesEveryNodeItsClustersPart) {
  auto got = CoarsenOnRanks(2, kCliqueSize);
  std::vector<std::vector<int32_t>> fine(2);
  auto results = RunThreadRanks(2, [&](Comm& comm) -> Status {
    const Coarse& c = got[comm.rank()].coarse;
    std::vector<int32_t> coarse_part;
    for (int64_t id = c.layout.home_begin(); id < c.layout.home_end(); ++id) {
      coarse_part.push_back(static_cast<int32_t>(id % 2));
    }
    ASSIGN_OR_RETURN(fine[comm.rank()], Project(comm, c, coarse_part));
    return absl::OkStatus();
  });
  for (const Status& st : results) ASSERT_TRUE(st.ok()) << st;
  for (int r = 0; r < 2; ++r) {
    ASSERT_EQ(fine[r].size(), got[r].coarse.coarse_of_home.size());
    for (size_t i = 0; i < fine[r].size(); ++i) {
      EXPECT_EQ(fine[r][i], got[r].coarse.coarse_of_home[i] % 2);
    }
  }
}

}  // namespace
}  // namespace tessera::dist_partition::internal
