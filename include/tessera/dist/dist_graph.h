// File: include/tessera/dist/dist_graph.h
//
// DistGraph (dgl.distributed.DistGraph) and the split of work among
// trainers (node_split, edge_split).
#ifndef TESSERA_INCLUDE_TESSERA_DIST_DIST_GRAPH_H_
#define TESSERA_INCLUDE_TESSERA_DIST_DIST_GRAPH_H_

#include <torch/types.h>

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tessera/dist/dist_tensor.h"
#include "tessera/partition/partition_book.h"

namespace tessera {
namespace dist {

struct AttrScheme {
  std::vector<int64_t> shape;  // Per row.
  torch::Dtype dtype;
};

class DistGraph {
 public:
  // Distributed: the graph the servers serve (Error if its name differs).
  // Standalone: loads `part_config`, which must have exactly one part.
  explicit DistGraph(const std::string& graph_name, const std::string& part_config = "");

  int64_t num_nodes() const;
  int64_t num_edges() const;
  // The node / edge data of the partition, and tensors created at run time.
  // On a heterograph with several node types (relations), ndata (edata) is
  // an Error naming them: use nodes(ntype).data(name), as in DGL.
  DistTensor ndata(const std::string& name) const;
  DistTensor edata(const std::string& name) const;
  std::map<std::string, AttrScheme> node_attr_schemes() const;
  std::map<std::string, AttrScheme> edge_attr_schemes() const;

  // ---- Types (DGL's DistGraph on heterographs). A homogeneous graph has the
  // node type "_N" and the relation "_N:_E:_N".
  const std::vector<std::string>& ntypes() const;
  std::vector<std::string> etypes() const;  // Relation names, in id order.
  const std::vector<EdgeType>& canonical_etypes() const;
  // Node count of a type; edge count of a relation (name or "src:rel:dst";
  // an ambiguous name is an Error naming the candidates).
  int64_t num_nodes(const std::string& ntype) const;
  int64_t num_edges(const std::string& etype) const;
  int get_ntype_id(const std::string& ntype) const;
  int get_etype_id(const std::string& etype) const;
  EdgeType to_canonical_etype(const std::string& etype) const;
  // The arrays of one node type or relation: g.nodes("paper").data("feat"),
  // rows addressed by per-type ids.
  class TypeView {
   public:
    DistTensor data(const std::string& name) const;
    std::map<std::string, AttrScheme> schemes() const;
    const std::string& type_name() const { return type_name_; }

   private:
    friend class DistGraph;
    TypeView(const DistGraph* graph, bool node, int type, std::string type_name)
        : graph_(graph), node_(node), type_(type), type_name_(std::move(type_name)) {}
    const DistGraph* graph_;
    bool node_;
    int type_;
    std::string type_name_;
  };
  TypeView nodes(const std::string& ntype) const;
  TypeView edges(const std::string& etype) const;
  // Homogeneous ids <-> (type id, per-type id), for every element.
  std::pair<torch::Tensor, torch::Tensor> map_to_per_ntype(const torch::Tensor& nids) const;
  std::pair<torch::Tensor, torch::Tensor> map_to_per_etype(const torch::Tensor& eids) const;
  torch::Tensor map_to_homo_nid(const torch::Tensor& ids, const std::string& ntype) const;
  torch::Tensor map_to_homo_eid(const torch::Tensor& ids, const std::string& etype) const;
  const PartitionBook& partition_book() const;
  const std::string& graph_name() const { return graph_name_; }
  // This trainer's rank among all trainers.
  int rank() const;
  // Waits for every trainer (Error if one died or left).
  void barrier() const;

  // Endpoints (src, dst) of edges, in order.
  std::pair<torch::Tensor, torch::Tensor> find_edges(const torch::Tensor& eids) const;
  // DGL's find_edges(eids, etype): per-relation edge ids of `etype` in, the
  // endpoints' per-type ids (of its source and destination types) out.
  std::pair<torch::Tensor, torch::Tensor> find_edges(const torch::Tensor& eids,
                                                     const std::string& etype) const;
  // Degrees of nodes (undefined tensor: every node), in order.
  torch::Tensor in_degrees(const torch::Tensor& nids = {}) const;
  torch::Tensor out_degrees(const torch::Tensor& nids = {}) const;
  // DGL's in_degrees(v, etype) / out_degrees(u, etype): edges of relation
  // `etype` only, into its destination (out of its source) type's nodes,
  // given in per-type ids (undefined: every node of that type).
  torch::Tensor in_degrees(const torch::Tensor& nids, const std::string& etype) const;
  torch::Tensor out_degrees(const torch::Tensor& nids, const std::string& etype) const;

  kvstore::Services& store() const;  // For the loaders.

 private:
  DistTensor Data(const std::string& prefix, const std::string& name) const;
  DistTensor TypeData(bool node, int type, const std::string& name) const;
  std::map<std::string, AttrScheme> Schemes(const std::string& prefix) const;
  std::map<std::string, AttrScheme> TypeSchemes(bool node, int type) const;
  std::shared_ptr<Context> context_;
  std::string graph_name_;
};

// ------------------------------------------------------------ splitting work

struct SplitOptions {
  bool force_even = true;
  // The trainer_id array of a partition made with num_trainers_per_machine
  // (one per node or edge): ids go to their trainer's group first.
  torch::Tensor trainer_ids;
  int rank = -1;          // Default: this trainer's rank.
  int num_trainers = -1;  // Default: the number of trainers of the job.
  // DGL's ntype / etype: the node type (relation) the mask or ids are of;
  // the result is per-type ids. Empty: the graph's only type. A DistTensor
  // mask brings its own type.
  std::string type;
};

// This trainer's share of the nodes selected by `nodes` (a bool/uint8 mask
// over all nodes, or node ids): every id goes to exactly one trainer, counts
// differ by at most one (force_even), own-partition ids first.
torch::Tensor node_split(const torch::Tensor& nodes, const PartitionBook& book,
                         const SplitOptions& options = {});
torch::Tensor edge_split(const torch::Tensor& edges, const PartitionBook& book,
                         const SplitOptions& options = {});
// The same with a mask stored as a DistTensor (read in pieces).
torch::Tensor node_split(const DistTensor& mask, const PartitionBook& book,
                         const SplitOptions& options = {});
torch::Tensor edge_split(const DistTensor& mask, const PartitionBook& book,
                         const SplitOptions& options = {});

}  // namespace dist
}  // namespace tessera

#endif  // TESSERA_INCLUDE_TESSERA_DIST_DIST_GRAPH_H_
