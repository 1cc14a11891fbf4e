#include "tessera/partition/partition_config.h"

#include <filesystem>

#include "nlohmann/json.hpp"
#include "tessera/base/file.h"
#include "tessera/base/strings.h"

namespace tessera {
namespace {

using nlohmann::json;

// {type: [[start, end], ...K]} from the counts (types in id order inside
// each partition).
json Ranges(const std::vector<int64_t>& counts, const std::vector<std::string>& names, int k) {
  const int num_types = static_cast<int>(names.size());
  std::vector<json> ranges(num_types, json::array());
  int64_t next = 0;
  for (int p = 0; p < k; ++p) {
    for (int t = 0; t < num_types; ++t) {
      int64_t c = counts[p * num_types + t];
      ranges[t].push_back(json::array({next, next + c}));
      next += c;
    }
  }
  json out = json::object();
  for (int t = 0; t < num_types; ++t) out[names[t]] = ranges[t];
  return out;
}

std::vector<std::string> Canonical(const std::vector<EdgeType>& etypes) {
  std::vector<std::string> names;
  for (const EdgeType& e : etypes) names.push_back(e.Canonical());
  return names;
}

// {name: id} with ids 0..n-1 -> names in id order.
StatusOr<std::vector<std::string>> ParseTypeIds(const json& value, const char* key,
                                                const std::string& path) {
  auto bad = [&](std::string_view why) {
    return absl::InvalidArgumentError(StrCat(path, ": '", key, "' ", why));
  };
  if (!value.is_object() || value.empty()) return bad("must be a non-empty {name: id} object");
  std::vector<std::string> names(value.size());
  for (const auto& [name, id] : value.items()) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 ||
        id.get<int64_t>() >= static_cast<int64_t>(value.size()) ||
        !names[id.get<int64_t>()].empty()) {
      return bad(StrCat("must number its types 0..", value.size() - 1, " once each; '", name,
                        "' has ", id.dump()));
    }
    names[id.get<int64_t>()] = name;
  }
  return names;
}

// The ranges of one type: K [start, end] pairs (or, with one type only, DGL's
// legacy list of range ends).
StatusOr<std::vector<std::pair<int64_t, int64_t>>> ParseTypeRanges(const json& ranges,
                                                                   bool legacy_ok, int num_parts,
                                                                   const std::string& what) {
  auto bad = [&](std::string_view why) { return absl::InvalidArgumentError(StrCat(what, why)); };
  if (!ranges.is_array() || static_cast<int>(ranges.size()) != num_parts) {
    return bad(StrCat(" must list one range per partition (", num_parts, ")"));
  }
  std::vector<std::pair<int64_t, int64_t>> out;
  int64_t previous_end = 0;
  for (const json& r : ranges) {
    if (r.is_array() && r.size() == 2 && r[0].is_number_integer() && r[1].is_number_integer()) {
      out.emplace_back(r[0].get<int64_t>(), r[1].get<int64_t>());
    } else if (legacy_ok && r.is_number_integer()) {
      out.emplace_back(previous_end, r.get<int64_t>());
    } else {
      return bad(" entries must be [start, end] pairs");
    }
    previous_end = out.back().second;
  }
  return out;
}

// node_map / edge_map -> counts (K x T). Inside each partition the types must
// be contiguous blocks in type-id order, the partitions one after another
// from 0: the layout DGL's reshuffle produces and its RangePartitionBook
// assumes.
StatusOr<std::vector<int64_t>> ParseMap(const json& value, const char* key,
                                        const std::vector<std::string>& names, int num_parts,
                                        const std::string& path) {
  const int num_types = static_cast<int>(names.size());
  std::vector<std::vector<std::pair<int64_t, int64_t>>> ranges(num_types);
  if (num_types == 1 && value.is_object() && value.size() == 1) {  // Any key: legacy "_E".
    ASSIGN_OR_RETURN(ranges[0], ParseTypeRanges(value.begin().value(), true, num_parts,
                                                StrCat(path, ": '", key, "'")));
  } else if (value.is_array() && num_types == 1) {
    ASSIGN_OR_RETURN(ranges[0],
                     ParseTypeRanges(value, true, num_parts, StrCat(path, ": '", key, "'")));
  } else if (value.is_object()) {
    if (static_cast<int>(value.size()) != num_types) {
      std::vector<std::string> have;
      for (const auto& [name, r] : value.items()) have.push_back(name);
      return absl::InvalidArgumentError(StrCat(path, ": '", key, "' has the types ",
                                               StrJoin(have, ", "), " but the config declares ",
                                               StrJoin(names, ", ")));
    }
    for (int t = 0; t < num_types; ++t) {
      if (!value.contains(names[t])) {
        return absl::InvalidArgumentError(
            StrCat(path, ": '", key, "' has no ranges for the type '", names[t], "'"));
      }
      ASSIGN_OR_RETURN(ranges[t], ParseTypeRanges(value[names[t]], num_types == 1, num_parts,
                                                  StrCat(path, ": '", key, "'.'", names[t], "'")));
    }
  } else {
    return absl::InvalidArgumentError(StrCat(path, ": '", key, "' must map each type to ranges"));
  }
  std::vector<int64_t> counts(static_cast<size_t>(num_parts) * num_types);
  int64_t next = 0;
  for (int p = 0; p < num_parts; ++p) {
    for (int t = 0; t < num_types; ++t) {
      auto [start, end] = ranges[t][p];
      if (start != next || end < start) {
        return absl::InvalidArgumentError(
            StrCat(path, ": '", key, "'.'", names[t], "' range ", p, " is [", start, ", ", end,
                   "); ranges must be ordered by partition, then type, contiguous and start at 0 ",
                   "(expected it to start at ", next, ")"));
      }
      counts[p * num_types + t] = end - start;
      next = end;
    }
  }
  return counts;
}

// "ntypes" and "etypes" (or, when absent, the one type of node_map /
// edge_map). Relations must be canonical "src:rel:dst" with listed node
// types; a plain relation name is accepted with a single node type.
Status ParseTypes(const json& j, const std::string& path, TypeLayout* layout) {
  auto only_key = [](const json& map, const char* fallback) {
    return map.is_object() && map.size() == 1 ? map.begin().key() : std::string(fallback);
  };
  if (j.contains("ntypes")) {
    ASSIGN_OR_RETURN(layout->ntypes, ParseTypeIds(j["ntypes"], "ntypes", path));
  } else {
    layout->ntypes = {only_key(j["node_map"], "_N")};
  }
  for (const std::string& name : layout->ntypes) {
    RETURN_IF_ERROR(CheckTypeName(name, StrCat(path, ": node type")));
  }
  std::vector<std::string> etypes;
  if (j.contains("etypes")) {
    ASSIGN_OR_RETURN(etypes, ParseTypeIds(j["etypes"], "etypes", path));
  } else {
    etypes = {only_key(j["edge_map"], "_N:_E:_N")};
  }
  layout->etypes.clear();
  for (const std::string& name : etypes) {
    if (name.find(':') == std::string::npos && layout->ntypes.size() == 1) {
      const std::string& n = layout->ntypes[0];
      layout->etypes.push_back({n, name, n});
      continue;
    }
    auto parsed = ParseEdgeType(name);
    if (!parsed.ok()) {
      return absl::InvalidArgumentError(StrCat(path, ": 'etypes': ", parsed.status().message(),
                                               " (DGL configs with plain relation names need DGL's "
                                               "change_etype_to_canonical_etype.py first)"));
    }
    for (const std::string* end : {&parsed->src_type, &parsed->dst_type}) {
      if (!FindNodeType(layout->ntypes, *end).ok()) {
        return absl::InvalidArgumentError(
            StrCat(path, ": relation '", name, "' names the node type '", *end,
                   "', which 'ntypes' does not list (", StrJoin(layout->ntypes, ", "), ")"));
      }
    }
    layout->etypes.push_back(*parsed);
  }
  return absl::OkStatus();
}

std::vector<int64_t> PartOffsets(const std::vector<int64_t>& counts, int num_types, int k) {
  std::vector<int64_t> offsets(k + 1, 0);
  for (int p = 0; p < k; ++p) {
    offsets[p + 1] = offsets[p];
    for (int t = 0; t < num_types; ++t) offsets[p + 1] += counts[p * num_types + t];
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
  const std::vector<std::string> etypes = Canonical(c.layout.etypes);
  j["node_map"] = Ranges(c.layout.node_counts, c.layout.ntypes, c.num_parts);
  j["edge_map"] = Ranges(c.layout.edge_counts, etypes, c.num_parts);
  j["ntypes"] = json::object();
  for (size_t t = 0; t < c.layout.ntypes.size(); ++t) j["ntypes"][c.layout.ntypes[t]] = t;
  j["etypes"] = json::object();
  for (size_t r = 0; r < etypes.size(); ++r) j["etypes"][etypes[r]] = r;
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
bool PlainName(const std::string& name) {
  return !(name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos ||
           name.find('\0') != std::string::npos);
}

// A typed layout's array names are "<type>/<name>" (the type is checked
// against the config by the caller); the homogeneous layout's are plain.
StatusOr<std::vector<std::string>> ParseArrayNames(const json& t, const char* field, bool typed,
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
    const size_t slash = typed ? name.find('/') : std::string::npos;
    if (typed && (slash == std::string::npos || slash == 0)) {
      return absl::InvalidArgumentError(
          StrCat(path, ": 'tessera'.'", field, "' has the array name '", Printable(name),
                 "': arrays of a heterogeneous graph are named '<type>/<name>'"));
    }
    if (!PlainName(typed ? name.substr(slash + 1) : name)) {
      return absl::InvalidArgumentError(
          StrCat(path, ": 'tessera'.'", field, "' has the array name '", Printable(name),
                 "': an array name must be a plain file name (not empty, no '/', '..' or NUL)"));
    }
    names.push_back(std::move(name));
  }
  return names;
}

StatusOr<PartitionConfig> ParseConfig(const json& j, const std::string& path) {
  // A later format may mean other things by the same fields: refused first.
  if (j.contains("tessera") && j["tessera"].is_object() &&
      j["tessera"].contains("format_version") && j["tessera"]["format_version"] != 1) {
    return absl::InvalidArgumentError(
        StrCat(path, ": 'tessera'.'format_version' is ", j["tessera"]["format_version"].dump(),
               "; this tessera reads format 1 (written by a newer tessera?)"));
  }
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
  // Integers read as int are checked in int64 first: 2^32 + 2 parts is not 2.
  auto small = [&](const json& value, const char* key, int64_t lo, int64_t hi) -> StatusOr<int> {
    if (!value.is_number_integer() || value.get<int64_t>() < lo || value.get<int64_t>() > hi) {
      return absl::InvalidArgumentError(StrCat(path, ": '", key, "' must be an integer in [", lo,
                                               ", ", hi, "], got ", value.dump().substr(0, 40)));
    }
    return static_cast<int>(value.get<int64_t>());
  };
  c.num_nodes = j["num_nodes"];
  c.num_edges = j["num_edges"];
  ASSIGN_OR_RETURN(c.num_parts, small(j["num_parts"], "num_parts", 1, int64_t{1} << 20));
  c.part_method = j.value("part_method", "");
  c.halo_hops = 1;
  if (j.contains("halo_hops")) {
    ASSIGN_OR_RETURN(c.halo_hops, small(j["halo_hops"], "halo_hops", 0, 1 << 10));
  }
  if (!j.contains("node_map")) return missing("node_map");
  if (!j.contains("edge_map")) return missing("edge_map");
  RETURN_IF_ERROR(ParseTypes(j, path, &c.layout));
  ASSIGN_OR_RETURN(c.layout.node_counts,
                   ParseMap(j["node_map"], "node_map", c.layout.ntypes, c.num_parts, path));
  ASSIGN_OR_RETURN(c.layout.edge_counts, ParseMap(j["edge_map"], "edge_map",
                                                  Canonical(c.layout.etypes), c.num_parts, path));
  c.node_offsets = PartOffsets(c.layout.node_counts, c.layout.ntypes.size(), c.num_parts);
  c.edge_offsets = PartOffsets(c.layout.edge_counts, c.layout.etypes.size(), c.num_parts);
  // Whatever the book refuses (names, duplicates, counts) the config refuses.
  if (StatusOr<PartitionBook> book = c.Book(0); !book.ok()) {
    return absl::InvalidArgumentError(StrCat(path, ": ", book.status().message()));
  }
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
    c.has_tessera_section = true;
    const json& t = j["tessera"];
    if (t.contains("num_trainers_per_machine")) {
      ASSIGN_OR_RETURN(c.num_trainers_per_machine, small(t["num_trainers_per_machine"],
                                                         "num_trainers_per_machine", 1, 1 << 16));
    }
    ASSIGN_OR_RETURN(c.node_feat_names, ParseArrayNames(t, "node_feats", c.typed(), path));
    ASSIGN_OR_RETURN(c.edge_feat_names, ParseArrayNames(t, "edge_feats", c.typed(), path));
    for (const std::string& name : c.node_feat_names) {
      RETURN_IF_ERROR(Annotate(c.NodeArrayType(name).status(), path));
    }
    for (const std::string& name : c.edge_feat_names) {
      RETURN_IF_ERROR(Annotate(c.EdgeArrayType(name).status(), path));
    }
    c.balance_ntypes = t.value("balance_ntypes", "");
    c.balance_edges = t.value("balance_edges", false);
    c.seed = t.value("seed", uint64_t{0});
  }
  c.dir = std::filesystem::path(path).parent_path().string();
  if (c.dir.empty()) c.dir.assign(1, '.');  // Not = ".": GCC 12 bug 105329 warns.
  return c;
}

}  // namespace

StatusOr<std::pair<int, std::string>> PartitionConfig::NodeArrayType(
    const std::string& name) const {
  if (!typed()) return std::pair<int, std::string>{0, name};
  const size_t slash = name.find('/');
  auto t = FindNodeType(layout.ntypes, name.substr(0, slash));
  if (slash == std::string::npos || !t.ok()) {
    return absl::InvalidArgumentError(StrCat("node array '", name, "' does not start with one of ",
                                             "the node types (", StrJoin(layout.ntypes, ", "),
                                             ") and '/'"));
  }
  return std::pair<int, std::string>{*t, name.substr(slash + 1)};
}

StatusOr<std::pair<int, std::string>> PartitionConfig::EdgeArrayType(
    const std::string& name) const {
  if (!typed()) return std::pair<int, std::string>{0, name};
  const size_t slash = name.find('/');
  const std::string type = name.substr(0, slash);
  for (size_t r = 0; r < layout.etypes.size() && slash != std::string::npos; ++r) {
    if (layout.etypes[r].Canonical() == type) {
      return std::pair<int, std::string>{static_cast<int>(r), name.substr(slash + 1)};
    }
  }
  return absl::InvalidArgumentError(StrCat("edge array '", name,
                                           "' does not start with a canonical relation (",
                                           StrJoin(Canonical(layout.etypes), ", "), ") and '/'"));
}

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
