// File: src/dist/embedding.cc
//
// DistEmbedding and the sparse optimizers (include/tessera/dist/embedding.h).
#include "tessera/dist/embedding.h"

#include <cstdio>
#include <mutex>

#include "fmt/format.h"
#include "src/dist/dist_internal.h"
#include "src/kvstore/services.h"

namespace tessera::dist {
namespace {

// Collective: the checkpoint folder `path` holds exactly `tensors` (replaced
// if it held a checkpoint).
void SaveTensors(const std::vector<DistTensor>& tensors, const std::string& path) {
  if (tensors.empty()) return;
  internal::SaveCheckpointOf(
      tensors.front().store(), path, 0,
      {.tensors = tensors, .persistent_tensors = false, .random_state = false},
      /*keep=*/0,
      /*replace=*/true);
}

// Collective: `tensors` from the checkpoint folder `path` (on any partitioning).
void LoadTensors(const std::vector<DistTensor>& tensors, const std::string& path) {
  if (tensors.empty()) return;
  internal::RestoreCheckpointOf(
      tensors.front().store(), path,
      {.tensors = tensors, .persistent_tensors = false, .random_state = false});
}

}  // namespace

struct DistEmbedding::State {
  explicit State(DistTensor w) : weight(std::move(w)) {}
  DistTensor weight;
  bool training = true;
  std::mutex mutex;
  std::vector<std::pair<torch::Tensor, torch::Tensor>> trace;  // (ids, rows) since the last step.
};

DistEmbedding::DistEmbedding(int64_t num_embeddings, int64_t embedding_dim, const std::string& name,
                             Init init, PartPolicy policy, const std::string& type) {
  if (embedding_dim <= 0) {
    throw Error(
        fmt::format("DistEmbedding '{}': embedding_dim {} must be positive", name, embedding_dim));
  }
  if (name.empty()) throw Error("DistEmbedding: a name is required (every trainer uses it)");
  state_ = std::make_shared<State>(DistTensor({num_embeddings, embedding_dim}, torch::kFloat32,
                                              name, init, policy, /*persistent=*/true, type));
}

torch::Tensor DistEmbedding::forward(const torch::Tensor& ids) {
  torch::Tensor rows = state_->weight[ids];
  if (state_->training && torch::GradMode::is_enabled()) {
    rows.requires_grad_(true);
    torch::Tensor flat = ids.to(torch::kInt64).reshape({-1}).contiguous();
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->trace.emplace_back(flat, rows);
  }
  return rows;
}

void DistEmbedding::train(bool on) { state_->training = on; }
const DistTensor& DistEmbedding::weight() const { return state_->weight; }
int64_t DistEmbedding::num_embeddings() const { return state_->weight.shape()[0]; }
int64_t DistEmbedding::embedding_dim() const { return state_->weight.shape()[1]; }
const std::string& DistEmbedding::name() const { return state_->weight.name(); }
void DistEmbedding::save(const std::string& path) const { SaveTensors({state_->weight}, path); }
void DistEmbedding::load(const std::string& path) const { LoadTensors({state_->weight}, path); }

SparseOptimizer::SparseOptimizer(std::vector<DistEmbedding> params,
                                 kvstore::SparseOptimizerSpec spec)
    : params_(std::move(params)), spec_(spec) {
  // Its messages name the optimizer already.
  if (Status valid = kvstore::ValidateSparseSpec(spec_); !valid.ok()) {
    throw Error(std::string(valid.message()));
  }
  for (const DistEmbedding& emb : params_) {
    std::vector<DistTensor> states;
    for (const kvstore::StateTensor& s : kvstore::SparseStateOf(spec_.kind, emb.embedding_dim())) {
      states.emplace_back(std::vector<int64_t>{emb.num_embeddings(), s.width}, torch::kFloat32,
                          emb.name() + s.suffix, Init::Zeros(), emb.weight().part_policy(),
                          /*persistent=*/true, emb.weight().type_name());
    }
    states_.push_back(std::move(states));
  }
}

void SparseOptimizer::step() {
  for (const DistEmbedding& emb : params_) {
    std::vector<std::pair<torch::Tensor, torch::Tensor>> trace;
    {
      std::lock_guard<std::mutex> lock(emb.state_->mutex);
      trace.swap(emb.state_->trace);
    }
    std::vector<torch::Tensor> ids, grads;
    for (auto& [lookup, rows] : trace) {
      if (!rows.grad().defined()) continue;
      ids.push_back(lookup);
      grads.push_back(rows.grad().reshape({lookup.size(0), emb.embedding_dim()}));
    }
    if (ids.empty()) continue;
    torch::Tensor all_ids = torch::cat(ids);
    torch::Tensor all_grads = torch::cat(grads).to(torch::kFloat32);
    // One gradient row per distinct id, the mean of its lookups' (DGL's rule):
    // the update applies each id once.
    auto [unique, inverse, counts] = torch::_unique2(all_ids, /*sorted=*/true,
                                                     /*return_inverse=*/true,
                                                     /*return_counts=*/true);
    torch::Tensor mean = torch::zeros({unique.size(0), emb.embedding_dim()}, torch::kFloat32)
                             .index_add_(0, inverse, all_grads)
                             .div_(counts.unsqueeze(1).to(torch::kFloat32))
                             .contiguous();
    const DistTensor& w = emb.weight();
    internal::ThrowIfError(w.store().features().SparseUpdate(
                               w.key(),
                               std::span<const int64_t>(unique.data_ptr<int64_t>(),
                                                        static_cast<size_t>(unique.size(0))),
                               emb.embedding_dim(), mean.data_ptr<float>(), spec_),
                           fmt::format("sparse optimizer step on '{}'", emb.name()));
  }
}

void SparseOptimizer::zero_grad() {
  for (const DistEmbedding& emb : params_) {
    std::lock_guard<std::mutex> lock(emb.state_->mutex);
    emb.state_->trace.clear();
  }
}

std::vector<DistTensor> SparseOptimizer::tensors() const {
  std::vector<DistTensor> out;
  for (size_t i = 0; i < params_.size(); ++i) {
    out.push_back(params_[i].weight());
    out.insert(out.end(), states_[i].begin(), states_[i].end());
  }
  return out;
}

void SparseOptimizer::save(const std::string& path) const {
  std::vector<DistTensor> states;
  for (const auto& mine : states_) states.insert(states.end(), mine.begin(), mine.end());
  SaveTensors(states, path);
}

void SparseOptimizer::load(const std::string& path) const {
  std::vector<DistTensor> states;
  for (const auto& mine : states_) states.insert(states.end(), mine.begin(), mine.end());
  LoadTensors(states, path);
}

SparseAdagrad::SparseAdagrad(std::vector<DistEmbedding> params, double lr, double eps)
    : SparseOptimizer(std::move(params),
                      {.kind = kvstore::SparseOptimizerKind::kAdagrad, .lr = lr, .eps = eps}) {}

SparseAdam::SparseAdam(std::vector<DistEmbedding> params, double lr,
                       std::pair<double, double> betas, double eps)
    : SparseOptimizer(std::move(params), {.kind = kvstore::SparseOptimizerKind::kAdam,
                                          .lr = lr,
                                          .eps = eps,
                                          .beta1 = betas.first,
                                          .beta2 = betas.second}) {}

}  // namespace tessera::dist
