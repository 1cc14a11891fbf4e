#include "tessera/partition/partition_book.h"

#include <algorithm>
#include <limits>

#include "tessera/base/strings.h"

namespace tessera {

StatusOr<PartitionBook> PartitionBook::Create(std::vector<int64_t> node_offsets,
                                              std::vector<int64_t> edge_offsets, int part_id) {
  if (node_offsets.size() < 2 || node_offsets.size() != edge_offsets.size()) {
    return absl::InvalidArgumentError("partition book: node and edge maps need K+1 offsets each");
  }
  for (const auto* offsets : {&node_offsets, &edge_offsets}) {
    if ((*offsets)[0] != 0 || !std::is_sorted(offsets->begin(), offsets->end())) {
      return absl::InvalidArgumentError(
          "partition book: ranges must start at 0 and be contiguous and ordered");
    }
  }
  TypeLayout layout{{"_N"}, {{"_N", "_E", "_N"}}, {}, {}};
  for (size_t p = 0; p + 1 < node_offsets.size(); ++p) {
    layout.node_counts.push_back(node_offsets[p + 1] - node_offsets[p]);
    layout.edge_counts.push_back(edge_offsets[p + 1] - edge_offsets[p]);
  }
  return CreateTyped(std::move(layout), part_id);
}

StatusOr<PartitionBook::Side> PartitionBook::Derive(const std::vector<int64_t>& counts,
                                                    int num_types, int k, const char* what) {
  Side side;
  side.offsets.assign(k + 1, 0);
  side.starts.resize(counts.size());
  side.typed.assign(num_types, std::vector<int64_t>(k + 1, 0));
  int64_t next = 0;
  for (int p = 0; p < k; ++p) {
    for (int t = 0; t < num_types; ++t) {
      int64_t c = counts[p * num_types + t];
      if (c < 0 || next > std::numeric_limits<int64_t>::max() - c) {
        return absl::InvalidArgumentError(
            StrCat("partition book: ", what, " counts must be non-negative and fit int64"));
      }
      side.starts[p * num_types + t] = next;
      next += c;
      side.typed[t][p + 1] = side.typed[t][p] + c;
    }
    side.offsets[p + 1] = next;
  }
  return side;
}

StatusOr<PartitionBook> PartitionBook::CreateTyped(TypeLayout layout, int part_id) {
  const size_t nt = layout.ntypes.size(), et = layout.etypes.size();
  if (nt == 0 || et == 0 || layout.node_counts.size() % nt != 0 ||
      layout.edge_counts.size() % et != 0 || layout.node_counts.empty() ||
      layout.node_counts.size() / nt != layout.edge_counts.size() / et) {
    return absl::InvalidArgumentError(
        "partition book: node and edge counts need one entry per partition and type");
  }
  if (nt > 32767) return absl::InvalidArgumentError("partition book: too many node types");
  // Names: the same checks whichever way the layout arrived (config, HELLO).
  for (size_t t = 0; t < nt; ++t) {
    RETURN_IF_ERROR(CheckTypeName(layout.ntypes[t], "partition book: node type"));
    for (size_t u = 0; u < t; ++u) {
      if (layout.ntypes[u] == layout.ntypes[t]) {
        return absl::InvalidArgumentError(
            StrCat("partition book: node type '", layout.ntypes[t], "' appears twice"));
      }
    }
  }
  for (size_t r = 0; r < et; ++r) {
    const EdgeType& e = layout.etypes[r];
    RETURN_IF_ERROR(CheckTypeName(e.relation, "partition book: relation"));
    if (!FindNodeType(layout.ntypes, e.src_type).ok() ||
        !FindNodeType(layout.ntypes, e.dst_type).ok()) {
      return absl::InvalidArgumentError(StrCat("partition book: relation '", e.Canonical(),
                                               "' names a node type it does not list"));
    }
    for (size_t u = 0; u < r; ++u) {
      if (layout.etypes[u] == e) {
        return absl::InvalidArgumentError(
            StrCat("partition book: relation '", e.Canonical(), "' appears twice"));
      }
    }
  }
  const int k = static_cast<int>(layout.node_counts.size() / nt);
  if (part_id < 0 || part_id >= k) {
    return absl::InvalidArgumentError(
        StrCat("partition book: part id ", part_id, " is not in [0, ", k, ")"));
  }
  ASSIGN_OR_RETURN(Side nodes, Derive(layout.node_counts, static_cast<int>(nt), k, "node"));
  ASSIGN_OR_RETURN(Side edges, Derive(layout.edge_counts, static_cast<int>(et), k, "edge"));
  PartitionBook book;
  book.node_offsets_ = std::move(nodes.offsets);
  book.edge_offsets_ = std::move(edges.offsets);
  book.node_type_starts_ = std::move(nodes.starts);
  book.edge_type_starts_ = std::move(edges.starts);
  book.typed_node_offsets_ = std::move(nodes.typed);
  book.typed_edge_offsets_ = std::move(edges.typed);
  book.layout_ = std::move(layout);
  book.part_id_ = part_id;
  return book;
}

std::pair<int, int64_t> PartitionBook::ToPerType(const std::vector<int64_t>& offsets,
                                                 const std::vector<int64_t>& starts,
                                                 const std::vector<std::vector<int64_t>>& typed,
                                                 int num_types, int64_t id) {
  const int p = Owner(offsets, id);
  // The last type of p whose block starts at or before id (empty blocks are
  // skipped: they start where the next one does).
  auto first = starts.begin() + static_cast<ptrdiff_t>(p) * num_types;
  auto it = std::upper_bound(first, first + num_types, id);
  const int t = static_cast<int>(it - first) - 1;
  return {t, typed[t][p] + (id - first[t])};
}

std::pair<int, int64_t> PartitionBook::MapToPerNtype(int64_t nid) const {
  return ToPerType(node_offsets_, node_type_starts_, typed_node_offsets_, num_ntypes(), nid);
}

std::pair<int, int64_t> PartitionBook::MapToPerEtype(int64_t eid) const {
  return ToPerType(edge_offsets_, edge_type_starts_, typed_edge_offsets_, num_etypes(), eid);
}

int64_t PartitionBook::MapToHomoNid(int t, int64_t id) const {
  const int p = Owner(typed_node_offsets_[t], id);
  return node_type_starts_[p * num_ntypes() + t] + (id - typed_node_offsets_[t][p]);
}

int64_t PartitionBook::MapToHomoEid(int r, int64_t id) const {
  const int p = Owner(typed_edge_offsets_[r], id);
  return edge_type_starts_[p * num_etypes() + r] + (id - typed_edge_offsets_[r][p]);
}

int PartitionBook::Owner(const std::vector<int64_t>& offsets, int64_t id) {
  // The last range start <= id; empty partitions (equal starts) are skipped.
  auto it = std::upper_bound(offsets.begin() + 1, offsets.end(), id);
  return static_cast<int>(it - offsets.begin()) - 1;
}

void PartitionBook::NodeOwners(std::span<const int64_t> nids, std::span<int32_t> owners) const {
  for (size_t i = 0; i < nids.size(); ++i) owners[i] = NodeOwner(nids[i]);
}

}  // namespace tessera
