// File: src/kvstore/shard_map.cc
#include "src/kvstore/shard_map.h"

#include "fmt/format.h"
#include "src/kvstore/graph_service.h"

namespace tessera::kvstore {

StatusOr<Shard> ShardMap::Get(const std::string& name) {
  std::lock_guard<std::mutex> lock(mutex_);
  uint64_t generation = catalog_.generation();
  if (generation != generation_) {
    // Drop mappings of arrays that were removed or replaced.
    std::map<uint64_t, bool> live;
    for (const shm::ArrayInfo& info : catalog_.List()) live[info.id] = true;
    for (auto it = cache_.begin(); it != cache_.end();) {
      it = live.count(it->second.info.id) ? std::next(it) : cache_.erase(it);
    }
    generation_ = generation;
  }
  if (auto it = cache_.find(name); it != cache_.end()) return it->second;
  ASSIGN_OR_RETURN(shm::ArrayInfo info, catalog_.Find(name));
  ASSIGN_OR_RETURN(shm::SharedSegment segment,
                   shm::SharedSegment::Open(info.segment, /*writable=*/true));
  if (segment.size() < info.nbytes()) {
    return absl::DataLossError(fmt::format("shared memory {} of '{}' has {} bytes, expected {}",
                                           info.segment, name, segment.size(), info.nbytes()));
  }
  Shard shard{std::move(info), std::make_shared<shm::SharedSegment>(std::move(segment))};
  cache_[name] = shard;
  return shard;
}

StatusOr<std::shared_ptr<const sampling::LocalGraph>> LocalGraphFromShards(
    ShardMap& shards, const PartitionBook& book, int halo_hops) {
  struct Held {
    std::vector<std::shared_ptr<shm::SharedSegment>> segments;
  };
  auto held = std::make_shared<Held>();
  auto get = [&](const std::string& name) -> StatusOr<std::span<const int64_t>> {
    ASSIGN_OR_RETURN(Shard shard, shards.Get("graph/" + name));
    if (shard.info.dtype != DType::kInt64 || shard.info.shape.size() != 1) {
      return absl::DataLossError(
          fmt::format("shared array graph/{} is not a 1-d int64 array", name));
    }
    held->segments.push_back(shard.segment);
    return std::span<const int64_t>(static_cast<const int64_t*>(shard.data()),
                                    static_cast<size_t>(shard.info.shape[0]));
  };
  int part = book.part_id();
  sampling::PartArrays arrays{.part_id = part,
                              .halo_hops = halo_hops,
                              .node_range = book.NodeRange(part),
                              .edge_range = book.EdgeRange(part)};
  ASSIGN_OR_RETURN(arrays.nid, get("nid"));
  ASSIGN_OR_RETURN(arrays.indptr, get("indptr"));
  ASSIGN_OR_RETURN(arrays.indices, get("indices"));
  ASSIGN_OR_RETURN(arrays.eid, get("eid"));
  arrays.num_etypes = book.num_etypes();
  if (!book.is_homogeneous()) {
    ASSIGN_OR_RETURN(Shard shard, shards.Get("graph/etype"));
    if (shard.info.dtype != DType::kInt32 || shard.info.shape.size() != 1 ||
        shard.info.shape[0] != static_cast<int64_t>(arrays.eid.size())) {
      return absl::DataLossError("shared array graph/etype is not int32 [stored edges]");
    }
    held->segments.push_back(shard.segment);
    arrays.etype = std::span<const int32_t>(static_cast<const int32_t*>(shard.data()),
                                            static_cast<size_t>(shard.info.shape[0]));
  }
  arrays.keepalive = std::move(held);
  return sampling::LocalGraph::Create(std::move(arrays));
}

StatusOr<PartWeights> EdgeWeightsFromShards(ShardMap& shards, const PartitionBook& book, int part,
                                            const SampleRequest& request) {
  return PartWeightsOf(book, part, request, [&](const std::string& key) -> StatusOr<EdgeRows> {
    ASSIGN_OR_RETURN(Shard shard, shards.Get(key));
    return EdgeRows{shard.info.dtype, shard.info.shape, shard.data(), shard.segment};
  });
}

}  // namespace tessera::kvstore
