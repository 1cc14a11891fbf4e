// File: src/sampling/neighbor_sampler_test.cc
#include "src/sampling/neighbor_sampler.h"

#include <atomic>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <set>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

using ::testing::HasSubstr;

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

// Most of a hub's edges excluded, in runs and alone: every kind of pick
// maps its index among the kept edges to the right position (a binary
// search over the excluded positions, once a walk per pick that made a
// hub with 100,000 exclusions cost seconds per seed).
TEST(NeighborSamplerTest, ManyExclusionsMapEveryPickToAKeptEdge) {
  Star s(5000);
  std::vector<int64_t> exclude, kept;
  for (int64_t i = 0; i < 5000; ++i) {
    const bool out = i < 1200 || i % 3 == 0 || (i > 4000 && i < 4700) || i == 4999;
    (out ? exclude : kept).push_back(100 + i);
  }
  const std::set<int64_t> allowed(kept.begin(), kept.end());
  std::vector<float> w(5000, 1.0f);
  const std::vector<int64_t> seed = {0};
  auto every = SampleNeighbors(s.view(), seed, {}, {.fanout = -1, .exclude = exclude});
  ASSERT_TRUE(every.ok()) << every.status();
  EXPECT_EQ(std::vector<int64_t>(every->eid.begin(), every->eid.end()), kept);
  for (SampleOptions o :
       std::vector<SampleOptions>{{.fanout = 10},   // Floyd.
                                  {.fanout = 500},  // Partial shuffle.
                                  {.fanout = 40, .replace = true},
                                  {.fanout = 300, .weights = w},  // Efraimidis-Spirakis.
                                  {.fanout = 40, .replace = true, .weights = w}}) {
    o.exclude = exclude;
    auto r = SampleNeighbors(s.view(), seed, {}, o);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(static_cast<int64_t>(r->size()), o.fanout);
    std::set<int64_t> distinct;
    for (size_t i = 0; i < r->size(); ++i) {
      ASSERT_EQ(allowed.count(r->eid[i]), 1u) << "picked excluded edge " << r->eid[i];
      EXPECT_EQ(r->src[i], r->eid[i] - 99);  // The edge's own source.
      distinct.insert(r->eid[i]);
    }
    if (!o.replace) EXPECT_EQ(static_cast<int64_t>(distinct.size()), o.fanout);
  }
}

// Weights in shared memory may change while a call samples (a push from
// another process). A row's weights are read once for its count and its
// choice, so a call that reads each row once always succeeds with edges of
// the row; one of two passes (its bound above max_edges) may find a count
// that no longer fits, and then samples again or fails with Aborted. None
// reads past what it chose (a hub whose weights flipped between the passes
// crashed servers).
TEST(NeighborSamplerTest, WeightsChangingDuringACallNeverCrashIt) {
  Star s(168);
  std::vector<float> w(168, 1.0f);
  std::atomic<bool> stop{false};
  std::thread flipper([&] {
    for (float v = 0; !stop.load(std::memory_order_relaxed); v = 1 - v) {
      for (float& x : w) std::atomic_ref<float>(x).store(v, std::memory_order_relaxed);
    }
  });
  const std::vector<int64_t> seeds(2000, 0);
  for (int call = 0; call < 100; ++call) {
    for (bool replace : {false, true}) {
      SampleOptions o{.fanout = 2, .replace = replace, .weights = w, .num_threads = 2};
      auto one_pass = SampleNeighbors(s.view(), seeds, {}, o);
      ASSERT_TRUE(one_pass.ok()) << one_pass.status();
      o.max_edges = 2 * 2000 - 1;  // Below the bound of 2 per seed: two passes.
      auto two_passes = SampleNeighbors(s.view(), seeds, {}, o);
      if (!two_passes.ok()) {
        EXPECT_THAT(
            two_passes.status().code(),
            ::testing::AnyOf(absl::StatusCode::kAborted, absl::StatusCode::kResourceExhausted))
            << two_passes.status();
      }
      for (const auto* r : {&one_pass, &two_passes}) {
        if (!r->ok()) continue;
        EXPECT_LE((*r)->size(), 2 * seeds.size());
        for (size_t i = 0; i < (*r)->size(); ++i) ASSERT_EQ((*r)->src[i], (*r)->eid[i] - 99);
      }
    }
  }
  stop = true;
  flipper.join();
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

// Node 0's in-edges in three relations (node 1 has none):
//
//   relation 0: sources 1-4,  edge ids 200-203
//   relation 1: sources 5-9,  edge ids 100-104 (a later relation may have
//               smaller ids, as rows of an out-edge index do)
//   relation 2: sources 10-12, edge ids 300-302
struct Typed {
  std::vector<int64_t> indptr = {0, 12, 12};
  std::vector<int64_t> indices = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  std::vector<int64_t> eids = {200, 201, 202, 203, 100, 101, 102, 103, 104, 300, 301, 302};
  std::vector<int32_t> etypes = {0, 0, 0, 0, 1, 1, 1, 1, 1, 2, 2, 2};
  CscView view() const {
    return {.indptr = indptr, .indices = indices, .eids = eids, .etypes = etypes, .num_etypes = 3};
  }
  static int RelationOf(int64_t eid) { return eid >= 300 ? 2 : eid >= 200 ? 0 : 1; }
};

// Per (seed, relation) edges of a result, by the relation of each edge id.
std::vector<std::map<int, std::vector<int64_t>>> PerRelation(const SampledEdges& r) {
  std::vector<std::map<int, std::vector<int64_t>>> out(r.offsets.size() - 1);
  for (size_t i = 0; i + 1 < r.offsets.size(); ++i) {
    int previous = -1;
    for (int64_t k = r.offsets[i]; k < r.offsets[i + 1]; ++k) {
      int rel = Typed::RelationOf(r.eid[k]);
      EXPECT_GE(rel, previous) << "a seed's edges come relation by relation";
      previous = rel;
      EXPECT_EQ(r.src[k], r.eid[k] >= 300   ? r.eid[k] - 290
                          : r.eid[k] >= 200 ? r.eid[k] - 199
                                            : r.eid[k] - 95);
      out[i][rel].push_back(r.eid[k]);
    }
  }
  return out;
}

TEST(NeighborSamplerTest, PerRelationFanoutsSampleEachSegmentOnItsOwn) {
  Typed g;
  std::vector<int64_t> seeds(4000, 0), keys(4000);
  std::iota(keys.begin(), keys.end(), 0);
  seeds[7] = 1;  // No edges at all.
  std::vector<int64_t> fanouts = {1, -1, 0};
  auto r = SampleNeighbors(g.view(), seeds, keys, {.etype_fanouts = fanouts});
  ASSERT_TRUE(r.ok()) << r.status();
  std::vector<double> counts(4, 0);
  auto per = PerRelation(*r);
  for (size_t i = 0; i < seeds.size(); ++i) {
    if (seeds[i] == 1) {
      EXPECT_TRUE(per[i].empty());
      continue;
    }
    ASSERT_EQ(per[i][0].size(), 1u);
    counts[per[i][0][0] - 200] += 1;
    EXPECT_EQ(per[i][1], (std::vector<int64_t>{100, 101, 102, 103, 104}));
    EXPECT_EQ(per[i].count(2), 0u);
  }
  // Uniform inside relation 0 (chi-square, 3 dof, 99.9th percentile 16.3).
  double expected = 3999.0 / 4, chi2 = 0;
  for (double c : counts) chi2 += (c - expected) * (c - expected) / expected;
  EXPECT_LT(chi2, 16.3);
  // Without replacement: min(fanout, degree) distinct; with: exactly fanout.
  for (bool replace : {false, true}) {
    std::vector<int64_t> f = {3, 7, 2};
    auto s = SampleNeighbors(g.view(), std::span<const int64_t>(seeds).first(200),
                             std::span<const int64_t>(keys).first(200),
                             {.etype_fanouts = f, .replace = replace});
    ASSERT_TRUE(s.ok()) << s.status();
    auto p = PerRelation(*s);
    for (size_t i = 0; i < p.size(); ++i) {
      if (seeds[i] == 1) continue;
      for (auto [rel, want] : {std::pair{0, 3}, {1, replace ? 7 : 5}, {2, 2}}) {
        EXPECT_EQ(p[i][rel].size(), static_cast<size_t>(want)) << "relation " << rel;
        if (!replace) {
          EXPECT_EQ(std::set<int64_t>(p[i][rel].begin(), p[i][rel].end()).size(), p[i][rel].size());
        }
      }
    }
  }
}

// Relation r's stream is keyed by (seed, key, r) alone: other relations'
// fanouts do not move it, and relation 0's is the single-fanout stream.
TEST(NeighborSamplerTest, PerRelationStreamsAreIndependent) {
  Typed g;
  std::vector<int64_t> seeds(300, 0), keys(300);
  std::iota(keys.begin(), keys.end(), 11);
  std::vector<int64_t> a = {2, 2, 1}, b = {2, 0, -1};
  auto x = SampleNeighbors(g.view(), seeds, keys, {.etype_fanouts = a, .seed = 5});
  auto y =
      SampleNeighbors(g.view(), seeds, keys, {.etype_fanouts = b, .seed = 5, .num_threads = 3});
  ASSERT_TRUE(x.ok() && y.ok());
  auto px = PerRelation(*x), py = PerRelation(*y);
  for (size_t i = 0; i < seeds.size(); ++i) EXPECT_EQ(px[i][0], py[i][0]);
  Star s(1000);
  std::vector<int64_t> one = {10};
  auto single = SampleNeighbors(s.view(), seeds, keys, {.fanout = 10, .seed = 3});
  auto per = SampleNeighbors(s.view(), seeds, keys, {.etype_fanouts = one, .seed = 3});
  ASSERT_TRUE(single.ok() && per.ok());
  EXPECT_EQ(single->eid, per->eid);
}

// Exclusion works segment by segment (ids increase within a relation, not
// across the row) and still fills each relation's fanout.
TEST(NeighborSamplerTest, ExclusionInsideRelationSegments) {
  Typed g;
  std::vector<int64_t> exclude = {101, 103, 201, 300};
  std::vector<int64_t> seeds(500, 0), keys(500);
  std::iota(keys.begin(), keys.end(), 0);
  std::vector<int64_t> all = {-1, -1, -1}, some = {2, 2, 2};
  auto every = SampleNeighbors(g.view(), seeds, keys, {.etype_fanouts = all, .exclude = exclude});
  ASSERT_TRUE(every.ok()) << every.status();
  auto p = PerRelation(*every);
  EXPECT_EQ(p[0][0], (std::vector<int64_t>{200, 202, 203}));
  EXPECT_EQ(p[0][1], (std::vector<int64_t>{100, 102, 104}));
  EXPECT_EQ(p[0][2], (std::vector<int64_t>{301, 302}));
  for (bool replace : {false, true}) {
    auto r = SampleNeighbors(g.view(), seeds, keys,
                             {.etype_fanouts = some, .replace = replace, .exclude = exclude});
    ASSERT_TRUE(r.ok());
    for (const auto& seed : PerRelation(*r)) {
      for (int rel = 0; rel < 3; ++rel) {
        EXPECT_EQ(seed.at(rel).size(), 2u);
        for (int64_t e : seed.at(rel)) {
          EXPECT_FALSE(std::binary_search(exclude.begin(), exclude.end(), e));
        }
      }
    }
  }
  // One fanout over a row with relations: the excluded edges of every segment are found.
  auto single =
      SampleNeighbors(g.view(), std::vector<int64_t>{0}, {}, {.fanout = 20, .exclude = exclude});
  ASSERT_TRUE(single.ok());
  EXPECT_EQ(single->size(), 8u);
  for (int64_t e : single->eid) {
    EXPECT_FALSE(std::binary_search(exclude.begin(), exclude.end(), e)) << e;
  }
}

// Per-relation fanouts run in one pass over each row unless the result could
// exceed max_edges; both paths, any thread count, and reading segment ids as
// consecutive (true of Typed's segments) give the same edges.
// Per-relation fanouts, and one fanout with weights, sample each row in one
// pass; a bound above max_edges makes them count first. Both give the same
// edges, on any thread count, and with consecutive ids per relation (which
// a whole-row segment of one fanout must not assume).
TEST(NeighborSamplerTest, OnePassEqualsTwoPasses) {
  Typed g;
  std::vector<int64_t> seeds(900), keys(900);
  for (size_t i = 0; i < seeds.size(); ++i) seeds[i] = i % 5 == 0 ? 1 : 0;
  std::iota(keys.begin(), keys.end(), 40);
  std::vector<int64_t> exclude = {102, 201};
  std::vector<float> w(203, 1.0f);
  w[101 - 100] = 0;
  w[300 - 100] = 3;
  const std::vector<int64_t> fanouts = {2, -1, 1};
  for (bool replace : {false, true}) {
    for (bool weighted : {false, true}) {
      for (bool single : {false, true}) {
        SampleOptions o{.replace = replace, .exclude = exclude, .seed = 9};
        if (single) {
          // Fewer edges than the bound from degrees (12 a row): excluded or
          // weightless ones, so that max_edges can sit between the two.
          o.fanout = replace ? -1 : 11;
        } else {
          o.etype_fanouts = fanouts;
        }
        if (weighted) {
          o.weights = w;
          o.weights_by_eid = true;
          o.weights_eid_base = 100;
        }
        auto one_pass = SampleNeighbors(g.view(), seeds, keys, o);
        ASSERT_TRUE(one_pass.ok()) << one_pass.status();
        SCOPED_TRACE(testing::Message()
                     << "replace " << replace << " weighted " << weighted << " single " << single);
        // A bound below what the degrees allow forces the counting pass.
        SampleOptions exact = o;
        exact.max_edges = static_cast<int64_t>(one_pass->size());
        auto two_pass = SampleNeighbors(g.view(), seeds, keys, exact);
        ASSERT_TRUE(two_pass.ok()) << two_pass.status();
        SampleOptions threaded = o;
        threaded.num_threads = 3;
        auto three = SampleNeighbors(g.view(), seeds, keys, threaded);
        ASSERT_TRUE(three.ok()) << three.status();
        CscView consecutive = g.view();
        consecutive.consecutive_segment_eids = true;
        auto shifted = SampleNeighbors(consecutive, seeds, keys, threaded);
        ASSERT_TRUE(shifted.ok()) << shifted.status();
        for (const SampledEdges* other : {&*two_pass, &*three, &*shifted}) {
          EXPECT_EQ(other->src, one_pass->src);
          EXPECT_EQ(other->dst, one_pass->dst);
          EXPECT_EQ(other->eid, one_pass->eid);
          EXPECT_EQ(other->offsets, one_pass->offsets);
        }
        exact.max_edges -= 1;  // One edge too many: an error, nothing returned.
        EXPECT_EQ(SampleNeighbors(g.view(), seeds, keys, exact).status().code(),
                  absl::StatusCode::kResourceExhausted);
      }
    }
  }
}

// Weights indexed by edge id (a part's owned edges when positions are not
// ids): zero weights are never picked, each relation's fanout filled.
TEST(NeighborSamplerTest, WeightsByEdgeId) {
  Typed g;
  std::vector<float> w(203, 1.0f);  // Edge ids 100..302.
  w[200 - 100] = 0;
  w[301 - 100] = 0;
  w[104 - 100] = 0;
  std::vector<int64_t> seeds(300, 0), keys(300);
  std::iota(keys.begin(), keys.end(), 0);
  std::vector<int64_t> fanouts = {4, 9, 3};
  for (bool replace : {false, true}) {
    auto r = SampleNeighbors(g.view(), seeds, keys,
                             {.etype_fanouts = fanouts,
                              .replace = replace,
                              .weights = w,
                              .weights_by_eid = true,
                              .weights_eid_base = 100});
    ASSERT_TRUE(r.ok()) << r.status();
    for (const auto& seed : PerRelation(*r)) {
      EXPECT_EQ(seed.at(0).size(), replace ? 4u : 3u);
      EXPECT_EQ(seed.at(1).size(), replace ? 9u : 4u);
      EXPECT_EQ(seed.at(2).size(), replace ? 3u : 2u);
      for (const auto& [rel, eids] : seed) {
        for (int64_t e : eids) EXPECT_NE(w[e - 100], 0) << "zero-weight edge " << e;
      }
    }
  }
  auto outside =
      SampleNeighbors(g.view(), std::vector<int64_t>{0}, {},
                      {.fanout = 2, .weights = w, .weights_by_eid = true, .weights_eid_base = 150});
  EXPECT_THAT(outside.status().message(), HasSubstr("edge 100 at CSC position 4 has no weight"))
      << outside.status();
}

// Per-relation weights (each relation's own array, read in place) give
// exactly what the same weights by edge id give, for one fanout and per
// relation; a relation with fanout 0 needs none, the others must cover
// their edges.
TEST(NeighborSamplerTest, PerRelationWeightsEqualWeightsByEdgeId) {
  Typed g;
  std::vector<float> w(203, 1.0f);  // Edge ids 100..302.
  w[200 - 100] = 0;
  w[202 - 100] = 5;
  w[101 - 100] = 0.25f;
  w[301 - 100] = 0;
  const std::span<const float> all(w);
  std::vector<RelationWeights> rel = {{all.subspan(100, 4), 200},   // Edges 200-203.
                                      {all.subspan(0, 5), 100},     // Edges 100-104.
                                      {all.subspan(200, 3), 300}};  // Edges 300-302.
  std::vector<int64_t> seeds(400, 0), keys(400);
  for (size_t i = 0; i < seeds.size(); ++i) seeds[i] = i % 7 == 0 ? 1 : 0;
  std::iota(keys.begin(), keys.end(), 3);
  std::vector<int64_t> fanouts = {2, -1, 1};  // Relation 1 (all) has no zero weight.
  for (bool replace : {false, true}) {
    for (bool per_relation : {false, true}) {
      SCOPED_TRACE(testing::Message() << "replace " << replace << " per relation " << per_relation);
      SampleOptions by_eid{.fanout = 4,
                           .replace = replace,
                           .weights = w,
                           .weights_by_eid = true,
                           .weights_eid_base = 100,
                           .seed = 7};
      if (per_relation) by_eid.etype_fanouts = fanouts;
      SampleOptions by_relation = by_eid;
      by_relation.weights = {};
      by_relation.relation_weights = rel;
      auto want = SampleNeighbors(g.view(), seeds, keys, by_eid);
      auto got = SampleNeighbors(g.view(), seeds, keys, by_relation);
      ASSERT_TRUE(want.ok() && got.ok()) << want.status() << got.status();
      EXPECT_GT(want->size(), seeds.size());
      EXPECT_EQ(got->src, want->src);
      EXPECT_EQ(got->eid, want->eid);
      EXPECT_EQ(got->offsets, want->offsets);
      for (int64_t e : got->eid) EXPECT_NE(w[e - 100], 0) << "zero-weight edge " << e;
    }
  }
  // Relation 1 without weights: fine with fanout 0, an error naming its
  // first edge otherwise.
  std::vector<RelationWeights> gap = rel;
  gap[1] = {};
  std::vector<int64_t> skip_1 = {2, 0, 1}, take_1 = {2, 1, 1};
  auto fine =
      SampleNeighbors(g.view(), seeds, keys, {.etype_fanouts = skip_1, .relation_weights = gap});
  ASSERT_TRUE(fine.ok()) << fine.status();
  for (int64_t e : fine->eid) EXPECT_FALSE(e >= 100 && e < 200) << e;
  auto missing =
      SampleNeighbors(g.view(), seeds, keys, {.etype_fanouts = take_1, .relation_weights = gap});
  EXPECT_THAT(missing.status().message(),
              HasSubstr("edge 100 at CSC position 4 has no weight: relation 1 has no weights"))
      << missing.status();
  std::vector<RelationWeights> two(rel.begin(), rel.begin() + 2);
  EXPECT_THAT(SampleNeighbors(g.view(), seeds, keys, {.fanout = 2, .relation_weights = two})
                  .status()
                  .message(),
              HasSubstr("2 per-relation weights given but the graph has 3 relations"));
  EXPECT_THAT(
      SampleNeighbors(g.view(), seeds, keys, {.fanout = 2, .weights = w, .relation_weights = rel})
          .status()
          .message(),
      HasSubstr("both given"));
  Hand h;  // No relation per edge.
  std::vector<RelationWeights> one = {{all.subspan(0, 6), 0}};
  EXPECT_THAT(
      SampleNeighbors(h.view(), std::vector<int64_t>{0}, {}, {.fanout = 2, .relation_weights = one})
          .status()
          .message(),
      HasSubstr("no relation per edge"));
}

TEST(NeighborSamplerTest, BadRelationsAreErrors) {
  Typed g;
  std::vector<int64_t> two = {1, 1}, below = {1, -3, 1};
  auto r = SampleNeighbors(g.view(), std::vector<int64_t>{0}, {}, {.etype_fanouts = two});
  EXPECT_THAT(r.status().message(), HasSubstr("2 per-relation fanouts given but the graph has 3 "
                                              "relations"))
      << r.status();
  r = SampleNeighbors(g.view(), std::vector<int64_t>{0}, {}, {.etype_fanouts = below});
  EXPECT_THAT(r.status().message(), HasSubstr("fanout -3 of relation 1 is invalid"));
  Typed broken;
  broken.etypes[9] = broken.etypes[10] = broken.etypes[11] = 3;
  std::vector<int64_t> three = {1, 1, 1};
  r = SampleNeighbors(broken.view(), std::vector<int64_t>{0}, {}, {.etype_fanouts = three});
  EXPECT_THAT(r.status().message(), HasSubstr("relation 3 at CSC position 9 is not one of the 3"))
      << r.status();
  // A run of more than 8 positions of the largest int32 relation (its end is
  // found by binary search for the next relation: no overflow under UBSan).
  Typed largest;
  std::fill(largest.etypes.begin(), largest.etypes.end(), std::numeric_limits<int32_t>::max());
  r = SampleNeighbors(largest.view(), std::vector<int64_t>{0}, {}, {.etype_fanouts = three});
  EXPECT_THAT(r.status().message(),
              HasSubstr("relation 2147483647 at CSC position 0 is not one of the 3"))
      << r.status();
  broken.etypes.pop_back();
  r = SampleNeighbors(broken.view(), std::vector<int64_t>{0}, {}, {.etype_fanouts = three});
  EXPECT_THAT(r.status().message(), HasSubstr("11 edge relations for 12 edges"));
}

}  // namespace
}  // namespace tessera::sampling
