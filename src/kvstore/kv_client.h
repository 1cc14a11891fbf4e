// File: src/kvstore/kv_client.h
//
// KvClient: the three services of a distributed job for one trainer -- rows
// (RemoteFeatureStore), graph operations (RemoteGraphService) and barriers
// (its JobClient) -- over one connection to every server of the job
// (src/kvstore/job_client.h says what every call promises).
#ifndef TESSERA_SRC_KVSTORE_KV_CLIENT_H_
#define TESSERA_SRC_KVSTORE_KV_CLIENT_H_

#include <memory>

#include "src/kvstore/job_client.h"
#include "src/kvstore/kv_store.h"

namespace tessera::kvstore {

class KvClient : public KvStore {
 public:
  static StatusOr<std::unique_ptr<KvClient>> Connect(const KvClientOptions& options);

  int num_machines() const { return book().num_partitions(); }
  const KvClientOptions& options() const { return job_->options(); }
  // This machine's shards, mapped; null when this machine serves no data here.
  ShardMap* local_shards() const { return job_->local_shards(); }

 private:
  KvClient(std::shared_ptr<JobClient> job, std::shared_ptr<FeatureStore> features,
           std::shared_ptr<GraphService> graph)
      : KvStore(std::move(features), std::move(graph), job), job_(std::move(job)) {}
  std::shared_ptr<JobClient> job_;
};

}  // namespace tessera::kvstore

#endif  // TESSERA_SRC_KVSTORE_KV_CLIENT_H_
