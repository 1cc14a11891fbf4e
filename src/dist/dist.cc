// File: src/dist/dist.cc
//
// LibTorch face of the runtime: initialize, DistGraph, DistTensor. Status
// values from the libraries become tessera::dist::Error here.
#include "tessera/dist.h"

#include <sched.h>
#include <strings.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <random>
#include <thread>

#include "absl/strings/numbers.h"
#include "fmt/format.h"
#include "spdlog/spdlog.h"
#include "src/dist/dist_internal.h"
#include "src/dist/torch_dtype.h"
#include "src/kvstore/kv_client.h"
#include "src/kvstore/local_store.h"
#include "src/launcher/ip_config.h"
#include "src/launcher/job_env.h"
#include "src/partition/work_split.h"
#include "tessera/base/resource.h"

namespace tessera::dist {
namespace {

std::mutex g_mutex;
std::shared_ptr<Context> g_context;  // The process's current context.
std::once_flag g_exit_hook_once;

// The exit path of a program that did not call exit_client(), e.g. after an
// error: the process group, then the context (closing the connections and
// joining the heartbeat thread). It runs before static destructors of
// anything constructed earlier, spdlog's registry included (registered after
// it, below), so its log lines and the heartbeat thread's never reach a
// destroyed logger: before, a trainer that failed in a collective could
// crash in exit (SIGSEGV) while a dead server's goodbye was logged.
void ShutdownAtExit() {
  internal::ReleaseProcessGroup();
  std::shared_ptr<Context> ctx;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    ctx = std::move(g_context);
  }
  try {
    ctx.reset();   // ~Context closes quietly when it was the last reference.
  } catch (...) {  // Nothing leaves the exit path.
  }
}

// Seconds from the environment variable `name` when it is set, else
// `fallback` (TESSERA_HEARTBEAT_TIMEOUT_S, TESSERA_CALL_TIMEOUT_S).
double SecondsFromEnv(const launcher::GetEnvFn& getenv, const char* name, double fallback) {
  const char* text = getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  double seconds = 0;
  if (!absl::SimpleAtod(text, &seconds) || !(seconds > 0) || seconds > 86400) {
    throw Error(
        fmt::format("initialize: {}='{}' is not a number of seconds in (0, 86400]", name, text));
  }
  return seconds;
}

void InstallExitHook() {
  std::call_once(g_exit_hook_once, [] {
    spdlog::default_logger();  // Constructs spdlog's registry first.
    std::atexit(ShutdownAtExit);
  });
}
std::atomic<uint64_t> g_anonymous{0};

rpc::Millis Ms(double seconds) { return rpc::Millis(static_cast<int64_t>(seconds * 1000)); }

// Large pull outputs (a mini-batch's features: tens of MB) reuse freed
// buffers. A fresh allocation above glibc's 32 MiB mmap limit is new pages,
// each faulted in on first write: measured 10k faults (~35 ms) for a 41 MB
// batch, most of a pull. At most kMaxPooled buffers are kept; the deleter
// runs wherever the tensor dies (any thread), so the pool is locked.
class PullBufferPool {
 public:
  static PullBufferPool& Get() {
    static auto* pool = new PullBufferPool();  // Never destroyed: tensors may outlive exit.
    return *pool;
  }

  torch::Tensor Empty(const std::vector<int64_t>& shape, torch::Dtype dtype) {
    const auto options = torch::TensorOptions().dtype(dtype);
    int64_t numel = 1;
    for (int64_t d : shape) {
      if (d < 0 || (d > 0 && numel > std::numeric_limits<int64_t>::max() / d)) {
        throw Error(fmt::format("a pull of shape [{}] overflows", fmt::join(shape, ", ")));
      }
      numel *= d;
    }
    const size_t item = c10::elementSize(dtype);
    if (numel == 0 || static_cast<size_t>(numel) > (size_t{1} << 62) / item) {
      return torch::empty(shape, options);
    }
    const size_t bytes = static_cast<size_t>(numel) * item;
    if (bytes < kMinBytes) return torch::empty(shape, options);
    void* data = nullptr;
    size_t capacity = 0;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      // The smallest free buffer that fits and is not more than twice too big.
      auto best = free_.end();
      for (auto it = free_.begin(); it != free_.end(); ++it) {
        if (it->second >= bytes && it->second <= 2 * bytes &&
            (best == free_.end() || it->second < best->second)) {
          best = it;
        }
      }
      if (best != free_.end()) {
        data = best->first;
        capacity = best->second;
        free_.erase(best);
      }
    }
    if (data == nullptr) {
      capacity = (bytes + kAlign - 1) / kAlign * kAlign;
      data = std::aligned_alloc(kAlign, capacity);
      if (data == nullptr) {
        throw Error(fmt::format("cannot allocate {} for pulled rows",
                                FormatBytes(static_cast<int64_t>(capacity))));
      }
    }
    return torch::from_blob(
        data, shape, [this, capacity](void* p) { Return(p, capacity); }, options);
  }

 private:
  static constexpr size_t kMinBytes = size_t{8} << 20;
  static constexpr size_t kAlign = 64;
  static constexpr size_t kMaxPooled = 4;

  void Return(void* data, size_t capacity) {
    void* drop = data;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (free_.size() < kMaxPooled) {
        free_.emplace_back(data, capacity);
        drop = nullptr;
      } else {
        // Keep the larger buffers: drop the smallest of the pool and this one.
        auto smallest =
            std::min_element(free_.begin(), free_.end(),
                             [](const auto& a, const auto& b) { return a.second < b.second; });
        if (smallest->second < capacity) {
          drop = smallest->first;
          *smallest = {data, capacity};
        }
      }
    }
    std::free(drop);
  }

  std::mutex mutex_;
  std::vector<std::pair<void*, size_t>> free_;
};

}  // namespace

namespace internal {

std::shared_ptr<Context> CurrentContext() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!g_context) {
    throw Error(
        "the job is not initialised: call tessera.distributed.initialize() (C++: "
        "tessera::dist::initialize()) first");
  }
  return g_context;
}

void ThrowIfError(const Status& status, const std::string& what) {
  if (!status.ok()) throw Error(fmt::format("{}: {}", what, std::string(status.message())));
}

torch::Tensor AsIds(const torch::Tensor& ids, const std::string& what) {
  if (!ids.defined()) throw Error(fmt::format("{}: ids tensor is undefined", what));
  if (ids.is_floating_point() || ids.is_complex() || ids.scalar_type() == torch::kBool) {
    throw Error(fmt::format("{}: ids must be an integer tensor, got {}", what,
                            c10::toString(ids.scalar_type())));
  }
  if (ids.dim() > 1) throw Error(fmt::format("{}: ids must be 1-d, got {}-d", what, ids.dim()));
  return ids.reshape({-1}).to(torch::kCPU, torch::kInt64).contiguous();
}

std::vector<int64_t> ToVector(const torch::Tensor& ids, const std::string& what) {
  torch::Tensor flat = AsIds(ids, what);
  const int64_t* p = flat.data_ptr<int64_t>();
  return std::vector<int64_t>(p, p + flat.size(0));
}

}  // namespace internal

using namespace internal;  // NOLINT: this file is its home.

namespace {

// Says goodbye for a context that ends; an exit path: logs, never throws.
void CloseQuietly(kvstore::Services& store, const char* what) {
  try {
    Status s = store.job().Close();
    if (!s.ok())
      spdlog::warn("{}: closing the key-value store: {}", what, std::string(s.message()));
  } catch (const std::exception& e) {
    spdlog::warn("{}: closing the key-value store: {}", what, e.what());
  }
}

// A peer's death (a trainer killed, a server gone) must reach this process
// as an error on the socket (EPIPE), not kill it: Gloo's TCP pairs write
// with writev, which raises SIGPIPE, and a trainer killed by it was blamed
// by the launcher for the death of the peer that caused it. (Python ignores
// SIGPIPE already; a handler the program installed is kept.)
void IgnoreSigpipe() {
  struct sigaction current {};
  if (sigaction(SIGPIPE, nullptr, &current) == 0 && current.sa_handler == SIG_DFL) {
    std::signal(SIGPIPE, SIG_IGN);
  }
}

// The cores this process may run on (its affinity mask).
int UsableCores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

// Sampler threads for a trainer with `cores` cores to itself: one per four,
// at least one (none on a single core, where they would only take turns
// with the compute threads). On a 2-core machine one sampler thread made
// DGL's GraphSAGE epoch 1.96 s against 2.44 s with none (sampling inline)
// and 2.29-2.50 s with two.
int DefaultSamplerThreads(int cores) { return cores >= 2 ? std::max(1, cores / 4) : 0; }

// Standalone, the process owns its machine: LibTorch computes on every
// usable core (unless OMP_NUM_THREADS or InitOptions say otherwise; a
// program's own larger setting is kept) and DefaultSamplerThreads of them
// sample and pull the next batches meanwhile. Returns the sampler threads.

int ChooseStandaloneThreads(const launcher::GetEnvFn& getenv, bool choose_threads) {
  const int cores = UsableCores();
  const char* omp = getenv("OMP_NUM_THREADS");
  if (choose_threads && (omp == nullptr || *omp == '\0') && torch::get_num_threads() < cores) {
    torch::set_num_threads(cores);
  }
  const int samplers = DefaultSamplerThreads(cores);
  const char* wait = getenv("OMP_WAIT_POLICY");
  if (samplers > 0 && (wait == nullptr || strcasecmp(wait, "passive") != 0)) {
    spdlog::warn(
        "tessera: OMP_WAIT_POLICY is not PASSIVE: LibTorch's OpenMP threads will spin "
        "between parallel regions and slow the sampler threads (a GraphSAGE epoch "
        "measured 1.9x as long); export OMP_WAIT_POLICY=PASSIVE before starting the "
        "trainer");
  }
  spdlog::info(
      "tessera: standalone mode (no launcher environment): {} compute threads{}, {} "
      "sampler threads, {} usable cores",
      torch::get_num_threads(), omp && *omp ? " (OMP_NUM_THREADS)" : "", samplers, cores);
  return samplers;
}

}  // namespace

Context::~Context() {
  if (store_) CloseQuietly(*store_, "tessera");
}

std::shared_ptr<Context> initialize(const std::string& ip_config, const InitOptions& options) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_context) return g_context;
  launcher::GetEnvFn getenv = options.getenv;
  if (!getenv) getenv = [](const char* name) { return std::getenv(name); };
  auto env = ValueOrThrow(launcher::ParseJobEnv(getenv), "initialize");
  if (options.retain_freed_memory) RetainFreedMemory();
  IgnoreSigpipe();
  InstallExitHook();
  std::shared_ptr<Context> ctx(new Context());
  ctx->options_ = options;
  if (!env) {
    ctx->num_samplers_ = ChooseStandaloneThreads(getenv, options.choose_threads);
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
  ip = ValueOrThrow(launcher::SelectMachines(ip, env->machines), "initialize: TESSERA_MACHINES");
  // --num-samplers 0, DGL's default, means no sampler processes: tessera
  // has none anyway, and the trainer samples ahead on threads of its own,
  // sized by its share of the machine: its compute threads, at most the
  // usable cores over the trainers of the machine (4 trainers on 2 cores
  // sample inline; each extra thread there only adds switches).
  const int local_trainers = std::max(1, env->world_size / std::max(1, ip.num_machines()));
  const int share = std::max(1, UsableCores() / local_trainers);
  ctx->num_samplers_ = env->num_samplers > 0
                           ? env->num_samplers
                           : DefaultSamplerThreads(std::min(torch::get_num_threads(), share));
  if (env->machine_id >= ip.num_machines()) {
    throw Error(fmt::format("initialize: TESSERA_MACHINE_ID={} but {} lists {} machines",
                            env->machine_id, ip_path, ip.num_machines()));
  }
  ctx->master_addr_ = env->master_addr;
  ctx->master_port_ = env->master_port;
  ctx->host_address_ = ip.machines[static_cast<size_t>(env->machine_id)].ip;
  kvstore::KvClientOptions kv_options{
      .job_id = env->job_id,
      .token = env->token,
      .curve_secret_key = env->curve_secret_key,
      .client_id = env->rank,
      .machine_id = env->machine_id,
      .servers = ip.ServerEndpoints(env->num_servers),
      .servers_per_machine = env->num_servers,
      .num_clients = env->world_size,
      .call_timeout = Ms(SecondsFromEnv(getenv, "TESSERA_CALL_TIMEOUT_S", options.call_timeout_s)),
      .connect_timeout = Ms(options.connect_timeout_s),
      .barrier_timeout = Ms(options.barrier_timeout_s),
      .heartbeat_interval = Ms(options.heartbeat_interval_s),
      .heartbeat_timeout =
          Ms(SecondsFromEnv(getenv, "TESSERA_HEARTBEAT_TIMEOUT_S", options.heartbeat_timeout_s))};
  std::unique_ptr<kvstore::KvClient> client =
      ValueOrThrow(kvstore::KvClient::Connect(kv_options), "initialize: connecting to the servers");
  spdlog::info(
      "tessera: trainer {} of {} on machine {}, connected to {} servers; {} compute "
      "threads (the launcher's --num-omp-threads), {} sampler threads ({}), {} usable cores",
      env->rank, env->world_size, env->machine_id, kv_options.servers.size(),
      torch::get_num_threads(), ctx->num_samplers_,
      env->num_samplers > 0 ? "--num-samplers" : "--num-samplers 0: one per 4 cores of its share",
      UsableCores());
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
  // The program's work is done: a goodbye that fails is a warning (logged
  // by Close()), never an exception that would end the program in
  // std::terminate and lose its buffered output.
  if (ctx && ctx->store_ && ctx.use_count() == 1) CloseQuietly(*ctx->store_, "exit_client");
}

// ------------------------------------------------------------ DistTensor

struct DistTensor::State {
  std::shared_ptr<Context> context;
  std::string key;  // "node/<name>"
  std::string name;
  std::vector<int64_t> shape;
  DType dtype = DType::kFloat32;
  PartPolicy policy = PartPolicy::kNode;
  int type = 0;
  std::string type_name;
  bool owner = false;
  bool persistent = true;
  bool deleted = false;  // By Delete().

  ~State() {
    if (!owner || persistent || deleted || !context->store_) return;
    try {
      Status s = context->store_->features().DeleteData(key);
      if (!s.ok()) spdlog::warn("deleting DistTensor '{}': {}", name, std::string(s.message()));
    } catch (const std::exception& e) {  // Nothing leaves a destructor.
      spdlog::warn("deleting DistTensor '{}': {}", name, e.what());
    }
  }
  kvstore::Services& store() const {
    if (!context->store_) throw Error("standalone mode: create a DistGraph before DistTensors");
    return *context->store_;
  }
};

namespace {

// The policy and type of a new tensor (DGL's choice of partition policy).
std::pair<PartPolicy, int> ChoosePolicy(const PartitionBook& book, const std::string& name,
                                        int64_t rows, PartPolicy policy, const std::string& type) {
  if (!type.empty()) {
    if (policy == PartPolicy::kAuto) {
      auto n = book.NodeTypeId(type);
      auto e = book.EdgeTypeId(type);
      if (n.ok() == e.ok()) {
        throw Error(
            fmt::format("DistTensor '{}': '{}' is {} a node type and a relation; pass "
                        "PartPolicy::kNode or kEdge",
                        name, type, n.ok() ? "both" : "neither"));
      }
      policy = n.ok() ? PartPolicy::kNode : PartPolicy::kEdge;
    }
    const bool node = policy == PartPolicy::kNode;
    int t = ValueOrThrow(node ? book.NodeTypeId(type) : book.EdgeTypeId(type),
                         fmt::format("DistTensor '{}'", name));
    return {policy, t};
  }
  // Candidates: every (policy, type) whose count is `rows`.
  std::vector<std::pair<PartPolicy, int>> fits;
  std::vector<std::string> sizes;
  for (PartPolicy p : {PartPolicy::kNode, PartPolicy::kEdge}) {
    if (policy != PartPolicy::kAuto && policy != p) continue;
    const bool node = p == PartPolicy::kNode;
    const int num_types = node ? book.num_ntypes() : book.num_etypes();
    for (int t = 0; t < num_types; ++t) {
      const int64_t count = node ? book.NumNodesOfType(t) : book.NumEdgesOfType(t);
      sizes.push_back(
          fmt::format("{} '{}': {}", node ? "nodes" : "edges", book.TypeName(node, t), count));
      if (count == rows) fits.push_back({p, t});
    }
  }
  if (fits.size() == 1) return fits[0];
  if (fits.empty()) {
    throw Error(fmt::format("DistTensor '{}': shape[0] = {} is not the count of any {} ({})", name,
                            rows,
                            policy == PartPolicy::kAuto   ? "node type or relation"
                            : policy == PartPolicy::kNode ? "node type"
                                                          : "relation",
                            fmt::join(sizes, ", ")));
  }
  throw Error(
      fmt::format("DistTensor '{}': shape[0] = {} fits several types ({}); pass the policy "
                  "and the type",
                  name, rows, fmt::join(sizes, ", ")));
}

}  // namespace

DistTensor::DistTensor(std::vector<int64_t> shape, torch::Dtype dtype, std::string name, Init init,
                       PartPolicy policy, bool persistent, const std::string& type) {
  auto state = std::make_shared<State>();
  state->context = CurrentContext();
  kvstore::Services& store = state->store();
  if (shape.empty()) throw Error("DistTensor: shape must have at least one dimension");
  const PartitionBook& book = store.book();
  auto [chosen, type_id] = ChoosePolicy(book, name, shape[0], policy, type);
  policy = chosen;
  const bool node = policy == PartPolicy::kNode;
  const int64_t rows = node ? book.NumNodesOfType(type_id) : book.NumEdgesOfType(type_id);
  if (shape[0] != rows) {
    throw Error(fmt::format("DistTensor '{}': shape[0] = {} but {} '{}' has {} {}", name, shape[0],
                            node ? "node type" : "relation", book.TypeName(node, type_id), rows,
                            node ? "nodes" : "edges"));
  }
  if (name.empty()) {
    if (persistent) throw Error("DistTensor: an anonymous tensor cannot be persistent");
    name = fmt::format("anonymous-{}", g_anonymous.fetch_add(1));
  }
  const std::string stored =
      book.is_homogeneous() ? name : book.TypeName(node, type_id) + "/" + name;
  kvstore::InitSpec spec{
      .name = stored,
      .dtype = ToDType(dtype),
      .shape = shape,
      .policy = policy == PartPolicy::kNode ? shm::Policy::kNode : shm::Policy::kEdge,
      .init = static_cast<kvstore::Init>(init.kind),
      .a = init.a,
      .b = init.b,
      .seed = init.seed,
      .persistent = persistent};
  bool created =
      ValueOrThrow(store.features().InitData(spec), fmt::format("DistTensor '{}'", name));
  state->key = fmt::format("{}/{}", shm::PolicyName(spec.policy), stored);
  state->name = name;
  state->type = type_id;
  state->type_name = book.TypeName(node, type_id);
  state->shape = std::move(shape);
  state->dtype = spec.dtype;
  state->policy = policy;
  state->owner = created;
  state->persistent = persistent;
  state_ = std::move(state);
}

namespace {

// The rows a handle's buffers hold (the store refuses them if the tensor was
// created again with others since the handle was made).
kvstore::RowLayout HandleLayout(const DistTensor& t) {
  const DType dtype = ToDType(t.dtype());
  size_t row_bytes = DTypeSize(dtype);
  for (size_t i = 1; i < t.shape().size(); ++i) row_bytes *= static_cast<size_t>(t.shape()[i]);
  return {dtype, row_bytes};
}

void PushRows(const DistTensor& t, const std::string& key, const torch::Tensor& ids,
              const torch::Tensor& rows, kvstore::Services& store, DType dtype,
              kvstore::PushMode mode) {
  torch::Tensor flat = AsIds(ids, t.name());
  std::vector<int64_t> want = t.shape();
  want[0] = flat.size(0);
  torch::Tensor values = rows.to(torch::kCPU, ToTorch(dtype)).contiguous();
  if (values.sizes().vec() != want) {
    throw Error(fmt::format("writing rows of '{}': rows have shape [{}], expected [{}]", t.name(),
                            fmt::join(values.sizes().vec(), ", "), fmt::join(want, ", ")));
  }
  std::span<const int64_t> span(flat.data_ptr<int64_t>(), static_cast<size_t>(flat.size(0)));
  ThrowIfError(store.features().Push(key, span, HandleLayout(t), values.data_ptr(), mode),
               fmt::format("writing rows of '{}'", t.name()));
}

}  // namespace

torch::Tensor DistTensor::operator[](const torch::Tensor& ids) const {
  torch::Tensor flat = AsIds(ids, state_->name);
  std::vector<int64_t> shape = state_->shape;
  shape[0] = flat.size(0);
  torch::Tensor out = PullBufferPool::Get().Empty(shape, ToTorch(state_->dtype));
  std::span<const int64_t> span(flat.data_ptr<int64_t>(), static_cast<size_t>(flat.size(0)));
  ThrowIfError(
      state_->store().features().PullInto(state_->key, span, HandleLayout(*this), out.data_ptr()),
      fmt::format("reading rows of '{}'", state_->name));
  return out;
}

void DistTensor::set(const torch::Tensor& ids, const torch::Tensor& rows) const {
  PushRows(*this, state_->key, ids, rows, state_->store(), state_->dtype,
           kvstore::PushMode::kAssign);
}

void DistTensor::add(const torch::Tensor& ids, const torch::Tensor& rows) const {
  PushRows(*this, state_->key, ids, rows, state_->store(), state_->dtype, kvstore::PushMode::kAdd);
}

const std::vector<int64_t>& DistTensor::shape() const { return state_->shape; }
torch::Dtype DistTensor::dtype() const { return ToTorch(state_->dtype); }
const std::string& DistTensor::name() const { return state_->name; }
PartPolicy DistTensor::part_policy() const { return state_->policy; }
const std::string& DistTensor::key() const { return state_->key; }
const std::string& DistTensor::type_name() const { return state_->type_name; }
bool DistTensor::created() const { return state_->owner; }

void DistTensor::Delete() const {
  ThrowIfError(state_->store().features().DeleteData(state_->key),
               "deleting DistTensor '" + state_->name + "'");
  state_->deleted = true;
}

std::pair<int64_t, int64_t> DistTensor::id_range(int part) const {
  const PartitionBook& book = state_->store().book();
  if (part < 0 || part >= book.num_partitions()) {
    throw Error(fmt::format("DistTensor '{}': partition {} is not in [0, {})", state_->name, part,
                            book.num_partitions()));
  }
  const auto policy = state_->policy == PartPolicy::kNode ? shm::Policy::kNode : shm::Policy::kEdge;
  return kvstore::IdRange(book, policy, state_->type, part);
}

torch::Tensor DistTensor::local_partition() const {
  kvstore::ShardView view =
      ValueOrThrow(state_->store().features().LocalShard(state_->key, HandleLayout(*this)),
                   fmt::format("the local partition of '{}'", state_->name));
  std::vector<int64_t> shape = state_->shape;
  shape[0] = view.rows;
  return torch::from_blob(
      view.data, shape, [keep = std::move(view.keep)](void*) {},
      torch::TensorOptions().dtype(ToTorch(state_->dtype)));
}

kvstore::Services& DistTensor::store() const { return state_->store(); }

// ------------------------------------------------------------ DistGraph

DistGraph::DistGraph(const std::string& graph_name, const std::string& part_config)
    : context_(CurrentContext()), graph_name_(graph_name) {
  if (context_->standalone_) {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (!context_->store_) {
      if (part_config.empty()) throw Error("DistGraph: standalone mode needs part_config");
      context_->store_ = ValueOrThrow(kvstore::LocalKvStore::Open(part_config),
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

void DistGraph::barrier() const { ThrowIfError(context_->store_->job().Barrier(), "barrier"); }

DistTensor DistGraph::Data(const std::string& prefix, const std::string& name) const {
  const PartitionBook& book = partition_book();
  const bool node = prefix == "node";
  if (!book.is_homogeneous()) {
    const int count = node ? book.num_ntypes() : book.num_etypes();
    if (count != 1) {
      throw Error(fmt::format("{}data: the graph has {} {} ({}); use {}(type).data(\"{}\")",
                              node ? "n" : "e", count, node ? "node types" : "relations",
                              fmt::join(book.TypeNames(node), ", "), node ? "nodes" : "edges",
                              name));
    }
  }
  return TypeData(node, 0, name);
}

DistTensor DistGraph::TypeData(bool node, int type, const std::string& name) const {
  const PartitionBook& book = partition_book();
  const std::string type_name = book.TypeName(node, type);
  const std::string stored = book.is_homogeneous() ? name : type_name + "/" + name;
  std::string key = fmt::format("{}/{}", node ? "node" : "edge", stored);
  kvstore::TensorMeta meta = ValueOrThrow(
      context_->store_->features().Meta(key),
      book.is_homogeneous() ? fmt::format("{}data", node ? "n" : "e")
                            : fmt::format("{}('{}').data", node ? "nodes" : "edges", type_name));
  auto state = std::make_shared<DistTensor::State>();
  state->context = context_;
  state->key = key;
  state->name = name;
  state->shape = meta.shape;
  state->dtype = meta.dtype;
  state->policy = meta.policy == shm::Policy::kNode ? PartPolicy::kNode : PartPolicy::kEdge;
  state->type = type;
  state->type_name = type_name;
  return DistTensor(std::move(state));
}

DistTensor DistGraph::ndata(const std::string& name) const { return Data("node", name); }
DistTensor DistGraph::edata(const std::string& name) const { return Data("edge", name); }

namespace {
// The schemes of the tensors whose keys start with `prefix`, by the rest of
// the key.
std::map<std::string, AttrScheme> SchemesUnder(kvstore::FeatureStore& store,
                                               const std::string& prefix) {
  std::map<std::string, AttrScheme> out;
  for (const kvstore::TensorMeta& meta : ValueOrThrow(store.List(), "attribute schemes")) {
    if (meta.key.rfind(prefix, 0) != 0) continue;
    out[meta.key.substr(prefix.size())] = {
        std::vector<int64_t>(meta.shape.begin() + 1, meta.shape.end()), ToTorch(meta.dtype)};
  }
  return out;
}
}  // namespace

std::map<std::string, AttrScheme> DistGraph::Schemes(const std::string& prefix) const {
  const PartitionBook& book = partition_book();
  const bool node = prefix == "node";
  // One type on this side (a homogeneous graph, or e.g. a knowledge graph's
  // single node type): plain names, as ndata / edata take them.
  if ((node ? book.num_ntypes() : book.num_etypes()) == 1) return TypeSchemes(node, 0);
  return SchemesUnder(context_->store_->features(), prefix + "/");  // "<type>/<name>".
}

std::map<std::string, AttrScheme> DistGraph::TypeSchemes(bool node, int type) const {
  const PartitionBook& book = partition_book();
  const std::string prefix =
      fmt::format("{}/{}", node ? "node" : "edge",
                  book.is_homogeneous() ? "" : book.TypeName(node, type) + "/");
  return SchemesUnder(context_->store_->features(), prefix);
}

std::map<std::string, AttrScheme> DistGraph::node_attr_schemes() const { return Schemes("node"); }
std::map<std::string, AttrScheme> DistGraph::edge_attr_schemes() const { return Schemes("edge"); }

const std::vector<std::string>& DistGraph::ntypes() const { return partition_book().ntypes(); }

std::vector<std::string> DistGraph::etypes() const {
  std::vector<std::string> out;
  for (const EdgeType& e : partition_book().etypes()) out.push_back(e.relation);
  return out;
}

const std::vector<EdgeType>& DistGraph::canonical_etypes() const {
  return partition_book().etypes();
}

int DistGraph::get_ntype_id(const std::string& ntype) const {
  return ValueOrThrow(partition_book().NodeTypeId(ntype), "DistGraph");
}

int DistGraph::get_etype_id(const std::string& etype) const {
  return ValueOrThrow(partition_book().EdgeTypeId(etype), "DistGraph");
}

EdgeType DistGraph::to_canonical_etype(const std::string& etype) const {
  return partition_book().etypes()[get_etype_id(etype)];
}

int64_t DistGraph::num_nodes(const std::string& ntype) const {
  return partition_book().NumNodesOfType(get_ntype_id(ntype));
}

int64_t DistGraph::num_edges(const std::string& etype) const {
  return partition_book().NumEdgesOfType(get_etype_id(etype));
}

DistGraph::TypeView DistGraph::nodes(const std::string& ntype) const {
  int t = get_ntype_id(ntype);
  return TypeView(this, true, t, ntypes()[t]);
}

DistGraph::TypeView DistGraph::edges(const std::string& etype) const {
  int r = get_etype_id(etype);
  return TypeView(this, false, r, canonical_etypes()[r].Canonical());
}

DistTensor DistGraph::TypeView::data(const std::string& name) const {
  return graph_->TypeData(node_, type_, name);
}

std::map<std::string, AttrScheme> DistGraph::TypeView::schemes() const {
  return graph_->TypeSchemes(node_, type_);
}

namespace {

std::pair<torch::Tensor, torch::Tensor> ToPerType(const PartitionBook& book,
                                                  const torch::Tensor& ids, bool node) {
  torch::Tensor flat = AsIds(ids, node ? "map_to_per_ntype" : "map_to_per_etype");
  const int64_t n = flat.size(0), limit = node ? book.num_nodes() : book.num_edges();
  torch::Tensor types = torch::empty({n}, torch::kInt64);
  torch::Tensor per = torch::empty({n}, torch::kInt64);
  const int64_t* in = flat.data_ptr<int64_t>();
  int64_t* t = types.data_ptr<int64_t>();
  int64_t* o = per.data_ptr<int64_t>();
  for (int64_t i = 0; i < n; ++i) {
    if (in[i] < 0 || in[i] >= limit) {
      throw Error(fmt::format("{}: id {} (position {}) is not in [0, {})",
                              node ? "map_to_per_ntype" : "map_to_per_etype", in[i], i, limit));
    }
    auto [type, id] = node ? book.MapToPerNtype(in[i]) : book.MapToPerEtype(in[i]);
    t[i] = type;
    o[i] = id;
  }
  return {types, per};
}

torch::Tensor ToHomo(const PartitionBook& book, const torch::Tensor& ids, bool node, int type,
                     const std::string& type_name) {
  torch::Tensor flat = AsIds(ids, node ? "map_to_homo_nid" : "map_to_homo_eid");
  const int64_t n = flat.size(0);
  const int64_t limit = node ? book.NumNodesOfType(type) : book.NumEdgesOfType(type);
  torch::Tensor out = torch::empty({n}, torch::kInt64);
  const int64_t* in = flat.data_ptr<int64_t>();
  int64_t* o = out.data_ptr<int64_t>();
  for (int64_t i = 0; i < n; ++i) {
    if (in[i] < 0 || in[i] >= limit) {
      throw Error(fmt::format("{}: id {} (position {}) is not a '{}' id (there are {})",
                              node ? "map_to_homo_nid" : "map_to_homo_eid", in[i], i, type_name,
                              limit));
    }
    o[i] = node ? book.MapToHomoNid(type, in[i]) : book.MapToHomoEid(type, in[i]);
  }
  return out;
}

}  // namespace

std::pair<torch::Tensor, torch::Tensor> DistGraph::map_to_per_ntype(
    const torch::Tensor& nids) const {
  return ToPerType(partition_book(), nids, true);
}

std::pair<torch::Tensor, torch::Tensor> DistGraph::map_to_per_etype(
    const torch::Tensor& eids) const {
  return ToPerType(partition_book(), eids, false);
}

torch::Tensor DistGraph::map_to_homo_nid(const torch::Tensor& ids, const std::string& ntype) const {
  int t = get_ntype_id(ntype);
  return ToHomo(partition_book(), ids, true, t, ntypes()[t]);
}

torch::Tensor DistGraph::map_to_homo_eid(const torch::Tensor& ids, const std::string& etype) const {
  int r = get_etype_id(etype);
  return ToHomo(partition_book(), ids, false, r, canonical_etypes()[r].Canonical());
}

// ------------------------------------------------------------ splitting work

namespace {

// Selected ids from a mask (bool/uint8 of `total` entries) or from ids.
std::vector<int64_t> Selected(const torch::Tensor& t, int64_t total, const char* what) {
  if (!t.defined()) throw Error(fmt::format("{}: undefined tensor", what));
  if (t.scalar_type() == torch::kBool || t.scalar_type() == torch::kUInt8) {
    if (t.dim() != 1 || t.size(0) != total) {
      throw Error(fmt::format("{}: a mask must have one entry per {} ({}), got shape [{}]", what,
                              std::string(what).rfind("node", 0) == 0 ? "node" : "edge", total,
                              fmt::join(t.sizes().vec(), ", ")));
    }
    torch::Tensor mask = t.to(torch::kCPU, torch::kUInt8).contiguous();
    return MaskToIds({mask.data_ptr<uint8_t>(), static_cast<size_t>(total)});
  }
  std::vector<int64_t> ids = ToVector(t, what);
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  if (!ids.empty() && (ids.front() < 0 || ids.back() >= total)) {
    throw Error(fmt::format("{}: ids must be in [0, {})", what, total));
  }
  return ids;
}

torch::Tensor Split(std::vector<int64_t> selected, const std::vector<int64_t>& offsets,
                    int64_t total, const SplitOptions& options, const char* what) {
  std::shared_ptr<Context> ctx = CurrentContext();
  int rank = options.rank >= 0 ? options.rank : ctx->rank();
  int trainers = options.num_trainers > 0 ? options.num_trainers : ctx->world_size();
  std::vector<int64_t> trainer_ids;
  if (options.trainer_ids.defined()) {
    std::vector<int64_t> given = ToVector(options.trainer_ids, what);
    if (static_cast<int64_t>(given.size()) == total) {
      trainer_ids.reserve(selected.size());
      for (int64_t id : selected) trainer_ids.push_back(given[id]);
    } else if (given.size() == selected.size()) {
      trainer_ids = std::move(given);
    } else {
      throw Error(
          fmt::format("{}: trainer_ids must have one entry per id ({}) or per selected id "
                      "({}), got {}",
                      what, total, selected.size(), given.size()));
    }
  }
  tessera::SplitOptions split{.force_even = options.force_even, .trainer_ids = trainer_ids};
  return Owned(ValueOrThrow(SplitWork(selected, offsets, trainers, rank, split), what));
}

std::vector<int64_t> SelectedFromDist(const DistTensor& mask, int64_t total, const char* what) {
  if (mask.shape().size() != 1 || mask.shape()[0] != total) {
    throw Error(fmt::format("{}: the mask '{}' must have shape [{}]", what, mask.name(), total));
  }
  std::vector<int64_t> ids;
  constexpr int64_t kPiece = int64_t{1} << 20;
  for (int64_t begin = 0; begin < total; begin += kPiece) {
    int64_t end = std::min(total, begin + kPiece);
    torch::Tensor part = mask[torch::arange(begin, end)].to(torch::kUInt8).contiguous();
    const uint8_t* p = part.data_ptr<uint8_t>();
    for (int64_t i = 0; i < end - begin; ++i) {
      if (p[i]) ids.push_back(begin + i);
    }
  }
  return ids;
}

}  // namespace

namespace {

// The type a split is of: options.type, else the only one.
int SplitType(const PartitionBook& book, bool node, const std::string& type, const char* what) {
  if (!type.empty()) {
    return ValueOrThrow(node ? book.NodeTypeId(type) : book.EdgeTypeId(type), what);
  }
  const int count = node ? book.num_ntypes() : book.num_etypes();
  if (count == 1) return 0;
  throw Error(fmt::format("{}: the graph has {} {} ({}); say which in SplitOptions::type", what,
                          count, node ? "node types" : "relations",
                          fmt::join(book.TypeNames(node), ", ")));
}

torch::Tensor SplitTyped(const torch::Tensor* ids, const DistTensor* mask,
                         const PartitionBook& book, const SplitOptions& options, bool node) {
  const char* what = node ? "node_split" : "edge_split";
  int t = 0;
  if (mask) {
    if ((mask->part_policy() == PartPolicy::kNode) != node) {
      throw Error(fmt::format("{}: the mask '{}' is {} data; use {}", what, mask->name(),
                              node ? "edge" : "node", node ? "edge_split" : "node_split"));
    }
    t = ValueOrThrow(node ? book.NodeTypeId(mask->type_name()) : book.EdgeTypeId(mask->type_name()),
                     what);
    if (!options.type.empty() && SplitType(book, node, options.type, what) != t) {
      throw Error(fmt::format("{}: the mask '{}' is of type '{}', not '{}'", what, mask->name(),
                              mask->type_name(), options.type));
    }
  } else {
    t = SplitType(book, node, options.type, what);
  }
  const std::vector<int64_t>& offsets = node ? book.TypedNodeOffsets(t) : book.TypedEdgeOffsets(t);
  const int64_t total = offsets.back();
  return Split(mask ? SelectedFromDist(*mask, total, what) : Selected(*ids, total, what), offsets,
               total, options, what);
}

}  // namespace

torch::Tensor node_split(const torch::Tensor& nodes, const PartitionBook& book,
                         const SplitOptions& options) {
  return SplitTyped(&nodes, nullptr, book, options, true);
}

torch::Tensor edge_split(const torch::Tensor& edges, const PartitionBook& book,
                         const SplitOptions& options) {
  return SplitTyped(&edges, nullptr, book, options, false);
}

torch::Tensor node_split(const DistTensor& mask, const PartitionBook& book,
                         const SplitOptions& options) {
  return SplitTyped(nullptr, &mask, book, options, true);
}

torch::Tensor edge_split(const DistTensor& mask, const PartitionBook& book,
                         const SplitOptions& options) {
  return SplitTyped(nullptr, &mask, book, options, false);
}

}  // namespace tessera::dist
