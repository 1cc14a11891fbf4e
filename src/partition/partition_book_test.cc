#include "tessera/partition/partition_book.h"

#include "gtest/gtest.h"
#include "src/base/test_util.h"
#include "tessera/partition/partition_config.h"

namespace tessera {
namespace {

TEST(PartitionBook, OwnersRangesAndLocalIds) {
  // Part 1 is empty: nodes [0,5) -> 0, [5,5) -> 1, [5,9) -> 2.
  auto book = PartitionBook::Create({0, 5, 5, 9}, {0, 10, 12, 20}, 2);
  ASSERT_TRUE(book.ok()) << book.status();
  EXPECT_EQ(book->num_partitions(), 3);
  EXPECT_EQ(book->num_nodes(), 9);
  EXPECT_EQ(book->NodeOwner(0), 0);
  EXPECT_EQ(book->NodeOwner(4), 0);
  EXPECT_EQ(book->NodeOwner(5), 2);
  EXPECT_EQ(book->NodeOwner(8), 2);
  EXPECT_EQ(book->EdgeOwner(10), 1);
  EXPECT_EQ(book->EdgeOwner(11), 1);
  EXPECT_EQ(book->EdgeOwner(12), 2);
  EXPECT_EQ(book->NodeRange(2), (std::pair<int64_t, int64_t>{5, 9}));
  EXPECT_EQ(book->NodeToLocal(7), 2);
  EXPECT_EQ(book->EdgeToLocal(19), 7);
  std::vector<int64_t> ids = {8, 0, 5};
  std::vector<int32_t> owners(3);
  book->NodeOwners(ids, owners);
  EXPECT_EQ(owners, (std::vector<int32_t>{2, 0, 2}));
}

TEST(PartitionBook, RejectsBadTypeLayouts) {
  TypeLayout ok{{"a", "b"}, {{"a", "r", "b"}}, {1, 2, 3, 4}, {5, 6}};
  EXPECT_TRUE(PartitionBook::CreateTyped(ok, 1).ok());
  TypeLayout twice = ok;
  twice.ntypes = {"a", "a"};
  EXPECT_THAT(PartitionBook::CreateTyped(twice, 0).status().message(), HasSubstr("appears twice"));
  TypeLayout missing = ok;
  missing.etypes = {{"a", "r", "c"}};
  EXPECT_THAT(PartitionBook::CreateTyped(missing, 0).status().message(),
              HasSubstr("'a:r:c' names a node type it does not list"));
  TypeLayout bad_name = ok;
  bad_name.ntypes = {"a", "x/y"};
  bad_name.etypes = {{"a", "r", "a"}};
  EXPECT_FALSE(PartitionBook::CreateTyped(bad_name, 0).ok());
  TypeLayout negative = ok;
  negative.node_counts = {1, -2, 3, 4};
  EXPECT_FALSE(PartitionBook::CreateTyped(negative, 0).ok());
  TypeLayout ragged = ok;
  ragged.edge_counts = {5, 6, 7};
  EXPECT_FALSE(PartitionBook::CreateTyped(ragged, 0).ok());
}

TEST(PartitionBook, RejectsBadMaps) {
  EXPECT_FALSE(PartitionBook::Create({0, 5, 3}, {0, 1, 2}, 0).ok());  // Not ordered.
  EXPECT_FALSE(PartitionBook::Create({1, 5}, {0, 1}, 0).ok());        // Not from 0.
  EXPECT_FALSE(PartitionBook::Create({0, 5}, {0, 1, 2}, 0).ok());     // Sizes differ.
  EXPECT_FALSE(PartitionBook::Create({0, 5}, {0, 1}, 1).ok());        // No part 1.
}

TEST(PartitionConfig, ReadsDglLegacyMapsAndRejectsJunk) {
  testing::TempDir dir;
  testing::WriteAll(dir / "g.json", R"({"graph_name": "g", "num_nodes": 9, "num_edges": 20,
    "part_method": "metis", "num_parts": 2, "halo_hops": 1,
    "node_map": [4, 9], "edge_map": {"_N:_E:_N": [[0, 12], [12, 20]]},
    "part-0": {"part_graph": "p0/graph", "node_feats": "p0/nf", "edge_feats": "p0/ef"},
    "part-1": {"part_graph": "p1/graph", "node_feats": "p1/nf", "edge_feats": "p1/ef"}})");
  auto c = ReadPartitionConfig(dir / "g.json");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->node_offsets, (std::vector<int64_t>{0, 4, 9}));
  EXPECT_EQ(c->edge_offsets, (std::vector<int64_t>{0, 12, 20}));
  EXPECT_EQ(c->PartGraphDir(1), dir / "p1/graph");

  // Round trip through our writer keeps DGL's keys.
  std::string text = PartitionConfigToJson(*c);
  for (const char* key : {"\"graph_name\"", "\"num_nodes\"", "\"num_edges\"", "\"part_method\"",
                          "\"num_parts\"", "\"halo_hops\"", "\"node_map\"", "\"edge_map\"",
                          "\"ntypes\"", "\"etypes\"", "\"part-0\"", "\"part-1\"", "\"_N:_E:_N\""}) {
    EXPECT_THAT(text, HasSubstr(key)) << key;
  }
  testing::WriteAll(dir / "h.json", text);
  auto again = ReadPartitionConfig(dir / "h.json");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->node_offsets, c->node_offsets);

  const std::vector<std::pair<std::string, std::string>> bad = {
      {"not json {", "not a valid JSON"},
      {R"({"graph_name": 3})", "graph_name"},
      {R"({"graph_name": "g", "num_nodes": 9, "num_edges": 2, "num_parts": 1,
           "node_map": [[0, 8]], "edge_map": [[0, 2]]})",
       "do not cover"},
      {R"({"graph_name": "g", "num_nodes": 9, "num_edges": 2, "num_parts": 1,
           "node_map": [[0, 9]], "edge_map": [[0, 2]]})",
       "part-0"},
      {R"({"graph_name": "g", "num_nodes": 9, "num_edges": 2, "num_parts": 2,
           "node_map": [[0, 5], [4, 9]], "edge_map": [[0, 1], [1, 2]]})",
       "contiguous"},
      {R"({"graph_name": "g", "num_nodes": 9, "num_edges": 2, "num_parts": 1, "halo_hops": 1,
           "node_map": [[0, 9]], "edge_map": [[0, 2]], "tessera": {"node_feats": 5},
           "part-0": {"part_graph": "a", "node_feats": "b", "edge_feats": "c"}})",
       "'tessera'.'node_feats' must be a list of array names"},
      {R"({"graph_name": "g", "num_nodes": 9, "num_edges": 2, "num_parts": 1, "halo_hops": 1,
           "node_map": [[0, 9]], "edge_map": [[0, 2]], "tessera": {"node_feats": ["../x"]},
           "part-0": {"part_graph": "a", "node_feats": "b", "edge_feats": "c"}})",
       "has the array name '../x'"},
      {R"({"graph_name": "g", "num_nodes": 9, "num_edges": 2, "num_parts": 1, "halo_hops": 1,
           "node_map": [[0, 9]], "edge_map": [[0, 2]],
           "part-0": {"part_graph": "a/../../b", "node_feats": "b", "edge_feats": "c"}})",
       "'part-0'.'part_graph' = 'a/../../b' leaves the config's folder"},
      // Integers read as int are checked before they are narrowed.
      {R"({"graph_name": "g", "num_nodes": 9, "num_edges": 2, "num_parts": 4294967298,
           "node_map": [[0, 9]], "edge_map": [[0, 2]]})",
       "'num_parts' must be an integer in [1, 1048576], got 4294967298"},
      {R"({"graph_name": "g", "num_nodes": 9, "num_edges": 2, "num_parts": 1,
           "halo_hops": 4294967297, "node_map": [[0, 9]], "edge_map": [[0, 2]]})",
       "'halo_hops' must be an integer in [0, 1024]"},
      {R"({"graph_name": "g", "num_nodes": 9, "num_edges": 2, "num_parts": 1, "halo_hops": 1,
           "node_map": [[0, 9]], "edge_map": [[0, 2]],
           "tessera": {"num_trainers_per_machine": -5},
           "part-0": {"part_graph": "a", "node_feats": "b", "edge_feats": "c"}})",
       "'num_trainers_per_machine' must be an integer in [1, 65536], got -5"},
  };
  for (const auto& [json, reason] : bad) {
    testing::WriteAll(dir / "bad.json", json);
    Status st = ReadPartitionConfig(dir / "bad.json").status();
    ASSERT_FALSE(st.ok()) << json;
    EXPECT_THAT(st.message(), HasSubstr(reason)) << st;
    EXPECT_THAT(st.message(), HasSubstr(dir / "bad.json")) << st;
  }
}

}  // namespace
}  // namespace tessera
