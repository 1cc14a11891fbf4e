#include "src/graph/reader_util.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <type_traits>

#include "src/graph/text_reader.h"
#include "tessera/base/resource.h"
#include "tessera/base/strings.h"

namespace tessera {
namespace fs = std::filesystem;

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
  // One int64 CSR offset per node (partitioning, sampling).
  return CheckClaimedNodes(source, num_nodes, 8, "the graph's CSR offsets (8 bytes per node)",
                           max_bytes);
}

namespace {

// Sorted names in `dir` of the entries `keep` accepts, as `name` gives them.
template <typename Keep, typename Name>
std::vector<std::string> ListDir(const std::string& dir, Keep keep, Name name) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (keep(entry)) names.push_back(name(entry.path()));
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

std::vector<std::string> NpyNames(const std::string& dir) {
  return ListDir(
      dir,
      [](const fs::directory_entry& e) {
        return e.is_regular_file() && e.path().extension() == ".npy";
      },
      [](const fs::path& p) { return p.stem().string(); });
}

std::vector<std::string> SubdirNames(const std::string& dir) {
  return ListDir(
      dir, [](const fs::directory_entry& e) { return e.is_directory(); },
      [](const fs::path& p) { return p.filename().string(); });
}

StatusOr<EdgeColumns> ReadEdgeColumns(const std::string& path, const EdgeIdBounds& bounds) {
  ASSIGN_OR_RETURN(auto reader, TextReader::Open(path));
  EdgeColumns out;
  std::vector<std::string_view> fields;
  std::string_view line;
  bool header_seen = false;
  auto out_of_range = [&](const char* end, int64_t id, const std::string& type, int64_t count) {
    return reader->LineError(StrCat("relation '", bounds.relation, "': ", end, " id ", id,
                                    " is out of range for node type '", type, "', which has ",
                                    count, " nodes"));
  };
  while (true) {
    ASSIGN_OR_RETURN(bool more, reader->NextLine(&line));
    if (!more) break;
    size_t start = line.find_first_not_of(" \t");
    if (start == std::string_view::npos || line[start] == '#') continue;
    SplitFields(line, &fields);
    int64_t s = 0, d = 0;
    bool ok = fields.size() >= 2 && ParseInt64(fields[0], &s) && ParseInt64(fields[1], &d);
    if (out.columns == 0) {
      // Before any data line, a line whose first field is not a number is a header.
      if (!ok && fields.size() >= 2 && !ParseInt64(fields[0], &s) && !header_seen) {
        header_seen = true;
        continue;
      }
      out.columns = fields.size();
      if (out.columns < 2 || out.columns > 3) {
        return reader->LineError(
            StrCat("expected 2 or 3 columns (src, dst[, weight]), got ", out.columns));
      }
    }
    if (!ok || fields.size() != out.columns) {
      const bool w = out.columns == 3;
      return reader->LineError(StrCat("expected ", w ? "src, dst, weight" : "src, dst", " (",
                                      out.columns, " columns of integer node ids",
                                      w ? " and a number" : "", "), got '", line.substr(0, 80),
                                      "'"));
    }
    if (s < 0 || d < 0) return reader->LineError("negative node id");
    if (bounds.src_count >= 0 && s >= bounds.src_count) {
      return out_of_range("source", s, bounds.src_type, bounds.src_count);
    }
    if (bounds.dst_count >= 0 && d >= bounds.dst_count) {
      return out_of_range("destination", d, bounds.dst_type, bounds.dst_count);
    }
    if (out.columns == 3) {
      float w = 0;
      if (!ParseFloat(fields[2], &w)) {
        return reader->LineError(StrCat("weight '", fields[2], "' is not a number"));
      }
      out.weight.push_back(w);
    }
    out.src.push_back(s);
    out.dst.push_back(d);
  }
  return out;
}

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

template StatusOr<Array> ReadMatrix<float>(const std::string& path, int64_t rows);
template StatusOr<Array> ReadMatrix<int64_t>(const std::string& path, int64_t rows);

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

StatusOr<std::string> ChooseSplit(const std::string& dir, const std::string& requested) {
  std::vector<std::string> splits = SubdirNames(dir + "/split");
  auto has = [&](const std::string& name) {
    return std::find(splits.begin(), splits.end(), name) != splits.end();
  };
  if (!requested.empty()) {
    if (!has(requested)) {
      return absl::NotFoundError(
          StrCat(dir, "/split/", requested, ": no such split (have: ", StrJoin(splits, ", "), ")"));
    }
    return requested;
  }
  if (has("public")) return std::string("public");
  if (splits.size() == 1) return splits[0];
  if (splits.size() > 1) {
    return absl::InvalidArgumentError(
        StrCat(dir, ": several splits (", StrJoin(splits, ", "), "); choose one with --split"));
  }
  return std::string();
}

StatusOr<Graph> AssembleTyped(const std::string& source, std::vector<std::string> ntypes,
                              const std::vector<int64_t>& counts,
                              std::vector<std::map<std::string, Array>> ntype_data,
                              std::vector<RelationEdges> relations) {
  Graph g;
  g.ntype_offsets.assign(1, 0);
  for (int64_t count : counts) {
    int64_t next = 0;
    if (count < 0 || __builtin_add_overflow(g.ntype_offsets.back(), count, &next)) {
      return absl::InvalidArgumentError(StrCat(source, ": node type counts overflow int64"));
    }
    g.ntype_offsets.push_back(next);
  }
  g.num_nodes = g.ntype_offsets.back();
  g.etype_offsets.assign(1, 0);
  for (const RelationEdges& r : relations) {
    int64_t next = 0;
    if (__builtin_add_overflow(g.etype_offsets.back(), r.src.rows(), &next)) {
      return absl::InvalidArgumentError(StrCat(source, ": edge counts overflow int64"));
    }
    g.etype_offsets.push_back(next);
  }
  const int64_t num_edges = g.etype_offsets.back();
  g.src = Array::Empty(DType::kInt64, {num_edges});
  g.dst = Array::Empty(DType::kInt64, {num_edges});
  auto src = g.src.mutable_span<int64_t>();
  auto dst = g.dst.mutable_span<int64_t>();
  auto offset_of = [&](const std::string& type) -> int64_t {
    for (size_t t = 0; t < ntypes.size(); ++t) {
      if (ntypes[t] == type) return g.ntype_offsets[t];
    }
    return -1;  // Validate reports the unknown type.
  };
  for (size_t r = 0; r < relations.size(); ++r) {
    RelationEdges& rel = relations[r];
    const int64_t s0 = offset_of(rel.type.src_type), d0 = offset_of(rel.type.dst_type);
    auto s = rel.src.span<int64_t>();
    auto d = rel.dst.span<int64_t>();
    const int64_t begin = g.etype_offsets[r];
    for (size_t i = 0; i < s.size(); ++i) {
      src[begin + i] = s[i] + s0;
      dst[begin + i] = d[i] + d0;
    }
    rel.src = Array();  // Frees (or unmaps) the per-type ids early.
    rel.dst = Array();
    g.etypes.push_back(std::move(rel.type));
    g.etype_data.push_back(std::move(rel.data));
  }
  g.ntypes = std::move(ntypes);
  g.ntype_data = std::move(ntype_data);
  RETURN_IF_ERROR(g.Validate(source));
  return g;
}

}  // namespace tessera
