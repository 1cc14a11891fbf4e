#include "src/graph/readers.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <string_view>
#include <vector>

#include "nlohmann/json.hpp"
#include "spdlog/spdlog.h"
#include "src/base/file.h"
#include "src/base/logging.h"
#include "src/base/resource.h"
#include "src/base/strings.h"
#include "src/graph/npy.h"
#include "src/graph/text_reader.h"

namespace tessera {
namespace fs = std::filesystem;

StatusOr<GraphFormat> ParseGraphFormat(const std::string& name) {
  if (name == "auto") return GraphFormat::kAuto;
  if (name == "npy") return GraphFormat::kNpy;
  if (name == "csv" || name == "tsv" || name == "edgelist") return GraphFormat::kEdgeList;
  if (name == "ogb") return GraphFormat::kOgb;
  return absl::InvalidArgumentError(
      StrCat("unknown input format '", name, "' (expected auto, npy, csv, ogb)"));
}

namespace {

// Sorted *.npy names (without extension) in `dir`.
std::vector<std::string> NpyNames(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.is_regular_file() && entry.path().extension() == ".npy") {
      names.push_back(entry.path().stem().string());
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

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

// Bytes per node that a graph's node count commits its consumers to at the
// least: one int64 CSR offset (BuildCsr, BuildCsc, partitioning).
constexpr int64_t kCsrBytesPerNode = 8;

// OK if `count` nodes, a count that `source` claims, may be given
// `bytes_per_node` bytes each for `purpose`: at most `max_bytes` (when > 0)
// and at most the memory available now. Called before allocating.
Status CheckClaimedNodes(const std::string& source, int64_t count, int64_t bytes_per_node,
                         std::string_view purpose, int64_t max_bytes) {
  int64_t need = 0;
  const bool overflow = __builtin_mul_overflow(count, bytes_per_node, &need);
  const std::string need_text = overflow ? "more than 8 EiB" : FormatBytes(need);
  std::string limit;
  if (max_bytes > 0 && (overflow || need > max_bytes)) {
    limit = StrCat("the reader's limit of ", FormatBytes(max_bytes), " (max_claimed_bytes)");
  } else if (int64_t available = AvailableMemoryBytes(); overflow || need > available) {
    limit = StrCat("the ", FormatBytes(available), " of memory available");
  } else {
    return absl::OkStatus();
  }
  return absl::ResourceExhaustedError(StrCat(source, ": ", count, " nodes would need ", need_text,
                                             " for ", purpose, ", more than ", limit));
}

Status CheckGraphNodes(const std::string& source, int64_t num_nodes, int64_t max_bytes) {
  return CheckClaimedNodes(source, num_nodes, kCsrBytesPerNode,
                           "the graph's CSR offsets (8 bytes per node)", max_bytes);
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
  ASSIGN_OR_RETURN(auto reader, TextReader::Open(path));
  std::vector<int64_t> src, dst;
  std::vector<float> weight;
  std::vector<std::string_view> fields;
  std::string_view line;
  bool header_seen = false;
  size_t columns = 0;  // Fixed by the first data line.
  while (true) {
    ASSIGN_OR_RETURN(bool more, reader->NextLine(&line));
    if (!more) break;
    size_t start = line.find_first_not_of(" \t");
    if (start == std::string_view::npos || line[start] == '#') continue;
    SplitFields(line, &fields);
    int64_t s = 0, d = 0;
    bool ok = fields.size() >= 2 && ParseInt64(fields[0], &s) && ParseInt64(fields[1], &d);
    if (columns == 0) {
      // Before any data line, a line whose first field is not a number is a header.
      if (!ok && fields.size() >= 2 && !ParseInt64(fields[0], &s) && !header_seen) {
        header_seen = true;
        continue;
      }
      columns = fields.size();
      if (columns < 2 || columns > 3) {
        return reader->LineError(
            StrCat("expected 2 or 3 columns (src, dst[, weight]), got ", columns));
      }
    }
    if (!ok || fields.size() != columns) {
      return reader->LineError(StrCat("expected ", columns == 3 ? "src, dst, weight" : "src, dst",
                                      " (", columns, " columns of integer node ids",
                                      columns == 3 ? " and a number" : "", "), got '",
                                      line.substr(0, 80), "'"));
    }
    if (s < 0 || d < 0) return reader->LineError("negative node id");
    if (columns == 3) {
      float w = 0;
      if (!ParseFloat(fields[2], &w)) {
        return reader->LineError(StrCat("weight '", fields[2], "' is not a number"));
      }
      weight.push_back(w);
    }
    src.push_back(s);
    dst.push_back(d);
  }
  Graph graph;
  graph.src = Array::From(src);
  graph.dst = Array::From(dst);
  if (num_nodes < 0) {
    ASSIGN_OR_RETURN(num_nodes, NodesFromIds(graph, path));
  }
  RETURN_IF_ERROR(CheckGraphNodes(path, num_nodes, max_claimed_bytes));
  graph.num_nodes = num_nodes;
  if (columns == 3) graph.edge_data.emplace("weight", Array::From(weight));
  if (graph.num_edges() == 0) {
    return absl::InvalidArgumentError(StrCat(path, ": contains no edges"));
  }
  RETURN_IF_ERROR(graph.Validate(path));
  return graph;
}

namespace {

// Reads one integer per line.
StatusOr<std::vector<int64_t>> ReadIntColumn(const std::string& path) {
  ASSIGN_OR_RETURN(auto reader, TextReader::Open(path));
  std::vector<int64_t> values;
  std::string_view line;
  while (true) {
    ASSIGN_OR_RETURN(bool more, reader->NextLine(&line));
    if (!more) break;
    if (line.empty()) continue;
    int64_t v = 0;
    if (!ParseInt64(line, &v)) {
      return reader->LineError(StrCat("expected an integer, got '", line.substr(0, 80), "'"));
    }
    values.push_back(v);
  }
  return values;
}

// Reads a dense numeric matrix with `rows` lines; the width is the first
// line's field count. T is float (features) or int64_t (labels; "nan" -> -1).
template <typename T>
StatusOr<Array> ReadMatrix(const std::string& path, int64_t rows) {
  ASSIGN_OR_RETURN(auto reader, TextReader::Open(path));
  std::vector<std::string_view> fields;
  std::string_view line;
  // Grown line by line, so memory follows the file, not the node count that
  // num-node-list claims (85603363343 nodes once asked for 640 GB up front).
  std::vector<T> values;
  int64_t width = -1;
  int64_t row = 0;
  while (true) {
    ASSIGN_OR_RETURN(bool more, reader->NextLine(&line));
    if (!more) break;
    SplitFields(line, &fields);
    if (width < 0) {
      width = static_cast<int64_t>(fields.size());
      if (width == 0) return reader->LineError("no values");
    }
    if (row >= rows) {
      return reader->LineError(StrCat("more lines than the ", rows, " nodes"));
    }
    if (static_cast<int64_t>(fields.size()) != width) {
      return reader->LineError(StrCat("expected ", width, " values, got ", fields.size()));
    }
    for (int64_t j = 0; j < width; ++j) {
      T& slot = values.emplace_back();
      bool ok;
      if constexpr (std::is_same_v<T, float>) {
        ok = ParseFloat(fields[j], &slot);
      } else {
        ok = ParseInt64(fields[j], &slot);
        if (!ok && (fields[j] == "nan" || fields[j] == "NaN")) {
          slot = -1;  // OGB marks unlabelled nodes with NaN.
          ok = true;
        }
        if (!ok) {  // Integral values written as floats ("3.0").
          float f = 0;
          // Range first: casting NaN, infinity or |f| >= 2^63 to int64 is UB.
          ok = ParseFloat(fields[j], &f) && std::fabs(f) < 0x1p62f && f == std::trunc(f);
          if (ok) slot = static_cast<int64_t>(f);
        }
      }
      if (!ok) {
        return reader->LineError(
            StrCat("value ", j + 1, " '", fields[j].substr(0, 40), "' is not a number"));
      }
    }
    ++row;
  }
  if (row != rows) {
    return absl::InvalidArgumentError(
        StrCat(path, ": has ", row, " lines but the graph has ", rows, " nodes"));
  }
  std::vector<int64_t> shape = {rows};
  if (width > 1) shape.push_back(width);
  Array out = Array::Empty(DTypeOf<T>(), std::move(shape));
  if (!values.empty()) std::memcpy(out.mutable_data(), values.data(), values.size() * sizeof(T));
  return out;
}

StatusOr<Array> ReadMask(const std::string& path, int64_t num_nodes, int64_t max_claimed_bytes) {
  RETURN_IF_ERROR(CheckClaimedNodes(path, num_nodes, 1, "the mask", max_claimed_bytes));
  ASSIGN_OR_RETURN(std::vector<int64_t> ids, ReadIntColumn(path));
  Array mask = Array::Zeros(DType::kBool, {num_nodes});
  auto m = mask.mutable_span<bool>();
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= num_nodes) {
      return absl::OutOfRangeError(
          StrCat(path, ":", i + 1, ": node id ", ids[i], " is out of range [0, ", num_nodes, ")"));
    }
    m[ids[i]] = true;
  }
  return mask;
}

}  // namespace

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
        StrCat(raw, "/num-node-list.csv.gz: expected one positive node count (heterogeneous OGB ",
               "graphs are not supported)"));
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
  std::vector<std::string> splits;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir + "/split", ec)) {
    if (entry.is_directory()) splits.push_back(entry.path().filename().string());
  }
  std::sort(splits.begin(), splits.end());
  std::string chosen = split;
  if (chosen.empty()) {
    if (std::find(splits.begin(), splits.end(), "public") != splits.end()) {
      chosen = "public";
    } else if (splits.size() == 1) {
      chosen = splits[0];
    } else if (splits.size() > 1) {
      return absl::InvalidArgumentError(
          StrCat(dir, ": several splits (", StrJoin(splits, ", "), "); choose one with --split"));
    }
  } else if (std::find(splits.begin(), splits.end(), chosen) == splits.end()) {
    return absl::NotFoundError(
        StrCat(dir, "/split/", chosen, ": no such split (have: ", StrJoin(splits, ", "), ")"));
  }
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

StatusOr<Graph> ReadGraph(const std::string& path, const ReadOptions& options) {
  Progress progress(StrCat("read ", path), 0, "");
  GraphFormat format = options.format;
  if (format == GraphFormat::kAuto) {
    if (!PathExists(path)) return absl::NotFoundError(StrCat(path, ": no such file or directory"));
    if (IsDirectory(path)) {
      if (PathExists(path + "/raw/edge.csv.gz")) {
        format = GraphFormat::kOgb;
      } else if (PathExists(path + "/src.npy") || PathExists(path + "/dst.npy")) {
        format = GraphFormat::kNpy;
      } else {
        return absl::InvalidArgumentError(StrCat(
            path, ": not a graph directory (expected src.npy and dst.npy, or raw/edge.csv.gz)"));
      }
    } else {
      format = GraphFormat::kEdgeList;
    }
  }
  StatusOr<Graph> graph;
  switch (format) {
    case GraphFormat::kNpy:
      graph = ReadNpyDirectory(path, options.max_claimed_bytes);
      break;
    case GraphFormat::kEdgeList:
      graph = ReadEdgeList(path, options.num_nodes, options.max_claimed_bytes);
      break;
    case GraphFormat::kOgb:
      graph = ReadOgb(path, options.split, options.max_claimed_bytes);
      break;
    case GraphFormat::kAuto:
      break;
  }
  if (!graph.ok()) return graph.status();
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
