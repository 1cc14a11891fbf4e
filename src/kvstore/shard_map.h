// File: src/kvstore/shard_map.h
//
// ShardMap: the arrays of one machine's catalog, mapped on first use and
// remapped when the catalog changes (an array deleted and re-created under the
// same name is noticed through the catalog generation). Used by every server
// of the machine and by its local clients. Thread-safe.
#ifndef TESSERA_SRC_KVSTORE_SHARD_MAP_H_
#define TESSERA_SRC_KVSTORE_SHARD_MAP_H_

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "src/sampling/local_graph.h"
#include "src/shm/catalog.h"
#include "src/shm/segment.h"
#include "tessera/base/status.h"
#include "tessera/partition/partition_book.h"

namespace tessera::kvstore {

struct Shard {
  shm::ArrayInfo info;
  std::shared_ptr<shm::SharedSegment> segment;  // Keeps the mapping alive.
  void* data() const { return segment->data(); }
};

class ShardMap {
 public:
  explicit ShardMap(shm::Catalog catalog) : catalog_(std::move(catalog)) {}

  // The array named `name` (catalog key, e.g. "node/feat"); NotFound if none.
  StatusOr<Shard> Get(const std::string& name);
  const shm::Catalog& catalog() const { return catalog_; }
  shm::Catalog& mutable_catalog() { return catalog_; }

 private:
  shm::Catalog catalog_;
  std::mutex mutex_;
  uint64_t generation_ = 0;
  std::map<std::string, Shard> cache_;
};

// The graph structure a machine's main server published ("graph/*"), as the
// LocalGraph of partition book.part_id(). The result keeps the mappings.
StatusOr<std::shared_ptr<const sampling::LocalGraph>> LocalGraphFromShards(
    ShardMap& shards, const PartitionBook& book, int halo_hops);

struct SampleRequest;  // src/kvstore/graph_service.h (which includes this header).
struct PartWeights;

// This machine's sampling weights for `request` (partition `part`'s owned
// edges; PartWeightsOf in src/kvstore/graph_service.h), read from its shards.
StatusOr<PartWeights> EdgeWeightsFromShards(ShardMap& shards, const PartitionBook& book, int part,
                                            const SampleRequest& request);

}  // namespace tessera::kvstore

#endif  // TESSERA_SRC_KVSTORE_SHARD_MAP_H_
