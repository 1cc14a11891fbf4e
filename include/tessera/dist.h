// File: include/tessera/dist.h
//
// The trainer-side API, with DGL's names (dgl.distributed):
//
//   auto ctx = tessera::dist::initialize("ip_config.txt");  // standalone when not launched
//   tessera::dist::DistGraph g("products", "parts/products.json");
//   torch::Tensor x = g.ndata("feat")[ids];                  // pull rows by global id
//   tessera::dist::DistTensor h({g.num_nodes(), 16}, torch::kFloat32, "h");
//   h.set(ids, rows);                                        // push rows (acknowledged)
//   g.barrier();
//
//   auto train = tessera::dist::node_split(mask, g.partition_book());
//   tessera::dist::DistNodeDataLoader loader(g, train, {.fanouts = {10, 25}},
//                                            {.batch_size = 1000, .shuffle = true});
//   for (const auto& batch : loader) {                       // input_nodes, seeds, blocks
//     torch::Tensor x = g.ndata("feat")[batch.input_nodes];
//     ...
//   }
//
// Modes. Launched by `tessera launch` (or the local runner), the environment
// names the job (src/launcher/job_env.h) and initialize() connects to every
// server of the job; a trainer reads its own machine's rows straight from
// shared memory. Without that environment the program is standalone:
// nothing is started, and DistGraph loads a one-part partition in process.
// The same program runs unchanged in both modes.
//
// Errors (a dead server, a deadline, a bad id, a missing tensor) are thrown
// as tessera::dist::Error, whose message names the cause; nothing blocks
// without a deadline. DistGraph and DistTensor are safe to use from several
// threads at once.
#ifndef TESSERA_INCLUDE_TESSERA_DIST_H_
#define TESSERA_INCLUDE_TESSERA_DIST_H_

#include <torch/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "tessera/core/epoch.h"
#include "tessera/core/partition_book.h"
#include "tessera/core/pipeline.h"

namespace tessera {
namespace kv {
class KvStore;
}  // namespace kv

namespace dist {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct InitOptions {
  double call_timeout_s = 30;      // Deadline of every pull, push, init and delete.
  double connect_timeout_s = 600;  // Servers may still be loading their partition.
  double barrier_timeout_s = 1800;
  double heartbeat_interval_s = 1;
  double heartbeat_timeout_s = 10;  // A server silent this long is dead.
  // Where the launcher's variables are read from (tests pass their own).
  std::function<const char*(const char*)> getenv;
  // Keep freed memory mapped (src/base/resource.h): mini-batches then reuse
  // pages instead of faulting in new ones, measured 1.5x faster sampling.
  bool retain_freed_memory = true;
  // Standalone: raise LibTorch's intra-op threads to the cores this process
  // may use, unless OMP_NUM_THREADS is set (false: leave them as they are).
  bool choose_threads = true;
};

// The process's connection to its job (or its standalone state).
class Context {
 public:
  ~Context();
  bool standalone() const { return standalone_; }
  int rank() const { return rank_; }              // Trainer rank (RANK), 0 standalone.
  int world_size() const { return world_size_; }  // Number of trainers.
  int machine_id() const { return machine_id_; }
  // Sampler threads a loader gets by default: the launcher's --num-samplers
  // (0, DGL's "no sampler processes": one per 4 cores of the trainer's
  // share, its compute threads but at most the usable cores over the
  // machine's trainers; none below 2), or standalone a quarter of the usable
  // cores (at least one on 2 or more).
  int num_samplers() const { return num_samplers_; }
  const std::string& part_config() const { return part_config_; }
  // The trainers' c10d rendezvous (MASTER_ADDR, MASTER_PORT) and this
  // machine's address in ip_config (what Gloo binds to).
  const std::string& master_addr() const { return master_addr_; }
  int master_port() const { return master_port_; }
  const std::string& host_address() const { return host_address_; }
  const InitOptions& options() const { return options_; }

 private:
  friend std::shared_ptr<Context> initialize(const std::string&, const InitOptions&);
  friend void exit_client();
  friend class DistGraph;
  friend class DistTensor;
  friend struct ContextAccess;  // The loaders (dist.cc).
  Context() = default;
  std::shared_ptr<kv::KvStore> store_;  // Standalone: set by the first DistGraph.
  bool standalone_ = true;
  int rank_ = 0, world_size_ = 1, machine_id_ = 0, num_samplers_ = 0;
  std::string part_config_;
  std::string master_addr_ = "127.0.0.1", host_address_ = "127.0.0.1";
  int master_port_ = 0;
  InitOptions options_;
};

// Creates the process's context (or returns the existing one). In a launched
// job it connects to every server (waiting up to connect_timeout_s for them)
// and throws Error if it cannot. `ip_config` overrides TESSERA_IP_CONFIG.
std::shared_ptr<Context> initialize(const std::string& ip_config = "",
                                    const InitOptions& options = {});
// Says goodbye to the servers and forgets the context (DistGraphs and
// DistTensors still holding it keep it alive until they go). Idempotent;
// also happens at exit. Never throws: a goodbye a server does not answer in
// time (a loaded or stopped server) is logged as a warning.
void exit_client();

enum class PartPolicy { kAuto, kNode, kEdge };

// How a new DistTensor is filled. Values depend only on the seed and the
// element's global index, never on the number of partitions.
struct Init {
  enum Kind { kZeros, kUniform, kNormal } kind = kZeros;
  double a = 0, b = 1;
  uint64_t seed = 0;
  static Init Zeros() { return {}; }
  static Init Uniform(double low, double high, uint64_t seed = 0) {
    return {kUniform, low, high, seed};
  }
  static Init Normal(double mean, double stddev, uint64_t seed = 0) {
    return {kNormal, mean, stddev, seed};
  }
};

// A tensor whose rows are sharded over the machines like the nodes (or the
// edges) of the graph. Copies share the same tensor.
class DistTensor {
 public:
  // Creates (or, if a tensor of that name, dtype and shape exists, attaches
  // to) a tensor on every machine. shape[0] must be the number of nodes or
  // edges; kAuto picks whichever matches (Error if both or neither do). An
  // empty name makes an anonymous tensor (every trainer must then create its
  // anonymous tensors in the same order). A non-persistent tensor is deleted
  // cluster-wide when the last copy of the handle that created it goes.
  //
  // Heterogeneous graphs (DGL's NodePartitionPolicy(gpb, ntype) /
  // EdgePartitionPolicy(gpb, etype)): `type` names the node type or relation
  // (a relation name or canonical "src:rel:dst") whose per-type ids address
  // the rows; shape[0] must be that type's count. Empty: the graph's only
  // type, or (kAuto) the one type whose count is shape[0] (Error if several).
  DistTensor(std::vector<int64_t> shape, torch::Dtype dtype, std::string name = "",
             Init init = Init::Zeros(), PartPolicy policy = PartPolicy::kAuto,
             bool persistent = false, const std::string& type = "");

  // Rows `ids` (any integer tensor of global ids), in order: [n, shape[1:]...].
  torch::Tensor operator[](const torch::Tensor& ids) const;
  // Writes rows (dtype and row shape of this tensor); visible to every
  // trainer's later reads once this returns.
  void set(const torch::Tensor& ids, const torch::Tensor& rows) const;
  // Adds rows element-wise (atomic per row against concurrent writers).
  void add(const torch::Tensor& ids, const torch::Tensor& rows) const;

  const std::vector<int64_t>& shape() const;
  torch::Dtype dtype() const;
  const std::string& name() const;
  PartPolicy part_policy() const;
  // The node type or canonical relation of its rows ("_N" / "_N:_E:_N" on a
  // homogeneous graph).
  const std::string& type_name() const;
  // "node/<name>" or "edge/<name>" ("node/<ntype>/<name>" on a heterograph).
  const std::string& key() const;
  // Whether this handle's construction created the tensor (exactly one of the
  // trainers constructing it at once does), rather than attaching to it.
  bool created() const;
  kv::KvStore& store() const;  // For embeddings and optimizers.

 private:
  friend class DistGraph;
  struct State;
  explicit DistTensor(std::shared_ptr<State> state) : state_(std::move(state)) {}
  std::shared_ptr<State> state_;
};

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

  kv::KvStore& store() const;  // For the loaders.

 private:
  DistTensor Data(const std::string& prefix, const std::string& name) const;
  DistTensor TypeData(bool node, int type, const std::string& name) const;
  std::map<std::string, AttrScheme> Schemes(const std::string& prefix) const;
  std::map<std::string, AttrScheme> TypeSchemes(bool node, int type) const;
  std::shared_ptr<Context> context_;
  std::string graph_name_;
};

// ------------------------------------------------------------ graph operations

// Sets the seed that sampling calls without their own seed draw from (each
// call takes the next value), like torch::manual_seed.
void manual_seed(uint64_t seed);

struct SampleOptions {
  std::string edge_dir = "in";  // "in": in-edges of the seeds; "out": out-edges.
  std::string prob;             // Name of a float32 edge tensor of weights; "": uniform.
  torch::Tensor exclude_edges;  // Edge ids never to sample (their fanout is still filled).
  bool replace = false;
  std::optional<uint64_t> seed;  // Default: the next value from manual_seed's stream.
};

// Some edges of the graph, as COO in global ids (DGL's frontier graph; the
// node set is the whole graph). Grouped by owning partition.
struct Subgraph {
  torch::Tensor src, dst, eids;  // int64 [num_edges]
  int64_t num_edges() const { return src.size(0); }
};

// Up to `fanout` (-1: all) edges of each seed (distinct node ids): every
// machine samples the seeds it owns (this machine's in process, from shared
// memory), and the results are merged. On a graph with several relations
// the fanout is per relation, as in DGL (sample_etype_neighbors): up to
// `fanout` edges of each relation.
Subgraph sample_neighbors(const DistGraph& g, const torch::Tensor& seeds, int64_t fanout,
                          const SampleOptions& options = {});

// Per-relation fanouts (DGL's dict fanout): relation name (plain when
// unambiguous, or "src:rel:dst") -> fanout (-1: all, 0: none). Every relation
// of the graph must be given.
using FanoutMap = std::map<std::string, int64_t>;
Subgraph sample_neighbors(const DistGraph& g, const torch::Tensor& seeds, const FanoutMap& fanout,
                          const SampleOptions& options = {});

// The sampled edges of a heterograph by relation, in per-type ids (DGL's
// heterograph frontier: frontier.edges(etype=...) and edges[etype].data[EID]).
struct HeteroSubgraph {
  std::vector<EdgeType> canonical_etypes;
  std::vector<Subgraph> edges;  // Per relation id: src, dst and eids in per-type ids.
  // The edges of a relation (name or "src:rel:dst"; Error if unknown or ambiguous).
  const Subgraph& operator[](const std::string& etype) const;
  int64_t num_edges() const;
};
// Typed seeds: {ntype: per-type ids}. Types not given have no seeds.
HeteroSubgraph sample_neighbors(const DistGraph& g,
                                const std::map<std::string, torch::Tensor>& seeds, int64_t fanout,
                                const SampleOptions& options = {});
HeteroSubgraph sample_neighbors(const DistGraph& g,
                                const std::map<std::string, torch::Tensor>& seeds,
                                const FanoutMap& fanout, const SampleOptions& options = {});
// Every in-edge of the nodes.
Subgraph in_subgraph(const DistGraph& g, const torch::Tensor& nodes);

// The edges `eids` with their endpoints relabelled 0..num_nodes-1.
struct EdgeSubgraph {
  torch::Tensor src, dst;  // Relabelled endpoints of each edge.
  torch::Tensor nodes;     // Global id of each relabelled node, sorted (dgl.NID).
  torch::Tensor eids;      // Global edge ids (dgl.EID), in the given order.
};
EdgeSubgraph edge_subgraph(const DistGraph& g, const torch::Tensor& eids);

// ------------------------------------------------------------ mini-batches

// One message-passing layer (DGL's block). Its first num_dst_nodes() source
// nodes are its destination nodes; edges are a CSR over destinations with
// block-local source indices.
struct Block {
  torch::Tensor src_nodes;  // int64 [num_src]: global ids.
  torch::Tensor indptr;     // int64 [num_dst + 1]
  torch::Tensor indices;    // int64 [num_edges]: index into src_nodes.
  torch::Tensor eids;       // int64 [num_edges]: global edge ids.
  // Node data pulled by the loader's sampler threads, ahead of use (DGL's
  // prefetching; NeighborSampler::prefetch_node_feats / prefetch_labels):
  // the first block's srcdata holds rows of its source nodes (a batch's
  // input nodes), the last block's dstdata rows of its destinations (the
  // seeds). Empty unless asked for.
  std::map<std::string, torch::Tensor> srcdata, dstdata;
  int64_t num_src_nodes() const { return src_nodes.size(0); }
  int64_t num_dst_nodes() const { return indptr.size(0) - 1; }
  int64_t num_edges() const { return indices.size(0); }
  torch::Tensor dst_nodes() const { return src_nodes.slice(0, 0, num_dst_nodes()); }
  // The destination index of each edge (for scatter/index_add aggregation).
  torch::Tensor edge_dst() const;
};

// One layer of a heterograph (DGL's block of a heterograph; see
// src/sampling/hetero_block.h): per node type, destination nodes and source
// nodes (destinations first) in per-type ids; per relation, its edges as
// indices into its source type's src_nodes and its destination type's
// dst_nodes, and their per-relation edge ids (as DGL's edata[dgl.EID];
// DistGraph::map_to_homo_eid gives homogeneous ids). Types and relations
// in the partition book's id order.
struct HeteroBlock {
  struct Relation {
    torch::Tensor src, dst;  // int64 [num_edges]: block-local indices.
    torch::Tensor eids;      // int64: per-relation edge ids.
  };
  std::vector<std::string> ntypes;
  std::vector<EdgeType> canonical_etypes;
  std::vector<torch::Tensor> src_nodes, dst_nodes;  // Per type: per-type ids.
  std::vector<torch::Tensor> homo_src_nodes;        // Per type: homogeneous ids of src_nodes.
  std::vector<Relation> edges;                      // Per relation id.

  int ntype_id(const std::string& ntype) const;  // Error if unknown.
  int etype_id(const std::string& etype) const;  // Error if unknown or ambiguous.
  int64_t num_src_nodes(const std::string& ntype) const;
  int64_t num_dst_nodes(const std::string& ntype) const;
  int64_t num_edges(const std::string& etype) const;
  int64_t num_edges() const;  // All relations.
  const Relation& edges_of(const std::string& etype) const;
};

// Multi-layer neighbour sampling (dgl.dataloading.NeighborSampler).
struct NeighborSampler {
  std::vector<int64_t> fanouts;  // Per layer, input layer first; -1: all neighbours.
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

struct MiniBatch {
  torch::Tensor input_nodes;  // Nodes whose features the first layer reads.
  torch::Tensor seeds;        // Output nodes.
  std::vector<Block> blocks;  // Input layer first.
};

// Node classification on a heterograph: seeds and input nodes by node type
// (per-type ids), blocks typed.
struct HeteroMiniBatch {
  std::map<std::string, torch::Tensor> input_nodes;  // blocks.front().src_nodes by type.
  std::map<std::string, torch::Tensor> seeds;        // Output nodes by type, in batch order.
  std::vector<HeteroBlock> blocks;                   // Input layer first.
};

// Link prediction: pairs index into pair_nodes (= blocks.back().dst_nodes()).
struct EdgeMiniBatch {
  torch::Tensor input_nodes;
  torch::Tensor pair_nodes;        // Nodes of both pair graphs, sorted.
  torch::Tensor eids;              // The batch's (positive) edges.
  torch::Tensor pos_src, pos_dst;  // [batch]
  torch::Tensor neg_src, neg_dst;  // [batch * negatives]; k per edge, in order.
  std::vector<Block> blocks;
};

// The pair graph of a typed link-prediction batch (DGL's heterograph
// pair_graph): per node type, the batch's nodes (every endpoint of the
// positive and negative pairs, per-type ids ascending; the last block's
// dst_nodes); per relation, pairs as indices into its source type's and its
// destination type's nodes. Types and relations in the book's id order.
struct HeteroPairGraph {
  struct Relation {
    torch::Tensor src, dst;  // int64 [num_pairs]: indices into nodes[src type] / nodes[dst type].
    // Positive graph: the per-relation edge id of each pair (DGL's
    // edata[EID]); negative graph: empty.
    torch::Tensor eids;
  };
  std::vector<std::string> ntypes;
  std::vector<EdgeType> canonical_etypes;
  std::vector<torch::Tensor> nodes;  // Per type: per-type ids (DGL's ndata[NID]).
  std::vector<Relation> edges;       // Per relation id.

  int64_t num_nodes(const std::string& ntype) const;  // Error if unknown.
  int64_t num_edges(const std::string& etype) const;  // Error if unknown or ambiguous.
  int64_t num_edges() const;                          // All relations.
  const Relation& edges_of(const std::string& etype) const;
};

// Link prediction on a heterograph (DGL's DistEdgeDataLoader with dict
// eids): the positive pairs are the batch's edges by relation, the negative
// pairs k per positive edge of each relation, in order (the source kept,
// the destination uniform over the relation's destination type); both over
// the same nodes, which are the seeds of the blocks.
struct HeteroEdgeMiniBatch {
  std::map<std::string, torch::Tensor> input_nodes;  // blocks.front().src_nodes by type.
  HeteroPairGraph positive;
  HeteroPairGraph negative;         // No pairs without negatives.
  std::vector<HeteroBlock> blocks;  // Input layer first; blocks.back().dst_nodes == nodes.
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
    it.pipeline_ = std::make_shared<loader::Pipeline<T>>(
        num_batches_, make_epoch_(epoch_++), workers_, depth_,
        std::chrono::milliseconds(static_cast<int64_t>(timeout_s_ * 1000)));
    return it;
  }
  Iterator end() const { return Iterator(); }

 protected:
  using Produce = typename loader::Pipeline<T>::Produce;
  void Init(int64_t num_batches, const LoaderOptions& options,
            std::function<Produce(int64_t epoch)> make_epoch);

 private:
  int64_t num_batches_ = 0, epoch_ = 0;
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

// Node classification batches (dgl.distributed.DistNodeDataLoader): blocks
// sampled around batches of `nids` (this trainer's ids, e.g. node_split's).
class DistNodeDataLoader : public BatchLoader<MiniBatch> {
 public:
  DistNodeDataLoader(const DistGraph& g, const torch::Tensor& nids, NeighborSampler sampler,
                     LoaderOptions options = {});
  // Adds node tensor `name` to what the sampler threads pull, as if it had
  // been in the sampler's prefetch_labels (labels: at the seeds) or
  // prefetch_node_feats (else: at the input nodes), for the batches sampled
  // from now on (batches already sampled have no rows of it). Best effort:
  // if a pull of it fails (the tensor was deleted, say), it is dropped with
  // a warning rather than failing the batch. Thread-safe; Error if the graph
  // has no such node tensor now. (tessera.distributed uses it to prefetch
  // what a DGL script reads at input_nodes / seeds.)
  void add_prefetch(const std::string& name, bool labels);
  // Stops pulling `name` (either kind) for batches sampled from now on.
  void remove_prefetch(const std::string& name);

 private:
  std::shared_ptr<internal::Prefetch> prefetch_;
};

// DGL's DistNodeDataLoader with dict seeds: batches of the typed seeds
// {ntype: per-type ids} (types shuffled together), heterogeneous blocks.
// (DistNodeDataLoader over homogeneous ids gives homogeneous blocks on any
// graph; block_etypes gives their relations.)
class DistHeteroNodeDataLoader : public BatchLoader<HeteroMiniBatch> {
 public:
  DistHeteroNodeDataLoader(const DistGraph& g, const std::map<std::string, torch::Tensor>& nids,
                           NeighborSampler sampler, LoaderOptions options = {});
};

// Link prediction batches (dgl.distributed.DistEdgeDataLoader) over `eids`
// (homogeneous ids, homogeneous blocks). On a heterograph the negatives of
// an edge are nodes of its relation's destination type; for typed pair
// graphs and blocks see DistHeteroEdgeDataLoader.
class DistEdgeDataLoader : public BatchLoader<EdgeMiniBatch> {
 public:
  DistEdgeDataLoader(const DistGraph& g, const torch::Tensor& eids, NeighborSampler sampler,
                     LoaderOptions options = {}, EdgeLoaderOptions edge_options = {});
};

// Link prediction on a heterograph (DGL's DistEdgeDataLoader with
// {etype: eids}): batches of the typed edges (relations shuffled together),
// heterogeneous pair graphs and blocks. Relations by name (plain when
// unambiguous) or "src:rel:dst"; ids per relation. Error (naming the
// relation) for an unknown or ambiguous relation, an id out of its
// relation's range, a missing or mismatched reverse; edge_dir must be "in".
class DistHeteroEdgeDataLoader : public BatchLoader<HeteroEdgeMiniBatch> {
 public:
  DistHeteroEdgeDataLoader(const DistGraph& g, const std::map<std::string, torch::Tensor>& eids,
                           NeighborSampler sampler, LoaderOptions options = {},
                           EdgeLoaderOptions edge_options = {});
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

#endif  // TESSERA_INCLUDE_TESSERA_DIST_H_
