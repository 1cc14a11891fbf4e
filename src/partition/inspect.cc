#include "src/partition/inspect.h"

#include <algorithm>

#include "fmt/format.h"
#include "nlohmann/json.hpp"
#include "src/base/file.h"
#include "src/base/resource.h"
#include "src/base/strings.h"
#include "src/partition/load_partition.h"

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
  for (int p = 0; p < config.num_parts; ++p) {
    ASSIGN_OR_RETURN(LocalPartition lp, LoadPartition(config_path, p, {.load_feats = true}));
    PartInspection part;
    part.inner_nodes = lp.num_inner_nodes();
    part.halo_nodes = lp.num_local_nodes() - part.inner_nodes;
    part.inner_edges = lp.book.NumEdgesOf(p);
    part.local_edges = lp.num_local_edges();
    auto indptr = lp.indptrs();
    auto src = lp.src_locals();
    for (int64_t k = 0; k < indptr[part.inner_nodes]; ++k)
      part.cut_edges += src[k] >= part.inner_nodes;
    if (!in.balanced_array.empty() && lp.node_data.count(in.balanced_array)) {
      part.balanced_count = CountNonZero(lp.node_data.at(in.balanced_array));
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
                      {"parts", parts_json}};
  return j.dump(1);
}

}  // namespace tessera
