// File: src/trainer/dist.cc
//
// LibTorch face of the runtime: initialize, DistGraph, DistTensor. Status
// values from the libraries become tessera::dist::Error here.
#include "include/tessera/dist.h"

#include <atomic>
#include <cstdlib>
#include <mutex>

#include "fmt/format.h"
#include "spdlog/spdlog.h"
#include "src/kvstore/kv_client.h"
#include "src/kvstore/local_store.h"
#include "src/launcher/ip_config.h"
#include "src/launcher/job_env.h"

namespace tessera::dist {
namespace {

std::mutex g_mutex;
std::shared_ptr<Context> g_context;  // The process's current context.
std::atomic<uint64_t> g_anonymous{0};

void ThrowIfError(const Status& status, const std::string& what) {
  if (!status.ok()) throw Error(fmt::format("{}: {}", what, std::string(status.message())));
}

template <typename T>
T ValueOrThrow(StatusOr<T> value, const std::string& what) {
  ThrowIfError(value.status(), what);
  return std::move(*value);
}

rpc::Millis Ms(double seconds) { return rpc::Millis(static_cast<int64_t>(seconds * 1000)); }

DType ToDType(torch::Dtype dtype) {
  switch (dtype) {
    case torch::kBool:
      return DType::kBool;
    case torch::kInt8:
      return DType::kInt8;
    case torch::kUInt8:
      return DType::kUInt8;
    case torch::kInt16:
      return DType::kInt16;
    case torch::kInt32:
      return DType::kInt32;
    case torch::kInt64:
      return DType::kInt64;
    case torch::kFloat32:
      return DType::kFloat32;
    case torch::kFloat64:
      return DType::kFloat64;
    default:
      throw Error(fmt::format("dtype {} is not supported by DistTensor", c10::toString(dtype)));
  }
}

torch::Dtype ToTorch(DType dtype) {
  switch (dtype) {
    case DType::kBool:
      return torch::kBool;
    case DType::kInt8:
      return torch::kInt8;
    case DType::kUInt8:
      return torch::kUInt8;
    case DType::kInt16:
      return torch::kInt16;
    case DType::kInt32:
      return torch::kInt32;
    case DType::kInt64:
      return torch::kInt64;
    case DType::kFloat32:
      return torch::kFloat32;
    case DType::kFloat64:
      return torch::kFloat64;
  }
  return torch::kFloat32;
}

// Ids as a contiguous int64 CPU tensor (integer dtypes only).
torch::Tensor AsIds(const torch::Tensor& ids, const std::string& what) {
  if (!ids.defined()) throw Error(fmt::format("{}: ids tensor is undefined", what));
  if (ids.is_floating_point() || ids.is_complex() || ids.scalar_type() == torch::kBool) {
    throw Error(fmt::format("{}: ids must be an integer tensor, got {}", what,
                            c10::toString(ids.scalar_type())));
  }
  if (ids.dim() > 1) throw Error(fmt::format("{}: ids must be 1-d, got {}-d", what, ids.dim()));
  return ids.reshape({-1}).to(torch::kCPU, torch::kInt64).contiguous();
}

std::shared_ptr<Context> CurrentContext() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!g_context) throw Error("call tessera::dist::initialize() first");
  return g_context;
}

}  // namespace

Context::~Context() {
  if (store_) {
    Status s = store_->Close();
    if (!s.ok()) spdlog::warn("closing the key-value store: {}", std::string(s.message()));
  }
}

std::shared_ptr<Context> initialize(const std::string& ip_config, const InitOptions& options) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_context) return g_context;
  launcher::GetEnvFn getenv = options.getenv;
  if (!getenv) getenv = [](const char* name) { return std::getenv(name); };
  auto env = ValueOrThrow(launcher::ParseJobEnv(getenv), "initialize");
  std::shared_ptr<Context> ctx(new Context());
  if (!env) {
    spdlog::info("tessera: standalone mode (no launcher environment)");
    g_context = ctx;
    return ctx;
  }
  ctx->standalone_ = false;
  ctx->rank_ = env->rank;
  ctx->world_size_ = env->world_size;
  ctx->machine_id_ = env->machine_id;
  ctx->part_config_ = env->part_config;
  std::string ip_path = ip_config.empty() ? env->ip_config : ip_config;
  auto ip = ValueOrThrow(launcher::ReadIpConfig(ip_path), "initialize");
  kv::KvClientOptions kv_options{.job_id = env->job_id,
                                 .token = env->token,
                                 .client_id = env->rank,
                                 .machine_id = env->machine_id,
                                 .servers = ip.ServerEndpoints(env->num_servers),
                                 .servers_per_machine = env->num_servers,
                                 .num_clients = env->world_size,
                                 .call_timeout = Ms(options.call_timeout_s),
                                 .connect_timeout = Ms(options.connect_timeout_s),
                                 .barrier_timeout = Ms(options.barrier_timeout_s),
                                 .heartbeat_interval = Ms(options.heartbeat_interval_s),
                                 .heartbeat_timeout = Ms(options.heartbeat_timeout_s)};
  std::unique_ptr<kv::KvClient> client =
      ValueOrThrow(kv::KvClient::Connect(kv_options), "initialize: connecting to the servers");
  spdlog::info("tessera: trainer {} of {} on machine {}, connected to {} servers", env->rank,
               env->world_size, env->machine_id, kv_options.servers.size());
  ctx->store_ = std::move(client);
  g_context = ctx;
  return ctx;
}

void exit_client() {
  std::shared_ptr<Context> ctx;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    ctx = std::move(g_context);
  }
  if (ctx && ctx->store_ && ctx.use_count() == 1) {
    ThrowIfError(ctx->store_->Close(), "exit_client");
  }
}

// ------------------------------------------------------------ DistTensor

struct DistTensor::State {
  std::shared_ptr<Context> context;
  std::string key;  // "node/<name>"
  std::string name;
  std::vector<int64_t> shape;
  DType dtype = DType::kFloat32;
  PartPolicy policy = PartPolicy::kNode;
  bool owner = false;
  bool persistent = true;

  ~State() {
    if (!owner || persistent || !context->store_) return;
    Status s = context->store_->DeleteData(key);
    if (!s.ok()) spdlog::warn("deleting DistTensor '{}': {}", name, std::string(s.message()));
  }
  kv::KvStore& store() const {
    if (!context->store_) throw Error("standalone mode: create a DistGraph before DistTensors");
    return *context->store_;
  }
};

DistTensor::DistTensor(std::vector<int64_t> shape, torch::Dtype dtype, std::string name, Init init,
                       PartPolicy policy, bool persistent) {
  auto state = std::make_shared<State>();
  state->context = CurrentContext();
  kv::KvStore& store = state->store();
  if (shape.empty()) throw Error("DistTensor: shape must have at least one dimension");
  int64_t nodes = store.book().num_nodes(), edges = store.book().num_edges();
  if (policy == PartPolicy::kAuto) {
    bool node = shape[0] == nodes, edge = shape[0] == edges;
    if (node && edge) {
      throw Error(
          fmt::format("DistTensor '{}': shape[0] = {} is both the number of nodes and of "
                      "edges; pass PartPolicy::kNode or kEdge",
                      name, shape[0]));
    }
    if (!node && !edge) {
      throw Error(
          fmt::format("DistTensor '{}': shape[0] = {} is neither the number of nodes ({}) "
                      "nor of edges ({})",
                      name, shape[0], nodes, edges));
    }
    policy = node ? PartPolicy::kNode : PartPolicy::kEdge;
  }
  if (name.empty()) {
    if (persistent) throw Error("DistTensor: an anonymous tensor cannot be persistent");
    name = fmt::format("anonymous-{}", g_anonymous.fetch_add(1));
  }
  kv::InitSpec spec{.name = name,
                    .dtype = ToDType(dtype),
                    .shape = shape,
                    .policy = policy == PartPolicy::kNode ? shm::Policy::kNode : shm::Policy::kEdge,
                    .init = static_cast<kv::Init>(init.kind),
                    .a = init.a,
                    .b = init.b,
                    .seed = init.seed,
                    .persistent = persistent};
  bool created = ValueOrThrow(store.InitData(spec), fmt::format("DistTensor '{}'", name));
  state->key = fmt::format("{}/{}", shm::PolicyName(spec.policy), name);
  state->name = name;
  state->shape = std::move(shape);
  state->dtype = spec.dtype;
  state->policy = policy;
  state->owner = created;
  state->persistent = persistent;
  state_ = std::move(state);
}

torch::Tensor DistTensor::operator[](const torch::Tensor& ids) const {
  torch::Tensor flat = AsIds(ids, state_->name);
  std::vector<int64_t> shape = state_->shape;
  shape[0] = flat.size(0);
  torch::Tensor out = torch::empty(shape, torch::TensorOptions().dtype(ToTorch(state_->dtype)));
  std::span<const int64_t> span(flat.data_ptr<int64_t>(), static_cast<size_t>(flat.size(0)));
  ThrowIfError(state_->store().PullInto(state_->key, span, out.data_ptr()),
               fmt::format("reading rows of '{}'", state_->name));
  return out;
}

namespace {

void PushRows(const DistTensor& t, const std::string& key, const torch::Tensor& ids,
              const torch::Tensor& rows, kv::KvStore& store, DType dtype, kv::PushMode mode) {
  torch::Tensor flat = AsIds(ids, t.name());
  std::vector<int64_t> want = t.shape();
  want[0] = flat.size(0);
  torch::Tensor values = rows.to(torch::kCPU, ToTorch(dtype)).contiguous();
  if (values.sizes().vec() != want) {
    throw Error(fmt::format("writing rows of '{}': rows have shape [{}], expected [{}]", t.name(),
                            fmt::join(values.sizes().vec(), ", "), fmt::join(want, ", ")));
  }
  std::span<const int64_t> span(flat.data_ptr<int64_t>(), static_cast<size_t>(flat.size(0)));
  ThrowIfError(store.Push(key, span, values.data_ptr(), mode),
               fmt::format("writing rows of '{}'", t.name()));
}

}  // namespace

void DistTensor::set(const torch::Tensor& ids, const torch::Tensor& rows) const {
  PushRows(*this, state_->key, ids, rows, state_->store(), state_->dtype, kv::PushMode::kAssign);
}

void DistTensor::add(const torch::Tensor& ids, const torch::Tensor& rows) const {
  PushRows(*this, state_->key, ids, rows, state_->store(), state_->dtype, kv::PushMode::kAdd);
}

const std::vector<int64_t>& DistTensor::shape() const { return state_->shape; }
torch::Dtype DistTensor::dtype() const { return ToTorch(state_->dtype); }
const std::string& DistTensor::name() const { return state_->name; }
PartPolicy DistTensor::part_policy() const { return state_->policy; }

// ------------------------------------------------------------ DistGraph

DistGraph::DistGraph(const std::string& graph_name, const std::string& part_config)
    : context_(CurrentContext()), graph_name_(graph_name) {
  if (context_->standalone_) {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (!context_->store_) {
      if (part_config.empty()) throw Error("DistGraph: standalone mode needs part_config");
      context_->store_ = ValueOrThrow(kv::LocalKvStore::Open(part_config),
                                      fmt::format("DistGraph '{}'", graph_name));
      context_->part_config_ = part_config;
    } else if (part_config != context_->part_config_) {
      throw Error(fmt::format("DistGraph: this process already loaded {}; one graph per process",
                              context_->part_config_));
    }
  }
  if (context_->store_->graph_name() != graph_name) {
    throw Error(fmt::format("DistGraph: asked for graph '{}' but the {} holds '{}'", graph_name,
                            context_->standalone_ ? "partition" : "job's servers",
                            context_->store_->graph_name()));
  }
}

int64_t DistGraph::num_nodes() const { return partition_book().num_nodes(); }
int64_t DistGraph::num_edges() const { return partition_book().num_edges(); }
const PartitionBook& DistGraph::partition_book() const { return context_->store_->book(); }
int DistGraph::rank() const { return context_->rank_; }

void DistGraph::barrier() const { ThrowIfError(context_->store_->Barrier(), "barrier"); }

DistTensor DistGraph::Data(const std::string& prefix, const std::string& name) const {
  std::string key = prefix + "/" + name;
  kv::TensorMeta meta = ValueOrThrow(context_->store_->Meta(key),
                                     fmt::format("{}data", prefix[0] == 'n' ? "n" : "e"));
  auto state = std::make_shared<DistTensor::State>();
  state->context = context_;
  state->key = key;
  state->name = name;
  state->shape = meta.shape;
  state->dtype = meta.dtype;
  state->policy = meta.policy == shm::Policy::kNode ? PartPolicy::kNode : PartPolicy::kEdge;
  return DistTensor(std::move(state));
}

DistTensor DistGraph::ndata(const std::string& name) const { return Data("node", name); }
DistTensor DistGraph::edata(const std::string& name) const { return Data("edge", name); }

std::map<std::string, AttrScheme> DistGraph::Schemes(const std::string& prefix) const {
  std::map<std::string, AttrScheme> out;
  for (const kv::TensorMeta& meta : ValueOrThrow(context_->store_->List(), "attribute schemes")) {
    if (meta.key.rfind(prefix + "/", 0) != 0) continue;
    out[meta.key.substr(prefix.size() + 1)] = {
        std::vector<int64_t>(meta.shape.begin() + 1, meta.shape.end()), ToTorch(meta.dtype)};
  }
  return out;
}

std::map<std::string, AttrScheme> DistGraph::node_attr_schemes() const { return Schemes("node"); }
std::map<std::string, AttrScheme> DistGraph::edge_attr_schemes() const { return Schemes("edge"); }

}  // namespace tessera::dist
