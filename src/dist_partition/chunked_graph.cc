// metadata.json of DGL's chunked graph format: parsing and validation
// (chunked_graph.h). Reading and writing the chunks is chunked_io.cc.
#include "src/dist_partition/chunked_graph.h"

#include <algorithm>
#include <filesystem>
#include <limits>

#include "nlohmann/json.hpp"
#include "src/graph/npy.h"
#include "src/partition/partition_util.h"
#include "tessera/base/file.h"
#include "tessera/base/strings.h"

namespace tessera::dist_partition {
namespace {

using Json = nlohmann::ordered_json;

class MetaParser {
 public:
  explicit MetaParser(ChunkedGraph& g) : g_(g) {}

  Status Parse(const Json& meta);

 private:
  // "<metadata.json>: <key>: <message>".
  template <typename... Args>
  Status Bad(const std::string& key, const Args&... message) const {
    return absl::InvalidArgumentError(StrCat(g_.metadata_path, ": ", key, ": ", message...));
  }
  StatusOr<const Json*> Member(const Json& object, const std::string& name, const std::string& key,
                               bool required) const;
  StatusOr<int64_t> Count(const Json& value, const std::string& key) const;
  // [[count, ...] per type]: one non-empty list per type.
  StatusOr<std::vector<std::vector<int64_t>>> ChunkCounts(const Json& meta, const char* name,
                                                          size_t num_types) const;
  // The optional per-type totals must be the sums of the chunk counts.
  Status CheckTotals(const Json& meta, const char* name, const char* chunks_name,
                     const std::vector<std::vector<int64_t>>& chunks) const;
  std::string Resolve(const std::string& file) const;
  StatusOr<std::vector<std::string>> Files(const Json& spec, const std::string& key) const;
  Status ParseEdges(const Json& edges, const std::vector<std::vector<int64_t>>& chunks);
  StatusOr<ChunkedArray> ParseArray(const std::string& name, const Json& spec,
                                    const std::string& key, int64_t rows) const;
  Status ParseArrays(const Json& meta, bool node);

  ChunkedGraph& g_;
};

StatusOr<const Json*> MetaParser::Member(const Json& object, const std::string& name,
                                         const std::string& key, bool required) const {
  if (!object.is_object()) return Bad(key, "must be an object");
  auto it = object.find(name);
  if (it == object.end()) {
    if (required) return Bad(key, "has no \"", name, "\"");
    return nullptr;
  }
  return &*it;
}

StatusOr<int64_t> MetaParser::Count(const Json& value, const std::string& key) const {
  if (value.is_number_unsigned() &&
      value.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return static_cast<int64_t>(value.get<uint64_t>());
  }
  if (value.is_number_integer() && value.get<int64_t>() >= 0) return value.get<int64_t>();
  return Bad(key, "must be a count (an integer in [0, 2^63)), got ", value.dump().substr(0, 40));
}

StatusOr<std::vector<std::vector<int64_t>>> MetaParser::ChunkCounts(const Json& meta,
                                                                    const char* name,
                                                                    size_t num_types) const {
  ASSIGN_OR_RETURN(const Json* list, Member(meta, name, "metadata", true));
  if (!list->is_array() || list->size() != num_types) {
    return Bad(name, "must be a list of ", num_types, " lists (one per type), got ",
               list->dump().substr(0, 60));
  }
  constexpr int64_t kMaxTotal = int64_t{1} << 62;
  std::vector<std::vector<int64_t>> out(num_types);
  int64_t total = 0;
  for (size_t t = 0; t < num_types; ++t) {
    const Json& chunks = (*list)[t];
    const std::string key = StrCat(name, "[", t, "]");
    if (!chunks.is_array() || chunks.empty()) {
      return Bad(key, "must be a non-empty list of chunk counts");
    }
    for (size_t c = 0; c < chunks.size(); ++c) {
      ASSIGN_OR_RETURN(int64_t n, Count(chunks[c], StrCat(key, "[", c, "]")));
      // Every sum of counts (type offsets, chunk starts) stays below 2^62.
      if (__builtin_add_overflow(total, n, &total) || total > kMaxTotal) {
        return Bad(name, "adds up to more than 2^62 (at ", key, "[", c, "])");
      }
      out[t].push_back(n);
    }
  }
  return out;
}

Status MetaParser::CheckTotals(const Json& meta, const char* name, const char* chunks_name,
                               const std::vector<std::vector<int64_t>>& chunks) const {
  ASSIGN_OR_RETURN(const Json* totals, Member(meta, name, "metadata", false));
  if (totals == nullptr) return absl::OkStatus();
  if (!totals->is_array() || totals->size() != chunks.size()) {
    return Bad(name, "must be a list of ", chunks.size(), " counts (one per type)");
  }
  for (size_t t = 0; t < chunks.size(); ++t) {
    ASSIGN_OR_RETURN(int64_t total, Count((*totals)[t], StrCat(name, "[", t, "]")));
    int64_t sum = 0;
    for (int64_t n : chunks[t]) sum += n;
    if (total != sum) {
      return Bad(StrCat(name, "[", t, "]"), "is ", total, " but ", chunks_name, "[", t,
                 "] adds up to ", sum);
    }
  }
  return absl::OkStatus();
}

std::string MetaParser::Resolve(const std::string& file) const {
  if (!file.empty() && file[0] == '/') return file;
  return g_.dir + "/" + file;
}

StatusOr<std::vector<std::string>> MetaParser::Files(const Json& spec,
                                                     const std::string& key) const {
  ASSIGN_OR_RETURN(const Json* data, Member(spec, "data", key, true));
  if (!data->is_array()) return Bad(key + ".data", "must be a list of file names");
  std::vector<std::string> files;
  for (size_t c = 0; c < data->size(); ++c) {
    if (!(*data)[c].is_string() || (*data)[c].get<std::string>().empty()) {
      return Bad(StrCat(key, ".data[", c, "]"), "must be a file name");
    }
    files.push_back(Resolve((*data)[c].get<std::string>()));
    if (!PathExists(files.back())) {
      return absl::NotFoundError(
          StrCat(files.back(), ": missing (", key, ".data[", c, "] in ", g_.metadata_path, ")"));
    }
  }
  return files;
}

// {"name": "csv" | "numpy" | ..., "delimiter": " "}: the format's name.
StatusOr<std::string> FormatName(const Json& spec) {
  auto it = spec.find("format");
  if (it == spec.end() || !it->is_object() || !it->contains("name") || !(*it)["name"].is_string()) {
    return absl::InvalidArgumentError("needs \"format\": {\"name\": ...}");
  }
  return (*it)["name"].get<std::string>();
}

Status MetaParser::ParseEdges(const Json& edges, const std::vector<std::vector<int64_t>>& chunks) {
  if (!edges.is_object()) return Bad("edges", "must be an object keyed by edge type");
  for (const auto& [key, spec] : edges.items()) {
    auto known = std::find_if(g_.relations.begin(), g_.relations.end(),
                              [&](const ChunkedRelation& r) { return r.type.Canonical() == key; });
    if (known == g_.relations.end())
      return Bad("edges", "edge type '", key, "' is not in edge_type");
  }
  for (size_t r = 0; r < g_.relations.size(); ++r) {
    ChunkedRelation& rel = g_.relations[r];
    const std::string key = StrCat("edges[\"", rel.type.Canonical(), "\"]");
    ASSIGN_OR_RETURN(const Json* spec, Member(edges, rel.type.Canonical(), "edges", true));
    auto format = FormatName(*spec);
    if (!format.ok()) return Bad(key, format.status().message());
    if (*format != "csv" && *format != "numpy") {
      return Bad(key, "format '", *format, "' is not supported (use csv or numpy)");
    }
    rel.csv = *format == "csv";
    const Json& f = (*spec)["format"];
    if (rel.csv && f.contains("delimiter")) {
      if (!f["delimiter"].is_string() || f["delimiter"].get<std::string>().size() != 1) {
        return Bad(key, "the CSV delimiter must be one character");
      }
      rel.delimiter = f["delimiter"].get<std::string>()[0];
    }
    ASSIGN_OR_RETURN(rel.files, Files(*spec, key));
    if (rel.files.size() != chunks[r].size()) {
      return Bad(key, "lists ", rel.files.size(), " files but num_edges_per_chunk[", r, "] has ",
                 chunks[r].size(), " chunks");
    }
    rel.chunk_starts.assign(1, 0);
    for (size_t c = 0; c < chunks[r].size(); ++c) {
      rel.chunk_starts.push_back(rel.chunk_starts.back() + chunks[r][c]);
      if (rel.csv) continue;
      ASSIGN_OR_RETURN(NpyHeader header, ReadNpyHeader(rel.files[c]));
      if (!IsIntegral(header.dtype) || header.shape.size() != 2 || header.shape[1] != 2 ||
          header.shape[0] != chunks[r][c]) {
        return absl::InvalidArgumentError(StrCat(
            rel.files[c], ": holds ", DTypeName(header.dtype), "[", StrJoin(header.shape, ", "),
            "] but ", g_.metadata_path, " needs an integer array of shape [", chunks[r][c],
            ", 2] (num_edges_per_chunk[", r, "][", c, "])"));
      }
    }
  }
  return absl::OkStatus();
}

StatusOr<ChunkedArray> MetaParser::ParseArray(const std::string& name, const Json& spec,
                                              const std::string& key, int64_t rows) const {
  if (!SafeName(name)) {  // Array names become file names.
    return Bad(key, "array name '", name, "' must use only letters, digits, '_', '-' and '.'");
  }
  auto format = FormatName(spec);
  if (!format.ok()) return Bad(key, format.status().message());
  if (*format != "numpy") return Bad(key, "format '", *format, "' is not supported (use numpy)");
  ChunkedArray array;
  array.name = name;
  ASSIGN_OR_RETURN(array.files, Files(spec, key));
  if (array.files.empty()) return Bad(key + ".data", "lists no files");
  array.row_starts.assign(1, 0);
  for (size_t c = 0; c < array.files.size(); ++c) {
    ASSIGN_OR_RETURN(NpyHeader header, ReadNpyHeader(array.files[c]));
    if (header.shape.empty()) {
      return absl::InvalidArgumentError(StrCat(array.files[c], ": a scalar; ", key, " needs rows"));
    }
    std::vector<int64_t> row_shape(header.shape.begin() + 1, header.shape.end());
    if (c == 0) {
      array.dtype = header.dtype;
      array.row_shape = row_shape;
    } else if (header.dtype != array.dtype || row_shape != array.row_shape) {
      return absl::InvalidArgumentError(
          StrCat(array.files[c], ": rows of ", DTypeName(header.dtype), "[",
                 StrJoin(row_shape, ", "), "] but ", array.files[0], " has ",
                 DTypeName(array.dtype), "[", StrJoin(array.row_shape, ", "), "] (", key, ")"));
    }
    array.row_starts.push_back(array.row_starts.back() + header.shape[0]);
  }
  if (array.rows() != rows) {
    return Bad(key, "its chunks hold ", array.rows(), " rows but the type has ", rows);
  }
  return array;
}

Status MetaParser::ParseArrays(const Json& meta, bool node) {
  const char* field = node ? "node_data" : "edge_data";
  auto& out = node ? g_.node_data : g_.edge_data;
  out.assign(node ? g_.ntypes.size() : g_.relations.size(), {});
  ASSIGN_OR_RETURN(const Json* data, Member(meta, field, "metadata", false));
  if (data == nullptr) return absl::OkStatus();
  if (!data->is_object()) return Bad(field, "must be an object keyed by type");
  for (const auto& [type, arrays] : data->items()) {
    int t = -1;
    if (node) {
      auto id = FindNodeType(g_.ntypes, type);
      if (id.ok()) t = *id;
    } else {
      std::vector<EdgeType> etypes;
      for (const auto& r : g_.relations) etypes.push_back(r.type);
      auto id = FindEdgeType(etypes, type);
      if (id.ok()) t = *id;
    }
    if (t < 0) return Bad(field, "type '", type, "' is not in ", node ? "node_type" : "edge_type");
    if (!arrays.is_object()) return Bad(StrCat(field, "[\"", type, "\"]"), "must be an object");
    const int64_t rows = node ? g_.ntype_offsets[t + 1] - g_.ntype_offsets[t]
                              : g_.etype_offsets[t + 1] - g_.etype_offsets[t];
    for (const auto& [name, spec] : arrays.items()) {
      ASSIGN_OR_RETURN(
          ChunkedArray array,
          ParseArray(name, spec, StrCat(field, "[\"", type, "\"][\"", name, "\"]"), rows));
      out[t].push_back(std::move(array));
    }
    std::sort(out[t].begin(), out[t].end(),
              [](const ChunkedArray& a, const ChunkedArray& b) { return a.name < b.name; });
  }
  return absl::OkStatus();
}

Status MetaParser::Parse(const Json& meta) {
  if (!meta.is_object()) return Bad("metadata", "must be a JSON object");
  ASSIGN_OR_RETURN(const Json* name, Member(meta, "graph_name", "metadata", true));
  if (!name->is_string()) return Bad("graph_name", "must be a string");
  g_.graph_name = name->get<std::string>();

  ASSIGN_OR_RETURN(const Json* ntypes, Member(meta, "node_type", "metadata", true));
  if (!ntypes->is_array() || ntypes->empty()) {
    return Bad("node_type", "must be a non-empty list of names");
  }
  for (const Json& t : *ntypes) {
    if (!t.is_string()) return Bad("node_type", "must be a list of names");
    RETURN_IF_ERROR(CheckTypeName(t.get<std::string>(), g_.metadata_path + ": node_type"));
    if (std::count(g_.ntypes.begin(), g_.ntypes.end(), t.get<std::string>())) {
      return Bad("node_type", "'", t.get<std::string>(), "' appears twice");
    }
    g_.ntypes.push_back(t.get<std::string>());
  }
  ASSIGN_OR_RETURN(auto node_chunks, ChunkCounts(meta, "num_nodes_per_chunk", g_.ntypes.size()));
  RETURN_IF_ERROR(CheckTotals(meta, "num_nodes_per_type", "num_nodes_per_chunk", node_chunks));
  g_.ntype_offsets.assign(1, 0);
  for (const auto& chunks : node_chunks) {
    int64_t sum = 0;
    for (int64_t n : chunks) sum += n;
    g_.ntype_offsets.push_back(g_.ntype_offsets.back() + sum);
  }

  ASSIGN_OR_RETURN(const Json* etypes, Member(meta, "edge_type", "metadata", true));
  if (!etypes->is_array() || etypes->empty()) {
    return Bad("edge_type", "must be a non-empty list of \"src:rel:dst\"");
  }
  for (const Json& e : *etypes) {
    if (!e.is_string()) return Bad("edge_type", "must be a list of \"src:rel:dst\"");
    auto type = ParseEdgeType(e.get<std::string>());
    if (!type.ok()) return Bad("edge_type", type.status().message());
    ChunkedRelation rel;
    rel.type = *type;
    auto src = FindNodeType(g_.ntypes, type->src_type);
    auto dst = FindNodeType(g_.ntypes, type->dst_type);
    if (!src.ok() || !dst.ok()) {
      return Bad("edge_type", "'", e.get<std::string>(), "' names a node type not in node_type");
    }
    for (const auto& other : g_.relations) {
      if (other.type == rel.type) return Bad("edge_type", "'", e.get<std::string>(), "' twice");
    }
    rel.src_type = *src;
    rel.dst_type = *dst;
    g_.relations.push_back(std::move(rel));
  }
  ASSIGN_OR_RETURN(auto edge_chunks, ChunkCounts(meta, "num_edges_per_chunk", g_.relations.size()));
  RETURN_IF_ERROR(CheckTotals(meta, "num_edges_per_type", "num_edges_per_chunk", edge_chunks));
  ASSIGN_OR_RETURN(const Json* edges, Member(meta, "edges", "metadata", true));
  RETURN_IF_ERROR(ParseEdges(*edges, edge_chunks));
  g_.etype_offsets.assign(1, 0);
  for (const auto& rel : g_.relations)
    g_.etype_offsets.push_back(g_.etype_offsets.back() + rel.count());
  RETURN_IF_ERROR(ParseArrays(meta, /*node=*/true));
  return ParseArrays(meta, /*node=*/false);
}

}  // namespace

int ChunkedGraph::NodeTypeOf(int64_t id) const { return Bucket(ntype_offsets, id); }
int ChunkedGraph::RelationOf(int64_t position) const { return Bucket(etype_offsets, position); }

StatusOr<ChunkedGraph> ReadChunkedGraph(const std::string& path) {
  ChunkedGraph g;
  const bool json = path.size() >= 5 && path.compare(path.size() - 5, 5, ".json") == 0;
  g.metadata_path = json && !IsDirectory(path) ? path : path + "/metadata.json";
  g.dir = std::filesystem::path(g.metadata_path).parent_path().string();
  if (g.dir.empty()) g.dir = ".";
  if (!PathExists(g.metadata_path)) {
    return absl::NotFoundError(StrCat(g.metadata_path,
                                      ": missing (a chunked graph is a folder with metadata.json; ",
                                      "`tessera chunk` writes one)"));
  }
  ASSIGN_OR_RETURN(std::string text, ReadFileToString(g.metadata_path));
  Json meta = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (meta.is_discarded()) {
    return absl::InvalidArgumentError(StrCat(g.metadata_path, ": not valid JSON"));
  }
  RETURN_IF_ERROR(MetaParser(g).Parse(meta));
  return g;
}

}  // namespace tessera::dist_partition
