#include "src/graph/generator.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "nlohmann/json.hpp"
#include "spdlog/spdlog.h"
#include "src/base/logging.h"
#include "src/base/random.h"
#include "src/graph/generator_util.h"
#include "src/graph/npy.h"
#include "tessera/base/file.h"
#include "tessera/base/resource.h"
#include "tessera/base/strings.h"

namespace tessera {
namespace {

// Random streams; fixed forever so that outputs stay reproducible.
enum Stream : uint64_t { kLabels = 1, kWeights, kCentroids, kEdges, kFeatures, kSplit };
constexpr int64_t kEdgeChunk = 1 << 20;

Status CheckOptions(const GenerateOptions& o) {
  auto bad = [](auto&&... parts) { return absl::InvalidArgumentError(StrCat(parts...)); };
  if (o.num_nodes < 2 || o.num_nodes > (int64_t{1} << 32) - 1) {
    return bad("--nodes must be in [2, 2^32), got ", o.num_nodes);
  }
  if (o.num_undirected_edges < 0 || o.num_undirected_edges > (int64_t{1} << 40)) {
    return bad("--edges must be in [0, 2^40], got ", o.num_undirected_edges);
  }
  if (o.feat_dim < 0 || o.feat_dim > (1 << 20)) {
    return bad("--feat-dim must be in [0, 2^20], got ", o.feat_dim);
  }
  if (o.num_classes < 1 || o.num_classes > o.num_nodes) {
    return bad("--classes must be in [1, nodes], got ", o.num_classes);
  }
  if (!(o.homophily >= 0 && o.homophily <= 1)) return bad("--homophily must be in [0, 1]");
  if (!(o.noise >= 0) || !std::isfinite(o.noise)) return bad("--noise must be finite and >= 0");
  if (!(o.power_law_exponent > 0) || !std::isfinite(o.power_law_exponent)) {
    return bad("--power-law must be finite and > 0");
  }
  if (!(o.train_fraction >= 0 && o.val_fraction >= 0 && o.train_fraction + o.val_fraction <= 1)) {
    return bad("--train-frac and --val-frac must be >= 0 and sum to at most 1");
  }
  return absl::OkStatus();
}

StatusOr<GenerateStats> GenerateInto(const GenerateOptions& o, const std::string& out_dir,
                                     const PartialPath& partial);

}  // namespace

StatusOr<GenerateStats> GenerateSbmGraph(const GenerateOptions& o, const std::string& out_dir) {
  RETURN_IF_ERROR(CheckOptions(o));
  const double need = 32.0 * o.num_undirected_edges + o.num_nodes * (4.0 * o.feat_dim + 11);
  // src.npy and dst.npy last: a folder with them reads as a graph.
  return WriteGeneratorOutputs(
      out_dir,
      {"feat.npy", "label.npy", "train_mask.npy", "val_mask.npy", "test_mask.npy", "meta.json",
       "src.npy", "dst.npy"},
      need, [&](const PartialPath& partial) { return GenerateInto(o, out_dir, partial); });
}

namespace {

StatusOr<GenerateStats> GenerateInto(const GenerateOptions& o, const std::string& out_dir,
                                     const PartialPath& partial) {
  Stopwatch watch;
  const int64_t n = o.num_nodes, m = o.num_undirected_edges, c = o.num_classes, dim = o.feat_dim;
  const int threads = ResolveThreads(o.num_threads);
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
    ASSIGN_OR_RETURN(auto src_out, NpyWriter::Create(partial("src.npy"), DType::kInt64, {2 * m},
                                                     NpyWriter::Mode::kPositional));
    ASSIGN_OR_RETURN(auto dst_out, NpyWriter::Create(partial("dst.npy"), DType::kInt64, {2 * m},
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
    RETURN_IF_ERROR(WriteClassFeatures(partial("feat.npy"), label,
                                       ClassCentroids(c, dim, o.seed, kCentroids), dim, o.noise,
                                       o.seed, kFeatures, threads));
  }

  // Labels and the train/val/test split (a random permutation).
  RETURN_IF_ERROR(WriteNpy(partial("label.npy"), Array::From(label)));
  {
    const int64_t num_train = static_cast<int64_t>(n * o.train_fraction);
    const int64_t num_val = static_cast<int64_t>(n * o.val_fraction);
    SplitMasks masks =
        MakeSplitMasks(n, num_train, num_val, n - num_train - num_val, o.seed, kSplit);
    RETURN_IF_ERROR(WriteNpy(partial("train_mask.npy"), masks.train));
    RETURN_IF_ERROR(WriteNpy(partial("val_mask.npy"), masks.val));
    RETURN_IF_ERROR(WriteNpy(partial("test_mask.npy"), masks.test));
  }
  nlohmann::json meta = {{"num_nodes", n},           {"num_edges", 2 * m},
                         {"feat_dim", dim},          {"num_classes", c},
                         {"homophily", o.homophily}, {"noise", o.noise},
                         {"seed", o.seed},           {"generator", "tessera generate dc-sbm"}};
  RETURN_IF_ERROR(WriteFileAtomic(partial("meta.json"), meta.dump(1) + "\n"));

  GenerateStats stats;
  stats.num_nodes = n;
  stats.num_edges = 2 * m;
  stats.seconds = watch.Seconds();
  return stats;
}

}  // namespace

}  // namespace tessera
