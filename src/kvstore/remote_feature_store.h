// File: src/kvstore/remote_feature_store.h
//
// RemoteFeatureStore: the rows of a distributed job's tensors, through the
// job's JobClient. Tensors are named by key ("node/feat", "edge/weight");
// their rows are sharded like the nodes or the edges, and the partition book
// says which machine owns an id.
//
//   pull: ids are split by owner; requests go to every remote owner at once;
//         the rows of this machine are then copied straight from shared
//         memory (no RPC) while the remote answers travel; remote rows are
//         placed last. Output rows follow the caller's order.
//   push: the same split; local rows are written in place under the row
//         locks, remote rows are acknowledged by their server before Push
//         returns, so a later pull anywhere sees them.
//
// Thread-safe.
#ifndef TESSERA_SRC_KVSTORE_REMOTE_FEATURE_STORE_H_
#define TESSERA_SRC_KVSTORE_REMOTE_FEATURE_STORE_H_

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "src/kvstore/feature_store.h"
#include "src/kvstore/id_groups.h"
#include "src/kvstore/job_client.h"

namespace tessera::kvstore {

class RemoteFeatureStore : public FeatureStore {
 public:
  explicit RemoteFeatureStore(std::shared_ptr<JobClient> job);

  const PartitionBook& book() const override { return book_; }
  const std::string& graph_name() const override { return job_->graph_name(); }
  // Metadata of one tensor (cached), or of all of them (fresh).
  StatusOr<TensorMeta> Meta(const std::string& key) override;
  StatusOr<std::vector<TensorMeta>> List() override;
  // Rows by owner: this machine's through shared memory, the others' in
  // requests of up to 1 MiB of rows, answers placed as they arrive. A layout
  // that is not the cached meta's reads the meta again before refusing.
  Status PullInto(const std::string& key, std::span<const int64_t> ids, const RowLayout& layout,
                  void* out) override;
  Status Push(const std::string& key, std::span<const int64_t> ids, const RowLayout& layout,
              const void* rows, PushMode mode) override;
  // This machine's rows updated in process, under the row locks its
  // servers take; the others' sent to their owners.
  Status SparseUpdate(const std::string& key, std::span<const int64_t> ids, int64_t dim,
                      const float* grads, const SparseOptimizerSpec& spec) override;
  // Creates a tensor on every machine; returns false if it existed already
  // (with the same dtype and shape: then this is an attach).
  StatusOr<bool> InitData(const InitSpec& spec) override;
  Status DeleteData(const std::string& key) override;
  // The shared-memory shard this process maps.
  StatusOr<ShardView> LocalShard(const std::string& key, const RowLayout& layout) override;

 private:
  using Split = OwnerSplit;
  Status CheckRowFits(const TensorMeta& meta) const;
  void ForgetMeta(const std::string& key);  // Read it again when next needed.
  // Meta(key) if check() accepts it; a cached meta it refuses is read again
  // (another process may have created the tensor again), and check()'s
  // error is returned if it still refuses it.
  StatusOr<TensorMeta> CheckedMeta(const std::string& key,
                                   const std::function<Status(const TensorMeta&)>& check);
  // Rows of `meta`'s tensor to their owners: remote machines get requests
  // (fill() sets the method and its arguments; name, ids and rows are added)
  // in pieces of kChunkBytes, this machine's rows go to local() meanwhile.
  using LocalRows = std::function<Status(const Shard& shard, std::span<const int64_t> ids,
                                         const int64_t* positions, int64_t first)>;
  Status ScatterRows(const TensorMeta& meta, std::span<const int64_t> ids, const void* rows,
                     const std::function<void(rpc::Message*)>& fill, const LocalRows& local);

  std::shared_ptr<JobClient> job_;
  rpc::RpcClient* rpc_;
  const PartitionBook& book_;
  ShardMap* local_;  // This machine's shards; null if none.
  std::mutex meta_mutex_;
  std::map<std::string, TensorMeta> meta_cache_;
};

}  // namespace tessera::kvstore

#endif  // TESSERA_SRC_KVSTORE_REMOTE_FEATURE_STORE_H_
