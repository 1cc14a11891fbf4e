// File: src/kvstore/kv_server_features.cc
//
// The feature service of a server: PULL, PUSH, SPARSE_UPDATE, INIT_DATA,
// DELETE_DATA and LIST_DATA over this machine's shards.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "fmt/format.h"
#include "spdlog/spdlog.h"
#include "src/base/logging.h"
#include "src/kvstore/feature_store.h"
#include "src/kvstore/graph_service.h"
#include "src/kvstore/kv_server.h"
#include "tessera/base/resource.h"

namespace tessera::kvstore {

using rpc::Message;
using rpc::WireArray;

void KvServer::RegisterFeatureHandlers() {
  On(wire::PULL, [this](const rpc::Peer&, Message& r) -> Reply { return Pull(r); });
  On(wire::PUSH, [this](const rpc::Peer&, Message& r) -> Reply { return Push(r); });
  On(wire::SPARSE_UPDATE,
     [this](const rpc::Peer&, Message& r) -> Reply { return SparseUpdate(r); });
  On(wire::INIT_DATA, [this](const rpc::Peer&, Message& r) -> Reply { return InitData(r); });
  On(wire::DELETE_DATA, [this](const rpc::Peer&, Message& r) -> Reply { return DeleteData(r); });
  On(wire::LIST_DATA, [this](const rpc::Peer&, Message& r) -> Reply { return ListData(r); });
}

StatusOr<std::vector<int64_t>> KvServer::ToLocalRows(const Shard& shard,
                                                     const WireArray& ids) const {
  if (ids.dtype != DType::kInt64 || ids.shape.size() != 1) {
    return absl::InvalidArgumentError("ids must be a 1-d int64 array");
  }
  ASSIGN_OR_RETURN(
      int type, TensorType(book_, shard.info.policy, std::string_view(shard.info.name).substr(5)));
  auto [begin, end] = IdRange(book_, shard.info.policy, type, options_.machine_id);
  if (end - begin != shard.info.rows()) {
    return absl::InternalError(fmt::format("'{}' has {} rows but partition {} owns {} ids",
                                           shard.info.name, shard.info.rows(), options_.machine_id,
                                           end - begin));
  }
  std::vector<int64_t> rows;
  rows.reserve(ids.shape[0]);
  for (int64_t id : ids.span<int64_t>()) {
    if (id < begin || id >= end) {
      return absl::InvalidArgumentError(
          fmt::format("id {} of '{}' is not owned by partition {} (it owns [{}, {}))", id,
                      shard.info.name, options_.machine_id, begin, end));
    }
    rows.push_back(id - begin);
  }
  return rows;
}

StatusOr<Message> KvServer::Pull(const Message& request) {
  RETURN_IF_ERROR(CheckTensorKey(request.header.name()));
  if (request.arrays.size() != 1) {
    return absl::InvalidArgumentError("pull takes exactly one array (the ids)");
  }
  ASSIGN_OR_RETURN(Shard shard, shards_->Get(request.header.name()));
  size_t row_bytes = shard.info.row_bytes();
  RETURN_IF_ERROR(CheckSize(fmt::format("pull of '{}'", shard.info.name),
                            static_cast<uint64_t>(request.arrays[0].rows()), row_bytes));
  ASSIGN_OR_RETURN(std::vector<int64_t> rows, ToLocalRows(shard, request.arrays[0]));
  void* dst = nullptr;
  rpc::Blob blob = rpc::Blob::Allocate(rows.size() * row_bytes, &dst);
  shards_->catalog().ReadRows(shard.info, shard.data(), rows, 0, nullptr, dst);
  Message response = rpc::MakeResponse(request.header, absl::OkStatus());
  WireArray array;
  array.dtype = shard.info.dtype;
  array.shape = shard.info.shape;
  array.shape[0] = static_cast<int64_t>(rows.size());
  array.blob = std::move(blob);
  response.arrays.push_back(std::move(array));
  return response;
}

StatusOr<Message> KvServer::Push(const Message& request) {
  RETURN_IF_ERROR(CheckTensorKey(request.header.name()));
  if (request.arrays.size() != 2) {
    return absl::InvalidArgumentError("push takes exactly two arrays (ids, rows)");
  }
  if (request.header.push_mode() > 1) {
    return absl::InvalidArgumentError(
        fmt::format("unknown push mode {}", request.header.push_mode()));
  }
  ASSIGN_OR_RETURN(Shard shard, shards_->Get(request.header.name()));
  RETURN_IF_ERROR(CheckSize(fmt::format("push to '{}'", shard.info.name),
                            static_cast<uint64_t>(request.arrays[0].rows()),
                            shard.info.row_bytes()));
  ASSIGN_OR_RETURN(std::vector<int64_t> rows, ToLocalRows(shard, request.arrays[0]));
  const WireArray& values = request.arrays[1];
  if (values.dtype != shard.info.dtype || values.row_bytes() != shard.info.row_bytes() ||
      values.rows() != static_cast<int64_t>(rows.size()) || values.shape.empty()) {
    return absl::InvalidArgumentError(fmt::format(
        "push to '{}': rows must be {} with {} bytes per row and one row per id ({} ids), got {} "
        "with {} rows of {} bytes",
        shard.info.name, DTypeName(shard.info.dtype), shard.info.row_bytes(), rows.size(),
        DTypeName(values.dtype), values.rows(), values.row_bytes()));
  }
  bool add = request.header.push_mode() == 1;
  shards_->catalog().WriteRows(shard.info, shard.data(), rows, 0, nullptr, values.blob.data, add);
  return rpc::MakeResponse(request.header, absl::OkStatus());
}

StatusOr<Message> KvServer::SparseUpdate(const Message& request) {
  RETURN_IF_ERROR(CheckTensorKey(request.header.name()));
  if (request.arrays.size() != 2) {
    return absl::InvalidArgumentError("sparse_update takes exactly two arrays (ids, gradients)");
  }
  const wire::SparseOptimizerArgs& args = request.header.sparse_optimizer();
  SparseOptimizerSpec spec{.kind = static_cast<SparseOptimizerKind>(args.kind()),
                           .lr = args.lr(),
                           .eps = args.eps(),
                           .beta1 = args.beta1(),
                           .beta2 = args.beta2()};
  ASSIGN_OR_RETURN(Shard shard, shards_->Get(request.header.name()));
  RETURN_IF_ERROR(CheckSize(fmt::format("sparse update of '{}'", shard.info.name),
                            static_cast<uint64_t>(request.arrays[0].rows()),
                            shard.info.row_bytes()));
  ASSIGN_OR_RETURN(std::vector<int64_t> rows, ToLocalRows(shard, request.arrays[0]));
  const WireArray& grads = request.arrays[1];
  if (grads.dtype != DType::kFloat32 || grads.shape.size() != 2 ||
      grads.rows() != static_cast<int64_t>(rows.size())) {
    return absl::InvalidArgumentError(fmt::format(
        "sparse update of '{}': gradients must be float32 [{}, dim], got {} [{}]", shard.info.name,
        rows.size(), DTypeName(grads.dtype), fmt::join(grads.shape, ", ")));
  }
  RETURN_IF_ERROR(ApplySparseUpdate(*shards_, request.header.name(), rows, 0,
                                    static_cast<const float*>(grads.blob.data), grads.shape[1],
                                    spec));
  return rpc::MakeResponse(request.header, absl::OkStatus());
}

StatusOr<Message> KvServer::InitData(const Message& request) {
  if (options_.local_index != 0) {
    return absl::FailedPreconditionError(fmt::format(
        "server {} is not a main server; init_data goes to local index 0", server_id()));
  }
  const wire::InitDataArgs& args = request.header.init_data();
  if (args.policy() > 1) return absl::InvalidArgumentError("policy must be node (0) or edge (1)");
  InitSpec spec{.name = args.name(),
                .dtype = static_cast<DType>(std::min<uint32_t>(args.dtype(), 255)),
                .shape = std::vector<int64_t>(args.shape().begin(), args.shape().end()),
                .policy = static_cast<shm::Policy>(args.policy()),
                .init = static_cast<Init>(std::min<uint32_t>(args.init(), 255)),
                .a = args.a(),
                .b = args.b(),
                .seed = args.seed(),
                .persistent = args.persistent()};
  RETURN_IF_ERROR(ValidateInitSpec(spec, book_));
  std::string key = TensorKey(spec);
  ASSIGN_OR_RETURN(int type, TensorType(book_, spec.policy, spec.name));
  auto [first_row, end_row] = IdRange(book_, spec.policy, type, options_.machine_id);
  shm::ArrayInfo info;
  info.name = key;
  info.dtype = spec.dtype;
  info.policy = spec.policy;
  info.persistent = spec.persistent;
  info.shape = spec.shape;
  info.shape[0] = end_row - first_row;  // This machine's shard.
  Message response = rpc::MakeResponse(request.header, absl::OkStatus());
  if (StatusOr<shm::ArrayInfo> existing = shards_->catalog().Find(key); existing.ok()) {
    if (existing->dtype != spec.dtype || existing->shape != info.shape) {
      return absl::AlreadyExistsError(
          fmt::format("tensor '{}' exists as {} with shard shape [{}]; asked for {} [{}]",
                      spec.name, DTypeName(existing->dtype), fmt::join(existing->shape, ", "),
                      DTypeName(spec.dtype), fmt::join(info.shape, ", ")));
    }
    response.header.set_created(false);
    return response;
  }
  shm::Catalog& catalog = shards_->mutable_catalog();
  info.id = catalog.ReserveId(&info.segment);
  StatusOr<shm::SharedSegment> created = shm::SharedSegment::Create(info.segment, info.nbytes());
  if (!created.ok()) {
    return Annotate(created.status(),
                    fmt::format("server {}: creating '{}' {} [{}]", server_id(), key,
                                DTypeName(spec.dtype), fmt::join(info.shape, ", ")));
  }
  shm::SharedSegment segment = std::move(*created);
  size_t row_elems = info.row_bytes() / DTypeSize(spec.dtype);
  FillInit(spec, segment.data(), row_elems * static_cast<size_t>(info.shape[0]),
           static_cast<uint64_t>(first_row) * row_elems);
  RETURN_IF_ERROR(catalog.Add(&info));
  owned_.emplace(info.id, std::move(segment));
  spdlog::debug("server {}: created '{}' {} [{}]", server_id(), key, DTypeName(spec.dtype),
                fmt::join(info.shape, ", "));
  response.header.set_created(true);
  return response;
}

StatusOr<Message> KvServer::DeleteData(const Message& request) {
  if (options_.local_index != 0) {
    return absl::FailedPreconditionError(fmt::format(
        "server {} is not a main server; delete_data goes to local index 0", server_id()));
  }
  RETURN_IF_ERROR(CheckTensorKey(request.header.name()));
  ASSIGN_OR_RETURN(shm::ArrayInfo info, shards_->catalog().Find(request.header.name()));
  RETURN_IF_ERROR(shards_->mutable_catalog().Remove(info.name));
  owned_.erase(info.id);  // Unlinks; mappings elsewhere stay valid until dropped.
  return rpc::MakeResponse(request.header, absl::OkStatus());
}

StatusOr<Message> KvServer::ListData(const Message& request) {
  Message response = rpc::MakeResponse(request.header, absl::OkStatus());
  for (const shm::ArrayInfo& info : shards_->catalog().List()) {
    wire::DataInfo* d = response.header.add_data_infos();
    d->set_name(info.name);
    d->set_dtype(static_cast<uint32_t>(info.dtype));
    for (int64_t v : info.shape) d->add_shape(v);
    d->set_policy(static_cast<uint32_t>(info.policy));
    d->set_persistent(info.persistent);
  }
  return response;
}

}  // namespace tessera::kvstore
