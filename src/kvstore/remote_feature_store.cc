// File: src/kvstore/remote_feature_store.cc
#include "src/kvstore/remote_feature_store.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "fmt/format.h"
#include "fmt/ranges.h"
#include "src/kvstore/id_groups.h"
#include "tessera/base/resource.h"

namespace tessera::kvstore {

using rpc::Message;

namespace {

// Remote pulls and pushes travel in requests of at most this many bytes of
// rows: the server answers the first while later ones are still queued (so
// gathering, transfer and placing overlap), and buffers of this size are
// recycled by malloc instead of being mapped and faulted in afresh (as 100 MB
// answers would be). 1 MiB measured best on loopback (bench/README.md).
constexpr size_t kChunkBytes = size_t{1} << 20;

// DataLoss unless this machine's shard of a tensor has the rows its meta
// says (the tensor was created again since the meta was read).
Status CheckShard(const Shard& shard, const TensorMeta& meta) {
  if (shard.info.dtype == meta.dtype && shard.info.row_bytes() == meta.row_bytes()) {
    return absl::OkStatus();
  }
  return absl::DataLossError(fmt::format(
      "this machine's shard of '{}' holds {} rows of {} bytes, not {} rows of {} bytes: was it "
      "created again meanwhile?",
      meta.key, DTypeName(shard.info.dtype), shard.info.row_bytes(), DTypeName(meta.dtype),
      meta.row_bytes()));
}

}  // namespace

RemoteFeatureStore::RemoteFeatureStore(std::shared_ptr<JobClient> job)
    : job_(std::move(job)), rpc_(&job_->rpc()), book_(job_->book()), local_(job_->local_shards()) {}

Status RemoteFeatureStore::CheckRowFits(const TensorMeta& meta) const {
  return job_->CheckFrameFits(meta.row_bytes(), fmt::format("a row of '{}'", meta.key));
}

StatusOr<TensorMeta> RemoteFeatureStore::Meta(const std::string& key) {
  {
    std::lock_guard<std::mutex> lock(meta_mutex_);
    if (auto it = meta_cache_.find(key); it != meta_cache_.end()) return it->second;
  }
  ASSIGN_OR_RETURN(std::vector<TensorMeta> all, List());
  for (TensorMeta& meta : all) {
    if (meta.key == key) return meta;
  }
  return absl::NotFoundError(fmt::format("no tensor '{}' in graph '{}'", key, job_->graph_name()));
}

void RemoteFeatureStore::ForgetMeta(const std::string& key) {
  std::lock_guard<std::mutex> lock(meta_mutex_);
  meta_cache_.erase(key);
}

StatusOr<TensorMeta> RemoteFeatureStore::CheckedMeta(
    const std::string& key, const std::function<Status(const TensorMeta&)>& check) {
  ASSIGN_OR_RETURN(TensorMeta meta, Meta(key));
  if (check(meta).ok()) return meta;
  ForgetMeta(key);
  ASSIGN_OR_RETURN(meta, Meta(key));
  RETURN_IF_ERROR(check(meta));
  return meta;
}

StatusOr<std::vector<TensorMeta>> RemoteFeatureStore::List() {
  int server = local_ ? job_->PickServer(book_.part_id()) : job_->PickServer(0);
  ASSIGN_OR_RETURN(Message response,
                   rpc_->CallOne(server, rpc::MakeRequest(wire::LIST_DATA), job_->CallDeadline()));
  std::vector<TensorMeta> out;
  std::lock_guard<std::mutex> lock(meta_mutex_);
  for (const wire::DataInfo& d : response.header.data_infos()) {
    if (d.policy() > 1 || d.dtype() > static_cast<uint32_t>(DType::kFloat64)) continue;
    TensorMeta meta;
    meta.key = d.name();
    meta.dtype = static_cast<DType>(d.dtype());
    meta.shape.assign(d.shape().begin(), d.shape().end());
    meta.policy = static_cast<shm::Policy>(d.policy());
    meta.persistent = d.persistent();
    if (meta.shape.empty()) continue;
    // Buffers are sized from this shape: it must be one a tensor can have.
    uint64_t row_bytes = DTypeSize(meta.dtype);
    bool valid = meta.shape.size() <= shm::Catalog::kMaxDims;
    for (size_t i = 0; valid && i < meta.shape.size(); ++i) {
      valid = meta.shape[i] >= 0 &&
              (i == 0 || !__builtin_mul_overflow(row_bytes, static_cast<uint64_t>(meta.shape[i]),
                                                 &row_bytes));
    }
    if (!valid || row_bytes > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return absl::DataLossError(fmt::format("{} lists '{}' with an impossible shape [{}]",
                                             rpc_->endpoint(server), meta.key,
                                             fmt::join(meta.shape, ", ")));
    }
    StatusOr<int> type = TensorType(book_, meta.policy, std::string_view(meta.key).substr(5));
    if (!type.ok()) {
      return absl::DataLossError(fmt::format("{} lists '{}': {}", rpc_->endpoint(server), meta.key,
                                             std::string(type.status().message())));
    }
    meta.type = *type;
    meta.shape[0] = NumIds(book_, meta.policy, meta.type);
    meta_cache_[meta.key] = meta;
    out.push_back(std::move(meta));
  }
  return out;
}

Status RemoteFeatureStore::PullInto(const std::string& key, std::span<const int64_t> ids,
                                    const RowLayout& layout, void* out) {
  RETURN_IF_ERROR(job_->Health());
  ASSIGN_OR_RETURN(TensorMeta meta,
                   CheckedMeta(key, [&](const TensorMeta& m) { return CheckLayout(m, layout); }));
  ASSIGN_OR_RETURN(Split split,
                   SplitByOwner(book_, meta.policy, meta.type, fmt::format("'{}'", meta.key), ids));
  size_t row_bytes = meta.row_bytes();
  char* dst = static_cast<char*>(out);
  int local_part = local_ ? book_.part_id() : -1;
  // Remote ids are sorted and deduplicated per owner: each distinct row
  // travels once, and the owner gathers in address order.
  std::vector<GroupedIds> grouped(book_.num_partitions());
  std::vector<rpc::Call> calls;
  struct Piece {
    int part;
    size_t begin;  // Into grouped[part].ids.
  };
  std::vector<Piece> pieces;
  // Both the rows and their int64 ids stay within a piece.
  size_t chunk_rows = std::max<size_t>(1, kChunkBytes / std::max(sizeof(int64_t), row_bytes));
  for (int p = 0; p < book_.num_partitions(); ++p) {
    if (p == local_part || split.ids[p].empty()) continue;
    grouped[p] =
        GroupIds(split.ids[p], split.positions[p], IdRange(book_, meta.policy, meta.type, p));
    const std::vector<int64_t>& ids_p = grouped[p].ids;
    for (size_t begin = 0; begin < ids_p.size(); begin += chunk_rows) {
      size_t end = std::min(ids_p.size(), begin + chunk_rows);
      Message request = rpc::MakeRequest(wire::PULL);
      request.header.set_name(key);
      request.arrays.push_back(
          rpc::MakeWireArray(std::vector<int64_t>(ids_p.begin() + begin, ids_p.begin() + end)));
      calls.push_back({job_->PickServer(p), std::move(request)});
      pieces.push_back({p, begin});
    }
  }
  Status local_status;
  auto copy_local = [&] {
    if (local_part < 0 || split.ids[local_part].empty()) return;
    StatusOr<Shard> shard = local_->Get(key);
    local_status = shard.ok() ? CheckShard(*shard, meta) : shard.status();
    if (!local_status.ok()) return ForgetMeta(meta.key);
    int64_t first = IdRange(book_, meta.policy, meta.type, local_part).first;
    local_->catalog().ReadRows(shard->info, shard->data(), split.ids[local_part], first,
                               split.positions[local_part].data(), dst);
  };
  if (calls.empty()) {
    copy_local();
    return local_status;
  }
  // Rows are placed as each answer arrives, while later ones are in flight.
  auto place = [&](size_t c, Message& response) -> Status {
    int p = pieces[c].part;
    size_t begin = pieces[c].begin;
    const GroupedIds& g = grouped[p];
    size_t count = std::min(chunk_rows, g.ids.size() - begin);
    if (response.arrays.size() != 1 || response.arrays[0].dtype != meta.dtype ||
        response.arrays[0].row_bytes() != row_bytes ||
        response.arrays[0].rows() != static_cast<int64_t>(count)) {
      ForgetMeta(key);
      return absl::DataLossError(fmt::format(
          "pull of '{}' from machine {}: the answer does not match the tensor's dtype, row size "
          "or the number of ids",
          key, p));
    }
    const char* src = static_cast<const char*>(response.arrays[0].blob.data);
    for (size_t i = 0; i < count; ++i) {
      size_t u = begin + i;
      for (size_t k = g.group_start[u]; k < g.group_start[u + 1]; ++k) {
        std::memcpy(dst + static_cast<size_t>(g.positions[k]) * row_bytes, src + i * row_bytes,
                    row_bytes);
      }
    }
    return absl::OkStatus();
  };
  RETURN_IF_ERROR(
      rpc_->CallMany(std::move(calls), job_->CallDeadline(), copy_local, place).status());
  return local_status;
}

Status RemoteFeatureStore::ScatterRows(const TensorMeta& meta, std::span<const int64_t> ids,
                                       const void* rows, const std::function<void(Message*)>& fill,
                                       const LocalRows& local) {
  ASSIGN_OR_RETURN(Split split,
                   SplitByOwner(book_, meta.policy, meta.type, fmt::format("'{}'", meta.key), ids));
  size_t row_bytes = meta.row_bytes();
  const char* src = static_cast<const char*>(rows);
  int local_part = local_ ? book_.part_id() : -1;
  std::vector<rpc::Call> calls;
  // Both the rows and their int64 ids stay within a piece.
  size_t chunk_rows = std::max<size_t>(1, kChunkBytes / std::max(sizeof(int64_t), row_bytes));
  for (int p = 0; p < book_.num_partitions(); ++p) {
    if (p == local_part || split.ids[p].empty()) continue;
    RETURN_IF_ERROR(CheckRowFits(meta));  // Pieces hold at least one row.
    const auto& positions = split.positions[p];
    const auto& ids_p = split.ids[p];
    for (size_t begin = 0; begin < positions.size(); begin += chunk_rows) {
      size_t count = std::min(chunk_rows, positions.size() - begin);
      void* buffer = nullptr;
      rpc::Blob values = rpc::Blob::Allocate(count * row_bytes, &buffer);
      char* packed = static_cast<char*>(buffer);
      for (size_t i = 0; i < count; ++i) {
        std::memcpy(packed + i * row_bytes,
                    src + static_cast<size_t>(positions[begin + i]) * row_bytes, row_bytes);
      }
      Message request;
      fill(&request);
      request.header.set_name(meta.key);
      request.arrays.push_back(rpc::MakeWireArray(
          std::vector<int64_t>(ids_p.begin() + begin, ids_p.begin() + begin + count)));
      std::vector<int64_t> shape = meta.shape;
      shape[0] = static_cast<int64_t>(count);
      request.arrays.push_back({meta.dtype, shape, std::move(values)});
      calls.push_back({job_->PickServer(p), std::move(request)});
    }
  }
  Status local_status;
  auto write_local = [&] {
    if (local_part < 0 || split.ids[local_part].empty()) return;
    StatusOr<Shard> shard = local_->Get(meta.key);
    local_status = shard.ok() ? CheckShard(*shard, meta) : shard.status();
    if (!local_status.ok()) return ForgetMeta(meta.key);
    int64_t first = IdRange(book_, meta.policy, meta.type, local_part).first;
    local_status = local(*shard, split.ids[local_part], split.positions[local_part].data(), first);
  };
  if (calls.empty()) {
    write_local();
    return local_status;
  }
  RETURN_IF_ERROR(rpc_->CallMany(std::move(calls), job_->CallDeadline(), write_local).status());
  return local_status;
}

Status RemoteFeatureStore::Push(const std::string& key, std::span<const int64_t> ids,
                                const RowLayout& layout, const void* rows, PushMode mode) {
  RETURN_IF_ERROR(job_->Health());
  ASSIGN_OR_RETURN(TensorMeta meta,
                   CheckedMeta(key, [&](const TensorMeta& m) { return CheckLayout(m, layout); }));
  return ScatterRows(
      meta, ids, rows,
      [mode](Message* request) {
        *request = rpc::MakeRequest(wire::PUSH);
        request->header.set_push_mode(static_cast<uint32_t>(mode));
      },
      [&](const Shard& shard, std::span<const int64_t> local_ids, const int64_t* positions,
          int64_t first) {
        local_->catalog().WriteRows(shard.info, shard.data(), local_ids, first, positions, rows,
                                    mode == PushMode::kAdd);
        return absl::OkStatus();
      });
}

Status RemoteFeatureStore::SparseUpdate(const std::string& key, std::span<const int64_t> ids,
                                        int64_t dim, const float* grads,
                                        const SparseOptimizerSpec& spec) {
  RETURN_IF_ERROR(job_->Health());
  RETURN_IF_ERROR(ValidateSparseSpec(spec));
  ASSIGN_OR_RETURN(TensorMeta meta,
                   CheckedMeta(key, [dim](const TensorMeta& m) { return CheckEmbedding(m, dim); }));
  return ScatterRows(
      meta, ids, grads,
      [&spec](Message* request) {
        *request = rpc::MakeRequest(wire::SPARSE_UPDATE);
        wire::SparseOptimizerArgs* args = request->header.mutable_sparse_optimizer();
        args->set_kind(static_cast<uint32_t>(spec.kind));
        args->set_lr(spec.lr);
        args->set_eps(spec.eps);
        args->set_beta1(spec.beta1);
        args->set_beta2(spec.beta2);
      },
      [&](const Shard&, std::span<const int64_t> local_ids, const int64_t* positions,
          int64_t first) {
        // This machine's rows: updated in process, under the same row locks
        // the servers take.
        std::vector<float> packed(local_ids.size() * static_cast<size_t>(dim));
        for (size_t i = 0; i < local_ids.size(); ++i) {
          std::memcpy(packed.data() + i * dim, grads + positions[i] * dim, dim * sizeof(float));
        }
        return ApplySparseUpdate(*local_, key, local_ids, first, packed.data(), dim, spec);
      });
}

StatusOr<bool> RemoteFeatureStore::InitData(const InitSpec& spec) {
  RETURN_IF_ERROR(job_->Health());
  std::vector<rpc::Call> calls;
  for (int m = 0; m < book_.num_partitions(); ++m) {
    Message request = rpc::MakeRequest(wire::INIT_DATA);
    wire::InitDataArgs* args = request.header.mutable_init_data();
    args->set_name(spec.name);
    args->set_dtype(static_cast<uint32_t>(spec.dtype));
    for (int64_t d : spec.shape) args->add_shape(d);
    args->set_policy(static_cast<uint32_t>(spec.policy));
    args->set_init(static_cast<uint32_t>(spec.init));
    args->set_a(spec.a);
    args->set_b(spec.b);
    args->set_seed(spec.seed);
    args->set_persistent(spec.persistent);
    calls.push_back({m * job_->options().servers_per_machine, std::move(request)});
  }
  ASSIGN_OR_RETURN(std::vector<Message> responses,
                   rpc_->CallMany(std::move(calls), job_->CallDeadline()));
  // Trainers creating the same tensor at once may each win on a different
  // machine; machine 0's server decides who created it (and so who deletes
  // a non-persistent one): exactly one caller.
  return responses.front().header.created();
}

Status RemoteFeatureStore::DeleteData(const std::string& key) {
  RETURN_IF_ERROR(job_->Health());
  std::vector<rpc::Call> calls;
  for (int m = 0; m < book_.num_partitions(); ++m) {
    Message request = rpc::MakeRequest(wire::DELETE_DATA);
    request.header.set_name(key);
    calls.push_back({m * job_->options().servers_per_machine, std::move(request)});
  }
  ForgetMeta(key);
  return rpc_->CallMany(std::move(calls), job_->CallDeadline()).status();
}

StatusOr<ShardView> RemoteFeatureStore::LocalShard(const std::string& key,
                                                   const RowLayout& layout) {
  RETURN_IF_ERROR(job_->Health());
  if (!local_) {
    return absl::FailedPreconditionError(fmt::format(
        "'{}': this process maps no shard (its machine runs no server of the job)", key));
  }
  ASSIGN_OR_RETURN(TensorMeta meta,
                   CheckedMeta(key, [&](const TensorMeta& m) { return CheckLayout(m, layout); }));
  ASSIGN_OR_RETURN(Shard shard, local_->Get(key));
  Status fits = CheckShard(shard, meta);
  auto [first, end] = IdRange(book_, meta.policy, meta.type, book_.part_id());
  if (fits.ok() && shard.info.rows() != end - first) {
    fits =
        absl::DataLossError(fmt::format("this machine's shard of '{}' has {} rows, not the {} "
                                        "its partition owns",
                                        key, shard.info.rows(), end - first));
  }
  if (!fits.ok()) {
    ForgetMeta(key);
    return fits;
  }
  return ShardView{shard.data(), end - first, shard.segment};
}

}  // namespace tessera::kvstore
