// The bytes PartitionGraph writes, pinned: every file of the partitions of a
// generated homogeneous graph and of a generated typed graph (METIS and random
// assignment, HALO hops 0-3, trainers, return mapping, node and edge arrays)
// hashed against the hashes of the code before the memory rework of
// partitioning (issue 15). A change here is a change of the output format:
// say so in the commit and update the hashes it prints.
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>

#include "gtest/gtest.h"
#include "src/base/test_util.h"
#include "src/graph/generator.h"
#include "src/graph/typed_generator.h"
#include "src/partition/partition.h"
#include "tessera/graph/readers.h"

namespace tessera {
namespace {

using testing::ReadAll;
using testing::TempDir;

// FNV-1a over every file below `dir`: relative path, size and bytes, in path
// order.
uint64_t HashTree(const std::string& dir) {
  std::map<std::string, std::string> files;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    files[std::filesystem::relative(entry.path(), dir).string()] = ReadAll(entry.path().string());
  }
  uint64_t h = 14695981039346656037ull;
  auto mix = [&h](const std::string& bytes) {
    for (unsigned char c : bytes) h = (h ^ c) * 1099511628211ull;
  };
  for (const auto& [path, bytes] : files) {
    mix(path);
    mix(std::to_string(bytes.size()));
    mix(bytes);
  }
  return h;
}

struct Config {
  const char* name;
  PartMethod method;
  int parts, hops, trainers;
  bool balance, mapping;
};

const Config kConfigs[] = {
    {"metis-2", PartMethod::kMetis, 2, 1, 1, true, true},
    {"metis-3-hops2-trainers2", PartMethod::kMetis, 3, 2, 2, false, true},
    {"random-4-hops0", PartMethod::kRandom, 4, 0, 1, false, true},
    {"random-2-hops3-trainers3", PartMethod::kRandom, 2, 3, 3, true, false},
    {"random-1", PartMethod::kRandom, 1, 1, 1, false, true},
};

// Partitions `graph` with every config (balancing its node array train_mask
// where the config says so); returns name -> hash. `wide`: with 64-bit ids,
// as graphs too large for 32-bit ones are partitioned.
std::map<std::string, uint64_t> Hashes(const Graph& graph, bool wide) {
  std::map<std::string, uint64_t> hashes;
  for (const Config& c : kConfigs) {
    TempDir dir;
    PartitionOptions o;
    o.part_method = c.method;
    o.num_hops = c.hops;
    o.num_trainers_per_machine = c.trainers;
    o.return_mapping = c.mapping;
    o.seed = 7;
    if (c.balance) {
      o.balance_ntypes = "train_mask";
      o.balance_edges = true;
    }
    auto result = wide ? TEST_PartitionGraphWideIds(graph, "g", c.parts, dir / "out", o)
                       : PartitionGraph(graph, "g", c.parts, dir / "out", o);
    EXPECT_TRUE(result.ok()) << c.name << ": " << result.status();
    hashes[c.name] = HashTree(dir / "out");
  }
  return hashes;
}

// Partitions `graph` with every config, with 32-bit and with 64-bit ids, and
// compares the hashes with `want`.
void ExpectHashes(const Graph& graph, const std::map<std::string, uint64_t>& want) {
  for (bool wide : {false, true}) {
    for (const auto& [name, hash] : Hashes(graph, wide)) {
      char text[32];
      std::snprintf(text, sizeof(text), "0x%016llx", static_cast<unsigned long long>(hash));
      EXPECT_EQ(hash, want.at(name))
          << name << (wide ? " (64-bit ids)" : "") << " now hashes to " << text;
    }
  }
}

// An edge array per relation: float32 [E, 2] of (edge id, -edge id).
Array EdgeWeights(int64_t num_edges) {
  Array w = Array::Empty(DType::kFloat32, {num_edges, 2});
  for (int64_t e = 0; e < num_edges; ++e) {
    w.mutable_span<float>()[2 * e] = static_cast<float>(e);
    w.mutable_span<float>()[2 * e + 1] = -static_cast<float>(e);
  }
  return w;
}

TEST(PartitionBytes, GeneratedHomogeneousGraph) {
  TempDir input;
  GenerateOptions g;
  g.num_nodes = 3000;
  g.num_undirected_edges = 20000;
  g.feat_dim = 3;
  g.num_classes = 5;
  ASSERT_TRUE(GenerateSbmGraph(g, input.path()).ok());
  auto graph = ReadGraph(input.path());
  ASSERT_TRUE(graph.ok()) << graph.status();
  graph->edge_data.emplace("w", EdgeWeights(graph->num_edges()));
  ExpectHashes(*graph, {
                           {"metis-2", 0x9dbaa324616afabfull},
                           {"metis-3-hops2-trainers2", 0x8bab7521cf3e99b2ull},
                           {"random-4-hops0", 0xd218311c1dab2338ull},
                           {"random-2-hops3-trainers3", 0xdcb7ecdbab386b48ull},
                           {"random-1", 0x261d87c85fc72adfull},
                       });
}

TEST(PartitionBytes, GeneratedTypedGraph) {
  TempDir input;
  TypedGenerateOptions g;
  g.num_nodes = 4000;
  g.feat_dim = 3;
  g.num_classes = 5;
  ASSERT_TRUE(GenerateMagGraph(g, input.path()).ok());
  auto graph = ReadGraph(input.path());
  ASSERT_TRUE(graph.ok()) << graph.status();
  for (int r = 0; r < graph->num_etypes(); r += 2) {
    graph->etype_data[r].emplace(
        "w", EdgeWeights(graph->etype_offsets[r + 1] - graph->etype_offsets[r]));
  }
  ExpectHashes(*graph, {
                           {"metis-2", 0x6a8485c182c3a593ull},
                           {"metis-3-hops2-trainers2", 0x49ed8316d0de965eull},
                           {"random-4-hops0", 0x0f6dbac2fa869e56ull},
                           {"random-2-hops3-trainers3", 0x3734d9bac188dad0ull},
                           {"random-1", 0xe5b6e8cb77ff9c36ull},
                       });
}

}  // namespace
}  // namespace tessera
