// File: src/kvstore/kv_store.h
//
// KvStore: what a trainer needs from the key-value store, whether the job is
// distributed (KvClient: servers over RPC, local rows from shared memory) or
// standalone (LocalKvStore: a one-part partition in this process). Keys are
// "node/<name>" and "edge/<name>"; rows are addressed by global id.
// Implementations are thread-safe.
#ifndef TESSERA_SRC_KVSTORE_KV_STORE_H_
#define TESSERA_SRC_KVSTORE_KV_STORE_H_

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "src/base/status.h"
#include "src/kvstore/sparse_optimizer.h"
#include "src/partition/partition_book.h"
#include "src/sampling/local_graph.h"
#include "src/shm/catalog.h"

namespace tessera::kv {

struct TensorMeta {
  std::string key;  // "node/feat", or "node/paper/feat" in the typed layout.
  DType dtype = DType::kFloat32;
  std::vector<int64_t> shape;  // Global shape.
  shm::Policy policy = shm::Policy::kNode;
  bool persistent = true;
  int type = 0;  // Node type or relation (TensorType); rows are per-type ids.
  size_t row_bytes() const;
};

enum class PushMode { kAssign = 0, kAdd = 1 };
enum class Init { kZeros = 0, kUniform = 1, kNormal = 2, kNone = 3 };

struct InitSpec {
  std::string name;  // Without the policy prefix.
  DType dtype = DType::kFloat32;
  std::vector<int64_t> shape;  // shape[0] = number of nodes or edges.
  shm::Policy policy = shm::Policy::kNode;
  Init init = Init::kZeros;
  double a = 0, b = 1;  // uniform(a, b) or normal(mean a, std b).
  uint64_t seed = 0;
  bool persistent = false;
};

// A neighbour-sampling request (DistGraph::sample_neighbors, in_subgraph).
struct SampleRequest {
  int64_t fanout = -1;  // -1: every edge.
  // Non-empty: one fanout per relation of the book, in relation-id order
  // (-1: all, 0: none of that relation), instead of `fanout` (DGL's
  // sample_etype_neighbors). Checked by CheckFanouts.
  std::vector<int64_t> etype_fanouts;
  sampling::EdgeDir dir = sampling::EdgeDir::kIn;
  bool replace = false;
  // Name of the float32 edge array of weights (without "edge/"); empty:
  // uniform. On a typed book every relation has its own array
  // "<src:rel:dst>/<prob>" (DGL's per-etype prob; see WeightKey), needed
  // unless the relation's entry in etype_fanouts is 0.
  std::string prob;
  std::span<const int64_t> exclude;  // Global edge ids never to pick; sorted, distinct.
  uint64_t seed = 0;
  int num_threads = 1;  // For the part sampled in this process.
};

// Degrees of every relation (KvStore::Degrees).
inline constexpr int kAllRelations = -1;

class KvStore {
 public:
  virtual ~KvStore() = default;
  virtual const PartitionBook& book() const = 0;
  virtual const std::string& graph_name() const = 0;
  // Metadata of one tensor, or of all of them.
  virtual StatusOr<TensorMeta> Meta(const std::string& key) = 0;
  virtual StatusOr<std::vector<TensorMeta>> List() = 0;
  // Rows `ids` of `key` into `out` (ids.size() * row_bytes bytes), in order.
  virtual Status PullInto(const std::string& key, std::span<const int64_t> ids, void* out) = 0;
  // Writes (or adds) ids.size() rows; visible to every later pull on return.
  virtual Status Push(const std::string& key, std::span<const int64_t> ids, const void* rows,
                      PushMode mode) = 0;
  // Applies gradient rows (float32 [ids.size(), dim]; distinct ids) to the
  // embedding `key` with a sparse optimizer, on the machines that own the
  // rows (src/kvstore/sparse_optimizer.h); the optimizer's state tensors
  // must exist. Done for every row on return.
  virtual Status SparseUpdate(const std::string& key, std::span<const int64_t> ids,
                              const float* grads, const SparseOptimizerSpec& spec) = 0;
  // Creates a tensor; false if it existed already with the same dtype and
  // shape (an attach); AlreadyExists if it differs.
  virtual StatusOr<bool> InitData(const InitSpec& spec) = 0;
  virtual Status DeleteData(const std::string& key) = 0;
  virtual Status Barrier() = 0;
  // A barrier that also returns the largest `value` any participant passed.
  virtual StatusOr<int64_t> BarrierMax(int64_t value) = 0;
  virtual Status Close() = 0;

  // Graph operations over the whole graph, in global ids; each machine
  // works on the nodes and edges it owns (this machine's in process).
  // Sampled edges of `seeds` (distinct node ids), grouped by owning
  // partition in partition order, each group in seed order.
  virtual StatusOr<sampling::SampledEdges> SampleNeighbors(std::span<const int64_t> seeds,
                                                           const SampleRequest& request) = 0;
  // Endpoints of edges, in the caller's order.
  virtual Status FindEdges(std::span<const int64_t> eids, int64_t* src, int64_t* dst) = 0;
  // In- or out-degrees of nodes, in the caller's order, counting the edges
  // of relation `etype` (a relation id of the book) or, with
  // kAllRelations, every edge.
  virtual Status Degrees(std::span<const int64_t> nids, sampling::EdgeDir dir, int etype,
                         int64_t* out) = 0;
};

// ---- Sampling requests (src/kvstore/sample_request.cc); the same rules
// for every KvStore and for servers on what peers send.

// Checks a request's fanouts against the graph: `fanout` >= -1, and
// `etype_fanouts` empty or exactly one entry per relation of `book`, each
// >= -1. InvalidArgument naming the count (and the relations) or the
// relation ("src:rel:dst") of a bad value. Reads nothing but the span, so a
// peer's list is checked before it is copied.
Status CheckFanouts(int64_t fanout, std::span<const int64_t> etype_fanouts,
                    const PartitionBook& book);

// Whether sampling reads relation r's weights: all but relations whose
// entry in `etype_fanouts` is 0.
bool SamplesRelation(std::span<const int64_t> etype_fanouts, int r);

// The key of the edge array that holds relation r's weights `prob`:
// "edge/<prob>" on a homogeneous book, "edge/<src:rel:dst>/<prob>" on a
// typed one.
std::string WeightKey(const PartitionBook& book, const std::string& prob, int r);

// NotFound: relation r of a typed book has no weights array `prob`.
Status MissingWeights(const PartitionBook& book, const std::string& prob, int r);

// Checks that an edge array can serve as sampling weights (float32, one
// value per edge).
Status CheckWeightArray(const std::string& key, DType dtype, const std::vector<int64_t>& shape);

// One part's rows of an edge array, wherever they live, and what keeps
// `data` valid.
struct EdgeRows {
  DType dtype = DType::kFloat32;
  std::vector<int64_t> shape;  // The part's rows.
  const void* data = nullptr;
  std::shared_ptr<const void> keepalive;
};
// The rows of the array `key` ("edge/..."); NotFound when there is none.
using EdgeRowsLookup = std::function<StatusOr<EdgeRows>(const std::string& key)>;

// The weights a part samples with, empty without `prob`: on a homogeneous
// book one float per edge it owns, in edge-id order (`weights`); on a typed
// book one entry per relation (`relations`), the rows of that relation's
// array for the part's edges of it, read in place.
struct PartWeights {
  std::span<const float> weights;
  std::vector<sampling::RelationWeights> relations;
  std::shared_ptr<const void> keepalive;  // Of every array the spans read.
};
// Partition `part`'s weights for `request`, read through `lookup`. On a
// homogeneous book, the rows of "edge/<prob>". On a typed book (whose owned
// edge ids are grouped by relation: the book's EdgeTypeRange), the rows of
// each relation's "edge/<src:rel:dst>/<prob>" with the global id of the
// part's first edge of that relation; a relation whose fanout is 0 is not
// read (and has no weights). Errors: a missing array (MissingWeights on a
// typed book), one CheckWeightArray refuses, or one whose rows are not the
// part's edges of its relation (DataLoss).
StatusOr<PartWeights> PartWeightsOf(const PartitionBook& book, int part,
                                    const SampleRequest& request, const EdgeRowsLookup& lookup);

// The kernel options of a request, with this part's weights (which must
// outlive the options).
sampling::NeighborOptions NeighborOptionsOf(const SampleRequest& request,
                                            const PartWeights& weights);
sampling::NeighborOptions NeighborOptionsOf(const SampleRequest& request,
                                            PartWeights&& weights) = delete;  // Would dangle.

// The value an initialiser gives element `index` (global, row-major) of a
// tensor: depends only on the seed and the index, never on partitioning.
double InitValue(Init init, double a, double b, uint64_t seed, uint64_t index);

// Fills `count` elements at `dst` (dtype spec.dtype), the first being global
// element `first`, for the uniform and normal initialisers; the others leave
// the (zero-filled) memory as it is.
void FillInit(const InitSpec& spec, void* dst, size_t count, uint64_t first);

// Checks a creation request against the graph: name, policy, dtype,
// initialiser, and shape[0] = the number of nodes or edges.
Status ValidateInitSpec(const InitSpec& spec, const PartitionBook& book);

// "node/<name>" or "edge/<name>".
std::string TensorKey(const InitSpec& spec);

// The node type (relation) whose ids address a tensor's rows. In the
// homogeneous layout every tensor has type 0 and global ids; in the typed
// layout (book.is_homogeneous() false) a tensor's name (without "node/" or
// "edge/") is "<type>/<name>" -- a node type, or a canonical relation
// "src:rel:dst" -- and its rows are that type's per-type ids, as DGL's
// "node~paper~feat". InvalidArgument naming the types otherwise.
StatusOr<int> TensorType(const PartitionBook& book, shm::Policy policy, std::string_view name);
// The type that stands for the homogeneous id space (graph operations).
inline constexpr int kAllTypes = -1;
// The number of rows of a tensor of that type (its type's node / edge count;
// all of them for kAllTypes).
int64_t NumIds(const PartitionBook& book, shm::Policy policy, int type);
// The ids [begin, end) partition `part` owns under `policy` and type.
std::pair<int64_t, int64_t> IdRange(const PartitionBook& book, shm::Policy policy, int type,
                                    int part);

// InvalidArgument unless `key` names a node or edge tensor ("node/...", "edge/...").
Status CheckTensorKey(const std::string& key);

}  // namespace tessera::kv

#endif  // TESSERA_SRC_KVSTORE_KV_STORE_H_
