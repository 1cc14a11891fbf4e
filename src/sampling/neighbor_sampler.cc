// File: src/sampling/neighbor_sampler.cc
#include "src/sampling/neighbor_sampler.h"

#include <algorithm>
#include <cmath>
#include <thread>

#include "fmt/format.h"
#include "src/base/random.h"

namespace tessera::sampling {
namespace {

// Floyd's algorithm beats a partial shuffle for small fanouts; the chosen
// list is scanned linearly (k <= kFloydMax), no hash set.
constexpr int64_t kFloydMax = 64;

struct Scratch {
  std::vector<int64_t> positions;
  std::vector<std::pair<double, int64_t>> keyed;
  std::vector<double> prefix;
};

// Number of edges seed `v` will get; validates its weights.
StatusOr<int64_t> CountFor(const CscView& csc, int64_t v, const SampleOptions& o) {
  int64_t begin = csc.indptr[v], end = csc.indptr[v + 1];
  int64_t degree = end - begin;
  if (o.fanout < 0) return degree;
  if (o.weights.empty())
    return o.replace ? (degree > 0 ? o.fanout : 0) : std::min(o.fanout, degree);
  int64_t positive = 0;
  for (int64_t p = begin; p < end; ++p) {
    float w = o.weights[p];
    if (!(w >= 0) || std::isinf(w)) {
      return absl::InvalidArgumentError(
          fmt::format("edge weight {} at CSC position {} is negative, infinite or NaN", w, p));
    }
    positive += w > 0;
  }
  if (o.replace) return positive > 0 ? o.fanout : 0;
  return std::min(o.fanout, positive);
}

// Writes `count` chosen CSC positions of seed v's in-edges to `out`.
void ChooseFor(const CscView& csc, int64_t v, uint64_t key, int64_t count, const SampleOptions& o,
               Scratch& scratch, int64_t* out) {
  int64_t begin = csc.indptr[v], end = csc.indptr[v + 1];
  int64_t degree = end - begin;
  if (count == 0) return;
  Rng rng(o.seed, /*stream=*/1, key);
  if (o.fanout < 0 || (o.weights.empty() && !o.replace && count == degree)) {
    for (int64_t i = 0; i < degree; ++i) out[i] = begin + i;
    return;
  }
  if (o.weights.empty()) {
    if (o.replace) {
      for (int64_t i = 0; i < count; ++i) {
        out[i] = begin + static_cast<int64_t>(rng.Below(static_cast<uint64_t>(degree)));
      }
      return;
    }
    if (count <= kFloydMax) {
      int64_t chosen = 0;
      for (int64_t j = degree - count; j < degree; ++j) {
        int64_t t = static_cast<int64_t>(rng.Below(static_cast<uint64_t>(j + 1)));
        bool seen = false;
        for (int64_t c = 0; c < chosen; ++c) seen |= out[c] == begin + t;
        out[chosen++] = begin + (seen ? j : t);
      }
      return;
    }
    std::vector<int64_t>& pos = scratch.positions;
    pos.resize(degree);
    for (int64_t i = 0; i < degree; ++i) pos[i] = i;
    for (int64_t i = 0; i < count; ++i) {
      int64_t j = i + static_cast<int64_t>(rng.Below(static_cast<uint64_t>(degree - i)));
      std::swap(pos[i], pos[j]);
      out[i] = begin + pos[i];
    }
    return;
  }
  if (o.replace) {
    std::vector<double>& prefix = scratch.prefix;
    prefix.resize(degree);
    double total = 0;
    for (int64_t i = 0; i < degree; ++i) prefix[i] = total += o.weights[begin + i];
    for (int64_t i = 0; i < count; ++i) {
      double r = rng.Uniform() * total;
      int64_t k = std::upper_bound(prefix.begin(), prefix.end(), r) - prefix.begin();
      k = std::min(k, degree - 1);
      while (o.weights[begin + k] == 0 && k > 0) --k;  // r landed on a zero-width edge.
      out[i] = begin + k;
    }
    return;
  }
  // Efraimidis–Spirakis: key log(u) / w, keep the `count` largest.
  auto& keyed = scratch.keyed;
  keyed.clear();
  for (int64_t i = 0; i < degree; ++i) {
    float w = o.weights[begin + i];
    if (w <= 0) continue;
    double u = 1.0 - rng.Uniform();  // (0, 1]
    keyed.emplace_back(std::log(u) / w, begin + i);
  }
  if (static_cast<int64_t>(keyed.size()) > count) {
    std::nth_element(keyed.begin(), keyed.begin() + count, keyed.end(),
                     [](const auto& a, const auto& b) { return a.first > b.first; });
  }
  for (int64_t i = 0; i < count; ++i) out[i] = keyed[i].second;
}

}  // namespace

StatusOr<SampledEdges> SampleNeighbors(const CscView& csc, std::span<const int64_t> seeds,
                                       std::span<const int64_t> keys,
                                       const SampleOptions& options) {
  if (!options.weights.empty() && options.weights.size() != csc.indices.size()) {
    return absl::InvalidArgumentError(
        fmt::format("{} edge weights for {} edges", options.weights.size(), csc.indices.size()));
  }
  if (!keys.empty() && keys.size() != seeds.size()) {
    return absl::InvalidArgumentError("keys and seeds differ in length");
  }
  int64_t n = static_cast<int64_t>(seeds.size());
  for (int64_t i = 0; i < n; ++i) {
    if (seeds[i] < 0 || seeds[i] >= csc.num_nodes()) {
      return absl::OutOfRangeError(
          fmt::format("seed {} is not a node of this graph ({} nodes)", seeds[i], csc.num_nodes()));
    }
  }
  int threads = std::max(1, std::min<int>(options.num_threads, static_cast<int>(n / 256) + 1));
  auto run = [&](auto&& body) {
    std::vector<std::thread> pool;
    std::vector<Status> status(threads);
    for (int t = 0; t < threads; ++t) {
      int64_t lo = n * t / threads, hi = n * (t + 1) / threads;
      auto work = [&, t, lo, hi] { status[t] = body(lo, hi); };
      if (t + 1 == threads) {
        work();
      } else {
        pool.emplace_back(work);
      }
    }
    for (auto& th : pool) th.join();
    for (const Status& s : status) RETURN_IF_ERROR(s);
    return absl::OkStatus();
  };
  // Pass 1: how many edges each seed gets; pass 2: fill in place.
  std::vector<int64_t> offsets(n + 1, 0);
  RETURN_IF_ERROR(run([&](int64_t lo, int64_t hi) -> Status {
    for (int64_t i = lo; i < hi; ++i) {
      ASSIGN_OR_RETURN(offsets[i + 1], CountFor(csc, seeds[i], options));
    }
    return absl::OkStatus();
  }));
  for (int64_t i = 0; i < n; ++i) offsets[i + 1] += offsets[i];
  SampledEdges out;
  out.src.resize(offsets[n]);
  out.dst.resize(offsets[n]);
  out.eid.resize(offsets[n]);
  RETURN_IF_ERROR(run([&](int64_t lo, int64_t hi) -> Status {
    Scratch scratch;
    for (int64_t i = lo; i < hi; ++i) {
      int64_t v = seeds[i];
      int64_t* pos = out.eid.data() + offsets[i];  // Positions first, then mapped.
      int64_t count = offsets[i + 1] - offsets[i];
      uint64_t key = static_cast<uint64_t>(keys.empty() ? v : keys[i]);
      ChooseFor(csc, v, key, count, options, scratch, pos);
      for (int64_t k = 0; k < count; ++k) {
        int64_t p = pos[k];
        out.src[offsets[i] + k] = csc.indices[p];
        out.dst[offsets[i] + k] = v;
        pos[k] = csc.eids[p];
      }
    }
    return absl::OkStatus();
  }));
  return out;
}

}  // namespace tessera::sampling
