// File: src/kvstore/local_store.cc
#include "src/kvstore/local_store.h"

#include <cstring>

#include "fmt/format.h"
#include "fmt/ranges.h"
#include "src/base/memory_budget.h"
#include "src/shm/catalog.h"
#include "tessera/base/resource.h"

namespace tessera::kvstore {

StatusOr<std::unique_ptr<LocalKvStore>> LocalKvStore::Open(const std::string& part_config) {
  ASSIGN_OR_RETURN(PartitionConfig config, ReadPartitionConfig(part_config));
  if (config.num_parts != 1) {
    return absl::FailedPreconditionError(fmt::format(
        "standalone mode needs a one-part partition, and {} has {} parts; start the job with "
        "`tessera launch` (or re-partition with --num-parts 1)",
        part_config, config.num_parts));
  }
  ASSIGN_OR_RETURN(LocalPartition part, LoadPartition(part_config, 0));
  auto partition = std::make_shared<LocalPartition>(std::move(part));
  auto features = std::make_shared<LocalFeatureStore>(partition);
  auto graph = std::make_shared<LocalGraphService>(partition, features);
  return std::unique_ptr<LocalKvStore>(
      new LocalKvStore(features, graph, std::make_shared<LocalCoordinator>()));
}

LocalFeatureStore::LocalFeatureStore(std::shared_ptr<LocalPartition> partition)
    : partition_(std::move(partition)) {
  auto add = [&](const std::string& prefix, shm::Policy policy,
                 std::map<std::string, Array>& arrays) {
    for (auto& [name, array] : arrays) {
      Entry e;
      e.meta = {prefix + name, array.dtype(), array.shape(), policy, true};
      if (e.meta.shape.empty()) e.meta.shape = {1};
      e.data = std::make_shared<Array>(std::move(array));
      tensors_.emplace(e.meta.key, std::move(e));
    }
    arrays.clear();
  };
  add("node/", shm::Policy::kNode, partition_->node_data);
  add("edge/", shm::Policy::kEdge, partition_->edge_data);
}

StatusOr<LocalFeatureStore::Entry*> LocalFeatureStore::Find(const std::string& key) {
  auto it = tensors_.find(key);
  if (it == tensors_.end()) {
    return absl::NotFoundError(fmt::format("no tensor '{}' in graph '{}'", key, graph_name()));
  }
  return &it->second;
}

StatusOr<TensorMeta> LocalFeatureStore::Meta(const std::string& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  ASSIGN_OR_RETURN(Entry * e, Find(key));
  return e->meta;
}

StatusOr<std::vector<TensorMeta>> LocalFeatureStore::List() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<TensorMeta> out;
  for (const auto& [key, e] : tensors_) out.push_back(e.meta);
  return out;
}

Status LocalFeatureStore::CheckIds(const Entry& e, std::span<const int64_t> ids) const {
  int64_t limit = e.meta.shape[0];
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= limit) {
      return absl::OutOfRangeError(
          fmt::format("id {} (position {}) is out of range for '{}' with {} rows", ids[i], i,
                      e.meta.key, limit));
    }
  }
  return absl::OkStatus();
}

Status LocalFeatureStore::PullInto(const std::string& key, std::span<const int64_t> ids,
                                   const RowLayout& layout, void* out) {
  std::lock_guard<std::mutex> lock(mutex_);
  ASSIGN_OR_RETURN(Entry * e, Find(key));
  RETURN_IF_ERROR(CheckLayout(e->meta, layout));
  RETURN_IF_ERROR(CheckIds(*e, ids));
  size_t row_bytes = e->meta.row_bytes();
  const char* base = static_cast<const char*>(e->data->data());
  char* dst = static_cast<char*>(out);
  for (size_t i = 0; i < ids.size(); ++i) {
    std::memcpy(dst + i * row_bytes, base + static_cast<size_t>(ids[i]) * row_bytes, row_bytes);
  }
  return absl::OkStatus();
}

Status LocalFeatureStore::Push(const std::string& key, std::span<const int64_t> ids,
                               const RowLayout& layout, const void* rows, PushMode mode) {
  std::lock_guard<std::mutex> lock(mutex_);
  ASSIGN_OR_RETURN(Entry * e, Find(key));
  RETURN_IF_ERROR(CheckLayout(e->meta, layout));
  RETURN_IF_ERROR(CheckIds(*e, ids));
  if (e->data->is_mapped()) e->data = std::make_shared<Array>(e->data->Clone());  // On first write.
  size_t row_bytes = e->meta.row_bytes();
  char* base = static_cast<char*>(e->data->mutable_data());
  const char* src = static_cast<const char*>(rows);
  for (size_t i = 0; i < ids.size(); ++i) {
    char* dst = base + static_cast<size_t>(ids[i]) * row_bytes;
    if (mode == PushMode::kAdd) {
      shm::AddElements(e->meta.dtype, dst, src + i * row_bytes,
                       row_bytes / DTypeSize(e->meta.dtype));
    } else {
      std::memcpy(dst, src + i * row_bytes, row_bytes);
    }
  }
  return absl::OkStatus();
}

Status LocalFeatureStore::SparseUpdate(const std::string& key, std::span<const int64_t> ids,
                                       int64_t dim, const float* grads,
                                       const SparseOptimizerSpec& spec) {
  RETURN_IF_ERROR(ValidateSparseSpec(spec));
  std::lock_guard<std::mutex> lock(mutex_);  // Rows and state change together.
  ASSIGN_OR_RETURN(Entry * e, Find(key));
  RETURN_IF_ERROR(CheckEmbedding(e->meta, dim));
  RETURN_IF_ERROR(CheckIds(*e, ids));
  std::vector<StateTensor> states = SparseStateOf(spec.kind, dim);
  std::vector<float*> state_base;
  for (const StateTensor& st : states) {
    auto it = tensors_.find(StateKey(key, st));
    if (it == tensors_.end()) {
      return absl::FailedPreconditionError(
          fmt::format("sparse update of '{}': its optimizer state '{}' does not exist", key,
                      StateKey(key, st)));
    }
    Entry& s = it->second;
    if (s.meta.dtype != DType::kFloat32 || s.meta.shape[0] != e->meta.shape[0] ||
        static_cast<int64_t>(s.meta.row_bytes()) != st.width * 4) {
      return absl::FailedPreconditionError(fmt::format(
          "sparse update of '{}': state '{}' has the wrong dtype or shape", key, s.meta.key));
    }
    if (s.data->is_mapped()) s.data = std::make_shared<Array>(s.data->Clone());
    state_base.push_back(static_cast<float*>(s.data->mutable_data()));
  }
  if (e->data->is_mapped()) e->data = std::make_shared<Array>(e->data->Clone());
  float* base = static_cast<float*>(e->data->mutable_data());
  std::vector<float*> state_rows(states.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    for (size_t k = 0; k < states.size(); ++k)
      state_rows[k] = state_base[k] + ids[i] * states[k].width;
    SparseUpdateRow(spec, base + ids[i] * dim, state_rows.data(), grads + i * dim, dim);
  }
  return absl::OkStatus();
}

StatusOr<bool> LocalFeatureStore::InitData(const InitSpec& spec) {
  std::lock_guard<std::mutex> lock(mutex_);
  RETURN_IF_ERROR(ValidateInitSpec(spec, book()));
  std::string key = TensorKey(spec);
  if (auto it = tensors_.find(key); it != tensors_.end()) {
    if (it->second.meta.dtype != spec.dtype || it->second.meta.shape != spec.shape) {
      return absl::AlreadyExistsError(
          fmt::format("tensor '{}' exists as {} [{}]; asked for {} [{}]", spec.name,
                      DTypeName(it->second.meta.dtype), fmt::join(it->second.meta.shape, ", "),
                      DTypeName(spec.dtype), fmt::join(spec.shape, ", ")));
    }
    return false;
  }
  // The whole tensor lives in this process: refuse what it cannot get.
  uint64_t bytes = DTypeSize(spec.dtype);
  bool overflow = false;
  for (int64_t d : spec.shape) overflow |= __builtin_mul_overflow(bytes, d, &bytes);
  if (overflow || bytes > static_cast<uint64_t>(RecentAvailableMemoryBytes())) {
    return absl::ResourceExhaustedError(fmt::format(
        "tensor '{}' {} [{}] needs {}, more than the memory this process can still get ({})",
        spec.name, DTypeName(spec.dtype), fmt::join(spec.shape, ", "),
        overflow ? std::string("more than 2^64 bytes") : FormatBytes(static_cast<int64_t>(bytes)),
        FormatBytes(RecentAvailableMemoryBytes())));
  }
  Entry e;
  e.meta = {key, spec.dtype, spec.shape, spec.policy, spec.persistent};
  e.data = std::make_shared<Array>(Array::Zeros(spec.dtype, spec.shape));
  FillInit(spec, e.data->mutable_data(), static_cast<size_t>(e.data->numel()), 0);
  tensors_.emplace(key, std::move(e));
  return true;
}

Status LocalFeatureStore::DeleteData(const std::string& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  ASSIGN_OR_RETURN(Entry * e, Find(key));
  (void)e;
  tensors_.erase(key);
  return absl::OkStatus();
}

StatusOr<ShardView> LocalFeatureStore::LocalShard(const std::string& key, const RowLayout& layout) {
  std::lock_guard<std::mutex> lock(mutex_);
  ASSIGN_OR_RETURN(Entry * e, Find(key));
  RETURN_IF_ERROR(CheckLayout(e->meta, layout));
  if (e->data->is_mapped()) e->data = std::make_shared<Array>(e->data->Clone());  // Writable.
  return ShardView{e->data->mutable_data(), e->meta.shape[0], e->data};
}

StatusOr<EdgeRows> LocalFeatureStore::EdgeRowsOf(const std::string& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  ASSIGN_OR_RETURN(Entry * e, Find(key));
  return EdgeRows{e->meta.dtype, e->meta.shape, e->data->data(), e->data};
}

StatusOr<std::shared_ptr<const sampling::LocalGraph>> LocalGraphService::LocalGraph() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!graph_) {
    ASSIGN_OR_RETURN(graph_, sampling::LocalGraph::Create(sampling::PartArraysOf(partition_)));
  }
  return graph_;
}

StatusOr<sampling::SampledEdges> LocalGraphService::SampleNeighbors(std::span<const int64_t> seeds,
                                                                    const SampleRequest& request) {
  RETURN_IF_ERROR(CheckFanouts(request.fanout, request.etype_fanouts, book()));
  ASSIGN_OR_RETURN(std::shared_ptr<const sampling::LocalGraph> graph, LocalGraph());
  // The arrays are shared, so the weights stay valid if a push replaces them.
  ASSIGN_OR_RETURN(PartWeights weights,
                   PartWeightsOf(book(), 0, request, [&](const std::string& key) {
                     return features_->EdgeRowsOf(key);
                   }));
  return graph->SampleNeighbors(seeds, NeighborOptionsOf(request, weights));
}

Status LocalGraphService::FindEdges(std::span<const int64_t> eids, int64_t* src, int64_t* dst) {
  ASSIGN_OR_RETURN(std::shared_ptr<const sampling::LocalGraph> graph, LocalGraph());
  return graph->FindEdges(eids, src, dst);
}

Status LocalGraphService::Degrees(std::span<const int64_t> nids, sampling::EdgeDir dir, int etype,
                                  int64_t* out) {
  ASSIGN_OR_RETURN(std::shared_ptr<const sampling::LocalGraph> graph, LocalGraph());
  return graph->Degrees(nids, dir, etype, out);
}

}  // namespace tessera::kvstore
