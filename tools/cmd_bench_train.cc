// `tessera bench train`: GraphSAGE training on the benchmark graph of
// shared/baselines.md with DGL's example configuration (2 layers, fan-out
// 10,25, batch 1000, lr 0.003, dropout 0.5, 3 epochs, layer-wise inference
// after the last), standalone (one process, one part) and on a 2-machine
// loopback job (2 parts x 1 trainer), for each --hidden. Prints JSON: epoch
// time and its split, inference time, test accuracy. DGL itself, in the same
// run: bench/train_vs_dgl.py (no recorded DGL figures here: they went stale).
#include <filesystem>
#include <map>
#include <thread>

#include "nlohmann/json.hpp"
#include "spdlog/spdlog.h"
#include "tessera/base/file.h"
#include "tessera/base/strings.h"
#include "tools/bench_job.h"
#include "tools/commands.h"
#include "tools/train_job.h"

namespace tessera::tools {
namespace {

struct TrainFlags {
  std::string graph, workdir;
  std::vector<int> hidden = {16, 256};
  std::vector<std::string> modes = {"standalone", "distributed"};
  // cpp: examples/graphsage/train_dist.cpp; python: the same model and loop
  // in examples/python/graphsage/node_classification.py (PyTorch's DDP).
  std::vector<std::string> programs = {"cpp", "python"};
  int epochs = 3;
  int samplers = 0;
  double timeout_s = 3600;
  bool no_encryption = false;
};

StatusOr<nlohmann::json> RunOne(const TrainFlags& f, const BenchPartitions& parts,
                                const std::string& program, const std::string& mode, int hidden,
                                const std::string& dir) {
  TrainJobOptions o{.part_config = mode == "standalone" ? parts.one : parts.two,
                    .graph_name = "bench",
                    .workdir = StrCat(dir, "/train-", program, "-", mode, "-", hidden),
                    .standalone = mode == "standalone",
                    .trainers_per_machine = 1,
                    .samplers = f.samplers,
                    .capture = true,
                    .timeout_s = f.timeout_s};
  o.encryption = !f.no_encryption;
  o.args = {"--num-epochs", std::to_string(f.epochs),
            "--eval-every", std::to_string(f.epochs),
            "--batch-size", "1000",
            "--fan-out",    "10,25",
            "--num-hidden", std::to_string(hidden),
            "--num-layers", "2",
            "--lr",         "0.003",
            "--dropout",    "0.5",
            "--log-every",  "0"};
  if (program == "python") {
    ASSIGN_OR_RETURN(o.program, PythonExample());
    o.args.insert(o.args.end(), {"--batch-size-eval", "10000"});
  }
  spdlog::info("bench train: {} {} hidden {} ({} epochs, logs in {})", program, mode, hidden,
               f.epochs, o.workdir);
  ASSIGN_OR_RETURN(nlohmann::json r, RunTrainJob(o));
  nlohmann::json split = {
      {"sample_s", 0.0}, {"pull_s", 0.0}, {"forward_backward_s", 0.0}, {"sync_s", 0.0}};
  for (const auto& e : r["epochs"]) {
    for (auto& [key, value] : split.items()) value = value.get<double>() + e[key].get<double>();
  }
  for (auto& [key, value] : split.items()) value = value.get<double>() / f.epochs;
  nlohmann::json run = {{"program", program},
                        {"mode", mode},
                        {"num_hidden", hidden},
                        {"trainers", r["world_size"]},
                        {"samplers", f.samplers},
                        {"batches_per_epoch", r["batches_per_epoch"]},
                        {"epoch_time_mean_s", r["epoch_time_mean_s"]},
                        {"epoch_split_mean_s", split},
                        {"epoch_times_s", nlohmann::json::array()},
                        {"inference_s", r["inference_s"]},
                        {"val_acc", r["val_acc"]},
                        {"test_acc", r["test_acc"]},
                        {"trainer0_peak_rss_bytes", r["peak_rss_bytes"]},
                        {"trainer0_total_s", r["total_s"]}};
  for (const auto& e : r["epochs"]) run["epoch_times_s"].push_back(e["time_s"]);
  return run;
}

Status RunBenchTrain(const TrainFlags& f, const std::string& dir) {
  ASSIGN_OR_RETURN(BenchPartitions parts, EnsureBenchPartitions(f.graph, dir));
  nlohmann::json runs = nlohmann::json::array();
  std::map<std::string, double> cpp_epoch;  // "<mode>/<hidden>" -> C++ epoch time.
  for (const std::string& program : f.programs) {
    if (program != "cpp" && program != "python") {
      return absl::InvalidArgumentError(
          StrCat("--programs: '", program, "' is neither cpp nor python"));
    }
  }
  for (int hidden : f.hidden) {
    for (const std::string& mode : f.modes) {
      if (mode != "standalone" && mode != "distributed") {
        return absl::InvalidArgumentError(
            StrCat("--modes: '", mode, "' is neither standalone nor distributed"));
      }
      for (const std::string& program : f.programs) {
        ASSIGN_OR_RETURN(nlohmann::json run, RunOne(f, parts, program, mode, hidden, dir));
        const std::string key = StrCat(mode, "/", hidden);
        if (program == "cpp") cpp_epoch[key] = run["epoch_time_mean_s"].get<double>();
        if (program == "python" && cpp_epoch.count(key)) {
          run["epoch_time_vs_cpp"] = run["epoch_time_mean_s"].get<double>() / cpp_epoch[key];
        }
        spdlog::info(
            "bench train: {} {} hidden {}: epoch {:.2f} s, inference {:.2f} s, test acc {:.4f}",
            program, mode, hidden, run["epoch_time_mean_s"].get<double>(),
            run["inference_s"].get<double>(), run["test_acc"].get<double>());
        runs.push_back(std::move(run));
      }
    }
  }
  nlohmann::json report = {{"benchmark", "train"},
                           {"epochs", f.epochs},
                           {"encrypted", !f.no_encryption},
                           {"hardware_threads", std::thread::hardware_concurrency()},
                           {"config",
                            {{"layers", 2},
                             {"fan_out", {10, 25}},
                             {"batch_size", 1000},
                             {"lr", 0.003},
                             {"dropout", 0.5}}},
                           {"runs", runs}};
  std::fputs((report.dump(1) + "\n").c_str(), stdout);
  return absl::OkStatus();
}

}  // namespace

Command RegisterBenchTrain(CLI::App* bench) {
  auto f = std::make_shared<TrainFlags>();
  CLI::App* sub = bench->add_subcommand(
      "train", "GraphSAGE epochs, inference and accuracy, standalone and on 2 loopback machines");
  sub->add_option("--graph", f->graph,
                  "Benchmark graph folder (shared/tools/gen_graph.py); optional when --workdir "
                  "holds the partitions of an earlier bench sample/train run");
  sub->add_option("--workdir", f->workdir,
                  "Scratch folder, reused across runs (default: temporary)");
  sub->add_option("--hidden", f->hidden, "Hidden sizes")->delimiter(',')->capture_default_str();
  sub->add_option("--modes", f->modes, "standalone and/or distributed")
      ->delimiter(',')
      ->capture_default_str();
  sub->add_option("--programs", f->programs, "cpp and/or python (the ported DGL example)")
      ->delimiter(',')
      ->capture_default_str();
  sub->add_option("--epochs", f->epochs)->capture_default_str()->check(CLI::Range(1, 1000));
  sub->add_option("--samplers", f->samplers, "Sampler threads per trainer")
      ->capture_default_str()
      ->check(CLI::Range(0, 64));
  sub->add_option("--timeout", f->timeout_s, "Seconds allowed per run")
      ->capture_default_str()
      ->check(Seconds(1, 1e6));
  sub->add_flag("--no-encryption", f->no_encryption,
                "Distributed runs without encryption (`tessera launch --no-encryption`)");
  return {sub, BenchRunner(&f->workdir, "tessera-bench-train",
                           [f](const std::string& dir) { return RunBenchTrain(*f, dir); })};
}

}  // namespace tessera::tools
