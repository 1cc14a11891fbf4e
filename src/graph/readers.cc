#include "tessera/graph/readers.h"

#include <algorithm>
#include <limits>
#include <string_view>
#include <vector>

#include "nlohmann/json.hpp"
#include "spdlog/spdlog.h"
#include "src/base/logging.h"
#include "src/graph/npy.h"
#include "src/graph/reader_util.h"
#include "tessera/base/file.h"
#include "tessera/base/strings.h"

namespace tessera {

StatusOr<GraphFormat> ParseGraphFormat(const std::string& name) {
  if (name == "auto") return GraphFormat::kAuto;
  if (name == "npy") return GraphFormat::kNpy;
  if (name == "csv" || name == "tsv" || name == "edgelist") return GraphFormat::kEdgeList;
  if (name == "ogb") return GraphFormat::kOgb;
  return absl::InvalidArgumentError(
      StrCat("unknown input format '", name, "' (expected auto, npy, csv, ogb)"));
}

namespace {

int64_t MaxId(const Array& ids) {
  int64_t max_id = -1;
  for (int64_t v : ids.span<int64_t>()) max_id = std::max(max_id, v);
  return max_id;
}

// max(src, dst) + 1, for inputs that do not say how many nodes there are.
StatusOr<int64_t> NodesFromIds(const Graph& graph, const std::string& source) {
  int64_t max_id = std::max(MaxId(graph.src), MaxId(graph.dst));
  if (max_id == std::numeric_limits<int64_t>::max()) {  // + 1 would overflow.
    return absl::InvalidArgumentError(StrCat(source, ": node id ", max_id, " is too large"));
  }
  return max_id + 1;
}

}  // namespace

StatusOr<Graph> ReadNpyDirectory(const std::string& dir, int64_t max_claimed_bytes) {
  if (!IsDirectory(dir)) {
    return absl::NotFoundError(StrCat(dir, ": not a directory"));
  }
  Graph graph;
  for (const char* name : {"src", "dst"}) {
    std::string path = StrCat(dir, "/", name, ".npy");
    if (!PathExists(path)) {
      return absl::NotFoundError(
          StrCat(path, ": missing (an npy graph directory needs ", "src.npy and dst.npy)"));
    }
    ASSIGN_OR_RETURN(Array raw, ReadNpy(path));
    ASSIGN_OR_RETURN(Array ids, ToInt64Ids(std::move(raw), path, /*non_negative=*/true));
    (std::string_view(name) == "src" ? graph.src : graph.dst) = std::move(ids);
  }
  if (graph.src.rows() != graph.dst.rows()) {
    return absl::InvalidArgumentError(StrCat(dir, ": src.npy has ", graph.src.rows(),
                                             " entries but dst.npy has ", graph.dst.rows()));
  }

  // num_nodes: meta.json, else the node arrays' first dimension, else max id + 1.
  int64_t num_nodes = -1;
  std::string num_nodes_source;
  std::string meta_path = dir + "/meta.json";
  if (PathExists(meta_path)) {
    ASSIGN_OR_RETURN(std::string text, ReadFileToString(meta_path));
    auto meta = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (meta.is_discarded() || !meta.is_object()) {
      return absl::InvalidArgumentError(StrCat(meta_path, ": not valid JSON"));
    }
    if (meta.contains("num_nodes")) {
      if (!meta["num_nodes"].is_number_integer() || meta["num_nodes"].get<int64_t>() < 0) {
        return absl::InvalidArgumentError(
            StrCat(meta_path, ": num_nodes must be a non-negative integer"));
      }
      num_nodes = meta["num_nodes"].get<int64_t>();
      num_nodes_source = meta_path;
    }
  }
  for (const std::string& name : NpyNames(dir)) {
    if (name == "src" || name == "dst") continue;
    std::string path = StrCat(dir, "/", name, ".npy");
    ASSIGN_OR_RETURN(Array array, ReadNpy(path));
    if (array.ndim() < 1) {
      return absl::InvalidArgumentError(
          StrCat(path, ": a node array needs at least one ", "dimension, got a scalar"));
    }
    if (num_nodes < 0) {
      num_nodes = array.rows();
      num_nodes_source = path;
    } else if (array.rows() != num_nodes) {
      return absl::InvalidArgumentError(StrCat(path, ": has ", array.rows(), " rows but ",
                                               num_nodes_source, " implies ", num_nodes, " nodes"));
    }
    graph.node_data.emplace(name, std::move(array));
  }
  if (num_nodes < 0) {
    ASSIGN_OR_RETURN(num_nodes, NodesFromIds(graph, dir));
    num_nodes_source = dir;
  }
  RETURN_IF_ERROR(CheckGraphNodes(num_nodes_source, num_nodes, max_claimed_bytes));
  graph.num_nodes = num_nodes;

  std::string edge_dir = dir + "/edge_feat";
  if (IsDirectory(edge_dir)) {
    for (const std::string& name : NpyNames(edge_dir)) {
      std::string path = StrCat(edge_dir, "/", name, ".npy");
      ASSIGN_OR_RETURN(Array array, ReadNpy(path));
      if (array.ndim() < 1 || array.rows() != graph.num_edges()) {
        return absl::InvalidArgumentError(StrCat(
            path, ": is ", array.Describe(), " but the graph has ", graph.num_edges(), " edges"));
      }
      graph.edge_data.emplace(name, std::move(array));
    }
  }
  RETURN_IF_ERROR(graph.Validate(dir));
  return graph;
}

StatusOr<Graph> ReadEdgeList(const std::string& path, int64_t num_nodes,
                             int64_t max_claimed_bytes) {
  ASSIGN_OR_RETURN(EdgeColumns columns, ReadEdgeColumns(path));
  Graph graph;
  graph.src = Array::From(columns.src);
  graph.dst = Array::From(columns.dst);
  if (num_nodes < 0) {
    ASSIGN_OR_RETURN(num_nodes, NodesFromIds(graph, path));
  }
  RETURN_IF_ERROR(CheckGraphNodes(path, num_nodes, max_claimed_bytes));
  graph.num_nodes = num_nodes;
  if (columns.columns == 3) graph.edge_data.emplace("weight", Array::From(columns.weight));
  if (graph.num_edges() == 0) {
    return absl::InvalidArgumentError(StrCat(path, ": contains no edges"));
  }
  RETURN_IF_ERROR(graph.Validate(path));
  return graph;
}

StatusOr<Graph> ReadOgb(const std::string& dir, const std::string& split,
                        int64_t max_claimed_bytes) {
  const std::string raw = dir + "/raw";
  for (const char* name : {"num-node-list.csv.gz", "edge.csv.gz"}) {
    if (!PathExists(StrCat(raw, "/", name))) {
      return absl::NotFoundError(StrCat(raw, "/", name, ": missing (OGB layout)"));
    }
  }
  ASSIGN_OR_RETURN(std::vector<int64_t> counts, ReadIntColumn(raw + "/num-node-list.csv.gz"));
  if (counts.size() != 1 || counts[0] <= 0) {
    return absl::InvalidArgumentError(
        StrCat(raw, "/num-node-list.csv.gz: expected one positive node count (a heterogeneous ",
               "OGB folder has raw/num-node-dict.csv.gz instead)"));
  }
  const int64_t num_nodes = counts[0];
  // Before reading anything else: every later allocation per node trusts it.
  RETURN_IF_ERROR(CheckGraphNodes(raw + "/num-node-list.csv.gz", num_nodes, max_claimed_bytes));
  ASSIGN_OR_RETURN(Graph graph, ReadEdgeList(raw + "/edge.csv.gz", num_nodes, max_claimed_bytes));
  graph.edge_data.clear();  // OGB edge.csv has exactly two columns; weights come from edge-feat.
  if (PathExists(raw + "/node-feat.csv.gz")) {
    ASSIGN_OR_RETURN(Array feat, ReadMatrix<float>(raw + "/node-feat.csv.gz", num_nodes));
    graph.node_data.emplace("feat", std::move(feat));
  }
  if (PathExists(raw + "/node-label.csv.gz")) {
    ASSIGN_OR_RETURN(Array label, ReadMatrix<int64_t>(raw + "/node-label.csv.gz", num_nodes));
    graph.node_data.emplace("label", std::move(label));
  }
  if (PathExists(raw + "/edge-feat.csv.gz")) {
    ASSIGN_OR_RETURN(Array feat, ReadMatrix<float>(raw + "/edge-feat.csv.gz", graph.num_edges()));
    graph.edge_data.emplace("feat", std::move(feat));
  }

  // The split: by name, else "public", else the only one.
  ASSIGN_OR_RETURN(std::string chosen, ChooseSplit(dir, split));
  if (!chosen.empty()) {
    const std::pair<const char*, const char*> masks[] = {
        {"train", "train_mask"}, {"valid", "val_mask"}, {"test", "test_mask"}};
    for (const auto& [file, name] : masks) {
      std::string path = StrCat(dir, "/split/", chosen, "/", file, ".csv.gz");
      if (!PathExists(path)) return absl::NotFoundError(StrCat(path, ": missing"));
      ASSIGN_OR_RETURN(Array mask, ReadMask(path, num_nodes, max_claimed_bytes));
      graph.node_data.emplace(name, std::move(mask));
    }
  }
  RETURN_IF_ERROR(graph.Validate(dir));
  return graph;
}

namespace {

// ReadOptions' transformations are defined on one edge list; a heterograph
// carries its reverse relations explicitly.
Status CheckNoTransforms(const std::string& path, const ReadOptions& options) {
  std::vector<std::string> asked;
  if (options.remove_self_loops) asked.push_back("remove_self_loops (--remove-self-loops)");
  if (options.add_reverse_edges) asked.push_back("add_reverse_edges (--undirected)");
  if (options.remove_duplicate_edges) {
    asked.push_back("remove_duplicate_edges (--remove-duplicates)");
  }
  if (asked.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(
      StrCat(path, ": is a heterogeneous graph, but ", StrJoin(asked, ", "),
             " apply to homogeneous graphs only (a heterogeneous input carries its reverse ",
             "relations explicitly, e.g. paper:rev-writes:author)"));
}

}  // namespace

StatusOr<Graph> ReadGraph(const std::string& path, const ReadOptions& options) {
  Progress progress(StrCat("read ", path), 0, "");
  GraphFormat format = options.format;
  const bool ogb_hetero = PathExists(path + "/raw/num-node-dict.csv.gz");
  if (format == GraphFormat::kAuto) {
    if (!PathExists(path)) return absl::NotFoundError(StrCat(path, ": no such file or directory"));
    if (IsDirectory(path)) {
      if (ogb_hetero || PathExists(path + "/raw/edge.csv.gz")) {
        format = GraphFormat::kOgb;
      } else if (IsTypedNpyDirectory(path) || PathExists(path + "/src.npy") ||
                 PathExists(path + "/dst.npy")) {
        format = GraphFormat::kNpy;
      } else {
        return absl::InvalidArgumentError(
            StrCat(path, ": not a graph directory (expected src.npy and dst.npy, a meta.json ",
                   "with \"ntypes\", raw/edge.csv.gz or raw/num-node-dict.csv.gz)"));
      }
    } else {
      format = GraphFormat::kEdgeList;
    }
  }
  const bool hetero = (format == GraphFormat::kNpy && IsTypedNpyDirectory(path)) ||
                      (format == GraphFormat::kOgb && ogb_hetero);
  if (hetero) RETURN_IF_ERROR(CheckNoTransforms(path, options));
  StatusOr<Graph> graph;
  switch (format) {
    case GraphFormat::kNpy:
      graph = hetero ? ReadTypedNpyDirectory(path, options.max_claimed_bytes)
                     : ReadNpyDirectory(path, options.max_claimed_bytes);
      break;
    case GraphFormat::kEdgeList:
      graph = ReadEdgeList(path, options.num_nodes, options.max_claimed_bytes);
      break;
    case GraphFormat::kOgb:
      graph = hetero ? ReadOgbTyped(path, options.split, options.max_claimed_bytes)
                     : ReadOgb(path, options.split, options.max_claimed_bytes);
      break;
    case GraphFormat::kAuto:
      break;
  }
  if (!graph.ok()) return graph.status();
  if (graph->is_hetero()) {
    RETURN_IF_ERROR(CheckNoTransforms(path, options));
    size_t node_arrays = 0, edge_arrays = 0;
    for (const auto& arrays : graph->ntype_data) node_arrays += arrays.size();
    for (const auto& arrays : graph->etype_data) edge_arrays += arrays.size();
    progress.Done();
    spdlog::info(
        "graph: {} nodes of {} types, {} edges of {} relations, {} node arrays, {} edge "
        "arrays",
        graph->num_nodes, graph->ntypes.size(), graph->num_edges(), graph->etypes.size(),
        node_arrays, edge_arrays);
    return graph;
  }
  if (options.remove_self_loops) {
    spdlog::info("removed {} self loops", RemoveSelfLoops(&*graph));
  }
  if (options.add_reverse_edges) AddReverseEdges(&*graph);
  if (options.remove_duplicate_edges) {
    spdlog::info("removed {} duplicate edges", RemoveDuplicateEdges(&*graph));
  }
  progress.Done();
  spdlog::info("graph: {} nodes, {} edges, {} node arrays, {} edge arrays", graph->num_nodes,
               graph->num_edges(), graph->node_data.size(), graph->edge_data.size());
  return graph;
}

}  // namespace tessera
