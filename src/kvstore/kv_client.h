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
#include "src/kvstore/services.h"

namespace tessera::kvstore {

class KvClient : public Services {
 public:
  static StatusOr<std::unique_ptr<KvClient>> Connect(const KvClientOptions& options);

  int num_machines() const { return book().num_partitions(); }
  const KvClientOptions& options() const { return connection().options(); }
  // This machine's shards, mapped; null when this machine serves no data here.
  ShardMap* local_shards() const { return connection().local_shards(); }

 private:
  using Services::Services;
  // The coordinator Connect() gave the bundle is the job's connection.
  const JobClient& connection() const { return static_cast<const JobClient&>(job()); }
};

}  // namespace tessera::kvstore

#endif  // TESSERA_SRC_KVSTORE_KV_CLIENT_H_
