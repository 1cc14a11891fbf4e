#include "src/partition/partition_config.h"

#include <filesystem>

#include "nlohmann/json.hpp"
#include "src/base/file.h"
#include "src/base/strings.h"

namespace tessera {
namespace {

using nlohmann::json;
constexpr char kNodeType[] = "_N";
constexpr char kEdgeType[] = "_N:_E:_N";

json Ranges(const std::vector<int64_t>& offsets) {
  json ranges = json::array();
  for (size_t p = 0; p + 1 < offsets.size(); ++p) {
    ranges.push_back(json::array({offsets[p], offsets[p + 1]}));
  }
  return ranges;
}

// Parses {type: [[start, end], ...]} (or the legacy [end, ...]) into offsets.
StatusOr<std::vector<int64_t>> ParseMap(const json& value, const std::string& key, int num_parts,
                                        const std::string& path) {
  auto bad = [&](std::string_view why) {
    return absl::InvalidArgumentError(StrCat(path, ": '", key, "' ", why));
  };
  const json* ranges = &value;
  if (value.is_object()) {
    if (value.size() != 1)
      return bad("must have exactly one type (heterogeneous graphs are not supported)");
    ranges = &value.begin().value();
  }
  if (!ranges->is_array() || static_cast<int>(ranges->size()) != num_parts) {
    return bad(StrCat("must list one range per partition (", num_parts, ")"));
  }
  std::vector<int64_t> offsets = {0};
  for (const json& r : *ranges) {
    if (r.is_array() && r.size() == 2 && r[0].is_number_integer() && r[1].is_number_integer()) {
      if (r[0].get<int64_t>() != offsets.back() || r[1].get<int64_t>() < r[0].get<int64_t>()) {
        return bad("ranges must be contiguous, ordered and start at 0");
      }
      offsets.push_back(r[1].get<int64_t>());
    } else if (r.is_number_integer()) {  // Legacy: range ends.
      if (r.get<int64_t>() < offsets.back()) return bad("range ends must be non-decreasing");
      offsets.push_back(r.get<int64_t>());
    } else {
      return bad("entries must be [start, end] pairs");
    }
  }
  return offsets;
}

}  // namespace

std::string PartitionConfigToJson(const PartitionConfig& c) {
  json j = json::object();
  j["graph_name"] = c.graph_name;
  j["num_nodes"] = c.num_nodes;
  j["num_edges"] = c.num_edges;
  j["part_method"] = c.part_method;
  j["num_parts"] = c.num_parts;
  j["halo_hops"] = c.halo_hops;
  j["node_map"] = {{kNodeType, Ranges(c.node_offsets)}};
  j["edge_map"] = {{kEdgeType, Ranges(c.edge_offsets)}};
  j["ntypes"] = {{kNodeType, 0}};
  j["etypes"] = {{kEdgeType, 0}};
  j["node_map_dtype"] = "int64";
  j["edge_map_dtype"] = "int64";
  for (int p = 0; p < c.num_parts; ++p) {
    j[StrCat("part-", p)] = {{"part_graph", c.parts[p].part_graph},
                             {"node_feats", c.parts[p].node_feats},
                             {"edge_feats", c.parts[p].edge_feats}};
  }
  j["tessera"] = {{"format_version", 1},
                  {"num_trainers_per_machine", c.num_trainers_per_machine},
                  {"node_feats", c.node_feat_names},
                  {"edge_feats", c.edge_feat_names},
                  {"balance_ntypes", c.balance_ntypes},
                  {"balance_edges", c.balance_edges},
                  {"seed", c.seed}};
  return j.dump(2) + "\n";
}

namespace {

// `text` with NUL and other control characters shown as \xNN, for messages.
std::string Printable(const std::string& text) {
  std::string out;
  for (char ch : text) {
    if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f) {
      out += StrCat("\\x", "0123456789abcdef"[(ch >> 4) & 0xf], "0123456789abcdef"[ch & 0xf]);
    } else {
      out.push_back(ch);
    }
  }
  return out;
}

// A part's path must stay inside the config's folder: relative, and no ".."
// that climbs out of it (symbolic links inside the folder are the user's
// business).
Status CheckPartPath(const std::string& value, const std::string& key, const std::string& field,
                     const std::string& path) {
  const std::filesystem::path rel = std::filesystem::path(value).lexically_normal();
  const bool escapes = !rel.empty() && *rel.begin() == "..";
  if (value.find('\0') != std::string::npos || rel.is_absolute() || escapes) {
    return absl::InvalidArgumentError(
        StrCat(path, ": '", key, "'.'", field, "' = '", Printable(value),
               "' leaves the config's folder: paths in a partition config must be relative to "
               "it and stay inside it"));
  }
  return absl::OkStatus();
}

// Array names become the files <folder>/<name>.npy: a name must be a plain
// file name (no '/', not "." or "..", no NUL, not empty).
StatusOr<std::vector<std::string>> ParseArrayNames(const json& t, const char* field,
                                                   const std::string& path) {
  std::vector<std::string> names;
  if (!t.contains(field)) return names;
  const json& list = t[field];
  if (!list.is_array()) {
    return absl::InvalidArgumentError(
        StrCat(path, ": 'tessera'.'", field, "' must be a list of array names"));
  }
  for (const json& item : list) {
    if (!item.is_string()) {
      return absl::InvalidArgumentError(StrCat(
          path, ": 'tessera'.'", field, "' must be a list of array names, found ", item.dump()));
    }
    std::string name = item.get<std::string>();
    if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos ||
        name.find('\0') != std::string::npos) {
      return absl::InvalidArgumentError(
          StrCat(path, ": 'tessera'.'", field, "' has the array name '", Printable(name),
                 "': an array name must be a plain file name (not empty, no '/', '..' or NUL)"));
    }
    names.push_back(std::move(name));
  }
  return names;
}

StatusOr<PartitionConfig> ParseConfig(const json& j, const std::string& path) {
  auto missing = [&](const char* key) {
    return absl::InvalidArgumentError(StrCat(path, ": missing or invalid key '", key, "'"));
  };
  PartitionConfig c;
  if (!j.contains("graph_name") || !j["graph_name"].is_string()) return missing("graph_name");
  c.graph_name = j["graph_name"];
  for (const char* key : {"num_nodes", "num_edges", "num_parts"}) {
    if (!j.contains(key) || !j[key].is_number_integer() || j[key].get<int64_t>() < 0) {
      return missing(key);
    }
  }
  c.num_nodes = j["num_nodes"];
  c.num_edges = j["num_edges"];
  c.num_parts = j["num_parts"];
  if (c.num_parts < 1) return missing("num_parts");
  c.part_method = j.value("part_method", "");
  c.halo_hops =
      j.contains("halo_hops") && j["halo_hops"].is_number_integer() ? j["halo_hops"].get<int>() : 1;
  if (!j.contains("node_map")) return missing("node_map");
  if (!j.contains("edge_map")) return missing("edge_map");
  ASSIGN_OR_RETURN(c.node_offsets, ParseMap(j["node_map"], "node_map", c.num_parts, path));
  ASSIGN_OR_RETURN(c.edge_offsets, ParseMap(j["edge_map"], "edge_map", c.num_parts, path));
  if (c.node_offsets.back() != c.num_nodes || c.edge_offsets.back() != c.num_edges) {
    return absl::InvalidArgumentError(
        StrCat(path, ": node_map/edge_map do not cover num_nodes/num_edges"));
  }
  for (int p = 0; p < c.num_parts; ++p) {
    std::string key = StrCat("part-", p);
    if (!j.contains(key) || !j[key].is_object()) {
      return absl::InvalidArgumentError(StrCat(path, ": missing key '", key, "'"));
    }
    const json& files = j[key];
    PartitionConfig::PartFiles f;
    for (auto [name, field] :
         {std::pair{"part_graph", &f.part_graph}, std::pair{"node_feats", &f.node_feats},
          std::pair{"edge_feats", &f.edge_feats}}) {
      if (!files.contains(name) || !files[name].is_string()) {
        return absl::InvalidArgumentError(StrCat(path, ": '", key, "' lacks '", name, "'"));
      }
      *field = files[name];
      RETURN_IF_ERROR(CheckPartPath(*field, key, name, path));
    }
    c.parts.push_back(std::move(f));
  }
  if (j.contains("tessera") && j["tessera"].is_object()) {
    const json& t = j["tessera"];
    c.num_trainers_per_machine = t.value("num_trainers_per_machine", 1);
    ASSIGN_OR_RETURN(c.node_feat_names, ParseArrayNames(t, "node_feats", path));
    ASSIGN_OR_RETURN(c.edge_feat_names, ParseArrayNames(t, "edge_feats", path));
    c.balance_ntypes = t.value("balance_ntypes", "");
    c.balance_edges = t.value("balance_edges", false);
    c.seed = t.value("seed", uint64_t{0});
  }
  c.dir = std::filesystem::path(path).parent_path().string();
  if (c.dir.empty()) c.dir.assign(1, '.');  // Not = ".": GCC 12 bug 105329 warns.
  return c;
}

}  // namespace

StatusOr<PartitionConfig> ReadPartitionConfig(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return absl::InvalidArgumentError(StrCat(path, ": not a valid JSON object"));
  }
  try {
    return ParseConfig(j, path);
  } catch (const json::exception& e) {  // A value of the wrong type.
    return absl::InvalidArgumentError(StrCat(path, ": ", e.what()));
  }
}

}  // namespace tessera
