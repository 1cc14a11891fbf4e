// File: src/sampling/block_test.cc
#include "src/sampling/block.h"

#include <algorithm>
#include <set>

#include "gtest/gtest.h"
#include "src/base/random.h"

namespace tessera::sampling {
namespace {

// Sampled edges (global ids) of one layer with seeds {30, 10}:
//
//   50 --e7--> 30 <--e8-- 10        dst 30: from 50, 10
//   20 --e9--> 10 <--e5-- 50        dst 10: from 20, 50, 30
//              ^
//   30 --e6----+
TEST(BlockTest, DstFirstCompactIdsCsrAndOriginalIds) {
  std::vector<int64_t> seeds = {30, 10};
  std::vector<int64_t> src = {50, 20, 10, 50, 30};
  std::vector<int64_t> dst = {30, 10, 30, 10, 10};
  std::vector<int64_t> eid = {7, 9, 8, 5, 6};
  auto b = ToBlock(seeds, src, dst, eid);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->src_nodes[0], (UninitVector<int64_t>{30, 10, 20, 50}));  // dst first, then sorted.
  EXPECT_EQ(b->num_dst(), 2);
  EXPECT_EQ(b->edges[0].indptr, (UninitVector<int64_t>{0, 2, 5}));
  // dst 30 (index 0): edges 7 (50 -> index 3) and 8 (10 -> index 1), in input order.
  EXPECT_EQ(b->edges[0].eids, (UninitVector<int64_t>{7, 8, 9, 5, 6}));
  EXPECT_EQ(b->edges[0].indices, (UninitVector<int64_t>{3, 1, 2, 3, 0}));
  // Every edge maps back to its global endpoints.
  for (int64_t d = 0; d < b->num_dst(); ++d) {
    for (int64_t k = b->edges[0].indptr[d]; k < b->edges[0].indptr[d + 1]; ++k) {
      size_t e = std::find(eid.begin(), eid.end(), b->edges[0].eids[k]) - eid.begin();
      EXPECT_EQ(b->src_nodes[0][b->edges[0].indices[k]], src[e]);
      EXPECT_EQ(b->dst_nodes()[d], dst[e]);
    }
  }
}

TEST(BlockTest, SeedsWithoutEdgesAndErrors) {
  auto empty = ToBlock(UninitVector<int64_t>{4, 2}, {}, {}, {});
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->src_nodes[0], (UninitVector<int64_t>{4, 2}));
  EXPECT_EQ(empty->edges[0].indptr, (UninitVector<int64_t>{0, 0, 0}));
  EXPECT_FALSE(empty->typed());
  EXPECT_EQ(empty->num_etypes(), 1);
  EXPECT_EQ(empty->NextSeeds(), (std::vector<int64_t>{4, 2}));
  std::vector<int64_t> one = {1};
  EXPECT_FALSE(ToBlock(UninitVector<int64_t>{4}, one, one, one).ok());  // dst 1 is no seed.
  EXPECT_FALSE(ToBlock(UninitVector<int64_t>{4, 4}, {}, {}, {}).ok());  // Repeated seed.
  // A first edge ending at -1 (no "previous destination") is refused too.
  std::vector<int64_t> minus_one = {-1};
  auto negative = ToBlock(UninitVector<int64_t>{4}, std::vector<int64_t>{4}, minus_one, one);
  EXPECT_EQ(negative.status().code(), absl::StatusCode::kInvalidArgument) << negative.status();
}

// Large random layers (the radix-sort path) against a brute-force block.
TEST(BlockTest, LargeRandomLayerMatchesBruteForce) {
  Rng rng(9);
  for (int64_t id_space : {int64_t{3000}, int64_t{1} << 40}) {
    std::vector<int64_t> seeds;
    std::set<int64_t> seen;
    while (seeds.size() < 2000) {
      int64_t v = static_cast<int64_t>(rng.Below(static_cast<uint64_t>(id_space)));
      if (seen.insert(v).second) seeds.push_back(v);
    }
    std::vector<int64_t> src, dst, eid;
    for (size_t i = 0; i < seeds.size(); ++i) {
      for (int k = 0; k < 7; ++k) {
        dst.push_back(seeds[i]);
        // Half of the sources are seeds themselves.
        src.push_back(k % 2 ? seeds[rng.Below(seeds.size())]
                            : static_cast<int64_t>(rng.Below(static_cast<uint64_t>(id_space))));
        eid.push_back(static_cast<int64_t>(eid.size()) * 3);
      }
    }
    auto b = ToBlock(seeds, src, dst, eid);
    ASSERT_TRUE(b.ok()) << b.status();
    std::vector<int64_t> others;
    std::set<int64_t> seed_set(seeds.begin(), seeds.end());
    for (int64_t s : src) {
      if (!seed_set.count(s)) others.push_back(s);
    }
    std::sort(others.begin(), others.end());
    others.erase(std::unique(others.begin(), others.end()), others.end());
    std::vector<int64_t> want = seeds;
    want.insert(want.end(), others.begin(), others.end());
    EXPECT_TRUE(std::ranges::equal(b->src_nodes[0], want));
    for (int64_t d = 0; d < b->num_dst(); ++d) {
      for (int64_t k = b->edges[0].indptr[d]; k < b->edges[0].indptr[d + 1]; ++k) {
        size_t e = static_cast<size_t>(b->edges[0].eids[k] / 3);
        EXPECT_EQ(b->src_nodes[0][b->edges[0].indices[k]], src[e]);
        EXPECT_EQ(seeds[d], dst[e]);
      }
    }
    EXPECT_EQ(b->num_edges(), static_cast<int64_t>(src.size()));
  }
}

}  // namespace
}  // namespace tessera::sampling
