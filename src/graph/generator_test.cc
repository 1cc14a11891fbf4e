#include "src/graph/generator.h"

#include <filesystem>
#include <limits>
#include <set>

#include "gtest/gtest.h"
#include "src/base/test_util.h"
#include "src/graph/npy.h"
#include "tessera/graph/readers.h"

namespace tessera {
namespace {

using testing::ReadAll;
using testing::TempDir;

GenerateOptions Small() {
  GenerateOptions o{.num_nodes = 5000,
                    .num_undirected_edges = 40000,
                    .feat_dim = 8,
                    .num_classes = 5,
                    .homophily = 0.9,
                    .noise = 0.5,
                    .seed = 7};
  return o;
}

TEST(Generator, WritesAValidSymmetricLabelledGraph) {
  TempDir dir;
  GenerateOptions o = Small();
  auto stats = GenerateSbmGraph(o, dir.path());
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->num_edges, 80000);
  auto g = ReadGraph(dir.path());
  ASSERT_TRUE(g.ok()) << g.status();
  ASSERT_EQ(g->num_nodes, 5000);
  ASSERT_EQ(g->num_edges(), 80000);
  auto src = g->src_ids();
  auto dst = g->dst_ids();
  auto label = g->node_data.at("label").span<int64_t>();
  int64_t same = 0;
  for (int64_t i = 0; i < 40000; ++i) {
    EXPECT_NE(src[i], dst[i]);
    ASSERT_EQ(src[40000 + i], dst[i]);  // Edge m + i reverses edge i.
    ASSERT_EQ(dst[40000 + i], src[i]);
    same += label[src[i]] == label[dst[i]];
  }
  // P(same class) = h + (1 - h) / C = 0.92 for uniform classes.
  EXPECT_NEAR(same / 40000.0, 0.92, 0.02);
  // Power-law degrees: the top 1% of nodes hold far more than 1% of edges.
  std::vector<int64_t> degree(5000);
  for (int64_t d : dst) ++degree[d];
  std::sort(degree.rbegin(), degree.rend());
  int64_t top = 0;
  for (int i = 0; i < 50; ++i) top += degree[i];
  EXPECT_GT(top, 80000 / 10);
  // Split sizes.
  auto count = [&](const char* name) {
    int64_t n = 0;
    for (bool b : g->node_data.at(name).span<bool>()) n += b;
    return n;
  };
  EXPECT_EQ(count("train_mask"), 400);
  EXPECT_EQ(count("val_mask"), 100);
  EXPECT_EQ(count("test_mask"), 4500);
  for (int64_t v = 0; v < 5000; ++v) {
    EXPECT_EQ(g->node_data.at("train_mask").span<bool>()[v] +
                  g->node_data.at("val_mask").span<bool>()[v] +
                  g->node_data.at("test_mask").span<bool>()[v],
              1);
  }
  // Features cluster around class centroids: same-class rows are closer.
  const Array& feat = g->node_data.at("feat");
  ASSERT_EQ(feat.shape(), (std::vector<int64_t>{5000, 8}));
  auto f = feat.span<float>();
  auto dist = [&](int64_t a, int64_t b) {
    double s = 0;
    for (int j = 0; j < 8; ++j) s += (f[a * 8 + j] - f[b * 8 + j]) * (f[a * 8 + j] - f[b * 8 + j]);
    return s;
  };
  double within = 0, across = 0;
  int nw = 0, na = 0;
  for (int64_t a = 0; a < 300; ++a) {
    for (int64_t b = a + 1; b < 300; ++b) {
      (label[a] == label[b] ? within : across) += dist(a, b);
      (label[a] == label[b] ? nw : na) += 1;
    }
  }
  EXPECT_LT(within / nw, 0.5 * across / na);
}

TEST(Generator, DeterministicWhateverTheThreadCount) {
  TempDir a, b, c;
  GenerateOptions o = Small();
  o.num_threads = 1;
  ASSERT_TRUE(GenerateSbmGraph(o, a.path()).ok());
  o.num_threads = 3;
  ASSERT_TRUE(GenerateSbmGraph(o, b.path()).ok());
  o.seed = 8;
  ASSERT_TRUE(GenerateSbmGraph(o, c.path()).ok());
  for (const char* f : {"src.npy", "dst.npy", "feat.npy", "label.npy", "train_mask.npy"}) {
    EXPECT_EQ(ReadAll(a / f), ReadAll(b / f)) << f;
  }
  EXPECT_NE(ReadAll(a / "src.npy"), ReadAll(c / "src.npy"));
}

TEST(Generator, RejectsBadOptions) {
  TempDir dir;
  GenerateOptions o = Small();
  o.num_nodes = 1;
  EXPECT_EQ(GenerateSbmGraph(o, dir.path()).status().code(), absl::StatusCode::kInvalidArgument);
  o = Small();
  o.homophily = 1.5;
  EXPECT_THAT(GenerateSbmGraph(o, dir.path()).status().message(), HasSubstr("--homophily"));
  o = Small();
  o.train_fraction = 0.8;
  o.val_fraction = 0.3;
  EXPECT_FALSE(GenerateSbmGraph(o, dir.path()).ok());
  // Sizes that overflow (2m edges) or are not finite.
  o = Small();
  o.num_undirected_edges = std::numeric_limits<int64_t>::max();
  EXPECT_THAT(GenerateSbmGraph(o, dir.path()).status().message(), HasSubstr("--edges"));
  o = Small();
  o.noise = std::numeric_limits<double>::infinity();
  EXPECT_THAT(GenerateSbmGraph(o, dir.path()).status().message(), HasSubstr("--noise"));
  o = Small();
  o.power_law_exponent = std::numeric_limits<double>::infinity();
  EXPECT_THAT(GenerateSbmGraph(o, dir.path()).status().message(), HasSubstr("--power-law"));
}

// Generating again replaces the whole graph: arrays the new run does not
// write are gone, an interrupted run's partial files are not taken for this
// run's, and a run refused for want of space keeps the old graph.
TEST(Generator, ARunReplacesTheWholeGraph) {
  TempDir dir;
  GenerateOptions o = Small();
  ASSERT_TRUE(GenerateSbmGraph(o, dir.path()).ok());
  ASSERT_TRUE(PathExists(dir / "feat.npy"));
  std::filesystem::copy_file(dir / "feat.npy", dir / "feat.npy.partial");  // As a killed run.
  o.feat_dim = 0;
  ASSERT_TRUE(GenerateSbmGraph(o, dir.path()).ok());
  EXPECT_FALSE(PathExists(dir / "feat.npy"));
  EXPECT_FALSE(PathExists(dir / "feat.npy.partial"));
  const std::string src = ReadAll(dir / "src.npy");
  o.num_undirected_edges = int64_t{1} << 40;  // More than the disk holds.
  auto failed = GenerateSbmGraph(o, dir.path());
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kResourceExhausted) << failed.status();
  EXPECT_THAT(failed.status().message(), HasSubstr("free"));
  EXPECT_EQ(ReadAll(dir / "src.npy"), src);
  EXPECT_TRUE(ReadGraph(dir.path()).ok());
}

}  // namespace
}  // namespace tessera
