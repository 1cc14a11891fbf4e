// `tessera demo`: the main job of the README, end to end on one host.
// Generates a graph (or reads --dataset), partitions it with METIS, starts a
// local job (one "machine" per part on loopback: a server and the trainers of
// each), trains GraphSAGE with synchronous SGD across the trainers, and
// prints the test accuracy and timings. Nothing is left running afterwards,
// not even after Ctrl-C.
#include <memory>

#include "spdlog/spdlog.h"
#include "src/graph/generator.h"
#include "src/partition/partition.h"
#include "tessera/base/file.h"
#include "tessera/base/strings.h"
#include "tessera/base/time.h"
#include "tessera/graph/readers.h"
#include "tools/commands.h"
#include "tools/subprocess.h"
#include "tools/train_job.h"

namespace tessera::tools {
namespace {

struct DemoFlags {
  std::string dataset, workdir;
  int parts = 2, trainers = 1, samplers = 1, epochs = 20;
  int64_t nodes = 50'000;
  bool keep = false;
  bool python = false;      // Train with examples/python/graphsage/node_classification.py.
  bool epochs_set = false;  // --epochs given (otherwise: what fits the dataset).
  bool no_encryption = false;
  std::vector<std::string> train_args;
};

Status RunDemo(const DemoFlags& f, const std::string& workdir) {
  Stopwatch watch;
  std::string input = f.dataset;
  if (input.empty()) {
    GenerateOptions gen{.num_nodes = f.nodes,
                        .num_undirected_edges = f.nodes * 10,
                        .feat_dim = 32,
                        .num_classes = 10};
    input = workdir + "/graph";
    spdlog::info("demo 1/3: generating a {}-node graph with {} classes", gen.num_nodes,
                 gen.num_classes);
    ASSIGN_OR_RETURN(auto stats, GenerateSbmGraph(gen, input));
    (void)stats;
  }
  spdlog::info("demo 2/3: partitioning {} into {} parts (METIS, train_mask and edges balanced)",
               input, f.parts);
  ASSIGN_OR_RETURN(Graph graph, ReadGraph(input));
  for (const char* name : {"feat", "label", "train_mask", "val_mask", "test_mask"}) {
    if (!graph.node_data.count(name)) {
      return absl::InvalidArgumentError(
          StrCat(input, " has no node array '", name,
                 "': the demo trains node classification and needs feat, label and the "
                 "train/val/test masks"));
    }
  }
  PartitionOptions options;
  options.balance_ntypes = "train_mask";
  options.balance_edges = true;
  ASSIGN_OR_RETURN(auto result,
                   PartitionGraph(graph, "demo", f.parts, workdir + "/parts", options));
  graph = Graph();  // The servers load the parts; free the whole graph.
  // Citation graphs (a few labelled nodes, sparse features) need ~200 epochs
  // to reach their published accuracy (Cora: 0.64 after 20, 0.81+ after 200).
  const int epochs = f.epochs_set || f.dataset.empty() ? f.epochs : 200;
  spdlog::info(
      "demo 3/3: training GraphSAGE ({}) for {} epochs on {} machine(s) x {} trainer(s) "
      "on loopback",
      f.python ? "Python example, PyTorch DDP" : "C++ example", epochs, f.parts, f.trainers);
  TrainJobOptions job{.part_config = result.config_path,
                      .graph_name = "demo",
                      .workdir = workdir + "/job",
                      .standalone = false,
                      .trainers_per_machine = f.trainers,
                      .samplers = f.samplers,
                      .encryption = !f.no_encryption};
  if (f.python) {
    ASSIGN_OR_RETURN(job.program, PythonExample());
  }
  job.args = {"--num-epochs",         std::to_string(epochs), "--eval-every",
              std::to_string(epochs), "--log-every",          "0"};
  if (f.dataset.empty()) {
    job.args.insert(job.args.end(), {"--lr", "0.01"});
  } else {
    // Citation graphs (bag-of-words features, a few labelled nodes): GCN's
    // preprocessing and the full-graph example's settings.
    job.args.insert(job.args.end(), {"--row-normalize", "--input-dropout", "0.5", "--lr", "0.01",
                                     "--weight-decay", "5e-4", "--batch-size", "140"});
  }
  job.args.insert(job.args.end(), f.train_args.begin(), f.train_args.end());
  RETURN_IF_ERROR(RunTrainJob(job).status());
  spdlog::info("demo: done in {:.1f} s", watch.Seconds());
  return absl::OkStatus();
}

}  // namespace

Command RegisterDemo(CLI::App& app) {
  auto f = std::make_shared<DemoFlags>();
  CLI::App* sub = app.add_subcommand(
      "demo",
      "Train GraphSAGE on a partitioned graph with a local 2-machine job (servers and trainers "
      "on loopback)");
  sub->add_option("--dataset", f->dataset,
                  "Graph folder (npy or OGB layout, e.g. shared/datasets/cora) instead of a "
                  "generated graph");
  sub->add_option("--parts", f->parts, "Partitions = local machines")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  sub->add_option("--trainers", f->trainers, "Trainers per machine")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  sub->add_option("--samplers", f->samplers, "Sampler threads per trainer")
      ->capture_default_str()
      ->check(CLI::Range(0, 64));
  CLI::Option* epochs =
      sub->add_option("--epochs", f->epochs,
                      "Training epochs (default 20, or 200 with --dataset: citation graphs "
                      "need them)")
          ->check(CLI::Range(1, 100000));
  sub->add_flag("--python", f->python,
                "Train with the Python example (examples/python/graphsage/"
                "node_classification.py: tessera.distributed + PyTorch DDP)");
  sub->add_option("--nodes", f->nodes, "Nodes of the generated graph")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{100}, int64_t{1} << 40));
  sub->add_option("--workdir", f->workdir, "Where to write (default: a temporary folder)");
  sub->add_flag("--no-encryption", f->no_encryption,
                "Run the job's wire unencrypted, as `tessera launch --no-encryption`");
  sub->add_flag("--keep", f->keep, "Keep the files written");
  sub->add_option("--train-args", f->train_args,
                  "More flags for graphsage_train_dist, e.g. --train-args=--num-hidden,64")
      ->delimiter(',');
  return {sub, [f, epochs] {
            f->epochs_set = epochs->count() > 0;
            Stopwatch watch;
            auto workdir = OpenScratchDir(f->workdir, "tessera-demo", f->keep);
            if (!workdir.ok()) return ReportError(workdir.status());
            if (workdir->removed_on_exit()) {
              spdlog::info("demo: working in {} (removed at the end; --keep keeps it)",
                           workdir->path());
            }
            Status st = RunDemo(*f, workdir->path());
            if (!st.ok()) {  // Ctrl-C: 130, as a shell reports it.
              const int code = ReportError(st);
              return CancelSignal() != 0 ? 128 + CancelSignal() : code;
            }
            if (!workdir->removed_on_exit()) spdlog::info("files are in {}", workdir->path());
            ReportFinish("demo", watch.Seconds());
            return 0;
          }};
}

}  // namespace tessera::tools
