// File: include/tessera/dist/parallel.h
//
// Data parallelism across the trainers of a job, over c10d's Gloo process
// group (rendezvous at the launcher's MASTER_ADDR:MASTER_PORT; RANK and
// WORLD_SIZE from the job environment):
//
//   auto model = std::make_shared<tessera::nn::SAGE>(...);
//   tessera::dist::DistributedDataParallel ddp(model);  // rank 0's weights everywhere
//   torch::optim::Adam opt(model->parameters(), 0.003);
//   for (const auto& batch : loader) {
//     torch::Tensor loss = ...;
//     opt.zero_grad();
//     ddp.backward(loss);  // gradients averaged over every trainer
//     opt.step();
//   }
//
// Gradients are reduced in buckets of parameters (in reverse order, as they
// become ready during the backward pass), each bucket's allreduce starting
// as soon as its last gradient is computed, so communication overlaps the
// rest of the backward pass. Buckets start in the same order on every
// trainer whatever order the hooks fire in.
//
// Standalone (one trainer) nothing is communicated. Every trainer must run
// the same number of steps (the loaders' even_batches does that); a trainer
// that dies makes the others' next collective fail with dist::Error rather
// than hang (Gloo notices the closed connection; every wait also has the
// deadline DdpOptions::timeout_s).
#ifndef TESSERA_INCLUDE_TESSERA_DIST_PARALLEL_H_
#define TESSERA_INCLUDE_TESSERA_DIST_PARALLEL_H_

#include <torch/nn/module.h>
#include <torch/types.h>

#include <memory>
#include <vector>

namespace tessera::dist {

// Collectives over all trainers (in place; every trainer must call them in
// the same order). The process group is created on first use, after
// initialize(); standalone they return at once.
void all_reduce_sum(torch::Tensor& tensor);
void broadcast(torch::Tensor& tensor, int root = 0);

struct DdpOptions {
  double bucket_cap_mb = 25;         // Largest bucket (the first one: 1 MB, as DDP).
  bool broadcast_parameters = true;  // Start every trainer from rank 0's weights.
  double timeout_s = 600;            // Longest wait of one collective.
};

// What the last synchronisation cost.
struct SyncStats {
  double wait_seconds = 0;  // Spent after the backward pass waiting for the reductions.
  int64_t bytes = 0;        // Gradient bytes reduced per trainer.
  int buckets = 0;
};

class DistributedDataParallel {
 public:
  explicit DistributedDataParallel(std::shared_ptr<torch::nn::Module> module,
                                   DdpOptions options = {});
  ~DistributedDataParallel();
  DistributedDataParallel(const DistributedDataParallel&) = delete;
  DistributedDataParallel& operator=(const DistributedDataParallel&) = delete;

  torch::nn::Module& module() { return *module_; }
  // loss.backward(), then synchronize(). One backward pass per
  // synchronize(): a second one before it throws Error (its buckets may
  // already be on the wire), so accumulating gradients over passes is not
  // supported.
  SyncStats backward(const torch::Tensor& loss);
  // Waits for the bucket reductions started during the backward pass (and
  // starts those of parameters that got no gradient, as zeros), then writes
  // the averages into the parameters' .grad.
  SyncStats synchronize();
  int world_size() const;
  const std::vector<std::vector<int64_t>>& bucket_params() const;

 private:
  struct State;
  std::shared_ptr<torch::nn::Module> module_;
  std::shared_ptr<State> state_;  // Shared with the gradient hooks (weakly).
};

}  // namespace tessera::dist

#endif  // TESSERA_INCLUDE_TESSERA_DIST_PARALLEL_H_
