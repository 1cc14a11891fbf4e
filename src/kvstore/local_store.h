// File: src/kvstore/local_store.h
//
// LocalKvStore: the KvStore of standalone mode. It loads the only part of a
// one-part partition in this process (features memory-mapped; a tensor is
// copied to the heap the first time it is written) and keeps tensors made at
// run time on the heap. Same semantics and errors as the distributed store,
// so a program runs unchanged in both modes. Thread-safe (one mutex).
#ifndef TESSERA_SRC_KVSTORE_LOCAL_STORE_H_
#define TESSERA_SRC_KVSTORE_LOCAL_STORE_H_

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "src/graph/array.h"
#include "src/kvstore/kv_store.h"
#include "src/partition/load_partition.h"

namespace tessera::kv {

class LocalKvStore : public KvStore {
 public:
  // FailedPrecondition unless the config has exactly one part.
  static StatusOr<std::unique_ptr<LocalKvStore>> Open(const std::string& part_config);

  const PartitionBook& book() const override { return partition_->book; }
  const std::string& graph_name() const override { return partition_->config.graph_name; }
  // The loaded partition (graph structure for sampling).
  const LocalPartition& partition() const { return *partition_; }
  // Its graph structure (built on first use).
  StatusOr<std::shared_ptr<const sampling::LocalGraph>> LocalGraph();

  StatusOr<TensorMeta> Meta(const std::string& key) override;
  StatusOr<std::vector<TensorMeta>> List() override;
  Status PullInto(const std::string& key, std::span<const int64_t> ids, void* out) override;
  Status Push(const std::string& key, std::span<const int64_t> ids, const void* rows,
              PushMode mode) override;
  Status SparseUpdate(const std::string& key, std::span<const int64_t> ids, const float* grads,
                      const SparseOptimizerSpec& spec) override;
  StatusOr<bool> InitData(const InitSpec& spec) override;
  Status DeleteData(const std::string& key) override;
  Status Barrier() override { return absl::OkStatus(); }
  StatusOr<int64_t> BarrierMax(int64_t value) override { return value; }
  Status Close() override { return absl::OkStatus(); }

  StatusOr<sampling::SampledEdges> SampleNeighbors(std::span<const int64_t> seeds,
                                                   const SampleRequest& request) override;
  Status FindEdges(std::span<const int64_t> eids, int64_t* src, int64_t* dst) override;
  Status Degrees(std::span<const int64_t> nids, sampling::EdgeDir dir, int etype,
                 int64_t* out) override;

 private:
  struct Entry {
    TensorMeta meta;
    // Mapped (read-only) until first written, then heap. Shared with
    // samplers still reading weights from the mapped version.
    std::shared_ptr<Array> data;
  };
  explicit LocalKvStore(std::shared_ptr<LocalPartition> partition);
  StatusOr<Entry*> Find(const std::string& key);
  Status CheckIds(const Entry& e, std::span<const int64_t> ids) const;

  std::shared_ptr<LocalPartition> partition_;
  std::mutex mutex_;
  std::shared_ptr<const sampling::LocalGraph> graph_;
  std::map<std::string, Entry> tensors_;
};

}  // namespace tessera::kv

#endif  // TESSERA_SRC_KVSTORE_LOCAL_STORE_H_
