// File: include/tessera/dist/dataloader.h
//
// Blocks, mini-batches and the loaders that sample them ahead
// (dgl.distributed.dist_dataloader).
#ifndef TESSERA_INCLUDE_TESSERA_DIST_DATALOADER_H_
#define TESSERA_INCLUDE_TESSERA_DIST_DATALOADER_H_

#include <torch/types.h>

#include <chrono>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "tessera/dist/graph_services.h"
#include "tessera/loader/epoch.h"
#include "tessera/loader/pipeline.h"

namespace tessera {
namespace dist {

// ------------------------------------------------------------ mini-batches

// One message-passing layer (DGL's block), typed. Per node type t,
// src_nodes[t] are its sources, the first num_dst_nodes(t) of them its
// destinations; per relation r, edges[r] is a CSR over the destinations of
// its destination type, with the index of each edge's source among its
// source type's src_nodes. Types and relations in the partition book's id
// order. Blocks of a typed loader carry per-type node ids and per-relation
// edge ids (as DGL's srcdata / edata[dgl.EID]; homo_src_nodes and
// DistGraph::map_to_homo_eid give global ones). An untyped block (a loader
// over global ids, or a graph of one type and one relation) has one type
// and one relation of global ids: the graph's names on a graph of one type
// and one relation, "_N" and ("_N", "_E", "_N") on a typed graph.
struct Block {
  struct Relation {
    int src_type = 0, dst_type = 0;  // Into ntypes.
    torch::Tensor indptr;            // int64 [num_dst_nodes(dst_type) + 1]
    torch::Tensor indices;           // int64 [num_edges]: index into src_nodes[src_type].
    torch::Tensor eids;              // int64 [num_edges]: edge ids.
    int64_t num_edges() const { return indices.size(0); }
    // The destination index of each edge (for scatter/index_add aggregation).
    torch::Tensor edge_dst() const;
  };
  std::vector<std::string> ntypes;
  std::vector<EdgeType> canonical_etypes;
  std::vector<torch::Tensor> src_nodes;       // Per type: int64, destinations first.
  std::vector<int64_t> dst_counts;            // Per type: the number of destinations.
  std::vector<torch::Tensor> homo_src_nodes;  // Per type: global ids of src_nodes (untyped: them).
  std::vector<Relation> edges;                // Per relation.
  // Node data pulled by the loader's sampler threads, ahead of use (DGL's
  // prefetching; NeighborSampler::prefetch_node_feats / prefetch_labels):
  // the first block's srcdata holds rows of its source nodes (a batch's
  // input nodes), the last block's dstdata rows of its destinations (the
  // seeds). Untyped blocks; empty unless asked for.
  std::map<std::string, torch::Tensor> srcdata, dstdata;

  // An untyped block: int64 `src_nodes` (global ids; the first
  // indptr.size(0) - 1 are the destinations), the CSR over destinations
  // and the edge ids. Error if the sizes disagree.
  static Block Untyped(torch::Tensor src_nodes, torch::Tensor indptr, torch::Tensor indices,
                       torch::Tensor eids);
  // Types by name; "" is the only one (Error if there are several, or no
  // such type). Relations by name (plain when unambiguous) or "src:rel:dst".
  int ntype_id(const std::string& ntype = "") const;
  int etype_id(const std::string& etype = "") const;
  int64_t num_src_nodes(const std::string& ntype = "") const;
  int64_t num_dst_nodes(const std::string& ntype = "") const;
  torch::Tensor dst_nodes(const std::string& ntype = "") const;  // A view of src_nodes.
  int64_t num_edges() const;                                     // All relations.
  int64_t num_edges(const std::string& etype) const;
  const Relation& edges_of(const std::string& etype = "") const;
};

// Multi-layer neighbour sampling (dgl.dataloading.NeighborSampler).
struct NeighborSampler {
  std::vector<int64_t> fanouts;  // Per layer, input layer first; -1: all neighbours, 0: none.
  // Instead of fanouts (DGL's list of dicts): per layer, every relation's
  // fanout (see FanoutMap). On a graph with several relations an int fanout
  // is already per relation.
  std::vector<FanoutMap> etype_fanouts;
  std::string edge_dir = "in";
  bool replace = false;
  std::string prob;  // float32 edge tensor of weights; "": uniform.
  // Node tensors (g.ndata names) the sampler threads pull for each batch
  // while the trainer computes the previous one (DGL's NeighborSampler
  // arguments of these names): prefetch_node_feats at the input nodes into
  // blocks.front().srcdata, prefetch_labels at the seeds into
  // blocks.back().dstdata. Homogeneous node and edge loaders; an unknown
  // name is an Error when the loader is made.
  std::vector<std::string> prefetch_node_feats, prefetch_labels;
};

// Node classification: seeds and the nodes whose features the first layer
// reads, per type of the blocks (one tensor for untyped blocks).
struct MiniBatch {
  std::vector<torch::Tensor> input_nodes;  // Per type: blocks.front().src_nodes.
  // Per type: the output nodes, in batch order (a view of the last block's
  // destinations, as DGL's blocks[-1].dstdata[NID]).
  std::vector<torch::Tensor> seeds;
  std::vector<Block> blocks;  // Input layer first.
};

// The positive (or negative) pairs of a link-prediction batch (DGL's
// pair_graph): per node type, the batch's nodes (every endpoint of both
// pair graphs, ascending; the last block's destinations); per relation,
// pairs as indices into its source type's and its destination type's
// nodes. The same types and relations as the blocks.
struct PairGraph {
  struct Relation {
    torch::Tensor src, dst;  // int64 [num_pairs]
    // Positive graph: the id of each pair's edge (per relation when typed,
    // as DGL's edata[EID]); negative graph: empty.
    torch::Tensor eids;
  };
  std::vector<std::string> ntypes;
  std::vector<EdgeType> canonical_etypes;
  std::vector<torch::Tensor> nodes;  // Per type (DGL's ndata[NID]).
  std::vector<Relation> edges;       // Per relation.

  int64_t num_nodes(const std::string& ntype = "") const;  // "" : the only type.
  int64_t num_edges() const;                               // All relations.
  int64_t num_edges(const std::string& etype) const;
  const Relation& edges_of(const std::string& etype = "") const;
};

// Link prediction: the positive pairs are the batch's edges, the negative
// pairs k per positive edge of each relation, in order (the source kept,
// the destination uniform over the relation's destination type); both over
// the same nodes, which are the seeds of the blocks.
struct EdgeMiniBatch {
  std::vector<torch::Tensor> input_nodes;  // Per type: blocks.front().src_nodes.
  torch::Tensor eids;                      // The batch's edges, global ids, in batch order.
  PairGraph positive, negative;
  std::vector<Block> blocks;  // Input layer first.
};

struct LoaderOptions {
  int64_t batch_size = 1;
  bool shuffle = false;
  bool drop_last = false;
  uint64_t seed = 0;         // Shuffling and sampling: batch b of epoch e is reproducible.
  int num_workers = -1;      // Sampler threads; -1: Context::num_samplers().
  int prefetch = 0;          // Batches sampled ahead; 0: two per worker.
  bool even_batches = true;  // Every trainer gets the batch count of the largest.
  double timeout_s = 600;    // Longest wait for one batch (<= 0: no limit).
};

// Link prediction (DGL's EdgeCollator arguments). A batch's excluded edges
// are never sampled into its blocks (the fanout is still filled from the
// others).
struct EdgeLoaderOptions {
  int negatives = 0;  // Uniform negative destinations per edge (of its relation's dst type).
  // "none"; "self": the batch's edges; "reverse_id": they and their reverse
  // edges by id (reverse_eids); "reverse_types": they and their reverse
  // edges by relation (reverse_etypes).
  std::string exclude = "none";
  // reverse_id: reverse_eids[e] is the reverse of edge e (homogeneous ids,
  // one per edge of the graph).
  torch::Tensor reverse_eids;
  // reverse_id on a heterograph, instead of reverse_eids (DGL's dict): per
  // relation (name or "src:rel:dst"), one entry per edge of the relation:
  // the per-relation id of its reverse, in the same relation. Every relation
  // of the loader's eids must be given.
  std::map<std::string, torch::Tensor> typed_reverse_eids;
  // reverse_types: relation -> its reverse relation (names or "src:rel:dst");
  // the reverse of edge i of a relation is edge i (per-relation id) of its
  // reverse, whose endpoint types must be swapped and edge count equal.
  // Every relation of the loader's eids must be given.
  std::map<std::string, std::string> reverse_etypes;
};

// Range-for iteration over one epoch of batches (each begin() starts the
// next epoch; batches come in order, sampled ahead by the worker threads).
template <typename T>
class BatchLoader {
 public:
  class Iterator {
   public:
    using value_type = T;
    using difference_type = std::ptrdiff_t;
    const T& operator*() const { return *current_; }
    const T* operator->() const { return &*current_; }
    Iterator& operator++() {
      Fetch();
      return *this;
    }
    bool operator==(const Iterator& other) const {
      return !current_.has_value() && !other.current_.has_value();
    }
    bool operator!=(const Iterator& other) const { return !(*this == other); }

   private:
    friend class BatchLoader;
    void Fetch() {
      auto next = pipeline_->Next();
      if (!next.ok()) {
        current_.reset();
        throw Error(std::string(next.status().message()));
      }
      current_ = std::move(*next);
    }
    std::shared_ptr<loader::Pipeline<T>> pipeline_;
    std::optional<T> current_;
  };

  // Batches per epoch (the same on every trainer with even_batches).
  int64_t size() const { return num_batches_; }
  int64_t epoch() const { return epoch_; }  // Epochs started so far.
  Iterator begin() {
    Iterator it = start();
    it.Fetch();
    return it;
  }
  // Starts the next epoch without waiting for its first batch: the first ++
  // fetches it (begin() is start() plus that). The caller then owns the
  // sampler threads even if that first wait fails or is interrupted.
  Iterator start() {
    Iterator it;
    const int64_t skip = std::exchange(resume_batch_, 0);
    Produce produce = make_epoch_(epoch_++);
    if (skip > 0) {
      produce = [produce = std::move(produce), skip](int64_t b) { return produce(b + skip); };
    }
    try {
      it.pipeline_ = std::make_shared<loader::Pipeline<T>>(
          num_batches_ - skip, std::move(produce), workers_, depth_,
          std::chrono::milliseconds(static_cast<int64_t>(timeout_s_ * 1000)));
    } catch (const std::system_error& e) {
      throw Error("loader: cannot start " + std::to_string(workers_) +
                  " sampler threads (num_workers): " + e.what());
    }
    return it;
  }
  // Resuming from a checkpoint: the next epoch started is epoch `epoch`
  // (0-based), from its batch `batch` (the ones before it are skipped, not
  // sampled). Batches are those of an uninterrupted run (batch b of epoch e
  // depends only on the seed). A batch past the end starts the next epoch.
  void resume(int64_t epoch, int64_t batch) {
    if (epoch < 0 || batch < 0) {
      throw Error("loader: cannot resume at epoch " + std::to_string(epoch) + ", batch " +
                  std::to_string(batch));
    }
    epoch_ = batch >= num_batches_ ? epoch + 1 : epoch;
    resume_batch_ = batch >= num_batches_ ? 0 : batch;
  }
  Iterator end() const { return Iterator(); }

 protected:
  using Produce = typename loader::Pipeline<T>::Produce;
  void Init(int64_t num_batches, const LoaderOptions& options,
            std::function<Produce(int64_t epoch)> make_epoch);

 private:
  int64_t num_batches_ = 0, epoch_ = 0, resume_batch_ = 0;
  int workers_ = 0, depth_ = 1;
  double timeout_s_ = 600;
  std::function<Produce(int64_t)> make_epoch_;
};

namespace internal {
// The plan of `items` (the trainer's ids or dataset rows) under `options`:
// with even_batches, the largest batch count of all trainers (a collective
// call: every trainer constructs its loaders in the same order).
std::shared_ptr<const loader::EpochPlan> MakePlan(std::vector<int64_t> items,
                                                  const LoaderOptions& options);
int ResolveWorkers(const LoaderOptions& options);
struct Prefetch;  // The node tensors a loader's sampler threads pull.
}  // namespace internal

template <typename T>
void BatchLoader<T>::Init(int64_t num_batches, const LoaderOptions& options,
                          std::function<Produce(int64_t epoch)> make_epoch) {
  num_batches_ = num_batches;
  workers_ = internal::ResolveWorkers(options);
  depth_ = options.prefetch > 0 ? options.prefetch : std::max(1, 2 * workers_);
  timeout_s_ = options.timeout_s;
  make_epoch_ = std::move(make_epoch);
}

// Typed ids {type: per-type ids} in the caller's order: without shuffle, a
// loader's batches take them in this order (as DGL's take a dict's), and a
// batch may end one type and start the next. From a braced list, a
// std::map (name order) or a vector of pairs.
class TypedIds {
 public:
  using Item = std::pair<std::string, torch::Tensor>;
  TypedIds(std::initializer_list<std::pair<const std::string, torch::Tensor>> items)  // NOLINT
      : items_(items.begin(), items.end()) {}
  TypedIds(const std::map<std::string, torch::Tensor>& items)  // NOLINT: as a map
      : items_(items.begin(), items.end()) {}
  explicit TypedIds(std::vector<Item> items) : items_(std::move(items)) {}
  const std::vector<Item>& items() const { return items_; }
  bool empty() const { return items_.empty(); }

 private:
  std::vector<Item> items_;
};

// Node classification batches (dgl.distributed.DistNodeDataLoader): blocks
// sampled around batches of this trainer's seeds (e.g. node_split's).
// Typed seeds {ntype: per-type ids} (types shuffled together) give typed
// blocks (edge_dir "in"); global ids give untyped blocks on any graph
// (DistGraph::map_to_per_etype of the edge ids gives their relations).
class DistNodeDataLoader : public BatchLoader<MiniBatch> {
 public:
  DistNodeDataLoader(const DistGraph& g, const TypedIds& nids, NeighborSampler sampler,
                     LoaderOptions options = {});
  DistNodeDataLoader(const DistGraph& g, const torch::Tensor& nids, NeighborSampler sampler,
                     LoaderOptions options = {});
  // Adds node tensor `name` to what the sampler threads pull, as if it had
  // been in the sampler's prefetch_labels (labels: at the seeds) or
  // prefetch_node_feats (else: at the input nodes), for the batches sampled
  // from now on (batches already sampled have no rows of it). Best effort:
  // if a pull of it fails (the tensor was deleted, say), it is dropped with
  // a warning rather than failing the batch. Thread-safe; Error if the graph
  // has no such node tensor now, or the loader has typed seeds.
  // (tessera.distributed
  // uses it to prefetch what a DGL script reads at input_nodes / seeds.)
  void add_prefetch(const std::string& name, bool labels);
  // Stops pulling `name` (either kind) for batches sampled from now on.
  void remove_prefetch(const std::string& name);

 private:
  std::shared_ptr<internal::Prefetch> prefetch_;
};

// Link prediction batches (dgl.distributed.DistEdgeDataLoader). Typed edges
// {etype: per-relation ids} (relations shuffled together; by name, plain
// when unambiguous, or "src:rel:dst") give typed pair graphs and blocks
// (edge_dir "in"); global ids give untyped ones on any graph, the negatives
// of an edge still nodes of its relation's destination type. Error (naming
// the relation) for an unknown or ambiguous relation, an id out of its
// relation's range, a missing or mismatched reverse.
class DistEdgeDataLoader : public BatchLoader<EdgeMiniBatch> {
 public:
  DistEdgeDataLoader(const DistGraph& g, const TypedIds& eids, NeighborSampler sampler,
                     LoaderOptions options = {}, EdgeLoaderOptions edge_options = {});
  DistEdgeDataLoader(const DistGraph& g, const torch::Tensor& eids, NeighborSampler sampler,
                     LoaderOptions options = {}, EdgeLoaderOptions edge_options = {});
};

// Any dataset (dgl.distributed.DistDataLoader): batches of rows of
// `dataset`, each turned into a T by `collate` (in a sampler thread when
// num_workers > 0).
template <typename T>
class DistDataLoader : public BatchLoader<T> {
 public:
  using Collate = std::function<T(const torch::Tensor& rows)>;
  DistDataLoader(torch::Tensor dataset, Collate collate, LoaderOptions options = {}) {
    std::vector<int64_t> items(static_cast<size_t>(dataset.size(0)));
    for (size_t i = 0; i < items.size(); ++i) items[i] = static_cast<int64_t>(i);
    auto plan = internal::MakePlan(std::move(items), options);
    this->Init(plan->num_batches(), options, [plan, dataset, collate](int64_t epoch) {
      auto order = std::make_shared<const std::vector<int64_t>>(plan->Order(epoch));
      return [plan, dataset, collate, order](int64_t b) -> StatusOr<T> {
        std::vector<int64_t> rows = plan->Batch(*order, b);
        torch::Tensor index = torch::tensor(rows, torch::kInt64);
        return collate(dataset.index_select(0, index));
      };
    });
  }
};

}  // namespace dist
}  // namespace tessera

#endif  // TESSERA_INCLUDE_TESSERA_DIST_DATALOADER_H_
