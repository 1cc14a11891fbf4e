// File: src/loader/loader_test.cc
//
// Mini-batches (multi-layer blocks, link-prediction batches), epoch plans and
// the sampler pipeline, on Cora: standalone (one part) and distributed (two
// machines on loopback).
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <limits>
#include <map>
#include <numeric>
#include <set>
#include <system_error>
#include <thread>

#include "gtest/gtest.h"
#include "src/base/memory_budget.h"
#include "src/base/process.h"
#include "src/kvstore/local_store.h"
#include "src/kvstore/test_cluster.h"
#include "src/loader/minibatch.h"
#include "tessera/loader/epoch.h"
#include "tessera/loader/pipeline.h"

namespace tessera::loader {
namespace {

class LoaderTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    one_ = &kvstore::testing::CoraPartitions(1);
    two_ = &kvstore::testing::CoraPartitions(2);
  }
  static std::unique_ptr<kvstore::LocalKvStore> Standalone() {
    auto store = kvstore::LocalKvStore::Open(*one_);
    EXPECT_TRUE(store.ok()) << store.status();
    return std::move(*store);
  }

  // Checks the blocks of a batch against the graph: chained layers, real
  // edges, and min(fanout, allowed degree) in-edges per destination.
  static void CheckBlocks(kvstore::Services& store, const MiniBatch& batch,
                          const NeighborSpec& spec, const std::set<int64_t>& excluded = {}) {
    ASSERT_EQ(batch.blocks.size(), spec.fanouts.size());
    const auto& last = batch.blocks.back();
    EXPECT_EQ(std::vector<int64_t>(last.dst_nodes().begin(), last.dst_nodes().end()), batch.seeds);
    for (size_t l = 0; l + 1 < batch.blocks.size(); ++l) {
      auto dst = batch.blocks[l].dst_nodes();
      EXPECT_EQ(std::vector<int64_t>(dst.begin(), dst.end()),
                std::vector<int64_t>(batch.blocks[l + 1].src_nodes[0].begin(),
                                     batch.blocks[l + 1].src_nodes[0].end()))
          << "layer " << l;
    }
    for (size_t l = 0; l < batch.blocks.size(); ++l) {
      const sampling::Block& b = batch.blocks[l];
      std::vector<int64_t> src(b.edges[0].eids.size()), dst(b.edges[0].eids.size());
      ASSERT_TRUE(store.graph().FindEdges(b.edges[0].eids, src.data(), dst.data()).ok());
      // Every edge in the graph (as `excluded`-free) ends at its dst node.
      std::vector<int64_t> nodes(b.dst_nodes().begin(), b.dst_nodes().end());
      std::vector<int64_t> degree(nodes.size());
      ASSERT_TRUE(store.graph()
                      .Degrees(nodes, sampling::EdgeDir::kIn, kvstore::kAllRelations, degree.data())
                      .ok());
      for (int64_t d = 0; d < b.num_dst(); ++d) {
        std::set<int64_t> seen;
        int64_t excluded_here = 0;
        for (int64_t k = b.edges[0].indptr[d]; k < b.edges[0].indptr[d + 1]; ++k) {
          EXPECT_EQ(src[k], b.src_nodes[0][b.edges[0].indices[k]]);
          EXPECT_EQ(dst[k], nodes[d]);
          EXPECT_TRUE(seen.insert(b.edges[0].eids[k]).second) << "edge sampled twice";
          EXPECT_EQ(excluded.count(b.edges[0].eids[k]), 0u)
              << "excluded edge " << b.edges[0].eids[k];
        }
        if (!excluded.empty()) {
          // In-edges of this node that are excluded: scan them all.
          auto all = store.graph().SampleNeighbors(std::vector<int64_t>{nodes[d]}, {.fanout = -1});
          for (int64_t e : all->eid) excluded_here += excluded.count(e);
        }
        int64_t fanout = spec.fanouts[l];
        int64_t allowed = degree[d] - excluded_here;
        EXPECT_EQ(b.edges[0].indptr[d + 1] - b.edges[0].indptr[d],
                  fanout < 0 ? allowed : std::min(fanout, allowed));
      }
    }
  }

  static inline const std::string *one_ = nullptr, *two_ = nullptr;
};

TEST_F(LoaderTest, BlocksChainLayersWithRealEdgesStandaloneAndDistributed) {
  NeighborSpec spec{.fanouts = {4, 3}};
  std::vector<int64_t> seeds = {5, 2000, 17, 1400, 999};
  auto standalone = Standalone();
  auto a = SampleBlocks(standalone->graph(), seeds, spec, 42);
  ASSERT_TRUE(a.ok()) << a.status();
  CheckBlocks(*standalone, *a, spec);
  auto again = SampleBlocks(standalone->graph(), seeds, spec, 42);
  EXPECT_EQ(again->blocks[0].edges[0].eids, a->blocks[0].edges[0].eids);  // Deterministic.

  kvstore::testing::TestCluster cluster(*two_, 2, 1);
  for (int machine : {0, -1}) {
    auto client = cluster.Connect(machine + 2, machine);
    ASSERT_TRUE(client);
    auto b = SampleBlocks(client->graph(), seeds, spec, 42);
    ASSERT_TRUE(b.ok()) << b.status();
    CheckBlocks(*client, *b, spec);
    NeighborSpec all{.fanouts = {-1}};
    auto full = SampleBlocks(client->graph(), seeds, all, 1);
    ASSERT_TRUE(full.ok());
    CheckBlocks(*client, *full, all);
  }
  // Out-edges: messages flow from out-neighbours to the seed.
  NeighborSpec out{.fanouts = {2}, .dir = sampling::EdgeDir::kOut};
  auto o = SampleBlocks(standalone->graph(), seeds, out, 3);
  ASSERT_TRUE(o.ok()) << o.status();
  const sampling::Block& b = o->blocks[0];
  std::vector<int64_t> src(b.edges[0].eids.size()), dst(b.edges[0].eids.size());
  ASSERT_TRUE(standalone->graph().FindEdges(b.edges[0].eids, src.data(), dst.data()).ok());
  for (int64_t d = 0; d < b.num_dst(); ++d) {
    for (int64_t k = b.edges[0].indptr[d]; k < b.edges[0].indptr[d + 1]; ++k) {
      EXPECT_EQ(src[k], seeds[d]);                               // The edge leaves the seed...
      EXPECT_EQ(dst[k], b.src_nodes[0][b.edges[0].indices[k]]);  // ...towards the message's source.
    }
  }
  EXPECT_FALSE(SampleBlocks(standalone->graph(), seeds, {.fanouts = {}}, 0).ok());
  EXPECT_FALSE(SampleBlocks(standalone->graph(), seeds, {.fanouts = {5, -2}}, 0).ok());
  // A fanout of 0 (DGL's too): a layer without edges whose sources are its
  // destinations (fanouts[l] is blocks[l]'s, the input layer first).
  auto none = SampleBlocks(standalone->graph(), seeds, {.fanouts = {5, 0}}, 0);
  ASSERT_TRUE(none.ok()) << none.status();
  const sampling::Block& last = none->blocks[1];
  EXPECT_EQ(last.edges[0].eids.size(), 0u);
  EXPECT_EQ(last.src_nodes[0].size(), static_cast<size_t>(last.num_dst()));
  EXPECT_EQ(last.num_dst(), static_cast<int64_t>(seeds.size()));
  EXPECT_NE(none->blocks[0].edges[0].eids.size(), 0u);
}

TEST_F(LoaderTest, EdgeBatchPairsNegativesAndExclusion) {
  auto store = Standalone();
  int64_t E = store->book().num_edges();
  // Cora's edges come in both directions: find each edge's reverse.
  std::vector<int64_t> all(E);
  std::iota(all.begin(), all.end(), 0);
  std::vector<int64_t> src(E), dst(E);
  ASSERT_TRUE(store->graph().FindEdges(all, src.data(), dst.data()).ok());
  std::map<std::pair<int64_t, int64_t>, int64_t> by_pair;
  for (int64_t e = 0; e < E; ++e) by_pair[{src[e], dst[e]}] = e;
  std::vector<int64_t> reverse(E);
  for (int64_t e = 0; e < E; ++e) reverse[e] = by_pair.at({dst[e], src[e]});

  std::vector<int64_t> eids = {10, 500, 7000, 3, 9999};
  for (Exclude exclude : {Exclude::kNone, Exclude::kSelf, Exclude::kReverseId}) {
    EdgeSpec spec{.neighbors = {.fanouts = {3, 2}}, .negatives = 4, .exclude = exclude};
    if (exclude == Exclude::kReverseId) spec.reverse_eids = reverse;
    ASSERT_TRUE(ValidateEdgeSpec(spec, store->book()).ok());
    auto batch = SampleEdgeBatch(store->graph(), eids, spec, 8);
    ASSERT_TRUE(batch.ok()) << batch.status();
    const auto& nodes = batch->mini.seeds;
    EXPECT_TRUE(std::is_sorted(nodes.begin(), nodes.end()));
    ASSERT_EQ(batch->positive[0].src.size(), eids.size());
    for (size_t i = 0; i < eids.size(); ++i) {
      EXPECT_EQ(nodes[batch->positive[0].src[i]], src[eids[i]]);
      EXPECT_EQ(nodes[batch->positive[0].dst[i]], dst[eids[i]]);
    }
    ASSERT_EQ(batch->negative[0].src.size(), eids.size() * 4);
    for (size_t j = 0; j < batch->negative[0].src.size(); ++j) {
      EXPECT_EQ(batch->negative[0].src[j], batch->positive[0].src[j / 4]);
    }
    std::set<int64_t> excluded;
    if (exclude != Exclude::kNone) excluded.insert(eids.begin(), eids.end());
    if (exclude == Exclude::kReverseId) {
      for (int64_t e : eids) excluded.insert(reverse[e]);
    }
    CheckBlocks(*store, batch->mini, spec.neighbors, excluded);
  }
  EdgeSpec bad{
      .neighbors = {.fanouts = {3}}, .exclude = Exclude::kReverseId, .reverse_eids = {1, 2}};
  EXPECT_FALSE(ValidateEdgeSpec(bad, store->book()).ok());
  bad.reverse_eids.assign(E, E);  // Out of range.
  EXPECT_FALSE(ValidateEdgeSpec(bad, store->book()).ok());
}

// What would not fit in memory is refused before it is allocated, with an
// error naming it, not a std::bad_alloc gigabytes later.
TEST_F(LoaderTest, RequestsTooLargeForMemoryAreRefusedBeforeAllocating) {
  auto store = Standalone();
  const std::vector<int64_t> eids = {10, 500, 7000, 3, 9999};
  EdgeSpec spec{.neighbors = {.fanouts = {3}}, .negatives = std::numeric_limits<int>::max()};
  ASSERT_TRUE(ValidateEdgeSpec(spec, store->book()).ok());
  auto batch = SampleEdgeBatch(store->graph(), eids, spec, 8);  // 160 GiB of pairs.
  EXPECT_EQ(batch.status().code(), absl::StatusCode::kResourceExhausted) << batch.status();
  EXPECT_THAT(batch.status().message(), HasSubstr("5 edges x 2147483647 negatives per edge"));
  EXPECT_THAT(batch.status().message(), HasSubstr("memory this process can still get"));

  // 10^9 edges (24 GB) fit under the 2^30-edge cap; 24 bytes an edge in a
  // quarter of the memory available do not, on any machine with less than 96 GB.
  std::vector<int64_t> seeds(100);
  std::iota(seeds.begin(), seeds.end(), 0);
  auto sampled = store->graph().SampleNeighbors(seeds, {.fanout = 10'000'000, .replace = true});
  if (RecentAvailableMemoryBytes() / 96 < 1'000'000'000) {
    EXPECT_EQ(sampled.status().code(), absl::StatusCode::kResourceExhausted) << sampled.status();
    EXPECT_THAT(sampled.status().message(), HasSubstr("would return more than"));
  }
  auto tensor = store->features().InitData(
      {.name = "huge", .shape = {store->book().num_nodes(), int64_t{1} << 40}});
  EXPECT_EQ(tensor.status().code(), absl::StatusCode::kResourceExhausted) << tensor.status();
  EXPECT_THAT(tensor.status().message(), HasSubstr("tensor 'huge' float32 [2708, 1099511627776]"));
  EXPECT_TRUE(CheckFitsInMemory("small", 1000, 8).ok());
  Status overflow = CheckFitsInMemory("huge", uint64_t{1} << 40, uint64_t{1} << 40);
  EXPECT_THAT(overflow.message(), HasSubstr("huge: 1099511627776 x 1099511627776 bytes = more "
                                            "than 2^64 bytes"));
}

TEST(EpochPlanTest, EqualBatchCountsPaddingAndShuffle) {
  // Trainer item counts 10, 9, 0 with batches of 4: 3 batches each.
  BatchOptions options{.batch_size = 4, .shuffle = true, .seed = 5};
  int64_t batches = std::max({EpochPlan::OwnBatches(10, options), EpochPlan::OwnBatches(9, options),
                              EpochPlan::OwnBatches(0, options)});
  EXPECT_EQ(batches, 3);
  std::vector<int64_t> ten(10), nine(9);
  std::iota(ten.begin(), ten.end(), 100);
  std::iota(nine.begin(), nine.end(), 200);
  auto big = EpochPlan::Create(ten, options, batches);
  auto small = EpochPlan::Create(nine, options, batches);
  auto none = EpochPlan::Create({}, options, batches);
  ASSERT_TRUE(big.ok() && small.ok() && none.ok());
  for (int64_t epoch = 0; epoch < 3; ++epoch) {
    std::vector<int64_t> order = big->Order(epoch);
    std::multiset<int64_t> seen;
    for (int64_t b = 0; b < batches; ++b) {
      auto batch = big->Batch(order, b);
      EXPECT_EQ(batch.size(), b < 2 ? 4u : 2u);
      seen.insert(batch.begin(), batch.end());
    }
    EXPECT_EQ(seen, std::multiset<int64_t>(ten.begin(), ten.end()));  // Each item once.
    std::vector<int64_t> small_order = small->Order(epoch);
    auto last = small->Batch(small_order, 2);
    EXPECT_EQ(last.size(), 1u);
    EXPECT_TRUE(none->Batch(none->Order(epoch), 1).empty());
  }
  EXPECT_NE(big->Order(0), big->Order(1));  // Reshuffled per epoch...
  EXPECT_EQ(big->Order(1), big->Order(1));  // ...deterministically.
  // A trainer with fewer batches of its own pads with its items, never
  // repeating one inside a batch.
  auto padded = EpochPlan::Create(nine, {.batch_size = 4}, 5);
  ASSERT_TRUE(padded.ok());
  auto order = padded->Order(0);
  EXPECT_EQ(padded->Batch(order, 3), (std::vector<int64_t>{203, 204, 205, 206}));
  EXPECT_EQ(padded->Batch(order, 4), (std::vector<int64_t>{207, 208, 200, 201}));
  // drop_last: only full batches.
  auto dropped = EpochPlan::Create(nine, {.batch_size = 4, .drop_last = true}, 2);
  EXPECT_EQ(dropped->Batch(dropped->Order(0), 1).size(), 4u);
  EXPECT_FALSE(EpochPlan::Create(ten, options, 2).ok());
  EXPECT_FALSE(EpochPlan::Create(ten, {.batch_size = 0}, 5).ok());
}

TEST(PipelineTest, InOrderWhateverTheWorkersAndErrorsReachTheCaller) {
  for (int workers : {0, 1, 3}) {
    std::atomic<int> live{0}, peak{0};
    Pipeline<int64_t> p(
        20,
        [&](int64_t i) -> StatusOr<int64_t> {
          int now = ++live;
          peak = std::max(peak.load(), now);
          std::this_thread::sleep_for(std::chrono::milliseconds((i * 7) % 5));
          --live;
          if (i == 13) return absl::DataLossError("batch thirteen");
          if (i == 15) throw std::runtime_error("thrown in a sampler");
          return i * i;
        },
        workers, 4, std::chrono::seconds(10));
    for (int64_t i = 0; i < 20; ++i) {
      auto item = p.Next();
      if (i == 13) {
        EXPECT_EQ(item.status().code(), absl::StatusCode::kDataLoss);
      } else if (i == 15) {
        ASSERT_FALSE(item.ok());
        EXPECT_THAT(item.status().message(), HasSubstr("thrown in a sampler"));
      } else {
        ASSERT_TRUE(item.ok()) << item.status();
        ASSERT_TRUE(item->has_value());
        EXPECT_EQ(**item, i * i) << "workers " << workers;
      }
    }
    auto end = p.Next();
    ASSERT_TRUE(end.ok());
    EXPECT_FALSE(end->has_value());
    EXPECT_LE(peak.load(), std::max(1, workers));
  }
}

TEST(PipelineTest, SlowBatchTimesOutAndDestructionStopsWorkers) {
  Pipeline<int> slow(
      3,
      [](int64_t) -> StatusOr<int> {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        return 1;
      },
      1, 2, std::chrono::milliseconds(50));
  EXPECT_EQ(slow.Next().status().code(), absl::StatusCode::kDeadlineExceeded);
  // Abandoned mid-epoch: the destructor returns after the running item.
  std::atomic<int> produced{0};
  {
    Pipeline<int> p(
        1000, [&](int64_t) -> StatusOr<int> { return ++produced; }, 2, 3, std::chrono::seconds(5));
    ASSERT_TRUE(p.Next().ok());
  }
  EXPECT_LE(produced.load(), 1 + 3 + 2);  // The window bounds the work done ahead.
}

// Threads that cannot be started (the address space is full) are an
// exception the caller can catch, never std::terminate: the pipeline joins
// the workers it did start before it throws.
TEST(PipelineTest, WorkersThatCannotStartAreAnExceptionNotAnAbort) {
  auto child = Process::Fork(
      [] {
        // 64 MiB more address space: a few 8 MiB thread stacks, not 1000.
        std::ifstream statm("/proc/self/statm");
        int64_t pages = 0;
        statm >> pages;
        const rlim_t limit = pages * sysconf(_SC_PAGESIZE) + (int64_t{64} << 20);
        struct rlimit rl = {limit, limit};
        if (setrlimit(RLIMIT_AS, &rl) != 0) return 3;
        try {
          Pipeline<int> p(
              10, [](int64_t i) -> StatusOr<int> { return static_cast<int>(i); }, 1000, 4,
              std::chrono::seconds(5));
          return 2;                        // Every thread started: the limit did not bite.
        } catch (const std::exception&) {  // std::system_error; bad_alloc if memory ran out first.
          return 0;
        }
      },
      "pipeline", 1);
  ASSERT_TRUE(child.ok()) << child.status();
  EXPECT_EQ(*child->Wait(Deadline::InSeconds(60)), 0);
}

}  // namespace
}  // namespace tessera::loader
