// The heterogeneous npy folder reader (readers.h layout (d)).
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "src/base/test_util.h"
#include "src/graph/array_test_util.h"
#include "src/graph/npy.h"
#include "tessera/base/strings.h"
#include "tessera/graph/readers.h"

namespace tessera {
namespace {

using testing::Values;

using testing::TempDir;
using testing::WriteAll;

std::string MessageOf(const Status& st) { return std::string(st.message()); }

template <typename T>
void Npy(const std::string& path, const std::vector<T>& values) {
  ASSERT_TRUE(WriteNpy(path, Array::From(values)).ok()) << path;
}

// Two node types, two relations:
//
//   author a0 --writes--> paper p0 <--cites-- p1
//          a0 --writes--> p1                   p2 --cites--> p0
//          a1 --writes--> p2
//
// meta.json lists paper (3) before author (2): homogeneous ids p0..p2 = 0..2,
// a0, a1 = 3, 4. writes ids are int32, cites ids int64.
void WriteFixture(const std::string& dir) {
  WriteAll(dir + "/meta.json", R"({"ntypes": {"paper": 3, "author": 2},
      "etypes": ["author:writes:paper", "paper:cites:paper"], "note": "ignored"})");
  ASSERT_TRUE(MakeDirs(dir + "/nodes/paper").ok());
  ASSERT_TRUE(MakeDirs(dir + "/nodes/author").ok());
  ASSERT_TRUE(MakeDirs(dir + "/edges/author__writes__paper").ok());
  ASSERT_TRUE(MakeDirs(dir + "/edges/paper__cites__paper").ok());
  Array feat = Array::Zeros(DType::kFloat32, {3, 2});
  feat.mutable_span<float>()[5] = 2.5f;
  ASSERT_TRUE(WriteNpy(dir + "/nodes/paper/feat.npy", feat).ok());
  Npy<int64_t>(dir + "/nodes/paper/label.npy", {1, 0, 1});
  Npy<int32_t>(dir + "/nodes/author/age.npy", {40, 31});
  Npy<int32_t>(dir + "/edges/author__writes__paper/src.npy", {0, 0, 1});
  Npy<int32_t>(dir + "/edges/author__writes__paper/dst.npy", {0, 1, 2});
  Npy<int16_t>(dir + "/edges/author__writes__paper/order.npy", {1, 2, 1});
  Npy<int64_t>(dir + "/edges/paper__cites__paper/src.npy", {1, 2});
  Npy<int64_t>(dir + "/edges/paper__cites__paper/dst.npy", {0, 0});
}

TEST(ReadTypedNpyDirectory, ReadsTypesIdsAndArrays) {
  TempDir dir;
  WriteFixture(dir.path());
  auto g = ReadGraph(dir.path());  // Auto-detected by meta.json's "ntypes".
  ASSERT_TRUE(g.ok()) << g.status();
  ASSERT_TRUE(g->is_hetero());
  EXPECT_EQ(g->ntypes, (std::vector<std::string>{"paper", "author"}));
  ASSERT_EQ(g->etypes.size(), 2u);
  EXPECT_EQ(g->etypes[0].Canonical(), "author:writes:paper");
  EXPECT_EQ(g->etypes[1].Canonical(), "paper:cites:paper");
  EXPECT_EQ(g->num_nodes, 5);
  EXPECT_EQ(g->ntype_offsets, (std::vector<int64_t>{0, 3, 5}));
  EXPECT_EQ(g->etype_offsets, (std::vector<int64_t>{0, 3, 5}));
  EXPECT_EQ(Values<int64_t>(g->src), (std::vector<int64_t>{3, 3, 4, 1, 2}));
  EXPECT_EQ(Values<int64_t>(g->dst), (std::vector<int64_t>{0, 1, 2, 0, 0}));
  EXPECT_TRUE(g->node_data.empty());
  EXPECT_TRUE(g->edge_data.empty());
  ASSERT_EQ(g->ntype_data.size(), 2u);
  EXPECT_EQ(g->ntype_data[0].at("feat").shape(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(g->ntype_data[0].at("feat").span<float>()[5], 2.5f);
  EXPECT_EQ(Values<int64_t>(g->ntype_data[0].at("label")), (std::vector<int64_t>{1, 0, 1}));
  EXPECT_EQ(Values<int32_t>(g->ntype_data[1].at("age")), (std::vector<int32_t>{40, 31}));
  ASSERT_EQ(g->etype_data.size(), 2u);
  EXPECT_EQ(Values<int16_t>(g->etype_data[0].at("order")), (std::vector<int16_t>{1, 2, 1}));
  EXPECT_TRUE(g->etype_data[1].empty());
  EXPECT_EQ(*g->EdgeTypeId("cites"), 1);
  EXPECT_TRUE(g->Validate("again").ok());
}

// The list form of "ntypes" gives the order too: author first this time.
TEST(ReadTypedNpyDirectory, NtypesAsAListAndTypesWithoutArrays) {
  TempDir dir;
  WriteFixture(dir.path());
  ASSERT_TRUE(RemoveAll(dir / "nodes").ok());
  WriteAll(dir / "meta.json", R"({"ntypes": [{"name": "author", "count": 2},
      {"name": "paper", "count": 3}], "etypes": ["author:writes:paper", "paper:cites:paper"]})");
  ReadOptions options;
  options.format = GraphFormat::kNpy;  // The folder decides between (a) and (d).
  auto g = ReadGraph(dir.path(), options);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->ntypes, (std::vector<std::string>{"author", "paper"}));
  EXPECT_EQ(g->ntype_offsets, (std::vector<int64_t>{0, 2, 5}));
  EXPECT_EQ(Values<int64_t>(g->src), (std::vector<int64_t>{0, 0, 1, 3, 4}));
  EXPECT_EQ(Values<int64_t>(g->dst), (std::vector<int64_t>{2, 3, 4, 2, 2}));
  EXPECT_TRUE(g->ntype_data[0].empty());
}

// Writes the fixture, applies `change`, reads: the error must contain `want`.
template <typename Change>
void ExpectError(Change change, const std::string& want,
                 absl::StatusCode code = absl::StatusCode::kInvalidArgument) {
  TempDir dir;
  WriteFixture(dir.path());
  change(dir);
  Status st = ReadGraph(dir.path()).status();
  EXPECT_EQ(st.code(), code) << st;
  EXPECT_THAT(MessageOf(st), HasSubstr(want)) << "want: " << want << "\ngot: " << st;
}

TEST(ReadTypedNpyDirectory, BadMetaJsonIsNamed) {
  ExpectError(
      [](const TempDir& d) {
        WriteAll(d / "meta.json", R"({"ntypes": {"paper": 3, "author": 2},
            "etypes": ["author:writes:paper", "paper:x:zzz"]})");
      },
      "meta.json: relation 'paper:x:zzz' names node type 'zzz', which meta.json does not list "
      "(node types: paper, author)");
  ExpectError(
      [](const TempDir& d) {
        WriteAll(d / "meta.json", R"({"ntypes": {"../x": 3},
                  "etypes": ["../x:r:../x"]})");
      },
      "meta.json: node type '../x' is not a valid type name");
  ExpectError(
      [](const TempDir& d) {
        WriteAll(d / "meta.json", R"({"ntypes": {"a/b": 3},
                  "etypes": ["x:r:y"]})");
      },
      "node type 'a/b' is not a valid type name");
  ExpectError(
      [](const TempDir& d) {
        WriteAll(d / "meta.json", R"({"ntypes": {"paper": -3},
                  "etypes": ["paper:r:paper"]})");
      },
      "meta.json: the count of node type 'paper' must be an integer in [0, 2^63), got -3");
  ExpectError(
      [](const TempDir& d) {
        WriteAll(d / "meta.json", R"({"ntypes": {"paper": 3},
                  "etypes": []})");
      },
      "\"etypes\" must be a non-empty list");
  ExpectError(
      [](const TempDir& d) {
        WriteAll(d / "meta.json", R"({"ntypes": ["paper"],
                  "etypes": ["paper:r:paper"]})");
      },
      "\"ntypes\" must be an object");
  ExpectError(
      [](const TempDir& d) {
        WriteAll(d / "meta.json", R"({"ntypes": {"paper": 3, "author": 2},
            "etypes": ["author:writes:paper", "paper:cites:paper", "author:writes:paper"]})");
      },
      "relation 'author:writes:paper' appears twice");
  // Two relations whose folders would be the same (a name with "__").
  ExpectError(
      [](const TempDir& d) {
        WriteAll(d / "meta.json", R"({"ntypes": {"a__b": 1, "a": 1, "d": 1},
            "etypes": ["a__b:c:d", "a:b__c:d"]})");
      },
      "relations 'a__b:c:d' and 'a:b__c:d' both have the folder edges/a__b__c__d");
}

TEST(ReadTypedNpyDirectory, BadFoldersAndArraysAreNamed) {
  ExpectError([](const TempDir& d) { ASSERT_TRUE(MakeDirs(d / "edges/paper__likes__paper").ok()); },
              "edges/paper__likes__paper: a folder for a relation that meta.json's \"etypes\" "
              "does not list");
  ExpectError([](const TempDir& d) { ASSERT_TRUE(MakeDirs(d / "nodes/venue").ok()); },
              "nodes/venue: a folder for a node type that meta.json's \"ntypes\" does not list");
  ExpectError(
      [](const TempDir& d) {
        ASSERT_TRUE(RemoveAll(d / "edges/author__writes__paper/src.npy").ok());
      },
      "edges/author__writes__paper/src.npy: missing (relation 'author:writes:paper' needs "
      "src.npy and dst.npy)",
      absl::StatusCode::kNotFound);
  ExpectError(
      [](const TempDir& d) { ASSERT_TRUE(RemoveAll(d / "edges/paper__cites__paper").ok()); },
      "edges/paper__cites__paper: missing (relation 'paper:cites:paper' of meta.json",
      absl::StatusCode::kNotFound);
  ExpectError(
      [](const TempDir& d) {
        Npy<int64_t>(d / "edges/author__writes__paper/dst.npy", {0, 1});
      },
      "edges/author__writes__paper: src.npy has 3 entries but dst.npy has 2");
  ExpectError(
      [](const TempDir& d) {
        Npy<int64_t>(d / "edges/author__writes__paper/dst.npy", {0, 1, 3});
      },
      "edges/author__writes__paper/dst.npy: relation 'author:writes:paper': dst[2] = 3 is out of "
      "range for node type 'paper', which has 3 nodes",
      absl::StatusCode::kOutOfRange);
  ExpectError(
      [](const TempDir& d) {
        Npy<int32_t>(d / "edges/author__writes__paper/src.npy", {0, 2, 1});
      },
      "src.npy: relation 'author:writes:paper': src[1] = 2 is out of range for node type "
      "'author', which has 2 nodes",
      absl::StatusCode::kOutOfRange);
  ExpectError(
      [](const TempDir& d) {
        Npy<int64_t>(d / "edges/paper__cites__paper/src.npy", {1, -2});
      },
      "paper__cites__paper/src.npy: negative id -2 at position 1");
  ExpectError(
      [](const TempDir& d) {
        Npy<float>(d / "edges/paper__cites__paper/src.npy", {1, 2});
      },
      "paper__cites__paper/src.npy: expected an integer array, got float32");
  ExpectError(
      [](const TempDir& d) {
        Npy<int64_t>(d / "nodes/paper/label.npy", {1, 0});
      },
      "nodes/paper/label.npy: is int64[2] but meta.json gives node type 'paper' 3 nodes");
  ExpectError(
      [](const TempDir& d) {
        Npy<int16_t>(d / "edges/author__writes__paper/order.npy", {1, 2});
      },
      "edges/author__writes__paper/order.npy: is int16[2] but relation 'author:writes:paper' "
      "has 3 edges");
  ExpectError(
      [](const TempDir& d) {
        Npy<int32_t>(d / "nodes/author/bad\x01name.npy", {1, 2});
      },
      "nodes/author/bad\x01name.npy: the array name has a control character");
}

// meta.json's counts are claims, checked before anything is read.
TEST(ReadTypedNpyDirectory, ClaimedCountsAreChecked) {
  ExpectError(
      [](const TempDir& d) {
        WriteAll(d / "meta.json", R"({"ntypes": {"paper": 1000000000000, "author": 2},
            "etypes": ["author:writes:paper"]})");
      },
      "meta.json: 1000000000002 nodes would need 7.28 TiB for the graph's CSR offsets",
      absl::StatusCode::kResourceExhausted);
  ExpectError(
      [](const TempDir& d) {
        WriteAll(d / "meta.json", R"({"ntypes": {"paper": 9223372036854775807, "author": 2},
            "etypes": ["author:writes:paper"]})");
      },
      "meta.json: the node type counts add up to more than 2^63");
  TempDir dir;
  WriteFixture(dir.path());
  WriteAll(dir / "meta.json", R"({"ntypes": {"paper": 1000000, "author": 2},
      "etypes": ["author:writes:paper", "paper:cites:paper"]})");
  ReadOptions options;
  options.max_claimed_bytes = 4 << 20;
  Status st = ReadGraph(dir.path(), options).status();
  EXPECT_EQ(st.code(), absl::StatusCode::kResourceExhausted) << st;
  EXPECT_THAT(MessageOf(st), HasSubstr("meta.json: 1000002 nodes would need 7.63 MiB")) << st;
}

TEST(ReadTypedNpyDirectory, TransformationsAreForHomogeneousGraphs) {
  TempDir dir;
  WriteFixture(dir.path());
  ReadOptions options;
  options.add_reverse_edges = true;
  options.remove_duplicate_edges = true;
  Status st = ReadGraph(dir.path(), options).status();
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
  EXPECT_THAT(MessageOf(st),
              HasSubstr("is a heterogeneous graph, but add_reverse_edges (--undirected), "
                        "remove_duplicate_edges (--remove-duplicates) apply to homogeneous "
                        "graphs only"))
      << st;
}

// A homogeneous npy folder with a meta.json (without "ntypes") stays homogeneous.
//
//   0 -> 1 -> 2      meta.json: {"num_nodes": 4}
TEST(ReadTypedNpyDirectory, HomogeneousFoldersAreNotHetero) {
  TempDir dir;
  Npy<int64_t>(dir / "src.npy", {0, 1});
  Npy<int64_t>(dir / "dst.npy", {1, 2});
  WriteAll(dir / "meta.json", R"({"num_nodes": 4})");
  EXPECT_FALSE(IsTypedNpyDirectory(dir.path()));
  auto g = ReadGraph(dir.path());
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_FALSE(g->is_hetero());
  EXPECT_EQ(g->num_nodes, 4);
}

}  // namespace
}  // namespace tessera
