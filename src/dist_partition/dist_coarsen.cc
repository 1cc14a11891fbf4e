// Coarsening and refinement around PT-Scotch (dist_internal.h): clusters
// found by size-constrained label propagation over the ranks, contracted
// into a smaller weighted graph that PT-Scotch partitions, whose parts are
// projected back and improved by label propagation on the finer graphs.
//
// PT-Scotch holds about 250 bytes per arc it is given, and that does not
// fall as 1 / ranks; a graph contracted by a factor f in arcs costs it about
// 1 / f of that. Label propagation needs a few arrays per node and arc.
//
// Every rank works on its home nodes; a neighbour homed elsewhere (a ghost)
// is a local index past the home nodes, and its label or part is fetched
// from its home rank (LookUp) before each sub-round. Moves are decided in
// sub-rounds of a quarter of the home nodes: within one, a rank sees its own
// earlier moves but not the other ranks'. A cluster's weight is kept by the
// rank that homes the node its label names; joins are granted there, in
// arrival order, while the cluster stays within the cap.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>

#include "src/dist_partition/dist_internal.h"
#include "tessera/base/strings.h"

namespace tessera::dist_partition::internal {
namespace {

constexpr int kSubRounds = 4;
constexpr int kClusterIterations = 5;
constexpr int kRefineIterations = 4;

// A deterministic tie-break between equally rated labels.
uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// The graph over this rank's home nodes in local indices: home node i is i,
// ghost g is n + g (ghosts: the neighbours homed elsewhere, ascending).
struct LocalView {
  int64_t n = 0;
  std::vector<int64_t> ghosts;
  std::vector<uint32_t> adj;  // One per arc of the Adjacency.
  int64_t size() const { return n + static_cast<int64_t>(ghosts.size()); }
};

StatusOr<LocalView> MakeLocalView(const Layout& layout, const Adjacency& a) {
  LocalView v;
  const int64_t base = layout.home_begin();
  v.n = layout.home_end() - base;
  for (int64_t j : a.adjncy) {
    if (j < base || j >= base + v.n) v.ghosts.push_back(j);
  }
  std::sort(v.ghosts.begin(), v.ghosts.end());
  v.ghosts.erase(std::unique(v.ghosts.begin(), v.ghosts.end()), v.ghosts.end());
  v.ghosts.shrink_to_fit();
  if (v.size() > std::numeric_limits<uint32_t>::max()) {
    return absl::ResourceExhaustedError(
        StrCat("coarsening: ", v.n, " home nodes and ", v.ghosts.size(),
               " neighbours on other ranks exceed 32-bit local indices; use more ranks"));
  }
  v.adj.resize(a.adjncy.size());
  for (size_t k = 0; k < a.adjncy.size(); ++k) {
    const int64_t j = a.adjncy[k];
    v.adj[k] = static_cast<uint32_t>(
        j >= base && j < base + v.n
            ? j - base
            : v.n + (std::lower_bound(v.ghosts.begin(), v.ghosts.end(), j) - v.ghosts.begin()));
  }
  return v;
}

// The values of the ghosts, from `home_values` of their home ranks, written
// after the home values in `values` (size n + ghosts).
template <typename T>
Status FetchGhosts(Comm& comm, const Layout& layout, const LocalView& v, std::vector<T>& values) {
  ASSIGN_OR_RETURN(std::vector<T> got,
                   LookUp<T>(comm, layout, v.ghosts, std::span<const T>(values.data(), v.n)));
  std::copy(got.begin(), got.end(), values.begin() + v.n);
  return absl::OkStatus();
}

// An internal error (a broken invariant) if `broken`.
Status Broken(bool broken, const char* what) {
  return broken ? absl::InternalError(StrCat("coarsening: ", what)) : absl::OkStatus();
}

// The first home node of sub-round s.
int64_t SubRoundBegin(int64_t n, int s) { return n * s / kSubRounds; }

struct Request {
  int64_t label, weight;
};

}  // namespace

StatusOr<Coarse> Coarsen(Comm& comm, const Layout& layout, const Adjacency& a,
                         std::span<const int64_t> weight, int64_t max_cluster_weight,
                         uint64_t seed) {
  StatusOr<LocalView> view = MakeLocalView(layout, a);
  RETURN_IF_ERROR(Agree(comm, view.status()));
  const LocalView& v = *view;
  const int64_t n = v.n, base = layout.home_begin();
  // label[i]: the node whose cluster i is in (global id); home then ghosts.
  std::vector<int64_t> label(v.size());
  for (int64_t i = 0; i < n; ++i) label[i] = base + i;
  for (size_t g = 0; g < v.ghosts.size(); ++g) label[n + g] = v.ghosts[g];
  // The weight of the cluster of each label this rank homes.
  std::vector<int64_t> cluster_weight(weight.begin(), weight.end());
  std::vector<std::pair<int64_t, int64_t>> rating;  // (label, weight) of one row.
  ASSIGN_OR_RETURN(const int64_t total_nodes, AllSum(comm, n));
  for (int iteration = 0; iteration < kClusterIterations; ++iteration) {
    int64_t moved = 0;
    for (int s = 0; s < kSubRounds; ++s) {
      const int64_t begin = SubRoundBegin(n, s), end = SubRoundBegin(n, s + 1);
      // The current weights of the labels next to this sub-round's nodes.
      std::vector<int64_t> seen;
      for (int64_t k = a.xadj[begin]; k < a.xadj[end]; ++k) seen.push_back(label[v.adj[k]]);
      for (int64_t i = begin; i < end; ++i) seen.push_back(label[i]);
      std::sort(seen.begin(), seen.end());
      seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
      ASSIGN_OR_RETURN(std::vector<int64_t> seen_weight,
                       LookUp<int64_t>(comm, layout, seen, cluster_weight));
      auto weight_of = [&](int64_t l) -> int64_t& {
        return seen_weight[std::lower_bound(seen.begin(), seen.end(), l) - seen.begin()];
      };
      // Each node's best label: the most connected one with room for it,
      // if it is more connected than the node's own. A cluster homed here
      // is joined at once (later nodes see it); others are asked for.
      std::vector<int64_t> mover;
      std::vector<int32_t> dest;
      std::vector<Request> asked;
      std::vector<int32_t> leave_dest;
      std::vector<Request> leaving;
      auto leave = [&](int64_t i) {
        const int64_t old = label[i];
        if (old >= base && old < base + n) {
          cluster_weight[old - base] -= weight[i];
        } else {
          leave_dest.push_back(layout.HomeOf(old));
          leaving.push_back({old, weight[i]});
        }
        weight_of(old) -= weight[i];
      };
      for (int64_t i = begin; i < end; ++i) {
        rating.clear();
        for (int64_t k = a.xadj[i]; k < a.xadj[i + 1]; ++k) {
          rating.push_back({label[v.adj[k]], a.adjwgt[k]});
        }
        std::sort(rating.begin(), rating.end());
        const int64_t own = label[i];
        int64_t best = own, best_rating = 0, own_rating = 0;
        uint64_t best_tie = 0;
        for (size_t k = 0; k < rating.size();) {
          const int64_t l = rating[k].first;
          int64_t r = 0;
          for (; k < rating.size() && rating[k].first == l; ++k) r += rating[k].second;
          if (l == own) {
            own_rating = r;
            continue;
          }
          const bool local = l >= base && l < base + n;
          if ((local ? cluster_weight[l - base] : weight_of(l)) + weight[i] > max_cluster_weight) {
            continue;
          }
          const uint64_t tie = Mix(seed ^ Mix(static_cast<uint64_t>(base + i) * 31 +
                                              static_cast<uint64_t>(l) + iteration));
          if (r > best_rating || (r == best_rating && tie > best_tie)) {
            best = l;
            best_rating = r;
            best_tie = tie;
          }
        }
        if (best == own || best_rating <= own_rating) continue;
        weight_of(best) += weight[i];
        if (best >= base && best < base + n) {
          cluster_weight[best - base] += weight[i];
          leave(i);
          label[i] = best;
          ++moved;
        } else {
          mover.push_back(i);
          dest.push_back(layout.HomeOf(best));
          asked.push_back({best, weight[i]});
        }
      }
      // Joins granted by the labels' home ranks, in arrival order.
      Packing packing = PackBy(dest, layout.num_ranks);
      std::vector<Request> packed = Pack<Request>(packing, [&](int64_t k) { return asked[k]; });
      ASSIGN_OR_RETURN(Received<Request> requests, Exchange<Request>(comm, packed, packing.counts));
      std::vector<uint8_t> granted(requests.data.size(), 0);
      bool misrouted = false;
      for (size_t k = 0; k < requests.data.size(); ++k) {
        const Request& q = requests.data[k];
        const int64_t at = q.label - base;
        if (at < 0 || at >= n) {
          misrouted = true;
          continue;
        }
        if (cluster_weight[at] + q.weight <= max_cluster_weight) {
          cluster_weight[at] += q.weight;
          granted[k] = 1;
        }
      }
      // (Local checks end in an agreement: no rank leaves while the others
      // enter the next exchange.)
      RETURN_IF_ERROR(Agree(comm, Broken(misrouted, "a join reached the wrong rank")));
      ASSIGN_OR_RETURN(Received<uint8_t> answers,
                       Exchange<uint8_t>(comm, granted, requests.counts));
      std::vector<uint8_t> ok = Unpack(packing, std::move(answers.data));
      // The granted movers leave their clusters: weights back at the homes.
      for (size_t k = 0; k < mover.size(); ++k) {
        if (!ok[k]) continue;
        const int64_t i = mover[k];
        leave(i);
        label[i] = asked[k].label;
        ++moved;
      }
      Packing leaves = PackBy(leave_dest, layout.num_ranks);
      packed = Pack<Request>(leaves, [&](int64_t k) { return leaving[k]; });
      ASSIGN_OR_RETURN(Received<Request> left, Exchange<Request>(comm, packed, leaves.counts));
      for (const Request& q : left.data) {
        const int64_t at = q.label - base;
        if (at < 0 || at >= n) {
          misrouted = true;
          continue;
        }
        cluster_weight[at] -= q.weight;
      }
      RETURN_IF_ERROR(Agree(comm, Broken(misrouted, "a leave reached the wrong rank")));
      RETURN_IF_ERROR(FetchGhosts(comm, layout, v, label));
    }
    ASSIGN_OR_RETURN(int64_t all_moved, AllSum(comm, moved));
    if (all_moved * 100 < total_nodes) break;  // Under 1 % moved: settled.
  }
  // Coarse ids: the non-empty clusters, numbered by the rank of their label
  // and then label order; a coarse node is homed where its label is.
  Coarse out;
  std::vector<int64_t> coarse_of_label(n, -1);
  int64_t mine = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (cluster_weight[i] > 0) coarse_of_label[i] = mine++;
  }
  ASSIGN_OR_RETURN(std::vector<int64_t> counts, AllGatherValue(comm, mine));
  int64_t first = 0, clusters = 0;
  for (int r = 0; r < layout.num_ranks; ++r) {
    if (r < layout.rank) first += counts[r];
    clusters += counts[r];
  }
  for (int64_t& c : coarse_of_label) {
    if (c >= 0) c += first;
  }
  // Coarse nodes are homed evenly over the ranks, whichever rank names
  // their clusters (labels can gather on a few ranks).
  out.layout = layout;
  out.layout.home = EvenBounds(clusters, layout.num_ranks);
  out.layout.reads = out.layout.home;
  // Every home node's and ghost's coarse id.
  ASSIGN_OR_RETURN(
      std::vector<int64_t> own_coarse,
      LookUp<int64_t>(comm, layout, std::span<const int64_t>(label.data(), n), coarse_of_label));
  Free(coarse_of_label);
  std::vector<int64_t> coarse(v.size());
  std::copy(own_coarse.begin(), own_coarse.end(), coarse.begin());
  Free(own_coarse);
  RETURN_IF_ERROR(FetchGhosts(comm, layout, v, coarse));
  Free(label);
  const int64_t coarse_base = out.layout.home_begin();
  const int64_t coarse_n = out.layout.home_end() - coarse_base;
  RETURN_IF_ERROR(Agree(
      comm, Broken(std::any_of(coarse.begin(), coarse.begin() + n, [](int64_t c) { return c < 0; }),
                   "a node's cluster has no coarse id")));
  out.coarse_of_home.assign(coarse.begin(), coarse.begin() + n);
  // Coarse weights, summed at the coarse homes.
  {
    std::vector<int32_t> dest(n);
    for (int64_t i = 0; i < n; ++i) dest[i] = out.layout.HomeOf(coarse[i]);
    out.weight.assign(coarse_n, 0);
    bool misplaced = false;
    RETURN_IF_ERROR(ExchangeEachRound<Request>(
        comm, dest,
        [&](int64_t i) {
          return Request{coarse[i], weight[i]};
        },
        [&](std::span<const Request> got) {
          for (const Request& q : got) {
            const int64_t at = q.label - coarse_base;
            if (at < 0 || at >= coarse_n) {
              misplaced = true;
              continue;
            }
            out.weight[at] += q.weight;
          }
        }));
    RETURN_IF_ERROR(Agree(comm, Broken(misplaced, "a weight reached the wrong rank")));
  }
  // Coarse arcs: each row's arcs between different clusters, merged per
  // neighbour cluster, sent to the home of the row's cluster in rounds;
  // counted first, then placed (as BuildAdjacency).
  struct Arc {
    int64_t from, to, weight;
  };
  auto send_rows = [&](const std::function<void(std::span<const Arc>)>& consume) -> Status {
    const int64_t batch =
        std::max<int64_t>(1, comm.round_bytes() / static_cast<int64_t>(sizeof(Arc)));
    int64_t row = 0;
    std::vector<Arc> arcs;
    std::vector<int32_t> dest;
    std::vector<std::pair<int64_t, int64_t>> merged;
    while (true) {
      arcs.clear();
      dest.clear();
      for (; row < n && static_cast<int64_t>(arcs.size()) < batch; ++row) {
        merged.clear();
        for (int64_t k = a.xadj[row]; k < a.xadj[row + 1]; ++k) {
          const int64_t to = coarse[v.adj[k]];
          if (to != coarse[row]) merged.push_back({to, a.adjwgt[k]});
        }
        std::sort(merged.begin(), merged.end());
        const int home = out.layout.HomeOf(coarse[row]);
        for (size_t k = 0; k < merged.size();) {
          Arc arc{coarse[row], merged[k].first, 0};
          for (; k < merged.size() && merged[k].first == arc.to; ++k)
            arc.weight += merged[k].second;
          arcs.push_back(arc);
          dest.push_back(home);
        }
      }
      Packing packing = PackBy(dest, layout.num_ranks);
      std::vector<Arc> packed = Pack<Arc>(packing, [&](int64_t k) { return arcs[k]; });
      ASSIGN_OR_RETURN(Received<Arc> got, Exchange<Arc>(comm, packed, packing.counts));
      consume(got.data);
      ASSIGN_OR_RETURN(int64_t more, AllMax(comm, row < n ? 1 : 0));
      if (more == 0) return absl::OkStatus();
    }
  };
  std::vector<int64_t> start(coarse_n + 1, 0);
  bool misplaced = false;
  RETURN_IF_ERROR(send_rows([&](std::span<const Arc> got) {
    for (const Arc& arc : got) {
      const int64_t at = arc.from - coarse_base;
      if (at < 0 || at >= coarse_n) {
        misplaced = true;
        continue;
      }
      ++start[at + 1];
    }
  }));
  std::partial_sum(start.begin(), start.end(), start.begin());
  std::vector<std::pair<int64_t, int64_t>> entries(start[coarse_n]);  // (to, weight) by row.
  std::vector<int64_t> cursor(start.begin(), start.end() - 1);
  RETURN_IF_ERROR(send_rows([&](std::span<const Arc> got) {
    for (const Arc& arc : got) {
      const int64_t at = arc.from - coarse_base;
      if (at < 0 || at >= coarse_n || cursor[at] >= start[at + 1]) {
        misplaced = true;
        continue;
      }
      entries[cursor[at]++] = {arc.to, arc.weight};
    }
  }));
  Free(cursor);
  Free(coarse);
  RETURN_IF_ERROR(Agree(comm, Broken(misplaced, "an arc reached the wrong rank")));
  Adjacency& c = out.graph;
  c.xadj.assign(coarse_n + 1, 0);
  int64_t total = 0;
  for (int64_t row = 0; row < coarse_n; ++row) {
    std::sort(entries.begin() + start[row], entries.begin() + start[row + 1]);
    for (int64_t k = start[row]; k < start[row + 1];) {
      const int64_t to = entries[k].first;
      int64_t w = 0;
      for (; k < start[row + 1] && entries[k].first == to; ++k) w += entries[k].second;
      entries[total++] = {to, w};  // total <= k: written behind the reading.
    }
    c.xadj[row + 1] = total;
  }
  Free(start);
  c.adjncy.resize(total);
  c.adjwgt.resize(total);
  for (int64_t k = 0; k < total; ++k) {
    c.adjncy[k] = entries[k].first;
    c.adjwgt[k] = entries[k].second;
  }
  return out;
}

StatusOr<std::vector<int32_t>> Project(Comm& comm, const Coarse& coarse,
                                       std::span<const int32_t> coarse_part) {
  return LookUp<int32_t>(comm, coarse.layout, coarse.coarse_of_home, coarse_part);
}

StatusOr<int64_t> RefineParts(Comm& comm, const Layout& layout, const Adjacency& a,
                              std::span<const int64_t> weight, std::vector<int32_t>& home_part) {
  const int k = layout.num_parts;
  if (k == 1) return 0;
  StatusOr<LocalView> view = MakeLocalView(layout, a);
  RETURN_IF_ERROR(Agree(comm, view.status()));
  const LocalView& v = *view;
  const int64_t n = v.n;
  std::vector<int32_t> part(v.size());
  std::copy(home_part.begin(), home_part.end(), part.begin());
  RETURN_IF_ERROR(FetchGhosts(comm, layout, v, part));
  std::vector<int64_t> load(k, 0);
  for (int64_t i = 0; i < n; ++i) load[part[i]] += weight[i];
  RETURN_IF_ERROR(AllSum(comm, load));
  const int64_t total = std::accumulate(load.begin(), load.end(), int64_t{0});
  const double average = static_cast<double>(total) / k;
  const int64_t limit = std::max<int64_t>(static_cast<int64_t>(std::floor(average * 1.03)),
                                          static_cast<int64_t>(std::ceil(average)));
  std::vector<int64_t> connection(k, 0);
  std::vector<int32_t> touched;
  int64_t moved_total = 0;
  for (int iteration = 0; iteration < kRefineIterations; ++iteration) {
    int64_t moved = 0;
    for (int s = 0; s < kSubRounds; ++s) {
      // This rank's share of each part's room in this sub-round: the
      // shares add up to the room, the remainder going round the ranks.
      std::vector<int64_t> room(k), delta(k, 0);
      const int ranks = layout.num_ranks;
      const int turn = (layout.rank + s + iteration * kSubRounds) % ranks;
      for (int p = 0; p < k; ++p) {
        const int64_t free = std::max<int64_t>(0, limit - load[p]);
        room[p] = free / ranks + (turn < free % ranks ? 1 : 0);
      }
      for (int64_t i = SubRoundBegin(n, s); i < SubRoundBegin(n, s + 1); ++i) {
        touched.clear();
        for (int64_t e = a.xadj[i]; e < a.xadj[i + 1]; ++e) {
          const int32_t q = part[v.adj[e]];
          if (connection[q] == 0) touched.push_back(q);
          connection[q] += a.adjwgt[e];
        }
        const int32_t own = part[i];
        int32_t best = own;
        int64_t best_gain = 0;
        for (int32_t q : touched) {
          const int64_t gain = connection[q] - connection[own];
          if (q != own && room[q] >= weight[i] &&
              (gain > best_gain || (gain == best_gain && gain > 0 && q < best))) {
            best = q;
            best_gain = gain;
          }
        }
        // An over-full part also gives nodes away without gain, if the move
        // costs nothing.
        if (best == own && load[own] + delta[own] > limit) {
          for (int32_t q : touched) {
            if (q != own && room[q] >= weight[i] && connection[q] >= connection[own]) {
              best = q;
              break;
            }
          }
        }
        for (int32_t q : touched) connection[q] = 0;
        if (best == own) continue;
        part[i] = best;
        room[best] -= weight[i];
        delta[best] += weight[i];
        delta[own] -= weight[i];
        ++moved;
      }
      RETURN_IF_ERROR(AllSum(comm, delta));
      for (int p = 0; p < k; ++p) load[p] += delta[p];
      RETURN_IF_ERROR(FetchGhosts(comm, layout, v, part));
    }
    ASSIGN_OR_RETURN(int64_t all_moved, AllSum(comm, moved));
    moved_total += all_moved;
    if (all_moved == 0) break;
  }
  std::copy(part.begin(), part.begin() + n, home_part.begin());
  return moved_total;
}

}  // namespace tessera::dist_partition::internal
