#include "src/graph/generator_util.h"

#include <algorithm>
#include <numeric>

#include "src/graph/npy.h"

namespace tessera {
namespace {
constexpr int64_t kFeatureChunkRows = 1 << 14;
}  // namespace

AliasTable::AliasTable(std::span<const double> weights)
    : prob_(weights.size()), alias_(weights.size()) {
  const size_t n = weights.size();
  double total = std::accumulate(weights.begin(), weights.end(), 0.0);
  std::vector<double> scaled(n);
  std::vector<uint32_t> small, large;
  for (size_t i = 0; i < n; ++i) {
    scaled[i] = weights[i] * static_cast<double>(n) / total;
    (scaled[i] < 1.0 ? small : large).push_back(static_cast<uint32_t>(i));
  }
  while (!small.empty() && !large.empty()) {
    uint32_t s = small.back(), l = large.back();
    small.pop_back();
    prob_[s] = static_cast<float>(scaled[s]);
    alias_[s] = l;
    scaled[l] -= 1.0 - scaled[s];
    if (scaled[l] < 1.0) {
      large.pop_back();
      small.push_back(l);
    }
  }
  for (uint32_t i : large) prob_[i] = 1.0f, alias_[i] = i;
  for (uint32_t i : small) prob_[i] = 1.0f, alias_[i] = i;  // Rounding leftovers.
}

int ResolveThreads(int threads) {
  return threads > 0 ? threads
                     : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

std::vector<float> ClassCentroids(int64_t num_classes, int64_t dim, uint64_t seed,
                                  uint64_t stream) {
  std::vector<float> centroids(num_classes * dim);
  Rng rng(seed, stream);
  for (float& x : centroids) x = static_cast<float>(rng.Normal());
  return centroids;
}

Status WriteClassFeatures(const std::string& path, std::span<const int64_t> labels,
                          std::span<const float> centroids, int64_t dim, double noise,
                          uint64_t seed, uint64_t stream, int threads) {
  const int64_t n = static_cast<int64_t>(labels.size());
  ASSIGN_OR_RETURN(
      auto out, NpyWriter::Create(path, DType::kFloat32, {n, dim}, NpyWriter::Mode::kPositional));
  const int64_t chunks = (n + kFeatureChunkRows - 1) / kFeatureChunkRows;
  Progress progress("generate features", chunks, "chunks");
  RETURN_IF_ERROR(ParallelChunks(chunks, threads, &progress, [&](int64_t chunk) -> Status {
    Rng rng(seed, stream, static_cast<uint64_t>(chunk));
    const int64_t begin = chunk * kFeatureChunkRows, end = std::min(n, begin + kFeatureChunkRows);
    std::vector<float> rows((end - begin) * dim);
    for (int64_t i = begin; i < end; ++i) {
      const float* mu = &centroids[labels[i] * dim];
      float* row = &rows[(i - begin) * dim];
      for (int64_t j = 0; j < dim; ++j) row[j] = mu[j] + static_cast<float>(noise * rng.Normal());
    }
    return out.WriteRowsAt(begin, rows.data(), end - begin);
  }));
  RETURN_IF_ERROR(out.Close());
  progress.Done();
  return absl::OkStatus();
}

SplitMasks MakeSplitMasks(int64_t n, int64_t num_train, int64_t num_val, int64_t num_test,
                          uint64_t seed, uint64_t stream) {
  std::vector<uint32_t> perm(n);
  std::iota(perm.begin(), perm.end(), 0u);
  Rng rng(seed, stream);
  for (int64_t i = n - 1; i > 0; --i) std::swap(perm[i], perm[rng.Below(i + 1)]);
  SplitMasks masks{Array::Zeros(DType::kBool, {n}), Array::Zeros(DType::kBool, {n}),
                   Array::Zeros(DType::kBool, {n})};
  auto train = masks.train.mutable_span<bool>();
  auto val = masks.val.mutable_span<bool>();
  auto test = masks.test.mutable_span<bool>();
  for (int64_t i = 0; i < n; ++i) {
    if (i < num_train) {
      train[perm[i]] = true;
    } else if (i < num_train + num_val) {
      val[perm[i]] = true;
    } else if (i < num_train + num_val + num_test) {
      test[perm[i]] = true;
    }
  }
  return masks;
}

}  // namespace tessera
