#include "src/graph/generator.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <mutex>
#include <numeric>
#include <thread>
#include <vector>

#include "nlohmann/json.hpp"
#include "spdlog/spdlog.h"
#include "src/base/file.h"
#include "src/base/logging.h"
#include "src/base/random.h"
#include "src/base/strings.h"
#include "src/graph/npy.h"

namespace tessera {
namespace {

// Random streams; fixed forever so that outputs stay reproducible.
enum Stream : uint64_t { kLabels = 1, kWeights, kCentroids, kEdges, kFeatures, kSplit };
constexpr int64_t kEdgeChunk = 1 << 20;
constexpr int64_t kFeatureChunkRows = 1 << 14;

// Walker's alias method over a weight vector: O(1) samples.
class AliasTable {
 public:
  explicit AliasTable(std::span<const double> weights)
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
  uint32_t Sample(Rng& rng) const {
    uint32_t i = static_cast<uint32_t>(rng.Below(prob_.size()));
    return rng.Uniform() < prob_[i] ? i : alias_[i];
  }

 private:
  std::vector<float> prob_;
  std::vector<uint32_t> alias_;
};

Status CheckOptions(const GenerateOptions& o) {
  auto bad = [](auto&&... parts) { return absl::InvalidArgumentError(StrCat(parts...)); };
  if (o.num_nodes < 2 || o.num_nodes > (int64_t{1} << 32) - 1) {
    return bad("--nodes must be in [2, 2^32), got ", o.num_nodes);
  }
  if (o.num_undirected_edges < 0) return bad("--edges must be >= 0, got ", o.num_undirected_edges);
  if (o.feat_dim < 0) return bad("--feat-dim must be >= 0, got ", o.feat_dim);
  if (o.num_classes < 1 || o.num_classes > o.num_nodes) {
    return bad("--classes must be in [1, nodes], got ", o.num_classes);
  }
  if (!(o.homophily >= 0 && o.homophily <= 1)) return bad("--homophily must be in [0, 1]");
  if (!(o.noise >= 0)) return bad("--noise must be >= 0");
  if (!(o.power_law_exponent > 0)) return bad("--power-law must be > 0");
  if (!(o.train_fraction >= 0 && o.val_fraction >= 0 && o.train_fraction + o.val_fraction <= 1)) {
    return bad("--train-frac and --val-frac must be >= 0 and sum to at most 1");
  }
  return absl::OkStatus();
}

// Runs fn(chunk) for chunk in [0, num_chunks) on `threads` threads; returns
// the first error. fn must be safe to run concurrently for distinct chunks.
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
  for (int t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  return first_error;
}

}  // namespace

StatusOr<GenerateStats> GenerateSbmGraph(const GenerateOptions& o, const std::string& out_dir) {
  RETURN_IF_ERROR(CheckOptions(o));
  RETURN_IF_ERROR(MakeDirs(out_dir));
  Stopwatch watch;
  const int64_t n = o.num_nodes, m = o.num_undirected_edges, c = o.num_classes, dim = o.feat_dim;
  const int threads =
      o.num_threads > 0 ? o.num_threads : std::max(1u, std::thread::hardware_concurrency());
  spdlog::info("generate: {} nodes, {} directed edges, {} classes, {}-dim features into {}", n,
               2 * m, c, dim, out_dir);

  // Labels and power-law weights.
  std::vector<int64_t> label(n);
  std::vector<double> weight(n);
  {
    Rng label_rng(o.seed, kLabels), weight_rng(o.seed, kWeights);
    for (int64_t i = 0; i < n; ++i) {
      label[i] = static_cast<int64_t>(label_rng.Below(c));
      weight[i] = std::pow(1.0 - weight_rng.Uniform(), -1.0 / o.power_law_exponent);
    }
  }
  AliasTable global(weight);
  // Per-class tables over the members of each class.
  std::vector<std::vector<uint32_t>> members(c);
  for (int64_t i = 0; i < n; ++i) members[label[i]].push_back(static_cast<uint32_t>(i));
  std::vector<AliasTable> by_class;
  by_class.reserve(c);
  for (int64_t k = 0; k < c; ++k) {
    std::vector<double> w;
    w.reserve(members[k].size());
    for (uint32_t v : members[k]) w.push_back(weight[v]);
    if (w.empty()) w.push_back(1.0);  // Never sampled: no node has this class.
    by_class.emplace_back(w);
  }

  // Edges, both directions, written chunk by chunk at their final positions.
  {
    ASSIGN_OR_RETURN(auto src_out, NpyWriter::Create(out_dir + "/src.npy", DType::kInt64, {2 * m},
                                                     NpyWriter::Mode::kPositional));
    ASSIGN_OR_RETURN(auto dst_out, NpyWriter::Create(out_dir + "/dst.npy", DType::kInt64, {2 * m},
                                                     NpyWriter::Mode::kPositional));
    const int64_t chunks = (m + kEdgeChunk - 1) / kEdgeChunk;
    Progress progress("generate edges", chunks, "chunks");
    RETURN_IF_ERROR(ParallelChunks(chunks, threads, &progress, [&](int64_t chunk) -> Status {
      Rng rng(o.seed, kEdges, static_cast<uint64_t>(chunk));
      const int64_t begin = chunk * kEdgeChunk, end = std::min(m, begin + kEdgeChunk);
      std::vector<int64_t> s(end - begin), d(end - begin);
      for (int64_t i = 0; i < end - begin; ++i) {
        int64_t u = global.Sample(rng), v = u;
        for (int attempt = 0; v == u; ++attempt) {
          bool same = attempt < 16 && members[label[u]].size() > 1 && rng.Uniform() < o.homophily;
          v = same ? members[label[u]][by_class[label[u]].Sample(rng)] : global.Sample(rng);
        }
        s[i] = u;
        d[i] = v;
      }
      RETURN_IF_ERROR(src_out.WriteRowsAt(begin, s.data(), end - begin));
      RETURN_IF_ERROR(src_out.WriteRowsAt(m + begin, d.data(), end - begin));
      RETURN_IF_ERROR(dst_out.WriteRowsAt(begin, d.data(), end - begin));
      return dst_out.WriteRowsAt(m + begin, s.data(), end - begin);
    }));
    RETURN_IF_ERROR(src_out.Close());
    RETURN_IF_ERROR(dst_out.Close());
    progress.Done();
  }

  // Features: class centroid + noise.
  if (dim > 0) {
    std::vector<float> centroid(c * dim);
    Rng centroid_rng(o.seed, kCentroids);
    for (float& x : centroid) x = static_cast<float>(centroid_rng.Normal());
    ASSIGN_OR_RETURN(auto feat_out, NpyWriter::Create(out_dir + "/feat.npy", DType::kFloat32,
                                                      {n, dim}, NpyWriter::Mode::kPositional));
    const int64_t chunks = (n + kFeatureChunkRows - 1) / kFeatureChunkRows;
    Progress progress("generate features", chunks, "chunks");
    RETURN_IF_ERROR(ParallelChunks(chunks, threads, &progress, [&](int64_t chunk) -> Status {
      Rng rng(o.seed, kFeatures, static_cast<uint64_t>(chunk));
      const int64_t begin = chunk * kFeatureChunkRows, end = std::min(n, begin + kFeatureChunkRows);
      std::vector<float> rows((end - begin) * dim);
      for (int64_t i = begin; i < end; ++i) {
        const float* mu = &centroid[label[i] * dim];
        float* row = &rows[(i - begin) * dim];
        for (int64_t j = 0; j < dim; ++j) {
          row[j] = mu[j] + static_cast<float>(o.noise * rng.Normal());
        }
      }
      return feat_out.WriteRowsAt(begin, rows.data(), end - begin);
    }));
    RETURN_IF_ERROR(feat_out.Close());
    progress.Done();
  }

  // Labels and the train/val/test split (a random permutation).
  RETURN_IF_ERROR(WriteNpy(out_dir + "/label.npy", Array::From(label)));
  {
    std::vector<uint32_t> perm(n);
    std::iota(perm.begin(), perm.end(), 0u);
    Rng rng(o.seed, kSplit);
    for (int64_t i = n - 1; i > 0; --i) std::swap(perm[i], perm[rng.Below(i + 1)]);
    const int64_t num_train = static_cast<int64_t>(n * o.train_fraction);
    const int64_t num_val = static_cast<int64_t>(n * o.val_fraction);
    Array masks[3] = {Array::Zeros(DType::kBool, {n}), Array::Zeros(DType::kBool, {n}),
                      Array::Zeros(DType::kBool, {n})};
    for (int64_t i = 0; i < n; ++i) {
      int which = i < num_train ? 0 : (i < num_train + num_val ? 1 : 2);
      masks[which].mutable_span<bool>()[perm[i]] = true;
    }
    RETURN_IF_ERROR(WriteNpy(out_dir + "/train_mask.npy", masks[0]));
    RETURN_IF_ERROR(WriteNpy(out_dir + "/val_mask.npy", masks[1]));
    RETURN_IF_ERROR(WriteNpy(out_dir + "/test_mask.npy", masks[2]));
  }
  nlohmann::json meta = {{"num_nodes", n},           {"num_edges", 2 * m},
                         {"feat_dim", dim},          {"num_classes", c},
                         {"homophily", o.homophily}, {"noise", o.noise},
                         {"seed", o.seed},           {"generator", "tessera generate dc-sbm"}};
  RETURN_IF_ERROR(WriteFileAtomic(out_dir + "/meta.json", meta.dump(1) + "\n"));

  GenerateStats stats;
  stats.num_nodes = n;
  stats.num_edges = 2 * m;
  stats.bytes_written = DirectorySize(out_dir);
  stats.seconds = watch.Seconds();
  return stats;
}

}  // namespace tessera
