// Step 5 of DistPartitionGraph: the files of a rank's parts and the id
// mappings (dist_internal.h), in the layout of docs/partition-format.md.
#include <algorithm>
#include <cstring>

#include "src/dist_partition/dist_internal.h"
#include "src/dist_partition/packing.h"
#include "src/graph/npy.h"
#include "tessera/base/file.h"
#include "tessera/base/strings.h"

namespace tessera::dist_partition::internal {
namespace {

// Rows per piece when rank 0 gathers a mapping.
constexpr int64_t kMappingPiece = 1 << 20;

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

// This rank's rows of one array: rows [lo, hi) of `array`, which this rank
// reads, moved to their owners, in pieces of at most comm.round_bytes(), so that
// besides the owned rows only one piece's copies exist. `dest` is the owner
// rank of every read row; `arrival` lists, for every owned row in the order
// the owners keep them, its original id, and `read_bounds` (ranks + 1) the
// original ids every rank reads: a rank's rows arrive in increasing original
// id, so the k-th row from rank r goes to the k-th owned row (by original id)
// at or above read_bounds[r].
StatusOr<Array> MoveRows(Comm& comm, const ChunkedArray& array, int64_t lo, int64_t hi,
                         std::span<const int32_t> dest, std::span<const int64_t> arrival,
                         std::span<const int64_t> read_bounds) {
  const int num_ranks = comm.size();
  std::vector<int64_t> shape = array.row_shape;
  shape.insert(shape.begin(), static_cast<int64_t>(arrival.size()));
  Array rows = Array::Empty(array.dtype, shape);
  const int64_t row_bytes = static_cast<int64_t>(rows.row_bytes());
  // Rows of zero bytes (a row shape with a 0): nothing moves. Every rank
  // has the same row shape, so every rank skips the exchanges alike.
  if (row_bytes == 0) return rows;
  std::vector<int64_t> order(arrival.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int64_t>(i);
  std::sort(order.begin(), order.end(),
            [&](int64_t x, int64_t y) { return arrival[x] < arrival[y]; });
  std::vector<int64_t> next(num_ranks), limit(num_ranks);  // Positions in `order`.
  for (int r = 0; r < num_ranks; ++r) {
    auto at = [&](int64_t id) {
      return std::partition_point(order.begin(), order.end(),
                                  [&](int64_t k) { return arrival[k] < id; }) -
             order.begin();
    };
    next[r] = at(read_bounds[r]);
    limit[r] = at(read_bounds[r + 1]);
  }
  const int64_t per_round =
      std::max<int64_t>(1, comm.round_bytes() / std::max<int64_t>(1, row_bytes));
  ASSIGN_OR_RETURN(int64_t rounds, AllMax(comm, (hi - lo + per_round - 1) / per_round));
  char* out = static_cast<char*>(rows.mutable_data());
  Status read_status;
  bool fits = true;
  for (int64_t round = 0; round < rounds; ++round) {
    const int64_t b = std::min(hi, lo + round * per_round), e = std::min(hi, b + per_round);
    std::vector<char> packed;
    std::vector<int64_t> bytes(num_ranks, 0);
    if (e > b && read_status.ok()) {  // After a failed read, this rank sends nothing.
      StatusOr<Array> piece = ReadRows(array, b, e);
      if (piece.ok()) {
        Packing packing = PackBy(dest.subspan(b - lo, e - b), num_ranks);
        packed.resize(packing.order.size() * row_bytes);
        for (size_t k = 0; k < packing.order.size(); ++k) {
          piece->CopyRow(packing.order[k], packed.data() + k * row_bytes);
        }
        for (int r = 0; r < num_ranks; ++r) bytes[r] = packing.counts[r] * row_bytes;
      } else {
        read_status = piece.status();
      }
    }
    ASSIGN_OR_RETURN(Received<char> got, Exchange<char>(comm, packed, bytes));
    Free(packed);
    const char* from = got.data.data();
    for (int r = 0; r < num_ranks; ++r) {
      for (int64_t k = 0; k < got.counts[r] / row_bytes; ++k, from += row_bytes) {
        if (next[r] >= limit[r]) {
          fits = false;
          continue;
        }
        std::memcpy(out + order[next[r]++] * row_bytes, from, row_bytes);
      }
    }
  }
  RETURN_IF_ERROR(Agree(comm, read_status));
  for (int r = 0; r < num_ranks && fits; ++r) fits = next[r] == limit[r];
  RETURN_IF_ERROR(Agree(comm, fits ? absl::OkStatus()
                                   : absl::InternalError(StrCat(array.name,
                                                                ": owned rows and received "
                                                                "rows disagree"))));
  return rows;
}

Status WriteRowSlice(const std::string& path, const Array& rows, int64_t begin, int64_t end) {
  std::vector<int64_t> shape = rows.shape();
  shape[0] = end - begin;
  ASSIGN_OR_RETURN(NpyWriter writer, NpyWriter::Create(path, rows.dtype(), shape));
  if (end > begin) {
    RETURN_IF_ERROR(writer.AppendRows(
        static_cast<const char*>(rows.data()) + begin * rows.row_bytes(), end - begin));
  }
  return writer.Close();
}

// Every rank's `local` rows go to rows [offset, offset + size) of the int64
// .npy file `path` of `total` rows, written by rank 0 as the pieces arrive.
Status GatherToFile(Comm& comm, const std::string& path, std::span<const int64_t> local,
                    int64_t offset, int64_t total) {
  ASSIGN_OR_RETURN(std::vector<int64_t> offsets, AllGatherValue(comm, offset));
  StatusOr<NpyWriter> writer = absl::UnknownError("written by rank 0");
  Status status;
  if (comm.rank() == 0) {
    writer = NpyWriter::Create(path, DType::kInt64, {total}, NpyWriter::Mode::kPositional);
    status = writer.status();
  }
  const int64_t size = static_cast<int64_t>(local.size());
  ASSIGN_OR_RETURN(int64_t rounds, AllMax(comm, (size + kMappingPiece - 1) / kMappingPiece));
  std::vector<int64_t> done(comm.size(), 0);
  for (int64_t round = 0; round < rounds; ++round) {
    const int64_t at = round * kMappingPiece;
    const int64_t n = std::clamp<int64_t>(size - at, 0, kMappingPiece);
    std::vector<int64_t> counts(comm.size(), 0);
    counts[0] = n;
    ASSIGN_OR_RETURN(Received<int64_t> got,
                     Exchange<int64_t>(comm, local.subspan(std::min(at, size), n), counts));
    if (comm.rank() != 0 || !status.ok()) continue;
    int64_t from = 0;
    for (int r = 0; r < comm.size(); ++r) {
      if (got.counts[r] > 0) {
        status = writer->WriteRowsAt(offsets[r] + done[r], got.data.data() + from, got.counts[r]);
        if (!status.ok()) break;
      }
      done[r] += got.counts[r];
      from += got.counts[r];
    }
  }
  if (comm.rank() == 0 && status.ok()) status = writer->Close();
  return Agree(comm, status);
}

}  // namespace

Status WriteLocalGraph(const std::string& graph_dir, const LocalGraph& g, const IdLayout& ids,
                       bool typed) {
  RETURN_IF_ERROR(MakeDirs(graph_dir));
  std::vector<uint8_t> inner_node(g.nid.size(), 0);
  std::fill(inner_node.begin(), inner_node.begin() + g.num_inner, 1);
  RETURN_IF_ERROR(WriteValues(graph_dir + "/nid.npy", g.nid));
  RETURN_IF_ERROR(WriteValues(graph_dir + "/inner_node.npy", inner_node));
  RETURN_IF_ERROR(WriteValues(graph_dir + "/indptr.npy", g.indptr));
  RETURN_IF_ERROR(WriteValues(graph_dir + "/indices.npy", g.indices));
  RETURN_IF_ERROR(WriteValues(graph_dir + "/eid.npy", g.eid));
  RETURN_IF_ERROR(WriteValues(graph_dir + "/inner_edge.npy", g.inner_edge));
  if (!typed) return absl::OkStatus();
  std::vector<int16_t> ntype(g.nid.size());
  for (size_t i = 0; i < g.nid.size(); ++i)
    ntype[i] = static_cast<int16_t>(ids.NodeTypeOf(g.nid[i]));
  RETURN_IF_ERROR(WriteValues(graph_dir + "/ntype.npy", ntype));
  std::vector<int32_t> etype(g.eid.size());
  for (size_t k = 0; k < g.eid.size(); ++k) etype[k] = ids.RelationOf(g.eid[k]);
  return WriteValues(graph_dir + "/etype.npy", etype);
}

StatusOr<ArrayNames> WriteArrays(Comm& comm, const ChunkedGraph& graph, const Layout& layout,
                                 const Shuffled& s, const std::vector<std::string>& part_dirs) {
  const bool typed = graph.ntypes.size() > 1 || graph.relations.size() > 1;
  const int first_part = layout.first_part(), end_part = layout.end_part();
  ArrayNames names;
  Status st;
  for (const std::string& dir : part_dirs) {
    for (const char* sub : {"/node_feat", "/edge_feat"}) {
      if (st.ok()) st = MakeDirs(dir + sub);
    }
    for (size_t t = 0; typed && t < graph.ntypes.size(); ++t) {
      if (st.ok()) st = MakeDirs(dir + "/node_feat/" + graph.ntypes[t]);
    }
    for (size_t t = 0; typed && t < graph.relations.size(); ++t) {
      if (st.ok()) st = MakeDirs(dir + "/edge_feat/" + graph.relations[t].type.Canonical());
    }
  }
  RETURN_IF_ERROR(Agree(comm, st));
  for (bool node : {true, false}) {
    const auto& per_type = node ? graph.node_data : graph.edge_data;
    const std::vector<int64_t>& type_offsets = node ? graph.ntype_offsets : graph.etype_offsets;
    // What this rank read: home nodes, or read edge positions.
    const int64_t read_begin = node ? layout.home_begin() : layout.reads[layout.rank];
    const int64_t read_end = node ? layout.home_end() : layout.reads[layout.rank + 1];
    for (size_t t = 0; t < per_type.size(); ++t) {
      const std::string type = node ? graph.ntypes[t] : graph.relations[t].type.Canonical();
      // The owned rows of type t in part p: new ids [first, first + count).
      auto block = [&](int p) -> std::pair<int64_t, int64_t> {
        const int type_id = static_cast<int>(t);
        return node ? std::pair{s.ids.NodeBlock(p, type_id),
                                s.ids.node_counts[p * s.ids.num_ntypes + t]}
                    : std::pair{s.ids.EdgeBlock(p, type_id),
                                s.ids.edge_counts[p * s.ids.num_etypes + t]};
      };
      // trainer_id: the owned rows of type t, part by part in new-id order.
      auto write_trainers = [&]() -> Status {
        if (!s.has_trainers) return absl::OkStatus();
        const std::vector<int32_t>& of = node ? s.node_trainer : s.edge_trainer;
        const int64_t begin = node ? s.nodes.begin : s.edges.begin;
        Status written;
        for (int p = first_part; p < end_part && written.ok(); ++p) {
          const auto [b, c] = block(p);
          std::vector<int64_t> values(of.begin() + (b - begin), of.begin() + (b - begin + c));
          written =
              WriteValues(StrCat(part_dirs[p - first_part], node ? "/node_feat/" : "/edge_feat/",
                                 typed ? type + "/" : "", "trainer_id.npy"),
                          values);
        }
        RETURN_IF_ERROR(Agree(comm, written));
        (node ? names.node : names.edge).push_back(typed ? type + "/trainer_id" : "trainer_id");
        return absl::OkStatus();
      };
      if (per_type[t].empty()) {
        RETURN_IF_ERROR(write_trainers());
        continue;
      }
      const int64_t lo = std::clamp(read_begin, type_offsets[t], type_offsets[t + 1]);
      const int64_t hi = std::clamp(read_end, type_offsets[t], type_offsets[t + 1]);
      std::vector<int32_t> dest(hi - lo);
      for (int64_t i = lo; i < hi; ++i) {
        dest[i - lo] =
            node ? layout.RankOfPart(s.home_part[i - read_begin]) : s.edge_dest[i - read_begin];
      }
      // The owned rows of type t, part by part in new-id order, and the
      // original id of each.
      std::vector<int64_t> arrival, bounds{0};
      for (int p = first_part; p < end_part; ++p) {
        const auto [b, c] = block(p);
        for (int64_t id = b; id < b + c; ++id) {
          arrival.push_back(node ? s.nodes.orig[id - s.nodes.begin]
                                 : s.edges.orig[id - s.edges.begin]);
        }
        bounds.push_back(bounds.back() + c);
      }
      // Original ids (as `arrival`) each rank reads.
      const std::vector<int64_t>& rank_bounds = node ? layout.home : layout.reads;
      for (const ChunkedArray& array : per_type[t]) {
        ASSIGN_OR_RETURN(Array rows, MoveRows(comm, array, lo - type_offsets[t],
                                              hi - type_offsets[t], dest, arrival, rank_bounds));
        const std::string name = typed ? type + "/" + array.name : array.name;
        Status written;
        for (int p = first_part; p < end_part && written.ok(); ++p) {
          const std::string path =
              StrCat(part_dirs[p - first_part], node ? "/node_feat/" : "/edge_feat/", name, ".npy");
          written = WriteRowSlice(path, rows, bounds[p - first_part], bounds[p - first_part + 1]);
        }
        RETURN_IF_ERROR(Agree(comm, written));
        (node ? names.node : names.edge).push_back(name);
      }
      RETURN_IF_ERROR(write_trainers());
    }
  }
  return names;
}

Status SpreadTrainers(Comm& comm, const Layout& layout, std::span<const int32_t> home_trainer,
                      Shuffled& s) {
  s.has_trainers = true;
  ASSIGN_OR_RETURN(s.node_trainer, LookUp<int32_t>(comm, layout, s.nodes.orig, home_trainer));
  const OwnedEdges& e = s.edges;
  s.edge_trainer.assign(e.end - e.begin, -1);
  for (size_t row = 0; row + 1 < e.in_ptr.size(); ++row) {
    for (int64_t k = e.in_ptr[row]; k < e.in_ptr[row + 1]; ++k) {
      const int64_t at = e.eid[k] - e.begin;
      if (at < 0 || at >= e.end - e.begin) {
        return absl::InternalError(StrCat("edge ", e.eid[k], " is not owned here"));
      }
      s.edge_trainer[at] = s.node_trainer[row];
    }
  }
  return absl::OkStatus();
}

Status WriteMappings(Comm& comm, const Shuffled& s, int64_t num_nodes, int64_t num_edges,
                     const std::string& out_path) {
  RETURN_IF_ERROR(
      GatherToFile(comm, out_path + "/orig_nids.npy", s.nodes.orig, s.nodes.begin, num_nodes));
  return GatherToFile(comm, out_path + "/orig_eids.npy", s.edges.orig, s.edges.begin, num_edges);
}

}  // namespace tessera::dist_partition::internal
