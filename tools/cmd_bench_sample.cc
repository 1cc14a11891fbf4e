// File: tools/cmd_bench_sample.cc
//
// `tessera bench sample`: mini-batch sampling throughput (two-layer
// neighbour sampling + to_block, as DGL's NeighborSampler([10, 25]) with
// batches of 1000 training seeds), standalone (one-part partition in
// process) and distributed (two `tessera server` processes on loopback; this
// process is trainer 0 of machine 0, seeds from its node_split share), with
// 0, 1 and 2 sampler threads. Also the cost per sampled edge of sampling
// remote seeds against local ones, measured back to back. Prints JSON.
#include <algorithm>

#include "nlohmann/json.hpp"
#include "spdlog/spdlog.h"
#include "src/base/random.h"
#include "src/kvstore/local_store.h"
#include "src/loader/minibatch.h"
#include "src/partition/partition.h"
#include "src/partition/work_split.h"
#include "tessera/base/file.h"
#include "tessera/base/resource.h"
#include "tessera/base/time.h"
#include "tessera/graph/readers.h"
#include "tessera/loader/epoch.h"
#include "tessera/loader/pipeline.h"
#include "tools/bench_job.h"
#include "tools/commands.h"

namespace tessera::tools {
namespace {

// DGL on this kind of machine (shared/baselines.md §2), one thread.
constexpr double kDglEdgesPerSecond = 4.60e6;
constexpr double kDglSeedsPerSecond = 28'700;

struct SampleFlags {
  std::string graph;  // A graph folder (e.g. made by shared/tools/gen_graph.py).
  std::string workdir;
  int64_t batch_size = 1000;
  std::vector<int64_t> fanouts = {10, 25};
  std::vector<int> threads = {0, 1, 2};
  int batches = 40;
  int rounds = 5;
};

// Samples `batches` batches of the seeds with each of f.threads sampler
// thread counts; `what` names the setup in the log.
StatusOr<nlohmann::json> RunLoader(kvstore::Services& store, const std::vector<int64_t>& seeds,
                                   const SampleFlags& f, const std::string& what) {
  loader::BatchOptions options{.batch_size = f.batch_size, .shuffle = true, .seed = 7};
  int64_t own = loader::EpochPlan::OwnBatches(static_cast<int64_t>(seeds.size()), options);
  ASSIGN_OR_RETURN(loader::EpochPlan plan, loader::EpochPlan::Create(seeds, options, own));
  int64_t batches = std::min<int64_t>(f.batches, own);  // The first batches of an epoch.
  loader::NeighborSpec spec{.fanouts = f.fanouts};
  std::vector<int64_t> order = plan.Order(0);
  nlohmann::json runs = nlohmann::json::array();
  for (int threads : f.threads) {
    Stopwatch watch;
    loader::Pipeline<loader::MiniBatch> pipeline(
        batches,
        [&](int64_t b) {
          return loader::SampleBlocks(store.graph(), plan.Batch(order, b), spec,
                                      plan.BatchSeed(0, b));
        },
        threads, std::max(1, 2 * threads), std::chrono::seconds(600));
    int64_t edges = 0, input_nodes = 0, seed_count = 0;
    while (true) {
      ASSIGN_OR_RETURN(std::optional<loader::MiniBatch> batch, pipeline.Next());
      if (!batch) break;
      edges += batch->num_sampled_edges();
      for (int t = 0; t < batch->blocks.front().num_ntypes(); ++t) {
        input_nodes += batch->blocks.front().num_src(t);
      }
      seed_count += static_cast<int64_t>(batch->seeds.size());
    }
    double s = watch.Seconds();
    spdlog::info("{}, {} sampler threads: {:.0f} sampled edges/s", what, threads, edges / s);
    runs.push_back({{"sampler_threads", threads},
                    {"batches", batches},
                    {"seeds_per_s", seed_count / s},
                    {"sampled_edges_per_s", edges / s},
                    {"ms_per_batch", 1e3 * s / batches},
                    {"sampled_edges_per_batch", edges / batches},
                    {"input_nodes_per_batch", input_nodes / batches}});
  }
  return runs;
}

// Where one thread's batch time goes: sample_neighbors vs to_block.
StatusOr<nlohmann::json> Breakdown(kvstore::Services& store, const std::vector<int64_t>& seeds,
                                   const SampleFlags& f) {
  double sample_s = 0, block_s = 0;
  int64_t edges = 0;
  int batches = std::min<int>(f.batches, static_cast<int>(seeds.size() / f.batch_size));
  for (int b = 0; b < batches; ++b) {
    std::vector<int64_t> frontier(seeds.begin() + b * f.batch_size,
                                  seeds.begin() + (b + 1) * f.batch_size);
    for (size_t l = f.fanouts.size(); l-- > 0;) {
      Stopwatch w;
      ASSIGN_OR_RETURN(
          sampling::SampledEdges e,
          store.graph().SampleNeighbors(frontier, {.fanout = f.fanouts[l], .seed = 1}));
      sample_s += w.Seconds();
      edges += static_cast<int64_t>(e.size());
      Stopwatch w2;
      ASSIGN_OR_RETURN(sampling::Block block, sampling::ToBlock(frontier, e.src, e.dst, e.eid));
      block_s += w2.Seconds();
      frontier = block.NextSeeds();
    }
  }
  return nlohmann::json{{"sample_neighbors_ms_per_batch", 1e3 * sample_s / batches},
                        {"to_block_ms_per_batch", 1e3 * block_s / batches},
                        {"sample_neighbors_edges_per_s", edges / sample_s},
                        {"to_block_edges_per_s", edges / block_s}};
}

// Time per sampled edge of one layer (fanout fanouts.back()) for seeds all
// owned by machine 0 (local) or all by machine 1 (remote), alternated.
StatusOr<nlohmann::json> RemoteVsLocal(kvstore::KvClient& client, const SampleFlags& f) {
  const PartitionBook& book = client.book();
  Rng rng(3);
  int64_t n = 25'000;
  std::vector<double> local_ns, remote_ns, ratio;
  for (int r = 0; r < f.rounds; ++r) {
    double per_edge[2];
    for (int part : {0, 1}) {
      auto [begin, end] = book.NodeRange(part);
      std::vector<int64_t> seeds;
      for (int64_t v = begin; v < end && static_cast<int64_t>(seeds.size()) < n; ++v) {
        if (rng.Below(static_cast<uint64_t>(end - begin)) < static_cast<uint64_t>(2 * n)) {
          seeds.push_back(v);
        }
      }
      Stopwatch w;
      ASSIGN_OR_RETURN(
          sampling::SampledEdges e,
          client.graph().SampleNeighbors(seeds, {.fanout = f.fanouts.back(), .seed = 5}));
      per_edge[part] = w.Seconds() * 1e9 / std::max<size_t>(1, e.size());
    }
    local_ns.push_back(per_edge[0]);
    remote_ns.push_back(per_edge[1]);
    ratio.push_back(per_edge[1] / per_edge[0]);
  }
  return nlohmann::json{{"seeds", n},
                        {"fanout", f.fanouts.back()},
                        {"local_ns_per_edge", Median(local_ns)},
                        {"remote_ns_per_edge", Median(remote_ns)},
                        {"remote_over_local", Median(ratio)},
                        {"target_remote_over_local_below", 2.0}};
}

Status RunBenchSample(const SampleFlags& f, const std::string& dir) {
  RetainFreedMemory();  // As a trainer does (dist::initialize) and servers do.
  ASSIGN_OR_RETURN(BenchPartitions parts, EnsureBenchPartitions(f.graph, dir));
  nlohmann::json report = {
      {"benchmark", "sample"}, {"batch_size", f.batch_size}, {"fanouts", f.fanouts}};

  // Standalone: the one-part partition in this process.
  {
    ASSIGN_OR_RETURN(std::unique_ptr<kvstore::LocalKvStore> store,
                     kvstore::LocalKvStore::Open(parts.one));
    ASSIGN_OR_RETURN(std::vector<int64_t> train, TrainSeeds(*store));
    report["graph"] = {{"nodes", store->book().num_nodes()},
                       {"edges", store->book().num_edges()},
                       {"train_nodes", train.size()}};
    ASSIGN_OR_RETURN(report["standalone"], RunLoader(*store, train, f, "standalone"));
    ASSIGN_OR_RETURN(report["standalone_breakdown_1thread"], Breakdown(*store, train, f));
  }

  // Distributed: two servers on loopback, this process trainer 0 of machine 0.
  ASSIGN_OR_RETURN(BenchJob bench, StartBenchJob(parts.two, dir));
  kvstore::KvClient& client = *bench.client;
  {
    ASSIGN_OR_RETURN(std::vector<int64_t> train, TrainSeeds(client));
    ASSIGN_OR_RETURN(std::vector<int64_t> mine,
                     SplitWork(train, client.book().node_offsets(), 2, 0));
    ASSIGN_OR_RETURN(report["two_machines_trainer0"], RunLoader(client, mine, f, "2 machines"));
    ASSIGN_OR_RETURN(report["remote_vs_local_one_layer"], RemoteVsLocal(client, f));
  }
  RETURN_IF_ERROR(client.job().Close());
  RETURN_IF_ERROR(bench.job->Wait(Deadline::InSeconds(60), nullptr, 30).status());

  double standalone_1 = 0;
  for (const auto& run : report["standalone"]) {
    if (run["sampler_threads"] == 0) standalone_1 = run["sampled_edges_per_s"];
  }
  report["dgl_reference_1thread"] = {{"sampled_edges_per_s", kDglEdgesPerSecond},
                                     {"seeds_per_s", kDglSeedsPerSecond}};
  report["standalone_0_threads_over_dgl"] = standalone_1 / kDglEdgesPerSecond;
  report["target_sampled_edges_per_s"] = 2 * kDglEdgesPerSecond;
  std::fputs((report.dump(1) + "\n").c_str(), stdout);
  return absl::OkStatus();
}

}  // namespace

Command RegisterBenchSample(CLI::App* bench) {
  auto f = std::make_shared<SampleFlags>();
  CLI::App* sub = bench->add_subcommand(
      "sample", "Mini-batch sampling throughput, standalone and with 2 machines on loopback");
  sub->add_option("--graph", f->graph, "graph folder (e.g. from shared/tools/gen_graph.py)");
  sub->add_option("--workdir", f->workdir,
                  "scratch folder; partitions found there are reused (default: temporary)");
  sub->add_option("--batch-size", f->batch_size, "seeds per batch")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
  sub->add_option("--fanouts", f->fanouts, "per layer, input layer first")
      ->delimiter(',')
      ->capture_default_str();
  sub->add_option("--threads", f->threads, "sampler thread counts to run")
      ->delimiter(',')
      ->capture_default_str()
      ->check(CLI::Range(0, 256));
  sub->add_option("--batches", f->batches, "batches per measurement")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  sub->add_option("--rounds", f->rounds, "rounds of the remote/local comparison")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  return {sub, BenchRunner(&f->workdir, "tessera-bench-sample",
                           [f](const std::string& dir) { return RunBenchSample(*f, dir); })};
}

}  // namespace tessera::tools
