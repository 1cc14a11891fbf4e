// File: src/kvstore/id_groups_test.cc
#include "src/kvstore/id_groups.h"

#include <vector>

#include "gtest/gtest.h"

namespace tessera::kvstore {
namespace {

TEST(FindRepeatsTest, DistinctIdsNeedNothingAndLeaveTheBitmapClear) {
  std::vector<uint64_t> bits;
  const std::vector<int64_t> ids = {105, 100, 163, 164, 999, 101};  // 999: not owned.
  DistinctIds d = FindRepeats(ids, {100, 200}, bits);
  EXPECT_TRUE(d.ids.empty());
  EXPECT_TRUE(d.index.empty());
  EXPECT_EQ(bits.size(), 2u);
  EXPECT_EQ(bits, std::vector<uint64_t>(2, 0));
}

TEST(FindRepeatsTest, RepeatsMapEveryIdToItsFirstOccurrence) {
  std::vector<uint64_t> bits;
  const std::vector<int64_t> ids = {7, 3, 7, 999, 7, 3, 999, 4};  // 999 outside, repeated too.
  DistinctIds d = FindRepeats(ids, {0, 64}, bits);
  EXPECT_EQ(d.ids, (std::vector<int64_t>{7, 3, 999, 4}));
  EXPECT_EQ(d.index, (std::vector<int64_t>{0, 1, 0, 2, 0, 1, 2, 3}));
  EXPECT_EQ(bits, std::vector<uint64_t>(1, 0));
  // The bitmap is reused: the next request starts clear.
  EXPECT_TRUE(FindRepeats(std::vector<int64_t>{7, 3}, {0, 64}, bits).ids.empty());
}

TEST(RepeatEdgesTest, EachRequestSeedGetsTheEdgesOfItsDistinctSeed) {
  sampling::SampledEdges distinct;  // Seed 0: two edges, seed 1: none, seed 2: one.
  for (int64_t v : {10, 11, 20}) distinct.src.push_back(v);
  for (int64_t v : {0, 0, 2}) distinct.dst.push_back(v);
  for (int64_t v : {100, 101, 200}) distinct.eid.push_back(v);
  distinct.offsets = {0, 2, 2, 3};
  const std::vector<int64_t> index = {2, 0, 1, 0, 2};
  sampling::SampledEdges out = RepeatEdges(distinct, index);
  EXPECT_EQ(out.offsets, (std::vector<int64_t>{0, 1, 3, 3, 5, 6}));
  EXPECT_EQ(std::vector<int64_t>(out.src.begin(), out.src.end()),
            (std::vector<int64_t>{20, 10, 11, 10, 11, 20}));
  EXPECT_EQ(std::vector<int64_t>(out.dst.begin(), out.dst.end()),
            (std::vector<int64_t>{2, 0, 0, 0, 0, 2}));
  EXPECT_EQ(std::vector<int64_t>(out.eid.begin(), out.eid.end()),
            (std::vector<int64_t>{200, 100, 101, 100, 101, 200}));
}

}  // namespace
}  // namespace tessera::kvstore
