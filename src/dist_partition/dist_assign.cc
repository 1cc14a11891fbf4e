// Step 2 of DistPartitionGraph with part_method metis: PT-Scotch's
// distributed multilevel k-way (SCOTCH_dgraphPart, the only PT-Scotch user),
// then a repair of the balance of every class (dist_internal.h).
//
// PT-Scotch balances one vertex weight (its ParMETIS_V3_PartKway wrapper
// ignores ncon and ubvec: Scotch 7, libscotchmetis/parmetis_dgraph_part.c).
// METIS's multi-constraint balance (a constraint per node type and balance
// value) is therefore restored afterwards by RepairBalance, which moves the
// few nodes of over-full classes whose move cuts the fewest edges.
#include <malloc.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <numeric>

// PT-Scotch with 64-bit indices; scotch.h needs int64_t and FILE declared.
// clang-format off
#include <scotch-int64/ptscotch.h>
// clang-format on

#include "src/dist_partition/dist_internal.h"
#include "tessera/base/strings.h"
#include "tessera/graph/array.h"

namespace tessera::dist_partition::internal {

static_assert(sizeof(SCOTCH_Num) == sizeof(int64_t), "PT-Scotch must use 64-bit indices");

namespace {

constexpr int kMaxClasses = 64;  // As PartitionGraph's balance classes.
constexpr double kImbalance = 1.03;

struct HalfEdge {
  int64_t node, neighbour_in;  // neighbour_in: neighbour * 2, + 1 if neighbour -> node is the edge.
};

}  // namespace

StatusOr<Adjacency> BuildAdjacency(Comm& comm, const Layout& layout, EdgeSlice edges) {
  // Each edge u -> v: (u, v) to u's home, (v, u, in) to v's home, twice:
  // first to count every home node's half edges, then to place them in a
  // CSR of that size (so the half edges are never all held twice).
  const size_t m = edges.src.size();
  std::vector<int32_t> dest(2 * m);
  for (size_t i = 0; i < m; ++i) {
    dest[2 * i] = layout.HomeOf(edges.src[i]);
    dest[2 * i + 1] = layout.HomeOf(edges.dst[i]);
  }
  const int64_t base = layout.home_begin();
  const int64_t n = layout.home_end() - base;
  Adjacency a;
  std::vector<int64_t> start(n + 1, 0);
  bool misplaced = false;
  RETURN_IF_ERROR(ExchangeEachRound<int64_t>(
      comm, dest, [&](int64_t k) { return k % 2 == 0 ? edges.src[k / 2] : edges.dst[k / 2]; },
      [&](std::span<const int64_t> got) {
        for (int64_t node : got) {
          const int64_t row = node - base;
          if (row < 0 || row >= n) {
            misplaced = true;
            continue;
          }
          ++start[row + 1];
        }
      }));
  std::partial_sum(start.begin(), start.end(), start.begin());
  std::vector<int64_t> entries(start[n]);  // neighbour_in, by row.
  std::vector<int64_t> cursor(start.begin(), start.end() - 1);
  RETURN_IF_ERROR(ExchangeEachRound<HalfEdge>(
      comm, dest,
      [&](int64_t k) {
        const size_t i = k / 2;
        return k % 2 == 0 ? HalfEdge{edges.src[i], edges.dst[i] * 2}
                          : HalfEdge{edges.dst[i], edges.src[i] * 2 + 1};
      },
      [&](std::span<const HalfEdge> got) {
        for (const HalfEdge& h : got) {
          const int64_t row = h.node - base;
          if (row < 0 || row >= n || cursor[row] >= start[row + 1]) {
            misplaced = true;
            continue;
          }
          entries[cursor[row]++] = h.neighbour_in;
        }
      }));
  Free(dest);
  Free(cursor);
  Free(edges.src);
  Free(edges.dst);
  if (misplaced) return absl::InternalError("a half edge reached the wrong home");
  // Per row: neighbours in increasing order, one entry each (weight = half
  // edges), no self loops; compacted in place.
  a.xadj.assign(n + 1, 0);
  a.in_degree.assign(n, 0);
  int64_t total = 0;
  for (int64_t row = 0; row < n; ++row) {
    std::sort(entries.begin() + start[row], entries.begin() + start[row + 1]);
    int64_t previous = -1;
    for (int64_t k = start[row]; k < start[row + 1]; ++k) {
      a.in_degree[row] += entries[k] & 1;
      const int64_t neighbour = entries[k] >> 1;
      if (neighbour == base + row || neighbour == previous) continue;
      previous = neighbour;
      ++total;
    }
    a.xadj[row + 1] = total;
  }
  a.adjwgt.assign(total, 0);
  int64_t at = -1;
  for (int64_t row = 0; row < n; ++row) {
    int64_t previous = -1;
    for (int64_t k = start[row]; k < start[row + 1]; ++k) {
      const int64_t neighbour = entries[k] >> 1;
      if (neighbour == base + row) continue;  // No self loops for METIS.
      if (neighbour != previous) {
        entries[++at] = neighbour;  // at < k: written behind the reading.
        previous = neighbour;
      }
      ++a.adjwgt[at];
    }
  }
  Free(start);
  a.adjncy.assign(entries.begin(), entries.begin() + total);
  return a;
}

StatusOr<BalanceClasses> ClassesOf(Comm& comm, const ChunkedGraph& graph, const Layout& layout,
                                   const std::string& balance_ntypes) {
  BalanceClasses out;
  const int64_t base = layout.home_begin(), end = layout.home_end();
  out.of_home.assign(end - base, 0);
  int num_classes = 0;
  bool found = false;
  for (size_t t = 0; t < graph.ntypes.size(); ++t) {
    const int64_t lo = std::clamp(base, graph.ntype_offsets[t], graph.ntype_offsets[t + 1]);
    const int64_t hi = std::clamp(end, graph.ntype_offsets[t], graph.ntype_offsets[t + 1]);
    const ChunkedArray* array = nullptr;
    for (const ChunkedArray& a : graph.node_data[t]) {
      if (!balance_ntypes.empty() && a.name == balance_ntypes) array = &a;
    }
    if (array == nullptr) {
      std::fill(out.of_home.begin() + (lo - base), out.of_home.begin() + (hi - base),
                num_classes++);
      continue;
    }
    found = true;
    if (!array->row_shape.empty() || IsFloating(array->dtype)) {
      return absl::InvalidArgumentError(StrCat("balance_ntypes: node array '", graph.ntypes[t], "/",
                                               array->name, "' is ", DTypeName(array->dtype),
                                               " with rows [", StrJoin(array->row_shape, ", "),
                                               "]; it must be a 1-D integer or bool array"));
    }
    const int64_t first = graph.ntype_offsets[t];
    StatusOr<Array> read = ReadRows(*array, lo - first, hi - first);
    RETURN_IF_ERROR(Agree(comm, read.status()));
    ASSIGN_OR_RETURN(Array values, ToInt64Ids(std::move(*read), array->name, false));
    auto v = values.span<int64_t>();
    std::vector<int64_t> distinct(v.begin(), v.end());
    std::sort(distinct.begin(), distinct.end());
    distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
    ASSIGN_OR_RETURN(auto every, AllGatherVectors(comm, distinct));
    distinct.clear();
    for (const auto& d : every) distinct.insert(distinct.end(), d.begin(), d.end());
    std::sort(distinct.begin(), distinct.end());
    distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
    if (num_classes + distinct.size() > kMaxClasses) {
      return absl::InvalidArgumentError(
          StrCat("balance_ntypes: '", balance_ntypes, "' makes more than ", kMaxClasses,
                 " balance classes (distinct values per node type); at most ", kMaxClasses,
                 " can be balanced"));
    }
    for (int64_t i = lo; i < hi; ++i) {
      out.of_home[i - base] =
          num_classes +
          static_cast<int32_t>(std::lower_bound(distinct.begin(), distinct.end(), v[i - lo]) -
                               distinct.begin());
    }
    num_classes += static_cast<int>(distinct.size());
  }
  if (!balance_ntypes.empty() && !found) {
    return absl::InvalidArgumentError(
        StrCat("balance_ntypes: no node array named '", balance_ntypes, "'"));
  }
  out.num_classes = num_classes;
  return out;
}

StatusOr<std::vector<int32_t>> ScotchParts(Comm& comm, const Layout& layout, Adjacency& adjacency,
                                           bool weighted, std::span<const int64_t> vertex_weight,
                                           uint64_t seed) {
  const int64_t n = layout.home_end() - layout.home_begin();
  if (layout.num_parts == 1) return std::vector<int32_t>(n, 0);
  auto* mpi_comm = static_cast<MPI_Comm*>(comm.mpi_comm());
  if (mpi_comm == nullptr) {
    return absl::FailedPreconditionError(
        "part_method metis runs PT-Scotch, which needs MPI ranks (start with mpirun)");
  }
  // Vertex loads on every rank or none (a rank without nodes passes an
  // empty array, not null, or PT-Scotch finds the ranks inconsistent).
  std::vector<SCOTCH_Num> vwgt(vertex_weight.begin(), vertex_weight.end());
  vwgt.reserve(1);
  std::vector<SCOTCH_Num> part(std::max<int64_t>(n, 1), -1);
  // Scotch reads at least one xadj entry and neighbour, even with none.
  if (adjacency.adjncy.empty()) {
    adjacency.adjncy.reserve(1);
    adjacency.adjwgt.reserve(1);
  }
  SCOTCH_randomSeed(static_cast<SCOTCH_Num>(seed & 0x7fffffffffffffffULL));
  SCOTCH_randomReset();
  // The distributed graph references our arrays (no copy); the strategy is
  // Scotch's default k-way for this many ranks and parts, 3 % imbalance.
  const SCOTCH_Num num_arcs = static_cast<SCOTCH_Num>(adjacency.adjncy.size());
  // The ranks agree after the local steps (init, strategy), so that no rank
  // enters PT-Scotch's collective calls while another has left.
  SCOTCH_Dgraph graph;
  const bool initialised = SCOTCH_dgraphInit(&graph, *mpi_comm) == 0;
  SCOTCH_Strat strat;
  SCOTCH_stratInit(&strat);
  const bool strategy = SCOTCH_stratDgraphMapBuild(&strat, SCOTCH_STRATDEFAULT, comm.size(),
                                                   layout.num_parts, kImbalance - 1) == 0;
  Status ready = Agree(
      comm,
      !initialised
          ? absl::InternalError(StrCat("PT-Scotch: SCOTCH_dgraphInit failed on rank ", comm.rank()))
      : !strategy ? absl::InternalError(StrCat("PT-Scotch: SCOTCH_stratDgraphMapBuild failed on "
                                               "rank ",
                                               comm.rank()))
                  : absl::OkStatus());
  if (!ready.ok()) {
    SCOTCH_stratExit(&strat);
    if (initialised) SCOTCH_dgraphExit(&graph);
    return ready;
  }
  const char* failed = nullptr;
  if (SCOTCH_dgraphBuild(&graph, 0, n, n, adjacency.xadj.data(), adjacency.xadj.data() + 1,
                         weighted ? vwgt.data() : nullptr, nullptr, num_arcs, num_arcs,
                         adjacency.adjncy.data(), nullptr, adjacency.adjwgt.data()) != 0) {
    failed = "SCOTCH_dgraphBuild";
  } else if (SCOTCH_dgraphPart(&graph, layout.num_parts, &strat, part.data()) != 0) {
    failed = "SCOTCH_dgraphPart";
  }
  SCOTCH_stratExit(&strat);
  SCOTCH_dgraphExit(&graph);
  // Freed memory back to the system: PT-Scotch's peak is the step's, and
  // the heap it leaves behind would otherwise stay resident.
  malloc_trim(0);
  if (failed != nullptr) {
    return absl::InternalError(StrCat("PT-Scotch: ", failed, " failed on rank ", comm.rank(), " (",
                                      n, " home nodes, ", num_arcs, " arcs)"));
  }
  std::vector<int32_t> out(n);
  for (int64_t i = 0; i < n; ++i) {
    if (part[i] < 0 || part[i] >= layout.num_parts) {
      return absl::InternalError(StrCat("PT-Scotch: node ", layout.home_begin() + i, " got part ",
                                        part[i], " of ", layout.num_parts));
    }
    out[i] = static_cast<int32_t>(part[i]);
  }
  return out;
}

namespace {

// `total` split in proportion to `weights` (largest remainders first, ties
// to the lower index), never above weights[i].
std::vector<int64_t> Proportional(int64_t total, const std::vector<int64_t>& weights) {
  __extension__ using Int128 = __int128;
  const int64_t sum = std::accumulate(weights.begin(), weights.end(), int64_t{0});
  std::vector<int64_t> share(weights.size(), 0);
  if (sum == 0 || total == 0) return share;
  std::vector<std::pair<int64_t, size_t>> remainders;
  int64_t given = 0;
  for (size_t i = 0; i < weights.size(); ++i) {
    const Int128 scaled = Int128{total} * weights[i];
    share[i] = static_cast<int64_t>(scaled / sum);
    given += share[i];
    remainders.push_back({static_cast<int64_t>(scaled % sum), i});
  }
  std::sort(remainders.begin(), remainders.end(), [](const auto& x, const auto& y) {
    return x.first != y.first ? x.first > y.first : x.second < y.second;
  });
  for (size_t k = 0; given < total; k = (k + 1) % remainders.size()) {
    const size_t i = remainders[k].second;
    if (share[i] < weights[i]) {
      ++share[i];
      ++given;
    }
  }
  return share;
}

}  // namespace

StatusOr<int64_t> RepairBalance(Comm& comm, const Layout& layout, const Adjacency& adjacency,
                                const BalanceClasses& classes, std::vector<int32_t>& home_part) {
  const int num_parts = layout.num_parts, num_classes = classes.num_classes;
  const int num_ranks = layout.num_ranks;
  const int64_t n = static_cast<int64_t>(home_part.size());
  if (num_parts == 1) return 0;
  // Nodes per (rank, part, class).
  std::vector<int64_t> mine(static_cast<size_t>(num_parts) * num_classes, 0);
  for (int64_t i = 0; i < n; ++i) ++mine[home_part[i] * num_classes + classes.of_home[i]];
  std::vector<int64_t> all(mine.size() * num_ranks);
  RETURN_IF_ERROR(comm.AllGather(mine.data(), mine.size() * sizeof(int64_t), all.data()));
  auto count = [&](int r, int p, int c) {
    return all[(static_cast<size_t>(r) * num_parts + p) * num_classes + c];
  };
  // This rank's moves: quota[(p * C + c) * K + q] nodes of class c from p to q.
  std::vector<int64_t> quota(static_cast<size_t>(num_parts) * num_classes * num_parts, 0);
  bool any = false;
  for (int c = 0; c < num_classes; ++c) {
    std::vector<int64_t> load(num_parts, 0);
    for (int p = 0; p < num_parts; ++p) {
      for (int r = 0; r < num_ranks; ++r) load[p] += count(r, p, c);
    }
    const double average =
        static_cast<double>(std::accumulate(load.begin(), load.end(), int64_t{0})) / num_parts;
    const int64_t limit = std::max<int64_t>(static_cast<int64_t>(std::floor(average * kImbalance)),
                                            static_cast<int64_t>(std::ceil(average)));
    std::vector<int64_t> room(num_parts, 0);
    for (int q = 0; q < num_parts; ++q) room[q] = std::max<int64_t>(0, limit - load[q]);
    for (int p = 0; p < num_parts; ++p) {
      int64_t excess = load[p] - limit;
      if (excess <= 0) continue;
      any = true;
      // To the parts with the most room first.
      std::vector<int64_t> flow(num_parts, 0);
      while (excess > 0) {
        const int q = static_cast<int>(std::max_element(room.begin(), room.end()) - room.begin());
        const int64_t moved = std::min(excess, room[q]);
        if (moved <= 0) return absl::InternalError("balance repair: no room left");
        flow[q] += moved;
        room[q] -= moved;
        excess -= moved;
      }
      // Every rank gives its share of the excess. The shares are laid
      // over the targets' flows in rank order, each target's flow used up
      // before the next: every rank computes the same split, so each
      // target gets exactly its flow (splitting each rank's share in
      // proportion to the flows rounds per rank, and the roundings could
      // add up to more than a target's room).
      std::vector<int64_t> holders(num_ranks);
      for (int r = 0; r < num_ranks; ++r) holders[r] = count(r, p, c);
      const std::vector<int64_t> share = Proportional(load[p] - limit, holders);
      int q = 0;
      int64_t flow_left = flow[0];
      for (int r = 0; r < num_ranks; ++r) {
        for (int64_t need = share[r]; need > 0;) {
          while (flow_left == 0) flow_left = flow[++q];
          const int64_t take = std::min(need, flow_left);
          if (r == layout.rank) quota[(p * num_classes + c) * num_parts + q] += take;
          need -= take;
          flow_left -= take;
        }
      }
    }
  }
  if (!any) return 0;
  // The current part of every neighbour, and each node's best targets.
  ASSIGN_OR_RETURN(std::vector<int32_t> neighbour_part,
                   LookUp<int32_t>(comm, layout, adjacency.adjncy, home_part));
  struct Move {
    int64_t gain;
    int64_t node;
    int32_t to;
  };
  std::vector<Move> moves;
  std::vector<int64_t> weight_to(num_parts, 0);
  for (int64_t i = 0; i < n; ++i) {
    const int p = home_part[i], c = classes.of_home[i];
    const int64_t* q0 = &quota[(static_cast<size_t>(p) * num_classes + c) * num_parts];
    if (std::all_of(q0, q0 + num_parts, [](int64_t x) { return x == 0; })) continue;
    for (int64_t k = adjacency.xadj[i]; k < adjacency.xadj[i + 1]; ++k) {
      weight_to[neighbour_part[k]] += adjacency.adjwgt[k];
    }
    for (int q = 0; q < num_parts; ++q) {
      if (q0[q] > 0) moves.push_back({weight_to[q] - weight_to[p], i, q});
    }
    for (int64_t k = adjacency.xadj[i]; k < adjacency.xadj[i + 1]; ++k) {
      weight_to[neighbour_part[k]] = 0;
    }
  }
  std::sort(moves.begin(), moves.end(), [](const Move& x, const Move& y) {
    if (x.gain != y.gain) return x.gain > y.gain;
    return x.node != y.node ? x.node < y.node : x.to < y.to;
  });
  std::vector<int32_t> target(n, -1);
  int64_t num_moved = 0;
  for (const Move& m : moves) {
    const int p = home_part[m.node], c = classes.of_home[m.node];
    int64_t& left = quota[(static_cast<size_t>(p) * num_classes + c) * num_parts + m.to];
    if (target[m.node] >= 0 || left == 0) continue;
    --left;
    target[m.node] = m.to;
    ++num_moved;
  }
  for (int64_t i = 0; i < n; ++i) {
    if (target[i] >= 0) home_part[i] = target[i];
  }
  // Correctness relies on every quota being filled: a rank's share of
  // (p, c) never exceeds its nodes there, and each has a move to every q.
  for (int64_t left : quota) {
    if (left != 0) return absl::InternalError("balance repair: a quota was not filled");
  }
  return AllSum(comm, num_moved);
}

}  // namespace tessera::dist_partition::internal
