#include "tessera/graph/readers.h"

#include <sys/stat.h>
#include <zlib.h>

#include "gtest/gtest.h"
#include "src/base/test_util.h"
#include "src/graph/array_test_util.h"
#include "src/graph/npy.h"
#include "tessera/base/resource.h"
#include "tessera/base/strings.h"

namespace tessera {
namespace {

using testing::WriteGz;

using testing::TempDir;
using testing::TestDataDir;
using testing::WriteAll;

std::string MessageOf(const Status& st) { return std::string(st.message()); }

// 3 nodes: 0 -> 1, 1 -> 2, 2 -> 0 (int32 ids), a feature, a mask, an edge weight.
void WriteNpyGraph(const std::string& dir) {
  ASSERT_TRUE(WriteNpy(dir + "/src.npy", Array::From(std::vector<int32_t>{0, 1, 2})).ok());
  ASSERT_TRUE(WriteNpy(dir + "/dst.npy", Array::From(std::vector<int32_t>{1, 2, 0})).ok());
  Array feat = Array::Zeros(DType::kFloat32, {3, 2});
  feat.mutable_span<float>()[5] = 1.5f;
  ASSERT_TRUE(WriteNpy(dir + "/feat.npy", feat).ok());
  ASSERT_TRUE(WriteNpy(dir + "/train_mask.npy", Array::From(std::vector<uint8_t>{1, 0, 1})).ok());
  ASSERT_TRUE(MakeDirs(dir + "/edge_feat").ok());
  ASSERT_TRUE(
      WriteNpy(dir + "/edge_feat/w.npy", Array::From(std::vector<double>{.5, .25, 1})).ok());
}

TEST(ReadNpyDirectory, ReadsIdsArraysAndEdgeArrays) {
  TempDir dir;
  WriteNpyGraph(dir.path());
  auto g = ReadGraph(dir.path());
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->num_nodes, 3);
  EXPECT_EQ(g->num_edges(), 3);
  EXPECT_EQ(g->src.dtype(), DType::kInt64);
  EXPECT_EQ(g->dst_ids()[2], 0);
  EXPECT_EQ(g->node_data.at("feat").span<float>()[5], 1.5f);
  EXPECT_EQ(g->node_data.at("train_mask").dtype(), DType::kUInt8);
  EXPECT_EQ(g->edge_data.at("w").span<double>()[1], .25);
}

TEST(ReadNpyDirectory, NumNodesFromMetaCoversIsolatedNodes) {
  TempDir dir;
  ASSERT_TRUE(WriteNpy(dir / "src.npy", Array::From(std::vector<int64_t>{0})).ok());
  ASSERT_TRUE(WriteNpy(dir / "dst.npy", Array::From(std::vector<int64_t>{1})).ok());
  WriteAll(dir / "meta.json", R"({"num_nodes": 10})");
  auto g = ReadNpyDirectory(dir.path());
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->num_nodes, 10);
}

TEST(ReadNpyDirectory, BadInputIsNamed) {
  {
    TempDir dir;
    WriteNpyGraph(dir.path());
    ASSERT_TRUE(RemoveAll(dir / "dst.npy").ok());
    Status st = ReadGraph(dir.path()).status();
    EXPECT_EQ(st.code(), absl::StatusCode::kNotFound);
    EXPECT_THAT(MessageOf(st), HasSubstr(dir / "dst.npy")) << st;
  }
  {  // Floating-point ids.
    TempDir dir;
    WriteNpyGraph(dir.path());
    ASSERT_TRUE(WriteNpy(dir / "src.npy", Array::From(std::vector<float>{0, 1, 2})).ok());
    Status st = ReadGraph(dir.path()).status();
    EXPECT_THAT(MessageOf(st), HasSubstr("src.npy: expected an integer array, got float32")) << st;
  }
  {  // Mismatched src/dst lengths.
    TempDir dir;
    WriteNpyGraph(dir.path());
    ASSERT_TRUE(WriteNpy(dir / "dst.npy", Array::From(std::vector<int64_t>{1, 2})).ok());
    EXPECT_THAT(MessageOf(ReadGraph(dir.path()).status()),
                HasSubstr("src.npy has 3 entries but dst.npy has 2"));
  }
  {  // An id beyond the node arrays.
    TempDir dir;
    WriteNpyGraph(dir.path());
    ASSERT_TRUE(WriteNpy(dir / "dst.npy", Array::From(std::vector<int64_t>{1, 7, 0})).ok());
    Status st = ReadGraph(dir.path()).status();
    EXPECT_EQ(st.code(), absl::StatusCode::kOutOfRange);
    EXPECT_THAT(MessageOf(st), HasSubstr("dst[1] = 7 is out of range [0, 3)")) << st;
  }
  {  // Node arrays that disagree on the node count.
    TempDir dir;
    WriteNpyGraph(dir.path());
    ASSERT_TRUE(WriteNpy(dir / "label.npy", Array::From(std::vector<int64_t>{1, 2})).ok());
    Status st = ReadGraph(dir.path()).status();
    EXPECT_THAT(MessageOf(st), HasSubstr("label.npy: has 2 rows but")) << st;
  }
  {  // An edge array of the wrong length.
    TempDir dir;
    WriteNpyGraph(dir.path());
    ASSERT_TRUE(WriteNpy(dir / "edge_feat/w.npy", Array::From(std::vector<double>{1})).ok());
    EXPECT_THAT(MessageOf(ReadGraph(dir.path()).status()), HasSubstr("edge_feat/w.npy"));
  }
  {  // A truncated feature file.
    TempDir dir;
    WriteNpyGraph(dir.path());
    std::string bytes = testing::ReadAll(dir / "feat.npy");
    WriteAll(dir / "feat.npy", bytes.substr(0, bytes.size() - 5));
    Status st = ReadGraph(dir.path()).status();
    EXPECT_THAT(MessageOf(st), HasSubstr("feat.npy: truncated")) << st;
  }
  {  // Not a graph folder at all.
    TempDir dir;
    EXPECT_THAT(MessageOf(ReadGraph(dir.path()).status()), HasSubstr("not a graph directory"));
  }
}

TEST(ReadEdgeList, CsvTsvHeaderCommentsWeightsAndGzip) {
  TempDir dir;
  WriteAll(dir / "a.csv", "# a comment\nsrc,dst\n0,1\n1,2\n\n# another\n2,0\n");
  auto g = ReadGraph(dir / "a.csv");
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->num_nodes, 3);
  EXPECT_EQ(g->num_edges(), 3);
  EXPECT_TRUE(g->edge_data.empty());

  WriteAll(dir / "b.tsv", "0\t4\t0.5\r\n4\t1\t2\r\n");
  auto t = ReadEdgeList(dir / "b.tsv");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->num_nodes, 5);
  EXPECT_EQ(t->edge_data.at("weight").span<float>()[1], 2.0f);

  WriteGz(dir / "c.txt.gz", "0 1\n1   2\n");
  auto z = ReadGraph(dir / "c.txt.gz");
  ASSERT_TRUE(z.ok()) << z.status();
  EXPECT_EQ(z->dst_ids()[1], 2);
}

TEST(ReadEdgeList, MalformedLinesReportTheLineNumber) {
  TempDir dir;
  WriteAll(dir / "bad.csv", "0,1\n1,2\n2,x\n");
  Status st = ReadEdgeList(dir / "bad.csv").status();
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(MessageOf(st), HasSubstr(dir / "bad.csv:3:")) << st;
  WriteAll(dir / "cols.csv", "0,1\n1,2,3\n");
  EXPECT_THAT(MessageOf(ReadEdgeList(dir / "cols.csv").status()), HasSubstr("cols.csv:2:"));
  WriteAll(dir / "neg.csv", "0,-1\n");
  EXPECT_THAT(MessageOf(ReadEdgeList(dir / "neg.csv").status()), HasSubstr("negative node id"));
  WriteAll(dir / "empty.csv", "# nothing\n");
  EXPECT_THAT(MessageOf(ReadEdgeList(dir / "empty.csv").status()), HasSubstr("contains no edges"));
}

// A FIFO (or device) in place of a text input is refused at once, as every
// input is: opening it must not wait for a writer.
TEST(ReadEdgeList, AFifoIsRefusedNotWaitedOn) {
  TempDir dir;
  ASSERT_EQ(::mkfifo((dir / "edges.csv").c_str(), 0600), 0);
  Status st = ReadEdgeList(dir / "edges.csv").status();
  EXPECT_THAT(MessageOf(st), HasSubstr("edges.csv is not a regular file")) << st;
  ASSERT_EQ(::mkfifo((dir / "edges.csv.gz").c_str(), 0600), 0);
  st = ReadEdgeList(dir / "edges.csv.gz").status();
  EXPECT_THAT(MessageOf(st), HasSubstr("edges.csv.gz is not a regular file")) << st;
}

TEST(ReadEdgeList, CorruptOrTruncatedGzipIsAnError) {
  TempDir dir;
  std::string text;
  for (int i = 0; i < 20000; ++i) text += std::to_string(i) + "," + std::to_string(i + 1) + "\n";
  WriteGz(dir / "good.csv.gz", text);
  std::string bytes = testing::ReadAll(dir / "good.csv.gz");
  WriteAll(dir / "truncated.csv.gz", bytes.substr(0, bytes.size() / 2));
  Status st = ReadEdgeList(dir / "truncated.csv.gz").status();
  EXPECT_EQ(st.code(), absl::StatusCode::kDataLoss) << st;
  EXPECT_THAT(MessageOf(st), HasSubstr("truncated.csv.gz: corrupt or truncated gzip"));
  std::string corrupt = bytes;
  for (size_t i = 40; i < 200; ++i) corrupt[i] = static_cast<char>(corrupt[i] ^ 0x5a);
  WriteAll(dir / "corrupt.csv.gz", corrupt);
  EXPECT_FALSE(ReadEdgeList(dir / "corrupt.csv.gz").ok());
}

TEST(ReadOgb, Cora) {
  auto g = ReadGraph(TestDataDir() + "/cora");
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->num_nodes, 2708);
  EXPECT_EQ(g->num_edges(), 10556);
  EXPECT_EQ(g->node_data.at("feat").shape(), (std::vector<int64_t>{2708, 1433}));
  auto feat = g->node_data.at("feat").span<float>();
  double nnz = 0;
  for (float x : feat) nnz += x;
  EXPECT_EQ(nnz, 49216);  // metadata.json feature_nnz (binary features).
  auto label = g->node_data.at("label").span<int64_t>();
  std::vector<int> counts(7);
  for (int64_t l : label) ++counts.at(l);
  EXPECT_EQ(counts, (std::vector<int>{351, 217, 418, 818, 426, 298, 180}));
  auto count = [&](const char* name) {
    int n = 0;
    for (bool b : g->node_data.at(name).span<bool>()) n += b;
    return n;
  };
  EXPECT_EQ(count("train_mask"), 140);
  EXPECT_EQ(count("val_mask"), 500);
  EXPECT_EQ(count("test_mask"), 1000);
}

TEST(ReadOgb, CiteSeerSplitsAndTransforms) {
  ReadOptions options;
  options.split = "geom-gcn-4";
  options.remove_self_loops = true;
  auto g = ReadGraph(TestDataDir() + "/citeseer", options);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->num_nodes, 3327);
  EXPECT_EQ(g->num_edges(), 9228 - 124);  // metadata: 124 self loops.
  int train = 0;
  for (bool b : g->node_data.at("train_mask").span<bool>()) train += b;
  EXPECT_EQ(train, 1017);
  options.split = "no-such-split";
  Status st = ReadGraph(TestDataDir() + "/citeseer", options).status();
  EXPECT_EQ(st.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(MessageOf(st), HasSubstr("geom-gcn-0"));  // Lists the splits it has.
}

TEST(ReadOgb, ChoosesTheOnlySplitOrAsks) {
  TempDir dir;
  ASSERT_TRUE(MakeDirs(dir / "raw").ok());
  WriteGz(dir / "raw/num-node-list.csv.gz", "4\n");
  WriteGz(dir / "raw/edge.csv.gz", "0,1\n2,3\n");
  WriteGz(dir / "raw/node-label.csv.gz", "0\nnan\n1\n1\n");
  for (const char* split : {"a", "b"}) {
    ASSERT_TRUE(MakeDirs(dir / "split/" + split).ok());
    for (const char* f : {"train", "valid", "test"}) {
      WriteGz(dir / "split/" + split + "/" + f + ".csv.gz",
              std::string(split) == "a" ? "0\n" : "3\n");
    }
  }
  EXPECT_THAT(MessageOf(ReadOgb(dir.path()).status()), HasSubstr("several splits (a, b)"));
  ASSERT_TRUE(RemoveAll(dir / "split/b").ok());
  auto g = ReadOgb(dir.path());
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_TRUE(g->node_data.at("train_mask").span<bool>()[0]);
  EXPECT_EQ(g->node_data.at("label").span<int64_t>()[1], -1);  // NaN label.
  WriteGz(dir / "split/a/test.csv.gz", "9\n");
  Status st = ReadOgb(dir.path()).status();
  EXPECT_THAT(MessageOf(st), HasSubstr("test.csv.gz:1: node id 9 is out of range")) << st;
}

// Found by fuzz/text_readers_fuzz.cc: a label that parses as a float but is
// NaN, infinite or beyond int64 was cast to int64 (undefined behaviour).
TEST(ReadOgb, LabelsMustBeIntegers) {
  TempDir dir;
  ASSERT_TRUE(MakeDirs(dir / "raw").ok());
  WriteGz(dir / "raw/num-node-list.csv.gz", "2\n");
  WriteGz(dir / "raw/edge.csv.gz", "0,1\n");
  WriteGz(dir / "raw/node-label.csv.gz", "3.0\n-2\n");
  auto g = ReadOgb(dir.path());
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->node_data.at("label").span<int64_t>()[0], 3);
  for (const char* bad : {"-nan", "inf", "1e30", "2.5"}) {
    WriteGz(dir / "raw/node-label.csv.gz", std::string("1\n") + bad + "\n");
    Status st = ReadOgb(dir.path()).status();
    EXPECT_THAT(MessageOf(st), HasSubstr("node-label.csv.gz:2: value 1 '" + std::string(bad) +
                                         "' is not a number"))
        << st;
  }
}

// Found while reviewing fuzz/text_readers_fuzz.cc: max id + 1 overflowed.
TEST(ReadEdgeList, TheLargestIdIsAnErrorNotAnOverflow) {
  TempDir dir;
  WriteAll(dir / "max.csv", "0 9223372036854775807\n");
  Status st = ReadEdgeList(dir / "max.csv").status();
  EXPECT_THAT(MessageOf(st), HasSubstr("node id 9223372036854775807 is too large")) << st;
}

// Found by fuzz/text_readers_fuzz.cc: node-label was allocated for the node
// count num-node-list claims before a line was read (here 640 GB). It is now
// refused before anything is read; with a count that fits, the lines decide.
TEST(ReadOgb, AHugeNodeCountIsCheckedAgainstTheLinesNotAllocated) {
  TempDir dir;
  ASSERT_TRUE(MakeDirs(dir / "raw").ok());
  WriteGz(dir / "raw/num-node-list.csv.gz", "85603363343\n");
  WriteGz(dir / "raw/edge.csv.gz", "0,1\n");
  WriteGz(dir / "raw/node-label.csv.gz", "0\n1\n");
  Status st = ReadOgb(dir.path()).status();
  EXPECT_EQ(st.code(), absl::StatusCode::kResourceExhausted) << st;
  EXPECT_THAT(MessageOf(st),
              HasSubstr("num-node-list.csv.gz: 85603363343 nodes would need 637.79 GiB"))
      << st;
  WriteGz(dir / "raw/num-node-list.csv.gz", "5\n");
  st = ReadOgb(dir.path()).status();
  EXPECT_THAT(MessageOf(st), HasSubstr("has 2 lines but the graph has 5 nodes")) << st;
}

// An OGB folder whose num-node-list claims 10^12 nodes, with split files and
// no feature file (found by fuzz/text_readers_fuzz.cc: the split masks were
// allocated for every claimed node, and ASan reported the out-of-memory as a
// crash): a clear error naming the file and the count, and nothing large is
// allocated (the peak RSS stays where it was).
//
//   0 -> 1      num-node-list: 1000000000000
TEST(ReadOgb, AClaimedNodeCountBeyondMemoryIsRefusedBeforeAllocating) {
  TempDir dir;
  ASSERT_TRUE(MakeDirs(dir / "raw").ok());
  ASSERT_TRUE(MakeDirs(dir / "split/public").ok());
  WriteGz(dir / "raw/num-node-list.csv.gz", "1000000000000\n");
  WriteGz(dir / "raw/edge.csv.gz", "0,1\n");
  for (const char* file : {"train", "valid", "test"}) {
    WriteGz(dir / StrCat("split/public/", file, ".csv.gz"), "0\n");
  }
  const int64_t peak_before = PeakRssBytes();
  Status st = ReadGraph(dir.path()).status();
  EXPECT_EQ(st.code(), absl::StatusCode::kResourceExhausted) << st;
  EXPECT_THAT(MessageOf(st),
              HasSubstr(dir / "raw/num-node-list.csv.gz: 1000000000000 nodes would need "
                              "7.28 TiB for the graph's CSR offsets (8 bytes per node), "
                              "more than the "))
      << st;
  EXPECT_THAT(MessageOf(st), HasSubstr("of memory available")) << st;
  EXPECT_LT(PeakRssBytes() - peak_before, int64_t{64} << 20);
}

// The same folder with a count that fits in memory reads, unless the caller
// bounds what a file may claim (ReadOptions::max_claimed_bytes).
//
//   0 -> 1      num-node-list: 1000000 (8 MB of CSR offsets, three 1 MB masks)
TEST(ReadOgb, MaxClaimedBytesBoundsTheNodeCount) {
  TempDir dir;
  ASSERT_TRUE(MakeDirs(dir / "raw").ok());
  ASSERT_TRUE(MakeDirs(dir / "split/public").ok());
  WriteGz(dir / "raw/num-node-list.csv.gz", "1000000\n");
  WriteGz(dir / "raw/edge.csv.gz", "0,1\n");
  for (const char* file : {"train", "valid", "test"}) {
    WriteGz(dir / StrCat("split/public/", file, ".csv.gz"), "1\n");
  }
  auto g = ReadGraph(dir.path());
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->num_nodes, 1000000);
  EXPECT_EQ(g->node_data.at("train_mask").rows(), 1000000);

  ReadOptions options;
  options.max_claimed_bytes = 4 << 20;
  Status st = ReadGraph(dir.path(), options).status();
  EXPECT_EQ(st.code(), absl::StatusCode::kResourceExhausted) << st;
  EXPECT_THAT(MessageOf(st),
              HasSubstr("num-node-list.csv.gz: 1000000 nodes would need 7.63 MiB for the "
                        "graph's CSR offsets (8 bytes per node), more than the reader's "
                        "limit of 4.00 MiB (max_claimed_bytes)"))
      << st;
  options.max_claimed_bytes = 8 << 20;
  EXPECT_TRUE(ReadGraph(dir.path(), options).ok());
}

// An edge list's largest id + 1 (or a given node count) is a claim too: the
// graph's consumers build a CSR of that many nodes.
//
//   0 -> 999999999999999
TEST(ReadEdgeList, AHugeIdOrNodeCountIsRefused) {
  TempDir dir;
  WriteAll(dir / "huge.csv", "0 999999999999999\n");
  Status st = ReadEdgeList(dir / "huge.csv").status();
  EXPECT_EQ(st.code(), absl::StatusCode::kResourceExhausted) << st;
  EXPECT_THAT(MessageOf(st), HasSubstr("huge.csv: 1000000000000000 nodes would need 7275.96 TiB"))
      << st;
  WriteAll(dir / "small.csv", "0 1\n");
  st = ReadEdgeList(dir / "small.csv", int64_t{1} << 50).status();
  EXPECT_THAT(MessageOf(st), HasSubstr("small.csv: 1125899906842624 nodes would need")) << st;
  st = ReadEdgeList(dir / "small.csv", 1000, /*max_claimed_bytes=*/4000).status();
  EXPECT_THAT(MessageOf(st), HasSubstr("reader's limit of 3.91 KiB")) << st;
  EXPECT_TRUE(ReadEdgeList(dir / "small.csv", 1000, /*max_claimed_bytes=*/8000).ok());
}

// meta.json's num_nodes is a claim: the error names meta.json.
//
//   0 -> 1 -> 2 -> 0   meta.json: {"num_nodes": 1000000000000}
TEST(ReadNpyDirectory, AHugeNumNodesInMetaIsRefused) {
  TempDir dir;
  ASSERT_TRUE(WriteNpy(dir / "src.npy", Array::From(std::vector<int64_t>{0, 1, 2})).ok());
  ASSERT_TRUE(WriteNpy(dir / "dst.npy", Array::From(std::vector<int64_t>{1, 2, 0})).ok());
  WriteAll(dir / "meta.json", R"({"num_nodes": 1000000000000})");
  Status st = ReadNpyDirectory(dir.path()).status();
  EXPECT_EQ(st.code(), absl::StatusCode::kResourceExhausted) << st;
  EXPECT_THAT(MessageOf(st), HasSubstr("meta.json: 1000000000000 nodes would need 7.28 TiB")) << st;
}

}  // namespace
}  // namespace tessera
