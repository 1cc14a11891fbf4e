// `tessera bench partition`: wall time, peak RSS, edge cut and size on disk of
// partitioning given graphs (each configuration in its own process, so peak
// RSS is that configuration's), printed as JSON, next to DGL's figures for
// the benchmark graph of shared/baselines.md.
#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <numeric>
#include <thread>

#include "nlohmann/json.hpp"
#include "spdlog/spdlog.h"
#include "src/graph/npy.h"
#include "src/partition/inspect.h"
#include "src/partition/partition.h"
#include "tessera/base/file.h"
#include "tessera/base/strings.h"
#include "tessera/graph/readers.h"
#include "tools/bench_job.h"
#include "tools/commands.h"
#include "tools/subprocess.h"

namespace tessera::tools {
namespace {

struct BenchFlags {
  std::vector<std::string> graphs;
  std::vector<int> parts = {2, 4};
  std::vector<std::string> methods = {"metis", "random"};
  std::vector<double> coarsening = {1};  // metis only; 1: METIS on the whole graph.
  std::string workdir;
  double timeout_s = 3600;
};

// DGL 1.1.3 on the 600k-node / 14,953,958-edge graph (shared/baselines.md §1).
struct DglFigure {
  double wall_s, peak_rss_gib, edge_cut_fraction;
};
const std::map<std::pair<std::string, int>, DglFigure> kDglMedium = {
    {{"metis", 2}, {36.8, 3.24, 0.100}},
    {{"metis", 4}, {40.3, 3.36, 0.176}},
    {{"random", 2}, {34.8, 3.48, 0.500}},
    {{"random", 4}, {37.7, 3.77, 0.750}}};
constexpr int64_t kMediumEdges = 14'953'958;

StatusOr<nlohmann::json> BenchOne(const BenchFlags& f, const std::string& graph,
                                  const std::string& method, int parts, double coarsening,
                                  const std::string& workdir) {
  const std::string out = StrCat(workdir, "/", method, "-", parts);
  std::vector<std::string> args = {"partition",    "--input",       graph,
                                   "--graph-name", "bench",         "--num-parts",
                                   StrCat(parts),  "--part-method", method};
  args.insert(args.end(), {"--balance-edges", "--return-mapping", "--out", out});
  if (PathExists(graph + "/train_mask.npy")) {
    args.insert(args.end(), {"--balance-ntypes", "train_mask"});
  }
  if (coarsening != 1) args.insert(args.end(), {"--coarsening", StrCat(coarsening)});
  spdlog::info("bench: {} {} parts of {}{}", method, parts, graph,
               coarsening != 1 ? StrCat(", coarsening ", coarsening) : "");
  ASSIGN_OR_RETURN(ChildResult child,
                   RunSelf(std::move(args), f.timeout_s, StrCat("partition of ", graph)));
  ASSIGN_OR_RETURN(Inspection in, InspectPartitions(out + "/bench.json"));
  nlohmann::json run = {
      {"graph", graph},
      {"num_nodes", in.num_nodes},
      {"num_edges", in.num_edges},
      {"method", method},
      {"coarsening", coarsening},
      {"parts", parts},
      {"wall_s", child.seconds},
      {"peak_rss_bytes", child.peak_rss_bytes},
      {"peak_rss_gib", child.peak_rss_bytes / double(1 << 30)},
      {"peak_rss_bytes_per_edge", static_cast<double>(child.peak_rss_bytes) / in.num_edges},
      {"edge_cut", in.edge_cut},
      {"edge_cut_fraction", in.edge_cut_fraction()},
      {"node_balance", in.node_balance},
      {"edge_balance", in.edge_balance},
      {"train_mask_balance", in.balanced_array_balance},
      {"bytes_on_disk", in.bytes_on_disk}};
  auto dgl = kDglMedium.find({method, parts});
  if (in.num_edges == kMediumEdges && dgl != kDglMedium.end() && coarsening == 1) {
    run["dgl"] = {{"wall_s", dgl->second.wall_s},
                  {"peak_rss_gib", dgl->second.peak_rss_gib},
                  {"edge_cut_fraction", dgl->second.edge_cut_fraction}};
    run["time_vs_dgl"] = child.seconds / dgl->second.wall_s;
    run["rss_vs_dgl"] = child.peak_rss_bytes / double(1 << 30) / dgl->second.peak_rss_gib;
  }
  RETURN_IF_ERROR(RemoveAll(out));
  return run;
}

Status RunBench(const BenchFlags& f, const std::string& workdir) {
  nlohmann::json runs = nlohmann::json::array();
  for (const std::string& graph : f.graphs) {
    for (const std::string& method : f.methods) {
      for (int parts : f.parts) {
        for (double coarsening : f.coarsening) {
          if (method != "metis" && coarsening != 1) continue;
          ASSIGN_OR_RETURN(nlohmann::json run,
                           BenchOne(f, graph, method, parts, coarsening, workdir));
          runs.push_back(std::move(run));
        }
      }
    }
  }
  nlohmann::json report = {{"benchmark", "partition"},
                           {"hardware_threads", std::thread::hardware_concurrency()},
                           {"runs", runs}};
  std::fputs((report.dump(1) + "\n").c_str(), stdout);
  return absl::OkStatus();
}

}  // namespace

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

StatusOr<std::vector<int64_t>> TrainSeeds(kvstore::Services& store, const std::string& ntype) {
  const PartitionBook& book = store.book();
  int type = 0;
  std::string key = "node/train_mask";
  if (!book.is_homogeneous()) {
    auto it = std::find(book.ntypes().begin(), book.ntypes().end(), ntype);
    if (it == book.ntypes().end()) return absl::NotFoundError(StrCat("no node type '", ntype, "'"));
    type = static_cast<int>(it - book.ntypes().begin());
    key = StrCat("node/", ntype, "/train_mask");
  }
  StatusOr<kvstore::TensorMeta> meta = store.features().Meta(key);
  const bool every_node = book.is_homogeneous() && absl::IsNotFound(meta.status());
  if (!meta.ok() && !every_node) return meta.status();
  const int64_t n = every_node ? book.num_nodes() : meta->shape[0];
  std::vector<int64_t> all(static_cast<size_t>(n));
  std::iota(all.begin(), all.end(), 0);
  if (every_node) return all;
  const size_t elem = meta->row_bytes();
  std::vector<uint8_t> raw(static_cast<size_t>(n) * elem);
  RETURN_IF_ERROR(store.features().PullInto(key, all, LayoutOf(*meta), raw.data()));
  std::vector<int64_t> seeds;
  for (int64_t v = 0; v < n; ++v) {
    bool set = false;
    for (size_t b = 0; b < elem; ++b) set |= raw[v * elem + b] != 0;
    if (set) seeds.push_back(book.is_homogeneous() ? v : book.MapToHomoNid(type, v));
  }
  std::sort(seeds.begin(), seeds.end());
  return seeds;
}

std::function<int()> BenchRunner(const std::string* workdir, const std::string& prefix,
                                 std::function<Status(const std::string& workdir)> bench) {
  return [=] {
    auto dir = OpenScratchDir(*workdir, prefix);
    if (!dir.ok()) return ReportError(dir.status());
    Status st = bench(dir->path());
    return st.ok() ? 0 : ReportError(st);
  };
}

StatusOr<ChildResult> RunSelf(std::vector<std::string> args, double timeout_s,
                              const std::string& what) {
  args.insert(args.begin(), {SelfExecutable(), "--log-level", "warn"});
  ASSIGN_OR_RETURN(ChildResult child, RunChild(args, Deadline::InSeconds(timeout_s)));
  if (child.exit_code != 0) {
    return absl::InternalError(StrCat(what, " exited with ", child.exit_code));
  }
  return child;
}

StatusOr<BenchJob> StartBenchJob(const std::string& part_config, const std::string& workdir,
                                 bool encryption, int num_clients) {
  BenchJob b;
  launcher::LocalJobOptions options{.tessera_binary = SelfExecutable(),
                                    .part_config = part_config,
                                    .workdir = workdir + (encryption ? "/job" : "/job-plain"),
                                    .num_clients = num_clients,
                                    .encryption = encryption};
  ASSIGN_OR_RETURN(b.job, launcher::LocalJob::Start(options));
  ASSIGN_OR_RETURN(b.client, kvstore::KvClient::Connect(BenchClient(*b.job, 0, num_clients)));
  return b;
}

kvstore::KvClientOptions BenchClient(const launcher::LocalJob& job, int client_id,
                                     int num_clients) {
  const launcher::JobEnv& env = job.base_env();
  return {.job_id = env.job_id,
          .token = env.token,
          .curve_secret_key = env.curve_secret_key,
          .client_id = client_id,
          .machine_id = 0,
          .servers = job.ip_config().ServerEndpoints(1),
          .num_clients = num_clients};
}

StatusOr<BenchPartitions> EnsureBenchPartitions(const std::string& graph_path,
                                                const std::string& workdir) {
  BenchPartitions parts{workdir + "/one/bench.json", workdir + "/two/bench.json"};
  if (std::filesystem::exists(parts.one) && std::filesystem::exists(parts.two)) {
    spdlog::info("bench: reusing the partitions in {}", workdir);
    return parts;
  }
  if (graph_path.empty()) {
    return absl::InvalidArgumentError(
        "pass --graph (e.g. made by `python3 shared/tools/gen_graph.py --out /tmp/medium`), or "
        "a --workdir that holds the partitions of an earlier run");
  }
  ASSIGN_OR_RETURN(Graph graph, ReadGraph(graph_path));
  for (int count : {1, 2}) {
    const std::string& config = count == 1 ? parts.one : parts.two;
    if (std::filesystem::exists(config)) continue;
    PartitionOptions options;
    options.part_method = count == 1 ? PartMethod::kRandom : PartMethod::kMetis;
    if (graph.node_data.count("train_mask")) options.balance_ntypes = "train_mask";
    options.balance_edges = true;
    ASSIGN_OR_RETURN(PartitionResult result,
                     PartitionGraph(graph, "bench", count,
                                    std::filesystem::path(config).parent_path().string(), options));
    (void)result;
  }
  return parts;
}

Command RegisterBench(CLI::App& app) {
  auto f = std::make_shared<BenchFlags>();
  CLI::App* bench = app.add_subcommand("bench", "Benchmarks that print JSON");
  bench->require_subcommand(1);
  CLI::App* sub = bench->add_subcommand("partition", "Time and memory of tessera partition");
  sub->add_option("--graph", f->graphs, "Graph folder(s) to partition")->required();
  sub->add_option("--parts", f->parts, "Part counts")->delimiter(',')->capture_default_str();
  sub->add_option("--methods", f->methods, "metis and/or random")
      ->delimiter(',')
      ->capture_default_str();
  sub->add_option("--coarsening", f->coarsening,
                  "metis: tessera partition --coarsening values, each its own run (1: METIS on "
                  "the whole graph)")
      ->delimiter(',')
      ->check(CLI::Range(1.0, 1e6))
      ->capture_default_str();
  sub->add_option("--workdir", f->workdir, "Scratch folder (default: a temporary folder)");
  sub->add_option("--timeout", f->timeout_s, "Seconds allowed per configuration")
      ->capture_default_str()
      ->check(Seconds(1, 1e6));
  const std::vector<Command> subs = {RegisterBenchPull(bench), RegisterBenchSample(bench),
                                     RegisterBenchTrain(bench), RegisterBenchHetero(bench),
                                     RegisterBenchMpiPartition(bench)};
  std::function<int()> run_partition = BenchRunner(
      &f->workdir, "tessera-bench", [f](const std::string& dir) { return RunBench(*f, dir); });
  return {bench, [subs, run_partition] {
            for (const Command& c : subs) {
              if (c.subcommand->parsed()) return c.run();
            }
            return run_partition();  // `bench partition`.
          }};
}

}  // namespace tessera::tools
