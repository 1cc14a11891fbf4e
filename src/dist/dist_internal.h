// File: src/dist/dist_internal.h
//
// What the LibTorch translation units of tessera::dist share (dist.cc: the
// runtime, DistGraph, DistTensor, splits; dist_sampling.cc: graph
// operations, blocks and loaders; parallel.cc: the process group): the
// current context, the exit path, Status -> Error, and id tensors <->
// vectors. Not a public header.
#ifndef TESSERA_SRC_DIST_DIST_INTERNAL_H_
#define TESSERA_SRC_DIST_DIST_INTERNAL_H_

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "tessera/base/status.h"
#include "tessera/dist.h"

namespace tessera::dist::internal {

// The process's context; Error if initialize() was not called.
std::shared_ptr<Context> CurrentContext();

// Ends the trainers' process group at exit (parallel.cc): destroys it after
// a clean run; after a failed collective leaks it instead, since LibTorch
// 1.13's ~ProcessGroupGloo drains work that may wait on a hung peer for the
// whole collective timeout. Never throws.
void ReleaseProcessGroup() noexcept;

// SaveCheckpoint / RestoreCheckpoint on a job's services (checkpoint.cc);
// `replace`: a complete checkpoint at `path` is replaced, not an Error.
void SaveCheckpointOf(kvstore::Services& store, const std::string& path, int64_t step,
                      const CheckpointContents& contents, int keep, bool replace);
RestoredCheckpoint RestoreCheckpointOf(kvstore::Services& store, const std::string& path,
                                       const CheckpointContents& contents);

// Throws Error("<what>: <message>") for a failed status.
void ThrowIfError(const Status& status, const std::string& what);

template <typename T>
T ValueOrThrow(StatusOr<T> value, const std::string& what) {
  ThrowIfError(value.status(), what);
  return std::move(*value);
}

// Ids as a contiguous int64 CPU tensor (integer dtypes only, 0-d or 1-d).
torch::Tensor AsIds(const torch::Tensor& ids, const std::string& what);
// A tensor owning `v` (no copy), whatever its allocator.
template <typename Alloc>
torch::Tensor Owned(std::vector<int64_t, Alloc>&& v) {
  if (v.empty()) return torch::empty({0}, torch::kInt64);
  auto* holder = new std::vector<int64_t, Alloc>(std::move(v));
  return torch::from_blob(
      holder->data(), {static_cast<int64_t>(holder->size())}, [holder](void*) { delete holder; },
      torch::kInt64);
}
std::vector<int64_t> ToVector(const torch::Tensor& ids, const std::string& what);
// The elements of a contiguous int64 tensor.
inline std::span<const int64_t> SpanOf(const torch::Tensor& contiguous_ids) {
  return {contiguous_ids.data_ptr<int64_t>(), static_cast<size_t>(contiguous_ids.size(0))};
}

}  // namespace tessera::dist::internal

#endif  // TESSERA_SRC_DIST_DIST_INTERNAL_H_
