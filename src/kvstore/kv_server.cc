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
#include "tessera/base/resource.h"
#include "tessera/base/time.h"
#include "tessera/partition/load_partition.h"

namespace tessera::kvstore {
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
      halo_hops_(halo_hops) {
  RegisterJobHandlers();
  RegisterFeatureHandlers();
  RegisterGraphHandlers();
}

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

void KvServer::RegisterJobHandlers() {
  On(wire::HELLO, [this](const rpc::Peer& peer, Message& request) -> Reply {
    active_clients_.insert(peer.client_id);
    seen_clients_.insert(peer.client_id);
    return Hello(request);
  });
  On(wire::BARRIER,
     [this](const rpc::Peer& peer, Message& request) -> Reply { return Barrier(peer, request); });
}

std::optional<Message> KvServer::Dispatch(const rpc::Peer& peer, Message& request) {
  Status ready = EnsureCatalog();
  if (!ready.ok()) return rpc::MakeResponse(request.header, ready);
  auto handler = handlers_.find(request.header.method());
  if (handler == handlers_.end()) {
    return rpc::MakeResponse(request.header, absl::UnimplementedError(fmt::format(
                                                 "server {} does not serve {}", server_id(),
                                                 rpc::MethodName(request.header.method()))));
  }
  StatusOr<std::optional<Message>> response = handler->second(peer, request);
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
  std::erase_if(barrier_, [&](const auto& w) { return w.first.client_id == peer.client_id; });
  // Every participant of a round must agree on its size, so the table never
  // holds more than that many entries (one per client).
  if (!barrier_.empty()) {
    int current = barrier_.front().second.barrier().num_clients();
    if (expected != current) {
      return rpc::MakeResponse(
          request.header,
          absl::InvalidArgumentError(fmt::format(
              "barrier of {} clients from client {} while a barrier of {} clients is in "
              "progress ({} waiting): every client must pass the same num_clients",
              expected, peer.client_id, current, barrier_.size())));
    }
  }
  barrier_.emplace_back(peer, request.header);
  // Fail once it cannot complete: everyone has shown up at some point, but
  // fewer than `expected` are still here.
  if (static_cast<int>(active_clients_.size()) < expected &&
      static_cast<int>(seen_clients_.size()) >= expected) {
    FailBarrier(fmt::format("barrier of {} clients cannot complete: only {} are connected ({})",
                            expected, active_clients_.size(), last_departure_));
    return std::nullopt;
  }
  if (static_cast<int>(barrier_.size()) < expected) return std::nullopt;
  int64_t max = barrier_.front().second.barrier().value();
  for (auto& [p, header] : barrier_) max = std::max(max, header.barrier().value());
  for (auto& [p, header] : barrier_) {
    Message response = rpc::MakeResponse(header, absl::OkStatus());
    response.header.mutable_barrier()->set_value(max);
    rpc_->Reply(p, std::move(response));
  }
  barrier_.clear();
  return std::nullopt;
}

void KvServer::FailBarrier(const std::string& why) {
  Status status = absl::AbortedError(why);
  for (auto& [p, header] : barrier_) rpc_->Reply(p, rpc::MakeResponse(header, status));
  barrier_.clear();
}

void KvServer::OnClientGone(int client_id, bool lost) {
  active_clients_.erase(client_id);
  last_departure_ =
      fmt::format("client {} {}", client_id, lost ? "died (no heartbeat)" : "has left");
  if (barrier_.empty() || rpc_ == nullptr) return;
  int expected = barrier_.front().second.barrier().num_clients();
  if (static_cast<int>(active_clients_.size()) < expected &&
      static_cast<int>(seen_clients_.size()) >= expected) {
    FailBarrier(
        fmt::format("barrier of {} clients cannot complete: {}", expected, last_departure_));
  }
}

}  // namespace tessera::kvstore
