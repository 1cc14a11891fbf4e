// File: src/sampling/neighbor_sampler.cc
#include "src/sampling/neighbor_sampler.h"

#include <algorithm>
#include <cmath>
#include <thread>
#include <utility>

#include "fmt/format.h"
#include "fmt/ranges.h"
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
  // The weights of the current segment as CountFor read them, 0 where
  // excluded. ChooseFor draws from this copy, not from the weights: those
  // may be shared memory that a push changes meanwhile, and a second read
  // could then find fewer edges than the count taken from the first.
  std::vector<float> weights;
};

// Appends the excluded positions of [begin, end), whose eids increase, to
// `skip` (each excluded id in the span's id range is a binary search).
void AppendSkipped(const CscView& csc, int64_t begin, int64_t end, std::span<const int64_t> exclude,
                   std::vector<int64_t>& skip) {
  if (begin == end) return;
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

// The end of the run of equal relations that starts at b < end. Runs are
// mostly short: a few steps ahead, then a binary search. Always > b, even
// over unsorted relations.
inline int64_t RunEnd(const CscView& csc, int64_t b, int64_t end) {
  const int32_t* t = csc.etypes.data();
  const int32_t r = t[b];
  int64_t e = b + 1;
  for (int k = 0; k < 8; ++k, ++e) {
    if (e == end || t[e] != r) return e;
  }
  return std::max<int64_t>(e, std::lower_bound(t + e, t + end, int64_t{r} + 1) - t);
}

// Calls f(relation, begin, end) for each run of one relation in row
// [begin, end) (the whole row as relation 0 without relations). A relation
// outside [0, num_etypes) is an error.
template <class F>
Status ForEachRun(const CscView& csc, int64_t begin, int64_t end, F&& f) {
  if (csc.etypes.empty()) return begin < end ? f(0, begin, end) : absl::OkStatus();
  for (int64_t b = begin; b < end;) {
    int64_t e = RunEnd(csc, b, end);
    int32_t r = csc.etypes[b];
    if (r < 0 || r >= csc.num_etypes) {
      return absl::InvalidArgumentError(fmt::format(
          "relation {} at CSC position {} is not one of the {} relations", r, b, csc.num_etypes));
    }
    RETURN_IF_ERROR(f(r, b, e));
    b = e;
  }
  return absl::OkStatus();
}

// The excluded positions of row [begin, end) into `skip` (relation by
// relation when the row has relations: eids increase within each).
[[gnu::always_inline]] inline void FindSkipped(const CscView& csc, int64_t begin, int64_t end,
                                               std::span<const int64_t> exclude,
                                               std::vector<int64_t>& skip) {
  skip.clear();
  if (exclude.empty() || begin == end) return;
  if (csc.etypes.empty()) return AppendSkipped(csc, begin, end, exclude, skip);
  for (int64_t b = begin; b < end;) {
    int64_t e = RunEnd(csc, b, end);
    AppendSkipped(csc, b, e, exclude, skip);
    b = e;
  }
}

// Maps index i of the row's non-excluded edges to its CSC position: begin
// + i + the number of excluded positions before it, which are the k with
// skip[k] - k <= begin + i (a binary search: a row with many excluded
// edges must not cost picks x exclusions).
inline int64_t Unskip(int64_t begin, int64_t i, const std::vector<int64_t>& skip) {
  size_t lo = 0, hi = skip.size();
  while (lo < hi) {
    const size_t mid = (lo + hi) / 2;
    if (skip[mid] - static_cast<int64_t>(mid) <= begin + i) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return begin + i + static_cast<int64_t>(lo);
}

// How the weights are indexed (a template parameter, so the loops over
// weights do not test it per edge): by CSC position, by edge id, or by the
// position's relation and edge id (options.relation_weights).
enum class WeightIndex { kByPosition, kByEid, kByRelation };

inline bool Weighted(const SampleOptions& o) {
  return !o.weights.empty() || !o.relation_weights.empty();
}

// The weights and the index into them of position p.
template <WeightIndex kIndex>
inline std::pair<std::span<const float>, int64_t> WeightSlot(const SampleOptions& o,
                                                             const CscView& csc, int64_t p) {
  if constexpr (kIndex == WeightIndex::kByPosition) return {o.weights, p};
  if constexpr (kIndex == WeightIndex::kByEid) return {o.weights, csc.eid(p) - o.weights_eid_base};
  const RelationWeights& w = o.relation_weights[csc.etypes[p]];
  return {w.weights, csc.eid(p) - w.eid_base};
}

// The weight of position p, and zero when excluded. Preconditions: weighted,
// and p's weight index checked (CountFor).
template <WeightIndex kIndex>
inline float RawWeight(const SampleOptions& o, const CscView& csc, int64_t p) {
  auto [weights, k] = WeightSlot<kIndex>(o, csc, p);
  return weights[k];
}

// Number of edges the segment [begin, end) of a row gives with `fanout`;
// validates its weights and keeps them in scratch.weights. scratch.skip
// holds the segment's excluded positions. (Inlined: it runs once per seed,
// mostly as a few instructions.)
template <WeightIndex kIndex>
[[gnu::always_inline]] inline StatusOr<int64_t> CountFor(const CscView& csc, int64_t begin,
                                                         int64_t end, int64_t fanout,
                                                         const SampleOptions& o, Scratch& scratch) {
  const std::vector<int64_t>& skip = scratch.skip;
  int64_t degree = end - begin - static_cast<int64_t>(skip.size());
  if (fanout < 0 && !Weighted(o)) return degree;
  if (!Weighted(o)) return o.replace ? (degree > 0 ? fanout : 0) : std::min(fanout, degree);
  std::vector<float>& kept = scratch.weights;  // kept[p - begin]: position p's.
  kept.resize(static_cast<size_t>(end - begin));
  auto next_skip = skip.begin();
  int64_t positive = 0;
  for (int64_t p = begin; p < end; ++p) {
    if constexpr (kIndex == WeightIndex::kByRelation) {
      if (csc.etypes[p] < 0 || csc.etypes[p] >= csc.num_etypes) {
        return absl::InvalidArgumentError(
            fmt::format("relation {} at CSC position {} is not one of the {} relations",
                        csc.etypes[p], p, csc.num_etypes));
      }
    }
    if constexpr (kIndex != WeightIndex::kByPosition) {
      auto [weights, k] = WeightSlot<kIndex>(o, csc, p);
      if (k < 0 || k >= static_cast<int64_t>(weights.size())) {
        if (kIndex == WeightIndex::kByRelation && weights.empty()) {
          return absl::InvalidArgumentError(
              fmt::format("edge {} at CSC position {} has no weight: relation {} has no weights",
                          csc.eid(p), p, csc.etypes[p]));
        }
        return absl::InvalidArgumentError(fmt::format(
            "edge {} at CSC position {} has no weight (the {} weights are of edges {} onwards{})",
            csc.eid(p), p, weights.size(), csc.eid(p) - k,
            kIndex == WeightIndex::kByRelation ? fmt::format(" of relation {}", csc.etypes[p])
                                               : ""));
      }
    }
    const float w = RawWeight<kIndex>(o, csc, p);
    if (!(w >= 0) || std::isinf(w)) {
      return absl::InvalidArgumentError(
          fmt::format("edge weight {} at CSC position {} is negative, infinite or NaN", w, p));
    }
    const bool excluded = next_skip != skip.end() && *next_skip == p;
    next_skip += excluded;
    kept[p - begin] = excluded ? 0.0f : w;
    positive += kept[p - begin] > 0;
  }
  if (fanout < 0) return degree;  // Every edge, whatever its weight.
  if (o.replace) return positive > 0 ? fanout : 0;
  return std::min(fanout, positive);
}

// Writes `count` chosen CSC positions of the segment [begin, end) of a row
// to `out`, drawing from the stream (options.seed, stream, key).
// scratch.skip holds the segment's excluded positions and, when weighted,
// scratch.weights its weights as CountFor read them. False if those weights
// cannot give `count` edges (a count from an earlier read of weights that
// changed since).
template <WeightIndex kIndex>
bool ChooseFor(int64_t begin, int64_t end, int64_t fanout, uint64_t stream, uint64_t key,
               int64_t count, const SampleOptions& o, Scratch& scratch, int64_t* out) {
  const std::vector<int64_t>& skip = scratch.skip;
  int64_t degree = end - begin - static_cast<int64_t>(skip.size());
  if (count == 0) return true;
  if (fanout < 0 || (!Weighted(o) && !o.replace && count == degree)) {
    for (int64_t i = 0; i < degree; ++i) out[i] = Unskip(begin, i, skip);
    return true;
  }
  Rng rng(o.seed, stream, key);
  if (!Weighted(o)) {
    if (o.replace) {
      for (int64_t i = 0; i < count; ++i) {
        out[i] =
            Unskip(begin, static_cast<int64_t>(rng.Below(static_cast<uint64_t>(degree))), skip);
      }
      return true;
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
      return true;
    }
    std::vector<int64_t>& pos = scratch.positions;
    pos.resize(degree);
    for (int64_t i = 0; i < degree; ++i) pos[i] = i;
    for (int64_t i = 0; i < count; ++i) {
      int64_t j = i + static_cast<int64_t>(rng.Below(static_cast<uint64_t>(degree - i)));
      std::swap(pos[i], pos[j]);
      out[i] = Unskip(begin, pos[i], skip);
    }
    return true;
  }
  const int64_t row = end - begin;
  const std::vector<float>& weights = scratch.weights;
  if (o.replace) {
    std::vector<double>& prefix = scratch.prefix;
    prefix.resize(row);
    double total = 0;
    for (int64_t i = 0; i < row; ++i) prefix[i] = total += weights[i];
    if (!(total > 0)) return false;
    for (int64_t i = 0; i < count; ++i) {
      double r = rng.Uniform() * total;
      int64_t k = std::upper_bound(prefix.begin(), prefix.end(), r) - prefix.begin();
      k = std::min(k, row - 1);
      while (k > 0 && weights[k] == 0) --k;  // r landed on a zero-width edge.
      out[i] = begin + k;
    }
    return true;
  }
  // Efraimidis–Spirakis: key log(u) / w, keep the `count` largest.
  auto& keyed = scratch.keyed;
  keyed.clear();
  for (int64_t i = 0; i < row; ++i) {
    const float w = weights[i];
    if (w <= 0) continue;
    double u = 1.0 - rng.Uniform();  // (0, 1]
    keyed.emplace_back(std::log(u) / w, begin + i);
  }
  if (static_cast<int64_t>(keyed.size()) < count) return false;
  if (static_cast<int64_t>(keyed.size()) > count) {
    std::nth_element(keyed.begin(), keyed.begin() + count, keyed.end(),
                     [](const auto& a, const auto& b) { return a.first > b.first; });
  }
  for (int64_t i = 0; i < count; ++i) out[i] = keyed[i].second;
  return true;
}

// ChooseFor's failure in pass 2: the weights of the seed keyed `key` (its
// global id where the caller gives them) changed since pass 1.
Status WeightsChanged(uint64_t key) {
  return absl::AbortedError(fmt::format(
      "the edge weights of seed {} changed while it was sampled (a concurrent push); sample "
      "again",
      key));
}

// The random stream of relation r (relation 0's is the single-fanout one).
constexpr uint64_t StreamOf(int r) { return 1 + static_cast<uint64_t>(r); }

// Calls f(fanout, stream, b, e) for each segment of row [begin, end) that
// is sampled on its own: each relation's run with its fanout (per-relation
// fanouts), or the whole row with options.fanout.
template <class F>
Status ForEachSegment(const CscView& csc, const SampleOptions& o, int64_t begin, int64_t end,
                      F&& f) {
  if (o.etype_fanouts.empty()) return f(o.fanout, StreamOf(0), begin, end);
  return ForEachRun(csc, begin, end, [&](int r, int64_t b, int64_t e) {
    return f(o.etype_fanouts[r], StreamOf(r), b, e);
  });
}

// The fanouts of a call's segments: per relation, or the one fanout.
std::span<const int64_t> FanoutsOf(const SampleOptions& o) {
  return o.etype_fanouts.empty() ? std::span<const int64_t>(&o.fanout, 1) : o.etype_fanouts;
}

// An upper bound of the edges a call returns, from degrees alone (indptr,
// no row reads), saturating. Without replacement a seed gets at most its
// degree, and at most the sum of the positive fanouts unless a fanout is
// -1 (every edge of that relation); with replacement, a seed with edges at
// most the sum of the positive fanouts, plus its degree if a fanout is -1.
int64_t MaxEdges(const CscView& csc, std::span<const int64_t> seeds, const SampleOptions& o) {
  int64_t fanouts = 0;
  bool every = false;
  for (int64_t f : FanoutsOf(o)) {
    if (f < 0) every = true;
    if (f > 0 && __builtin_add_overflow(fanouts, f, &fanouts)) fanouts = INT64_MAX;
  }
  int64_t total = 0;
  for (int64_t v : seeds) {
    const int64_t degree = csc.indptr[v + 1] - csc.indptr[v];
    int64_t most;
    if (!o.replace) {
      most = every ? degree : std::min(degree, fanouts);
    } else if (degree == 0) {
      most = 0;
    } else if (!every) {
      most = fanouts;
    } else if (__builtin_add_overflow(degree, fanouts, &most)) {
      return INT64_MAX;
    }
    if (__builtin_add_overflow(total, most, &total)) return INT64_MAX;
  }
  return total;
}

// Sampled edges appended in place: the arrays are sized once, without a
// zero fill, from MaxEdges (up to a cap), grow geometrically past that,
// and are cut to `size` at the end.
struct EdgeSink {
  SampledEdges edges;
  size_t size = 0;
  // Room for c more edges; returns the index of the first.
  size_t Append(size_t c) {
    if (size + c > edges.src.size()) {
      const size_t grown = std::max({2 * edges.src.size(), size + c, size_t{4096}});
      for (auto* v : {&edges.src, &edges.dst, &edges.eid}) v->resize(grown);
    }
    size += c;
    return size - c;
  }
  // Room for n edges in all.
  void Reserve(size_t n) {
    if (n > edges.src.size()) {
      for (auto* v : {&edges.src, &edges.dst, &edges.eid}) v->resize(n);
    }
  }
  void Trim() {
    for (auto* v : {&edges.src, &edges.dst, &edges.eid}) v->resize(size);
  }
};

// One pass over each row, its segments counted and chosen from one read
// (for per-relation fanouts, whose relations are then read once, and for
// weights, which another process may change between two reads): each
// thread appends to its own sink, and the sinks are joined in seed order.
// The caller checked `max_edges` (MaxEdges of all the seeds) against
// options.max_edges, which bounds what this allocates.
template <WeightIndex kIndex, class Run, class CountSegment>
StatusOr<SampledEdges> SampleOnePass(const CscView& csc, std::span<const int64_t> seeds,
                                     std::span<const int64_t> keys, const SampleOptions& options,
                                     int64_t max_edges, int threads, Run& run,
                                     CountSegment& count_segment) {
  // Edge p of a relation's segment [b, e) is csc.eid(b) + (p - b).
  const bool shift_ids = !options.etype_fanouts.empty() && csc.consecutive_segment_eids;
  const int64_t n = static_cast<int64_t>(seeds.size());
  std::vector<EdgeSink> sinks(threads);
  std::vector<int64_t> counts(n + 1, 0);  // Seed i's edge count at [i + 1].
  RETURN_IF_ERROR(run([&](int t, int64_t lo, int64_t hi) -> Status {
    Scratch scratch;
    EdgeSink& sink = sinks[t];
    // Sized once for what this chunk can give (the caller checked the
    // whole call's bound against max_edges), up to kReserveMax edges: a
    // loose bound (large fanouts with replacement over seeds whose edges
    // are all excluded or weightless) must not reserve gigabytes.
    constexpr int64_t kReserveMax = int64_t{1} << 22;
    const int64_t bound =
        threads == 1 ? max_edges : MaxEdges(csc, seeds.subspan(lo, hi - lo), options);
    sink.Reserve(static_cast<size_t>(std::min(kReserveMax, bound)));
    constexpr int64_t kAhead = 4;  // Rows are random reads: fetch a few seeds ahead.
    for (int64_t i = lo; i < hi; ++i) {
      if (i + kAhead < hi) {
        const int64_t row = csc.indptr[seeds[i + kAhead]];
        __builtin_prefetch(csc.indices.data() + row);
        if (!csc.etypes.empty()) __builtin_prefetch(csc.etypes.data() + row);
        if (!csc.eids.empty()) __builtin_prefetch(csc.eids.data() + row);
      }
      const int64_t v = seeds[i], begin = csc.indptr[v], end = csc.indptr[v + 1];
      const uint64_t key = static_cast<uint64_t>(keys.empty() ? v : keys[i]);
      const size_t first = sink.size;
      auto segment = [&](int64_t fanout, uint64_t stream, int64_t b, int64_t e) -> Status {
        ASSIGN_OR_RETURN(int64_t c, count_segment(fanout, b, e, scratch));
        if (c == 0) return absl::OkStatus();
        const size_t at = sink.Append(static_cast<size_t>(c));
        int64_t* pos = sink.edges.eid.data() + at;  // Positions first, then ids.
        // One read: the count and the choice see the same weights.
        if (!ChooseFor<kIndex>(b, e, fanout, stream, key, c, options, scratch, pos)) {
          return absl::InternalError("sampled counts changed within one read");
        }
        int64_t* src = sink.edges.src.data() + at;
        int64_t* dst = sink.edges.dst.data() + at;
        if (shift_ids) {
          const int64_t shift = csc.eid(b) - b;  // Edge p of the segment is shift + p.
          for (int64_t k = 0; k < c; ++k) {
            src[k] = csc.indices[pos[k]];
            dst[k] = v;
            pos[k] += shift;
          }
        } else {
          for (int64_t k = 0; k < c; ++k) {
            src[k] = csc.indices[pos[k]];
            dst[k] = v;
            pos[k] = csc.eid(pos[k]);
          }
        }
        return absl::OkStatus();
      };
      RETURN_IF_ERROR(ForEachSegment(csc, options, begin, end, segment));
      counts[i + 1] = static_cast<int64_t>(sink.size - first);
    }
    return absl::OkStatus();
  }));
  for (int64_t i = 0; i < n; ++i) counts[i + 1] += counts[i];
  SampledEdges out;
  if (threads == 1) {
    sinks[0].Trim();
    out = std::move(sinks[0].edges);
  } else {
    const size_t total = static_cast<size_t>(counts[n]);
    for (auto* v : {&out.src, &out.dst, &out.eid}) v->reserve(total);
    for (EdgeSink& sink : sinks) {
      const auto take = [&](UninitVector<int64_t>& to, const UninitVector<int64_t>& from) {
        to.insert(to.end(), from.begin(), from.begin() + static_cast<ptrdiff_t>(sink.size));
      };
      take(out.src, sink.edges.src);
      take(out.dst, sink.edges.dst);
      take(out.eid, sink.edges.eid);
      sink = EdgeSink();
    }
  }
  out.offsets = std::move(counts);
  return out;
}

// Samples validated input (kIndex: how weights are indexed).
template <WeightIndex kIndex>
StatusOr<SampledEdges> Sample(const CscView& csc, std::span<const int64_t> seeds,
                              std::span<const int64_t> keys, const SampleOptions& options) {
  const int64_t n = static_cast<int64_t>(seeds.size());
  const bool per_relation = !options.etype_fanouts.empty();
  int threads = std::max(1, std::min<int>(options.num_threads, static_cast<int>(n / 256) + 1));
  // Runs body(t, lo, hi) over `threads` chunks of the seeds.
  auto run = [&](auto&& body) {
    std::vector<std::thread> pool;
    std::vector<Status> status(threads);
    for (int t = 0; t < threads; ++t) {
      int64_t lo = n * t / threads, hi = n * (t + 1) / threads;
      auto work = [&, t, lo, hi] { status[t] = body(t, lo, hi); };
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
  auto too_many = [&] {
    std::string fanout = per_relation ? fmt::format("s {}", fmt::join(options.etype_fanouts, ", "))
                                      : fmt::format(" {}", options.fanout);
    return absl::ResourceExhaustedError(
        fmt::format("sampling {} seeds with fanout{} would return more than {} edges", n, fanout,
                    options.max_edges));
  };
  // The edges a segment [b, e) gets with `fanout`; scratch is left holding
  // its excluded positions (and its weights).
  auto count_segment = [&](int64_t fanout, int64_t b, int64_t e,
                           Scratch& scratch) -> StatusOr<int64_t> {
    if (fanout == 0) return 0;
    FindSkipped(csc, b, e, options.exclude, scratch.skip);
    return CountFor<kIndex>(csc, b, e, fanout, options, scratch);
  };
  if (per_relation || Weighted(options)) {
    if (const int64_t most = MaxEdges(csc, seeds, options); most <= options.max_edges) {
      return SampleOnePass<kIndex>(csc, seeds, keys, options, most, threads, run, count_segment);
    }
  }
  // Pass 1: how many edges each seed gets; pass 2: fill in place. (Rows
  // are read twice, but the first pass reads only indptr for one fanout
  // without weights.)
  std::vector<int64_t> offsets(n + 1, 0);
  constexpr int64_t kAhead = 4;  // Rows are random reads: fetch a few seeds ahead.
  RETURN_IF_ERROR(run([&](int, int64_t lo, int64_t hi) -> Status {
    Scratch scratch;
    for (int64_t i = lo; i < hi; ++i) {
      if (per_relation && !csc.etypes.empty() && i + kAhead < hi) {
        __builtin_prefetch(csc.etypes.data() + csc.indptr[seeds[i + kAhead]]);
      }
      int64_t v = seeds[i], total = 0;
      RETURN_IF_ERROR(ForEachSegment(csc, options, csc.indptr[v], csc.indptr[v + 1],
                                     [&](int64_t fanout, uint64_t, int64_t b, int64_t e) -> Status {
                                       ASSIGN_OR_RETURN(int64_t count,
                                                        count_segment(fanout, b, e, scratch));
                                       if (__builtin_add_overflow(total, count, &total))
                                         return too_many();
                                       return absl::OkStatus();
                                     }));
      offsets[i + 1] = total;
    }
    return absl::OkStatus();
  }));
  for (int64_t i = 0; i < n; ++i) {
    if (__builtin_add_overflow(offsets[i + 1], offsets[i], &offsets[i + 1]) ||
        offsets[i + 1] > options.max_edges) {
      return too_many();
    }
  }
  SampledEdges out;
  out.src.resize(offsets[n]);
  out.dst.resize(offsets[n]);
  out.eid.resize(offsets[n]);
  RETURN_IF_ERROR(run([&](int, int64_t lo, int64_t hi) -> Status {
    Scratch scratch;
    for (int64_t i = lo; i < hi; ++i) {
      if (i + kAhead < hi) {
        int64_t row = csc.indptr[seeds[i + kAhead]];
        __builtin_prefetch(csc.indices.data() + row);
        if (!csc.eids.empty()) __builtin_prefetch(csc.eids.data() + row);
        if (per_relation && !csc.etypes.empty()) __builtin_prefetch(csc.etypes.data() + row);
      }
      int64_t v = seeds[i];
      int64_t* pos = out.eid.data() + offsets[i];  // Positions first, then mapped.
      int64_t count = offsets[i + 1] - offsets[i], at = 0;
      uint64_t key = static_cast<uint64_t>(keys.empty() ? v : keys[i]);
      // Counted again (weights, which another process may have changed
      // since pass 1, are read again with them): a count that no longer
      // fits pass 1's is WeightsChanged, and the call is sampled again.
      RETURN_IF_ERROR(ForEachSegment(
          csc, options, csc.indptr[v], csc.indptr[v + 1],
          [&](int64_t fanout, uint64_t stream, int64_t b, int64_t e) -> Status {
            ASSIGN_OR_RETURN(int64_t c, count_segment(fanout, b, e, scratch));
            if (c > count - at ||
                !ChooseFor<kIndex>(b, e, fanout, stream, key, c, options, scratch, pos + at)) {
              return WeightsChanged(key);
            }
            at += c;
            return absl::OkStatus();
          }));
      if (at != count) return WeightsChanged(key);
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

}  // namespace

StatusOr<SampledEdges> SampleNeighbors(const CscView& csc, std::span<const int64_t> seeds,
                                       std::span<const int64_t> keys,
                                       const SampleOptions& options) {
  if (!options.relation_weights.empty()) {
    if (!options.weights.empty()) {
      return absl::InvalidArgumentError("weights and per-relation weights are both given");
    }
    if (csc.etypes.empty() ||
        static_cast<int64_t>(options.relation_weights.size()) != csc.num_etypes) {
      return absl::InvalidArgumentError(
          fmt::format("{} per-relation weights given but the graph has {} relations{}",
                      options.relation_weights.size(), csc.num_etypes,
                      csc.etypes.empty() ? " and no relation per edge" : ""));
    }
  }
  if (!options.weights_by_eid && !options.weights.empty() &&
      options.weights.size() != csc.indices.size()) {
    return absl::InvalidArgumentError(
        fmt::format("{} edge weights for {} edges", options.weights.size(), csc.indices.size()));
  }
  if (!keys.empty() && keys.size() != seeds.size()) {
    return absl::InvalidArgumentError("keys and seeds differ in length");
  }
  if (!csc.etypes.empty() && csc.etypes.size() != csc.indices.size()) {
    return absl::InvalidArgumentError(
        fmt::format("{} edge relations for {} edges", csc.etypes.size(), csc.indices.size()));
  }
  const bool per_relation = !options.etype_fanouts.empty();
  if (per_relation) {
    if (static_cast<int64_t>(options.etype_fanouts.size()) != csc.num_etypes) {
      return absl::InvalidArgumentError(
          fmt::format("{} per-relation fanouts given but the graph has {} relations",
                      options.etype_fanouts.size(), csc.num_etypes));
    }
    for (size_t r = 0; r < options.etype_fanouts.size(); ++r) {
      if (options.etype_fanouts[r] < -1) {
        return absl::InvalidArgumentError(
            fmt::format("fanout {} of relation {} is invalid (-1: every edge, 0: none, or a count)",
                        options.etype_fanouts[r], r));
      }
    }
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
  auto sample = [&] {
    if (!options.relation_weights.empty()) {
      return Sample<WeightIndex::kByRelation>(csc, seeds, keys, options);
    }
    if (options.weights_by_eid && !options.weights.empty()) {
      return Sample<WeightIndex::kByEid>(csc, seeds, keys, options);
    }
    return Sample<WeightIndex::kByPosition>(csc, seeds, keys, options);
  };
  // Weights pushed while the call ran (WeightsChanged): sampled again, from
  // weights read afresh, before the caller is told.
  StatusOr<SampledEdges> out = sample();
  for (int again = 0; again < 3 && absl::IsAborted(out.status()); ++again) out = sample();
  return out;
}

}  // namespace tessera::sampling
