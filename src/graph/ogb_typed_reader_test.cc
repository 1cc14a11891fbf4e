// The OGB heterogeneous layout reader (readers.h layout (e), ogbn-mag).
#include <zlib.h>

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "src/base/test_util.h"
#include "src/graph/array_test_util.h"
#include "tessera/base/strings.h"
#include "tessera/graph/readers.h"

namespace tessera {
namespace {

using testing::Values;
using testing::WriteGz;

using testing::TempDir;

std::string MessageOf(const Status& st) { return std::string(st.message()); }

// Like ogbn-mag, with two authors and three papers:
//
//   author a0 --writes--> paper p0 <--cites-- p1
//          a0 --writes--> p1                   p2 --cites--> p0
//          a1 --writes--> p2
//
// num-node-dict lists author first: homogeneous ids a0, a1 = 0, 1 and
// p0..p2 = 2..4. Relations in folder order: writes, then cites.
void WriteFixture(const std::string& dir) {
  for (const char* sub :
       {"raw/relations/author___writes___paper", "raw/relations/paper___cites___paper",
        "raw/node-feat/paper", "raw/node-label/paper", "raw/node_year/paper", "split/time/paper"}) {
    ASSERT_TRUE(MakeDirs(dir + "/" + sub).ok());
  }
  WriteGz(dir + "/raw/num-node-dict.csv.gz", "author,paper\n2,3\n");
  WriteGz(dir + "/raw/relations/author___writes___paper/edge.csv.gz", "0,0\n0,1\n1,2\n");
  WriteGz(dir + "/raw/relations/author___writes___paper/num-edge-list.csv.gz", "3\n");
  WriteGz(dir + "/raw/relations/author___writes___paper/edge_reltype.csv.gz", "0\n0\n0\n");
  WriteGz(dir + "/raw/relations/paper___cites___paper/edge.csv.gz", "1,0\n2,0\n");
  WriteGz(dir + "/raw/node-feat/paper/node-feat.csv.gz", "0.5,1\n2,3\n4,5.5\n");
  WriteGz(dir + "/raw/node-label/paper/node-label.csv.gz", "1\n0\n1\n");
  WriteGz(dir + "/raw/node_year/paper/node_year.csv.gz", "2010\n2011\n2012\n");
  WriteGz(dir + "/split/time/paper/train.csv.gz", "0\n2\n");
  WriteGz(dir + "/split/time/paper/valid.csv.gz", "1\n");
  WriteGz(dir + "/split/time/paper/test.csv.gz", "");
}

TEST(ReadOgbTyped, ReadsTypesRelationsArraysAndTheSplit) {
  TempDir dir;
  WriteFixture(dir.path());
  auto g = ReadGraph(dir.path());  // Auto-detected by raw/num-node-dict.csv.gz.
  ASSERT_TRUE(g.ok()) << g.status();
  ASSERT_TRUE(g->is_hetero());
  EXPECT_EQ(g->ntypes, (std::vector<std::string>{"author", "paper"}));
  ASSERT_EQ(g->etypes.size(), 2u);
  EXPECT_EQ(g->etypes[0].Canonical(), "author:writes:paper");
  EXPECT_EQ(g->etypes[1].Canonical(), "paper:cites:paper");
  EXPECT_EQ(g->ntype_offsets, (std::vector<int64_t>{0, 2, 5}));
  EXPECT_EQ(g->etype_offsets, (std::vector<int64_t>{0, 3, 5}));
  EXPECT_EQ(Values<int64_t>(g->src), (std::vector<int64_t>{0, 0, 1, 3, 4}));
  EXPECT_EQ(Values<int64_t>(g->dst), (std::vector<int64_t>{2, 3, 4, 2, 2}));
  EXPECT_TRUE(g->ntype_data[0].empty());
  const auto& paper = g->ntype_data[1];
  EXPECT_EQ(paper.at("feat").shape(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(Values<float>(paper.at("feat")), (std::vector<float>{0.5f, 1, 2, 3, 4, 5.5f}));
  EXPECT_EQ(Values<int64_t>(paper.at("label")), (std::vector<int64_t>{1, 0, 1}));
  EXPECT_EQ(Values<int64_t>(paper.at("year")), (std::vector<int64_t>{2010, 2011, 2012}));
  EXPECT_EQ(Values<bool>(paper.at("train_mask")), (std::vector<bool>{true, false, true}));
  EXPECT_EQ(Values<bool>(paper.at("val_mask")), (std::vector<bool>{false, true, false}));
  EXPECT_EQ(Values<bool>(paper.at("test_mask")), (std::vector<bool>{false, false, false}));
  EXPECT_TRUE(g->etype_data[0].empty());
}

// Writes the fixture, applies `change`, reads: the error must contain `want`.
template <typename Change>
void ExpectError(Change change, const std::string& want,
                 absl::StatusCode code = absl::StatusCode::kInvalidArgument,
                 const ReadOptions& options = {}) {
  TempDir dir;
  WriteFixture(dir.path());
  change(dir);
  Status st = ReadGraph(dir.path(), options).status();
  EXPECT_EQ(st.code(), code) << st;
  EXPECT_THAT(MessageOf(st), HasSubstr(want)) << "want: " << want << "\ngot: " << st;
}

TEST(ReadOgbTyped, BadRelationsAreNamed) {
  ExpectError(
      [](const TempDir& d) {
        ASSERT_TRUE(MakeDirs(d / "raw/relations/paper___x___zzz").ok());
        WriteGz(d / "raw/relations/paper___x___zzz/edge.csv.gz", "0,0\n");
      },
      "raw/relations/paper___x___zzz: relation 'paper:x:zzz' names node type 'zzz', which "
      "num-node-dict.csv.gz does not list (node types: author, paper)");
  ExpectError(
      [](const TempDir& d) { ASSERT_TRUE(MakeDirs(d / "raw/relations/paper__cites").ok()); },
      "raw/relations/paper__cites: expected a relation folder named <src>___<rel>___<dst>");
  ExpectError(
      [](const TempDir& d) {
        WriteGz(d / "raw/relations/paper___cites___paper/edge.csv.gz", "1,0\n2,3\n");
      },
      "paper___cites___paper/edge.csv.gz:2: relation 'paper:cites:paper': destination id 3 is "
      "out of range for node type 'paper', which has 3 nodes");
  ExpectError(
      [](const TempDir& d) {
        WriteGz(d / "raw/relations/author___writes___paper/edge.csv.gz", "0,0\n2,1\n");
      },
      "author___writes___paper/edge.csv.gz:2: relation 'author:writes:paper': source id 2 is "
      "out of range for node type 'author', which has 2 nodes");
  ExpectError(
      [](const TempDir& d) {
        WriteGz(d / "raw/relations/author___writes___paper/num-edge-list.csv.gz", "4\n");
      },
      "author___writes___paper/num-edge-list.csv.gz: expected one line with the edge count of "
      "edge.csv.gz (3)");
  ExpectError(
      [](const TempDir& d) {
        WriteGz(d / "raw/relations/paper___cites___paper/edge.csv.gz", "1,0,0.5\n");
      },
      "paper___cites___paper/edge.csv.gz: expected 2 columns (src, dst), got 3");
  ExpectError(
      [](const TempDir& d) {
        ASSERT_TRUE(RemoveAll(d / "raw/relations/paper___cites___paper/edge.csv.gz").ok());
      },
      "paper___cites___paper/edge.csv.gz: missing", absl::StatusCode::kNotFound);
  ExpectError(
      [](const TempDir& d) {
        WriteGz(d / "raw/relations/paper___cites___paper/edge.csv.gz", "1,x\n");
      },
      "paper___cites___paper/edge.csv.gz:1: expected src, dst");
  ExpectError([](const TempDir& d) { ASSERT_TRUE(RemoveAll(d / "raw/relations").ok()); },
              "raw/relations: no relation folders", absl::StatusCode::kNotFound);
}

TEST(ReadOgbTyped, BadNodeDictArraysAndSplitsAreNamed) {
  ExpectError(
      [](const TempDir& d) { WriteGz(d / "raw/num-node-dict.csv.gz", "author,paper\n2\n"); },
      "num-node-dict.csv.gz: 2 node type names but 1 counts");
  ExpectError([](const TempDir& d) { WriteGz(d / "raw/num-node-dict.csv.gz", "author,paper\n"); },
              "num-node-dict.csv.gz: expected two lines: node type names, then their counts");
  ExpectError(
      [](const TempDir& d) { WriteGz(d / "raw/num-node-dict.csv.gz", "author,paper\n2,-3\n"); },
      "num-node-dict.csv.gz: the count of node type 'paper' must be a non-negative integer, got "
      "'-3'");
  ExpectError(
      [](const TempDir& d) { WriteGz(d / "raw/num-node-dict.csv.gz", "author,a:b\n2,3\n"); },
      "num-node-dict.csv.gz: node type 'a:b' is not a valid type name");
  ExpectError(
      [](const TempDir& d) { WriteGz(d / "raw/node-feat/paper/node-feat.csv.gz", "1,2\n3,4\n"); },
      "node-feat/paper/node-feat.csv.gz: has 2 lines but the graph has 3 nodes");
  ExpectError(
      [](const TempDir& d) {
        ASSERT_TRUE(MakeDirs(d / "raw/node-label/venue").ok());
        WriteGz(d / "raw/node-label/venue/node-label.csv.gz", "1\n");
      },
      "raw/node-label/venue: node type 'venue' is not listed in num-node-dict.csv.gz");
  ExpectError([](const TempDir& d) { WriteGz(d / "split/time/paper/test.csv.gz", "3\n"); },
              "split/time/paper/test.csv.gz:1: node id 3 is out of range [0, 3)",
              absl::StatusCode::kOutOfRange);
  ExpectError(
      [](const TempDir& d) { ASSERT_TRUE(RemoveAll(d / "split/time/paper/valid.csv.gz").ok()); },
      "split/time/paper/valid.csv.gz: missing", absl::StatusCode::kNotFound);
  ExpectError([](const TempDir& d) { ASSERT_TRUE(MakeDirs(d / "split/random/paper").ok()); },
              "several splits (random, time); choose one with --split");
  ReadOptions options;
  options.split = "public";
  ExpectError([](const TempDir&) {}, "split/public: no such split (have: time)",
              absl::StatusCode::kNotFound, options);
  options = {};
  options.remove_self_loops = true;
  ExpectError([](const TempDir&) {}, "is a heterogeneous graph, but remove_self_loops",
              absl::StatusCode::kInvalidArgument, options);
}

// The counts of num-node-dict are claims: checked before anything is read.
TEST(ReadOgbTyped, ClaimedCountsAreChecked) {
  ExpectError(
      [](const TempDir& d) {
        WriteGz(d / "raw/num-node-dict.csv.gz", "author,paper\n2,1000000000000\n");
      },
      "num-node-dict.csv.gz: 1000000000002 nodes would need 7.28 TiB for the graph's CSR offsets",
      absl::StatusCode::kResourceExhausted);
  ReadOptions options;
  options.max_claimed_bytes = 4 << 20;
  ExpectError(
      [](const TempDir& d) {
        WriteGz(d / "raw/num-node-dict.csv.gz", "author,paper\n2,1000000\n");
      },
      "num-node-dict.csv.gz: 1000002 nodes would need 7.63 MiB",
      absl::StatusCode::kResourceExhausted, options);
}

}  // namespace
}  // namespace tessera
