// File: src/sampling/sampling_bench.cc
//
// Cost per sampled edge of LocalGraph::SampleNeighbors on real partitions
// (label "bench": not part of the unit suite). Set TESSERA_SAMPLING_BENCH to
// a comma-separated list of partition configs; part 0 of each is loaded and
// every owned node sampled, in a shuffled order, best of a few runs. Prints
// numbers; asserts nothing about time.
//
// TESSERA_TO_BLOCK_BENCH, a list of configs too: to_block (ToBlock, typed
// by the book on a typed partition) of two-layer batches of 1000 shuffled
// seeds of the first node type, fanouts 25 then 10 (per relation when
// typed, as `tessera bench hetero`), best of a few calls per layer, with freed
// memory retained as in trainers.
#include <algorithm>
#include <cstdlib>
#include <numeric>
#include <sstream>

#include "fmt/format.h"
#include "gtest/gtest.h"
#include "src/base/random.h"
#include "src/sampling/block.h"
#include "src/sampling/local_graph.h"
#include "tessera/base/resource.h"
#include "tessera/base/time.h"

namespace tessera::sampling {
namespace {

std::vector<std::string> Configs() {
  const char* env = std::getenv("TESSERA_SAMPLING_BENCH");
  std::vector<std::string> out;
  if (env == nullptr) return out;
  std::stringstream list(env);
  for (std::string item; std::getline(list, item, ',');) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

// Best nanoseconds per sampled edge over `runs` runs.
double NsPerEdge(const LocalGraph& g, std::span<const int64_t> seeds, const NeighborOptions& o,
                 int64_t* edges, int runs = 5) {
  double best = 1e30;
  for (int r = 0; r < runs; ++r) {
    Stopwatch watch;
    auto result = g.SampleNeighbors(seeds, o);
    double s = watch.Seconds();
    EXPECT_TRUE(result.ok()) << result.status();
    if (!result.ok()) return 0;
    *edges = static_cast<int64_t>(result->size());
    best = std::min(best, s * 1e9 / std::max<double>(1, static_cast<double>(result->size())));
  }
  return best;
}

TEST(SamplingBench, CostPerSampledEdge) {
  std::vector<std::string> configs = Configs();
  if (configs.empty()) GTEST_SKIP() << "set TESSERA_SAMPLING_BENCH to partition configs";
  for (const std::string& config : configs) {
    auto part = LoadPartition(config, 0, {.load_node_feats = false, .load_edge_feats = false});
    ASSERT_TRUE(part.ok()) << part.status();
    auto shared = std::make_shared<const LocalPartition>(std::move(*part));
    auto g = LocalGraph::Create(PartArraysOf(shared));
    ASSERT_TRUE(g.ok()) << g.status();
    std::vector<int64_t> seeds((*g)->num_owned_nodes());
    std::iota(seeds.begin(), seeds.end(), (*g)->node_range().first);
    Rng rng(1);
    for (size_t i = seeds.size(); i > 1; --i) std::swap(seeds[i - 1], seeds[rng.Below(i)]);
    fmt::print("{}: part 0, {} owned nodes, {} owned edges, {} relations ({})\n", config,
               seeds.size(), (*g)->num_owned_edges(), (*g)->num_etypes(),
               (*g)->typed() ? "typed layout" : "homogeneous layout");
    int64_t warm = 0;  // Touch the mapped arrays once before timing.
    NsPerEdge(**g, seeds, {.fanout = -1}, &warm, 1);
    for (EdgeDir dir : {EdgeDir::kIn, EdgeDir::kOut}) {
      for (bool per_relation : {false, true}) {
        for (int64_t fanout : {5, 25, -1}) {
          for (bool replace : {false, true}) {
            if (fanout < 0 && replace) continue;
            NeighborOptions o{.fanout = fanout, .dir = dir, .replace = replace, .seed = 3};
            if (per_relation) o.etype_fanouts.assign((*g)->num_etypes(), fanout);
            int64_t edges = 0;
            if (dir == EdgeDir::kOut) NsPerEdge(**g, seeds, o, &edges, 1);  // Builds the index.
            double ns = NsPerEdge(**g, seeds, o, &edges);
            fmt::print("  {:3} {:12} {:3} replace {:d}: {:10} edges, {:6.2f} ns/edge\n",
                       dir == EdgeDir::kIn ? "in" : "out", per_relation ? "per-relation" : "fanout",
                       fanout, replace, edges, ns);
          }
        }
      }
    }
  }
}

TEST(SamplingBench, ToBlockCostPerSampledEdge) {
  const char* env = std::getenv("TESSERA_TO_BLOCK_BENCH");
  if (env == nullptr) GTEST_SKIP() << "set TESSERA_TO_BLOCK_BENCH to partition configs";
  RetainFreedMemory();  // As trainers and `tessera bench hetero` do.
  std::stringstream list(env);
  for (std::string config; std::getline(list, config, ',');) {
    auto part = LoadPartition(config, 0, {.load_node_feats = false, .load_edge_feats = false});
    ASSERT_TRUE(part.ok()) << part.status();
    auto shared = std::make_shared<const LocalPartition>(std::move(*part));
    const PartitionBook& book = shared->book;
    auto g = LocalGraph::Create(PartArraysOf(shared));
    ASSERT_TRUE(g.ok()) << g.status();
    const bool typed = !book.is_homogeneous();
    auto [first, last] = book.NodeTypeRange(0, 0);
    std::vector<int64_t> pool(static_cast<size_t>(last - first));
    std::iota(pool.begin(), pool.end(), first);
    Rng rng(1);
    for (size_t i = pool.size(); i > 1; --i) std::swap(pool[i - 1], pool[rng.Below(i)]);
    constexpr size_t kBatch = 1000, kBatches = 20;
    pool.resize(std::min(pool.size(), kBatch * kBatches));
    double block_s = 0, sample_s = 0, homo_s = 0;
    int64_t edges = 0;
    for (size_t b = 0; b + kBatch <= pool.size(); b += kBatch) {
      std::vector<int64_t> frontier(pool.begin() + b, pool.begin() + b + kBatch);
      for (int64_t fanout : {25, 10}) {
        NeighborOptions o{.fanout = fanout, .seed = b};
        if (typed) o.etype_fanouts.assign((*g)->num_etypes(), fanout);
        Stopwatch sample_watch;
        auto e = (*g)->SampleNeighbors(frontier, o);
        sample_s += sample_watch.Seconds();
        ASSERT_TRUE(e.ok()) << e.status();
        edges += static_cast<int64_t>(e->size());
        double best = 1e30;
        std::vector<int64_t> next;
        for (int r = 0; r < 5; ++r) {
          Stopwatch watch;
          auto block = ToBlock(book, frontier, e->src, e->dst, e->eid);
          best = std::min(best, watch.Seconds());
          ASSERT_TRUE(block.ok()) << block.status();
          next = block->NextSeeds();
        }
        block_s += best;
        if (typed) {  // The same edges through the untyped ToBlock.
          best = 1e30;
          for (int r = 0; r < 5; ++r) {
            Stopwatch watch;
            auto block = ToBlock(frontier, e->src, e->dst, e->eid);
            best = std::min(best, watch.Seconds());
            ASSERT_TRUE(block.ok()) << block.status();
          }
          homo_s += best;
        }
        frontier = std::move(next);
      }
    }
    fmt::print(
        "{}: {} batches, {} edges per batch, sample {:.2f} ns/edge, to_block {:.2f} ns/edge{}\n",
        config, pool.size() / kBatch, edges / std::max<size_t>(1, pool.size() / kBatch),
        sample_s * 1e9 / edges, block_s * 1e9 / edges,
        typed
            ? fmt::format(" (the same edges through ToBlock: {:.2f} ns/edge)", homo_s * 1e9 / edges)
            : "");
  }
}

}  // namespace
}  // namespace tessera::sampling
