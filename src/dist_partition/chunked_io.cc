// Reading ranges of a chunked graph and writing one (chunked_graph.h).
#include <algorithm>
#include <cstring>
#include <filesystem>

#include "nlohmann/json.hpp"
#include "src/dist_partition/chunked_graph.h"
#include "src/graph/npy.h"
#include "src/graph/text_reader.h"
#include "src/partition/partition_util.h"
#include "tessera/base/file.h"
#include "tessera/base/strings.h"

namespace tessera::dist_partition {
namespace {

// Calls body(begin, end) with the chunk-local row range of every chunk of
// `starts` (rows before each chunk) that overlaps [begin, end).
template <typename Body>
Status ForChunks(const std::vector<int64_t>& starts, int64_t begin, int64_t end, Body body) {
  for (size_t c = 0; c + 1 < starts.size(); ++c) {
    const int64_t lo = std::max(begin, starts[c]), hi = std::min(end, starts[c + 1]);
    if (lo < hi) RETURN_IF_ERROR(body(c, lo - starts[c], hi - starts[c]));
  }
  return absl::OkStatus();
}

// Appends the ids of an integer array, widened to int64.
template <typename T>
void AppendIds(const Array& a, int64_t row_begin, int64_t row_end, EdgeSlice* out) {
  auto v = a.span<T>();
  for (int64_t i = row_begin; i < row_end; ++i) {
    out->src.push_back(static_cast<int64_t>(v[2 * i]));
    out->dst.push_back(static_cast<int64_t>(v[2 * i + 1]));
  }
}

Status ReadNumpyEdges(const std::string& path, int64_t rows, int64_t begin, int64_t end,
                      EdgeSlice* out) {
  ASSIGN_OR_RETURN(Array a, ReadNpy(path));
  if (a.ndim() != 2 || a.shape()[0] != rows || a.shape()[1] != 2 || !IsIntegral(a.dtype())) {
    return absl::InvalidArgumentError(
        StrCat(path, ": is ", a.Describe(), "; expected integer [", rows, ", 2]"));
  }
  if (a.dtype() == DType::kBool) {
    return absl::InvalidArgumentError(StrCat(path, ": ids must be integers"));
  }
  VisitDType(a.dtype(), [&](auto v) {  // Integers other than bool, checked above.
    if constexpr (std::is_integral_v<decltype(v)>) AppendIds<decltype(v)>(a, begin, end, out);
  });
  a.ReleasePages();
  return absl::OkStatus();
}

// Lines [begin, end) of a CSV chunk that must hold `rows` lines (blank lines
// do not count). The whole file is checked when the range reaches its end.
Status ReadCsvEdges(const std::string& path, char delimiter, int64_t rows, int64_t begin,
                    int64_t end, EdgeSlice* out) {
  ASSIGN_OR_RETURN(auto reader, TextReader::Open(path));
  std::vector<std::string_view> fields;
  int64_t row = 0;
  std::string_view line;
  while (true) {
    ASSIGN_OR_RETURN(bool more, reader->NextLine(&line));
    if (!more) break;
    line = StripWhitespace(line);
    if (line.empty()) continue;
    if (row >= begin && row < end) {
      if (delimiter == ' ' || delimiter == ',' || delimiter == '\t') {
        SplitFields(line, &fields);
      } else {
        fields = SplitString(line, delimiter);
      }
      int64_t s, d;
      if (fields.size() != 2 || !ParseInt64(fields[0], &s) || !ParseInt64(fields[1], &d)) {
        return reader->LineError("expected two integer ids \"src<delimiter>dst\"");
      }
      out->src.push_back(s);
      out->dst.push_back(d);
    }
    ++row;
    if (row == end && end < rows) return absl::OkStatus();  // The rest is another rank's.
  }
  if (row != rows) {
    return absl::InvalidArgumentError(StrCat(path, ": holds ", row, " edges but the metadata says ",
                                             rows, " (num_edges_per_chunk)"));
  }
  return absl::OkStatus();
}

}  // namespace

StatusOr<EdgeSlice> ReadEdges(const ChunkedGraph& g, int64_t begin, int64_t end) {
  // Room for the range up to 16M edges: the counts are the metadata's
  // claim, the files hold what is really there.
  EdgeSlice out;
  const auto room = static_cast<size_t>(std::min<int64_t>(end - begin, int64_t{1} << 24));
  out.src.reserve(room);
  out.dst.reserve(room);
  for (size_t r = 0; r < g.relations.size(); ++r) {
    const ChunkedRelation& rel = g.relations[r];
    const int64_t base = g.etype_offsets[r];
    const int64_t lo = std::max(begin, base) - base, hi = std::min(end, base + rel.count()) - base;
    if (lo >= hi) continue;
    RETURN_IF_ERROR(ForChunks(rel.chunk_starts, lo, hi, [&](size_t c, int64_t b, int64_t e) {
      const size_t first = out.src.size();
      const int64_t rows = rel.chunk_starts[c + 1] - rel.chunk_starts[c];
      RETURN_IF_ERROR(rel.csv ? ReadCsvEdges(rel.files[c], rel.delimiter, rows, b, e, &out)
                              : ReadNumpyEdges(rel.files[c], rows, b, e, &out));
      // Per-type ids -> homogeneous ids, checked against their types.
      const int64_t src_base = g.ntype_offsets[rel.src_type];
      const int64_t dst_base = g.ntype_offsets[rel.dst_type];
      const int64_t src_count = g.ntype_offsets[rel.src_type + 1] - src_base;
      const int64_t dst_count = g.ntype_offsets[rel.dst_type + 1] - dst_base;
      for (size_t i = first; i < out.src.size(); ++i) {
        if (out.src[i] < 0 || out.src[i] >= src_count || out.dst[i] < 0 ||
            out.dst[i] >= dst_count) {
          return absl::InvalidArgumentError(StrCat(
              rel.files[c], ": edge ", b + static_cast<int64_t>(i - first), " (", out.src[i],
              " -> ", out.dst[i], ") has an id outside its node type (", g.ntypes[rel.src_type],
              ": ", src_count, " nodes, ", g.ntypes[rel.dst_type], ": ", dst_count, " nodes)"));
        }
        out.src[i] += src_base;
        out.dst[i] += dst_base;
      }
      return absl::OkStatus();
    }));
  }
  return out;
}

StatusOr<Array> ReadRows(const ChunkedArray& array, int64_t begin, int64_t end) {
  std::vector<int64_t> shape = array.row_shape;
  shape.insert(shape.begin(), end - begin);
  Array out = Array::Empty(array.dtype, shape);
  const size_t row_bytes = out.row_bytes();
  char* dst = static_cast<char*>(out.mutable_data());
  RETURN_IF_ERROR(ForChunks(array.row_starts, begin, end, [&](size_t c, int64_t b, int64_t e) {
    ASSIGN_OR_RETURN(Array chunk, ReadNpy(array.files[c]));
    std::vector<int64_t> expected = array.row_shape;
    expected.insert(expected.begin(), array.row_starts[c + 1] - array.row_starts[c]);
    if (chunk.dtype() != array.dtype || chunk.shape() != expected) {
      return absl::InvalidArgumentError(StrCat(array.files[c], ": is ", chunk.Describe(),
                                               " but was ", DTypeName(array.dtype), "[",
                                               StrJoin(expected, ", "), "] when the run began"));
    }
    if (e > b) {
      std::memcpy(dst + (array.row_starts[c] + b - begin) * row_bytes,
                  static_cast<const char*>(chunk.data()) + b * row_bytes, (e - b) * row_bytes);
    }
    chunk.ReleasePages();
    return absl::OkStatus();
  }));
  return out;
}

namespace {

// numpy's array_split: `count` rows in `k` chunks, the first count % k one
// row longer. Returns the k + 1 chunk bounds.
std::vector<int64_t> SplitBounds(int64_t count, int k) {
  std::vector<int64_t> bounds(k + 1, 0);
  for (int c = 0; c < k; ++c) bounds[c + 1] = bounds[c] + count / k + (c < count % k ? 1 : 0);
  return bounds;
}

Status WriteArrayChunks(const Array& array, const std::vector<int64_t>& bounds,
                        const std::string& dir, const std::string& name, const std::string& rel_dir,
                        nlohmann::ordered_json* spec) {
  RETURN_IF_ERROR(MakeDirs(dir));
  nlohmann::ordered_json files = nlohmann::ordered_json::array();
  for (size_t c = 0; c + 1 < bounds.size(); ++c) {
    std::vector<int64_t> shape = array.shape();
    shape[0] = bounds[c + 1] - bounds[c];
    const std::string file = StrCat(name, "-", c, ".npy");
    ASSIGN_OR_RETURN(NpyWriter writer, NpyWriter::Create(dir + "/" + file, array.dtype(), shape));
    if (shape[0] > 0) {
      RETURN_IF_ERROR(writer.AppendRows(
          static_cast<const char*>(array.data()) + bounds[c] * array.row_bytes(), shape[0]));
    }
    RETURN_IF_ERROR(writer.Close());
    files.push_back(rel_dir + "/" + file);
  }
  *spec = {{"format", {{"name", "numpy"}}}, {"data", files}};
  array.ReleasePages();
  return absl::OkStatus();
}

}  // namespace

Status WriteChunkedGraph(const Graph& graph, const std::string& out_dir,
                         const ChunkOptions& options) {
  // A file per chunk, type and array: a few thousand are plenty for any MPI
  // job, and the count bounds the files and memory a typo can cost.
  constexpr int kMaxChunks = 4096;
  if (options.num_chunks < 1 || options.num_chunks > kMaxChunks) {
    return absl::InvalidArgumentError(
        StrCat("the number of chunks must be in [1, ", kMaxChunks, "], got ", options.num_chunks));
  }
  RETURN_IF_ERROR(graph.Validate("input graph"));
  std::string name = options.graph_name;
  if (name.empty()) {
    std::filesystem::path dir = std::filesystem::path(out_dir).lexically_normal();
    name = (dir.has_filename() ? dir : dir.parent_path()).filename().string();
  }
  if (!SafeName(name)) {  // mpi-partition would refuse it only after the chunking.
    return absl::InvalidArgumentError(
        StrCat("graph name '", name, "' (",
               options.graph_name.empty() ? "the output folder's name" : "--graph-name",
               ") must use only letters, digits, '_', '-' and '.'; pass --graph-name"));
  }
  RETURN_IF_ERROR(MakeDirs(out_dir));
  const std::string metadata_path = out_dir + "/metadata.json";
  RETURN_IF_ERROR(RemoveAll(metadata_path));  // Reappears only once every chunk is written.
  const bool hetero = graph.is_hetero();
  const std::vector<std::string> ntypes = hetero ? graph.ntypes : std::vector<std::string>{"_N"};
  const std::vector<EdgeType> etypes =
      hetero ? graph.etypes : std::vector<EdgeType>{{"_N", "_E", "_N"}};
  const std::vector<int64_t> noff =
      hetero ? graph.ntype_offsets : std::vector<int64_t>{0, graph.num_nodes};
  const std::vector<int64_t> eoff =
      hetero ? graph.etype_offsets : std::vector<int64_t>{0, graph.num_edges()};
  const int k = options.num_chunks;
  using Json = nlohmann::ordered_json;
  Json meta;
  meta["graph_name"] = name;
  meta["node_type"] = ntypes;
  Json node_chunks = Json::array(), node_totals = Json::array();
  for (size_t t = 0; t < ntypes.size(); ++t) {
    std::vector<int64_t> b = SplitBounds(noff[t + 1] - noff[t], k);
    Json counts = Json::array();
    for (int c = 0; c < k; ++c) counts.push_back(b[c + 1] - b[c]);
    node_chunks.push_back(counts);
    node_totals.push_back(noff[t + 1] - noff[t]);
  }
  meta["num_nodes_per_chunk"] = node_chunks;
  meta["num_nodes_per_type"] = node_totals;
  Json edge_names = Json::array(), edge_chunks = Json::array(), edge_totals = Json::array();
  Json edges = Json::object();
  RETURN_IF_ERROR(MakeDirs(out_dir + "/edges"));
  auto src = graph.src_ids();
  auto dst = graph.dst_ids();
  for (size_t r = 0; r < etypes.size(); ++r) {
    const std::string canonical = etypes[r].Canonical();
    const int64_t count = eoff[r + 1] - eoff[r];
    const std::vector<int64_t> b = SplitBounds(count, k);
    ASSIGN_OR_RETURN(int s, FindNodeType(ntypes, etypes[r].src_type));
    ASSIGN_OR_RETURN(int d, FindNodeType(ntypes, etypes[r].dst_type));
    Json counts = Json::array(), files = Json::array();
    for (int c = 0; c < k; ++c) {
      counts.push_back(b[c + 1] - b[c]);
      const std::string file =
          StrCat("edges/", canonical, "-", c, options.csv_edges ? ".txt" : ".npy");
      const int64_t first = eoff[r] + b[c], rows = b[c + 1] - b[c];
      if (options.csv_edges) {
        ASSIGN_OR_RETURN(OutputFile out, OutputFile::Create(out_dir + "/" + file));
        std::string text;
        for (int64_t i = first; i < first + rows; ++i) {
          fmt::format_to(std::back_inserter(text), "{} {}\n", src[i] - noff[s], dst[i] - noff[d]);
          if (text.size() > (4 << 20)) {
            RETURN_IF_ERROR(out.Append(text.data(), text.size()));
            text.clear();
          }
        }
        RETURN_IF_ERROR(out.Append(text.data(), text.size()));
        RETURN_IF_ERROR(out.Close());
      } else {
        ASSIGN_OR_RETURN(NpyWriter out,
                         NpyWriter::Create(out_dir + "/" + file, DType::kInt64, {rows, 2}));
        std::vector<int64_t> pairs;
        for (int64_t i = first; i < first + rows; i += 1 << 18) {
          const int64_t n = std::min<int64_t>(1 << 18, first + rows - i);
          pairs.resize(2 * n);
          for (int64_t j = 0; j < n; ++j) {
            pairs[2 * j] = src[i + j] - noff[s];
            pairs[2 * j + 1] = dst[i + j] - noff[d];
          }
          RETURN_IF_ERROR(out.AppendRows(pairs.data(), n));
        }
        RETURN_IF_ERROR(out.Close());
      }
      files.push_back(file);
    }
    edge_names.push_back(canonical);
    edge_chunks.push_back(counts);
    edge_totals.push_back(count);
    Json format =
        options.csv_edges ? Json{{"name", "csv"}, {"delimiter", " "}} : Json{{"name", "numpy"}};
    edges[canonical] = {{"format", format}, {"data", files}};
  }
  graph.src.ReleasePages();
  graph.dst.ReleasePages();
  meta["edge_type"] = edge_names;
  meta["num_edges_per_chunk"] = edge_chunks;
  meta["num_edges_per_type"] = edge_totals;
  meta["edges"] = edges;
  for (bool node : {true, false}) {
    Json data = Json::object();
    const size_t types = node ? ntypes.size() : etypes.size();
    for (size_t t = 0; t < types; ++t) {
      const auto& arrays = !hetero ? (node ? graph.node_data : graph.edge_data)
                                   : (node ? graph.ntype_data[t] : graph.etype_data[t]);
      if (arrays.empty()) continue;
      const std::string type = node ? ntypes[t] : etypes[t].Canonical();
      const std::string rel_dir = StrCat(node ? "node_data/" : "edge_data/", type);
      const int64_t rows = node ? noff[t + 1] - noff[t] : eoff[t + 1] - eoff[t];
      const std::vector<int64_t> b = SplitBounds(rows, k);
      Json specs = Json::object();
      for (const auto& [array_name, array] : arrays) {
        RETURN_IF_ERROR(WriteArrayChunks(array, b, out_dir + "/" + rel_dir, array_name, rel_dir,
                                         &specs[array_name]));
      }
      data[type] = specs;
    }
    meta[node ? "node_data" : "edge_data"] = data;
  }
  return WriteFileAtomic(metadata_path, meta.dump(2) + "\n");
}

}  // namespace tessera::dist_partition
