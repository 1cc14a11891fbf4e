// The chunked graph format: `tessera chunk`'s writer, the metadata checks and
// the range readers, on hand-drawn graphs; bad input names the file or key.
#include "src/dist_partition/chunked_graph.h"

#include <filesystem>
#include <functional>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "src/base/test_util.h"
#include "src/graph/array_test_util.h"
#include "src/graph/npy.h"

namespace tessera::dist_partition {
namespace {

using testing::Values;

using testing::TempDir;

template <typename T>
Array Values(std::vector<T> v) {
  return Array::From(v);
}

// 0 -> 1 -> 2 -> 3 -> 4 -> 0, plus 2 -> 0 and 5 -> 2; node 5 has no in-edge.
//
//   0 --> 1 --> 2 --> 3
//   ^     ,-----'     |
//   |<---'     5 -> 2 |
//   '---- 4 <---------'
Graph Ring() {
  Graph g;
  g.num_nodes = 6;
  g.src = Values<int64_t>({0, 1, 2, 3, 4, 2, 5});
  g.dst = Values<int64_t>({1, 2, 3, 4, 0, 0, 2});
  g.node_data["feat"] = Array::Empty(DType::kFloat32, {6, 2});
  auto f = g.node_data["feat"].mutable_span<float>();
  for (int i = 0; i < 12; ++i) f[i] = static_cast<float>(i * 5);
  g.node_data.emplace("label", Values<int64_t>({3, 1, 4, 1, 5, 9}));
  g.edge_data.emplace("w", Values<float>({.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5}));
  return g;
}

// Two node types and two relations:
//   user 0, 1, 2;  item 0, 1
//   user:buys:item    0->0, 1->0, 2->1
//   item:bought:user  0->1, 1->2
Graph Shop() {
  Graph g;
  g.ntypes = {"user", "item"};
  g.ntype_offsets = {0, 3, 5};
  g.etypes = {{"user", "buys", "item"}, {"item", "bought", "user"}};
  g.etype_offsets = {0, 3, 5};
  g.num_nodes = 5;
  g.src = Values<int64_t>({0, 1, 2, 3, 4});
  g.dst = Values<int64_t>({3, 3, 4, 1, 2});
  g.ntype_data.resize(2);
  g.etype_data.resize(2);
  g.ntype_data[0].emplace("age", Values<int32_t>({20, 30, 40}));
  g.ntype_data[1].emplace("price", Values<double>({1.25, 2.5}));
  g.etype_data[1].emplace("when", Values<int64_t>({7, 8}));
  return g;
}

TEST(ChunkedGraph, RoundTripEveryRange) {
  for (bool csv : {true, false}) {
    for (int chunks : {1, 3, 10}) {
      SCOPED_TRACE(::testing::Message() << "csv " << csv << " chunks " << chunks);
      TempDir dir;
      Graph ring = Ring();
      ASSERT_TRUE(WriteChunkedGraph(ring, dir.path(), {chunks, csv, "ring"}).ok());
      auto g = ReadChunkedGraph(dir.path());
      ASSERT_TRUE(g.ok()) << g.status();
      EXPECT_EQ(g->graph_name, "ring");
      EXPECT_EQ(g->ntypes, std::vector<std::string>{"_N"});
      ASSERT_EQ(g->relations.size(), 1u);
      EXPECT_TRUE((g->relations[0].type == EdgeType{"_N", "_E", "_N"}));
      EXPECT_EQ(g->num_nodes(), 6);
      EXPECT_EQ(g->num_edges(), 7);
      ASSERT_EQ(g->node_data[0].size(), 2u);
      EXPECT_EQ(g->node_data[0][0].name, "feat");
      EXPECT_EQ(g->node_data[0][0].row_shape, std::vector<int64_t>{2});
      for (int64_t b = 0; b <= 7; ++b) {
        for (int64_t e = b; e <= 7; ++e) {
          auto slice = ReadEdges(*g, b, e);
          ASSERT_TRUE(slice.ok()) << slice.status();
          EXPECT_EQ(slice->src,
                    std::vector<int64_t>(ring.src_ids().begin() + b, ring.src_ids().begin() + e));
          EXPECT_EQ(slice->dst,
                    std::vector<int64_t>(ring.dst_ids().begin() + b, ring.dst_ids().begin() + e));
          auto w = ReadRows(g->edge_data[0][0], b, e);
          ASSERT_TRUE(w.ok()) << w.status();
          EXPECT_EQ(Values<float>(*w),
                    std::vector<float>(ring.edge_data["w"].span<float>().begin() + b,
                                       ring.edge_data["w"].span<float>().begin() + e));
        }
      }
      auto feat = ReadRows(g->node_data[0][0], 1, 5);
      ASSERT_TRUE(feat.ok());
      EXPECT_EQ(feat->shape(), (std::vector<int64_t>{4, 2}));
      EXPECT_EQ(Values<float>(*feat), (std::vector<float>{10, 15, 20, 25, 30, 35, 40, 45}));
    }
  }
}

TEST(ChunkedGraph, TypedRoundTrip) {
  TempDir dir;
  ASSERT_TRUE(WriteChunkedGraph(Shop(), dir.path(), {2, true, "shop"}).ok());
  auto g = ReadChunkedGraph(dir / "metadata.json");
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->ntypes, (std::vector<std::string>{"user", "item"}));
  EXPECT_EQ(g->ntype_offsets, (std::vector<int64_t>{0, 3, 5}));
  EXPECT_EQ(g->etype_offsets, (std::vector<int64_t>{0, 3, 5}));
  EXPECT_EQ(g->NodeTypeOf(2), 0);
  EXPECT_EQ(g->NodeTypeOf(3), 1);
  EXPECT_EQ(g->RelationOf(3), 1);
  auto all = ReadEdges(*g, 0, 5);
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(all->src, (std::vector<int64_t>{0, 1, 2, 3, 4}));  // Homogeneous ids again.
  EXPECT_EQ(all->dst, (std::vector<int64_t>{3, 3, 4, 1, 2}));
  ASSERT_EQ(g->node_data[1].size(), 1u);
  auto price = ReadRows(g->node_data[1][0], 0, 2);
  ASSERT_TRUE(price.ok());
  EXPECT_EQ(Values<double>(*price), (std::vector<double>{1.25, 2.5}));
  auto when = ReadRows(g->edge_data[1][0], 1, 2);
  ASSERT_TRUE(when.ok());
  EXPECT_EQ(Values<int64_t>(*when), std::vector<int64_t>{8});
  // DGL's key names, including the undocumented totals.
  auto meta = nlohmann::json::parse(testing::ReadAll(dir / "metadata.json"));
  EXPECT_EQ(meta["num_nodes_per_type"], nlohmann::json({3, 2}));
  EXPECT_EQ(meta["num_edges_per_chunk"], nlohmann::json({{2, 1}, {1, 1}}));
  EXPECT_EQ(meta["edges"]["user:buys:item"]["format"]["name"], "csv");
}

// Writes the ring in 2 CSV chunks, applies `edit` to the metadata, and
// returns ReadChunkedGraph's status, or ReadEdges' over every edge.
Status Tampered(const std::function<void(nlohmann::json&, const std::string&)>& edit) {
  TempDir dir;
  if (!WriteChunkedGraph(Ring(), dir.path(), {2, true, "ring"}).ok()) {
    return absl::InternalError("write");
  }
  auto meta = nlohmann::json::parse(testing::ReadAll(dir / "metadata.json"));
  edit(meta, dir.path());
  testing::WriteAll(dir / "metadata.json", meta.dump());
  auto g = ReadChunkedGraph(dir.path());
  if (!g.ok()) return g.status();
  auto edges = ReadEdges(*g, 0, g->num_edges());
  if (!edges.ok()) return edges.status();
  for (const auto& arrays : g->node_data) {
    for (const auto& a : arrays) RETURN_IF_ERROR(ReadRows(a, 0, a.rows()).status());
  }
  return absl::OkStatus();
}

void ExpectError(const Status& st, const std::vector<std::string>& parts) {
  ASSERT_FALSE(st.ok());
  for (const auto& part : parts) {
    EXPECT_THAT(st.message(), HasSubstr(part)) << st.message() << "\n  lacks: " << part;
  }
}

TEST(ChunkedGraph, BadInputNamesTheFileOrKey) {
  auto none = [](nlohmann::json&, const std::string&) {};
  EXPECT_TRUE(Tampered(none).ok());
  // A missing chunk.
  ExpectError(Tampered([](nlohmann::json&, const std::string& dir) {
                std::filesystem::remove(dir + "/edges/_N:_E:_N-1.txt");
              }),
              {"edges/_N:_E:_N-1.txt: missing", "edges[\"_N:_E:_N\"].data[1]"});
  ExpectError(Tampered([](nlohmann::json&, const std::string& dir) {
                std::filesystem::remove(dir + "/node_data/_N/label-0.npy");
              }),
              {"node_data/_N/label-0.npy: missing"});
  // A truncated CSV chunk, and one with extra lines.
  ExpectError(Tampered([](nlohmann::json&, const std::string& dir) {
                testing::WriteAll(dir + "/edges/_N:_E:_N-0.txt", "0 1\n1 2\n");
              }),
              {"edges/_N:_E:_N-0.txt: holds 2 edges but the metadata says 4"});
  ExpectError(Tampered([](nlohmann::json&, const std::string& dir) {
                testing::WriteAll(dir + "/edges/_N:_E:_N-1.txt", "4 0\n2 0\n5 2\n1 1\n");
              }),
              {"_N:_E:_N-1.txt: holds 4 edges but the metadata says 3"});
  // A truncated .npy chunk.
  ExpectError(Tampered([](nlohmann::json&, const std::string& dir) {
                std::filesystem::resize_file(dir + "/node_data/_N/feat-1.npy", 140);
              }),
              {"node_data/_N/feat-1.npy"});
  // Counts that disagree with each other or with the chunks.
  ExpectError(
      Tampered([](nlohmann::json& m, const std::string&) { m["num_nodes_per_type"] = {7}; }),
      {"metadata.json: num_nodes_per_type[0]: is 7 but num_nodes_per_chunk[0] adds up to 6"});
  ExpectError(Tampered([](nlohmann::json& m, const std::string&) {
                m["num_nodes_per_chunk"] = {{3, 4}};
                m.erase("num_nodes_per_type");
              }),
              {"node_data[\"_N\"][\"feat\"]: its chunks hold 6 rows but the type has 7"});
  ExpectError(Tampered([](nlohmann::json& m, const std::string&) {
                m["num_edges_per_chunk"] = {{4, 3, 0}};
                m.erase("num_edges_per_type");
              }),
              {"lists 2 files but num_edges_per_chunk[0] has 3 chunks"});
  // Ids outside their type, formats, keys.
  ExpectError(Tampered([](nlohmann::json&, const std::string& dir) {
                testing::WriteAll(dir + "/edges/_N:_E:_N-1.txt", "4 0\n2 6\n5 2\n");
              }),
              {"_N:_E:_N-1.txt: edge 1 (2 -> 6) has an id outside its node type"});
  ExpectError(Tampered([](nlohmann::json&, const std::string& dir) {
                testing::WriteAll(dir + "/edges/_N:_E:_N-1.txt", "4 0\n2 x\n5 2\n");
              }),
              {"_N:_E:_N-1.txt:2: expected two integer ids"});
  ExpectError(Tampered([](nlohmann::json& m, const std::string&) {
                m["edges"]["_N:_E:_N"]["format"]["name"] = "parquet";
              }),
              {"format 'parquet' is not supported"});
  ExpectError(Tampered([](nlohmann::json& m, const std::string&) { m.erase("edge_type"); }),
              {"metadata.json: metadata: has no \"edge_type\""});
  ExpectError(Tampered([](nlohmann::json& m, const std::string&) {
                m["node_data"]["paper"] = m["node_data"]["_N"];
              }),
              {"node_data: type 'paper' is not in node_type"});
  ExpectError(ReadChunkedGraph("/nonexistent/dir").status(), {"metadata.json: missing"});
  // Counts whose sum would wrap int64 (2^62 + 2^62 + ...) are refused.
  ExpectError(Tampered([](nlohmann::json& m, const std::string&) {
                const int64_t big = int64_t{1} << 62;
                m["num_nodes_per_chunk"] = {{big, big, big, big + 6}};
                m.erase("num_nodes_per_type");
              }),
              {"num_nodes_per_chunk: adds up to more than 2^62 (at num_nodes_per_chunk[0][1])"});
}

// A CSV chunk claiming 2^40 edges: reading it gives the count's error (no
// allocation sized by the claim).
TEST(ChunkedGraph, ClaimedEdgeCountsSizeNoAllocation) {
  TempDir dir;
  ASSERT_TRUE(WriteChunkedGraph(Ring(), dir.path(), {2, true, "ring"}).ok());
  const std::string path = dir / "metadata.json";
  auto meta = nlohmann::json::parse(testing::ReadAll(path));
  const int64_t big = int64_t{1} << 40;
  meta["num_edges_per_chunk"] = {{big, big}};
  meta.erase("num_edges_per_type");
  meta["edge_data"] = nlohmann::json::object();  // Only the counts claim the edges.
  testing::WriteAll(path, meta.dump());
  auto g = ReadChunkedGraph(dir.path());
  ASSERT_TRUE(g.ok()) << g.status();
  ExpectError(ReadEdges(*g, 0, g->num_edges()).status(),
              {"_N:_E:_N-0.txt: holds 4 edges but the metadata says 1099511627776"});
}

TEST(ChunkedGraph, NumpyEdgeChunksAreChecked) {
  TempDir dir;
  ASSERT_TRUE(WriteChunkedGraph(Ring(), dir.path(), {2, false, "ring"}).ok());
  ASSERT_TRUE(WriteNpy(dir / "edges/_N:_E:_N-1.npy", Values<int64_t>({4, 0, 2, 0})).ok());
  ExpectError(ReadChunkedGraph(dir.path()).status(),
              {"edges/_N:_E:_N-1.npy: holds int64[4] but", "shape [3, 2]"});
}

}  // namespace
}  // namespace tessera::dist_partition
