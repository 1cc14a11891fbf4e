#include "tessera/partition/load_partition.h"

#include <algorithm>
#include <filesystem>
#include <vector>

#include "src/graph/npy.h"
#include "tessera/base/file.h"
#include "tessera/base/strings.h"

namespace tessera {
namespace {

StatusOr<Array> ReadTyped(const std::string& path, DType dtype, int64_t rows) {
  ASSIGN_OR_RETURN(Array array, ReadNpy(path));
  if (array.dtype() != dtype || array.ndim() != 1 || (rows >= 0 && array.rows() != rows)) {
    return absl::InvalidArgumentError(StrCat(path, ": expected ", DTypeName(dtype), "[",
                                             rows >= 0 ? StrCat(rows) : "n", "], found ",
                                             array.Describe()));
  }
  return array;
}

Status Corrupt(const std::string& path, std::string_view why) {
  return absl::DataLossError(StrCat(path, ": inconsistent partition data: ", why));
}

Status ValidateGraph(const LocalPartition& lp, const std::string& dir) {
  const int64_t n_local = lp.num_local_nodes();
  const int64_t n_inner = lp.num_inner_nodes();
  auto [start, end] = lp.book.NodeRange(lp.part_id);
  auto nid = lp.nids();
  auto inner = lp.inner_node.span<uint8_t>();
  if (n_local < n_inner) return Corrupt(dir + "/nid.npy", "fewer local nodes than inner nodes");
  for (int64_t i = 0; i < n_local; ++i) {
    bool expect_inner = i < n_inner;
    if ((inner[i] != 0) != expect_inner) {
      return Corrupt(dir + "/inner_node.npy", StrCat("entry ", i, " has the wrong flag"));
    }
    if (expect_inner
            ? nid[i] != start + i
            : (nid[i] < 0 || nid[i] >= lp.book.num_nodes() || (nid[i] >= start && nid[i] < end))) {
      return Corrupt(dir + "/nid.npy", StrCat("entry ", i, " = ", nid[i], " is not a valid ",
                                              expect_inner ? "inner" : "HALO", " node id"));
    }
  }
  {  // A HALO node once: a repeated one would take part twice in training.
    std::vector<int64_t> halo(nid.begin() + n_inner, nid.end());
    std::sort(halo.begin(), halo.end());
    if (auto twice = std::adjacent_find(halo.begin(), halo.end()); twice != halo.end()) {
      return Corrupt(dir + "/nid.npy", StrCat("HALO node ", *twice, " appears twice"));
    }
  }
  auto indptr = lp.indptrs();
  auto indices = lp.src_locals();
  auto eid = lp.eids();
  auto inner_edge = lp.inner_edge.span<uint8_t>();
  const int64_t m = lp.num_local_edges();
  if (indptr[0] != 0 || indptr[n_local] != m) {
    return Corrupt(dir + "/indptr.npy", "does not span indices.npy");
  }
  auto [estart, eend] = lp.book.EdgeRange(lp.part_id);
  for (int64_t v = 0; v < n_local; ++v) {
    if (indptr[v + 1] < indptr[v]) return Corrupt(dir + "/indptr.npy", "is not monotone");
    for (int64_t k = indptr[v]; k < indptr[v + 1]; ++k) {
      if (indices[k] < 0 || indices[k] >= n_local) {
        return Corrupt(dir + "/indices.npy",
                       StrCat("entry ", k, " = ", indices[k], " is not a local node"));
      }
      bool owned = eid[k] >= estart && eid[k] < eend;
      if (eid[k] < 0 || eid[k] >= lp.book.num_edges() || (inner_edge[k] != 0) != owned ||
          (inner_edge[k] != 0) != (v < n_inner)) {
        return Corrupt(dir + "/eid.npy", StrCat("entry ", k, " = ", eid[k],
                                                " disagrees with inner_edge and the edge map"));
      }
    }
  }
  // Every edge once: a bit per owned edge, the others sorted.
  std::vector<bool> owned(static_cast<size_t>(eend - estart));
  std::vector<int64_t> others;
  for (int64_t k = 0; k < m; ++k) {
    if (eid[k] < estart || eid[k] >= eend) {
      others.push_back(eid[k]);
    } else if (owned[static_cast<size_t>(eid[k] - estart)]) {
      return Corrupt(dir + "/eid.npy", StrCat("edge ", eid[k], " appears twice"));
    } else {
      owned[static_cast<size_t>(eid[k] - estart)] = true;
    }
  }
  std::sort(others.begin(), others.end());
  if (auto twice = std::adjacent_find(others.begin(), others.end()); twice != others.end()) {
    return Corrupt(dir + "/eid.npy", StrCat("edge ", *twice, " appears twice"));
  }
  return absl::OkStatus();
}

// The type arrays agree with the partition book's ranges.
Status ValidateTypes(const LocalPartition& lp, const std::string& dir) {
  auto nid = lp.nids();
  auto ntype = lp.ntype.span<int16_t>();
  for (size_t i = 0; i < nid.size(); ++i) {
    if (ntype[i] != lp.book.MapToPerNtype(nid[i]).first) {
      return Corrupt(dir + "/ntype.npy", StrCat("entry ", i, " = ", ntype[i], " is not the type ",
                                                "the node map gives node ", nid[i]));
    }
  }
  auto eid = lp.eids();
  auto etype = lp.etype.span<int32_t>();
  for (size_t k = 0; k < eid.size(); ++k) {
    if (etype[k] != lp.book.MapToPerEtype(eid[k]).first) {
      return Corrupt(dir + "/etype.npy", StrCat("entry ", k, " = ", etype[k], " is not the ",
                                                "relation the edge map gives edge ", eid[k]));
    }
  }
  return absl::OkStatus();
}

// Rows the part holds of an array: its nodes (edges) of the array's type.
StatusOr<std::map<std::string, Array>> ReadArrays(const LocalPartition& lp, bool node,
                                                  const std::string& dir,
                                                  const std::vector<std::string>& names) {
  std::map<std::string, Array> arrays;
  for (const std::string& name : names) {
    auto type = node ? lp.config.NodeArrayType(name) : lp.config.EdgeArrayType(name);
    RETURN_IF_ERROR(type.status());
    const int t = type->first, p = lp.part_id;
    const int64_t rows =
        node ? lp.book.NodeTypeRange(t, p).second - lp.book.NodeTypeRange(t, p).first
             : lp.book.EdgeTypeRange(t, p).second - lp.book.EdgeTypeRange(t, p).first;
    std::string path = StrCat(dir, "/", name, ".npy");
    ASSIGN_OR_RETURN(Array array, ReadNpy(path));
    if (array.ndim() < 1 || array.rows() != rows) {
      return absl::InvalidArgumentError(
          StrCat(path, ": has ", array.Describe(), " but the part owns ", rows, " rows"));
    }
    arrays.emplace(name, std::move(array));
  }
  return arrays;
}

// The node and edge arrays `options` asks for.
StatusOr<LocalPartition> LoadArrays(LocalPartition lp, const LoadOptions& options) {
  if (options.load_node_feats) {
    ASSIGN_OR_RETURN(lp.node_data, ReadArrays(lp, true, lp.config.NodeFeatDir(lp.part_id),
                                              lp.config.node_feat_names));
  }
  if (options.load_edge_feats) {
    ASSIGN_OR_RETURN(lp.edge_data, ReadArrays(lp, false, lp.config.EdgeFeatDir(lp.part_id),
                                              lp.config.edge_feat_names));
  }
  return lp;
}

}  // namespace

StatusOr<LocalPartition> LoadPartition(const std::string& config_path, int part_id,
                                       const LoadOptions& options) {
  LocalPartition lp;
  ASSIGN_OR_RETURN(lp.config, ReadPartitionConfig(config_path));
  if (part_id < 0 || part_id >= lp.config.num_parts) {
    return absl::InvalidArgumentError(StrCat(config_path, ": part ", part_id, " does not exist (",
                                             lp.config.num_parts, " parts)"));
  }
  lp.part_id = part_id;
  ASSIGN_OR_RETURN(lp.book, lp.config.Book(part_id));
  const std::string dir = lp.config.PartGraphDir(part_id);
  if (std::error_code ec; std::filesystem::is_regular_file(dir, ec)) {
    // DGL's partition_graph writes the same config with a file here.
    return absl::InvalidArgumentError(
        StrCat(config_path, ": part ", part_id, "'s graph ", dir,
               " is a file, not tessera's folder of arrays: the partition was written by DGL "
               "(its binary format); partition the graph with tessera.partition_graph or "
               "`tessera partition`"));
  }
  if (!options.load_graph) return LoadArrays(std::move(lp), options);
  ASSIGN_OR_RETURN(lp.nid, ReadTyped(dir + "/nid.npy", DType::kInt64, -1));
  const int64_t n_local = lp.nid.rows();
  ASSIGN_OR_RETURN(lp.inner_node, ReadTyped(dir + "/inner_node.npy", DType::kUInt8, n_local));
  ASSIGN_OR_RETURN(lp.indptr, ReadTyped(dir + "/indptr.npy", DType::kInt64, n_local + 1));
  ASSIGN_OR_RETURN(lp.indices, ReadTyped(dir + "/indices.npy", DType::kInt64, -1));
  const int64_t m_local = lp.indices.rows();
  ASSIGN_OR_RETURN(lp.eid, ReadTyped(dir + "/eid.npy", DType::kInt64, m_local));
  ASSIGN_OR_RETURN(lp.inner_edge, ReadTyped(dir + "/inner_edge.npy", DType::kUInt8, m_local));
  RETURN_IF_ERROR(ValidateGraph(lp, dir));
  if (lp.config.typed()) {
    ASSIGN_OR_RETURN(lp.ntype, ReadTyped(dir + "/ntype.npy", DType::kInt16, n_local));
    ASSIGN_OR_RETURN(lp.etype, ReadTyped(dir + "/etype.npy", DType::kInt32, m_local));
    RETURN_IF_ERROR(ValidateTypes(lp, dir));
  }
  return LoadArrays(std::move(lp), options);
}

}  // namespace tessera
