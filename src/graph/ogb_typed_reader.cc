// The OGB heterogeneous layout (readers.h layout (e), ogbn-mag):
//
//   raw/num-node-dict.csv.gz                          "author,paper\n3,4\n"
//   raw/relations/<src>___<rel>___<dst>/edge.csv.gz   "src,dst" per-type ids
//   raw/relations/<...>/num-edge-list.csv.gz          optional: the edge count
//   raw/node-feat/<ntype>/node-feat.csv.gz            -> float32 "feat"
//   raw/node-label/<ntype>/node-label.csv.gz          -> int64 "label"
//   raw/node_year/<ntype>/node_year.csv.gz            -> int64 "year"
//   split/<name>/<ntype>/{train,valid,test}.csv.gz    -> train_mask, val_mask, test_mask
//
// Node types in num-node-dict's header order; relations sorted by folder name.
#include <algorithm>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "src/graph/reader_util.h"
#include "src/graph/text_reader.h"
#include "tessera/base/file.h"
#include "tessera/base/strings.h"
#include "tessera/graph/readers.h"

namespace tessera {
namespace {

Status Invalid(const std::string& path, const std::string& message) {
  return absl::InvalidArgumentError(StrCat(path, ": ", message));
}

struct NodeTypes {
  std::vector<std::string> names;
  std::vector<int64_t> counts;
  int Find(const std::string& name) const {
    auto it = std::find(names.begin(), names.end(), name);
    return it == names.end() ? -1 : static_cast<int>(it - names.begin());
  }
};

// num-node-dict.csv.gz: a header line of node type names, a line of counts.
StatusOr<NodeTypes> ReadNodeDict(const std::string& path, int64_t max_claimed_bytes) {
  ASSIGN_OR_RETURN(auto reader, TextReader::Open(path));
  std::vector<std::vector<std::string>> lines;
  std::vector<std::string_view> fields;
  std::string_view line;
  while (true) {
    ASSIGN_OR_RETURN(bool more, reader->NextLine(&line));
    if (!more) break;
    if (line.find_first_not_of(" \t") == std::string_view::npos) continue;
    if (lines.size() == 2) {
      return reader->LineError("expected two lines: node type names, then their counts");
    }
    SplitFields(line, &fields);
    lines.emplace_back(fields.begin(), fields.end());
  }
  if (lines.size() != 2) {
    return Invalid(path, "expected two lines: node type names, then their counts");
  }
  if (lines[0].size() != lines[1].size()) {
    return Invalid(path,
                   StrCat(lines[0].size(), " node type names but ", lines[1].size(), " counts"));
  }
  NodeTypes types;
  int64_t total = 0;
  for (size_t t = 0; t < lines[0].size(); ++t) {
    const std::string& name = lines[0][t];
    RETURN_IF_ERROR(CheckTypeName(name, StrCat(path, ": node type")));
    if (types.Find(name) >= 0) return Invalid(path, StrCat("node type '", name, "' appears twice"));
    int64_t count = 0;
    if (!ParseInt64(lines[1][t], &count) || count < 0) {
      return Invalid(path, StrCat("the count of node type '", name, "' must be a non-negative ",
                                  "integer, got '", lines[1][t].substr(0, 40), "'"));
    }
    if (__builtin_add_overflow(total, count, &total)) {
      return Invalid(path, "the node type counts add up to more than 2^63");
    }
    types.names.push_back(name);
    types.counts.push_back(count);
  }
  if (total == 0) return Invalid(path, "the node types have no nodes");
  // Before anything else is read: every later per-node allocation trusts it.
  RETURN_IF_ERROR(CheckGraphNodes(path, total, max_claimed_bytes));
  return types;
}

// "<src>___<rel>___<dst>" -> the relation.
StatusOr<EdgeType> ParseRelationFolder(const std::string& path, const std::string& name,
                                       const NodeTypes& types) {
  std::vector<std::string> parts;
  for (size_t begin = 0;;) {
    size_t end = name.find("___", begin);
    parts.push_back(name.substr(begin, end == std::string::npos ? end : end - begin));
    if (end == std::string::npos) break;
    begin = end + 3;
  }
  if (parts.size() != 3) {
    return Invalid(path, "expected a relation folder named <src>___<rel>___<dst>");
  }
  EdgeType type{parts[0], parts[1], parts[2]};
  RETURN_IF_ERROR(CheckTypeName(type.relation, StrCat(path, ": relation")));
  for (const std::string* end : {&type.src_type, &type.dst_type}) {
    if (types.Find(*end) < 0) {
      return Invalid(path, StrCat("relation '", type.Canonical(), "' names node type '", *end,
                                  "', which num-node-dict.csv.gz does not list (node types: ",
                                  StrJoin(types.names, ", "), ")"));
    }
  }
  return type;
}

StatusOr<RelationEdges> ReadRelation(const std::string& folder, EdgeType type,
                                     const NodeTypes& types) {
  const std::string path = folder + "/edge.csv.gz";
  if (!PathExists(path)) return absl::NotFoundError(StrCat(path, ": missing (OGB relation)"));
  EdgeIdBounds bounds;
  bounds.relation = type.Canonical();
  bounds.src_type = type.src_type;
  bounds.dst_type = type.dst_type;
  bounds.src_count = types.counts[types.Find(type.src_type)];
  bounds.dst_count = types.counts[types.Find(type.dst_type)];
  ASSIGN_OR_RETURN(EdgeColumns columns, ReadEdgeColumns(path, bounds));
  if (columns.columns == 3) return Invalid(path, "expected 2 columns (src, dst), got 3");
  const std::string count_path = folder + "/num-edge-list.csv.gz";
  if (PathExists(count_path)) {
    ASSIGN_OR_RETURN(std::vector<int64_t> counts, ReadIntColumn(count_path));
    const int64_t have = static_cast<int64_t>(columns.src.size());
    if (counts.size() != 1 || counts[0] != have) {
      return Invalid(count_path,
                     StrCat("expected one line with the edge count of edge.csv.gz (", have, ")"));
    }
  }
  RelationEdges rel;
  rel.type = std::move(type);
  rel.src = Array::From(columns.src);
  columns.src = {};
  rel.dst = Array::From(columns.dst);
  return rel;
}

// raw/<folder>/<ntype>/<file> for every node type folder there -> array `name`.
template <typename T>
Status ReadNodeArrays(const std::string& raw, const char* folder, const char* file,
                      const char* name, const NodeTypes& types,
                      std::vector<std::map<std::string, Array>>* ntype_data) {
  const std::string dir = StrCat(raw, "/", folder);
  for (const std::string& ntype : SubdirNames(dir)) {
    const int t = types.Find(ntype);
    if (t < 0) {
      return Invalid(StrCat(dir, "/", ntype),
                     StrCat("node type '", ntype, "' is not listed in num-node-dict.csv.gz"));
    }
    const std::string path = StrCat(dir, "/", ntype, "/", file);
    if (!PathExists(path)) return absl::NotFoundError(StrCat(path, ": missing"));
    ASSIGN_OR_RETURN(Array array, ReadMatrix<T>(path, types.counts[t]));
    (*ntype_data)[t].emplace(name, std::move(array));
  }
  return absl::OkStatus();
}

}  // namespace

StatusOr<Graph> ReadOgbTyped(const std::string& dir, const std::string& split,
                             int64_t max_claimed_bytes) {
  const std::string raw = dir + "/raw";
  const std::string dict_path = raw + "/num-node-dict.csv.gz";
  if (!PathExists(dict_path)) {
    return absl::NotFoundError(StrCat(dict_path, ": missing (OGB heterogeneous layout)"));
  }
  ASSIGN_OR_RETURN(NodeTypes types, ReadNodeDict(dict_path, max_claimed_bytes));

  const std::string rel_dir = raw + "/relations";
  const std::vector<std::string> folders = SubdirNames(rel_dir);  // Sorted: the relation order.
  if (folders.empty()) {
    return absl::NotFoundError(
        StrCat(rel_dir, ": no relation folders (expected ", "<src>___<rel>___<dst>/edge.csv.gz)"));
  }
  std::vector<RelationEdges> relations;
  for (const std::string& name : folders) {
    const std::string folder = StrCat(rel_dir, "/", name);
    ASSIGN_OR_RETURN(EdgeType type, ParseRelationFolder(folder, name, types));
    ASSIGN_OR_RETURN(RelationEdges rel, ReadRelation(folder, std::move(type), types));
    relations.push_back(std::move(rel));
  }

  std::vector<std::map<std::string, Array>> ntype_data(types.names.size());
  RETURN_IF_ERROR(
      ReadNodeArrays<float>(raw, "node-feat", "node-feat.csv.gz", "feat", types, &ntype_data));
  RETURN_IF_ERROR(
      ReadNodeArrays<int64_t>(raw, "node-label", "node-label.csv.gz", "label", types, &ntype_data));
  RETURN_IF_ERROR(
      ReadNodeArrays<int64_t>(raw, "node_year", "node_year.csv.gz", "year", types, &ntype_data));

  // The split: by name, else "public", else the only one; masks per type.
  ASSIGN_OR_RETURN(std::string chosen, ChooseSplit(dir, split));
  if (!chosen.empty()) {
    const std::string split_dir = StrCat(dir, "/split/", chosen);
    for (const std::string& ntype : SubdirNames(split_dir)) {
      const int t = types.Find(ntype);
      if (t < 0) {
        return Invalid(StrCat(split_dir, "/", ntype),
                       StrCat("node type '", ntype, "' is not listed in num-node-dict.csv.gz"));
      }
      const std::pair<const char*, const char*> masks[] = {
          {"train", "train_mask"}, {"valid", "val_mask"}, {"test", "test_mask"}};
      for (const auto& [file, name] : masks) {
        const std::string path = StrCat(split_dir, "/", ntype, "/", file, ".csv.gz");
        if (!PathExists(path)) return absl::NotFoundError(StrCat(path, ": missing"));
        ASSIGN_OR_RETURN(Array mask, ReadMask(path, types.counts[t], max_claimed_bytes));
        ntype_data[t].emplace(name, std::move(mask));
      }
    }
  }
  return AssembleTyped(dir, std::move(types.names), types.counts, std::move(ntype_data),
                       std::move(relations));
}

}  // namespace tessera
