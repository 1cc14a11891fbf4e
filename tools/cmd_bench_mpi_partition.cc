// `tessera bench mpi-partition`: distributed partitioning (`tessera chunk` then
// `tessera mpi-partition` with 1, 2, 4... ranks on this machine) next to
// `tessera partition` on the same graph and options: wall time, every rank's
// peak RSS, edge cut and balance, printed as JSON. Each run is its own
// process (group), so the figures are that configuration's.
#include <algorithm>
#include <memory>
#include <thread>

#include "nlohmann/json.hpp"
#include "spdlog/spdlog.h"
#include "src/partition/inspect.h"
#include "tessera/base/file.h"
#include "tessera/base/strings.h"
#include "tools/bench_job.h"
#include "tools/commands.h"

namespace tessera::tools {
namespace {

struct MpiBenchFlags {
  std::vector<std::string> graphs;
  std::vector<int> ranks = {1, 2, 4};
  int parts = 4;
  std::vector<std::string> methods = {"metis", "random"};
  std::string workdir, mpirun = "mpirun";
  std::vector<std::string> mpirun_args;
  int num_chunks = 8;
  double timeout_s = 3600;
  std::vector<double> coarsening = {8};  // metis runs: one per value.
};

StatusOr<ChildResult> Run(const MpiBenchFlags& f, std::vector<std::string> args,
                          const std::string& what) {
  spdlog::info("bench: {}", what);
  return RunSelf(std::move(args), f.timeout_s, what);
}

// The partition's figures: `tessera inspect --json`'s, without the parts.
StatusOr<nlohmann::json> Figures(const std::string& config) {
  ASSIGN_OR_RETURN(Inspection in, InspectPartitions(config));
  nlohmann::json figures = nlohmann::json::parse(in.ToJson());
  figures.erase("parts");
  return figures;
}

// Every (rank count, coarsening) pair, rank counts outermost.
std::vector<std::pair<int, double>> Cross(const std::vector<int>& ranks,
                                          const std::vector<double>& factors) {
  std::vector<std::pair<int, double>> out;
  for (int r : ranks) {
    for (double x : factors) out.push_back({r, x});
  }
  return out;
}

StatusOr<nlohmann::json> BenchGraph(const MpiBenchFlags& f, const std::string& graph,
                                    const std::string& workdir) {
  const std::string chunked = workdir + "/chunked";
  RETURN_IF_ERROR(RemoveAll(chunked));
  ASSIGN_OR_RETURN(ChildResult chunk,
                   Run(f,
                       {"chunk", "--input", graph, "--out", chunked, "--num-chunks",
                        StrCat(f.num_chunks), "--edge-format", "numpy", "--graph-name", "bench"},
                       StrCat("chunk ", graph)));
  const bool balance = PathExists(graph + "/train_mask.npy");
  nlohmann::json runs = nlohmann::json::array();
  for (const std::string& method : f.methods) {
    std::vector<std::string> options = {"--num-parts", StrCat(f.parts), "--part-method", method};
    if (balance && method == "metis") {
      options.insert(options.end(), {"--balance-ntypes", "train_mask"});
    }
    const std::string serial_out = StrCat(workdir, "/serial-", method);
    std::vector<std::string> serial_args = {"partition", "--input", graph,     "--graph-name",
                                            "bench",     "--out",   serial_out};
    serial_args.insert(serial_args.end(), options.begin(), options.end());
    ASSIGN_OR_RETURN(ChildResult serial, Run(f, serial_args, StrCat("partition ", method)));
    ASSIGN_OR_RETURN(nlohmann::json serial_figures, Figures(serial_out + "/bench.json"));
    RETURN_IF_ERROR(RemoveAll(serial_out));
    serial_figures["wall_s"] = serial.seconds;
    serial_figures["peak_rss_bytes"] = serial.peak_rss_bytes;
    const std::vector<double> coarsening =
        method == "metis" ? f.coarsening : std::vector<double>{1};
    for (auto [ranks, factor] : Cross(f.ranks, coarsening)) {
      if (f.parts % ranks != 0) continue;
      const std::string out = StrCat(workdir, "/mpi-", method, "-", ranks);
      const std::string stats_path = out + ".stats.json";
      std::vector<std::string> args = {
          "mpi-partition", "--ranks", StrCat(ranks), "--mpirun",     f.mpirun,  "--input",
          chunked,         "--out",   out,           "--stats-json", stats_path};
      for (const std::string& arg : f.mpirun_args) args.push_back("--mpirun-arg=" + arg);
      args.insert(args.end(), options.begin(), options.end());
      if (method == "metis") args.insert(args.end(), {"--coarsening", StrCat(factor)});
      ASSIGN_OR_RETURN(ChildResult child,
                       Run(f, args,
                           StrCat("mpi-partition ", method, ", ", ranks, " ranks",
                                  method == "metis" ? StrCat(", coarsening ", factor) : "")));
      ASSIGN_OR_RETURN(std::string text, ReadFileToString(stats_path));
      auto stats = nlohmann::json::parse(text, nullptr, false);
      if (stats.is_discarded()) return absl::InternalError(stats_path + ": not JSON");
      ASSIGN_OR_RETURN(nlohmann::json run, Figures(out + "/bench.json"));
      RETURN_IF_ERROR(RemoveAll(out));
      RETURN_IF_ERROR(RemoveAll(stats_path));
      std::vector<int64_t> peak(ranks, 0);
      nlohmann::json steps = nlohmann::json::object();
      for (const auto& step : stats["steps"]) {
        steps[step["name"].get<std::string>()] = step["seconds"];
        const auto rss = step["peak_rss_bytes"].get<std::vector<int64_t>>();
        for (int r = 0; r < ranks && r < static_cast<int>(rss.size()); ++r) {
          peak[r] = std::max(peak[r], rss[r]);
        }
      }
      const int64_t most = *std::max_element(peak.begin(), peak.end());
      run["graph"] = graph;
      run["method"] = method;
      run["parts"] = f.parts;
      run["ranks"] = ranks;
      if (method == "metis") run["coarsening"] = factor;
      run["wall_s"] = child.seconds;
      run["step_seconds"] = steps;
      run["peak_rss_bytes_per_rank"] = peak;
      run["max_rank_peak_rss_bytes"] = most;
      run["serial"] = serial_figures;
      run["max_rank_rss_vs_serial"] = static_cast<double>(most) / serial.peak_rss_bytes;
      run["cut_vs_serial"] =
          serial_figures["edge_cut"].get<int64_t>() > 0
              ? run["edge_cut"].get<double>() / serial_figures["edge_cut"].get<double>()
              : 1.0;
      runs.push_back(std::move(run));
    }
  }
  RETURN_IF_ERROR(RemoveAll(chunked));
  return nlohmann::json{{"graph", graph}, {"chunk_wall_s", chunk.seconds}, {"runs", runs}};
}

}  // namespace

Command RegisterBenchMpiPartition(CLI::App* bench) {
  auto f = std::make_shared<MpiBenchFlags>();
  CLI::App* sub = bench->add_subcommand(
      "mpi-partition",
      "Distributed partitioning with 1, 2, 4... ranks next to tessera partition: time, every "
      "rank's peak RSS, cut");
  sub->add_option("--graph", f->graphs, "Graph folder(s) (any tessera partition input)")
      ->required();
  sub->add_option("--ranks", f->ranks, "Rank counts (each must divide --parts)")
      ->delimiter(',')
      ->capture_default_str()
      ->check(CLI::Range(1, 4096));
  sub->add_option("--parts", f->parts, "Number of parts")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  sub->add_option("--methods", f->methods, "metis and/or random")
      ->delimiter(',')
      ->capture_default_str();
  sub->add_option("--num-chunks", f->num_chunks, "Chunks of the chunked copy")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  sub->add_option("--workdir", f->workdir, "Scratch folder (default: a temporary folder)");
  sub->add_option("--mpirun", f->mpirun, "The mpirun program")->capture_default_str();
  sub->add_option("--mpirun-arg", f->mpirun_args, "One more argument for mpirun");
  sub->add_option("--coarsening", f->coarsening,
                  "metis: mpi-partition's --coarsening, a run for each value (1: PT-Scotch on "
                  "the input graph)")
      ->delimiter(',')
      ->check(CLI::Range(1.0, 1e6))
      ->capture_default_str();
  sub->add_option("--timeout", f->timeout_s, "Seconds allowed per run")
      ->capture_default_str()
      ->check(Seconds(1, 1e6));
  return {sub, BenchRunner(&f->workdir, "tessera-bench-mpi", [f](const std::string& dir) {
            nlohmann::json graphs = nlohmann::json::array();
            for (const std::string& graph : f->graphs) {
              ASSIGN_OR_RETURN(nlohmann::json result, BenchGraph(*f, graph, dir));
              graphs.push_back(std::move(result));
            }
            nlohmann::json report = {{"benchmark", "mpi-partition"},
                                     {"hardware_threads", std::thread::hardware_concurrency()},
                                     {"graphs", graphs}};
            std::fputs((report.dump(1) + "\n").c_str(), stdout);
            return absl::OkStatus();
          })};
}

}  // namespace tessera::tools
