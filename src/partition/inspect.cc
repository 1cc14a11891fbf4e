#include "src/partition/inspect.h"

#include <algorithm>

#include "fmt/format.h"
#include "nlohmann/json.hpp"
#include "tessera/base/file.h"
#include "tessera/base/resource.h"
#include "tessera/base/strings.h"
#include "tessera/partition/load_partition.h"

namespace tessera {
namespace {

template <typename Get>
double MaxOverMean(const std::vector<PartInspection>& parts, Get get) {
  double total = 0, max = 0;
  for (const auto& p : parts) {
    total += static_cast<double>(get(p));
    max = std::max(max, static_cast<double>(get(p)));
  }
  return total > 0 ? max / (total / parts.size()) : 1.0;
}

int64_t CountNonZero(const Array& array) {
  const auto* bytes = static_cast<const uint8_t*>(array.data());
  const size_t width = DTypeSize(array.dtype());
  int64_t count = 0;
  for (int64_t i = 0; i < array.numel(); ++i) {
    bool nonzero = false;
    for (size_t b = 0; b < width; ++b) nonzero |= bytes[i * width + b] != 0;
    count += nonzero;
  }
  return count;
}

}  // namespace

StatusOr<Inspection> InspectPartitions(const std::string& config_path) {
  ASSIGN_OR_RETURN(PartitionConfig config, ReadPartitionConfig(config_path));
  Inspection in;
  in.graph_name = config.graph_name;
  in.part_method = config.part_method;
  in.num_nodes = config.num_nodes;
  in.num_edges = config.num_edges;
  in.halo_hops = config.halo_hops;
  in.balanced_array = config.balance_ntypes;
  in.ntypes = config.layout.ntypes;
  for (const EdgeType& e : config.layout.etypes) in.etypes.push_back(e.Canonical());
  for (int p = 0; p < config.num_parts; ++p) {
    ASSIGN_OR_RETURN(LocalPartition lp, LoadPartition(config_path, p));
    PartInspection part;
    part.inner_nodes = lp.num_inner_nodes();
    part.halo_nodes = lp.num_local_nodes() - part.inner_nodes;
    part.inner_edges = lp.book.NumEdgesOf(p);
    part.local_edges = lp.num_local_edges();
    auto indptr = lp.indptrs();
    auto src = lp.src_locals();
    const int nt = static_cast<int>(in.ntypes.size()), et = static_cast<int>(in.etypes.size());
    for (int t = 0; t < nt; ++t) {
      auto [a, b] = lp.book.NodeTypeRange(t, p);
      part.type_nodes.push_back(b - a);
    }
    for (int r = 0; r < et; ++r) {
      auto [a, b] = lp.book.EdgeTypeRange(r, p);
      part.type_edges.push_back(b - a);
    }
    part.type_cut_edges.assign(et, 0);
    std::span<const int32_t> etype;
    if (config.typed()) etype = lp.etype.span<int32_t>();
    for (int64_t k = 0; k < indptr[part.inner_nodes]; ++k) {
      const bool cut = src[k] >= part.inner_nodes;
      part.cut_edges += cut;
      part.type_cut_edges[etype.empty() ? 0 : etype[k]] += cut;
    }
    if (!in.balanced_array.empty()) {
      for (const auto& [name, array] : lp.node_data) {  // "<type>/<name>" on a heterograph.
        auto type = config.NodeArrayType(name);
        if (type.ok() && type->second == in.balanced_array) {
          part.balanced_count += CountNonZero(array);
        }
      }
    }
    part.bytes_on_disk = DirectorySize(config.dir + "/" + StrCat("part", p));
    in.edge_cut += part.cut_edges;
    in.bytes_on_disk += part.bytes_on_disk;
    in.parts.push_back(part);
  }
  in.node_balance = MaxOverMean(in.parts, [](const auto& p) { return p.inner_nodes; });
  in.edge_balance = MaxOverMean(in.parts, [](const auto& p) { return p.inner_edges; });
  in.balanced_array_balance = MaxOverMean(in.parts, [](const auto& p) { return p.balanced_count; });
  return in;
}

std::string Inspection::ToText() const {
  std::string out =
      fmt::format("graph '{}': {} nodes, {} edges, {} parts ({}), {} halo hop(s)\n", graph_name,
                  num_nodes, num_edges, parts.size(), part_method, halo_hops);
  out += fmt::format("{:>4} {:>12} {:>12} {:>13} {:>13} {:>12} {:>10}{}\n", "part", "inner nodes",
                     "halo nodes", "inner edges", "local edges", "cut edges", "on disk",
                     balanced_array.empty() ? "" : fmt::format(" {:>12}", balanced_array));
  for (size_t p = 0; p < parts.size(); ++p) {
    const auto& x = parts[p];
    out += fmt::format("{:>4} {:>12} {:>12} {:>13} {:>13} {:>12} {:>10}{}\n", p, x.inner_nodes,
                       x.halo_nodes, x.inner_edges, x.local_edges, x.cut_edges,
                       FormatBytes(x.bytes_on_disk),
                       balanced_array.empty() ? "" : fmt::format(" {:>12}", x.balanced_count));
  }
  if (ntypes.size() > 1 || etypes.size() > 1) {
    out += "inner nodes / edges per type and part (max/mean)\n";
    for (size_t t = 0; t < ntypes.size() + etypes.size(); ++t) {
      const bool node = t < ntypes.size();
      const size_t i = node ? t : t - ntypes.size();
      std::vector<int64_t> counts;
      for (const auto& x : parts) counts.push_back(node ? x.type_nodes[i] : x.type_edges[i]);
      int64_t cut = 0;
      for (const auto& x : parts) cut += node ? 0 : x.type_cut_edges[i];
      double sum = 0, max = 0;
      for (int64_t c : counts) {
        sum += static_cast<double>(c);
        max = std::max(max, static_cast<double>(c));
      }
      out += fmt::format("  {:<40} {} ({:.3f}){}\n", node ? ntypes[i] : etypes[i],
                         fmt::join(counts, " "), sum > 0 ? max / (sum / counts.size()) : 1.0,
                         node ? "" : fmt::format(", cut {}", cut));
    }
  }
  out += fmt::format("edge cut: {} ({:.2f}% of edges)\n", edge_cut, 100 * edge_cut_fraction());
  out += fmt::format("balance (max/mean): nodes {:.3f}, edges {:.3f}", node_balance, edge_balance);
  if (!balanced_array.empty())
    out += fmt::format(", {} {:.3f}", balanced_array, balanced_array_balance);
  out += fmt::format("\non disk: {}\n", FormatBytes(bytes_on_disk));
  return out;
}

std::string Inspection::ToJson() const {
  nlohmann::json parts_json = nlohmann::json::array();
  for (const auto& x : parts) {
    parts_json.push_back({{"inner_nodes", x.inner_nodes},
                          {"halo_nodes", x.halo_nodes},
                          {"inner_edges", x.inner_edges},
                          {"local_edges", x.local_edges},
                          {"cut_edges", x.cut_edges},
                          {"balanced_count", x.balanced_count},
                          {"type_nodes", x.type_nodes},
                          {"type_edges", x.type_edges},
                          {"type_cut_edges", x.type_cut_edges},
                          {"bytes_on_disk", x.bytes_on_disk}});
  }
  nlohmann::json j = {{"graph_name", graph_name},
                      {"part_method", part_method},
                      {"num_nodes", num_nodes},
                      {"num_edges", num_edges},
                      {"halo_hops", halo_hops},
                      {"edge_cut", edge_cut},
                      {"edge_cut_fraction", edge_cut_fraction()},
                      {"node_balance", node_balance},
                      {"edge_balance", edge_balance},
                      {"balanced_array", balanced_array},
                      {"balanced_array_balance", balanced_array_balance},
                      {"bytes_on_disk", bytes_on_disk},
                      {"ntypes", ntypes},
                      {"etypes", etypes},
                      {"parts", parts_json}};
  return j.dump(1);
}

}  // namespace tessera
