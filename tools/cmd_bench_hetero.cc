// File: tools/cmd_bench_hetero.cc
//
// `tessera bench hetero`: heterogeneous graphs end to end on a generated
// ogbn-mag shaped graph (`tessera generate --hetero`, full size by default:
// 1,939,743 nodes of 4 types, 21,111,008 edges of 8 relations), next to two
// homogeneous graphs made in the same run:
//   homogeneous     -- a degree-corrected SBM graph (`tessera generate`) with
//                      the same node and edge counts, about the same feature
//                      bytes and the same number of training nodes;
//   same_structure  -- the typed graph itself written as a homogeneous graph
//                      (global ids, node array "ntype", the papers' training
//                      mask, its feature bytes as one array), partitioned with
//                      --balance-ntypes ntype: the same METIS input as the
//                      typed graph's per-type balancing, so the difference is
//                      the typed path's own.
// Stages (--stages):
//   partition -- `tessera partition --num-parts 2` (METIS) of each graph in a
//                child process: wall time, peak RSS and peak RSS per edge;
//   sample    -- two-layer neighbour sampling + to_block of batches of training
//                seeds (papers on the typed graph, per-relation fanouts there,
//                total fanouts on the homogeneous ones), standalone (one-part
//                partitions in this process) and as trainer 0 of 2-machine
//                loopback jobs (the partitions above), rounds alternating the
//                graphs: ns per sampled edge and the typed / homogeneous ratio;
//   rgcn      -- examples/rgcn (rgcn_train) on the typed graph, standalone and
//                2 machines x 1 trainer: epoch time and accuracy.
// Prints one JSON report.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <numeric>
#include <random>
#include <thread>

#include "nlohmann/json.hpp"
#include "spdlog/spdlog.h"
#include "src/graph/generator.h"
#include "src/graph/npy.h"
#include "src/graph/typed_generator.h"
#include "src/kvstore/local_store.h"
#include "src/loader/minibatch.h"
#include "src/partition/inspect.h"
#include "src/partition/work_split.h"
#include "src/sampling/block.h"
#include "tessera/base/file.h"
#include "tessera/base/resource.h"
#include "tessera/base/strings.h"
#include "tessera/graph/readers.h"
#include "tools/bench_job.h"
#include "tools/commands.h"
#include "tools/subprocess.h"
#include "tools/train_job.h"

namespace tessera::tools {
namespace {

struct HeteroFlags {
  int64_t nodes = 1'939'743;  // ogbn-mag's node count.
  std::string workdir;
  std::vector<std::string> stages = {"partition", "sample", "rgcn"};
  std::vector<int64_t> fanouts = {10, 25};  // Per layer, input layer first.
  int64_t batch_size = 1000;
  int batches = 40;
  int rounds = 3;
  int rgcn_epochs = 1;
  double timeout_s = 3600;
};

constexpr const char* kPredictNtype = "paper";
constexpr double kTargetSampleRatio = 1.3;  // Issue 14 §5.

bool Wants(const HeteroFlags& f, const std::string& stage) {
  return std::find(f.stages.begin(), f.stages.end(), stage) != f.stages.end();
}

// One of the three graphs: its input folder and partitions.
struct BenchGraph {
  std::string name;
  bool typed = false;
  std::string input;
  std::vector<std::string> partition_flags;  // Beyond --num-parts.
  std::string one, two;                      // Partition configs (1 and 2 parts).
  nlohmann::json info;
};

// The typed graph as a homogeneous npy folder: src/dst (global ids), node
// arrays ntype (int32), train_mask (uint8: the papers' mask, 0 elsewhere) and
// feat (float32 [n, d], the papers' feature bytes, d = their total / n).
Status WriteSameStructure(const std::string& typed_input, const std::string& out) {
  ASSIGN_OR_RETURN(Graph g, ReadGraph(typed_input));
  RETURN_IF_ERROR(MakeDirs(out));
  RETURN_IF_ERROR(WriteNpy(out + "/src.npy", g.src));
  RETURN_IF_ERROR(WriteNpy(out + "/dst.npy", g.dst));
  const int64_t n = g.num_nodes;
  std::vector<int32_t> ntype(n);
  for (int t = 0; t < g.num_ntypes(); ++t) {
    std::fill(ntype.begin() + g.ntype_offsets[t], ntype.begin() + g.ntype_offsets[t + 1], t);
  }
  RETURN_IF_ERROR(WriteNpy(out + "/ntype.npy", Array::From(ntype)));
  ASSIGN_OR_RETURN(int paper, g.NodeTypeId(kPredictNtype));
  const auto& arrays = g.ntype_data[paper];
  auto mask_it = arrays.find("train_mask");
  auto feat_it = arrays.find("feat");
  if (mask_it == arrays.end() || feat_it == arrays.end()) {
    return absl::NotFoundError(StrCat(typed_input, ": papers need train_mask and feat"));
  }
  const Array& mask = mask_it->second;
  std::vector<uint8_t> train(n, 0);
  const size_t elem = DTypeSize(mask.dtype());
  const auto* bytes = static_cast<const uint8_t*>(mask.data());
  for (int64_t i = 0; i < mask.rows(); ++i) {
    bool set = false;
    for (size_t b = 0; b < elem; ++b) set |= bytes[i * elem + b] != 0;
    train[g.ntype_offsets[paper] + i] = set;
  }
  RETURN_IF_ERROR(WriteNpy(out + "/train_mask.npy", Array::From(train)));
  const Array& feat = feat_it->second;
  if (feat.dtype() != DType::kFloat32) {
    return absl::InvalidArgumentError(StrCat(typed_input, ": paper/feat is not float32"));
  }
  const int64_t dim = std::max<int64_t>(1, feat.numel() / n);
  if (feat.numel() < n * dim) {
    return absl::InvalidArgumentError(StrCat(typed_input, ": too few feature values"));
  }
  ASSIGN_OR_RETURN(NpyWriter writer,
                   NpyWriter::Create(out + "/feat.npy", DType::kFloat32, {n, dim}));
  RETURN_IF_ERROR(writer.AppendRows(feat.data(), n));
  RETURN_IF_ERROR(writer.Close());
  nlohmann::json meta = {{"num_nodes", n}};
  return WriteFileAtomic(out + "/meta.json", meta.dump(1));
}

// Generates the three graphs under `dir`.
StatusOr<std::vector<BenchGraph>> MakeGraphs(const HeteroFlags& f, const std::string& dir) {
  TypedGenerateOptions h{.num_nodes = f.nodes};
  ASSIGN_OR_RETURN(TypedShape shape, MagShape(h));
  const int64_t nodes = std::accumulate(shape.num_nodes.begin(), shape.num_nodes.end(), int64_t{0});
  const int64_t edges = std::accumulate(shape.num_edges.begin(), shape.num_edges.end(), int64_t{0});
  auto paper = std::find(shape.ntypes.begin(), shape.ntypes.end(), kPredictNtype);
  if (paper == shape.ntypes.end()) return absl::InternalError("the generator makes no papers");
  const int64_t papers = shape.num_nodes[paper - shape.ntypes.begin()];

  std::vector<BenchGraph> graphs(3);
  BenchGraph& typed = graphs[0];
  typed.name = "typed";
  typed.typed = true;
  typed.input = dir + "/typed/input";
  spdlog::info("bench hetero: generating the typed graph ({} nodes, {} edges)", nodes, edges);
  ASSIGN_OR_RETURN(GenerateStats ts, GenerateMagGraph(h, typed.input));
  typed.info = {{"nodes", ts.num_nodes},  {"edges", ts.num_edges},
                {"ntypes", shape.ntypes}, {"etypes", shape.etypes},
                {"feat_dim", h.feat_dim}, {"input_bytes", ts.bytes_written}};

  BenchGraph& homo = graphs[1];
  homo.name = "homogeneous";
  homo.input = dir + "/homogeneous/input";
  GenerateOptions o{
      .num_nodes = nodes,
      .num_undirected_edges = edges / 2,
      .feat_dim = std::max<int64_t>(1, std::llround(double(h.feat_dim) * papers / nodes)),
      .train_fraction = h.train_fraction * double(papers) / nodes};
  spdlog::info("bench hetero: generating the homogeneous graph (feature dimension {})", o.feat_dim);
  ASSIGN_OR_RETURN(GenerateStats hs, GenerateSbmGraph(o, homo.input));
  homo.info = {{"nodes", hs.num_nodes},
               {"edges", hs.num_edges},
               {"feat_dim", o.feat_dim},
               {"input_bytes", hs.bytes_written},
               {"generator", "tessera generate (degree-corrected SBM)"}};

  BenchGraph& same = graphs[2];
  same.name = "same_structure";
  same.input = dir + "/same_structure/input";
  same.partition_flags = {"--balance-ntypes", "ntype"};
  spdlog::info("bench hetero: writing the typed graph as a homogeneous one");
  RETURN_IF_ERROR(WriteSameStructure(typed.input, same.input));
  same.info = {
      {"nodes", nodes}, {"edges", ts.num_edges}, {"balance_ntypes", "ntype (the node type)"}};
  return graphs;
}

// `tessera partition` of `g` into `parts` parts in a child process.
StatusOr<ChildResult> PartitionChild(const HeteroFlags& f, const BenchGraph& g, int parts,
                                     const std::string& out) {
  std::vector<std::string> args = {"partition",    "--input", g.input,
                                   "--graph-name", "bench",   "--num-parts",
                                   StrCat(parts),  "--out",   out};
  if (parts == 1) args.insert(args.end(), {"--part-method", "random"});
  args.insert(args.end(), g.partition_flags.begin(), g.partition_flags.end());
  return RunSelf(std::move(args), f.timeout_s, StrCat("partition of ", g.input, " into ", parts));
}

// Partitions every graph (2 parts measured, 1 part for the standalone runs).
StatusOr<nlohmann::json> RunPartitions(const HeteroFlags& f, const std::string& dir,
                                       std::vector<BenchGraph>& graphs) {
  nlohmann::json runs = nlohmann::json::object();
  for (BenchGraph& g : graphs) {
    const std::string two = StrCat(dir, "/", g.name, "/two");
    spdlog::info("bench hetero: partitioning {} into 2 parts", g.name);
    ASSIGN_OR_RETURN(ChildResult child, PartitionChild(f, g, 2, two));
    g.two = two + "/bench.json";
    ASSIGN_OR_RETURN(Inspection in, InspectPartitions(g.two));
    nlohmann::json part_bytes = nlohmann::json::array();
    for (int p = 0; p < 2; ++p) part_bytes.push_back(DirectorySize(StrCat(two, "/part", p)));
    runs[g.name] = {{"flags", g.partition_flags},
                    {"wall_s", child.seconds},
                    {"peak_rss_bytes", child.peak_rss_bytes},
                    {"peak_rss_gib", child.peak_rss_bytes / double(1 << 30)},
                    {"peak_rss_bytes_per_edge", double(child.peak_rss_bytes) / in.num_edges},
                    {"edge_cut_fraction", in.edge_cut_fraction()},
                    {"node_balance", in.node_balance},
                    {"bytes_on_disk", in.bytes_on_disk},
                    {"part_bytes", part_bytes}};
    spdlog::info("bench hetero: {}: {:.1f} s, peak RSS {:.2f} GiB ({:.1f} B/edge)", g.name,
                 child.seconds, child.peak_rss_bytes / double(1 << 30),
                 double(child.peak_rss_bytes) / in.num_edges);
    const std::string one = StrCat(dir, "/", g.name, "/one");
    RETURN_IF_ERROR(PartitionChild(f, g, 1, one).status());
    g.one = one + "/bench.json";
  }
  auto ratio = [&](const char* a, const char* b, const char* key) {
    return runs[a][key].get<double>() / runs[b][key].get<double>();
  };
  nlohmann::json report = {
      {"parts", 2},
      {"method", "metis"},
      {"runs", runs},
      {"typed_over_homogeneous",
       {{"peak_rss_per_edge", ratio("typed", "homogeneous", "peak_rss_bytes_per_edge")},
        {"wall", ratio("typed", "homogeneous", "wall_s")}}},
      {"typed_over_same_structure",
       {{"peak_rss_per_edge", ratio("typed", "same_structure", "peak_rss_bytes_per_edge")},
        {"wall", ratio("typed", "same_structure", "wall_s")}}},
      {"target_peak_rss_per_edge_ratio_at_most", 1.0}};
  return report;
}

// A store to sample from and the shuffled seeds of its batches.
struct Sampler {
  const BenchGraph* graph = nullptr;
  kvstore::Services* store = nullptr;
  std::vector<int64_t> seeds;
  std::vector<double> ns_per_edge, edges_per_s, ms_per_batch;
  int64_t edges_per_batch = 0, input_nodes_per_batch = 0;
};

Status PrepareSampler(const HeteroFlags& f, Sampler& s, std::vector<int64_t> seeds) {
  std::mt19937_64 rng(7);
  std::shuffle(seeds.begin(), seeds.end(), rng);
  const size_t want = static_cast<size_t>(f.batches * f.batch_size);
  if (seeds.size() < static_cast<size_t>(f.batch_size)) {
    return absl::InvalidArgumentError(
        StrCat(s.graph->name, ": ", seeds.size(), " training seeds, fewer than a batch"));
  }
  seeds.resize(std::min(seeds.size(), want));
  s.seeds = std::move(seeds);
  return absl::OkStatus();
}

// One round: the same batches each round (typed: per-relation fanouts).
Status SampleRound(const HeteroFlags& f, Sampler& s) {
  const loader::NeighborSpec spec{.fanouts = f.fanouts};
  const int64_t batches = static_cast<int64_t>(s.seeds.size()) / f.batch_size;
  int64_t edges = 0, input_nodes = 0;
  Stopwatch watch;
  for (int64_t b = 0; b < batches; ++b) {
    std::vector<int64_t> seeds(s.seeds.begin() + b * f.batch_size,
                               s.seeds.begin() + (b + 1) * f.batch_size);
    const uint64_t seed = loader::DeriveSeed(11, static_cast<uint64_t>(b));
    ASSIGN_OR_RETURN(loader::MiniBatch mb,
                     loader::SampleBlocks(s.store->graph(), std::move(seeds), spec, seed));
    edges += mb.num_sampled_edges();
    for (const auto& nodes : mb.blocks.front().src_nodes) {
      input_nodes += static_cast<int64_t>(nodes.size());
    }
  }
  const double seconds = watch.Seconds();
  s.ns_per_edge.push_back(seconds * 1e9 / std::max<int64_t>(1, edges));
  s.edges_per_s.push_back(edges / seconds);
  s.ms_per_batch.push_back(1e3 * seconds / batches);
  s.edges_per_batch = edges / batches;
  s.input_nodes_per_batch = input_nodes / batches;
  return absl::OkStatus();
}

// Where one thread's time goes, per sampled edge: sample_neighbors (the
// store) against to_block (typed by the book on the typed graph), one pass over
// the same batches. Each to_block call is timed as the best of kRepeats
// calls on the same input, which takes out most of a shared machine's
// noise; sample_neighbors once (a repeat would find the rows in cache).
StatusOr<nlohmann::json> Breakdown(const HeteroFlags& f, const Sampler& s) {
  constexpr int kRepeats = 3;
  const loader::NeighborSpec spec{.fanouts = f.fanouts};
  const PartitionBook& book = s.store->book();
  const int64_t batches = static_cast<int64_t>(s.seeds.size()) / f.batch_size;
  double sample_s = 0, block_s = 0;
  int64_t edges = 0;
  // The best of kRepeats calls of `call`, which returns a Status; the last
  // call's result stays in what `call` writes.
  auto best_of = [&](auto&& call) -> StatusOr<double> {
    double best = 1e30;
    for (int i = 0; i < kRepeats; ++i) {
      Stopwatch watch;
      RETURN_IF_ERROR(call());
      best = std::min(best, watch.Seconds());
    }
    return best;
  };
  for (int64_t b = 0; b < batches; ++b) {
    std::vector<int64_t> frontier(s.seeds.begin() + b * f.batch_size,
                                  s.seeds.begin() + (b + 1) * f.batch_size);
    const uint64_t seed = loader::DeriveSeed(11, static_cast<uint64_t>(b));
    for (size_t l = f.fanouts.size(); l-- > 0;) {
      // Sampling reads rows that a repeat would find in cache: one call.
      Stopwatch sample_watch;
      ASSIGN_OR_RETURN(sampling::SampledEdges e,
                       s.store->graph().SampleNeighbors(
                           frontier, loader::LayerRequest(spec, book, l, seed, {})));
      const double sample_call = sample_watch.Seconds();
      sample_s += sample_call;
      edges += static_cast<int64_t>(e.size());
      sampling::Block block;
      ASSIGN_OR_RETURN(double block_call, best_of([&]() -> Status {
                         ASSIGN_OR_RETURN(
                             block, s.graph->typed
                                        ? sampling::ToBlock(book, frontier, e.src, e.dst, e.eid)
                                        : sampling::ToBlock(frontier, e.src, e.dst, e.eid));
                         return absl::OkStatus();
                       }));
      block_s += block_call;
      frontier = block.NextSeeds();
    }
  }
  const double per_edge = 1e9 / std::max<int64_t>(1, edges);
  return nlohmann::json{{"sample_neighbors_ns_per_edge", sample_s * per_edge},
                        {"to_block_ns_per_edge", block_s * per_edge}};
}

// Rounds alternating the samplers; medians, and typed / other per round.
StatusOr<nlohmann::json> SampleAll(const HeteroFlags& f, std::vector<Sampler>& samplers) {
  for (int r = 0; r < f.rounds; ++r) {
    for (Sampler& s : samplers) RETURN_IF_ERROR(SampleRound(f, s));
  }
  nlohmann::json out = nlohmann::json::object();
  for (const Sampler& s : samplers) {
    out[s.graph->name] = {{"seeds", s.seeds.size()},
                          {"batches", s.seeds.size() / f.batch_size},
                          {"ns_per_sampled_edge", Median(s.ns_per_edge)},
                          {"sampled_edges_per_s", Median(s.edges_per_s)},
                          {"ms_per_batch", Median(s.ms_per_batch)},
                          {"sampled_edges_per_batch", s.edges_per_batch},
                          {"input_nodes_per_batch", s.input_nodes_per_batch}};
  }
  for (size_t other = 1; other < samplers.size(); ++other) {
    std::vector<double> ratio;
    for (int r = 0; r < f.rounds; ++r) {
      ratio.push_back(samplers[0].ns_per_edge[r] / samplers[other].ns_per_edge[r]);
    }
    out[StrCat("typed_over_", samplers[other].graph->name, "_ns_per_edge")] = Median(ratio);
  }
  return out;
}

StatusOr<nlohmann::json> RunSampling(const HeteroFlags& f, const std::string& dir,
                                     const std::vector<BenchGraph>& graphs) {
  RetainFreedMemory();  // As a trainer does (dist::initialize) and servers do.
  nlohmann::json report = {{"fanouts", f.fanouts},
                           {"fanouts_are",
                            "per relation on the typed graph (DGL's "
                            "sample_etype_neighbors), in total on the others"},
                           {"batch_size", f.batch_size},
                           {"rounds", f.rounds},
                           {"sampler_threads", 0},
                           {"target_typed_over_homogeneous_at_most", kTargetSampleRatio}};
  {
    std::vector<std::unique_ptr<kvstore::LocalKvStore>> stores;
    std::vector<Sampler> samplers(graphs.size());
    for (size_t i = 0; i < graphs.size(); ++i) {
      ASSIGN_OR_RETURN(std::unique_ptr<kvstore::LocalKvStore> store,
                       kvstore::LocalKvStore::Open(graphs[i].one));
      samplers[i].graph = &graphs[i];
      samplers[i].store = store.get();
      ASSIGN_OR_RETURN(std::vector<int64_t> seeds, TrainSeeds(*store, kPredictNtype));
      RETURN_IF_ERROR(PrepareSampler(f, samplers[i], std::move(seeds)));
      stores.push_back(std::move(store));
    }
    spdlog::info("bench hetero: sampling standalone");
    ASSIGN_OR_RETURN(report["standalone"], SampleAll(f, samplers));
    nlohmann::json breakdown = nlohmann::json::object();
    for (const Sampler& s : samplers) {
      ASSIGN_OR_RETURN(breakdown[s.graph->name], Breakdown(f, s));
    }
    for (const char* part : {"sample_neighbors_ns_per_edge", "to_block_ns_per_edge"}) {
      breakdown[StrCat("typed_over_homogeneous_", part)] =
          breakdown["typed"][part].get<double>() / breakdown["homogeneous"][part].get<double>();
    }
    report["standalone_breakdown_1thread"] = std::move(breakdown);
  }
  std::vector<BenchJob> jobs;
  std::vector<Sampler> samplers(graphs.size());
  for (size_t i = 0; i < graphs.size(); ++i) {
    ASSIGN_OR_RETURN(BenchJob job, StartBenchJob(graphs[i].two, StrCat(dir, "/", graphs[i].name)));
    samplers[i].graph = &graphs[i];
    samplers[i].store = job.client.get();
    ASSIGN_OR_RETURN(std::vector<int64_t> train, TrainSeeds(*job.client, kPredictNtype));
    ASSIGN_OR_RETURN(std::vector<int64_t> mine,
                     SplitWork(train, job.client->book().node_offsets(), 2, 0));
    RETURN_IF_ERROR(PrepareSampler(f, samplers[i], std::move(mine)));
    jobs.push_back(std::move(job));
  }
  spdlog::info("bench hetero: sampling as trainer 0 of 2 machines");
  ASSIGN_OR_RETURN(report["two_machines_trainer0"], SampleAll(f, samplers));
  for (BenchJob& job : jobs) {
    RETURN_IF_ERROR(job.client->job().Close());
    RETURN_IF_ERROR(job.job->Wait(Deadline::InSeconds(60), nullptr, 30).status());
  }
  return report;
}

StatusOr<nlohmann::json> RunRgcn(const HeteroFlags& f, const std::string& dir,
                                 const BenchGraph& typed) {
  const std::string program =
      (std::filesystem::path(SelfExecutable()).parent_path() / "rgcn_train").string();
  if (!PathExists(program)) {
    return absl::NotFoundError(
        StrCat(program, " is missing: build the rgcn_train target (examples/rgcn)"));
  }
  nlohmann::json runs = nlohmann::json::array();
  for (bool standalone : {true, false}) {
    const std::string mode = standalone ? "standalone" : "distributed";
    TrainJobOptions o{
        .part_config = standalone ? typed.one : typed.two,
        .graph_name = "bench",
        .workdir = StrCat(dir, "/rgcn-", mode),
        .standalone = standalone,
        .trainers_per_machine = 1,
        .samplers = 0,
        .args = {"--num-epochs", StrCat(f.rgcn_epochs), "--predict-ntype", kPredictNtype},
        .program = {program},
        .capture = true,
        .timeout_s = f.timeout_s};
    spdlog::info("bench hetero: R-GCN {} ({} epoch(s), logs in {})", mode, f.rgcn_epochs,
                 o.workdir);
    ASSIGN_OR_RETURN(nlohmann::json r, RunTrainJob(o));
    nlohmann::json run = {{"mode", mode},
                          {"trainers", r["world_size"]},
                          {"epoch_time_mean_s", r["epoch_time_mean_s"]},
                          {"epoch_times_s", nlohmann::json::array()},
                          {"val_acc", r["val_acc"]},
                          {"test_acc", r["test_acc"]},
                          {"majority_acc", r["majority_acc"]},
                          {"trainer0_peak_rss_bytes", r["peak_rss_bytes"]},
                          {"trainer0_total_s", r["total_s"]}};
    for (const auto& e : r["epochs"]) run["epoch_times_s"].push_back(e["time_s"]);
    spdlog::info("bench hetero: R-GCN {}: epoch {:.1f} s, test acc {:.4f}", mode,
                 run["epoch_time_mean_s"].get<double>(), run["test_acc"].get<double>());
    runs.push_back(std::move(run));
  }
  nlohmann::json report = {
      {"program",
       "rgcn_train (examples/rgcn/train_rgcn.cpp), its defaults: fan-out 10,10, "
       "batch 1024, hidden 64, 2 bases, embeddings for featureless types"},
      {"epochs", f.rgcn_epochs},
      {"runs", runs},
      {"distributed_over_standalone_epoch",
       runs[1]["epoch_time_mean_s"].get<double>() / runs[0]["epoch_time_mean_s"].get<double>()}};
  return report;
}

Status RunBenchHetero(const HeteroFlags& f, const std::string& dir) {
  for (const std::string& stage : f.stages) {
    if (stage != "partition" && stage != "sample" && stage != "rgcn") {
      return absl::InvalidArgumentError(
          StrCat("--stages: '", stage, "' is none of partition, sample, rgcn"));
    }
  }
  ASSIGN_OR_RETURN(std::vector<BenchGraph> graphs, MakeGraphs(f, dir));
  nlohmann::json report = {{"benchmark", "hetero"},
                           {"hardware_threads", std::thread::hardware_concurrency()},
                           {"graphs", nlohmann::json::object()}};
  for (const BenchGraph& g : graphs) report["graphs"][g.name] = g.info;
  // The partitions every stage needs; measured only with the partition stage.
  ASSIGN_OR_RETURN(nlohmann::json partition, RunPartitions(f, dir, graphs));
  if (Wants(f, "partition")) report["partition"] = std::move(partition);
  for (BenchGraph& g : graphs) {  // The inputs are not read again.
    RETURN_IF_ERROR(RemoveAll(g.input));
  }
  if (Wants(f, "sample")) {
    ASSIGN_OR_RETURN(report["sample"], RunSampling(f, dir, graphs));
  }
  if (Wants(f, "rgcn")) {
    ASSIGN_OR_RETURN(report["rgcn"], RunRgcn(f, dir, graphs[0]));
  }
  std::fputs((report.dump(1) + "\n").c_str(), stdout);
  return absl::OkStatus();
}

}  // namespace

Command RegisterBenchHetero(CLI::App* bench) {
  auto f = std::make_shared<HeteroFlags>();
  CLI::App* sub = bench->add_subcommand(
      "hetero",
      "Heterogeneous graphs on a generated ogbn-mag shaped graph: partition time and memory, "
      "typed sampling against homogeneous sampling, R-GCN epochs (standalone and 2 machines)");
  sub->add_option("--nodes", f->nodes,
                  "Nodes of the generated graph, all types (ogbn-mag's count by default; "
                  "edges follow, as in `tessera generate --hetero`)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1000}, int64_t{1} << 32));
  sub->add_option("--workdir", f->workdir, "Scratch folder (default: a temporary folder)");
  sub->add_option("--stages", f->stages, "partition, sample and/or rgcn")
      ->delimiter(',')
      ->capture_default_str();
  sub->add_option("--fanouts", f->fanouts,
                  "Sampling fanouts per layer, input layer first (per relation on the typed "
                  "graph)")
      ->delimiter(',')
      ->capture_default_str();
  sub->add_option("--batch-size", f->batch_size, "Seeds per sampled batch")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 30));
  sub->add_option("--batches", f->batches, "Batches per sampling measurement")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  sub->add_option("--rounds", f->rounds, "Sampling rounds, alternating the graphs")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  sub->add_option("--rgcn-epochs", f->rgcn_epochs, "R-GCN epochs per run")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  sub->add_option("--timeout", f->timeout_s, "Seconds allowed per child process or job")
      ->capture_default_str()
      ->check(Seconds(1, 1e6));
  return {sub, BenchRunner(&f->workdir, "tessera-bench-hetero",
                           [f](const std::string& dir) { return RunBenchHetero(*f, dir); })};
}

}  // namespace tessera::tools
