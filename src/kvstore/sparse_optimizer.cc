// File: src/kvstore/sparse_optimizer.cc
#include "src/kvstore/sparse_optimizer.h"

#include <cmath>

#include "fmt/format.h"
#include "src/base/simd.h"

namespace tessera::kvstore {

Status ValidateSparseSpec(const SparseOptimizerSpec& spec) {
  if (spec.kind != SparseOptimizerKind::kAdagrad && spec.kind != SparseOptimizerKind::kAdam) {
    return absl::InvalidArgumentError(
        fmt::format("sparse optimizer kind {} is neither Adagrad (1) nor Adam (2)",
                    static_cast<int>(spec.kind)));
  }
  if (!(spec.lr > 0) || !std::isfinite(spec.lr)) {
    return absl::InvalidArgumentError(
        fmt::format("sparse optimizer: lr {} is not positive", spec.lr));
  }
  if (!(spec.eps > 0) || !std::isfinite(spec.eps)) {
    return absl::InvalidArgumentError(
        fmt::format("sparse optimizer: eps {} is not positive", spec.eps));
  }
  if (spec.kind == SparseOptimizerKind::kAdam &&
      !(spec.beta1 >= 0 && spec.beta1 < 1 && spec.beta2 >= 0 && spec.beta2 < 1)) {
    return absl::InvalidArgumentError(
        fmt::format("SparseAdam: betas ({}, {}) must lie in [0, 1)", spec.beta1, spec.beta2));
  }
  return absl::OkStatus();
}

std::vector<StateTensor> SparseStateOf(SparseOptimizerKind kind, int64_t dim) {
  if (kind == SparseOptimizerKind::kAdagrad) return {{".adagrad_sum", dim}};
  return {{".adam_m", dim}, {".adam_v", dim}, {".adam_step", 1}};
}

std::string StateKey(const std::string& embedding_key, const StateTensor& state) {
  return embedding_key + state.suffix;
}

// In float, as torch's optimizers compute: the loops vectorise (this file
// is built with -fno-math-errno, so sqrt does not stop that).
TESSERA_SIMD_CLONES
void SparseUpdateRow(const SparseOptimizerSpec& spec, float* row, float* const* state,
                     const float* grad, int64_t dim) {
  const float lr = static_cast<float>(spec.lr), eps = static_cast<float>(spec.eps);
  if (spec.kind == SparseOptimizerKind::kAdagrad) {
    float* sum = state[0];
    for (int64_t j = 0; j < dim; ++j) {
      const float g = grad[j], s = sum[j] + g * g;
      sum[j] = s;
      row[j] -= lr * g / (std::sqrt(s) + eps);
    }
    return;
  }
  float *m = state[0], *v = state[1], *step = state[2];
  step[0] += 1;
  const double b1 = spec.beta1, b2 = spec.beta2;
  // torch.optim.Adam: row -= lr / c1 * m / (sqrt(v) / sqrt(c2) + eps).
  const float step_size = static_cast<float>(lr / (1 - std::pow(b1, step[0])));
  const float inv_sqrt_c2 = static_cast<float>(1 / std::sqrt(1 - std::pow(b2, step[0])));
  const float fb1 = static_cast<float>(b1), fb2 = static_cast<float>(b2);
  for (int64_t j = 0; j < dim; ++j) {
    const float g = grad[j];
    const float mj = fb1 * m[j] + (1 - fb1) * g, vj = fb2 * v[j] + (1 - fb2) * g * g;
    m[j] = mj;
    v[j] = vj;
    row[j] -= step_size * mj / (std::sqrt(vj) * inv_sqrt_c2 + eps);
  }
}

Status ApplySparseUpdate(ShardMap& shards, const std::string& key, std::span<const int64_t> ids,
                         int64_t first_id, const float* grads, int64_t grad_width,
                         const SparseOptimizerSpec& spec) {
  RETURN_IF_ERROR(ValidateSparseSpec(spec));
  ASSIGN_OR_RETURN(Shard embedding, shards.Get(key));
  const shm::ArrayInfo& info = embedding.info;
  if (info.dtype != DType::kFloat32 || info.shape.size() != 2) {
    return absl::InvalidArgumentError(fmt::format(
        "sparse update of '{}': an embedding is a float32 [rows, dim] tensor, not {} with {} "
        "dimensions",
        key, DTypeName(info.dtype), info.shape.size()));
  }
  const int64_t dim = info.shape[1];
  if (grad_width != dim) {
    return absl::InvalidArgumentError(
        fmt::format("sparse update of '{}': gradient rows of {} values for an embedding of dim {}",
                    key, grad_width, dim));
  }
  const int64_t rows = info.shape[0];
  for (int64_t id : ids) {
    if (id < first_id || id >= first_id + rows) {
      return absl::InvalidArgumentError(
          fmt::format("sparse update of '{}': id {} is not on this machine (rows {}..{})", key, id,
                      first_id, first_id + rows - 1));
    }
  }
  std::vector<StateTensor> states = SparseStateOf(spec.kind, dim);
  std::vector<Shard> state_shards;
  for (const StateTensor& s : states) {
    StatusOr<Shard> shard = shards.Get(StateKey(key, s));
    if (!shard.ok()) {
      return absl::FailedPreconditionError(fmt::format(
          "sparse update of '{}': its optimizer state '{}' does not exist (create the optimizer "
          "on every trainer before stepping)",
          key, StateKey(key, s)));
    }
    if (shard->info.dtype != DType::kFloat32 || shard->info.rows() != rows ||
        static_cast<int64_t>(shard->info.row_bytes()) != s.width * 4) {
      return absl::FailedPreconditionError(fmt::format(
          "sparse update of '{}': state '{}' has the wrong dtype or shape", key, shard->info.name));
    }
    state_shards.push_back(*std::move(shard));
  }
  std::vector<float*> state_rows(states.size());
  shards.catalog().UpdateRows(info, embedding.data(), ids, first_id, [&](size_t i, char* row) {
    const int64_t local = ids[i] - first_id;
    for (size_t k = 0; k < states.size(); ++k) {
      state_rows[k] = static_cast<float*>(state_shards[k].data()) + local * states[k].width;
    }
    SparseUpdateRow(spec, reinterpret_cast<float*>(row), state_rows.data(),
                    grads + static_cast<int64_t>(i) * dim, dim);
  });
  return absl::OkStatus();
}

}  // namespace tessera::kvstore
