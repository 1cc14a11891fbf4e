// File: src/dist/parallel.cc
//
// The trainers' Gloo process group and DistributedDataParallel (see
// include/tessera/dist/parallel.h). The only translation unit that includes c10d.
#include "tessera/dist/parallel.h"

#include <atomic>
#include <mutex>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "fmt/format.h"
#include "spdlog/spdlog.h"
#include "src/dist/dist_internal.h"
#include "tessera/base/time.h"
#include "tessera/dist.h"

namespace tessera::dist {
namespace {

std::mutex g_group_mutex;
c10::intrusive_ptr<c10d::ProcessGroupGloo> g_group;  // Null standalone.
bool g_group_made = false;
std::atomic<bool> g_group_failed{false};  // A collective failed: do not drain at exit.

std::chrono::milliseconds Ms(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
}

// The process group of the job's trainers, or null with one trainer.
c10::intrusive_ptr<c10d::ProcessGroupGloo> Group() {
  std::lock_guard<std::mutex> lock(g_group_mutex);
  if (g_group_made) return g_group;
  std::shared_ptr<Context> ctx = initialize();
  g_group_made = true;
  if (ctx->world_size() == 1) return g_group;
  if (ctx->master_port() <= 0) {
    throw Error(
        fmt::format("process group: trainer {} of {} has no MASTER_PORT; the launcher sets it",
                    ctx->rank(), ctx->world_size()));
  }
  Stopwatch watch;
  try {
    c10d::TCPStoreOptions store_options;
    store_options.port = static_cast<uint16_t>(ctx->master_port());
    store_options.isServer = ctx->rank() == 0;
    store_options.numWorkers = static_cast<size_t>(ctx->world_size());
    store_options.waitWorkers = false;
    store_options.timeout = Ms(ctx->options().connect_timeout_s);
    auto store = c10::make_intrusive<c10d::TCPStore>(ctx->master_addr(), store_options);
    auto options = c10d::ProcessGroupGloo::Options::create();
    options->timeout = Ms(ctx->options().barrier_timeout_s);
    options->devices.push_back(
        c10d::ProcessGroupGloo::createDeviceForHostname(ctx->host_address()));
    g_group =
        c10::make_intrusive<c10d::ProcessGroupGloo>(store, ctx->rank(), ctx->world_size(), options);
  } catch (const std::exception& e) {
    throw Error(
        fmt::format("process group: trainer {} of {} could not join the others at "
                    "{}:{} (MASTER_ADDR:MASTER_PORT) from {}: {}",
                    ctx->rank(), ctx->world_size(), ctx->master_addr(), ctx->master_port(),
                    ctx->host_address(), e.what()));
  }
  spdlog::info("tessera: process group of {} trainers ready in {:.2f} s", ctx->world_size(),
               watch.Seconds());
  return g_group;
}

// Waits for `work`, turning a failure (a dead trainer, the deadline) into
// dist::Error naming `what`.
void Wait(const c10::intrusive_ptr<c10d::Work>& work, double timeout_s, const char* what) {
  try {
    if (!work->wait(Ms(timeout_s))) throw std::runtime_error("the collective was aborted");
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    g_group_failed.store(true);
    throw Error(fmt::format("{}: a trainer failed or did not arrive within {} s: {}", what,
                            timeout_s, e.what()));
  }
}

}  // namespace

namespace internal {

void ReleaseProcessGroup() noexcept {
  std::lock_guard<std::mutex> lock(g_group_mutex);
  if (!g_group) return;
  if (g_group_failed.load()) {
    // Its worker threads may still wait on a peer that is gone or hung:
    // the process is ending, so they end with it instead of being joined.
    static_cast<void>(g_group.release());
    return;
  }
  try {
    g_group.reset();
  } catch (...) {  // Nothing leaves the exit path.
  }
}

}  // namespace internal

void all_reduce_sum(torch::Tensor& tensor) {
  auto group = Group();
  if (!group) return;
  std::vector<torch::Tensor> tensors = {tensor};
  Wait(group->allreduce(tensors), initialize()->options().barrier_timeout_s, "all_reduce_sum");
}

void broadcast(torch::Tensor& tensor, int root) {
  auto group = Group();
  if (!group) return;
  std::vector<torch::Tensor> tensors = {tensor};
  c10d::BroadcastOptions options;
  options.rootRank = root;
  Wait(group->broadcast(tensors, options), initialize()->options().barrier_timeout_s, "broadcast");
}

// ------------------------------------------------------------ DDP

namespace {

// Every trainer must have built the same model: parameters and buffers of
// the same dtypes and shapes in the same order. Otherwise the broadcasts and
// gradient all-reduces would move buffers of different sizes (Gloo then
// aborts the process), so all trainers compare first and fail together with
// an error that names this trainer's shapes.
void CheckSameModel(const torch::nn::Module& module, const std::vector<torch::Tensor>& params) {
  std::string shapes;
  for (const torch::Tensor& p : params) {
    shapes += fmt::format("{}{}{}", shapes.empty() ? "" : ", ", c10::toString(p.scalar_type()),
                          c10::str(p.sizes()));
  }
  std::string buffers;
  for (const torch::Tensor& b : module.buffers()) {
    buffers += fmt::format("{}{};", c10::toString(b.scalar_type()), c10::str(b.sizes()));
  }
  uint64_t hash = 1469598103934665603ull;  // FNV-1a of both lists.
  for (char c : shapes + "|" + buffers) hash = (hash ^ static_cast<uint8_t>(c)) * 1099511628211ull;
  const auto mine = static_cast<int64_t>(hash >> 1);
  torch::Tensor first = torch::tensor({mine}, torch::kInt64);
  broadcast(first, 0);
  torch::Tensor differ = torch::tensor({first.item<int64_t>() != mine ? 1 : 0}, torch::kInt64);
  all_reduce_sum(differ);
  if (const int64_t n = differ.item<int64_t>(); n > 0) {
    throw Error(fmt::format(
        "DistributedDataParallel: {} trainer(s) built a model whose parameters or buffers "
        "differ from trainer 0's (every trainer must build the same model; features of "
        "another width on some partition do this); this trainer's parameters: {}",
        n, shapes.size() > 2000 ? shapes.substr(0, 2000) + " ..." : shapes));
  }
}

}  // namespace

struct DistributedDataParallel::State {
  struct Bucket {
    std::vector<int64_t> params;   // Indices into `params`.
    std::vector<int64_t> offsets;  // Of each parameter in `flat`.
    torch::Tensor flat;
    int pending = 0;  // Gradients still to arrive this step.
    std::vector<bool> arrived;
    c10::intrusive_ptr<c10d::Work> work;
  };
  c10::intrusive_ptr<c10d::ProcessGroupGloo> group;
  DdpOptions options;
  std::vector<torch::Tensor> params;
  std::vector<std::pair<int64_t, int64_t>> where;  // Bucket and slot of each parameter.
  std::vector<Bucket> buckets;
  std::vector<std::vector<int64_t>> bucket_params;
  std::vector<unsigned> hooks;  // Handle of each parameter's gradient hook.
  std::mutex mutex;
  size_t next_launch = 0;

  void Reset() {
    for (Bucket& b : buckets) {
      b.pending = static_cast<int>(b.params.size());
      std::fill(b.arrived.begin(), b.arrived.end(), false);
      b.work.reset();
    }
    next_launch = 0;
  }

  // Starts every bucket that is complete, in bucket order.
  void LaunchReady() {
    while (next_launch < buckets.size() && buckets[next_launch].pending == 0) {
      Bucket& b = buckets[next_launch++];
      std::vector<torch::Tensor> tensors = {b.flat};
      b.work = group->allreduce(tensors);
    }
  }

  void OnGradient(int64_t index, const torch::Tensor& grad) {
    std::lock_guard<std::mutex> lock(mutex);
    auto [bucket, slot] = where[static_cast<size_t>(index)];
    Bucket& b = buckets[static_cast<size_t>(bucket)];
    if (b.arrived[static_cast<size_t>(slot)]) {
      // The bucket may already be on the wire: adding into it would race.
      throw Error(
          "DistributedDataParallel: a second backward pass before synchronize(); call "
          "synchronize() (or use ddp.backward(loss)) after every backward pass");
    }
    b.flat.narrow(0, b.offsets[static_cast<size_t>(slot)], grad.numel()).copy_(grad.reshape({-1}));
    b.arrived[static_cast<size_t>(slot)] = true;
    if (--b.pending == 0) LaunchReady();
  }
};

DistributedDataParallel::DistributedDataParallel(std::shared_ptr<torch::nn::Module> module,
                                                 DdpOptions options)
    : module_(std::move(module)), state_(std::make_shared<State>()) {
  if (!module_) throw Error("DistributedDataParallel: no module");
  State& s = *state_;
  s.options = options;
  s.group = Group();
  for (const torch::Tensor& p : module_->parameters()) {
    if (p.requires_grad()) s.params.push_back(p);
  }
  if (s.group) CheckSameModel(*module_, s.params);
  if (s.group && options.broadcast_parameters) {
    torch::NoGradGuard no_grad;
    for (torch::Tensor& p : s.params) {
      torch::Tensor copy = p.detach().contiguous();
      broadcast(copy, 0);
      p.detach().copy_(copy);
    }
    for (torch::Tensor b : module_->buffers()) {
      torch::Tensor copy = b.detach().contiguous();
      broadcast(copy, 0);
      b.detach().copy_(copy);
    }
  }
  // Buckets over the parameters in reverse order (gradients of the last
  // layers are computed first), split when full or when the dtype changes.
  const int64_t cap = static_cast<int64_t>(options.bucket_cap_mb * (1 << 20));
  const int64_t first_cap = std::min<int64_t>(cap, 1 << 20);
  s.where.resize(s.params.size());
  std::vector<int64_t> current;
  int64_t current_bytes = 0;
  auto close = [&] {
    if (current.empty()) return;
    State::Bucket b;
    b.params = current;
    int64_t numel = 0;
    for (int64_t i : current) {
      s.where[static_cast<size_t>(i)] = {static_cast<int64_t>(s.buckets.size()),
                                         static_cast<int64_t>(b.offsets.size())};
      b.offsets.push_back(numel);
      numel += s.params[static_cast<size_t>(i)].numel();
    }
    b.flat = torch::zeros({numel}, s.params[static_cast<size_t>(current[0])].options());
    b.arrived.assign(current.size(), false);
    s.bucket_params.push_back(current);
    s.buckets.push_back(std::move(b));
    current.clear();
    current_bytes = 0;
  };
  for (int64_t i = static_cast<int64_t>(s.params.size()) - 1; i >= 0; --i) {
    const torch::Tensor& p = s.params[static_cast<size_t>(i)];
    if (!current.empty() &&
        p.scalar_type() != s.params[static_cast<size_t>(current[0])].scalar_type()) {
      close();
    }
    current.push_back(i);
    current_bytes += p.numel() * static_cast<int64_t>(p.element_size());
    if (current_bytes >= (s.buckets.empty() ? first_cap : cap)) close();
  }
  close();
  s.Reset();
  if (!s.group) return;
  for (size_t i = 0; i < s.params.size(); ++i) {
    // Removed by the destructor; the weak reference keeps a backward pass
    // running on another thread meanwhile from touching a freed state.
    std::weak_ptr<State> weak = state_;
    int64_t index = static_cast<int64_t>(i);
    s.hooks.push_back(s.params[i].register_hook([weak, index](const torch::Tensor& grad) {
      if (std::shared_ptr<State> state = weak.lock()) state->OnGradient(index, grad);
    }));
  }
}

DistributedDataParallel::~DistributedDataParallel() {
  // Reductions still in flight write into our buckets: wait them out.
  if (!state_) return;
  for (size_t i = 0; i < state_->hooks.size(); ++i) state_->params[i].remove_hook(state_->hooks[i]);
  for (auto& b : state_->buckets) {
    if (!b.work) continue;
    try {
      b.work->wait(Ms(state_->options.timeout_s));
    } catch (const std::exception& e) {
      spdlog::warn("DistributedDataParallel: a pending reduction failed: {}", e.what());
    }
  }
}

int DistributedDataParallel::world_size() const {
  return state_->group ? state_->group->getSize() : 1;
}

const std::vector<std::vector<int64_t>>& DistributedDataParallel::bucket_params() const {
  return state_->bucket_params;
}

SyncStats DistributedDataParallel::backward(const torch::Tensor& loss) {
  loss.backward();
  return synchronize();
}

SyncStats DistributedDataParallel::synchronize() {
  State& s = *state_;
  SyncStats stats;
  stats.buckets = static_cast<int>(s.buckets.size());
  for (const auto& b : s.buckets) stats.bytes += b.flat.numel() * b.flat.element_size();
  if (!s.group) return stats;
  Stopwatch watch;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    // Parameters that got no gradient this step take part as zeros, so that
    // every trainer reduces the same buckets.
    for (auto& b : s.buckets) {
      for (size_t slot = 0; slot < b.params.size(); ++slot) {
        if (b.arrived[slot]) continue;
        b.flat.narrow(0, b.offsets[slot], s.params[static_cast<size_t>(b.params[slot])].numel())
            .zero_();
        b.arrived[slot] = true;
        --b.pending;
      }
    }
    s.LaunchReady();
  }
  const double world = static_cast<double>(s.group->getSize());
  try {
    for (auto& b : s.buckets) Wait(b.work, s.options.timeout_s, "gradient allreduce");
  } catch (...) {
    s.Reset();
    throw;
  }
  torch::NoGradGuard no_grad;
  for (auto& b : s.buckets) {
    b.flat.div_(world);
    for (size_t slot = 0; slot < b.params.size(); ++slot) {
      torch::Tensor& p = s.params[static_cast<size_t>(b.params[slot])];
      torch::Tensor avg = b.flat.narrow(0, b.offsets[slot], p.numel()).view(p.sizes());
      if (p.mutable_grad().defined()) {
        p.mutable_grad().copy_(avg);
      } else {
        p.mutable_grad() = avg.clone();
      }
    }
  }
  s.Reset();
  stats.wait_seconds = watch.Seconds();
  return stats;
}

}  // namespace tessera::dist
