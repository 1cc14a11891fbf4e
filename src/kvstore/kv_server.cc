// File: src/kvstore/kv_server.cc
#include "src/kvstore/kv_server.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "fmt/format.h"
#include "spdlog/spdlog.h"
#include "src/base/logging.h"
#include "src/base/random.h"
#include "src/base/resource.h"
#include "src/base/time.h"
#include "src/kvstore/kv_store.h"
#include "src/partition/load_partition.h"

namespace tessera::kv {
namespace {

using rpc::Message;
using rpc::WireArray;

constexpr size_t kCopyChunk = size_t{64} << 20;

// Barriers of more clients than this are refused even when the job size is
// unknown: each waiting client holds an entry until the barrier completes.
constexpr int kMaxBarrierClients = 1 << 16;

std::string Bytes(uint64_t n) {
  return n > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())
             ? fmt::format("{} B", n)
             : FormatBytes(static_cast<int64_t>(n));
}

}  // namespace

KvServer::KvServer(KvServerOptions options, PartitionBook book, std::string graph_name,
                   int halo_hops)
    : options_(std::move(options)),
      book_(std::move(book)),
      graph_name_(std::move(graph_name)),
      halo_hops_(halo_hops) {}

KvServer::~KvServer() {
  // Data segments first, then (with shards_) the catalog.
  owned_.clear();
  shards_.reset();
}

StatusOr<std::unique_ptr<KvServer>> KvServer::Load(const KvServerOptions& options,
                                                   const std::atomic<bool>& cancel) {
  Stopwatch watch;
  std::string what = fmt::format("server {}", options.machine_id * options.servers_per_machine);
  spdlog::info("{}: loading partition {} of {}", what, options.machine_id, options.part_config);
  ASSIGN_OR_RETURN(LocalPartition part, LoadPartition(options.part_config, options.machine_id));
  ASSIGN_OR_RETURN(shm::Catalog catalog, shm::Catalog::Create(options.job_id, options.machine_id));
  int64_t inner_nodes = part.num_inner_nodes();
  std::unique_ptr<KvServer> server(
      new KvServer(options, std::move(part.book), part.config.graph_name, part.config.halo_hops));
  server->shards_ = std::make_unique<ShardMap>(std::move(catalog));

  std::vector<std::pair<std::string, const Array*>> arrays = {
      {"graph/nid", &part.nid},       {"graph/inner_node", &part.inner_node},
      {"graph/indptr", &part.indptr}, {"graph/indices", &part.indices},
      {"graph/eid", &part.eid},       {"graph/inner_edge", &part.inner_edge}};
  if (part.config.typed()) {  // The relation of every stored edge, for typed sampling.
    arrays.push_back({"graph/ntype", &part.ntype});
    arrays.push_back({"graph/etype", &part.etype});
  }
  for (const auto& [name, array] : part.node_data) arrays.push_back({"node/" + name, &array});
  for (const auto& [name, array] : part.edge_data) arrays.push_back({"edge/" + name, &array});
  int64_t total = 0;
  for (const auto& entry : arrays) total += static_cast<int64_t>(entry.second->nbytes());
  RETURN_IF_ERROR(
      Annotate(shm::CheckSharedMemoryRoom(fmt::format("partition {}", options.machine_id),
                                          static_cast<uint64_t>(total)),
               what));
  Progress progress(fmt::format("{}: copying partition to shared memory", what), total, "bytes");
  int64_t done = 0;
  shm::Catalog& cat = server->shards_->mutable_catalog();
  for (const auto& [name, array] : arrays) {
    shm::ArrayInfo info;
    info.name = name;
    info.dtype = array->dtype();
    info.shape = array->shape();
    if (info.shape.empty()) info.shape = {1};
    info.policy = name.rfind("graph/", 0) == 0  ? shm::Policy::kLocal
                  : name.rfind("node/", 0) == 0 ? shm::Policy::kNode
                                                : shm::Policy::kEdge;
    info.id = cat.ReserveId(&info.segment);
    StatusOr<shm::SharedSegment> created =
        shm::SharedSegment::Create(info.segment, array->nbytes());
    if (!created.ok()) {
      return Annotate(created.status(), fmt::format("{}: loading '{}' of partition {}", what, name,
                                                    options.machine_id));
    }
    shm::SharedSegment segment = std::move(*created);
    const char* src = static_cast<const char*>(array->data());
    char* dst = static_cast<char*>(segment.data());
    for (size_t off = 0; off < array->nbytes(); off += kCopyChunk) {
      if (cancel.load()) return absl::CancelledError(fmt::format("{}: loading cancelled", what));
      size_t n = std::min(kCopyChunk, array->nbytes() - off);
      std::memcpy(dst + off, src + off, n);
      done += static_cast<int64_t>(n);
      progress.Update(done);
    }
    array->ReleasePages();  // The file's pages are no longer needed.
    RETURN_IF_ERROR(cat.Add(&info));
    server->owned_.emplace(info.id, std::move(segment));
  }
  progress.Done();
  spdlog::info(
      "{}: partition {} ready: {} nodes ({} inner), {} edges, {} arrays, {} in shared "
      "memory, {:.2f} s, peak RSS {}",
      what, options.machine_id, part.num_local_nodes(), inner_nodes, part.num_local_edges(),
      arrays.size(), FormatBytes(total), watch.Seconds(), FormatBytes(PeakRssBytes()));
  return server;
}

StatusOr<std::unique_ptr<KvServer>> KvServer::Attach(const KvServerOptions& options) {
  ASSIGN_OR_RETURN(PartitionConfig config, ReadPartitionConfig(options.part_config));
  if (options.machine_id < 0 || options.machine_id >= config.num_parts) {
    return absl::InvalidArgumentError(fmt::format("machine {} has no partition: {} has {} parts",
                                                  options.machine_id, options.part_config,
                                                  config.num_parts));
  }
  ASSIGN_OR_RETURN(PartitionBook book, config.Book(options.machine_id));
  return std::unique_ptr<KvServer>(
      new KvServer(options, std::move(book), config.graph_name, config.halo_hops));
}

Status KvServer::EnsureCatalog() {
  if (shards_) return absl::OkStatus();
  StatusOr<shm::Catalog> catalog = shm::Catalog::Open(options_.job_id, options_.machine_id);
  if (!catalog.ok()) {
    return absl::UnavailableError(
        fmt::format("server {}: the main server of machine {} has not published its data yet ({})",
                    server_id(), options_.machine_id, std::string(catalog.status().message())));
  }
  shards_ = std::make_unique<ShardMap>(std::move(*catalog));
  return absl::OkStatus();
}

std::optional<Message> KvServer::Handle(const rpc::Peer& peer, Message& request) {
  try {
    return Dispatch(peer, request);
  } catch (const std::bad_alloc&) {
    return rpc::MakeResponse(
        request.header, absl::ResourceExhaustedError(
                            fmt::format("server {}: out of memory while serving {}", server_id(),
                                        rpc::MethodName(request.header.method()))));
  } catch (const std::exception& e) {
    return rpc::MakeResponse(
        request.header,
        absl::InternalError(fmt::format("server {}: {} failed: {}", server_id(),
                                        rpc::MethodName(request.header.method()), e.what())));
  }
}

Status KvServer::CheckSize(std::string_view what, uint64_t count, uint64_t item_bytes) const {
  uint64_t bytes = 0;
  bool overflow = __builtin_mul_overflow(count, item_bytes, &bytes);
  if (!overflow && bytes <= options_.max_response_bytes) return absl::OkStatus();
  return absl::ResourceExhaustedError(fmt::format(
      "{}: {} x {} bytes = {} is more than one request may move ({}); send smaller requests", what,
      count, item_bytes, overflow ? std::string("more than 2^64 bytes") : Bytes(bytes),
      Bytes(options_.max_response_bytes)));
}

std::optional<Message> KvServer::Dispatch(const rpc::Peer& peer, Message& request) {
  StatusOr<Message> response = absl::InternalError("unhandled");
  Status ready = EnsureCatalog();
  if (!ready.ok()) return rpc::MakeResponse(request.header, ready);
  switch (request.header.method()) {
    case wire::HELLO:
      active_clients_.insert(peer.client_id);
      seen_clients_.insert(peer.client_id);
      response = Hello(request);
      break;
    case wire::PULL:
      response = Pull(request);
      break;
    case wire::PUSH:
      response = Push(request);
      break;
    case wire::SPARSE_UPDATE:
      response = SparseUpdate(request);
      break;
    case wire::INIT_DATA:
      response = InitData(request);
      break;
    case wire::DELETE_DATA:
      response = DeleteData(request);
      break;
    case wire::LIST_DATA:
      response = ListData(request);
      break;
    case wire::BARRIER:
      return Barrier(peer, request);
    case wire::SAMPLE:
      response = Sample(request);
      break;
    case wire::IN_DEGREES:
    case wire::OUT_DEGREES:
      response = Degrees(request);
      break;
    case wire::FIND_EDGES:
      response = FindEdges(request);
      break;
    default:
      response = absl::UnimplementedError(fmt::format("server {} does not serve {}", server_id(),
                                                      rpc::MethodName(request.header.method())));
  }
  if (!response.ok()) return rpc::MakeResponse(request.header, response.status());
  return std::move(*response);
}

StatusOr<Message> KvServer::Hello(const Message& request) {
  Message response = rpc::MakeResponse(request.header, absl::OkStatus());
  wire::ServerInfo* info = response.header.mutable_server_info();
  info->set_server_id(server_id());
  info->set_machine_id(options_.machine_id);
  info->set_servers_per_machine(options_.servers_per_machine);
  info->set_graph_name(graph_name_);
  info->set_job_id(options_.job_id);
  info->set_halo_hops(halo_hops_);
  info->set_max_message_bytes(options_.max_message_bytes);
  for (int64_t v : book_.node_offsets()) info->add_node_offsets(v);
  for (int64_t v : book_.edge_offsets()) info->add_edge_offsets(v);
  const TypeLayout& layout = book_.layout();
  for (const std::string& t : layout.ntypes) info->add_ntypes(t);
  for (const EdgeType& e : layout.etypes) info->add_etypes(e.Canonical());
  for (int64_t c : layout.node_counts) info->add_node_type_counts(c);
  for (int64_t c : layout.edge_counts) info->add_edge_type_counts(c);
  return response;
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

StatusOr<const sampling::LocalGraph*> KvServer::Graph() {
  if (!graph_) {
    ASSIGN_OR_RETURN(graph_, LocalGraphFromShards(*shards_, book_, halo_hops_));
  }
  return graph_.get();
}

namespace {

// The request's arrays[index] as int64 ids (1-d).
StatusOr<std::span<const int64_t>> IdsArg(const Message& request, size_t index, const char* what) {
  if (request.arrays.size() <= index) {
    return absl::InvalidArgumentError(fmt::format("missing array: {}", what));
  }
  const WireArray& a = request.arrays[index];
  if (a.dtype != DType::kInt64 || a.shape.size() != 1) {
    return absl::InvalidArgumentError(fmt::format("{} must be a 1-d int64 array", what));
  }
  return a.span<int64_t>();
}

// Ids below `limit` as int32 when they fit (half the bytes on the wire).
template <typename Alloc>
WireArray CompactIds(std::vector<int64_t, Alloc> ids, int64_t limit) {
  if (limit > std::numeric_limits<int32_t>::max()) return rpc::MakeWireArray(std::move(ids));
  UninitVector<int32_t> narrow(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) narrow[i] = static_cast<int32_t>(ids[i]);
  return rpc::MakeWireArray(std::move(narrow));
}

}  // namespace

Status KvServer::CheckSampleSize(const sampling::LocalGraph& graph, std::span<const int64_t> seeds,
                                 const SampleRequest& sample) const {
  // The counts alone: one int64 per seed.
  RETURN_IF_ERROR(CheckSize("sample", seeds.size(), sizeof(int64_t)));
  std::vector<int64_t> degrees(seeds.size());
  RETURN_IF_ERROR(sample.dir == sampling::EdgeDir::kIn ? graph.InDegrees(seeds, degrees.data())
                                                       : graph.OutDegrees(seeds, degrees.data()));
  // At most this many edges per seed of degree d (exclusions only remove
  // some), each a neighbour and an edge id of up to 8 bytes. Per-relation
  // fanouts are bounded as a whole: -1 takes at most every edge, the others
  // at most their sum (without replacement never more than d).
  const bool per_relation = !sample.etype_fanouts.empty();
  bool all = per_relation ? false : sample.fanout < 0;
  uint64_t sum = 0;  // Of the non-negative fanouts, saturated.
  if (per_relation) {
    for (int64_t f : sample.etype_fanouts) {
      if (f < 0) {
        all = true;
      } else if (__builtin_add_overflow(sum, static_cast<uint64_t>(f), &sum)) {
        sum = std::numeric_limits<uint64_t>::max();
      }
    }
  } else if (!all) {
    sum = static_cast<uint64_t>(sample.fanout);
  }
  uint64_t edges = static_cast<uint64_t>(seeds.size());  // Room for the counts.
  bool overflow = false;
  for (int64_t degree : degrees) {
    uint64_t d = static_cast<uint64_t>(degree);
    uint64_t picked = 0;
    if (!sample.replace) {
      picked = all ? d : std::min(d, sum);
    } else if (d > 0) {  // Draws of the counted relations, and every edge of the -1 ones.
      overflow |= __builtin_add_overflow(all ? d : 0, sum, &picked);
    }
    overflow |= __builtin_add_overflow(edges, picked, &edges);
  }
  if (overflow) edges = std::numeric_limits<uint64_t>::max();
  std::string fanouts =
      per_relation ? fmt::format("per-relation fanouts [{}]", fmt::join(sample.etype_fanouts, ", "))
                   : fmt::format("fanout {}", sample.fanout);
  return CheckSize(fmt::format("sample of {} seeds with {}{}", seeds.size(), fanouts,
                               sample.replace ? " (with replacement)" : ""),
                   edges, 2 * sizeof(int64_t));
}

StatusOr<Message> KvServer::Sample(const Message& request) {
  if (request.arrays.empty() || request.arrays.size() > 2) {
    return absl::InvalidArgumentError("sample takes the seeds and, optionally, excluded edges");
  }
  ASSIGN_OR_RETURN(std::span<const int64_t> seeds, IdsArg(request, 0, "seeds"));
  std::span<const int64_t> exclude;
  if (request.arrays.size() == 2) {
    ASSIGN_OR_RETURN(exclude, IdsArg(request, 1, "excluded edges"));
  }
  const wire::SampleArgs& args = request.header.sample();
  // Checked before it is copied: a peer's list must have one entry per relation.
  std::span<const int64_t> etype_fanouts(args.etype_fanouts().data(),
                                         static_cast<size_t>(args.etype_fanouts().size()));
  RETURN_IF_ERROR(CheckFanouts(args.fanout(), etype_fanouts, book_));
  SampleRequest sample{.fanout = args.fanout(),
                       .etype_fanouts = {etype_fanouts.begin(), etype_fanouts.end()},
                       .dir = args.out() ? sampling::EdgeDir::kOut : sampling::EdgeDir::kIn,
                       .replace = args.replace(),
                       .prob = args.prob(),
                       .exclude = exclude,
                       .seed = args.seed()};
  ASSIGN_OR_RETURN(const sampling::LocalGraph* graph, Graph());
  RETURN_IF_ERROR(CheckSampleSize(*graph, seeds, sample));
  ASSIGN_OR_RETURN(PartWeights weights,
                   EdgeWeightsFromShards(*shards_, book_, options_.machine_id, sample));
  ASSIGN_OR_RETURN(sampling::SampledEdges edges,
                   graph->SampleNeighbors(seeds, NeighborOptionsOf(sample, weights)));
  Message response = rpc::MakeResponse(request.header, absl::OkStatus());
  // The seed's side of each edge is implied by the counts: send the other.
  UninitVector<int64_t>& neighbours = args.out() ? edges.dst : edges.src;
  response.arrays.push_back(CompactIds(std::move(neighbours), book_.num_nodes()));
  response.arrays.push_back(CompactIds(std::move(edges.eid), book_.num_edges()));
  std::vector<int64_t> counts(seeds.size());
  for (size_t i = 0; i < seeds.size(); ++i) counts[i] = edges.offsets[i + 1] - edges.offsets[i];
  response.arrays.push_back(rpc::MakeWireArray(std::move(counts)));
  return response;
}

StatusOr<Message> KvServer::Degrees(const Message& request) {
  if (request.arrays.size() != 1) return absl::InvalidArgumentError("degrees take one array");
  ASSIGN_OR_RETURN(std::span<const int64_t> nids, IdsArg(request, 0, "node ids"));
  RETURN_IF_ERROR(CheckSize("degrees", nids.size(), sizeof(int64_t)));
  ASSIGN_OR_RETURN(const sampling::LocalGraph* graph, Graph());
  // One relation's (checked by the graph against the part's relations).
  const int etype = request.header.has_degree() ? request.header.degree().etype() : -1;
  if (request.header.has_degree() && etype < 0) {
    return absl::InvalidArgumentError(fmt::format(
        "degrees of relation {}: not a relation id (0 to {})", etype, book_.num_etypes() - 1));
  }
  std::vector<int64_t> degrees(nids.size());
  const sampling::EdgeDir dir = request.header.method() == wire::IN_DEGREES
                                    ? sampling::EdgeDir::kIn
                                    : sampling::EdgeDir::kOut;
  RETURN_IF_ERROR(graph->Degrees(nids, dir, etype, degrees.data()));
  Message response = rpc::MakeResponse(request.header, absl::OkStatus());
  response.arrays.push_back(rpc::MakeWireArray(std::move(degrees)));
  return response;
}

StatusOr<Message> KvServer::FindEdges(const Message& request) {
  if (request.arrays.size() != 1) return absl::InvalidArgumentError("find_edges takes one array");
  ASSIGN_OR_RETURN(std::span<const int64_t> eids, IdsArg(request, 0, "edge ids"));
  RETURN_IF_ERROR(CheckSize("find_edges", eids.size(), 2 * sizeof(int64_t)));
  ASSIGN_OR_RETURN(const sampling::LocalGraph* graph, Graph());
  std::vector<int64_t> src(eids.size()), dst(eids.size());
  RETURN_IF_ERROR(graph->FindEdges(eids, src.data(), dst.data()));
  Message response = rpc::MakeResponse(request.header, absl::OkStatus());
  response.arrays.push_back(rpc::MakeWireArray(std::move(src)));
  response.arrays.push_back(rpc::MakeWireArray(std::move(dst)));
  return response;
}

std::optional<Message> KvServer::Barrier(const rpc::Peer& peer, const Message& request) {
  if (server_id() != 0) {
    return rpc::MakeResponse(request.header,
                             absl::FailedPreconditionError("barriers are served by server 0"));
  }
  int expected = request.header.barrier().num_clients();
  int limit = options_.num_clients > 0 ? std::min(options_.num_clients, kMaxBarrierClients)
                                       : kMaxBarrierClients;
  if (expected <= 0 || expected > limit) {
    return rpc::MakeResponse(
        request.header, absl::InvalidArgumentError(fmt::format(
                            "barrier of {} clients: num_clients must be 1 to {}{}", expected, limit,
                            options_.num_clients > 0 ? " (the clients of this job)" : "")));
  }
  // A client retrying after its own timeout replaces its earlier entry.
  std::erase_if(barrier_.waiting,
                [&](const auto& w) { return w.first.client_id == peer.client_id; });
  // Every participant of a round must agree on its size, so the table never
  // holds more than that many entries (one per client).
  if (!barrier_.waiting.empty()) {
    int current = barrier_.waiting.front().second.barrier().num_clients();
    if (expected != current) {
      return rpc::MakeResponse(
          request.header,
          absl::InvalidArgumentError(fmt::format(
              "barrier of {} clients from client {} while a barrier of {} clients is in "
              "progress ({} waiting): every client must pass the same num_clients",
              expected, peer.client_id, current, barrier_.waiting.size())));
    }
  }
  barrier_.waiting.emplace_back(peer, request.header);
  // Fail once it cannot complete: everyone has shown up at some point, but
  // fewer than `expected` are still here.
  if (static_cast<int>(active_clients_.size()) < expected &&
      static_cast<int>(seen_clients_.size()) >= expected) {
    FailBarrier(fmt::format("barrier of {} clients cannot complete: only {} are connected ({})",
                            expected, active_clients_.size(), last_departure_));
    return std::nullopt;
  }
  if (static_cast<int>(barrier_.waiting.size()) < expected) return std::nullopt;
  int64_t max = barrier_.waiting.front().second.barrier().value();
  for (auto& [p, header] : barrier_.waiting) max = std::max(max, header.barrier().value());
  for (auto& [p, header] : barrier_.waiting) {
    Message response = rpc::MakeResponse(header, absl::OkStatus());
    response.header.mutable_barrier()->set_value(max);
    rpc_->Reply(p, std::move(response));
  }
  barrier_.waiting.clear();
  ++barrier_.generation;
  return std::nullopt;
}

void KvServer::FailBarrier(const std::string& why) {
  Status status = absl::AbortedError(why);
  for (auto& [p, header] : barrier_.waiting) rpc_->Reply(p, rpc::MakeResponse(header, status));
  barrier_.waiting.clear();
}

void KvServer::OnClientGone(int client_id, bool lost) {
  active_clients_.erase(client_id);
  last_departure_ =
      fmt::format("client {} {}", client_id, lost ? "died (no heartbeat)" : "has left");
  if (barrier_.waiting.empty() || rpc_ == nullptr) return;
  int expected = barrier_.waiting.front().second.barrier().num_clients();
  if (static_cast<int>(active_clients_.size()) < expected &&
      static_cast<int>(seen_clients_.size()) >= expected) {
    FailBarrier(
        fmt::format("barrier of {} clients cannot complete: {}", expected, last_departure_));
  }
}

}  // namespace tessera::kv
