// File: src/kvstore/kv_store.h
//
// KvStore: the three services a trainer uses, bundled: rows (FeatureStore),
// graph operations (GraphService) and barriers (Coordinator), each with a
// distributed implementation (KvClient: remote_feature_store.h,
// remote_graph_service.h, job_client.h) and a standalone one (LocalKvStore:
// local_store.h). Callers that need one service take it alone.
#ifndef TESSERA_SRC_KVSTORE_KV_STORE_H_
#define TESSERA_SRC_KVSTORE_KV_STORE_H_

#include <memory>

#include "src/kvstore/coordinator.h"
#include "src/kvstore/feature_store.h"
#include "src/kvstore/graph_service.h"

namespace tessera::kvstore {

class KvStore : public FeatureStore, public GraphService, public Coordinator {
 public:
  KvStore(std::shared_ptr<FeatureStore> features, std::shared_ptr<GraphService> graph,
          std::shared_ptr<Coordinator> job)
      : job_(std::move(job)), features_(std::move(features)), graph_(std::move(graph)) {}

  FeatureStore& features() const { return *features_; }
  GraphService& graph() const { return *graph_; }
  Coordinator& job() const { return *job_; }

  const PartitionBook& book() const final { return features_->book(); }
  const std::string& graph_name() const final { return features_->graph_name(); }
  StatusOr<TensorMeta> Meta(const std::string& key) final { return features_->Meta(key); }
  StatusOr<std::vector<TensorMeta>> List() final { return features_->List(); }
  Status PullInto(const std::string& key, std::span<const int64_t> ids, void* out) final {
    return features_->PullInto(key, ids, out);
  }
  Status Push(const std::string& key, std::span<const int64_t> ids, const void* rows,
              PushMode mode) final {
    return features_->Push(key, ids, rows, mode);
  }
  Status SparseUpdate(const std::string& key, std::span<const int64_t> ids, const float* grads,
                      const SparseOptimizerSpec& spec) final {
    return features_->SparseUpdate(key, ids, grads, spec);
  }
  StatusOr<bool> InitData(const InitSpec& spec) final { return features_->InitData(spec); }
  Status DeleteData(const std::string& key) final { return features_->DeleteData(key); }
  StatusOr<sampling::SampledEdges> SampleNeighbors(std::span<const int64_t> seeds,
                                                   const SampleRequest& request) final {
    return graph_->SampleNeighbors(seeds, request);
  }
  Status FindEdges(std::span<const int64_t> eids, int64_t* src, int64_t* dst) final {
    return graph_->FindEdges(eids, src, dst);
  }
  Status Degrees(std::span<const int64_t> nids, sampling::EdgeDir dir, int etype,
                 int64_t* out) final {
    return graph_->Degrees(nids, dir, etype, out);
  }
  Status Barrier() final { return job_->Barrier(); }
  StatusOr<int64_t> BarrierMax(int64_t value) final { return job_->BarrierMax(value); }
  Status Close() final { return job_->Close(); }

 private:
  // Declared first, destroyed last: the job outlives the services on it.
  std::shared_ptr<Coordinator> job_;
  std::shared_ptr<FeatureStore> features_;
  std::shared_ptr<GraphService> graph_;
};

}  // namespace tessera::kvstore

#endif  // TESSERA_SRC_KVSTORE_KV_STORE_H_
