// File: src/kvstore/kv_client.cc
#include "src/kvstore/kv_client.h"

#include "src/kvstore/remote_feature_store.h"
#include "src/kvstore/remote_graph_service.h"

namespace tessera::kvstore {

StatusOr<std::unique_ptr<KvClient>> KvClient::Connect(const KvClientOptions& options) {
  ASSIGN_OR_RETURN(std::shared_ptr<JobClient> job, JobClient::Connect(options));
  auto features = std::make_shared<RemoteFeatureStore>(job);
  auto graph = std::make_shared<RemoteGraphService>(job, features);
  return std::unique_ptr<KvClient>(new KvClient(features, graph, std::move(job)));
}

}  // namespace tessera::kvstore
