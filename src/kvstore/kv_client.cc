// File: src/kvstore/kv_client.cc
#include "src/kvstore/kv_client.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "fmt/format.h"
#include "spdlog/spdlog.h"
#include "src/base/random.h"
#include "src/base/resource.h"

namespace tessera::kv {

using rpc::Message;

namespace {

// Remote pulls and pushes travel in requests of at most this many bytes of
// rows: the server answers the first while later ones are still queued (so
// gathering, transfer and placing overlap), and buffers of this size are
// recycled by malloc instead of being mapped and faulted in afresh (as 100 MB
// answers would be). 1 MiB measured best on loopback (bench/README.md).
constexpr size_t kChunkBytes = size_t{1} << 20;

}  // namespace

KvClient::Grouped KvClient::GroupIds(const std::vector<int64_t>& ids,
                                     const std::vector<int64_t>& positions,
                                     std::pair<int64_t, int64_t> range) {
  Grouped g;
  size_t n = ids.size();
  g.positions.resize(n);
  auto span = static_cast<uint64_t>(range.second - range.first);
  if (span <= 4 * static_cast<uint64_t>(n) + 1024) {
    // Counting sort over the owner's id range.
    std::vector<uint32_t> count(span + 1, 0);
    for (int64_t id : ids) ++count[static_cast<size_t>(id - range.first) + 1];
    size_t distinct = 0;
    for (size_t r = 1; r <= span; ++r) distinct += count[r] != 0;
    g.ids.reserve(distinct);
    g.group_start.reserve(distinct + 1);
    for (size_t r = 0; r < span; ++r) {
      if (count[r + 1] != 0) {
        g.ids.push_back(range.first + static_cast<int64_t>(r));
        g.group_start.push_back(count[r]);
      }
      count[r + 1] += count[r];
    }
    g.group_start.push_back(n);
    for (size_t i = 0; i < n; ++i) {
      g.positions[count[static_cast<size_t>(ids[i] - range.first)]++] = positions[i];
    }
    return g;
  }
  std::vector<uint32_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = static_cast<uint32_t>(i);
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return ids[a] < ids[b]; });
  for (size_t k = 0; k < n; ++k) {
    int64_t id = ids[order[k]];
    if (g.ids.empty() || g.ids.back() != id) {
      g.ids.push_back(id);
      g.group_start.push_back(k);
    }
    g.positions[k] = positions[order[k]];
  }
  g.group_start.push_back(n);
  return g;
}

size_t TensorMeta::row_bytes() const {
  size_t n = DTypeSize(dtype);
  for (size_t i = 1; i < shape.size(); ++i) n *= static_cast<size_t>(shape[i]);
  return n;
}

double InitValue(Init init, double a, double b, uint64_t seed, uint64_t index) {
  Rng rng(seed, /*stream=*/static_cast<uint64_t>(init), index);
  switch (init) {
    case Init::kUniform:
      return a + (b - a) * rng.Uniform();
    case Init::kNormal:
      return a + b * rng.Normal();
    default:
      return 0;
  }
}

void FillInit(const InitSpec& spec, void* dst, size_t count, uint64_t first) {
  if (spec.init != Init::kUniform && spec.init != Init::kNormal) return;
  for (size_t k = 0; k < count; ++k) {
    double v = InitValue(spec.init, spec.a, spec.b, spec.seed, first + k);
    if (spec.dtype == DType::kFloat32) {
      static_cast<float*>(dst)[k] = static_cast<float>(v);
    } else {
      static_cast<double*>(dst)[k] = v;
    }
  }
}

Status ValidateInitSpec(const InitSpec& spec, const PartitionBook& book) {
  // Printable characters only: a NUL would cut the name short in the
  // catalog (a second tensor under an existing name), others garble logs.
  bool printable =
      std::all_of(spec.name.begin(), spec.name.end(), [](char c) { return c >= 0x20 && c < 0x7f; });
  const size_t slash = spec.name.find('/');
  const std::string_view plain = book.is_homogeneous() || slash == std::string::npos
                                     ? std::string_view(spec.name)
                                     : std::string_view(spec.name).substr(slash + 1);
  if (plain.empty() || plain.find('/') != std::string::npos || !printable) {
    return absl::InvalidArgumentError(
        fmt::format("bad tensor name {:?}: printable ASCII without '/'{}", spec.name,
                    book.is_homogeneous() ? "" : " after its type (\"<type>/<name>\")"));
  }
  if (spec.policy != shm::Policy::kNode && spec.policy != shm::Policy::kEdge) {
    return absl::InvalidArgumentError("policy must be node or edge");
  }
  ASSIGN_OR_RETURN(int type, TensorType(book, spec.policy, spec.name));
  if (static_cast<uint32_t>(spec.dtype) > static_cast<uint32_t>(DType::kFloat64)) {
    return absl::InvalidArgumentError(
        fmt::format("unknown dtype {}", static_cast<uint32_t>(spec.dtype)));
  }
  if (static_cast<uint32_t>(spec.init) > static_cast<uint32_t>(Init::kNone)) {
    return absl::InvalidArgumentError(
        fmt::format("unknown initialiser {}", static_cast<uint32_t>(spec.init)));
  }
  if ((spec.init == Init::kUniform || spec.init == Init::kNormal) && !IsFloating(spec.dtype)) {
    return absl::InvalidArgumentError("uniform and normal initialisers need a float dtype");
  }
  int64_t rows = NumIds(book, spec.policy, type);
  if (spec.shape.empty() || spec.shape.size() > shm::Catalog::kMaxDims || spec.shape[0] != rows) {
    return absl::InvalidArgumentError(fmt::format(
        "tensor '{}': shape[0] must be the number of {}s{} ({}), with 1 to {} dimensions",
        spec.name, shm::PolicyName(spec.policy),
        book.is_homogeneous() ? ""
                              : fmt::format(" of type '{}'", spec.policy == shm::Policy::kNode
                                                                 ? book.ntypes()[type]
                                                                 : book.etypes()[type].Canonical()),
        rows, int{shm::Catalog::kMaxDims}));
  }
  // The size in bytes, checked: a wrapped product would pass every later
  // test with a buffer far too small.
  uint64_t bytes = DTypeSize(spec.dtype);
  for (int64_t d : spec.shape) {
    if (d < 0) {
      return absl::InvalidArgumentError(fmt::format("tensor '{}': negative dimension in [{}]",
                                                    spec.name, fmt::join(spec.shape, ", ")));
    }
    if (__builtin_mul_overflow(bytes, static_cast<uint64_t>(d), &bytes) ||
        bytes > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return absl::InvalidArgumentError(
          fmt::format("tensor '{}': shape [{}] of {} is more than 2^63 bytes", spec.name,
                      fmt::join(spec.shape, ", "), DTypeName(spec.dtype)));
    }
  }
  return absl::OkStatus();
}

std::string TensorKey(const InitSpec& spec) {
  return fmt::format("{}/{}", shm::PolicyName(spec.policy), spec.name);
}

namespace {

// The book a server describes in HELLO: its type layout (or, from a server
// without one, the homogeneous offsets), checked against the offsets.
StatusOr<PartitionBook> BookOf(const wire::ServerInfo& info, int part) {
  std::vector<int64_t> nodes(info.node_offsets().begin(), info.node_offsets().end());
  std::vector<int64_t> edges(info.edge_offsets().begin(), info.edge_offsets().end());
  if (info.ntypes().empty()) return PartitionBook::Create(nodes, edges, part);
  TypeLayout layout;
  layout.ntypes.assign(info.ntypes().begin(), info.ntypes().end());
  for (const std::string& e : info.etypes()) {
    ASSIGN_OR_RETURN(EdgeType parsed, ParseEdgeType(e));
    layout.etypes.push_back(std::move(parsed));
  }
  for (const std::string& t : layout.ntypes) RETURN_IF_ERROR(CheckTypeName(t, "node type"));
  layout.node_counts.assign(info.node_type_counts().begin(), info.node_type_counts().end());
  layout.edge_counts.assign(info.edge_type_counts().begin(), info.edge_type_counts().end());
  ASSIGN_OR_RETURN(PartitionBook book, PartitionBook::CreateTyped(std::move(layout), part));
  if (book.node_offsets() != nodes || book.edge_offsets() != edges) {
    return absl::DataLossError("type counts disagree with the partition offsets");
  }
  return book;
}

}  // namespace

StatusOr<int> TensorType(const PartitionBook& book, shm::Policy policy, std::string_view name) {
  if (book.is_homogeneous()) return 0;
  const size_t slash = name.find('/');
  const std::string type(name.substr(0, slash));
  if (slash != std::string::npos) {
    if (policy == shm::Policy::kNode) {
      for (int t = 0; t < book.num_ntypes(); ++t) {
        if (book.ntypes()[t] == type) return t;
      }
    } else {
      for (int r = 0; r < book.num_etypes(); ++r) {
        if (book.etypes()[r].Canonical() == type) return r;
      }
    }
  }
  std::vector<std::string> types;
  if (policy == shm::Policy::kNode) {
    types = book.ntypes();
  } else {
    for (const EdgeType& e : book.etypes()) types.push_back(e.Canonical());
  }
  return absl::InvalidArgumentError(fmt::format(
      "{} tensor '{}' of a heterogeneous graph must be named '<type>/<name>' with one of its {} "
      "({})",
      shm::PolicyName(policy), name,
      policy == shm::Policy::kNode ? "node types" : "canonical relations", fmt::join(types, ", ")));
}

int64_t NumIds(const PartitionBook& book, shm::Policy policy, int type) {
  if (type == kAllTypes) return policy == shm::Policy::kNode ? book.num_nodes() : book.num_edges();
  return policy == shm::Policy::kNode ? book.NumNodesOfType(type) : book.NumEdgesOfType(type);
}

namespace {
const std::vector<int64_t>& Offsets(const PartitionBook& book, shm::Policy policy, int type) {
  if (type == kAllTypes) {
    return policy == shm::Policy::kNode ? book.node_offsets() : book.edge_offsets();
  }
  return policy == shm::Policy::kNode ? book.TypedNodeOffsets(type) : book.TypedEdgeOffsets(type);
}
}  // namespace

std::pair<int64_t, int64_t> IdRange(const PartitionBook& book, shm::Policy policy, int type,
                                    int part) {
  const std::vector<int64_t>& o = Offsets(book, policy, type);
  return {o[part], o[part + 1]};
}

Status CheckTensorKey(const std::string& key) {
  if (key.rfind("node/", 0) == 0 || key.rfind("edge/", 0) == 0) return absl::OkStatus();
  return absl::InvalidArgumentError(
      fmt::format("'{}' is not a node or edge tensor (names start with node/ or edge/)", key));
}

StatusOr<std::unique_ptr<KvClient>> KvClient::Connect(const KvClientOptions& options) {
  int S = options.servers_per_machine;
  if (S < 1 || options.servers.empty() || options.servers.size() % S != 0) {
    return absl::InvalidArgumentError(fmt::format(
        "{} server endpoints cannot be {} servers per machine", options.servers.size(), S));
  }
  std::unique_ptr<KvClient> client(new KvClient(options));
  rpc::ClientOptions rpc_options{.token = options.token,
                                 .curve_secret_key = options.curve_secret_key,
                                 .client_id = options.client_id,
                                 .servers = options.servers,
                                 .heartbeat_interval = options.heartbeat_interval,
                                 .heartbeat_timeout = options.heartbeat_timeout,
                                 .streams = options.streams};
  ASSIGN_OR_RETURN(client->rpc_, rpc::RpcClient::Create(rpc_options));
  // Main servers first: backups can only answer once their main server has
  // published the partition.
  int64_t frame_limit = std::numeric_limits<int64_t>::max();
  Deadline deadline = Deadline::In(options.connect_timeout);
  int num_machines = static_cast<int>(options.servers.size()) / S;
  for (int pass = 0; pass < 2; ++pass) {
    std::vector<rpc::Call> calls;
    for (int server = 0; server < static_cast<int>(options.servers.size()); ++server) {
      if ((server % S == 0) != (pass == 0)) continue;
      calls.push_back({server, rpc::MakeRequest(wire::HELLO)});
    }
    if (calls.empty()) continue;
    std::vector<int> targets;
    for (const auto& c : calls) targets.push_back(c.server);
    ASSIGN_OR_RETURN(std::vector<Message> responses,
                     client->rpc_->CallMany(std::move(calls), deadline));
    for (size_t i = 0; i < responses.size(); ++i) {
      const wire::ServerInfo& info = responses[i].header.server_info();
      int expected_id = targets[i];
      if (info.server_id() != expected_id || info.servers_per_machine() != S ||
          info.job_id() != options.job_id || info.node_offsets_size() != num_machines + 1) {
        return absl::FailedPreconditionError(fmt::format(
            "{} is server {} of job '{}' ({} servers per machine, {} partitions); expected "
            "server {} of job '{}' ({} per machine, {} machines): check ip_config and "
            "--num-servers",
            client->rpc_->endpoint(expected_id), info.server_id(), info.job_id(),
            info.servers_per_machine(), info.node_offsets_size() - 1, expected_id, options.job_id,
            S, num_machines));
      }
      if (info.max_message_bytes() > 0) {
        frame_limit = std::min(frame_limit, info.max_message_bytes());
      }
      if (pass == 0 && i == 0) {
        client->graph_name_ = info.graph_name();
        client->halo_hops_ = info.halo_hops();
        int part =
            options.machine_id >= 0 && options.machine_id < num_machines ? options.machine_id : 0;
        StatusOr<PartitionBook> book = BookOf(info, part);
        if (!book.ok()) {
          return absl::DataLossError(fmt::format("{} sent a bad partition book: {}",
                                                 client->rpc_->endpoint(expected_id),
                                                 std::string(book.status().message())));
        }
        client->book_ = std::move(*book);
      }
    }
  }
  if (frame_limit != std::numeric_limits<int64_t>::max()) client->max_frame_bytes_ = frame_limit;
  if (options.machine_id >= 0 && options.machine_id < num_machines) {
    StatusOr<shm::Catalog> catalog = shm::Catalog::Open(options.job_id, options.machine_id);
    if (catalog.ok()) {
      client->local_ = std::make_unique<ShardMap>(std::move(*catalog));
    } else {
      spdlog::debug("client {}: no local shared memory for machine {} ({}); all access is remote",
                    options.client_id, options.machine_id, std::string(catalog.status().message()));
    }
  }
  client->connected_ = true;
  return client;
}

KvClient::~KvClient() {
  // A failed Connect() says no goodbyes (servers that answered it notice the
  // silence); waiting on unreachable servers would only delay the error.
  if (rpc_ && connected_) {
    try {
      Status s = Close();
      if (!s.ok())
        spdlog::warn("client {}: goodbye: {}", options_.client_id, std::string(s.message()));
    } catch (const std::exception& e) {  // Nothing leaves a destructor.
      spdlog::warn("client {}: goodbye: {}", options_.client_id, e.what());
    }
  }
}

Status KvClient::CheckFrameFits(size_t bytes, const std::string& what) const {
  // A little room for CURVE's framing.
  if (static_cast<int64_t>(bytes) + 64 <= max_frame_bytes_) return absl::OkStatus();
  return absl::InvalidArgumentError(fmt::format(
      "{} is {} in one message, more than the servers accept ({}): raise tessera server "
      "--max-message-bytes",
      what, FormatBytes(static_cast<int64_t>(bytes)), FormatBytes(max_frame_bytes_)));
}

Status KvClient::CheckRowFits(const TensorMeta& meta) const {
  return CheckFrameFits(meta.row_bytes(), fmt::format("a row of '{}'", meta.key));
}

int KvClient::PickServer(int machine) {
  int S = options_.servers_per_machine;
  return machine * S + static_cast<int>(round_robin_.fetch_add(1) % S);
}

Status KvClient::JobHealth() const {
  for (int s = 0; s < rpc_->num_servers(); ++s) RETURN_IF_ERROR(rpc_->ServerStatus(s));
  return absl::OkStatus();
}

StatusOr<TensorMeta> KvClient::Meta(const std::string& key) {
  {
    std::lock_guard<std::mutex> lock(meta_mutex_);
    if (auto it = meta_cache_.find(key); it != meta_cache_.end()) return it->second;
  }
  ASSIGN_OR_RETURN(std::vector<TensorMeta> all, List());
  for (TensorMeta& meta : all) {
    if (meta.key == key) return meta;
  }
  return absl::NotFoundError(fmt::format("no tensor '{}' in graph '{}'", key, graph_name_));
}

StatusOr<std::vector<TensorMeta>> KvClient::List() {
  int server = local_ ? PickServer(book_.part_id()) : PickServer(0);
  ASSIGN_OR_RETURN(Message response,
                   rpc_->CallOne(server, rpc::MakeRequest(wire::LIST_DATA), CallDeadline()));
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

StatusOr<KvClient::Split> KvClient::SplitIds(shm::Policy policy, int type, const std::string& what,
                                             std::span<const int64_t> ids) const {
  Split split;
  int K = book_.num_partitions();
  split.ids.resize(K);
  split.positions.resize(K);
  bool node = policy == shm::Policy::kNode;
  int64_t limit = NumIds(book_, policy, type);
  const std::vector<int64_t>& offsets = Offsets(book_, policy, type);
  // Two passes (owners, then exact-size fills) instead of growing vectors.
  std::vector<int32_t> owners(ids.size());
  std::vector<size_t> counts(K, 0);
  for (size_t i = 0; i < ids.size(); ++i) {
    int64_t id = ids[i];
    if (id < 0 || id >= limit) {
      return absl::OutOfRangeError(
          fmt::format("id {} (position {}) is out of range for {} ({} {}s)", id, i, what, limit,
                      node ? "node" : "edge"));
    }
    owners[i] = static_cast<int32_t>(std::upper_bound(offsets.begin() + 1, offsets.end(), id) -
                                     offsets.begin()) -
                1;
    ++counts[owners[i]];
  }
  for (int p = 0; p < K; ++p) {
    split.ids[p].resize(counts[p]);
    split.positions[p].resize(counts[p]);
    counts[p] = 0;
  }
  for (size_t i = 0; i < ids.size(); ++i) {
    int p = owners[i];
    size_t k = counts[p]++;
    split.ids[p][k] = ids[i];
    split.positions[p][k] = static_cast<int64_t>(i);
  }
  return split;
}

Status KvClient::PullInto(const std::string& key, std::span<const int64_t> ids, void* out) {
  RETURN_IF_ERROR(JobHealth());
  ASSIGN_OR_RETURN(TensorMeta meta, Meta(key));
  ASSIGN_OR_RETURN(Split split,
                   SplitIds(meta.policy, meta.type, fmt::format("'{}'", meta.key), ids));
  size_t row_bytes = meta.row_bytes();
  char* dst = static_cast<char*>(out);
  int local_part = local_ ? book_.part_id() : -1;
  // Remote ids are sorted and deduplicated per owner: each distinct row
  // travels once, and the owner gathers in address order.
  std::vector<Grouped> grouped(book_.num_partitions());
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
      calls.push_back({PickServer(p), std::move(request)});
      pieces.push_back({p, begin});
    }
  }
  Status local_status;
  auto copy_local = [&] {
    if (local_part < 0 || split.ids[local_part].empty()) return;
    StatusOr<Shard> shard = local_->Get(key);
    if (!shard.ok()) {
      local_status = shard.status();
      return;
    }
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
    const Grouped& g = grouped[p];
    size_t count = std::min(chunk_rows, g.ids.size() - begin);
    if (response.arrays.size() != 1 || response.arrays[0].dtype != meta.dtype ||
        response.arrays[0].row_bytes() != row_bytes ||
        response.arrays[0].rows() != static_cast<int64_t>(count)) {
      std::lock_guard<std::mutex> lock(meta_mutex_);
      meta_cache_.erase(key);
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
  RETURN_IF_ERROR(rpc_->CallMany(std::move(calls), CallDeadline(), copy_local, place).status());
  return local_status;
}

Status KvClient::ScatterRows(const TensorMeta& meta, std::span<const int64_t> ids, const void* rows,
                             const std::function<void(Message*)>& fill, const LocalRows& local) {
  ASSIGN_OR_RETURN(Split split,
                   SplitIds(meta.policy, meta.type, fmt::format("'{}'", meta.key), ids));
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
      calls.push_back({PickServer(p), std::move(request)});
    }
  }
  Status local_status;
  auto write_local = [&] {
    if (local_part < 0 || split.ids[local_part].empty()) return;
    StatusOr<Shard> shard = local_->Get(meta.key);
    if (!shard.ok()) {
      local_status = shard.status();
      return;
    }
    int64_t first = IdRange(book_, meta.policy, meta.type, local_part).first;
    local_status = local(*shard, split.ids[local_part], split.positions[local_part].data(), first);
  };
  if (calls.empty()) {
    write_local();
    return local_status;
  }
  RETURN_IF_ERROR(rpc_->CallMany(std::move(calls), CallDeadline(), write_local).status());
  return local_status;
}

Status KvClient::Push(const std::string& key, std::span<const int64_t> ids, const void* rows,
                      PushMode mode) {
  RETURN_IF_ERROR(JobHealth());
  ASSIGN_OR_RETURN(TensorMeta meta, Meta(key));
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

Status KvClient::SparseUpdate(const std::string& key, std::span<const int64_t> ids,
                              const float* grads, const SparseOptimizerSpec& spec) {
  RETURN_IF_ERROR(JobHealth());
  RETURN_IF_ERROR(ValidateSparseSpec(spec));
  ASSIGN_OR_RETURN(TensorMeta meta, Meta(key));
  if (meta.dtype != DType::kFloat32 || meta.shape.size() != 2) {
    return absl::InvalidArgumentError(
        fmt::format("sparse update of '{}': not a float32 [rows, dim] embedding", key));
  }
  const int64_t dim = meta.shape[1];
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

StatusOr<bool> KvClient::InitData(const InitSpec& spec) {
  RETURN_IF_ERROR(JobHealth());
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
    calls.push_back({m * options_.servers_per_machine, std::move(request)});
  }
  ASSIGN_OR_RETURN(std::vector<Message> responses,
                   rpc_->CallMany(std::move(calls), CallDeadline()));
  // Trainers creating the same tensor at once may each win on a different
  // machine; machine 0's server decides who created it (and so who deletes
  // a non-persistent one): exactly one caller.
  return responses.front().header.created();
}

Status KvClient::DeleteData(const std::string& key) {
  RETURN_IF_ERROR(JobHealth());
  std::vector<rpc::Call> calls;
  for (int m = 0; m < book_.num_partitions(); ++m) {
    Message request = rpc::MakeRequest(wire::DELETE_DATA);
    request.header.set_name(key);
    calls.push_back({m * options_.servers_per_machine, std::move(request)});
  }
  {
    std::lock_guard<std::mutex> lock(meta_mutex_);
    meta_cache_.erase(key);
  }
  return rpc_->CallMany(std::move(calls), CallDeadline()).status();
}

Status KvClient::Barrier() {
  RETURN_IF_ERROR(JobHealth());
  Message request = rpc::MakeRequest(wire::BARRIER);
  request.header.mutable_barrier()->set_num_clients(options_.num_clients);
  return rpc_->CallOne(0, std::move(request), Deadline::In(options_.barrier_timeout)).status();
}

StatusOr<int64_t> KvClient::BarrierMax(int64_t value) {
  RETURN_IF_ERROR(JobHealth());
  Message request = rpc::MakeRequest(wire::BARRIER);
  request.header.mutable_barrier()->set_num_clients(options_.num_clients);
  request.header.mutable_barrier()->set_value(value);
  ASSIGN_OR_RETURN(Message response,
                   rpc_->CallOne(0, std::move(request), Deadline::In(options_.barrier_timeout)));
  return response.header.barrier().value();
}

Status KvClient::Close() {
  if (closed_.exchange(true)) return absl::OkStatus();
  std::vector<rpc::Call> calls;
  for (int s = 0; s < rpc_->num_servers(); ++s) {
    if (!rpc_->ServerStatus(s).ok()) continue;  // Dead servers need no goodbye.
    calls.push_back({s, rpc::MakeRequest(wire::GOODBYE)});
  }
  if (calls.empty()) return absl::OkStatus();
  // The client's work is done: a goodbye that is late (a loaded server) or
  // fails (a stopped one) is worth a warning, never the program's error; a
  // server also notices a client that left by its missing heartbeats.
  Status said = rpc_->CallMany(std::move(calls), Deadline::InSeconds(5)).status();
  if (!said.ok()) {
    spdlog::warn("client {}: goodbye not confirmed ({}); closing anyway", options_.client_id,
                 std::string(said.message()));
  }
  return absl::OkStatus();
}

}  // namespace tessera::kv
