#include "src/graph/generator_util.h"

#include <sys/statvfs.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <numeric>

#include "src/graph/npy.h"
#include "tessera/base/file.h"
#include "tessera/base/resource.h"
#include "tessera/base/strings.h"

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

StatusOr<GenerateStats> WriteGeneratorOutputs(
    const std::string& dir, const std::vector<std::string>& files, double need_bytes,
    const std::function<StatusOr<GenerateStats>(const PartialPath& partial)>& write) {
  RETURN_IF_ERROR(MakeDirs(dir));
  auto final_path = [&](const std::string& file) { return StrCat(dir, "/", file); };
  auto partial = [&](const std::string& file) { return StrCat(dir, "/", file, ".partial"); };
  if (struct statvfs st{}; statvfs(dir.c_str(), &st) == 0) {  // Else the writes will tell.
    double free = static_cast<double>(st.f_bavail) * static_cast<double>(st.f_frsize);
    for (const std::string& file : files) {
      std::error_code ec;
      const auto size = std::filesystem::file_size(final_path(file), ec);
      if (!ec) free += static_cast<double>(size);
    }
    if (need_bytes > free) {
      return absl::ResourceExhaustedError(
          StrCat("the graph needs about ", FormatBytes(static_cast<int64_t>(need_bytes)), " and ",
                 dir, " has ", FormatBytes(static_cast<int64_t>(free)), " free"));
    }
  }
  auto remove_all = [&] {  // Best effort: on a failure path.
    for (const std::string& file : files) {
      (void)RemoveAll(final_path(file));
      (void)RemoveAll(partial(file));
    }
  };
  // The files that mark a complete folder first.
  for (auto file = files.rbegin(); file != files.rend(); ++file) {
    Status removed = RemoveAll(final_path(*file));
    if (removed.ok()) removed = RemoveAll(partial(*file));
    if (!removed.ok()) {
      remove_all();
      return removed;
    }
  }
  StatusOr<GenerateStats> stats;
  try {
    stats = write(partial);
  } catch (...) {  // Out of memory, mostly: no partial file stays.
    remove_all();
    throw;
  }
  for (const std::string& file : files) {
    const std::string path = partial(file);
    if (!stats.ok() || !PathExists(path)) continue;  // A file this run does not write.
    if (std::rename(path.c_str(), final_path(file).c_str()) != 0) {
      stats = ErrnoError(StrCat("renaming ", path), errno);
    }
  }
  if (!stats.ok()) {
    remove_all();
    return stats;
  }
  stats->bytes_written = DirectorySize(dir);
  return stats;
}

}  // namespace tessera
