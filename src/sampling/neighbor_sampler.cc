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
  std::vector<int64_t> skip;  // Excluded CSC positions of the current row, increasing.
};

// The excluded positions of row [begin, end) into `skip` (the row's eids are
// increasing, so each excluded id in the row's id span is a binary search).
void FindSkipped(const CscView& csc, int64_t begin, int64_t end, std::span<const int64_t> exclude,
                 std::vector<int64_t>& skip) {
  skip.clear();
  if (exclude.empty() || begin == end) return;
  auto it = std::lower_bound(exclude.begin(), exclude.end(), csc.eid(begin));
  for (; it != exclude.end() && *it <= csc.eid(end - 1); ++it) {
    if (csc.eids.empty()) {
      skip.push_back(*it - csc.eid_base);  // Consecutive ids: every one is in the row.
      continue;
    }
    const int64_t* row = csc.eids.data();
    const int64_t* hit = std::lower_bound(row + begin, row + end, *it);
    if (hit != row + end && *hit == *it) skip.push_back(hit - row);
  }
}

// Maps index i of the row's non-excluded edges to its CSC position.
inline int64_t Unskip(int64_t begin, int64_t i, const std::vector<int64_t>& skip) {
  int64_t p = begin + i;
  for (int64_t s : skip) {
    if (s > p) break;
    ++p;
  }
  return p;
}

// The weight of position p, zero when excluded.
inline float WeightAt(const SampleOptions& o, int64_t p, const std::vector<int64_t>& skip) {
  if (!skip.empty() && std::binary_search(skip.begin(), skip.end(), p)) return 0;
  return o.weights[p];
}

// Number of edges seed `v` will get; validates its weights.
StatusOr<int64_t> CountFor(const CscView& csc, int64_t v, const SampleOptions& o,
                           Scratch& scratch) {
  int64_t begin = csc.indptr[v], end = csc.indptr[v + 1];
  FindSkipped(csc, begin, end, o.exclude, scratch.skip);
  int64_t degree = end - begin - static_cast<int64_t>(scratch.skip.size());
  if (o.fanout < 0 && o.weights.empty()) return degree;
  if (o.weights.empty())
    return o.replace ? (degree > 0 ? o.fanout : 0) : std::min(o.fanout, degree);
  int64_t positive = 0;
  for (int64_t p = begin; p < end; ++p) {
    float w = o.weights[p];
    if (!(w >= 0) || std::isinf(w)) {
      return absl::InvalidArgumentError(
          fmt::format("edge weight {} at CSC position {} is negative, infinite or NaN", w, p));
    }
    positive += WeightAt(o, p, scratch.skip) > 0;
  }
  if (o.fanout < 0) return degree;  // Every edge, whatever its weight.
  if (o.replace) return positive > 0 ? o.fanout : 0;
  return std::min(o.fanout, positive);
}

// Writes `count` chosen CSC positions of seed v's in-edges to `out`.
// scratch.skip holds the row's excluded positions (from CountFor's search).
void ChooseFor(const CscView& csc, int64_t v, uint64_t key, int64_t count, const SampleOptions& o,
               Scratch& scratch, int64_t* out) {
  int64_t begin = csc.indptr[v], end = csc.indptr[v + 1];
  const std::vector<int64_t>& skip = scratch.skip;
  int64_t degree = end - begin - static_cast<int64_t>(skip.size());
  if (count == 0) return;
  Rng rng(o.seed, /*stream=*/1, key);
  if (o.fanout < 0 || (o.weights.empty() && !o.replace && count == degree)) {
    for (int64_t i = 0; i < degree; ++i) out[i] = Unskip(begin, i, skip);
    return;
  }
  if (o.weights.empty()) {
    if (o.replace) {
      for (int64_t i = 0; i < count; ++i) {
        out[i] =
            Unskip(begin, static_cast<int64_t>(rng.Below(static_cast<uint64_t>(degree))), skip);
      }
      return;
    }
    if (count <= kFloydMax) {
      int64_t chosen = 0;
      for (int64_t j = degree - count; j < degree; ++j) {
        int64_t t = static_cast<int64_t>(rng.Below(static_cast<uint64_t>(j + 1)));
        bool seen = false;
        for (int64_t c = 0; c < chosen; ++c) seen |= out[c] == t;
        out[chosen++] = seen ? j : t;
      }
      for (int64_t c = 0; c < count; ++c) out[c] = Unskip(begin, out[c], skip);
      return;
    }
    std::vector<int64_t>& pos = scratch.positions;
    pos.resize(degree);
    for (int64_t i = 0; i < degree; ++i) pos[i] = i;
    for (int64_t i = 0; i < count; ++i) {
      int64_t j = i + static_cast<int64_t>(rng.Below(static_cast<uint64_t>(degree - i)));
      std::swap(pos[i], pos[j]);
      out[i] = Unskip(begin, pos[i], skip);
    }
    return;
  }
  int64_t row = end - begin;
  if (o.replace) {
    std::vector<double>& prefix = scratch.prefix;
    prefix.resize(row);
    double total = 0;
    for (int64_t i = 0; i < row; ++i) prefix[i] = total += WeightAt(o, begin + i, skip);
    for (int64_t i = 0; i < count; ++i) {
      double r = rng.Uniform() * total;
      int64_t k = std::upper_bound(prefix.begin(), prefix.end(), r) - prefix.begin();
      k = std::min(k, row - 1);
      while (k > 0 && WeightAt(o, begin + k, skip) == 0) --k;  // r landed on a zero-width edge.
      out[i] = begin + k;
    }
    return;
  }
  // Efraimidis–Spirakis: key log(u) / w, keep the `count` largest.
  auto& keyed = scratch.keyed;
  keyed.clear();
  for (int64_t i = 0; i < row; ++i) {
    float w = WeightAt(o, begin + i, skip);
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
  for (size_t i = 1; i < options.exclude.size(); ++i) {
    if (options.exclude[i] <= options.exclude[i - 1]) {
      return absl::InvalidArgumentError("the excluded edge ids must be sorted and distinct");
    }
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
    Scratch scratch;
    for (int64_t i = lo; i < hi; ++i) {
      ASSIGN_OR_RETURN(offsets[i + 1], CountFor(csc, seeds[i], options, scratch));
    }
    return absl::OkStatus();
  }));
  for (int64_t i = 0; i < n; ++i) {
    offsets[i + 1] += offsets[i];
    if (offsets[i + 1] > options.max_edges || offsets[i + 1] < 0) {
      return absl::ResourceExhaustedError(
          fmt::format("sampling {} seeds with fanout {} would return more than {} edges", n,
                      options.fanout, options.max_edges));
    }
  }
  SampledEdges out;
  out.src.resize(offsets[n]);
  out.dst.resize(offsets[n]);
  out.eid.resize(offsets[n]);
  RETURN_IF_ERROR(run([&](int64_t lo, int64_t hi) -> Status {
    Scratch scratch;
    constexpr int64_t kAhead = 4;  // Rows are random reads: fetch a few seeds ahead.
    for (int64_t i = lo; i < hi; ++i) {
      if (i + kAhead < hi) {
        int64_t row = csc.indptr[seeds[i + kAhead]];
        __builtin_prefetch(csc.indices.data() + row);
        if (!csc.eids.empty()) __builtin_prefetch(csc.eids.data() + row);
      }
      int64_t v = seeds[i];
      int64_t* pos = out.eid.data() + offsets[i];  // Positions first, then mapped.
      int64_t count = offsets[i + 1] - offsets[i];
      uint64_t key = static_cast<uint64_t>(keys.empty() ? v : keys[i]);
      if (!options.exclude.empty()) {
        FindSkipped(csc, csc.indptr[v], csc.indptr[v + 1], options.exclude, scratch.skip);
      }
      ChooseFor(csc, v, key, count, options, scratch, pos);
      for (int64_t k = 0; k < count; ++k) {
        int64_t p = pos[k];
        out.src[offsets[i] + k] = csc.indices[p];
        out.dst[offsets[i] + k] = v;
        pos[k] = csc.eid(p);
      }
    }
    return absl::OkStatus();
  }));
  out.offsets = std::move(offsets);
  return out;
}

}  // namespace tessera::sampling
