// File: src/kvstore/shard_map.cc
#include "src/kvstore/shard_map.h"

#include "fmt/format.h"

namespace tessera::kv {

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

}  // namespace tessera::kv
