// File: src/partition/work_split_test.cc
#include "src/partition/work_split.h"

#include <map>
#include <numeric>
#include <random>

#include "gtest/gtest.h"

namespace tessera {
namespace {

// Checks every invariant for one configuration; returns each trainer's ids.
std::vector<std::vector<int64_t>> CheckSplit(const std::vector<int64_t>& selected,
                                             const std::vector<int64_t>& offsets, int trainers) {
  int K = static_cast<int>(offsets.size()) - 1;
  int c = trainers / K;
  std::vector<std::vector<int64_t>> got(trainers);
  std::map<int64_t, int> owner;
  size_t min_count = SIZE_MAX, max_count = 0;
  for (int r = 0; r < trainers; ++r) {
    auto ids = SplitWork(selected, offsets, trainers, r);
    EXPECT_TRUE(ids.ok()) << ids.status();
    got[r] = *ids;
    min_count = std::min(min_count, got[r].size());
    max_count = std::max(max_count, got[r].size());
    int p = r / c;
    bool in_own = true;  // Own-partition ids come first.
    for (int64_t id : got[r]) {
      EXPECT_TRUE(owner.emplace(id, r).second) << "id " << id << " given twice";
      bool own = id >= offsets[p] && id < offsets[p + 1];
      EXPECT_FALSE(own && !in_own) << "own id after a foreign one, trainer " << r;
      in_own &= own;
    }
  }
  EXPECT_EQ(owner.size(), selected.size());  // Every id exactly once.
  EXPECT_LE(max_count - std::min(min_count, max_count), 1u);
  return got;
}

TEST(WorkSplitTest, BalancedPartitionsKeepEveryIdLocal) {
  // Two machines, 10 ids each side, 2 trainers each: all local, 5 apiece.
  std::vector<int64_t> selected;
  for (int64_t i = 0; i < 20; ++i) selected.push_back(i * 5);  // 0..95
  auto got = CheckSplit(selected, {0, 50, 100}, 4);
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(got[r].size(), 5u);
    for (int64_t id : got[r]) EXPECT_EQ(id < 50, r < 2);
  }
}

TEST(WorkSplitTest, SkewedAndTinyPartitions) {
  // Machine 0 holds 1 selected id, machine 1 holds 12; 3 trainers per
  // machine (more trainers than ids of partition 0).
  std::vector<int64_t> selected = {3};
  for (int64_t i = 0; i < 12; ++i) selected.push_back(100 + i);
  auto got = CheckSplit(selected, {0, 100, 200}, 6);
  // Quotas 3,2,2,2,2,2. Trainer 0 gets the only id of partition 0, then two
  // of the ids machine 1's trainers cannot take (each keeps its quota of 2).
  EXPECT_EQ(got[0], (std::vector<int64_t>{3, 102, 103}));
  EXPECT_EQ(got[3], (std::vector<int64_t>{100, 101}));
  EXPECT_EQ(got[1], (std::vector<int64_t>{106, 107}));
}

TEST(WorkSplitTest, RandomConfigurations) {
  std::mt19937_64 rng(5);
  for (int trial = 0; trial < 200; ++trial) {
    int K = 1 + static_cast<int>(rng() % 4), c = 1 + static_cast<int>(rng() % 4);
    std::vector<int64_t> offsets = {0};
    for (int p = 0; p < K; ++p)
      offsets.push_back(offsets.back() + static_cast<int64_t>(rng() % 30));
    std::vector<int64_t> selected;
    for (int64_t id = 0; id < offsets.back(); ++id) {
      if (rng() % 3 == 0) selected.push_back(id);
    }
    CheckSplit(selected, offsets, K * c);
  }
}

TEST(WorkSplitTest, WithoutForceEvenOnlyOwnIds) {
  std::vector<int64_t> selected = {1, 2, 3, 60, 61};
  auto a = SplitWork(selected, std::vector<int64_t>{0, 50, 100}, 2, 0, {.force_even = false});
  auto b = SplitWork(selected, std::vector<int64_t>{0, 50, 100}, 2, 1, {.force_even = false});
  EXPECT_EQ(*a, (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(*b, (std::vector<int64_t>{60, 61}));
}

// Partitioned for 4 trainers per machine (trainer_id 0..7 over 2 machines).
TEST(WorkSplitTest, TrainerIdGroupsFirstMergedWhenFewerTrainersRun) {
  std::vector<int64_t> selected(80), tids(80);
  std::iota(selected.begin(), selected.end(), 0);  // Machine 0 owns [0, 40).
  for (int64_t i = 0; i < 80; ++i) tids[i] = (i / 40) * 4 + (i * 7) % 4;
  std::vector<int64_t> offsets = {0, 40, 80};
  for (int trainers : {8, 4, 2}) {
    int per_group = 8 / trainers;  // Original groups merged into one trainer.
    for (int r = 0; r < trainers; ++r) {
      auto ids = SplitWork(selected, offsets, trainers, r, {.trainer_ids = tids});
      ASSERT_TRUE(ids.ok()) << ids.status();
      EXPECT_EQ(ids->size(), 80u / trainers);
      for (int64_t id : *ids) {
        EXPECT_EQ(tids[id] / per_group, r) << "id " << id << " of trainer " << tids[id];
      }
    }
  }
  // Uneven groups: counts still within one, same-machine surplus first.
  std::vector<int64_t> skewed(80, 0);
  for (int64_t i = 40; i < 80; ++i) skewed[i] = 4 + (i % 2);  // Trainers 6 and 7: nothing.
  std::map<int64_t, int> seen;
  for (int r = 0; r < 8; ++r) {
    auto ids = SplitWork(selected, offsets, 8, r, {.trainer_ids = skewed});
    ASSERT_TRUE(ids.ok());
    EXPECT_EQ(ids->size(), 10u);
    for (int64_t id : *ids) {
      ++seen[id];
      EXPECT_EQ(id < 40, r < 4) << "trainer " << r << " got a foreign id " << id;
    }
  }
  EXPECT_EQ(seen.size(), 80u);
  std::vector<int64_t> three_per_machine(80, 5);  // Made for 3 per machine: can't merge to 2.
  EXPECT_FALSE(SplitWork(selected, offsets, 4, 0, {.trainer_ids = three_per_machine}).ok());
  EXPECT_FALSE(SplitWork(selected, offsets, 4, 0, {.trainer_ids = std::span(tids).first(3)}).ok());
}

TEST(WorkSplitTest, BadInput) {
  std::vector<int64_t> offsets = {0, 10, 20};
  EXPECT_FALSE(SplitWork(std::vector<int64_t>{1}, offsets, 3, 0).ok());     // 3 % 2 != 0
  EXPECT_FALSE(SplitWork(std::vector<int64_t>{1}, offsets, 2, 2).ok());     // rank
  EXPECT_FALSE(SplitWork(std::vector<int64_t>{2, 1}, offsets, 2, 0).ok());  // unsorted
  EXPECT_FALSE(SplitWork(std::vector<int64_t>{20}, offsets, 2, 0).ok());    // out of range
  std::vector<uint8_t> mask = {0, 1, 1, 0, 1};
  EXPECT_EQ(MaskToIds(mask), (std::vector<int64_t>{1, 2, 4}));
}

}  // namespace
}  // namespace tessera
