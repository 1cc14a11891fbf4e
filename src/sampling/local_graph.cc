// File: src/sampling/local_graph.cc
#include "src/sampling/local_graph.h"

#include <algorithm>

#include "fmt/format.h"
#include "spdlog/spdlog.h"
#include "src/base/time.h"

namespace tessera::sampling {

PartArrays PartArraysOf(std::shared_ptr<const LocalPartition> part) {
  PartArrays a{.part_id = part->part_id,
               .halo_hops = part->config.halo_hops,
               .node_range = part->book.NodeRange(part->part_id),
               .edge_range = part->book.EdgeRange(part->part_id),
               .nid = part->nids(),
               .indptr = part->indptrs(),
               .indices = part->src_locals(),
               .eid = part->eids()};
  a.keepalive = std::move(part);
  return a;
}

StatusOr<std::shared_ptr<const LocalGraph>> LocalGraph::Create(PartArrays a) {
  auto bad = [&](const std::string& what) {
    return absl::DataLossError(fmt::format("partition {}: {}", a.part_id, what));
  };
  int64_t owned_nodes = a.node_range.second - a.node_range.first;
  int64_t owned_edges = a.edge_range.second - a.edge_range.first;
  int64_t local = static_cast<int64_t>(a.nid.size());
  if (owned_nodes < 0 || owned_edges < 0) return bad("negative id range");
  if (local < owned_nodes) {
    return bad(fmt::format("{} local nodes but it owns {}", local, owned_nodes));
  }
  if (static_cast<int64_t>(a.indptr.size()) != local + 1 || a.indptr[0] != 0 ||
      a.indptr[local] != static_cast<int64_t>(a.indices.size()) ||
      a.indices.size() != a.eid.size()) {
    return bad("indptr, indices and eid do not fit together");
  }
  if (owned_nodes > 0 &&
      (a.nid[0] != a.node_range.first || a.nid[owned_nodes - 1] != a.node_range.second - 1)) {
    return bad("its first local nodes are not the nodes it owns");
  }
  // Inner rows hold exactly the owned edges, in id order (num_hops >= 1).
  if (a.indptr[owned_nodes] != owned_edges) {
    return absl::FailedPreconditionError(fmt::format(
        "partition {} stores {} of the {} in-edges of its nodes (partitioned with num_hops 0?); "
        "graph operations need partitions made with --num-hops 1 or more",
        a.part_id, a.indptr[owned_nodes], owned_edges));
  }
  if (owned_edges > 0 &&
      (a.eid[0] != a.edge_range.first || a.eid[owned_edges - 1] != a.edge_range.second - 1)) {
    return bad("its inner rows do not hold the edges it owns in id order");
  }
  return std::shared_ptr<const LocalGraph>(new LocalGraph(std::move(a)));
}

Status LocalGraph::CheckOwnedNodes(std::span<const int64_t> nids) const {
  auto [begin, end] = a_.node_range;
  for (size_t i = 0; i < nids.size(); ++i) {
    if (nids[i] < begin || nids[i] >= end) {
      return absl::OutOfRangeError(
          fmt::format("node {} (position {}) is not owned by partition {}, which owns [{}, {})",
                      nids[i], i, a_.part_id, begin, end));
    }
  }
  return absl::OkStatus();
}

StatusOr<SampledEdges> LocalGraph::SampleNeighbors(std::span<const int64_t> seeds,
                                                   const NeighborOptions& o) const {
  RETURN_IF_ERROR(CheckOwnedNodes(seeds));
  int64_t first = a_.node_range.first, owned = num_owned_nodes();
  std::vector<int64_t> local(seeds.size());
  for (size_t i = 0; i < seeds.size(); ++i) local[i] = seeds[i] - first;
  SampleOptions kernel{.fanout = o.fanout,
                       .replace = o.replace,
                       .weights = o.weights,
                       .exclude = o.exclude,
                       .seed = o.seed,
                       .num_threads = o.num_threads};
  SampledEdges edges;
  if (o.dir == EdgeDir::kIn) {
    if (!o.weights.empty() && static_cast<int64_t>(o.weights.size()) != num_owned_edges()) {
      return absl::InvalidArgumentError(
          fmt::format("partition {} owns {} edges but got {} edge weights", a_.part_id,
                      num_owned_edges(), o.weights.size()));
    }
    size_t positions = static_cast<size_t>(num_owned_positions());
    // Inner position p is edge edge_range.first + p: no need to read `eid`.
    CscView inner{.indptr = a_.indptr.first(owned + 1),
                  .indices = a_.indices.first(positions),
                  .eid_base = a_.edge_range.first};
    ASSIGN_OR_RETURN(edges, ::tessera::sampling::SampleNeighbors(inner, local, seeds, kernel));
    for (size_t i = 0; i < edges.size(); ++i) edges.src[i] = GlobalId(edges.src[i]);
    for (int64_t& d : edges.dst) d += first;
    return edges;
  }
  if (!o.weights.empty()) {
    return absl::UnimplementedError(
        "weighted sampling of out-edges is not supported: the weights of a node's out-edges "
        "live with the partitions of their destinations");
  }
  ASSIGN_OR_RETURN(const OutIndex* out, Out());
  CscView csr{out->indptr, out->dst, out->eid};
  ASSIGN_OR_RETURN(edges, ::tessera::sampling::SampleNeighbors(csr, local, seeds, kernel));
  // The kernel reports (neighbour, seed); an out-edge goes seed -> neighbour.
  for (size_t i = 0; i < edges.size(); ++i) {
    int64_t neighbour = GlobalId(edges.src[i]);
    edges.src[i] = edges.dst[i] + first;
    edges.dst[i] = neighbour;
  }
  return edges;
}

Status LocalGraph::FindEdges(std::span<const int64_t> eids, int64_t* src, int64_t* dst) const {
  auto [begin, end] = a_.edge_range;
  std::span<const int64_t> rows = a_.indptr.first(num_owned_nodes() + 1);
  for (size_t i = 0; i < eids.size(); ++i) {
    if (eids[i] < begin || eids[i] >= end) {
      return absl::OutOfRangeError(
          fmt::format("edge {} (position {}) is not owned by partition {}, which owns [{}, {})",
                      eids[i], i, a_.part_id, begin, end));
    }
    int64_t p = eids[i] - begin;
    int64_t row = std::upper_bound(rows.begin(), rows.end(), p) - rows.begin() - 1;
    src[i] = GlobalId(a_.indices[p]);
    dst[i] = a_.node_range.first + row;
  }
  return absl::OkStatus();
}

Status LocalGraph::InDegrees(std::span<const int64_t> nids, int64_t* out) const {
  RETURN_IF_ERROR(CheckOwnedNodes(nids));
  for (size_t i = 0; i < nids.size(); ++i) {
    int64_t v = nids[i] - a_.node_range.first;
    out[i] = a_.indptr[v + 1] - a_.indptr[v];
  }
  return absl::OkStatus();
}

Status LocalGraph::OutDegrees(std::span<const int64_t> nids, int64_t* out) const {
  RETURN_IF_ERROR(CheckOwnedNodes(nids));
  ASSIGN_OR_RETURN(const OutIndex* index, Out());
  for (size_t i = 0; i < nids.size(); ++i) {
    int64_t v = nids[i] - a_.node_range.first;
    out[i] = index->indptr[v + 1] - index->indptr[v];
  }
  return absl::OkStatus();
}

StatusOr<const LocalGraph::OutIndex*> LocalGraph::Out() const {
  if (a_.halo_hops < 1) {
    return absl::FailedPreconditionError(fmt::format(
        "partition {} was made with num_hops 0 and does not store the out-edges of its nodes",
        a_.part_id));
  }
  std::call_once(out_once_, [&] {
    Stopwatch watch;
    int64_t owned = num_owned_nodes(), local = static_cast<int64_t>(a_.nid.size());
    auto index = std::make_unique<OutIndex>();
    index->indptr.assign(owned + 1, 0);
    for (int64_t src : a_.indices) {
      if (src < owned) ++index->indptr[src + 1];
    }
    for (int64_t v = 0; v < owned; ++v) index->indptr[v + 1] += index->indptr[v];
    std::vector<std::pair<int64_t, int64_t>> entries(index->indptr[owned]);  // (eid, dst)
    std::vector<int64_t> fill(index->indptr.begin(), index->indptr.end() - 1);
    for (int64_t row = 0; row < local; ++row) {
      for (int64_t p = a_.indptr[row]; p < a_.indptr[row + 1]; ++p) {
        int64_t src = a_.indices[p];
        if (src < owned) entries[fill[src]++] = {a_.eid[p], row};
      }
    }
    index->dst.resize(entries.size());
    index->eid.resize(entries.size());
    for (int64_t v = 0; v < owned; ++v) {
      auto row_begin = entries.begin() + index->indptr[v];
      auto row_end = entries.begin() + index->indptr[v + 1];
      std::sort(row_begin, row_end);
      for (auto it = row_begin; it != row_end; ++it) {
        size_t k = static_cast<size_t>(it - entries.begin());
        index->eid[k] = it->first;
        index->dst[k] = it->second;
      }
    }
    spdlog::debug("partition {}: out-edge index of {} edges built in {:.2f} s", a_.part_id,
                  entries.size(), watch.Seconds());
    out_ = std::move(index);
  });
  return out_.get();
}

}  // namespace tessera::sampling
