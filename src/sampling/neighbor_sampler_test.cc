// File: src/sampling/neighbor_sampler_test.cc
#include "src/sampling/neighbor_sampler.h"

#include <cmath>
#include <map>
#include <numeric>
#include <set>

#include "gtest/gtest.h"

namespace tessera::sampling {
namespace {

// In-edges (CSC) of a hand-drawn graph; edge ids in brackets.
//
//   1 --[0]--> 0 <--[1]-- 2        node 0: in-degree 3 (from 1, 2, 3)
//              ^                   node 1: in-degree 1 (from 0)
//              |[2]                node 2: in-degree 0
//              3                   node 3: in-degree 2 (from 1, 2)
//   0 --[3]--> 1
//   1 --[4]--> 3 <--[5]-- 2
struct Hand {
  std::vector<int64_t> indptr = {0, 3, 4, 4, 6};
  std::vector<int64_t> indices = {1, 2, 3, 0, 1, 2};
  std::vector<int64_t> eids = {0, 1, 2, 3, 4, 5};
  CscView view() const { return {indptr, indices, eids}; }
};

// A star: node 0 has `degree` in-edges from nodes 1..degree.
struct Star {
  explicit Star(int64_t degree) {
    indptr.assign(degree + 2, degree);
    indptr[0] = 0;
    for (int64_t i = 0; i < degree; ++i) {
      indices.push_back(i + 1);
      eids.push_back(100 + i);
    }
  }
  std::vector<int64_t> indptr, indices, eids;
  CscView view() const { return {indptr, indices, eids}; }
};

TEST(NeighborSamplerTest, WithoutReplacementReturnsMinFanoutDegreeDistinctEdges) {
  Hand g;
  std::vector<int64_t> seeds = {0, 1, 2, 3};
  auto r = SampleNeighbors(g.view(), seeds, {}, {.fanout = 2});
  ASSERT_TRUE(r.ok()) << r.status();
  std::map<int64_t, std::set<int64_t>> per_dst;
  for (size_t i = 0; i < r->size(); ++i) {
    EXPECT_TRUE(per_dst[r->dst[i]].insert(r->eid[i]).second) << "edge repeated";
    // src and eid agree with the graph.
    int64_t pos = r->eid[i];
    EXPECT_EQ(g.indices[pos], r->src[i]);
  }
  EXPECT_EQ(per_dst[0].size(), 2u);
  EXPECT_EQ(per_dst[1].size(), 1u);
  EXPECT_EQ(per_dst.count(2), 0u);
  EXPECT_EQ(per_dst[3].size(), 2u);
  auto all = SampleNeighbors(g.view(), seeds, {}, {.fanout = -1});
  EXPECT_EQ(all->size(), 6u);
}

TEST(NeighborSamplerTest, DeterministicPerKeyWhateverTheThreadsOrOrder) {
  Star s(1000);
  std::vector<int64_t> seeds(600, 0);
  std::vector<int64_t> keys(600);
  std::iota(keys.begin(), keys.end(), 7);
  auto one = SampleNeighbors(s.view(), seeds, keys, {.fanout = 10, .seed = 3, .num_threads = 1});
  auto four = SampleNeighbors(s.view(), seeds, keys, {.fanout = 10, .seed = 3, .num_threads = 4});
  ASSERT_TRUE(one.ok() && four.ok());
  EXPECT_EQ(one->eid, four->eid);
  auto other = SampleNeighbors(s.view(), seeds, keys, {.fanout = 10, .seed = 4});
  EXPECT_NE(one->eid, other->eid);
}

// Chi-square test of uniformity: 20,000 samples of 5 of 40 in-edges.
TEST(NeighborSamplerTest, UniformWithAndWithoutReplacement) {
  for (bool replace : {false, true}) {
    for (int64_t fanout : {5, 100}) {  // 100 > kFloydMax exercises the shuffle path.
      int64_t degree = fanout == 5 ? 40 : 300;
      Star s(degree);
      std::vector<int64_t> seeds(2000, 0), keys(2000);
      std::iota(keys.begin(), keys.end(), 0);
      auto r = SampleNeighbors(s.view(), seeds, keys, {.fanout = fanout, .replace = replace});
      ASSERT_TRUE(r.ok());
      ASSERT_EQ(r->size(), static_cast<size_t>(2000 * fanout));
      std::vector<double> counts(degree, 0);
      for (int64_t e : r->eid) counts[e - 100] += 1;
      double expected = 2000.0 * fanout / degree, chi2 = 0;
      for (double c : counts) chi2 += (c - expected) * (c - expected) / expected;
      // 99.9th percentile of chi-square with degree-1 dof, ~ dof + 4.4 sqrt(2 dof).
      double dof = degree - 1;
      EXPECT_LT(chi2, dof + 4.4 * std::sqrt(2 * dof))
          << "replace=" << replace << " fanout=" << fanout;
    }
  }
}

TEST(NeighborSamplerTest, WeightedIsProportionalAndSkipsZeroWeights) {
  Star s(4);
  std::vector<float> w = {1, 2, 0, 5};
  std::vector<int64_t> seeds(20000, 0), keys(20000);
  std::iota(keys.begin(), keys.end(), 0);
  auto with = SampleNeighbors(s.view(), seeds, keys, {.fanout = 1, .replace = true, .weights = w});
  ASSERT_TRUE(with.ok()) << with.status();
  std::vector<double> counts(4, 0);
  for (int64_t e : with->eid) counts[e - 100] += 1;
  EXPECT_EQ(counts[2], 0);
  EXPECT_NEAR(counts[0] / 20000, 1.0 / 8, 0.01);
  EXPECT_NEAR(counts[1] / 20000, 2.0 / 8, 0.015);
  EXPECT_NEAR(counts[3] / 20000, 5.0 / 8, 0.015);
  // Without replacement, fanout 1: the first pick is also proportional.
  auto without = SampleNeighbors(s.view(), seeds, keys, {.fanout = 1, .weights = w});
  std::fill(counts.begin(), counts.end(), 0);
  for (int64_t e : without->eid) counts[e - 100] += 1;
  EXPECT_EQ(counts[2], 0);
  EXPECT_NEAR(counts[3] / 20000, 5.0 / 8, 0.015);
  // Fanout above the positive-weight count: exactly the positive edges.
  auto all = SampleNeighbors(s.view(), std::vector<int64_t>{0}, {}, {.fanout = 4, .weights = w});
  std::set<int64_t> got(all->eid.begin(), all->eid.end());
  EXPECT_EQ(got, (std::set<int64_t>{100, 101, 103}));
}

// Excluded edges are taken out before choosing: the fanout is still filled
// from the remaining edges, for every kind of sampling.
TEST(NeighborSamplerTest, ExclusionStillFillsTheFanout) {
  Star s(10);                                                    // Edge ids 100..109.
  std::vector<int64_t> exclude = {50, 100, 103, 104, 109, 500};  // 50 and 500: not in the row.
  std::set<int64_t> excluded(exclude.begin(), exclude.end());
  std::vector<float> w(10, 1.0f);
  w[1] = 0;  // Edge 101 can't be picked by weight either.
  std::vector<int64_t> seeds(3000, 0), keys(3000);
  std::iota(keys.begin(), keys.end(), 0);
  struct Case {
    SampleOptions options;
    int64_t per_seed;
  };
  std::vector<Case> cases = {
      {{.fanout = 4, .exclude = exclude}, 4},
      {{.fanout = 6, .exclude = exclude}, 6},  // Exactly the 6 allowed edges.
      {{.fanout = 9, .exclude = exclude}, 6},
      {{.fanout = 70, .exclude = exclude}, 6},
      {{.fanout = 3, .replace = true, .exclude = exclude}, 3},
      {{.fanout = -1, .exclude = exclude}, 6},
      {{.fanout = 4, .weights = w, .exclude = exclude}, 4},
      {{.fanout = 9, .weights = w, .exclude = exclude}, 5},
      {{.fanout = 3, .replace = true, .weights = w, .exclude = exclude}, 3},
  };
  for (const Case& c : cases) {
    auto r = SampleNeighbors(s.view(), seeds, keys, c.options);
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_EQ(r->size(), seeds.size() * c.per_seed) << "fanout " << c.options.fanout;
    std::map<int64_t, int> counts;
    for (size_t i = 0; i < r->size(); ++i) {
      EXPECT_EQ(excluded.count(r->eid[i]), 0u) << "picked excluded edge " << r->eid[i];
      EXPECT_EQ(r->src[i], r->eid[i] - 99);  // Source matches the edge.
      ++counts[r->eid[i]];
    }
    // Every allowed edge gets picked (uniformly enough: within 25 % of the mean).
    std::set<int64_t> allowed = {101, 102, 105, 106, 107, 108};
    if (!c.options.weights.empty()) allowed.erase(101);
    EXPECT_EQ(counts.size(), allowed.size()) << "fanout " << c.options.fanout;
    double mean = static_cast<double>(r->size()) / allowed.size();
    for (auto [e, n] : counts) EXPECT_NEAR(n, mean, 0.25 * mean) << "edge " << e;
  }
  // Excluding every edge leaves the seed without edges, even with replacement.
  std::vector<int64_t> all(10);
  std::iota(all.begin(), all.end(), 100);
  auto none = SampleNeighbors(s.view(), std::vector<int64_t>{0}, {},
                              {.fanout = 3, .replace = true, .exclude = all});
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->size(), 0u);
  std::vector<int64_t> unsorted = {105, 101};
  EXPECT_FALSE(SampleNeighbors(s.view(), std::vector<int64_t>{0}, {}, {.exclude = unsorted}).ok());
}

TEST(NeighborSamplerTest, BadInputIsAnError) {
  Hand g;
  EXPECT_EQ(SampleNeighbors(g.view(), std::vector<int64_t>{4}, {}, {}).status().code(),
            absl::StatusCode::kOutOfRange);
  std::vector<float> short_w = {1, 2};
  EXPECT_FALSE(SampleNeighbors(g.view(), std::vector<int64_t>{0}, {}, {.weights = short_w}).ok());
  std::vector<float> negative = {1, -1, 1, 1, 1, 1};
  EXPECT_FALSE(SampleNeighbors(g.view(), std::vector<int64_t>{0}, {}, {.weights = negative}).ok());
  // An absurd fanout with replacement is refused before anything is allocated.
  auto huge = SampleNeighbors(g.view(), std::vector<int64_t>{0, 3}, {},
                              {.fanout = int64_t{1} << 40, .replace = true});
  EXPECT_EQ(huge.status().code(), absl::StatusCode::kResourceExhausted) << huge.status();
  std::vector<float> nan = {1, NAN, 1, 1, 1, 1};
  EXPECT_FALSE(SampleNeighbors(g.view(), std::vector<int64_t>{0}, {}, {.weights = nan}).ok());
}

}  // namespace
}  // namespace tessera::sampling
