#include "src/partition/part_writer.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <optional>

#include "spdlog/spdlog.h"
#include "src/base/logging.h"
#include "src/graph/npy.h"
#include "src/partition/partition_util.h"
#include "tessera/base/file.h"
#include "tessera/base/resource.h"
#include "tessera/base/strings.h"

namespace tessera {

std::string PartName(int p) { return StrCat("part", p); }

bool TypedLayout(const Graph& graph) { return graph.num_ntypes() > 1 || graph.num_etypes() > 1; }

std::vector<std::pair<std::string, const Array*>> TypeArrays(const Graph& graph, bool node, int t,
                                                             std::string_view skip) {
  std::vector<std::pair<std::string, const Array*>> out;
  const auto& arrays = !graph.is_hetero() ? (node ? graph.node_data : graph.edge_data)
                                          : (node ? graph.ntype_data[t] : graph.etype_data[t]);
  const std::string prefix =
      !TypedLayout(graph) ? "" : (node ? graph.ntypes[t] : graph.etypes[t].Canonical()) + "/";
  for (const auto& [name, array] : arrays) {
    if (name != skip) out.emplace_back(prefix + name, &array);
  }
  return out;
}

namespace {

constexpr int64_t kSweepChunk = 1 << 20;  // Edges read between dropping their pages.
constexpr int64_t kWriteChunk = 1 << 20;  // Values converted at a time for writing.
constexpr size_t kGatherChunkBytes = 8 << 20;

// Calls fn(e, src, dst) for the edges [begin, end) of `graph` in order, with
// original ids; a mapped edge list's pages are dropped behind the sweep.
template <typename Fn>
void SweepEdges(const Graph& graph, int64_t begin, int64_t end, Fn&& fn) {
  auto src = graph.src_ids();
  auto dst = graph.dst_ids();
  for (int64_t at = begin; at < end; at += kSweepChunk) {
    const int64_t stop = std::min(end, at + kSweepChunk);
    for (int64_t e = at; e < stop; ++e) fn(e, src[e], dst[e]);
    graph.src.ReleasePages(at, stop);
    graph.dst.ReleasePages(at, stop);
  }
  graph.src.ReleasePages(begin, end);  // The pages chunk boundaries split.
  graph.dst.ReleasePages(begin, end);
}

// Original edge ids of relation t (a homogeneous graph: every edge).
std::pair<int64_t, int64_t> RelationRange(const Graph& graph, int t) {
  if (!graph.is_hetero()) return {0, graph.num_edges()};
  return {graph.etype_offsets[t], graph.etype_offsets[t + 1]};
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

// Appends value_of(0), ..., value_of(count - 1) to `writer` as T, a chunk at
// a time; value_of is called in that order (it may keep state).
template <typename T, typename Fn>
Status AppendValues(NpyWriter& writer, int64_t count, Fn&& value_of) {
  std::vector<T> chunk;
  for (int64_t begin = 0; begin < count; begin += kWriteChunk) {
    chunk.resize(std::min(kWriteChunk, count - begin));
    for (size_t i = 0; i < chunk.size(); ++i) {
      chunk[i] = static_cast<T>(value_of(begin + static_cast<int64_t>(i)));
    }
    RETURN_IF_ERROR(writer.AppendRows(chunk.data(), static_cast<int64_t>(chunk.size())));
  }
  return absl::OkStatus();
}

// A 1-D .npy file of T: value_of(0), ..., value_of(count - 1).
template <typename T, typename Fn>
Status WriteValues(const std::string& path, int64_t count, Fn&& value_of) {
  ASSIGN_OR_RETURN(NpyWriter writer, NpyWriter::Create(path, DTypeOf<T>(), {count}));
  RETURN_IF_ERROR(AppendValues<T>(writer, count, std::forward<Fn>(value_of)));
  return writer.Close();
}

// Writes rows row_of(0), ..., row_of(count - 1) of `array` to a new .npy
// file, a chunk at a time. The array's file pages (when it is mapped) are
// dropped as the writing goes, so that they do not pile up in RSS: after every
// chunk while the rows ascend (a forward sweep: the next chunk reads other
// pages), and at the end.
template <typename Fn>
Status WriteGatheredRows(const std::string& path, const Array& array, int64_t count, Fn&& row_of) {
  std::vector<int64_t> shape = array.shape();
  shape[0] = count;
  ASSIGN_OR_RETURN(NpyWriter writer, NpyWriter::Create(path, array.dtype(), shape));
  const int64_t chunk = static_cast<int64_t>(
      std::max<size_t>(1, kGatherChunkBytes / std::max<size_t>(1, array.row_bytes())));
  std::vector<int64_t> ids;
  bool ascending = true;
  int64_t last = -1;
  for (int64_t begin = 0; begin < count; begin += chunk) {
    ids.resize(std::min(chunk, count - begin));
    for (size_t i = 0; i < ids.size(); ++i) {
      ids[i] = row_of(begin + static_cast<int64_t>(i));
      ascending = ascending && ids[i] >= last;
      last = ids[i];
    }
    Array rows = array.GatherRows(ids);
    RETURN_IF_ERROR(writer.AppendRows(rows.data(), static_cast<int64_t>(ids.size())));
    if (ascending) array.ReleasePages();
  }
  array.ReleasePages();
  return writer.Close();
}

// The reshuffled global structure shared by all parts, in ids of type Id.
//
// New node ids: by part, then original id. New edge ids: an edge belongs to
// its destination's part; within a part, relation by relation, each
// relation's edges in CSC order (new destination, then original id). With
// one relation that is the CSC order itself.
template <typename Id>
struct Reshuffled {
  int num_parts = 1;
  int num_etypes = 1;
  std::vector<int64_t> node_offsets, edge_offsets;  // K+1 each.
  std::vector<Id> orig_nids;                        // New node id -> original.
  std::vector<Id> new_of_old;                       // Original node id -> new.
  std::vector<Id> in_ptr;                           // CSC row starts over new ids.
  std::vector<Id> new_eid;                          // Original edge id -> new.
  std::vector<int64_t> node_counts, edge_counts;    // K x T and K x R.
  std::vector<int64_t> out_cut;                     // Per part: edges leaving it.

  // The first new eid of relation t's block in part p.
  int64_t BlockStart(int p, int t) const {
    return TypeBlockStart(edge_offsets, edge_counts, num_etypes, p, t);
  }
  // The relation of new edge id `eid`.
  int RelationOfNewEid(int64_t eid) const {
    return BlockTypeOf(edge_offsets, edge_counts, num_etypes, eid);
  }
};

template <typename Id>
Reshuffled<Id> Reshuffle(const Graph& graph, std::span<const int32_t> part, int num_parts) {
  const int64_t n = graph.num_nodes, m = graph.num_edges();
  const int num_ntypes = graph.num_ntypes(), num_etypes = graph.num_etypes();
  Reshuffled<Id> r;
  r.num_parts = num_parts;
  r.num_etypes = num_etypes;
  r.node_offsets.assign(num_parts + 1, 0);
  for (int32_t p : part) ++r.node_offsets[p + 1];
  std::partial_sum(r.node_offsets.begin(), r.node_offsets.end(), r.node_offsets.begin());
  r.orig_nids.resize(n);
  r.new_of_old.resize(n);
  {
    std::vector<int64_t> cursor(r.node_offsets.begin(), r.node_offsets.end() - 1);
    for (int64_t v = 0; v < n; ++v) {
      const int64_t id = cursor[part[v]]++;
      r.orig_nids[id] = static_cast<Id>(v);
      r.new_of_old[v] = static_cast<Id>(id);
    }
  }
  // In-degrees, the edges of every (part, relation) and those leaving a part.
  r.in_ptr.assign(n + 1, 0);
  r.edge_counts.assign(static_cast<size_t>(num_parts) * num_etypes, 0);
  r.out_cut.assign(num_parts, 0);
  for (int t = 0; t < num_etypes; ++t) {
    auto [lo, hi] = RelationRange(graph, t);
    SweepEdges(graph, lo, hi, [&](int64_t, int64_t s, int64_t d) {
      ++r.in_ptr[r.new_of_old[d] + 1];
      ++r.edge_counts[static_cast<size_t>(part[d]) * num_etypes + t];
      r.out_cut[part[s]] += part[s] != part[d];
    });
  }
  std::partial_sum(r.in_ptr.begin(), r.in_ptr.end(), r.in_ptr.begin());
  r.edge_offsets.resize(num_parts + 1);
  for (int p = 0; p <= num_parts; ++p) r.edge_offsets[p] = r.in_ptr[r.node_offsets[p]];
  // Nodes of a part are already grouped by type (new ids follow the original
  // ones, which are grouped by type).
  r.node_counts.assign(static_cast<size_t>(num_parts) * num_ntypes, 0);
  for (int p = 0; p < num_parts; ++p) {
    for (int64_t v = r.node_offsets[p]; v < r.node_offsets[p + 1]; ++v) {
      ++r.node_counts[p * num_ntypes + TypeOf(graph.ntype_offsets, r.orig_nids[v])];
    }
  }
  // Every edge's CSC position (its new id with one relation).
  r.new_eid.resize(m);
  {
    std::vector<Id> cursor(r.in_ptr.begin(), r.in_ptr.end() - 1);
    SweepEdges(graph, 0, m,
               [&](int64_t e, int64_t, int64_t d) { r.new_eid[e] = cursor[r.new_of_old[d]]++; });
  }
  if (num_etypes > 1) {
    // A part's CSC entries, visited in order, take their relation's next id.
    std::vector<Id> edge_at(m);  // CSC position -> original edge id.
    for (int64_t e = 0; e < m; ++e) edge_at[r.new_eid[e]] = static_cast<Id>(e);
    std::vector<int64_t> next(num_etypes);
    for (int p = 0; p < num_parts; ++p) {
      for (int t = 0; t < num_etypes; ++t) next[t] = r.BlockStart(p, t);
      for (int64_t k = r.edge_offsets[p]; k < r.edge_offsets[p + 1]; ++k) {
        const int64_t e = edge_at[k];
        r.new_eid[e] = static_cast<Id>(next[TypeOf(graph.etype_offsets, e)]++);
      }
    }
  }
  return r;
}

// One HALO entry of a part's local graph: local row, source and new edge id.
template <typename Id>
struct HaloEdge {
  Id row, src, eid;
};

// Builds and writes part p. `local_of` (all -1) and `first_src` (all
// max Id) are per-node scratch, returned as they came.
template <typename Id>
class PartBuilder {
 public:
  PartBuilder(const Graph& graph, const Reshuffled<Id>& r, const WritePartsOptions& o, int p,
              std::vector<Id>& local_of, std::vector<Id>& first_src)
      : graph_(graph),
        r_(r),
        o_(o),
        p_(p),
        a_(r.node_offsets[p]),
        b_(r.node_offsets[p + 1]),
        ea_(r.edge_offsets[p]),
        eb_(r.edge_offsets[p + 1]),
        local_of_(local_of),
        first_src_(first_src) {}
  ~PartBuilder() {
    for (Id v : nid_) local_of_[v] = -1;
  }

  Status Run(const std::string& part_dir, NpyWriter* orig_eids, PartStats* stats);

 private:
  bool Inner(int64_t v) const { return v >= a_ && v < b_; }
  // The new eid of the part's CSC entry at `pos` (before compaction), minus ea_.
  int64_t EidAt(int64_t pos) const { return eid_.empty() ? pos : eid_[pos]; }
  Id Discover(Id v) {
    if (local_of_[v] < 0) {
      local_of_[v] = static_cast<Id>(nid_.size());
      nid_.push_back(v);
    }
    return local_of_[v];
  }
  void SweepPartEdges(bool need_orig);
  Status WriteEdgeArrays(const std::string& edge_dir, NpyWriter* orig_eids);
  Status WriteNodeArrays(const std::string& node_dir);
  void BuildLocalGraph();
  Status WriteLocalGraph(const std::string& graph_dir);

  const Graph& graph_;
  const Reshuffled<Id>& r_;
  const WritePartsOptions& o_;
  const int p_;
  const int64_t a_, b_, ea_, eb_;
  std::vector<Id>& local_of_;
  std::vector<Id>& first_src_;

  // The part's CSC entries (in-edges of inner nodes) by position: source
  // (new id, then local id), new eid - ea_ (only with several relations or no
  // HALO) and, by new eid - ea_, the original edge id (when written).
  std::vector<Id> src_, eid_, orig_;
  std::vector<HaloEdge<Id>> halo_;  // First (dst, src, eid) in new ids.
  std::vector<Id> nid_;             // Local id -> new id.
  std::vector<int64_t> indptr_;
  int64_t num_inner_edges_ = 0;  // Local CSC entries of inner rows.
  int64_t cut_edges_ = 0;
};

// One sweep over the input: the part's CSC entries, in their CSC positions,
// and the edges leaving the part (hop-1 HALO).
template <typename Id>
void PartBuilder<Id>::SweepPartEdges(bool need_orig) {
  const int64_t m_p = eb_ - ea_;
  src_.resize(m_p);
  if (r_.num_etypes > 1) eid_.resize(m_p);
  if (need_orig) orig_.resize(m_p);
  const bool out_halo = o_.num_hops >= 1 && o_.num_parts > 1;
  if (out_halo) halo_.reserve(r_.out_cut[p_]);
  std::vector<Id> cursor(r_.in_ptr.begin() + a_, r_.in_ptr.begin() + b_);
  SweepEdges(graph_, 0, graph_.num_edges(), [&](int64_t e, int64_t s, int64_t d) {
    const Id nd = r_.new_of_old[d], ns = r_.new_of_old[s];
    if (Inner(nd)) {
      const int64_t pos = cursor[nd - a_]++ - ea_;
      const Id eid = static_cast<Id>(r_.new_eid[e] - ea_);
      src_[pos] = ns;
      if (!eid_.empty()) eid_[pos] = eid;
      if (need_orig) orig_[eid] = static_cast<Id>(e);
    } else if (out_halo && Inner(ns)) {
      halo_.push_back({nd, ns, r_.new_eid[e]});
      first_src_[nd] = std::min(first_src_[nd], ns);
    }
  });
}

// Edge arrays, trainer ids and the part's slice of orig_eids.npy, all in
// new-id order (relation t's block: its edges in CSC order).
template <typename Id>
Status PartBuilder<Id>::WriteEdgeArrays(const std::string& edge_dir, NpyWriter* orig_eids) {
  const int num_etypes = graph_.num_etypes();
  for (int t = 0; t < num_etypes; ++t) {
    const auto arrays = TypeArrays(graph_, false, t);
    if (arrays.empty()) continue;
    const int64_t first = r_.BlockStart(p_, t) - ea_;
    const int64_t count = r_.edge_counts[p_ * num_etypes + t];
    const int64_t base = RelationRange(graph_, t).first;
    for (const auto& [name, array] : arrays) {
      RETURN_IF_ERROR(WriteGatheredRows(StrCat(edge_dir, "/", name, ".npy"), *array, count,
                                        [&](int64_t i) { return orig_[first + i] - base; }));
    }
  }
  if (orig_eids != nullptr) {
    RETURN_IF_ERROR(
        AppendValues<int64_t>(*orig_eids, eb_ - ea_, [&](int64_t i) { return orig_[i]; }));
  }
  if (o_.trainer.empty()) return absl::OkStatus();
  // An edge takes its destination's trainer. Relation t's edges in new-id
  // order are its CSC entries in position order.
  for (int t = 0; t < num_etypes; ++t) {
    const int64_t first = r_.BlockStart(p_, t) - ea_;
    const int64_t count = r_.edge_counts[p_ * num_etypes + t];
    const std::string prefix = TypedLayout(graph_) ? graph_.etypes[t].Canonical() + "/" : "";
    int64_t pos = 0, row = a_;
    RETURN_IF_ERROR(
        WriteValues<int64_t>(StrCat(edge_dir, "/", prefix, "trainer_id.npy"), count, [&](int64_t) {
          while (EidAt(pos) < first || EidAt(pos) >= first + count) ++pos;
          while (r_.in_ptr[row + 1] - ea_ <= pos) ++row;
          ++pos;
          return o_.trainer[r_.orig_nids[row]];
        }));
  }
  return absl::OkStatus();
}

// Node arrays and trainer ids: type t's rows of this part are the new ids
// [start, end), in order.
template <typename Id>
Status PartBuilder<Id>::WriteNodeArrays(const std::string& node_dir) {
  const int num_ntypes = graph_.num_ntypes();
  int64_t start = a_;
  for (int t = 0; t < num_ntypes; ++t) {
    const int64_t end = start + r_.node_counts[p_ * num_ntypes + t];
    const int64_t base = graph_.is_hetero() ? graph_.ntype_offsets[t] : 0;
    for (const auto& [name, array] : TypeArrays(graph_, true, t, o_.skip_node_array)) {
      RETURN_IF_ERROR(WriteGatheredRows(StrCat(node_dir, "/", name, ".npy"), *array, end - start,
                                        [&](int64_t i) { return r_.orig_nids[start + i] - base; }));
    }
    if (!o_.trainer.empty()) {
      const std::string prefix = TypedLayout(graph_) ? graph_.ntypes[t] + "/" : "";
      RETURN_IF_ERROR(
          WriteValues<int64_t>(StrCat(node_dir, "/", prefix, "trainer_id.npy"), end - start,
                               [&](int64_t i) { return o_.trainer[r_.orig_nids[start + i]]; }));
    }
    start = end;
  }
  return absl::OkStatus();
}

// Local ids and the local CSC (partition.h: inner nodes, then HALO nodes in
// discovery order; inner rows, then HALO rows with entries by new eid).
template <typename Id>
void PartBuilder<Id>::BuildLocalGraph() {
  const int num_hops = o_.num_hops;
  nid_.reserve(b_ - a_);
  for (int64_t v = a_; v < b_; ++v) Discover(static_cast<Id>(v));
  // Inner rows: every in-edge of every inner node (hop 0: only inner
  // sources, compacted in place).
  if (num_hops == 0 && eid_.empty()) {
    eid_.resize(src_.size());
    std::iota(eid_.begin(), eid_.end(), Id{0});
  }
  indptr_.reserve(b_ - a_ + 1);
  indptr_.push_back(0);
  int64_t out = 0;
  for (int64_t v = a_; v < b_; ++v) {
    for (int64_t pos = r_.in_ptr[v] - ea_; pos < r_.in_ptr[v + 1] - ea_; ++pos) {
      const Id u = src_[pos];
      if (!Inner(u)) {
        ++cut_edges_;
        if (num_hops == 0) continue;
      }
      src_[out] = Discover(u);
      if (!eid_.empty()) eid_[out] = eid_[pos];
      ++out;
    }
    indptr_.push_back(out);
  }
  num_inner_edges_ = out;
  src_.resize(out);
  if (!eid_.empty()) eid_.resize(out);
  int64_t frontier_begin = b_ - a_, frontier_end = static_cast<int64_t>(nid_.size());

  // The inner nodes' out-edges to other parts (rows: their destinations'
  // new ids) wait until the in-edge hops are done, as DGL's
  // GetSubgraphWithHalo adds them: a destination that a later hop also
  // reaches is that hop's node, and the next hop expands it.
  std::vector<HaloEdge<Id>> out_edges = std::move(halo_);
  halo_.clear();
  // Hops 2...: in-edges from outside the part of the previous hop's new
  // nodes, met in (row, original edge id) order.
  for (int hop = 2; hop <= num_hops && frontier_begin < frontier_end; ++hop) {
    std::vector<HaloEdge<Id>> in_edges;
    SweepEdges(graph_, 0, graph_.num_edges(), [&](int64_t e, int64_t s, int64_t d) {
      const Id row = local_of_[r_.new_of_old[d]];
      if (row < frontier_begin || row >= frontier_end) return;
      const Id ns = r_.new_of_old[s];
      if (!Inner(ns)) in_edges.push_back({row, ns, r_.new_eid[e]});
    });
    std::stable_sort(in_edges.begin(), in_edges.end(),
                     [](const HaloEdge<Id>& x, const HaloEdge<Id>& y) { return x.row < y.row; });
    frontier_begin = static_cast<int64_t>(nid_.size());
    for (HaloEdge<Id>& h : in_edges) {
      h.src = Discover(h.src);
      halo_.push_back(h);
    }
    frontier_end = static_cast<int64_t>(nid_.size());
  }
  // Then the out-edges: a destination not seen yet takes its id in the order
  // of (first inner source, destination), as a walk of the inner nodes'
  // out-edges would meet it.
  std::vector<std::pair<Id, Id>> found;  // (first source, destination)
  for (const HaloEdge<Id>& h : out_edges) {
    if (local_of_[h.row] < 0 && first_src_[h.row] != std::numeric_limits<Id>::max()) {
      found.emplace_back(first_src_[h.row], h.row);
      first_src_[h.row] = std::numeric_limits<Id>::max();
    }
  }
  for (const HaloEdge<Id>& h : out_edges) first_src_[h.row] = std::numeric_limits<Id>::max();
  std::sort(found.begin(), found.end());
  for (const auto& [first, w] : found) Discover(w);
  found = {};
  for (HaloEdge<Id>& h : out_edges) {
    h.row = local_of_[h.row];
    h.src = static_cast<Id>(h.src - a_);
    halo_.push_back(h);
  }
  std::sort(halo_.begin(), halo_.end(), [](const HaloEdge<Id>& x, const HaloEdge<Id>& y) {
    return x.row != y.row ? x.row < y.row : x.eid < y.eid;
  });
  const int64_t num_local = static_cast<int64_t>(nid_.size());
  size_t next = 0;
  for (int64_t row = b_ - a_; row < num_local; ++row) {
    while (next < halo_.size() && halo_[next].row == row) ++next;
    indptr_.push_back(num_inner_edges_ + static_cast<int64_t>(next));
  }
}

template <typename Id>
Status PartBuilder<Id>::WriteLocalGraph(const std::string& graph_dir) {
  const int64_t num_local = static_cast<int64_t>(nid_.size()), num_inner = b_ - a_;
  const int64_t inner = num_inner_edges_;
  const int64_t num_edges = inner + static_cast<int64_t>(halo_.size());
  auto eid = [&](int64_t j) -> int64_t {
    return j < inner ? ea_ + (eid_.empty() ? j : eid_[j]) : halo_[j - inner].eid;
  };
  RETURN_IF_ERROR(
      WriteValues<int64_t>(graph_dir + "/nid.npy", num_local, [&](int64_t i) { return nid_[i]; }));
  RETURN_IF_ERROR(WriteValues<uint8_t>(graph_dir + "/inner_node.npy", num_local,
                                       [&](int64_t i) { return i < num_inner; }));
  RETURN_IF_ERROR(WriteValues<int64_t>(graph_dir + "/indptr.npy", num_local + 1,
                                       [&](int64_t i) { return indptr_[i]; }));
  RETURN_IF_ERROR(WriteValues<int64_t>(graph_dir + "/indices.npy", num_edges, [&](int64_t j) {
    return j < inner ? src_[j] : halo_[j - inner].src;
  }));
  RETURN_IF_ERROR(WriteValues<int64_t>(graph_dir + "/eid.npy", num_edges, eid));
  RETURN_IF_ERROR(WriteValues<uint8_t>(graph_dir + "/inner_edge.npy", num_edges,
                                       [&](int64_t j) { return j < inner; }));
  if (TypedLayout(graph_)) {  // DGL's _TYPE arrays: int16 per local node, int32 per local edge.
    RETURN_IF_ERROR(WriteValues<int16_t>(graph_dir + "/ntype.npy", num_local, [&](int64_t i) {
      return TypeOf(graph_.ntype_offsets, r_.orig_nids[nid_[i]]);
    }));
    RETURN_IF_ERROR(WriteValues<int32_t>(graph_dir + "/etype.npy", num_edges,
                                         [&](int64_t j) { return r_.RelationOfNewEid(eid(j)); }));
  }
  return absl::OkStatus();
}

template <typename Id>
Status PartBuilder<Id>::Run(const std::string& part_dir, NpyWriter* orig_eids, PartStats* stats) {
  const std::string graph_dir = part_dir + "/graph";
  const std::string node_dir = part_dir + "/node_feat";
  const std::string edge_dir = part_dir + "/edge_feat";
  for (const std::string& dir : {graph_dir, node_dir, edge_dir}) RETURN_IF_ERROR(MakeDirs(dir));
  if (TypedLayout(graph_)) {
    for (const std::string& ntype : graph_.ntypes) {
      RETURN_IF_ERROR(MakeDirs(node_dir + "/" + ntype));
    }
    for (const EdgeType& etype : graph_.etypes) {
      RETURN_IF_ERROR(MakeDirs(edge_dir + "/" + etype.Canonical()));
    }
  }
  bool edge_arrays = false;
  for (int t = 0; t < graph_.num_etypes(); ++t) {
    edge_arrays |= !TypeArrays(graph_, false, t).empty();
  }
  SweepPartEdges(/*need_orig=*/edge_arrays || orig_eids != nullptr);
  RETURN_IF_ERROR(WriteEdgeArrays(edge_dir, orig_eids));
  orig_ = {};
  RETURN_IF_ERROR(WriteNodeArrays(node_dir));
  BuildLocalGraph();
  RETURN_IF_ERROR(WriteLocalGraph(graph_dir));
  stats->inner_nodes = b_ - a_;
  stats->halo_nodes = static_cast<int64_t>(nid_.size()) - (b_ - a_);
  stats->inner_edges = eb_ - ea_;
  stats->local_edges = num_inner_edges_ + static_cast<int64_t>(halo_.size());
  stats->cut_edges = cut_edges_;
  return absl::OkStatus();
}

template <typename Id>
StatusOr<WrittenParts> Write(const Graph& graph, std::span<const int32_t> part,
                             const std::string& out_path, const WritePartsOptions& o) {
  const int num_parts = o.num_parts;
  WrittenParts result;
  Progress reshuffle_step("reshuffle ids", 0, "");
  const Reshuffled<Id> r = Reshuffle<Id>(graph, part, num_parts);
  result.reshuffle_seconds = reshuffle_step.Done();

  Progress write_step("build and write parts", num_parts, "parts");
  std::optional<NpyWriter> orig_eids;
  if (o.return_mapping) {
    ASSIGN_OR_RETURN(orig_eids, NpyWriter::Create(out_path + "/orig_eids.npy", DType::kInt64,
                                                  {graph.num_edges()}));
  }
  std::vector<Id> local_of(graph.num_nodes, -1);
  std::vector<Id> first_src(graph.num_nodes, std::numeric_limits<Id>::max());
  for (int p = 0; p < num_parts; ++p) {
    Stopwatch part_watch;
    const std::string part_dir = StrCat(out_path, "/", PartName(p));
    RETURN_IF_ERROR(RemoveAll(part_dir));
    PartStats stats;
    RETURN_IF_ERROR(PartBuilder<Id>(graph, r, o, p, local_of, first_src)
                        .Run(part_dir, orig_eids ? &*orig_eids : nullptr, &stats));
    result.edge_cut += stats.cut_edges;
    result.parts.push_back(stats);
    // Local CSC entries of inner rows (hop 0 drops the cut edges); the rest are HALO rows'.
    const int64_t inner_rows = stats.inner_edges - (o.num_hops == 0 ? stats.cut_edges : 0);
    spdlog::info(
        "part {}: {} inner + {} halo nodes, {} inner + {} halo edges, {:.2f} s, peak RSS {}", p,
        stats.inner_nodes, stats.halo_nodes, stats.inner_edges, stats.local_edges - inner_rows,
        part_watch.Seconds(), FormatBytes(PeakRssBytes()));
    write_step.Update(p + 1);
  }
  if (orig_eids) {
    RETURN_IF_ERROR(orig_eids->Close());
    RETURN_IF_ERROR(WriteValues<int64_t>(out_path + "/orig_nids.npy", graph.num_nodes,
                                         [&](int64_t v) { return r.orig_nids[v]; }));
  }
  result.write_seconds = write_step.Done();
  result.node_offsets = r.node_offsets;
  result.edge_offsets = r.edge_offsets;
  result.node_counts = r.node_counts;
  result.edge_counts = r.edge_counts;
  return result;
}

}  // namespace

StatusOr<WrittenParts> WriteParts(const Graph& graph, std::span<const int32_t> part,
                                  const std::string& out_path, const WritePartsOptions& options) {
  constexpr int64_t kNarrowLimit = std::numeric_limits<int32_t>::max();
  if (options.narrow_ids && graph.num_nodes < kNarrowLimit && graph.num_edges() < kNarrowLimit) {
    return Write<int32_t>(graph, part, out_path, options);
  }
  return Write<int64_t>(graph, part, out_path, options);
}

}  // namespace tessera
