// File: src/kvstore/remote_graph_service.h
//
// RemoteGraphService: sampling, edge endpoints and degrees of a distributed
// job through its JobClient. Ids are split by owner; remote machines run the
// operation on their own part, this machine's part is worked on in this
// process from shared memory meanwhile. Thread-safe.
#ifndef TESSERA_SRC_KVSTORE_REMOTE_GRAPH_SERVICE_H_
#define TESSERA_SRC_KVSTORE_REMOTE_GRAPH_SERVICE_H_

#include <functional>
#include <memory>
#include <mutex>
#include <span>

#include "src/kvstore/feature_store.h"
#include "src/kvstore/graph_service.h"
#include "src/kvstore/id_groups.h"
#include "src/kvstore/job_client.h"

namespace tessera::kvstore {

class RemoteGraphService : public GraphService {
 public:
  // `features`: the job's, whose metadata says whether sampling weights exist.
  RemoteGraphService(std::shared_ptr<JobClient> job, std::shared_ptr<FeatureStore> features);

  const PartitionBook& book() const override { return book_; }
  StatusOr<sampling::SampledEdges> SampleNeighbors(std::span<const int64_t> seeds,
                                                   const SampleRequest& request) override;
  Status FindEdges(std::span<const int64_t> eids, int64_t* src, int64_t* dst) override;
  Status Degrees(std::span<const int64_t> nids, sampling::EdgeDir dir, int etype,
                 int64_t* out) override;

 private:
  using Split = OwnerSplit;
  // A graph operation over ids split by owner: each remote machine gets
  // make_request(part, ids) in pieces of at most kGraphChunk ids, answered
  // to place(piece, response) as they arrive; this machine's ids go to
  // run_local() meanwhile.
  struct Piece {
    int part;
    size_t begin, count;  // Into split.ids[part].
  };
  Status GraphCall(const Split& split,
                   const std::function<rpc::Message(std::span<const int64_t>)>& make_request,
                   const std::function<Status()>& run_local,
                   const std::function<Status(const Piece&, rpc::Message&)>& place);
  int local_part() const { return local_ ? book_.part_id() : -1; }
  StatusOr<std::shared_ptr<const sampling::LocalGraph>> LocalGraph();

  std::shared_ptr<JobClient> job_;
  std::shared_ptr<FeatureStore> features_;
  rpc::RpcClient* rpc_;
  const PartitionBook& book_;
  ShardMap* local_;  // This machine's shards; null if none.
  std::mutex graph_mutex_;
  std::shared_ptr<const sampling::LocalGraph> graph_;  // This machine's, built on first use.
};

}  // namespace tessera::kvstore

#endif  // TESSERA_SRC_KVSTORE_REMOTE_GRAPH_SERVICE_H_
