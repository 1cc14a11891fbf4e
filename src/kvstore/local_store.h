// File: src/kvstore/local_store.h
//
// The services of standalone mode, over the only part of a one-part
// partition loaded in this process: LocalFeatureStore (features
// memory-mapped; a tensor is copied to the heap the first time it is
// written; tensors made at run time on the heap), LocalGraphService
// (sampling with the feature store's edge weights) and a coordinator whose
// barriers have one participant. LocalKvStore bundles them. Same semantics
// and errors as the distributed services, so a program runs unchanged in
// both modes. Thread-safe (one mutex per service).
#ifndef TESSERA_SRC_KVSTORE_LOCAL_STORE_H_
#define TESSERA_SRC_KVSTORE_LOCAL_STORE_H_

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "src/kvstore/services.h"
#include "tessera/graph/array.h"
#include "tessera/partition/load_partition.h"

namespace tessera::kvstore {

class LocalFeatureStore : public FeatureStore {
 public:
  explicit LocalFeatureStore(std::shared_ptr<LocalPartition> partition);

  const PartitionBook& book() const override { return partition_->book; }
  const std::string& graph_name() const override { return partition_->config.graph_name; }
  StatusOr<TensorMeta> Meta(const std::string& key) override;
  StatusOr<std::vector<TensorMeta>> List() override;
  Status PullInto(const std::string& key, std::span<const int64_t> ids, const RowLayout& layout,
                  void* out) override;
  Status Push(const std::string& key, std::span<const int64_t> ids, const RowLayout& layout,
              const void* rows, PushMode mode) override;
  Status SparseUpdate(const std::string& key, std::span<const int64_t> ids, int64_t dim,
                      const float* grads, const SparseOptimizerSpec& spec) override;
  StatusOr<bool> InitData(const InitSpec& spec) override;
  Status DeleteData(const std::string& key) override;
  // The whole tensor (the only part's), copied to the heap first if it is
  // still mapped read-only from the partition's files.
  StatusOr<ShardView> LocalShard(const std::string& key, const RowLayout& layout) override;
  // The rows of edge tensor `key` as they are now (sampling weights); they
  // stay valid if a push replaces them.
  StatusOr<EdgeRows> EdgeRowsOf(const std::string& key);

 private:
  struct Entry {
    TensorMeta meta;
    // Mapped (read-only) until first written, then heap. Shared with
    // samplers still reading weights from the mapped version.
    std::shared_ptr<Array> data;
  };
  StatusOr<Entry*> Find(const std::string& key);
  Status CheckIds(const Entry& e, std::span<const int64_t> ids) const;

  std::shared_ptr<LocalPartition> partition_;
  std::mutex mutex_;
  std::map<std::string, Entry> tensors_;
};

class LocalGraphService : public GraphService {
 public:
  LocalGraphService(std::shared_ptr<LocalPartition> partition,
                    std::shared_ptr<LocalFeatureStore> features)
      : partition_(std::move(partition)), features_(std::move(features)) {}

  const PartitionBook& book() const override { return partition_->book; }
  StatusOr<sampling::SampledEdges> SampleNeighbors(std::span<const int64_t> seeds,
                                                   const SampleRequest& request) override;
  Status FindEdges(std::span<const int64_t> eids, int64_t* src, int64_t* dst) override;
  Status Degrees(std::span<const int64_t> nids, sampling::EdgeDir dir, int etype,
                 int64_t* out) override;
  // The part's graph structure (built on first use).
  StatusOr<std::shared_ptr<const sampling::LocalGraph>> LocalGraph();

 private:
  std::shared_ptr<LocalPartition> partition_;
  std::shared_ptr<LocalFeatureStore> features_;  // Sampling weights.
  std::mutex mutex_;
  std::shared_ptr<const sampling::LocalGraph> graph_;
};

// A job of one trainer: barriers return at once.
class LocalCoordinator : public Coordinator {
 public:
  StatusOr<int64_t> BarrierMax(int64_t value) override { return value; }
  Status Close() override { return absl::OkStatus(); }
};

class LocalKvStore : public Services {
 public:
  // FailedPrecondition unless the config has exactly one part.
  static StatusOr<std::unique_ptr<LocalKvStore>> Open(const std::string& part_config);

 private:
  LocalKvStore(std::shared_ptr<FeatureStore> features, std::shared_ptr<GraphService> graph,
               std::shared_ptr<Coordinator> coordinator)
      : Services(std::move(features), std::move(graph), std::move(coordinator)) {}
};

}  // namespace tessera::kvstore

#endif  // TESSERA_SRC_KVSTORE_LOCAL_STORE_H_
