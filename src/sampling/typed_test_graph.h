// File: src/sampling/typed_test_graph.h
//
// Tests only: a hand-drawn typed graph (users, items, tags; four relations,
// several edges of each relation at most nodes) and its real partitions,
// written with PartitionGraph and loaded as LocalGraphs, with the mappings
// back to original ids.
//
//   users u0..u3 (ids 0-3), items i0..i3 (4-7), tags t0, t1 (8, 9)
//
//   [0] user:buys:item          [2] user:follows:user
//       u0 -> i0 i1 i2              u0 -> u1 u3    u1 -> u0 u2
//       u1 -> i0 i1                 u2 -> u0       u3 -> u0 u2
//       u2 -> i0 i3             [3] item:has:tag
//       u3 -> i0 i1 i3              i0 -> t0 t1    i1 -> t0
//   [1] item:bought-by:user         i2 -> t0       i3 -> t0 t1
//       every buys edge reversed
//
//   in-degree per relation: i0 buys 4, i1 3, i2 1, i3 2; u0 bought-by 3 and
//   follows 3, u1 2 and 1, u2 2 and 2, u3 3 and 1; t0 has 4, t1 2.
//
// Original edge ids follow the lists above, relation by relation (buys
// 0-9, bought-by 10-19, follows 20-26, has 27-32). Every relation has the
// float32 edge array "w" = original edge id % 3 (so a third of the edges
// weigh 0).
#ifndef TESSERA_SRC_SAMPLING_TYPED_TEST_GRAPH_H_
#define TESSERA_SRC_SAMPLING_TYPED_TEST_GRAPH_H_

#include <algorithm>
#include <compare>
#include <memory>
#include <string>
#include <vector>

#include "src/graph/array_test_util.h"
#include "src/graph/npy.h"
#include "src/partition/partition.h"
#include "src/sampling/local_graph.h"
#include "tessera/partition/load_partition.h"

namespace tessera::sampling::typed_test {

inline Graph ShopGraph() {
  Graph g;
  g.ntypes = {"user", "item", "tag"};
  g.ntype_offsets = {0, 4, 8, 10};
  g.num_nodes = 10;
  g.etypes = {{"user", "buys", "item"},
              {"item", "bought-by", "user"},
              {"user", "follows", "user"},
              {"item", "has", "tag"}};
  using Pairs = std::vector<std::pair<int64_t, int64_t>>;  // Per-type ids.
  Pairs buys = {{0, 0}, {0, 1}, {0, 2}, {1, 0}, {1, 1}, {2, 0}, {2, 3}, {3, 0}, {3, 1}, {3, 3}};
  Pairs follows = {{0, 1}, {0, 3}, {1, 0}, {1, 2}, {2, 0}, {3, 0}, {3, 2}};
  Pairs has = {{0, 0}, {0, 1}, {1, 0}, {2, 0}, {3, 0}, {3, 1}};
  std::vector<int64_t> src, dst;
  g.etype_offsets = {0};
  auto add = [&](const Pairs& edges, int s, int d, bool reverse) {
    for (auto [u, v] : edges) {
      if (reverse) std::swap(u, v);
      src.push_back(g.ntype_offsets[s] + u);
      dst.push_back(g.ntype_offsets[d] + v);
    }
    g.etype_offsets.push_back(static_cast<int64_t>(src.size()));
  };
  add(buys, 0, 1, false);
  add(buys, 1, 0, true);
  add(follows, 0, 0, false);
  add(has, 1, 2, false);
  g.src = Array::From(src);
  g.dst = Array::From(dst);
  g.ntype_data.resize(3);
  g.etype_data.resize(4);
  for (int r = 0; r < 4; ++r) {
    std::vector<float> w;
    for (int64_t e = g.etype_offsets[r]; e < g.etype_offsets[r + 1]; ++e) {
      w.push_back(static_cast<float>(e % 3));
    }
    g.etype_data[r].emplace("w", Array::From(w));
  }
  return g;
}

// The relation of an original edge id.
inline int RelationOf(const Graph& g, int64_t orig_eid) {
  return static_cast<int>(
             std::upper_bound(g.etype_offsets.begin(), g.etype_offsets.end(), orig_eid) -
             g.etype_offsets.begin()) -
         1;
}

// An edge in original ids with its relation.
struct TypedEdge {
  int64_t src, dst, eid;
  int relation;
  auto operator<=>(const TypedEdge&) const = default;
};

struct PartitionedGraph {
  std::vector<std::shared_ptr<const LocalPartition>> parts;
  std::vector<std::shared_ptr<const LocalGraph>> graphs;
  std::vector<int64_t> orig_nid, orig_eid;  // New id -> original id.

  const PartitionBook& book() const { return parts[0]->book; }
  // The edge in original ids; its relation from the partition book.
  TypedEdge Orig(int64_t src, int64_t dst, int64_t eid) const {
    return {orig_nid[src], orig_nid[dst], orig_eid[eid], book().MapToPerEtype(eid).first};
  }
  // New node id of an original one.
  int64_t NewNid(int64_t orig) const {
    return std::find(orig_nid.begin(), orig_nid.end(), orig) - orig_nid.begin();
  }
  // The weights of part p's owned edges from its per-relation edge arrays
  // "<relation>/w", concatenated in relation order (= owned edge-id order).
  std::vector<float> Weights(int p) const {
    std::vector<float> w;
    for (const EdgeType& et : book().etypes()) {
      auto rows = parts[p]->edge_data.at(et.Canonical() + "/w").span<float>();
      w.insert(w.end(), rows.begin(), rows.end());
    }
    return w;
  }
};

// Partitions `g` into `num_parts` under `dir` and loads every part.
inline StatusOr<PartitionedGraph> PartitionAndLoad(const Graph& g, int num_parts,
                                                   const std::string& dir,
                                                   PartMethod method = PartMethod::kMetis,
                                                   uint64_t seed = 0) {
  PartitionOptions options;
  options.part_method = method;
  options.return_mapping = true;
  options.seed = seed;
  ASSIGN_OR_RETURN(PartitionResult result, PartitionGraph(g, "shop", num_parts, dir, options));
  PartitionedGraph out;
  out.orig_nid = testing::NpyValues(dir + "/orig_nids.npy");
  out.orig_eid = testing::NpyValues(dir + "/orig_eids.npy");
  for (int p = 0; p < num_parts; ++p) {
    ASSIGN_OR_RETURN(LocalPartition part, LoadPartition(result.config_path, p));
    auto shared = std::make_shared<const LocalPartition>(std::move(part));
    ASSIGN_OR_RETURN(auto graph, LocalGraph::Create(PartArraysOf(shared)));
    out.parts.push_back(std::move(shared));
    out.graphs.push_back(std::move(graph));
  }
  return out;
}

}  // namespace tessera::sampling::typed_test

#endif  // TESSERA_SRC_SAMPLING_TYPED_TEST_GRAPH_H_
