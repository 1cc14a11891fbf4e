// File: src/kvstore/services.h
//
// Services: the three services a trainer uses over one job -- rows
// (FeatureStore), graph operations (GraphService) and barriers
// (Coordinator) -- each with a distributed implementation (KvClient:
// remote_feature_store.h, remote_graph_service.h, job_client.h) and a
// standalone one (LocalKvStore: local_store.h). A holder, not a store: a
// caller takes the one service it needs.
#ifndef TESSERA_SRC_KVSTORE_SERVICES_H_
#define TESSERA_SRC_KVSTORE_SERVICES_H_

#include <memory>
#include <string>

#include "src/kvstore/coordinator.h"
#include "src/kvstore/feature_store.h"
#include "src/kvstore/graph_service.h"

namespace tessera::kvstore {

class Services {
 public:
  Services(std::shared_ptr<FeatureStore> features, std::shared_ptr<GraphService> graph,
           std::shared_ptr<Coordinator> job)
      : job_(std::move(job)), features_(std::move(features)), graph_(std::move(graph)) {}
  virtual ~Services() = default;
  Services(const Services&) = delete;
  Services& operator=(const Services&) = delete;

  FeatureStore& features() const { return *features_; }
  GraphService& graph() const { return *graph_; }
  Coordinator& job() const { return *job_; }

  const PartitionBook& book() const { return features_->book(); }
  const std::string& graph_name() const { return features_->graph_name(); }

 private:
  // Declared first, destroyed last: the job outlives the services on it.
  std::shared_ptr<Coordinator> job_;
  std::shared_ptr<FeatureStore> features_;
  std::shared_ptr<GraphService> graph_;
};

}  // namespace tessera::kvstore

#endif  // TESSERA_SRC_KVSTORE_SERVICES_H_
