// DistPartitionGraph on thread ranks: for random assignment its output is
// byte-identical to PartitionGraph's (every file, the config included) for
// any number of ranks, parts and HALO hops; errors on one rank stop all of
// them, name the rank and leave nothing that looks valid.
#include "src/dist_partition/dist_partition.h"

#include <filesystem>
#include <map>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "src/base/test_util.h"
#include "src/dist_partition/chunked_graph.h"
#include "src/graph/generator.h"
#include "src/graph/typed_generator.h"
#include "tessera/graph/readers.h"
#include "tessera/partition/load_partition.h"

namespace tessera::dist_partition {
namespace {

using testing::TempDir;

void ExpectSameFiles(const std::string& expected_dir, const std::string& actual_dir) {
  auto expected = testing::ReadTree(expected_dir), actual = testing::ReadTree(actual_dir);
  ASSERT_FALSE(expected.empty());
  std::vector<std::string> a, b;
  for (const auto& [name, bytes] : expected) a.push_back(name);
  for (const auto& [name, bytes] : actual) b.push_back(name);
  ASSERT_EQ(a, b);
  for (const auto& [name, bytes] : expected) {
    EXPECT_TRUE(actual[name] == bytes) << name << " differs";
  }
}

// Runs DistPartitionGraph on `ranks` thread ranks; returns rank 0's result
// and expects every rank to agree on success or on the error.
// round_bytes > 0: the ranks' exchanges go in rounds of that many bytes.
StatusOr<DistPartitionResult> RunRanks(int ranks, const std::string& input, int parts,
                                       const std::string& out, const DistPartitionOptions& o,
                                       int64_t round_bytes = 0) {
  std::vector<StatusOr<DistPartitionResult>> results(ranks, absl::UnknownError("not run"));
  RunThreadRanks(ranks, [&](Comm& comm) {
    if (round_bytes > 0) comm.set_round_bytes(round_bytes);
    results[comm.rank()] = DistPartitionGraph(comm, input, parts, out, o);
    return results[comm.rank()].status();
  });
  for (int r = 1; r < ranks; ++r) {
    EXPECT_EQ(results[r].status(), results[0].status()) << "rank " << r;
  }
  return results[0];
}

class DistPartitionTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    GenerateOptions o{.num_nodes = 300,
                      .num_undirected_edges = 1500,
                      .feat_dim = 3,
                      .num_classes = 4,
                      .num_threads = 1};
    ASSERT_TRUE(GenerateSbmGraph(o, *dir_ / "sbm").ok());
    auto graph = ReadGraph(*dir_ / "sbm");
    ASSERT_TRUE(graph.ok()) << graph.status();
    // An edge array too, so that edge arrays are covered.
    std::vector<float> weight(graph->num_edges());
    for (size_t i = 0; i < weight.size(); ++i) weight[i] = static_cast<float>(i) * 0.5f;
    graph->edge_data.emplace("weight", Array::From(weight));
    // And a node array of zero-byte rows (a feature of width 0).
    graph->node_data.emplace("empty", Array::Empty(DType::kFloat32, {graph->num_nodes, 0}));
    ASSERT_TRUE(WriteChunkedGraph(*graph, *dir_ / "chunked", {3, true, "sbm"}).ok());
    TypedGenerateOptions h{.num_nodes = 1000, .feat_dim = 2, .num_classes = 3, .num_threads = 1};
    ASSERT_TRUE(GenerateMagGraph(h, *dir_ / "mag").ok());
    auto mag = ReadGraph(*dir_ / "mag");
    ASSERT_TRUE(mag.ok()) << mag.status();
    ASSERT_TRUE(WriteChunkedGraph(*mag, *dir_ / "mag_chunked", {2, false, "mag"}).ok());
  }
  static void TearDownTestSuite() { delete dir_; }

  // The single-process partition of `input` (an npy folder).
  static void Serial(const std::string& input, int parts, const PartitionOptions& o,
                     const std::string& out) {
    auto graph = ReadGraph(input);
    ASSERT_TRUE(graph.ok());
    if (input == *dir_ / "sbm") {
      std::vector<float> weight(graph->num_edges());
      for (size_t i = 0; i < weight.size(); ++i) weight[i] = static_cast<float>(i) * 0.5f;
      graph->edge_data.emplace("weight", Array::From(weight));
      graph->node_data.emplace("empty", Array::Empty(DType::kFloat32, {graph->num_nodes, 0}));
    }
    auto result = PartitionGraph(*graph, input == *dir_ / "sbm" ? "sbm" : "mag", parts, out, o);
    ASSERT_TRUE(result.ok()) << result.status();
  }

  static TempDir* dir_;
};
TempDir* DistPartitionTest::dir_ = nullptr;

TEST_F(DistPartitionTest, RandomEqualsSingleProcessForAnyRanks) {
  struct Case {
    int ranks, parts, hops;
  };
  for (Case c : std::vector<Case>{
           {1, 1, 1}, {1, 4, 1}, {2, 4, 1}, {3, 3, 2}, {4, 4, 0}, {4, 8, 1}, {2, 2, 3}}) {
    SCOPED_TRACE(::testing::Message()
                 << c.ranks << " ranks, " << c.parts << " parts, " << c.hops << " hops");
    TempDir out;
    PartitionOptions serial;
    serial.part_method = PartMethod::kRandom;
    serial.num_hops = c.hops;
    serial.return_mapping = true;
    serial.seed = 7;
    Serial(*dir_ / "sbm", c.parts, serial, out / "serial");
    DistPartitionOptions o;
    o.part_method = PartMethod::kRandom;
    o.num_hops = c.hops;
    o.return_mapping = true;
    o.seed = 7;
    auto result = RunRanks(c.ranks, *dir_ / "chunked", c.parts, out / "dist", o);
    ASSERT_TRUE(result.ok()) << result.status();
    ExpectSameFiles(out / "serial", out / "dist");
    EXPECT_EQ(result->steps.size(), 5u);
    EXPECT_EQ(result->steps[0].peak_rss.size(), static_cast<size_t>(c.ranks));
    for (int p = 0; p < c.parts; ++p) {
      EXPECT_TRUE(LoadPartition(result->config_path, p).ok());
    }
  }
}

// Rounds of a few dozen bytes: every exchange (the edges, the HALO hops,
// the lookups, the arrays' rows, the mappings) takes many rounds, with some
// ranks out of items before others, and the output is still the same.
TEST_F(DistPartitionTest, TinyExchangeRoundsGiveTheSameOutput) {
  for (int ranks : {2, 3}) {
    SCOPED_TRACE(ranks);
    TempDir out;
    PartitionOptions serial;
    serial.part_method = PartMethod::kRandom;
    serial.num_hops = 2;
    serial.return_mapping = true;
    serial.seed = 5;
    Serial(*dir_ / "sbm", 6, serial, out / "serial");
    DistPartitionOptions o;
    o.part_method = PartMethod::kRandom;
    o.num_hops = 2;
    o.return_mapping = true;
    o.seed = 5;
    auto result = RunRanks(ranks, *dir_ / "chunked", 6, out / "dist", o, 40);
    ASSERT_TRUE(result.ok()) << result.status();
    ExpectSameFiles(out / "serial", out / "dist");
  }
}

TEST_F(DistPartitionTest, TypedRandomEqualsSingleProcess) {
  for (int ranks : {1, 2, 4}) {
    SCOPED_TRACE(ranks);
    TempDir out;
    PartitionOptions serial;
    serial.part_method = PartMethod::kRandom;
    serial.return_mapping = true;
    serial.num_hops = 2;
    Serial(*dir_ / "mag", 4, serial, out / "serial");
    DistPartitionOptions o;
    o.part_method = PartMethod::kRandom;
    o.return_mapping = true;
    o.num_hops = 2;
    auto result = RunRanks(ranks, *dir_ / "mag_chunked", 4, out / "dist", o);
    ASSERT_TRUE(result.ok()) << result.status();
    ExpectSameFiles(out / "serial", out / "dist");
  }
}

// Trainers per machine: sub-parts from the same draws as PartitionGraph's,
// trainer_id arrays for every node and edge type, the config's count.
TEST_F(DistPartitionTest, TrainersPerMachineEqualSingleProcess) {
  struct Case {
    const char* graph;
    int ranks, parts, trainers;
  };
  for (Case c : std::vector<Case>{{"sbm", 1, 2, 2},
                                  {"sbm", 2, 4, 3},
                                  {"sbm", 3, 3, 2},
                                  {"mag", 2, 2, 2},
                                  {"mag", 4, 4, 2}}) {
    SCOPED_TRACE(::testing::Message() << c.graph << ", " << c.ranks << " ranks, " << c.parts
                                      << " parts, " << c.trainers << " trainers");
    const bool typed = std::string(c.graph) == "mag";
    TempDir out;
    PartitionOptions serial;
    serial.part_method = PartMethod::kRandom;
    serial.return_mapping = true;
    serial.num_trainers_per_machine = c.trainers;
    serial.seed = 11;
    Serial(*dir_ / c.graph, c.parts, serial, out / "serial");
    DistPartitionOptions o;
    o.part_method = PartMethod::kRandom;
    o.return_mapping = true;
    o.num_trainers_per_machine = c.trainers;
    o.seed = 11;
    auto result =
        RunRanks(c.ranks, *dir_ / (typed ? "mag_chunked" : "chunked"), c.parts, out / "dist", o);
    ASSERT_TRUE(result.ok()) << result.status();
    ExpectSameFiles(out / "serial", out / "dist");
    auto part = LoadPartition(result->config_path, 0);
    ASSERT_TRUE(part.ok()) << part.status();
    EXPECT_TRUE(part->node_data.count(typed ? "paper/trainer_id" : "trainer_id"));
  }
  DistPartitionOptions o;
  o.part_method = PartMethod::kRandom;
  o.num_trainers_per_machine = 0;
  TempDir out;
  auto bad = RunRanks(2, *dir_ / "chunked", 2, out / "bad", o);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("num_trainers_per_machine must be >= 1"))
      << bad.status();
}

TEST_F(DistPartitionTest, AFailedRankStopsEveryRankAndNothingLooksValid) {
  TempDir copy;
  std::filesystem::copy(*dir_ / "chunked", copy / "in", std::filesystem::copy_options::recursive);
  DistPartitionOptions o;
  o.part_method = PartMethod::kRandom;
  // A finished run, whose config must not survive a failed one.
  ASSERT_TRUE(RunRanks(2, copy / "in", 2, copy / "out", o).ok());
  ASSERT_TRUE(PathExists(copy / "out/sbm.json"));
  // A truncated edge chunk that only rank 1 of 2 reads (edges 1500-2999).
  testing::WriteAll(copy / "in/edges/_N:_E:_N-2.txt", "1 2\n");
  auto result = RunRanks(2, copy / "in", 2, copy / "out", o);
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(result.status().message(), HasSubstr("rank 1 of 2: ")) << result.status();
  EXPECT_THAT(result.status().message(),
              HasSubstr("_N:_E:_N-2.txt: holds 1 edges but the metadata says "
                        "1000"))
      << result.status();
  EXPECT_FALSE(PathExists(copy / "out/sbm.json"));
  // A truncated feature chunk: every rank checks the headers first.
  std::filesystem::copy(
      *dir_ / "chunked/edges", copy / "in/edges",
      std::filesystem::copy_options::recursive | std::filesystem::copy_options::overwrite_existing);
  std::filesystem::resize_file(copy / "in/node_data/_N/feat-2.npy", 200);
  result = RunRanks(3, copy / "in", 3, copy / "out", o);
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(result.status().message(), HasSubstr("feat-2.npy")) << result.status();
  // Arguments every rank rejects.
  result = RunRanks(2, *dir_ / "chunked", 3, copy / "out", o);
  EXPECT_THAT(result.status().message(), HasSubstr("multiple of the number of ranks"))
      << result.status();
  // Node counts that no memory holds (node data dropped, so only the counts
  // claim them): an error before any array of that size.
  TempDir claim;
  std::filesystem::copy(*dir_ / "chunked", claim / "in", std::filesystem::copy_options::recursive);
  auto meta = nlohmann::json::parse(testing::ReadAll(claim / "in/metadata.json"));
  meta["num_nodes_per_chunk"] = {{int64_t{1} << 40, 0, 0}};
  meta.erase("num_nodes_per_type");
  meta["node_data"] = nlohmann::json::object();
  testing::WriteAll(claim / "in/metadata.json", meta.dump());
  result = RunRanks(2, claim / "in", 2, claim / "out", o);
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(result.status().message(), HasSubstr("this rank's node arrays")) << result.status();
}

TEST_F(DistPartitionTest, AFailureWhileWritingRemovesWhatWasWritten) {
  TempDir out;
  DistPartitionOptions o;
  o.part_method = PartMethod::kRandom;
  o.return_mapping = true;
  for (const char* step : {"halo", "write"}) {
    SCOPED_TRACE(step);
    // Rank 2 fails as `step` starts.
    o.on_step = [step](Comm& comm, std::string_view name) {
      return comm.rank() == 2 && name == step ? absl::AbortedError("injected") : absl::OkStatus();
    };
    auto result = RunRanks(4, *dir_ / "chunked", 4, out.path(), o);
    ASSERT_FALSE(result.ok());
    EXPECT_EQ(result.status().message(), "rank 2 of 4: injected");
    EXPECT_FALSE(PathExists(out / "sbm.json"));
    EXPECT_FALSE(PathExists(out / "orig_nids.npy"));
  }
}

}  // namespace
}  // namespace tessera::dist_partition
