// `tessera chunk`: any input `tessera partition` reads -> DGL's chunked graph
// format (metadata.json + chunk files), the input of `tessera mpi-partition`.
#include <memory>

#include "spdlog/spdlog.h"
#include "src/dist_partition/chunked_graph.h"
#include "tessera/base/file.h"
#include "tessera/base/resource.h"
#include "tessera/base/time.h"
#include "tools/commands.h"

namespace tessera::tools {

Command RegisterChunk(CLI::App& app) {
  struct Flags {
    std::string input, out, graph_name, edge_format = "csv";
    int num_chunks = 4;
    ReadFlags read;
  };
  auto f = std::make_shared<Flags>();
  CLI::App* sub = app.add_subcommand(
      "chunk",
      "Write a graph in DGL's chunked format (metadata.json + chunk files), the input of "
      "distributed partitioning (tessera mpi-partition)");
  sub->add_option("--input,-i", f->input,
                  "Graph: any input of tessera partition (npy, typed npy, OGB, CSV edge list)")
      ->required();
  sub->add_option("--out,-o", f->out, "Output folder")->required();
  sub->add_option("--num-chunks,--num_chunks", f->num_chunks,
                  "Chunks per node type, relation and array")
      ->capture_default_str();
  sub->add_option("--edge-format", f->edge_format, "Edge chunks: csv (DGL's default) or numpy")
      ->capture_default_str();
  sub->add_option("--graph-name,--graph_name", f->graph_name,
                  "graph_name in metadata.json (default: the output folder's name)");
  AddReadFlags(sub, &f->read);
  return {sub, [f] {
            Stopwatch watch;
            if (f->edge_format != "csv" && f->edge_format != "numpy") {
              return ReportError(absl::InvalidArgumentError(
                  "--edge-format must be csv or numpy, got '" + f->edge_format + "'"));
            }
            auto read = MakeReadOptions(f->read);
            if (!read.ok()) return ReportError(read.status());
            auto graph = ReadGraph(f->input, *read);
            if (!graph.ok()) return ReportError(graph.status());
            dist_partition::ChunkOptions options;
            options.num_chunks = f->num_chunks;
            options.csv_edges = f->edge_format == "csv";
            options.graph_name = f->graph_name;
            Status st = dist_partition::WriteChunkedGraph(*graph, f->out, options);
            if (!st.ok()) return ReportError(st);
            spdlog::info("wrote {}/metadata.json: {} nodes, {} edges, {} chunks each, {}", f->out,
                         graph->num_nodes, graph->num_edges(), f->num_chunks,
                         FormatBytes(DirectorySize(f->out)));
            ReportFinish("chunk", watch.Seconds());
            return 0;
          }};
}

}  // namespace tessera::tools
