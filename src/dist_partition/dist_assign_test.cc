// The pieces of part_method metis that do not need MPI, on thread ranks: the
// symmetrised adjacency PT-Scotch gets, the balance classes and the repair of
// the classes' balance; and the clear error PT-Scotch's absence gives.
#include <numeric>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/dist_partition/dist_internal.h"

using ::testing::HasSubstr;

namespace tessera::dist_partition::internal {
namespace {

Layout TwoRanks(int rank, int64_t nodes, int parts) {
  Layout layout;
  layout.num_ranks = 2;
  layout.rank = rank;
  layout.num_parts = parts;
  layout.home = EvenBounds(nodes, 2);
  layout.reads = EvenBounds(nodes, 2);
  return layout;
}

// 0 -> 1 twice, 1 -> 0, 2 -> 2 (a loop), 3 -> 4, 5 -> 3:
//
//   0 <==> 1    2 (loop)    5 -> 3 -> 4
//
// Rank 0 reads the first three edges and homes nodes 0-2; rank 1 the rest.
TEST(DistAssign, AdjacencyIsSymmetricWeightedAndLoopFree) {
  const std::vector<int64_t> src = {0, 0, 1, 2, 3, 5}, dst = {1, 1, 0, 2, 4, 3};
  std::vector<Adjacency> got(2);
  auto results = RunThreadRanks(2, [&](Comm& comm) -> Status {
    const int r = comm.rank();
    EdgeSlice edges;
    edges.src.assign(src.begin() + 3 * r, src.begin() + 3 * r + 3);
    edges.dst.assign(dst.begin() + 3 * r, dst.begin() + 3 * r + 3);
    ASSIGN_OR_RETURN(got[r], BuildAdjacency(comm, TwoRanks(r, 6, 2), edges));
    return absl::OkStatus();
  });
  for (const Status& st : results) ASSERT_TRUE(st.ok()) << st;
  EXPECT_EQ(got[0].xadj, (std::vector<int64_t>{0, 1, 2, 2}));
  EXPECT_EQ(got[0].adjncy, (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(got[0].adjwgt, (std::vector<int64_t>{3, 3}));  // 0->1 twice and 1->0.
  EXPECT_EQ(got[0].in_degree, (std::vector<int64_t>{1, 2, 1}));
  EXPECT_EQ(got[1].xadj, (std::vector<int64_t>{0, 2, 3, 4}));
  EXPECT_EQ(got[1].adjncy, (std::vector<int64_t>{4, 5, 3, 3}));
  EXPECT_EQ(got[1].adjwgt, (std::vector<int64_t>{1, 1, 1, 1}));
  EXPECT_EQ(got[1].in_degree, (std::vector<int64_t>{1, 1, 0}));
}

// A ring 0 - 1 - ... - 7 - 0 (both directions), even nodes of class 0, odd
// of class 1, every even node in part 0 and every odd one in part 1: each
// part holds 4 of one class and none of the other. Balance allows 2 per
// part and class, so 2 nodes of each class move; every candidate gains the
// same, so the lowest ids of each rank's share move.
TEST(DistAssign, RepairBalancesEveryClassWithFewMoves) {
  std::vector<std::vector<int32_t>> parts(2);
  std::vector<int64_t> moved(2);
  auto results = RunThreadRanks(2, [&](Comm& comm) -> Status {
    const int r = comm.rank();
    Layout layout = TwoRanks(r, 8, 2);
    EdgeSlice edges;
    for (int64_t v = 4 * r; v < 4 * r + 4; ++v) {
      edges.src.insert(edges.src.end(), {v, (v + 1) % 8});
      edges.dst.insert(edges.dst.end(), {(v + 1) % 8, v});
    }
    ASSIGN_OR_RETURN(Adjacency adjacency, BuildAdjacency(comm, layout, edges));
    BalanceClasses classes;
    classes.num_classes = 2;
    for (int64_t v = 4 * r; v < 4 * r + 4; ++v) {
      classes.of_home.push_back(v % 2);
      parts[r].push_back(v % 2);
    }
    ASSIGN_OR_RETURN(moved[r], RepairBalance(comm, layout, adjacency, classes, parts[r]));
    return absl::OkStatus();
  });
  for (const Status& st : results) ASSERT_TRUE(st.ok()) << st;
  EXPECT_EQ(moved[0], 4);
  EXPECT_EQ(parts[0], (std::vector<int32_t>{1, 0, 0, 1}));  // Nodes 0 and 1 moved.
  EXPECT_EQ(parts[1], (std::vector<int32_t>{1, 0, 0, 1}));  // Nodes 4 and 5 moved.
}

// 40 nodes, 10 per rank, 4 parts (limit 10 a part): part 0 holds 17 (5, 4,
// 4, 4 on the ranks), part 2 has room for 6 and part 3 for 1. The ranks'
// shares of the excess of 7 are 2, 2, 2, 1; split in proportion to the
// flows (6 and 1) each share went wholly to part 2, which got 7. Every part
// must end within the limit, part 2 and part 3 at exactly 10.
TEST(DistAssign, RepairNeverOverfillsATargetWhenSharesRound) {
  const std::vector<std::vector<int32_t>> initial = {{0, 0, 0, 0, 0, 1, 1, 1, 2, 3},
                                                     {0, 0, 0, 0, 1, 1, 1, 2, 3, 3},
                                                     {0, 0, 0, 0, 1, 1, 2, 3, 3, 3},
                                                     {0, 0, 0, 0, 1, 1, 2, 3, 3, 3}};
  std::vector<std::vector<int32_t>> parts = initial;
  auto results = RunThreadRanks(4, [&](Comm& comm) -> Status {
    const int r = comm.rank();
    Layout layout;
    layout.num_ranks = 4;
    layout.rank = r;
    layout.num_parts = 4;
    layout.home = EvenBounds(40, 4);
    layout.reads = layout.home;
    Adjacency adjacency;
    adjacency.xadj.assign(11, 0);
    BalanceClasses classes;
    classes.of_home.assign(10, 0);
    return RepairBalance(comm, layout, adjacency, classes, parts[r]).status();
  });
  for (const Status& st : results) ASSERT_TRUE(st.ok()) << st;
  std::vector<int64_t> load(4, 0);
  for (const auto& p : parts) {
    for (int32_t q : p) ++load[q];
  }
  EXPECT_EQ(load, (std::vector<int64_t>{10, 10, 10, 10}));
}

TEST(DistAssign, BalancedPartsAreLeftAlone) {
  auto results = RunThreadRanks(2, [&](Comm& comm) -> Status {
    const int r = comm.rank();
    Layout layout = TwoRanks(r, 8, 2);
    Adjacency adjacency;
    adjacency.xadj.assign(5, 0);
    BalanceClasses classes;
    classes.of_home.assign(4, 0);
    std::vector<int32_t> parts = {0, 1, 0, 1};
    ASSIGN_OR_RETURN(int64_t moved, RepairBalance(comm, layout, adjacency, classes, parts));
    if (moved != 0 || parts != std::vector<int32_t>{0, 1, 0, 1}) {
      return absl::InternalError("moved balanced nodes");
    }
    return absl::OkStatus();
  });
  for (const Status& st : results) EXPECT_TRUE(st.ok()) << st;
}

TEST(DistAssign, PtScotchNeedsMpiRanks) {
  auto results = RunThreadRanks(1, [&](Comm& comm) -> Status {
    Layout layout = TwoRanks(0, 4, 2);
    layout.num_ranks = 1;
    layout.home = {0, 4};
    Adjacency adjacency;
    adjacency.xadj.assign(5, 0);
    return ScotchParts(comm, layout, adjacency, false, {}, 0).status();
  });
  EXPECT_THAT(results[0].message(), HasSubstr("needs MPI ranks")) << results[0];
}

}  // namespace
}  // namespace tessera::dist_partition::internal
