// File: src/graph/generator_util.h
//
// Pieces the synthetic graph generators share (generator.cc: the homogeneous
// degree-corrected SBM; typed_generator.cc: the ogbn-mag shaped
// heterograph): alias sampling, deterministic chunked parallel work, class
// centroid features and random split masks. Every random number comes from
// an Rng derived from (seed, stream, chunk), so results never depend on the
// number of threads. Internal to src/graph.
#ifndef TESSERA_SRC_GRAPH_GENERATOR_UTIL_H_
#define TESSERA_SRC_GRAPH_GENERATOR_UTIL_H_

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <span>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "src/base/logging.h"
#include "src/base/random.h"
#include "src/graph/generator.h"
#include "tessera/base/status.h"
#include "tessera/graph/array.h"

namespace tessera {

// Walker's alias method over a weight vector: O(1) samples. Precondition:
// weights non-empty, non-negative, with a positive sum; fewer than 2^32.
class AliasTable {
 public:
  explicit AliasTable(std::span<const double> weights);
  uint32_t Sample(Rng& rng) const {
    uint32_t i = static_cast<uint32_t>(rng.Below(prob_.size()));
    return rng.Uniform() < prob_[i] ? i : alias_[i];
  }
  size_t size() const { return prob_.size(); }

 private:
  std::vector<float> prob_;
  std::vector<uint32_t> alias_;
};

// Runs fn(chunk) for chunk in [0, num_chunks) on `threads` threads; returns
// the first error (later chunks are then skipped). fn must be safe to run
// concurrently for distinct chunks. Progress counts finished chunks.
template <typename Fn>
Status ParallelChunks(int64_t num_chunks, int threads, Progress* progress, Fn fn) {
  std::atomic<int64_t> next{0}, done{0};
  std::mutex mu;
  Status first_error;
  auto worker = [&] {
    while (true) {
      int64_t chunk = next.fetch_add(1);
      if (chunk >= num_chunks) return;
      Status st = fn(chunk);
      std::lock_guard<std::mutex> lock(mu);
      if (!st.ok()) {
        if (first_error.ok()) first_error = st;
        next.store(num_chunks);
      }
      progress->Update(++done);
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(static_cast<size_t>(std::max(0, threads - 1)));  // No reallocation below.
  try {
    for (int t = 1; t < threads; ++t) pool.emplace_back(worker);
  } catch (const std::system_error&) {
    // No more threads to be had: those started (and this one) do the work.
  }
  worker();
  for (auto& t : pool) t.join();
  return first_error;
}

// `threads` if positive, else the hardware concurrency (at least 1).
int ResolveThreads(int threads);

// num_classes x dim class centroids, N(0, 1) each, from Rng(seed, stream).
std::vector<float> ClassCentroids(int64_t num_classes, int64_t dim, uint64_t seed, uint64_t stream);

// Writes `path`: float32 [labels.size(), dim], row i = the centroid of
// labels[i] + N(0, noise^2) per dimension; rows in chunks of 2^14, chunk k
// drawn from Rng(seed, stream, k). Memory: one chunk per thread.
Status WriteClassFeatures(const std::string& path, std::span<const int64_t> labels,
                          std::span<const float> centroids, int64_t dim, double noise,
                          uint64_t seed, uint64_t stream, int threads);

// Train/val/test masks (bool [n]) from a random permutation (Rng(seed,
// stream)): its first num_train entries train, the next num_val val, the
// next num_test test, the rest none. Precondition: the three sum to <= n.
struct SplitMasks {
  Array train, val, test;
};
SplitMasks MakeSplitMasks(int64_t n, int64_t num_train, int64_t num_val, int64_t num_test,
                          uint64_t seed, uint64_t stream);

// One generator run's files: `files` (relative to `dir`, in the order they
// are renamed: the last marks a complete folder). Refuses a graph of
// `need_bytes` larger than dir's free space (counting the old outputs' as
// free), removes the old outputs and any partial ones of an interrupted
// run, then runs `write`, which writes each file at partial(file)
// ("<dir>/<file>.partial"), creating its folders; its files are renamed
// once all are complete. A failure, an exception included, removes every
// output: a folder never reads as a graph of mixed or unfinished runs.
using PartialPath = std::function<std::string(const std::string& file)>;
StatusOr<GenerateStats> WriteGeneratorOutputs(
    const std::string& dir, const std::vector<std::string>& files, double need_bytes,
    const std::function<StatusOr<GenerateStats>(const PartialPath& partial)>& write);

}  // namespace tessera

#endif  // TESSERA_SRC_GRAPH_GENERATOR_UTIL_H_
