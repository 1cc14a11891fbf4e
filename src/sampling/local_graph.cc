// File: src/sampling/local_graph.cc
#include "src/sampling/local_graph.h"

#include <algorithm>
#include <tuple>

#include "fmt/format.h"
#include "spdlog/spdlog.h"
#include "tessera/base/time.h"

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
  if (part->config.typed()) {
    a.etype = part->etype.span<int32_t>();
    a.num_etypes = part->book.num_etypes();
  }
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
  if (a.num_etypes < 1) return bad(fmt::format("{} relations", a.num_etypes));
  const bool typed = !a.etype.empty();
  bool consecutive = true;
  if (!typed) {
    if (a.num_etypes != 1 && !a.eid.empty()) {
      return bad(fmt::format("{} relations but no relation per edge (etype)", a.num_etypes));
    }
    // Homogeneous layout: inner position p holds edge first + p. Checked at
    // the ends and a few places between (a typed part without its etype
    // array fails here).
    for (int64_t k = 0; k <= 64 && owned_edges > 0; ++k) {
      int64_t p = (owned_edges - 1) * k / 64;
      if (a.eid[p] != a.edge_range.first + p) {
        return bad(fmt::format(
            "its inner rows do not hold the edges it owns in id order (position {} holds edge "
            "{}, not {}); a typed partition needs its relation of each edge (etype)",
            p, a.eid[p], a.edge_range.first + p));
      }
    }
  } else {
    if (a.etype.size() != a.eid.size()) {
      return bad(
          fmt::format("{} edge relations for {} stored edges", a.etype.size(), a.eid.size()));
    }
    // Typed layout: every relation in range; each inner row's edges owned,
    // with increasing ids (so relations are grouped, in order).
    for (size_t p = 0; p < a.etype.size(); ++p) {
      if (a.etype[p] < 0 || a.etype[p] >= a.num_etypes) {
        return bad(fmt::format("stored edge {} has relation {}, not one of the {} relations", p,
                               a.etype[p], a.num_etypes));
      }
    }
    for (int64_t v = 0; v < owned_nodes; ++v) {
      if (a.indptr[v + 1] < a.indptr[v]) return bad(fmt::format("indptr decreases at row {}", v));
      for (int64_t p = a.indptr[v]; p < a.indptr[v + 1]; ++p) {
        if (a.eid[p] < a.edge_range.first || a.eid[p] >= a.edge_range.second ||
            (p > a.indptr[v] && (a.eid[p] <= a.eid[p - 1] || a.etype[p] < a.etype[p - 1]))) {
          return bad(fmt::format(
              "inner row {} does not hold owned edges in increasing id and relation order "
              "(position {}: edge {}, relation {})",
              v, p, a.eid[p], a.etype[p]));
        }
        consecutive &=
            p == a.indptr[v] || a.etype[p] != a.etype[p - 1] || a.eid[p] == a.eid[p - 1] + 1;
      }
    }
  }
  auto graph = std::shared_ptr<LocalGraph>(new LocalGraph(std::move(a)));
  graph->consecutive_segment_eids_ = typed && consecutive;
  return std::shared_ptr<const LocalGraph>(std::move(graph));
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
  if (!o.etype_fanouts.empty()) {
    if (static_cast<int64_t>(o.etype_fanouts.size()) != a_.num_etypes) {
      return absl::InvalidArgumentError(
          fmt::format("{} per-relation fanouts given but partition {} has {} relations",
                      o.etype_fanouts.size(), a_.part_id, a_.num_etypes));
    }
    for (size_t r = 0; r < o.etype_fanouts.size(); ++r) {
      if (o.etype_fanouts[r] < -1) {
        return absl::InvalidArgumentError(
            fmt::format("fanout {} of relation {} is invalid (-1: every edge, 0: none, or a count)",
                        o.etype_fanouts[r], r));
      }
    }
  }
  int64_t first = a_.node_range.first, owned = num_owned_nodes();
  std::vector<int64_t> local(seeds.size());
  for (size_t i = 0; i < seeds.size(); ++i) local[i] = seeds[i] - first;
  SampleOptions kernel{.fanout = o.fanout,
                       .etype_fanouts = o.etype_fanouts,
                       .replace = o.replace,
                       .weights = o.weights,
                       .relation_weights = o.relation_weights,
                       .exclude = o.exclude,
                       .seed = o.seed,
                       .num_threads = o.num_threads,
                       .max_edges = o.max_edges};
  // Every relation's every edge is every edge, already grouped by relation
  // (Create checked the relations): the single-fanout path does it at once.
  if (!o.etype_fanouts.empty() && std::all_of(o.etype_fanouts.begin(), o.etype_fanouts.end(),
                                              [](int64_t f) { return f == -1; })) {
    kernel.etype_fanouts = {};
    kernel.fanout = -1;
  }
  SampledEdges edges;
  if (o.dir == EdgeDir::kIn) {
    for (size_t r = 0; r < o.relation_weights.size(); ++r) {
      // Each relation's weights lie inside the owned edges (the kernel checks
      // every edge it reads against its relation's).
      const RelationWeights& w = o.relation_weights[r];
      const int64_t size = static_cast<int64_t>(w.weights.size());
      if (size > 0 && (w.eid_base < a_.edge_range.first || w.eid_base > a_.edge_range.second ||
                       size > a_.edge_range.second - w.eid_base)) {
        return absl::InvalidArgumentError(fmt::format(
            "the {} weights of relation {} from edge {} on are not edges partition {} owns "
            "[{}, {})",
            size, r, w.eid_base, a_.part_id, a_.edge_range.first, a_.edge_range.second));
      }
    }
    if (!o.weights.empty() && static_cast<int64_t>(o.weights.size()) != num_owned_edges()) {
      return absl::InvalidArgumentError(
          fmt::format("partition {} owns {} edges but got {} edge weights", a_.part_id,
                      num_owned_edges(), o.weights.size()));
    }
    size_t positions = static_cast<size_t>(num_owned_positions());
    CscView inner{.indptr = a_.indptr.first(owned + 1),
                  .indices = a_.indices.first(positions),
                  .eid_base = a_.edge_range.first,
                  .num_etypes = a_.num_etypes};
    if (typed()) {
      // Positions are not ids: read them, weigh each edge by its id.
      inner.eids = a_.eid.first(positions);
      inner.etypes = a_.etype.first(positions);
      inner.consecutive_segment_eids = consecutive_segment_eids_;
      kernel.weights_by_eid = true;
      kernel.weights_eid_base = a_.edge_range.first;
    }  // Else inner position p is edge edge_range.first + p: no need to read `eid`.
    ASSIGN_OR_RETURN(edges, ::tessera::sampling::SampleNeighbors(inner, local, seeds, kernel));
    for (size_t i = 0; i < edges.size(); ++i) edges.src[i] = GlobalId(edges.src[i]);
    for (int64_t& d : edges.dst) d += first;
    return edges;
  }
  if (!o.weights.empty() || !o.relation_weights.empty()) {
    return absl::UnimplementedError(
        "weighted sampling of out-edges is not supported: the weights of a node's out-edges "
        "live with the partitions of their destinations");
  }
  ASSIGN_OR_RETURN(const OutIndex* out, Out());
  CscView csr{.indptr = out->indptr,
              .indices = out->dst,
              .eids = out->eid,
              .etypes = out->etype,
              .num_etypes = a_.num_etypes};
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
  for (size_t i = 0; i < eids.size(); ++i) {
    if (eids[i] < begin || eids[i] >= end) {
      return absl::OutOfRangeError(
          fmt::format("edge {} (position {}) is not owned by partition {}, which owns [{}, {})",
                      eids[i], i, a_.part_id, begin, end));
    }
  }
  const std::vector<int64_t>* positions = nullptr;
  if (typed()) {
    ASSIGN_OR_RETURN(positions, Positions());
  }
  std::span<const int64_t> rows = a_.indptr.first(num_owned_nodes() + 1);
  for (size_t i = 0; i < eids.size(); ++i) {
    int64_t p = eids[i] - begin;
    if (positions != nullptr) p = (*positions)[p];
    int64_t row = std::upper_bound(rows.begin(), rows.end(), p) - rows.begin() - 1;
    src[i] = GlobalId(a_.indices[p]);
    dst[i] = a_.node_range.first + row;
  }
  return absl::OkStatus();
}

Status LocalGraph::InDegrees(std::span<const int64_t> nids, int64_t* out) const {
  return Degrees(nids, EdgeDir::kIn, -1, out);
}

Status LocalGraph::OutDegrees(std::span<const int64_t> nids, int64_t* out) const {
  return Degrees(nids, EdgeDir::kOut, -1, out);
}

Status LocalGraph::Degrees(std::span<const int64_t> nids, EdgeDir dir, int etype,
                           int64_t* out) const {
  if (etype < -1 || etype >= a_.num_etypes) {
    return absl::InvalidArgumentError(
        fmt::format("relation {} is not one of the {} relations of partition {}", etype,
                    a_.num_etypes, a_.part_id));
  }
  RETURN_IF_ERROR(CheckOwnedNodes(nids));
  std::span<const int64_t> indptr = a_.indptr;
  std::span<const int32_t> etypes = a_.etype;  // Rows grouped by relation.
  if (dir == EdgeDir::kOut) {
    ASSIGN_OR_RETURN(const OutIndex* index, Out());
    indptr = index->indptr;
    etypes = index->etype;
  }
  const bool whole_rows = etype == -1 || etypes.empty();
  for (size_t i = 0; i < nids.size(); ++i) {
    const int64_t v = nids[i] - a_.node_range.first;
    if (whole_rows) {
      out[i] = indptr[v + 1] - indptr[v];
      continue;
    }
    auto row = etypes.subspan(indptr[v], indptr[v + 1] - indptr[v]);
    auto [lo, hi] = std::equal_range(row.begin(), row.end(), etype);
    out[i] = hi - lo;
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
    std::vector<int64_t> fill(index->indptr.begin(), index->indptr.end() - 1);
    const size_t size = static_cast<size_t>(index->indptr[owned]);
    index->dst.resize(size);
    index->eid.resize(size);
    // Entries sorted within each row by `key` (eid; typed: relation, eid),
    // then unpacked by `emit`.
    auto build = [&](auto key, auto emit) {
      std::vector<decltype(key(int64_t{0}, int64_t{0}))> entries(size);
      for (int64_t row = 0; row < local; ++row) {
        for (int64_t p = a_.indptr[row]; p < a_.indptr[row + 1]; ++p) {
          int64_t src = a_.indices[p];
          if (src < owned) entries[fill[src]++] = key(p, row);
        }
      }
      for (int64_t v = 0; v < owned; ++v) {
        std::sort(entries.begin() + index->indptr[v], entries.begin() + index->indptr[v + 1]);
      }
      for (size_t k = 0; k < size; ++k) emit(k, entries[k]);
    };
    if (!typed()) {
      build(
          [&](int64_t p, int64_t row) {
            return std::pair{a_.eid[p], row};
          },
          [&](size_t k, const std::pair<int64_t, int64_t>& e) {
            index->eid[k] = e.first;
            index->dst[k] = e.second;
          });
    } else {
      index->etype.resize(size);
      build(
          [&](int64_t p, int64_t row) {
            return std::tuple{a_.etype[p], a_.eid[p], row};
          },
          [&](size_t k, const std::tuple<int32_t, int64_t, int64_t>& e) {
            index->etype[k] = std::get<0>(e);
            index->eid[k] = std::get<1>(e);
            index->dst[k] = std::get<2>(e);
          });
    }
    spdlog::debug("partition {}: out-edge index of {} edges built in {:.2f} s", a_.part_id, size,
                  watch.Seconds());
    out_ = std::move(index);
  });
  return out_.get();
}

StatusOr<const std::vector<int64_t>*> LocalGraph::Positions() const {
  std::call_once(positions_once_, [&] {
    // Create checked that every inner position holds an owned edge; each
    // must appear exactly once.
    int64_t owned_edges = num_owned_edges();
    positions_.assign(static_cast<size_t>(owned_edges), -1);
    for (int64_t p = 0; p < owned_edges; ++p) {
      int64_t& slot = positions_[a_.eid[p] - a_.edge_range.first];
      if (slot >= 0) {
        positions_status_ = absl::DataLossError(
            fmt::format("partition {}: edge {} is stored twice in its inner rows (positions {} "
                        "and {})",
                        a_.part_id, a_.eid[p], slot, p));
        positions_.clear();
        return;
      }
      slot = p;
    }
  });
  RETURN_IF_ERROR(positions_status_);
  return &positions_;
}

}  // namespace tessera::sampling
