// `tessera demo`: the main job of the README. Until distributed training lands
// it shows the partitioning pipeline end to end: generate (or read) a graph,
// partition it with METIS into balanced parts, load and validate every part,
// and print the inspection table.
#include <memory>

#include "spdlog/spdlog.h"
#include "src/base/file.h"
#include "src/base/strings.h"
#include "src/base/time.h"
#include "src/graph/generator.h"
#include "src/graph/readers.h"
#include "src/partition/inspect.h"
#include "src/partition/partition.h"
#include "tools/commands.h"

namespace tessera::tools {
namespace {

struct DemoFlags {
  std::string dataset, workdir;
  int parts = 2;
  int64_t nodes = 100'000;
  bool keep = false;
};

Status RunDemo(const DemoFlags& f, const std::string& workdir) {
  std::string input = f.dataset;
  if (input.empty()) {
    GenerateOptions gen;
    gen.num_nodes = f.nodes;
    gen.num_undirected_edges = f.nodes * 10;
    gen.feat_dim = 32;
    gen.num_classes = 10;
    input = workdir + "/graph";
    spdlog::info("demo step 1/3: generate a {}-node graph", gen.num_nodes);
    ASSIGN_OR_RETURN(auto stats, GenerateSbmGraph(gen, input));
    (void)stats;
  }
  spdlog::info("demo step 2/3: partition {} into {} parts (METIS, balanced train_mask/edges)",
               input, f.parts);
  ASSIGN_OR_RETURN(Graph graph, ReadGraph(input));
  PartitionOptions options;
  options.balance_ntypes = graph.node_data.count("train_mask") ? "train_mask" : "";
  options.balance_edges = true;
  options.return_mapping = true;
  ASSIGN_OR_RETURN(auto result,
                   PartitionGraph(graph, "demo", f.parts, workdir + "/parts", options));
  spdlog::info("demo step 3/3: load, validate and inspect every part");
  ASSIGN_OR_RETURN(Inspection inspection, InspectPartitions(result.config_path));
  std::fputs(inspection.ToText().c_str(), stdout);
  return absl::OkStatus();
}

}  // namespace

Command RegisterDemo(CLI::App& app) {
  auto f = std::make_shared<DemoFlags>();
  CLI::App* sub = app.add_subcommand(
      "demo", "Generate (or read) a graph, partition it and inspect the partitions");
  sub->add_option("--dataset", f->dataset,
                  "Graph folder (npy or OGB layout) instead of a "
                  "generated graph");
  sub->add_option("--parts", f->parts, "Number of partitions")->capture_default_str();
  sub->add_option("--nodes", f->nodes, "Nodes of the generated graph")->capture_default_str();
  sub->add_option("--workdir", f->workdir, "Where to write (default: a temporary folder)");
  sub->add_flag("--keep", f->keep, "Keep the files written");
  return {sub, [f] {
            Stopwatch watch;
            auto workdir = ScratchDir::Open(f->workdir, "tessera-demo", f->keep);
            if (!workdir.ok()) return ReportError(workdir.status());
            Status st = RunDemo(*f, workdir->path());
            if (!st.ok()) return ReportError(st);
            if (!workdir->removed_on_exit()) spdlog::info("files are in {}", workdir->path());
            ReportFinish("demo", watch.Seconds());
            return 0;
          }};
}

}  // namespace tessera::tools
