// File: src/kvstore/feature_store.h
//
// FeatureStore: the rows of a job's node and edge tensors (pull, push,
// sparse updates, creation and deletion), and the rules every store and
// server applies to tensor names, types and initialisers
// (src/kvstore/feature_store.cc). Keys are "node/<name>" and
// "edge/<name>". Implementations are thread-safe.
#ifndef TESSERA_SRC_KVSTORE_FEATURE_STORE_H_
#define TESSERA_SRC_KVSTORE_FEATURE_STORE_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/kvstore/sparse_optimizer.h"
#include "src/shm/catalog.h"
#include "tessera/base/status.h"
#include "tessera/partition/partition_book.h"

namespace tessera::kvstore {

struct TensorMeta {
  std::string key;  // "node/feat", or "node/paper/feat" in the typed layout.
  DType dtype = DType::kFloat32;
  std::vector<int64_t> shape;  // Global shape.
  shm::Policy policy = shm::Policy::kNode;
  bool persistent = true;
  int type = 0;  // Node type or relation (TensorType); rows are per-type ids.
  size_t row_bytes() const;
};

// The rows a caller's buffer was sized for: their dtype and bytes per row.
// Pulls, pushes and sparse updates name it, and a store refuses one that is
// not the tensor's as it is now (FailedPrecondition): a handle made before
// its tensor was deleted and created again with another dtype or row size
// gets an error, not a read or write past its buffer. (A remote store that
// finds this machine's shard or an answer disagreeing with its cached meta
// says DataLoss once, and reads the meta again for the next call.)
struct RowLayout {
  DType dtype = DType::kFloat32;
  size_t row_bytes = 0;
  bool operator==(const RowLayout&) const = default;
};
RowLayout LayoutOf(const TensorMeta& meta);
// `elements` values of T per row.
template <class T>
RowLayout RowsOf(int64_t elements) {
  return {DTypeOf<T>(), sizeof(T) * static_cast<size_t>(elements)};
}
// FailedPrecondition naming both layouts unless `meta` has `layout`.
Status CheckLayout(const TensorMeta& meta, const RowLayout& layout);
// InvalidArgument unless `meta` is a float32 [rows, dim] embedding (the
// target of sparse updates), FailedPrecondition if its dim is not `dim`.
Status CheckEmbedding(const TensorMeta& meta, int64_t dim);

enum class PushMode { kAssign = 0, kAdd = 1 };

// This machine's rows of a tensor where they live (DGL's
// DistTensor.local_partition): the `rows` rows of the ids this machine
// owns (DistTensor::id_range), at `data`. Reads and writes through it see
// and change the tensor, without the row locks. `keep` holds the memory.
struct ShardView {
  void* data = nullptr;
  int64_t rows = 0;
  std::shared_ptr<void> keep;
};
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

// Rows of node and edge tensors, addressed by global (or per-type) id.
class FeatureStore {
 public:
  virtual ~FeatureStore() = default;
  virtual const PartitionBook& book() const = 0;
  virtual const std::string& graph_name() const = 0;
  // Metadata of one tensor, or of all of them.
  virtual StatusOr<TensorMeta> Meta(const std::string& key) = 0;
  virtual StatusOr<std::vector<TensorMeta>> List() = 0;
  // Rows `ids` of `key` into `out` (ids.size() rows of `layout`), in order.
  virtual Status PullInto(const std::string& key, std::span<const int64_t> ids,
                          const RowLayout& layout, void* out) = 0;
  // Writes (or adds) ids.size() rows of `layout`; visible to every later
  // pull on return.
  virtual Status Push(const std::string& key, std::span<const int64_t> ids, const RowLayout& layout,
                      const void* rows, PushMode mode) = 0;
  // Applies gradient rows (float32 [ids.size(), dim]; distinct ids) to the
  // embedding `key` (float32 [rows, dim]) with a sparse optimizer, on the
  // machines that own the rows (src/kvstore/sparse_optimizer.h); the
  // optimizer's state tensors must exist. Done for every row on return.
  virtual Status SparseUpdate(const std::string& key, std::span<const int64_t> ids, int64_t dim,
                              const float* grads, const SparseOptimizerSpec& spec) = 0;
  // Creates a tensor; false if it existed already with the same dtype and
  // shape (an attach); AlreadyExists if it differs.
  virtual StatusOr<bool> InitData(const InitSpec& spec) = 0;
  virtual Status DeleteData(const std::string& key) = 0;
  // This machine's rows of `key` in place, `layout` checked as by pulls.
  // FailedPrecondition in a process that maps no shard of this machine.
  virtual StatusOr<ShardView> LocalShard(const std::string& key, const RowLayout& layout) = 0;
};

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
// The first id each partition owns under `policy` and type, and the count.
const std::vector<int64_t>& IdOffsets(const PartitionBook& book, shm::Policy policy, int type);
// The ids [begin, end) partition `part` owns under `policy` and type.
std::pair<int64_t, int64_t> IdRange(const PartitionBook& book, shm::Policy policy, int type,
                                    int part);

// InvalidArgument unless `key` names a node or edge tensor ("node/...", "edge/...").
Status CheckTensorKey(const std::string& key);

}  // namespace tessera::kvstore

#endif  // TESSERA_SRC_KVSTORE_FEATURE_STORE_H_
