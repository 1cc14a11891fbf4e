#include "src/partition/partition.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <numeric>

#include "spdlog/spdlog.h"
#include "src/base/file.h"
#include "src/base/logging.h"
#include "src/base/random.h"
#include "src/base/strings.h"
#include "src/graph/npy.h"
#include "src/partition/metis_adapter.h"
#include "src/partition/partition_config.h"

namespace tessera {

StatusOr<PartMethod> ParsePartMethod(const std::string& name) {
  if (name == "metis") return PartMethod::kMetis;
  if (name == "random") return PartMethod::kRandom;
  return absl::InvalidArgumentError(
      StrCat("unknown part_method '", name, "' (expected metis or random)"));
}

namespace {

constexpr uint64_t kRandomPartStream = 101;
constexpr int kMaxBalanceTypes = 64;
constexpr size_t kGatherChunkBytes = 8 << 20;
constexpr size_t kTypeChunk = 1 << 20;  // etype.npy entries computed at a time.

bool SafeName(const std::string& name) {
  if (name.empty() || name == "." || name == "..") return false;
  return std::all_of(name.begin(), name.end(), [](char ch) {
    return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '-' || ch == '.';
  });
}

Status CheckArguments(const Graph& graph, const std::string& graph_name, int num_parts,
                      const PartitionOptions& o) {
  auto bad = [](auto&&... parts) { return absl::InvalidArgumentError(StrCat(parts...)); };
  if (!SafeName(graph_name)) {
    return bad("graph name '", graph_name, "' must be non-empty and use only letters, digits, ",
               "'_', '-' and '.'");
  }
  if (graph.num_nodes <= 0 || graph.num_edges() == 0) {
    return bad("the graph is empty (", graph.num_nodes, " nodes, ", graph.num_edges(),
               " edges); nothing to partition");
  }
  if (num_parts < 1 || num_parts > graph.num_nodes) {
    return bad("num_parts must be in [1, num_nodes = ", graph.num_nodes, "], got ", num_parts);
  }
  if (o.num_hops < 0) return bad("num_hops must be >= 0, got ", o.num_hops);
  if (o.num_trainers_per_machine < 1 ||
      static_cast<int64_t>(num_parts) * o.num_trainers_per_machine > graph.num_nodes) {
    return bad("num_trainers_per_machine must be >= 1 and num_parts * num_trainers_per_machine ",
               "<= num_nodes, got ", o.num_trainers_per_machine);
  }
  if (o.metis_iterations < 1 || o.metis_cuts < 1) {
    return bad("METIS iterations and cuts must be >= 1");
  }
  if (o.objtype != "cut" && o.objtype != "vol") {
    return bad("objtype must be 'cut' or 'vol', got '", o.objtype, "'");
  }
  std::vector<const std::map<std::string, Array>*> node_arrays, edge_arrays;
  if (graph.is_hetero()) {
    for (const auto& arrays : graph.ntype_data) node_arrays.push_back(&arrays);
    for (const auto& arrays : graph.etype_data) edge_arrays.push_back(&arrays);
  } else {
    node_arrays = {&graph.node_data};
    edge_arrays = {&graph.edge_data};
  }
  for (const auto* arrays : node_arrays) {
    if (o.num_trainers_per_machine > 1 && arrays->count("trainer_id")) {
      return bad("the input already has a node array 'trainer_id', which ",
                 "num_trainers_per_machine > 1 would overwrite");
    }
  }
  for (const auto* arrays : edge_arrays) {
    if (o.num_trainers_per_machine > 1 && arrays->count("trainer_id")) {
      return bad("the input already has an edge array 'trainer_id', which ",
                 "num_trainers_per_machine > 1 would overwrite");
    }
  }
  for (const auto& list : {node_arrays, edge_arrays}) {
    for (const auto* arrays : list) {
      for (const auto& [name, array] : *arrays) {
        if (!SafeName(name)) return bad("array name '", name, "' is not a safe file name");
      }
    }
  }
  if (!o.balance_ntypes.empty()) {
    std::vector<std::string> names;
    bool found = false;
    for (size_t t = 0; t < node_arrays.size(); ++t) {
      for (const auto& [name, array] : *node_arrays[t]) {
        names.push_back(graph.is_hetero() ? graph.ntypes[t] + "/" + name : name);
        if (name != o.balance_ntypes) continue;
        found = true;
        if (array.ndim() != 1 || IsFloating(array.dtype())) {
          return bad("balance_ntypes: node array '", names.back(), "' is ", array.Describe(),
                     "; it must be a 1-D integer or bool array");
        }
      }
    }
    if (!found) {
      return bad("balance_ntypes: no node array named '", o.balance_ntypes,
                 "' (have: ", StrJoin(names, ", "), ")");
    }
  }
  return absl::OkStatus();
}

// The balance class of every node: with a balance array, one class per
// distinct value; on a heterograph one class per node type (DGL balances
// node types by default), split by the values of the balance array on the
// types that have it. Returns the number of classes.
StatusOr<int> BalanceClasses(const Graph& graph, const PartitionOptions& o,
                             std::vector<int32_t>* classes) {
  classes->assign(graph.num_nodes, 0);
  int num_classes = 0;
  for (int t = 0; t < graph.num_ntypes(); ++t) {
    const auto& arrays = graph.is_hetero() ? graph.ntype_data[t] : graph.node_data;
    const int64_t base = graph.is_hetero() ? graph.ntype_offsets[t] : 0;
    const int64_t end = graph.is_hetero() ? graph.ntype_offsets[t + 1] : graph.num_nodes;
    auto it = o.balance_ntypes.empty() ? arrays.end() : arrays.find(o.balance_ntypes);
    if (it == arrays.end()) {
      std::fill(classes->begin() + base, classes->begin() + end, num_classes++);
      continue;
    }
    ASSIGN_OR_RETURN(Array values, ToInt64Ids(it->second.Clone(), o.balance_ntypes, false));
    auto v = values.span<int64_t>();
    std::vector<int64_t> distinct(v.begin(), v.end());
    std::sort(distinct.begin(), distinct.end());
    distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
    if (num_classes + distinct.size() > kMaxBalanceTypes) {
      return absl::InvalidArgumentError(
          StrCat("balance_ntypes: '", o.balance_ntypes, "' makes more than ", kMaxBalanceTypes,
                 " balance classes (distinct values", graph.is_hetero() ? " per node type" : "",
                 "); at most ", kMaxBalanceTypes, " can be balanced"));
    }
    for (int64_t i = 0; i < end - base; ++i) {
      (*classes)[base + i] = num_classes + static_cast<int32_t>(std::lower_bound(
                                               distinct.begin(), distinct.end(), v[i]) -
                                           distinct.begin());
    }
    num_classes += static_cast<int>(distinct.size());
  }
  return num_classes;
}

// Row-major vertex weights for METIS: one indicator column per balance class,
// then (with balance_edges) one in-degree column per class.
StatusOr<MetisOptions> BalanceWeights(const Graph& graph, const PartitionOptions& o) {
  MetisOptions metis;
  std::vector<int32_t> classes;
  ASSIGN_OR_RETURN(int num_classes, BalanceClasses(graph, o, &classes));
  if (num_classes == 1 && !o.balance_edges) return metis;
  const int64_t n = graph.num_nodes;
  std::vector<int32_t> in_degree;
  if (o.balance_edges) {
    in_degree.assign(n, 0);
    for (int64_t d : graph.dst_ids()) ++in_degree[d];
  }
  const int ncon = num_classes * (o.balance_edges ? 2 : 1);
  metis.num_constraints = ncon;
  metis.vertex_weights.assign(static_cast<size_t>(n) * ncon, 0);
  for (int64_t i = 0; i < n; ++i) {
    int32_t* w = &metis.vertex_weights[static_cast<size_t>(i) * ncon];
    w[classes[i]] = 1;
    if (o.balance_edges) w[num_classes + classes[i]] = in_degree[i];
  }
  return metis;
}

// Writes `values` as a 1-D .npy file, straight from their memory (no copy).
template <typename T>
Status WriteValues(const std::string& path, std::span<const T> values) {
  ASSIGN_OR_RETURN(NpyWriter writer,
                   NpyWriter::Create(path, DTypeOf<T>(), {static_cast<int64_t>(values.size())}));
  if (!values.empty()) {
    RETURN_IF_ERROR(writer.AppendRows(values.data(), static_cast<int64_t>(values.size())));
  }
  return writer.Close();
}
template <typename T>
Status WriteValues(const std::string& path, const std::vector<T>& values) {
  return WriteValues(path, std::span<const T>(values));
}

// Writes rows `ids` of `array` to a new .npy file, a chunk at a time. The
// array's file pages (when it is mapped) are dropped as the writing goes, so
// that they do not pile up in RSS: after every chunk when `ids` ascend (a
// forward sweep: the next chunk reads other pages), else at the end.
Status WriteGatheredRows(const std::string& path, const Array& array,
                         std::span<const int64_t> ids) {
  std::vector<int64_t> shape = array.shape();
  shape[0] = static_cast<int64_t>(ids.size());
  ASSIGN_OR_RETURN(NpyWriter writer, NpyWriter::Create(path, array.dtype(), shape));
  const size_t chunk =
      std::max<size_t>(1, kGatherChunkBytes / std::max<size_t>(1, array.row_bytes()));
  const bool ascending = std::is_sorted(ids.begin(), ids.end());
  for (size_t begin = 0; begin < ids.size(); begin += chunk) {
    size_t count = std::min(chunk, ids.size() - begin);
    Array rows = array.GatherRows(ids.subspan(begin, count));
    RETURN_IF_ERROR(writer.AppendRows(rows.data(), static_cast<int64_t>(count)));
    if (ascending) array.ReleasePages();
  }
  array.ReleasePages();
  return writer.Close();
}

// Type of an id of the input (its ids are grouped by type): the last type
// whose range starts at or before `id`. A branch-free count for the usual few
// types (this runs about twice per edge), a binary search for many.
int TypeOf(const std::vector<int64_t>& type_offsets, int64_t id) {
  const size_t size = type_offsets.size();
  if (size <= 2) return 0;
  if (size <= 33) {
    int t = 0;
    for (size_t i = 1; i + 1 < size; ++i) t += id >= type_offsets[i];
    return t;
  }
  return static_cast<int>(std::upper_bound(type_offsets.begin() + 1, type_offsets.end(), id) -
                          type_offsets.begin()) -
         1;
}

// The reshuffled global structure shared by all parts.
//
// New edge ids: an edge belongs to its destination's part; within a part,
// relation by relation, each relation's edges in CSC order (destination, then
// original id). With one relation that is the CSC order itself: CSC entry k
// is new edge k. With several, a part's entries visited in CSC order take
// their relation's next id in turn (NewEids), so no map is stored; only HALO
// beyond one hop, which looks entries up out of order, keeps one (in_eid).
struct Reshuffled {
  std::vector<int64_t> node_offsets, edge_offsets;  // K+1 each.
  std::vector<int64_t> orig_nids;                   // new node id -> original.
  std::vector<int64_t> new_of_old;                  // original node id -> new.
  std::vector<int64_t> in_ptr;                      // CSC over new ids, rows by original eid.
  std::vector<int64_t> new_src;                     // CSC entry -> new source id.
  std::vector<int64_t> orig_eids;                   // CSC entry -> original edge id.
  // CSC entry -> new eid: only with several relations and num_hops >= 2.
  std::vector<int64_t> in_eid;
  std::vector<int64_t> out_ptr, out_dst, out_eid;   // CSR over new ids (HALO only).
  std::vector<int64_t> node_counts, edge_counts;    // K x T and K x R (TypeLayout).
  int num_etypes = 1;
  // Precondition: one relation, or in_eid built.
  int64_t EidOf(int64_t k) const { return num_etypes == 1 ? k : in_eid[k]; }
  // The first new eid of relation t's block in part p.
  int64_t BlockStart(int p, int t) const {
    int64_t start = edge_offsets[p];
    for (int u = 0; u < t; ++u) start += edge_counts[p * num_etypes + u];
    return start;
  }
};

// New edge ids of part p's CSC entries, visited in CSC order: Next(k) for
// every entry k of the part, in increasing k.
class NewEids {
 public:
  NewEids(const Reshuffled& r, const std::vector<int64_t>& etype_offsets, int p)
      : r_(r), etype_offsets_(etype_offsets) {
    if (r.num_etypes == 1) return;
    next_.resize(r.num_etypes);
    for (int t = 0; t < r.num_etypes; ++t) next_[t] = r.BlockStart(p, t);
  }
  int64_t Next(int64_t k) {
    if (next_.empty()) return k;
    return next_[TypeOf(etype_offsets_, r_.orig_eids[k])]++;
  }

 private:
  const Reshuffled& r_;
  const std::vector<int64_t>& etype_offsets_;
  std::vector<int64_t> next_;
};

// `need_out_edges`: build the CSR (HALO); `keep_eid_map`: build in_eid when
// there are several relations (HALO beyond one hop).
Reshuffled Reshuffle(const Graph& graph, std::span<const int32_t> part, int num_parts,
                     bool need_out_edges, bool keep_eid_map) {
  const int64_t n = graph.num_nodes, m = graph.num_edges();
  Reshuffled r;
  r.node_offsets.assign(num_parts + 1, 0);
  for (int32_t p : part) ++r.node_offsets[p + 1];
  std::partial_sum(r.node_offsets.begin(), r.node_offsets.end(), r.node_offsets.begin());
  r.orig_nids.resize(n);
  r.new_of_old.resize(n);
  {
    std::vector<int64_t> cursor(r.node_offsets.begin(), r.node_offsets.end() - 1);
    for (int64_t v = 0; v < n; ++v) {
      int64_t id = cursor[part[v]]++;
      r.orig_nids[id] = v;
      r.new_of_old[v] = id;
    }
  }
  auto src = graph.src_ids();
  auto dst = graph.dst_ids();
  r.in_ptr.assign(n + 1, 0);
  for (int64_t d : dst) ++r.in_ptr[r.new_of_old[d] + 1];
  std::partial_sum(r.in_ptr.begin(), r.in_ptr.end(), r.in_ptr.begin());
  r.orig_eids.resize(m);
  {
    std::vector<int64_t> cursor(r.in_ptr.begin(), r.in_ptr.end() - 1);
    for (int64_t e = 0; e < m; ++e) r.orig_eids[cursor[r.new_of_old[dst[e]]]++] = e;
  }
  r.new_src.resize(m);
  for (int64_t k = 0; k < m; ++k) r.new_src[k] = r.new_of_old[src[r.orig_eids[k]]];
  r.edge_offsets.resize(num_parts + 1);
  for (int p = 0; p <= num_parts; ++p) r.edge_offsets[p] = r.in_ptr[r.node_offsets[p]];
  // Types: nodes of a part are already grouped by type (new ids follow the
  // original ones, which are grouped by type). Edges of a part are ordered by
  // relation, then destination, then original id: each relation one block.
  const int num_ntypes = graph.num_ntypes(), num_etypes = graph.num_etypes();
  r.node_counts.assign(static_cast<size_t>(num_parts) * num_ntypes, 0);
  r.edge_counts.assign(static_cast<size_t>(num_parts) * num_etypes, 0);
  for (int p = 0; p < num_parts; ++p) {
    for (int64_t v = r.node_offsets[p]; v < r.node_offsets[p + 1]; ++v) {
      ++r.node_counts[p * num_ntypes + TypeOf(graph.ntype_offsets, r.orig_nids[v])];
    }
    for (int64_t k = r.edge_offsets[p]; k < r.edge_offsets[p + 1]; ++k) {
      ++r.edge_counts[p * num_etypes + TypeOf(graph.etype_offsets, r.orig_eids[k])];
    }
  }
  r.num_etypes = num_etypes;
  graph.src.ReleasePages();  // The input edge list is not read again.
  graph.dst.ReleasePages();
  if (num_etypes > 1 && keep_eid_map) {
    r.in_eid.resize(m);
    for (int p = 0; p < num_parts; ++p) {
      NewEids eids(r, graph.etype_offsets, p);
      for (int64_t k = r.edge_offsets[p]; k < r.edge_offsets[p + 1]; ++k) {
        r.in_eid[k] = eids.Next(k);
      }
    }
  }
  if (need_out_edges) {
    r.out_ptr.assign(n + 1, 0);
    for (int64_t s : r.new_src) ++r.out_ptr[s + 1];
    std::partial_sum(r.out_ptr.begin(), r.out_ptr.end(), r.out_ptr.begin());
    r.out_dst.resize(m);
    r.out_eid.resize(m);
    std::vector<int64_t> cursor(r.out_ptr.begin(), r.out_ptr.end() - 1);
    for (int p = 0; p < num_parts; ++p) {
      NewEids eids(r, graph.etype_offsets, p);
      for (int64_t v = r.node_offsets[p]; v < r.node_offsets[p + 1]; ++v) {
        for (int64_t k = r.in_ptr[v]; k < r.in_ptr[v + 1]; ++k) {
          int64_t pos = cursor[r.new_src[k]]++;
          r.out_dst[pos] = v;
          r.out_eid[pos] = eids.Next(k);
        }
      }
    }
  }
  return r;
}

// The local graph of one part, as written to part<p>/graph.
struct LocalGraph {
  std::vector<int64_t> nid;  // Local -> new global id; inner first.
  std::vector<int64_t> indptr, indices, eid;
  std::vector<uint8_t> inner_edge;
  int64_t num_inner = 0;
  int64_t cut_edges = 0;
};

// Builds part p's local graph. `local_of` (size num_nodes, all -1) is scratch
// and is all -1 again on return.
LocalGraph BuildLocalGraph(const Graph& graph, const Reshuffled& r, int p, int num_hops,
                           std::vector<int64_t>& local_of) {
  const int64_t a = r.node_offsets[p], b = r.node_offsets[p + 1];
  auto inner = [&](int64_t v) { return v >= a && v < b; };
  LocalGraph g;
  g.num_inner = b - a;
  g.nid.resize(b - a);
  std::iota(g.nid.begin(), g.nid.end(), a);
  for (int64_t v = a; v < b; ++v) local_of[v] = v - a;
  std::vector<int64_t> frontier;
  auto local = [&](int64_t v, bool expand) {
    if (local_of[v] < 0) {
      local_of[v] = static_cast<int64_t>(g.nid.size());
      g.nid.push_back(v);
      if (expand) frontier.push_back(v);
    }
    return local_of[v];
  };

  // Sized up front (they are the largest arrays of the part): every inner
  // edge and every out-edge of the part leaving it (hop 1 HALO); only deeper
  // HALO grows them further.
  int64_t out_halo = 0;
  if (num_hops >= 1 && !r.out_ptr.empty()) {
    for (int64_t pos = r.out_ptr[a]; pos < r.out_ptr[b]; ++pos) out_halo += !inner(r.out_dst[pos]);
  }
  const int64_t inner_edges = r.in_ptr[b] - r.in_ptr[a];
  g.indices.reserve(inner_edges + out_halo);
  g.eid.reserve(inner_edges + out_halo);
  g.inner_edge.reserve(inner_edges + out_halo);

  // Inner rows: every in-edge of every inner node (hop 0: only inner sources).
  g.indptr.reserve(g.num_inner + 1);
  g.indptr.push_back(0);
  NewEids eids(r, graph.etype_offsets, p);
  for (int64_t v = a; v < b; ++v) {
    for (int64_t k = r.in_ptr[v]; k < r.in_ptr[v + 1]; ++k) {
      const int64_t u = r.new_src[k], eid = eids.Next(k);
      if (!inner(u)) {
        ++g.cut_edges;
        if (num_hops == 0) continue;
      }
      g.indices.push_back(local(u, /*expand=*/true));
      g.eid.push_back(eid);
    }
    g.indptr.push_back(static_cast<int64_t>(g.indices.size()));
  }
  g.inner_edge.assign(g.indices.size(), 1);

  // HALO rows: (row, source, eid) triples, then grouped by row.
  struct HaloEdge {
    int64_t row, src, eid;
  };
  std::vector<HaloEdge> halo_edges;
  if (num_hops >= 1 && !r.out_ptr.empty()) {
    halo_edges.reserve(out_halo);
    for (int64_t v = a; v < b; ++v) {
      for (int64_t pos = r.out_ptr[v]; pos < r.out_ptr[v + 1]; ++pos) {
        int64_t w = r.out_dst[pos];
        if (inner(w)) continue;
        halo_edges.push_back({local(w, /*expand=*/false), local_of[v], r.out_eid[pos]});
      }
    }
    for (int hop = 2; hop <= num_hops; ++hop) {
      std::vector<int64_t> current;
      current.swap(frontier);
      for (int64_t h : current) {
        for (int64_t k = r.in_ptr[h]; k < r.in_ptr[h + 1]; ++k) {
          int64_t u = r.new_src[k];
          if (inner(u)) continue;  // Already stored as an out-edge of the part.
          int64_t src_local = local(u, /*expand=*/true);
          halo_edges.push_back({local_of[h], src_local, r.EidOf(k)});
        }
      }
    }
  }
  std::sort(halo_edges.begin(), halo_edges.end(), [](const HaloEdge& x, const HaloEdge& y) {
    return x.row != y.row ? x.row < y.row : x.eid < y.eid;
  });
  const int64_t num_local = static_cast<int64_t>(g.nid.size());
  size_t next = 0;
  for (int64_t row = g.num_inner; row < num_local; ++row) {
    for (; next < halo_edges.size() && halo_edges[next].row == row; ++next) {
      g.indices.push_back(halo_edges[next].src);
      g.eid.push_back(halo_edges[next].eid);
      g.inner_edge.push_back(0);
    }
    g.indptr.push_back(static_cast<int64_t>(g.indices.size()));
  }
  for (int64_t v : g.nid) local_of[v] = -1;
  return g;
}

// More than one node type or relation: type arrays in the local graph and
// array names "<type>/<name>" (docs/partition-format.md).
bool TypedLayout(const Graph& graph) {
  return graph.num_ntypes() > 1 || graph.num_etypes() > 1;
}

// The arrays of node type t (relation r), named as the partition names them.
std::vector<std::pair<std::string, const Array*>> TypeArrays(const Graph& graph, bool node,
                                                             int t) {
  std::vector<std::pair<std::string, const Array*>> out;
  const auto& arrays = !graph.is_hetero() ? (node ? graph.node_data : graph.edge_data)
                                          : (node ? graph.ntype_data[t] : graph.etype_data[t]);
  const std::string prefix =
      !TypedLayout(graph) ? "" : (node ? graph.ntypes[t] : graph.etypes[t].Canonical()) + "/";
  for (const auto& [name, array] : arrays) out.emplace_back(prefix + name, &array);
  return out;
}

// The relation of new edge id `eid`: which block of its part holds it.
int RelationOfNewEid(const Reshuffled& r, int64_t eid) {
  const int owner =
      static_cast<int>(std::upper_bound(r.edge_offsets.begin() + 1, r.edge_offsets.end(), eid) -
                       r.edge_offsets.begin()) -
      1;
  int64_t at = r.edge_offsets[owner];
  int t = 0;
  while (t + 1 < r.num_etypes && eid >= at + r.edge_counts[owner * r.num_etypes + t]) {
    at += r.edge_counts[owner * r.num_etypes + t++];
  }
  return t;
}

// Relation t's edges of part p in new-id order (which is their CSC order), as
// original edge ids.
std::vector<int64_t> RelationEdges(const Graph& graph, const Reshuffled& r, int p, int t) {
  const int64_t ea = r.edge_offsets[p], eb = r.edge_offsets[p + 1];
  if (r.num_etypes == 1) return {r.orig_eids.begin() + ea, r.orig_eids.begin() + eb};
  const int64_t lo = graph.etype_offsets[t], hi = graph.etype_offsets[t + 1];
  std::vector<int64_t> edges;
  edges.reserve(r.edge_counts[p * r.num_etypes + t]);
  for (int64_t k = ea; k < eb; ++k) {
    if (r.orig_eids[k] >= lo && r.orig_eids[k] < hi) edges.push_back(r.orig_eids[k]);
  }
  return edges;
}

// orig_eids.npy: new edge id -> original, block by block.
Status WriteOrigEids(const std::string& path, const Graph& graph, const Reshuffled& r) {
  if (r.num_etypes == 1) return WriteValues(path, r.orig_eids);
  ASSIGN_OR_RETURN(NpyWriter writer, NpyWriter::Create(path, DType::kInt64,
                                                       {static_cast<int64_t>(r.orig_eids.size())}));
  for (int p = 0; p + 1 < static_cast<int>(r.edge_offsets.size()); ++p) {
    for (int t = 0; t < r.num_etypes; ++t) {
      std::vector<int64_t> edges = RelationEdges(graph, r, p, t);
      RETURN_IF_ERROR(writer.AppendRows(edges.data(), static_cast<int64_t>(edges.size())));
    }
  }
  return writer.Close();
}

Status WritePart(const Graph& graph, const Reshuffled& r, const LocalGraph& g, int p,
                 const std::string& part_dir, std::span<const int32_t> trainer) {
  const std::string graph_dir = part_dir + "/graph";
  const std::string node_dir = part_dir + "/node_feat";
  const std::string edge_dir = part_dir + "/edge_feat";
  const bool typed = TypedLayout(graph);
  const int num_ntypes = graph.num_ntypes(), num_etypes = graph.num_etypes();
  for (const std::string& dir : {graph_dir, node_dir, edge_dir}) RETURN_IF_ERROR(MakeDirs(dir));
  if (typed) {
    for (int t = 0; t < num_ntypes; ++t) RETURN_IF_ERROR(MakeDirs(node_dir + "/" + graph.ntypes[t]));
    for (int t = 0; t < num_etypes; ++t) {
      RETURN_IF_ERROR(MakeDirs(edge_dir + "/" + graph.etypes[t].Canonical()));
    }
  }
  std::vector<uint8_t> inner_node(g.nid.size(), 0);
  std::fill(inner_node.begin(), inner_node.begin() + g.num_inner, 1);
  RETURN_IF_ERROR(WriteValues(graph_dir + "/nid.npy", g.nid));
  RETURN_IF_ERROR(WriteValues(graph_dir + "/inner_node.npy", inner_node));
  RETURN_IF_ERROR(WriteValues(graph_dir + "/indptr.npy", g.indptr));
  RETURN_IF_ERROR(WriteValues(graph_dir + "/indices.npy", g.indices));
  RETURN_IF_ERROR(WriteValues(graph_dir + "/eid.npy", g.eid));
  RETURN_IF_ERROR(WriteValues(graph_dir + "/inner_edge.npy", g.inner_edge));
  if (typed) {  // DGL's _TYPE arrays: int16 per local node, int32 per local edge.
    std::vector<int16_t> ntype(g.nid.size());
    for (size_t i = 0; i < g.nid.size(); ++i) {
      ntype[i] = static_cast<int16_t>(TypeOf(graph.ntype_offsets, r.orig_nids[g.nid[i]]));
    }
    RETURN_IF_ERROR(WriteValues(graph_dir + "/ntype.npy", ntype));
    ASSIGN_OR_RETURN(NpyWriter writer, NpyWriter::Create(graph_dir + "/etype.npy", DType::kInt32,
                                                         {static_cast<int64_t>(g.eid.size())}));
    std::vector<int32_t> etype;
    for (size_t begin = 0; begin < g.eid.size(); begin += kTypeChunk) {
      etype.resize(std::min(kTypeChunk, g.eid.size() - begin));
      for (size_t i = 0; i < etype.size(); ++i) etype[i] = RelationOfNewEid(r, g.eid[begin + i]);
      RETURN_IF_ERROR(writer.AppendRows(etype.data(), static_cast<int64_t>(etype.size())));
    }
    RETURN_IF_ERROR(writer.Close());
  }

  // Node arrays: type t's rows of this part are new ids [start, end), in order.
  const int64_t a = r.node_offsets[p], ea = r.edge_offsets[p], eb = r.edge_offsets[p + 1];
  int64_t start = a;
  for (int t = 0; t < num_ntypes; ++t) {
    const int64_t end = start + r.node_counts[p * num_ntypes + t];
    const auto arrays = TypeArrays(graph, true, t);
    if (!arrays.empty()) {
      const int64_t base = graph.is_hetero() ? graph.ntype_offsets[t] : 0;
      std::vector<int64_t> rows(end - start);
      for (int64_t v = start; v < end; ++v) rows[v - start] = r.orig_nids[v] - base;
      for (const auto& [name, array] : arrays) {
        RETURN_IF_ERROR(WriteGatheredRows(StrCat(node_dir, "/", name, ".npy"), *array, rows));
      }
    }
    start = end;
  }
  // Edge arrays: relation t's edges of this part, in new-id order.
  for (int t = 0; t < num_etypes; ++t) {
    const auto arrays = TypeArrays(graph, false, t);
    if (arrays.empty()) continue;
    std::vector<int64_t> rows = RelationEdges(graph, r, p, t);
    const int64_t base = graph.is_hetero() ? graph.etype_offsets[t] : 0;
    for (int64_t& e : rows) e -= base;
    for (const auto& [name, array] : arrays) {
      RETURN_IF_ERROR(WriteGatheredRows(StrCat(edge_dir, "/", name, ".npy"), *array, rows));
    }
  }
  if (!trainer.empty()) {
    // Every node and edge of the part, by new id; then cut per type.
    std::vector<int64_t> node_trainer(r.node_offsets[p + 1] - a), edge_trainer(eb - ea);
    NewEids eids(r, graph.etype_offsets, p);
    for (int64_t v = a; v < r.node_offsets[p + 1]; ++v) {
      node_trainer[v - a] = trainer[r.orig_nids[v]];
      for (int64_t k = r.in_ptr[v]; k < r.in_ptr[v + 1]; ++k) {
        edge_trainer[eids.Next(k) - ea] = node_trainer[v - a];
      }
    }
    int64_t n0 = 0, e0 = 0;
    for (int t = 0; t < std::max(num_ntypes, num_etypes); ++t) {
      if (t < num_ntypes) {
        const int64_t c = r.node_counts[p * num_ntypes + t];
        const std::string prefix = typed ? graph.ntypes[t] + "/" : "";
        RETURN_IF_ERROR(WriteValues(StrCat(node_dir, "/", prefix, "trainer_id.npy"),
                                    std::span<const int64_t>(node_trainer).subspan(n0, c)));
        n0 += c;
      }
      if (t < num_etypes) {
        const int64_t c = r.edge_counts[p * num_etypes + t];
        const std::string prefix = typed ? graph.etypes[t].Canonical() + "/" : "";
        RETURN_IF_ERROR(WriteValues(StrCat(edge_dir, "/", prefix, "trainer_id.npy"),
                                    std::span<const int64_t>(edge_trainer).subspan(e0, c)));
        e0 += c;
      }
    }
  }
  return absl::OkStatus();
}

std::string PartName(int p) { return StrCat("part", p); }

// Errors if another partition config in `out_path` uses part folders that
// this run would overwrite (they would then describe the wrong data).
Status CheckNoOtherConfig(const std::string& out_path, const std::string& config_path,
                          int num_parts) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(out_path, ec)) {
    const std::string path = entry.path().string();
    if (entry.path().extension() != ".json" || path == config_path) continue;
    auto other = ReadPartitionConfig(path);
    if (!other.ok()) continue;  // Not a partition config.
    for (const auto& files : other->parts) {
      for (int p = 0; p < num_parts; ++p) {
        if (files.part_graph.rfind(PartName(p) + "/", 0) == 0) {
          return absl::FailedPreconditionError(
              StrCat("output folder ", out_path, " already holds the partition ", path,
                     ", whose files this run would overwrite; use another --out or remove it"));
        }
      }
    }
  }
  return absl::OkStatus();
}

// PartitionGraph; `consumed` (the same graph, or null) gives up its edge list
// once the reshuffle has read it.
StatusOr<PartitionResult> Partition(const Graph& graph, Graph* consumed,
                                    const std::string& graph_name, int num_parts,
                                    const std::string& out_path, const PartitionOptions& o) {
  RETURN_IF_ERROR(CheckArguments(graph, graph_name, num_parts, o));
  RETURN_IF_ERROR(graph.Validate("input graph"));
  RETURN_IF_ERROR(Annotate(MakeDirs(out_path), "output folder"));
  const std::string config_path = StrCat(out_path, "/", graph_name, ".json");
  RETURN_IF_ERROR(CheckNoOtherConfig(out_path, config_path, num_parts));
  // A config left by an earlier run must not describe what we are about to
  // overwrite; it reappears only once every part is complete.
  RETURN_IF_ERROR(RemoveAll(config_path));
  RETURN_IF_ERROR(Annotate(WriteFileAtomic(out_path + "/.tessera-write-test", ""),
                           "output folder is not writable"));
  RETURN_IF_ERROR(RemoveAll(out_path + "/.tessera-write-test"));

  PartitionResult result;
  const int64_t num_edges = graph.num_edges();
  const int trainers = o.num_trainers_per_machine;
  const int total_parts = num_parts * trainers;

  // 1. Assignment.
  Progress assign_step(
      StrCat("assign nodes (", o.part_method == PartMethod::kMetis ? "metis" : "random", ", ",
             total_parts, " parts)"),
      0, "");
  std::vector<int32_t> trainer;  // Raw assignment into K*T parts.
  if (total_parts == 1) {
    trainer.assign(graph.num_nodes, 0);
  } else if (o.part_method == PartMethod::kMetis) {
    ASSIGN_OR_RETURN(MetisOptions metis, BalanceWeights(graph, o));
    metis.num_parts = total_parts;
    metis.seed = o.seed;
    metis.minimize_volume = o.objtype == "vol";
    metis.refine_iterations = o.metis_iterations;
    metis.num_cuts = o.metis_cuts;
    ASSIGN_OR_RETURN(trainer, MetisPartition(graph, metis));
  } else {
    Rng rng(o.seed, kRandomPartStream);
    trainer.resize(graph.num_nodes);
    for (int32_t& t : trainer) t = static_cast<int32_t>(rng.Below(total_parts));
  }
  std::vector<int32_t> part(trainer.size());
  for (size_t v = 0; v < trainer.size(); ++v) part[v] = trainer[v] / trainers;
  if (trainers == 1) trainer.clear();
  result.assign_seconds = assign_step.Done();

  // 2. Reshuffle.
  Progress reshuffle_step("reshuffle ids", 0, "");
  Reshuffled r = Reshuffle(graph, part, num_parts, o.num_hops >= 1 && num_parts > 1,
                           /*keep_eid_map=*/o.num_hops >= 2 && num_parts > 1);
  part.clear();
  part.shrink_to_fit();
  if (consumed != nullptr) {  // A heap edge list (a heterograph's) is freed here.
    consumed->src = Array();
    consumed->dst = Array();
  }
  result.reshuffle_seconds = reshuffle_step.Done();

  // 3. Local graphs and files, one part at a time.
  Progress write_step("build and write parts", num_parts, "parts");
  std::vector<int64_t> local_of(graph.num_nodes, -1);
  auto cleanup = [&](const Status& st) {
    for (int p = 0; p < num_parts; ++p) RemoveAll(StrCat(out_path, "/", PartName(p))).IgnoreError();
    RemoveAll(out_path + "/orig_nids.npy").IgnoreError();
    RemoveAll(out_path + "/orig_eids.npy").IgnoreError();
    return st;
  };
  for (int p = 0; p < num_parts; ++p) {
    Stopwatch part_watch;
    LocalGraph g = BuildLocalGraph(graph, r, p, o.num_hops, local_of);
    const std::string part_dir = StrCat(out_path, "/", PartName(p));
    Status st = RemoveAll(part_dir);
    if (st.ok()) st = WritePart(graph, r, g, p, part_dir, trainer);
    if (!st.ok()) return cleanup(st);
    PartStats stats;
    stats.inner_nodes = g.num_inner;
    stats.halo_nodes = static_cast<int64_t>(g.nid.size()) - g.num_inner;
    stats.inner_edges = r.edge_offsets[p + 1] - r.edge_offsets[p];
    stats.local_edges = static_cast<int64_t>(g.indices.size());
    stats.cut_edges = g.cut_edges;
    result.edge_cut += g.cut_edges;
    result.parts.push_back(stats);
    spdlog::info("part {}: {} inner + {} halo nodes, {} inner + {} halo edges, {:.2f} s", p,
                 stats.inner_nodes, stats.halo_nodes, stats.inner_edges,
                 stats.local_edges - std::count(g.inner_edge.begin(), g.inner_edge.end(), 1),
                 part_watch.Seconds());
    write_step.Update(p + 1);
  }
  if (o.return_mapping) {
    Status st = WriteValues(out_path + "/orig_nids.npy", r.orig_nids);
    if (st.ok()) st = WriteOrigEids(out_path + "/orig_eids.npy", graph, r);
    if (!st.ok()) return cleanup(st);
  }

  PartitionConfig config;
  config.graph_name = graph_name;
  config.num_nodes = graph.num_nodes;
  config.num_edges = num_edges;
  config.part_method = o.part_method == PartMethod::kMetis ? "metis" : "random";
  config.num_parts = num_parts;
  config.halo_hops = o.num_hops;
  config.node_offsets = r.node_offsets;
  config.edge_offsets = r.edge_offsets;
  if (graph.is_hetero()) {
    config.layout.ntypes = graph.ntypes;
    config.layout.etypes = graph.etypes;
  } else {
    config.layout.ntypes = {"_N"};
    config.layout.etypes = {{"_N", "_E", "_N"}};
  }
  config.layout.node_counts = r.node_counts;
  config.layout.edge_counts = r.edge_counts;
  for (int p = 0; p < num_parts; ++p) {
    config.parts.push_back({StrCat(PartName(p), "/graph"), StrCat(PartName(p), "/node_feat"),
                            StrCat(PartName(p), "/edge_feat")});
  }
  config.num_trainers_per_machine = trainers;
  for (int t = 0; t < graph.num_ntypes(); ++t) {
    for (const auto& [name, array] : TypeArrays(graph, true, t)) {
      config.node_feat_names.push_back(name);
    }
    if (trainers > 1) {
      config.node_feat_names.push_back(
          TypedLayout(graph) ? graph.ntypes[t] + "/trainer_id" : "trainer_id");
    }
  }
  for (int t = 0; t < graph.num_etypes(); ++t) {
    for (const auto& [name, array] : TypeArrays(graph, false, t)) {
      config.edge_feat_names.push_back(name);
    }
    if (trainers > 1) {
      config.edge_feat_names.push_back(
          TypedLayout(graph) ? graph.etypes[t].Canonical() + "/trainer_id" : "trainer_id");
    }
  }
  config.balance_ntypes = o.balance_ntypes;
  config.balance_edges = o.balance_edges;
  config.seed = o.seed;
  Status st = WriteFileAtomic(config_path, PartitionConfigToJson(config));
  if (!st.ok()) return cleanup(st);
  result.write_seconds = write_step.Done();
  result.config_path = config_path;
  spdlog::info("edge cut: {} of {} edges ({:.2f}%)", result.edge_cut, num_edges,
               100.0 * result.edge_cut / num_edges);
  return result;
}

}  // namespace

StatusOr<PartitionResult> PartitionGraph(const Graph& graph, const std::string& graph_name,
                                         int num_parts, const std::string& out_path,
                                         const PartitionOptions& options) {
  return Partition(graph, nullptr, graph_name, num_parts, out_path, options);
}

StatusOr<PartitionResult> PartitionGraph(Graph&& graph, const std::string& graph_name,
                                         int num_parts, const std::string& out_path,
                                         const PartitionOptions& options) {
  return Partition(graph, &graph, graph_name, num_parts, out_path, options);
}

}  // namespace tessera
