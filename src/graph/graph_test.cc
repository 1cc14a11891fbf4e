#include "tessera/graph/graph.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

using ::testing::HasSubstr;

namespace tessera {
namespace {

//   0 --> 1 --> 2        edge ids: 0: 0->1, 1: 1->2, 2: 2->0, 3: 1->2 (duplicate),
//   ^           |                  4: 3->3 (self loop), 5: 3->1
//   +-----------+        3 (loop) --> 1
Graph Sample() {
  Graph g;
  g.num_nodes = 4;
  g.src = Array::From(std::vector<int64_t>{0, 1, 2, 1, 3, 3});
  g.dst = Array::From(std::vector<int64_t>{1, 2, 0, 2, 3, 1});
  g.edge_data.emplace("w", Array::From(std::vector<float>{0, 1, 2, 3, 4, 5}));
  g.node_data.emplace("x", Array::From(std::vector<float>{9, 8, 7, 6}));
  return g;
}

std::vector<int64_t> V(std::span<const int64_t> s) { return {s.begin(), s.end()}; }

TEST(Graph, RemoveSelfLoopsCarriesEdgeData) {
  Graph g = Sample();
  EXPECT_EQ(RemoveSelfLoops(&g), 1);
  EXPECT_EQ(V(g.src_ids()), (std::vector<int64_t>{0, 1, 2, 1, 3}));
  EXPECT_EQ(g.edge_data.at("w").span<float>()[4], 5.0f);
}

TEST(Graph, RemoveDuplicatesKeepsTheFirst) {
  Graph g = Sample();
  EXPECT_EQ(RemoveDuplicateEdges(&g), 1);
  EXPECT_EQ(g.num_edges(), 5);
  EXPECT_EQ(V(g.dst_ids()), (std::vector<int64_t>{1, 2, 0, 3, 1}));
  auto w = g.edge_data.at("w").span<float>();
  EXPECT_EQ(std::vector<float>(w.begin(), w.end()), (std::vector<float>{0, 1, 2, 4, 5}));
}

// Found by fuzz/text_readers_fuzz.cc: with a huge node id the CSR that
// RemoveDuplicateEdges built asked for num_nodes + 1 offsets (a petabyte).
TEST(Graph, RemoveDuplicatesNeedsNoNodeSizedMemory) {
  Graph g;
  g.num_nodes = int64_t{1} << 60;
  g.src = Array::From(std::vector<int64_t>{0, g.num_nodes - 1, 0, g.num_nodes - 1});
  g.dst = Array::From(std::vector<int64_t>{g.num_nodes - 1, 5, g.num_nodes - 1, 6});
  EXPECT_EQ(RemoveDuplicateEdges(&g), 1);
  EXPECT_EQ(V(g.dst_ids()), (std::vector<int64_t>{g.num_nodes - 1, 5, 6}));
}

TEST(Graph, AddReverseEdgesMirrorsEdgeData) {
  Graph g = Sample();
  AddReverseEdges(&g);
  ASSERT_EQ(g.num_edges(), 12);
  for (int64_t i = 0; i < 6; ++i) {
    EXPECT_EQ(g.src_ids()[6 + i], g.dst_ids()[i]);
    EXPECT_EQ(g.dst_ids()[6 + i], g.src_ids()[i]);
    EXPECT_EQ(g.edge_data.at("w").span<float>()[6 + i], g.edge_data.at("w").span<float>()[i]);
  }
  ASSERT_TRUE(g.Validate("reversed").ok());
}

TEST(Graph, ValidateNamesTheProblem) {
  Graph g = Sample();
  g.num_nodes = 3;
  Status st = g.Validate("in.npy");
  EXPECT_EQ(st.code(), absl::StatusCode::kOutOfRange);
  EXPECT_THAT(st.message(), HasSubstr("src[4] = 3 is out of range [0, 3)")) << st;
  Graph h = Sample();
  h.dst = Array::From(std::vector<int64_t>{1, 2});
  EXPECT_THAT(h.Validate("x").message(), HasSubstr("src has 6 edges but dst has 2"));
  Graph e = Sample();
  e.edge_data.emplace("short", Array::From(std::vector<float>{1}));
  EXPECT_THAT(e.Validate("x").message(), HasSubstr("edge array 'short'"));
}

}  // namespace
}  // namespace tessera
