// The heterogeneous npy folder (readers.h layout (d), docs/hetero-input.md):
//
//   <dir>/meta.json   {"ntypes": {"paper": 4, "author": 3}, "etypes": ["author:writes:paper"]}
//   <dir>/nodes/<ntype>/<name>.npy              first dimension = the type's count
//   <dir>/edges/<src>__<rel>__<dst>/src.npy     per-type ids of <src> (int32/int64)
//   <dir>/edges/<src>__<rel>__<dst>/dst.npy     per-type ids of <dst>
//   <dir>/edges/<src>__<rel>__<dst>/<name>.npy  first dimension = the relation's edges
#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "src/graph/npy.h"
#include "src/graph/reader_util.h"
#include "tessera/base/file.h"
#include "tessera/base/strings.h"
#include "tessera/graph/readers.h"

namespace tessera {
namespace {

using Json = nlohmann::ordered_json;  // Keeps "ntypes" in the file's order.

Status Invalid(const std::string& path, const std::string& message) {
  return absl::InvalidArgumentError(StrCat(path, ": ", message));
}

// Array names come from file names: printable, so that they can be logged,
// written into partition configs and named on the command line.
Status CheckArrayName(const std::string& path, const std::string& name) {
  for (char ch : name) {
    if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f) {
      return Invalid(path, "the array name has a control character");
    }
  }
  return absl::OkStatus();
}

// A count in meta.json: a non-negative integer that fits int64.
StatusOr<int64_t> ParseCount(const Json& value, const std::string& path, const std::string& type) {
  if (value.is_number_unsigned()) {
    if (value.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return static_cast<int64_t>(value.get<uint64_t>());
    }
  } else if (value.is_number_integer() && value.get<int64_t>() >= 0) {
    return value.get<int64_t>();
  }
  return Invalid(path, StrCat("the count of node type '", type, "' must be an integer in [0, 2^63)",
                              ", got ", value.dump().substr(0, 40)));
}

struct Meta {
  std::vector<std::string> ntypes;
  std::vector<int64_t> counts;
  std::vector<EdgeType> etypes;
};

StatusOr<Meta> ParseMeta(const std::string& path, int64_t max_claimed_bytes) {
  ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  Json meta = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (meta.is_discarded() || !meta.is_object()) return Invalid(path, "not valid JSON");
  if (!meta.contains("ntypes")) return Invalid(path, "has no \"ntypes\"");
  const Json& ntypes = meta["ntypes"];
  Meta out;
  auto add_type = [&](const std::string& name, const Json& count) -> Status {
    RETURN_IF_ERROR(CheckTypeName(name, StrCat(path, ": node type")));
    if (std::find(out.ntypes.begin(), out.ntypes.end(), name) != out.ntypes.end()) {
      return Invalid(path, StrCat("node type '", name, "' appears twice"));
    }
    ASSIGN_OR_RETURN(int64_t n, ParseCount(count, path, name));
    out.ntypes.push_back(name);
    out.counts.push_back(n);
    return absl::OkStatus();
  };
  const char* kNtypesForm =
      "\"ntypes\" must be an object {\"<name>\": <count>, ...} or a list of "
      "{\"name\": \"<name>\", \"count\": <count>}";
  if (ntypes.is_object()) {
    for (const auto& [name, count] : ntypes.items()) RETURN_IF_ERROR(add_type(name, count));
  } else if (ntypes.is_array()) {
    for (const Json& entry : ntypes) {
      if (!entry.is_object() || !entry.contains("name") || !entry["name"].is_string() ||
          !entry.contains("count")) {
        return Invalid(path, kNtypesForm);
      }
      RETURN_IF_ERROR(add_type(entry["name"].get<std::string>(), entry["count"]));
    }
  } else {
    return Invalid(path, kNtypesForm);
  }
  if (out.ntypes.empty()) return Invalid(path, "\"ntypes\" lists no node type");
  int64_t total = 0;
  for (int64_t n : out.counts) {
    if (__builtin_add_overflow(total, n, &total)) {
      return Invalid(path, "the node type counts add up to more than 2^63");
    }
  }
  if (total == 0) return Invalid(path, "the node types have no nodes");
  // Before anything is read: every later per-node allocation trusts it.
  RETURN_IF_ERROR(CheckGraphNodes(path, total, max_claimed_bytes));

  if (!meta.contains("etypes") || !meta["etypes"].is_array() || meta["etypes"].empty()) {
    return Invalid(path, "\"etypes\" must be a non-empty list of relations \"src:rel:dst\"");
  }
  for (const Json& entry : meta["etypes"]) {
    if (!entry.is_string()) {
      return Invalid(path, StrCat("\"etypes\" entries must be strings \"src:rel:dst\", got ",
                                  entry.dump().substr(0, 40)));
    }
    auto type = ParseEdgeType(entry.get<std::string>());
    if (!type.ok()) return Invalid(path, std::string(type.status().message()));
    for (const std::string* end : {&type->src_type, &type->dst_type}) {
      if (std::find(out.ntypes.begin(), out.ntypes.end(), *end) == out.ntypes.end()) {
        return Invalid(path, StrCat("relation '", type->Canonical(), "' names node type '", *end,
                                    "', which meta.json does not list (node types: ",
                                    StrJoin(out.ntypes, ", "), ")"));
      }
    }
    if (std::find(out.etypes.begin(), out.etypes.end(), *type) != out.etypes.end()) {
      return Invalid(path, StrCat("relation '", type->Canonical(), "' appears twice"));
    }
    out.etypes.push_back(*std::move(type));
  }
  return out;
}

std::string FolderOf(const EdgeType& type) {
  return StrCat(type.src_type, "__", type.relation, "__", type.dst_type);
}

// Every sub-folder of `dir` must be one of `expected`; `what` explains them.
Status CheckNoStrayFolders(const std::string& dir, const std::vector<std::string>& expected,
                           const std::string& what) {
  for (const std::string& name : SubdirNames(dir)) {
    if (std::find(expected.begin(), expected.end(), name) == expected.end()) {
      return Invalid(StrCat(dir, "/", name), what);
    }
  }
  return absl::OkStatus();
}

// Reads the *.npy files of `dir` but `skip` as arrays of `rows` rows.
Status ReadArrays(const std::string& dir, int64_t rows, const std::string& rows_what,
                  const std::vector<std::string>& skip, std::map<std::string, Array>* arrays) {
  for (const std::string& name : NpyNames(dir)) {
    if (std::find(skip.begin(), skip.end(), name) != skip.end()) continue;
    const std::string path = StrCat(dir, "/", name, ".npy");
    RETURN_IF_ERROR(CheckArrayName(path, name));
    ASSIGN_OR_RETURN(Array array, ReadNpy(path));
    if (array.ndim() < 1 || array.rows() != rows) {
      return Invalid(path, StrCat("is ", array.Describe(), " but ", rows_what));
    }
    arrays->emplace(name, std::move(array));
  }
  return absl::OkStatus();
}

// src.npy or dst.npy of a relation folder: per-type ids within `count`.
StatusOr<Array> ReadIds(const std::string& folder, const char* end, const EdgeType& type,
                        const std::string& ntype, int64_t count) {
  const std::string path = StrCat(folder, "/", end, ".npy");
  if (!PathExists(path)) {
    return absl::NotFoundError(
        StrCat(path, ": missing (relation '", type.Canonical(), "' needs src.npy and dst.npy)"));
  }
  ASSIGN_OR_RETURN(Array raw, ReadNpy(path));
  ASSIGN_OR_RETURN(Array ids, ToInt64Ids(std::move(raw), path, /*non_negative=*/true));
  auto span = ids.span<int64_t>();
  for (size_t i = 0; i < span.size(); ++i) {
    if (span[i] >= count) {
      return absl::OutOfRangeError(StrCat(path, ": relation '", type.Canonical(), "': ", end, "[",
                                          i, "] = ", span[i], " is out of range for node type '",
                                          ntype, "', which has ", count, " nodes"));
    }
  }
  return ids;
}

}  // namespace

bool IsTypedNpyDirectory(const std::string& dir) {
  const std::string path = dir + "/meta.json";
  if (!IsDirectory(dir) || !PathExists(path)) return false;
  auto text = ReadFileToString(path);
  if (!text.ok()) return false;
  Json meta = Json::parse(*text, nullptr, /*allow_exceptions=*/false);
  return !meta.is_discarded() && meta.is_object() && meta.contains("ntypes");
}

StatusOr<Graph> ReadTypedNpyDirectory(const std::string& dir, int64_t max_claimed_bytes) {
  if (!IsDirectory(dir)) return absl::NotFoundError(StrCat(dir, ": not a directory"));
  const std::string meta_path = dir + "/meta.json";
  if (!PathExists(meta_path)) {
    return absl::NotFoundError(
        StrCat(meta_path, ": missing (a heterogeneous npy folder needs it)"));
  }
  ASSIGN_OR_RETURN(Meta meta, ParseMeta(meta_path, max_claimed_bytes));
  const size_t nt = meta.ntypes.size();
  auto count_of = [&](const std::string& ntype) {
    auto it = std::find(meta.ntypes.begin(), meta.ntypes.end(), ntype);
    return meta.counts[it - meta.ntypes.begin()];
  };

  std::vector<std::string> folders;
  for (const EdgeType& type : meta.etypes) {
    std::string folder = FolderOf(type);
    auto same = std::find(folders.begin(), folders.end(), folder);
    if (same != folders.end()) {  // Possible when a name contains "__".
      return Invalid(meta_path,
                     StrCat("relations '", meta.etypes[same - folders.begin()].Canonical(),
                            "' and '", type.Canonical(), "' both have the folder edges/", folder));
    }
    folders.push_back(std::move(folder));
  }
  RETURN_IF_ERROR(CheckNoStrayFolders(
      dir + "/edges", folders,
      StrCat("a folder for a relation that meta.json's \"etypes\" does not list (relation ",
             "'src:rel:dst' is read from edges/src__rel__dst; listed: ", StrJoin(folders, ", "),
             ")")));
  RETURN_IF_ERROR(CheckNoStrayFolders(
      dir + "/nodes", meta.ntypes,
      StrCat("a folder for a node type that meta.json's \"ntypes\" does not list (listed: ",
             StrJoin(meta.ntypes, ", "), ")")));

  std::vector<std::map<std::string, Array>> ntype_data(nt);
  for (size_t t = 0; t < nt; ++t) {
    RETURN_IF_ERROR(ReadArrays(
        StrCat(dir, "/nodes/", meta.ntypes[t]), meta.counts[t],
        StrCat("meta.json gives node type '", meta.ntypes[t], "' ", meta.counts[t], " nodes"), {},
        &ntype_data[t]));
  }

  std::vector<RelationEdges> relations;
  for (size_t r = 0; r < meta.etypes.size(); ++r) {
    const EdgeType& type = meta.etypes[r];
    const std::string folder = StrCat(dir, "/edges/", folders[r]);
    if (!IsDirectory(folder)) {
      return absl::NotFoundError(StrCat(folder, ": missing (relation '", type.Canonical(),
                                        "' of meta.json needs src.npy and dst.npy there)"));
    }
    RelationEdges rel;
    rel.type = type;
    ASSIGN_OR_RETURN(rel.src, ReadIds(folder, "src", type, type.src_type, count_of(type.src_type)));
    ASSIGN_OR_RETURN(rel.dst, ReadIds(folder, "dst", type, type.dst_type, count_of(type.dst_type)));
    if (rel.src.rows() != rel.dst.rows()) {
      return Invalid(folder, StrCat("src.npy has ", rel.src.rows(), " entries but dst.npy has ",
                                    rel.dst.rows()));
    }
    RETURN_IF_ERROR(
        ReadArrays(folder, rel.src.rows(),
                   StrCat("relation '", type.Canonical(), "' has ", rel.src.rows(), " edges"),
                   {"src", "dst"}, &rel.data));
    relations.push_back(std::move(rel));
  }
  return AssembleTyped(dir, std::move(meta.ntypes), meta.counts, std::move(ntype_data),
                       std::move(relations));
}

}  // namespace tessera
