// File: src/kvstore/graph_service.cc
//
// The rules of a sampling request shared by every GraphService and the
// servers: fanouts checked against the partition book, and the weights of a
// part's edges found from the name `prob` (per relation on a typed book).

#include "src/kvstore/graph_service.h"

#include <algorithm>

#include "fmt/format.h"
#include "src/base/memory_budget.h"

namespace tessera::kvstore {

namespace {

// "src:rel:dst" of relation r, or its number if the book has no such name.
std::string RelationName(const PartitionBook& book, int r) {
  if (r >= 0 && r < book.num_etypes()) return book.etypes()[r].Canonical();
  return fmt::format("{}", r);
}

}  // namespace

Status CheckFanouts(int64_t fanout, std::span<const int64_t> etype_fanouts,
                    const PartitionBook& book) {
  if (fanout < -1) {
    return absl::InvalidArgumentError(fmt::format("fanout {} (use -1 for all)", fanout));
  }
  if (etype_fanouts.empty()) return absl::OkStatus();
  const int relations = book.num_etypes();
  if (etype_fanouts.size() != static_cast<size_t>(relations)) {
    std::vector<std::string> names;
    for (int r = 0; r < relations; ++r) names.push_back(RelationName(book, r));
    return absl::InvalidArgumentError(fmt::format(
        "{} per-relation fanouts for a graph of {} relations ({}): give one per relation, in "
        "this order",
        etype_fanouts.size(), relations, fmt::join(names, ", ")));
  }
  for (int r = 0; r < relations; ++r) {
    if (etype_fanouts[r] < -1) {
      return absl::InvalidArgumentError(
          fmt::format("fanout {} of relation {} is invalid (-1: every edge, 0: none, or a count)",
                      etype_fanouts[r], RelationName(book, r)));
    }
  }
  return absl::OkStatus();
}

bool SamplesRelation(std::span<const int64_t> etype_fanouts, int r) {
  return etype_fanouts.empty() || etype_fanouts[r] != 0;
}

std::string WeightKey(const PartitionBook& book, const std::string& prob, int r) {
  if (book.is_homogeneous()) return "edge/" + prob;
  return fmt::format("edge/{}/{}", RelationName(book, r), prob);
}

Status MissingWeights(const PartitionBook& book, const std::string& prob, int r) {
  return absl::NotFoundError(fmt::format(
      "sampling weights '{}': relation {} has no edge array '{}' (on a heterogeneous graph every "
      "sampled relation needs its own; a relation with fanout 0 needs none)",
      prob, RelationName(book, r), WeightKey(book, prob, r).substr(5)));
}

Status CheckWeightArray(const std::string& key, DType dtype, const std::vector<int64_t>& shape) {
  if (key.rfind("edge/", 0) != 0) {
    return absl::InvalidArgumentError(
        fmt::format("sampling weights must be an edge array, and '{}' is not", key));
  }
  bool one_per_row = shape.size() == 1 || (shape.size() == 2 && shape[1] == 1);
  if (dtype != DType::kFloat32 || !one_per_row) {
    return absl::InvalidArgumentError(
        fmt::format("sampling weights '{}' must be float32 with one value per edge, not {} [{}]",
                    key, DTypeName(dtype), fmt::join(shape, ", ")));
  }
  return absl::OkStatus();
}

StatusOr<PartWeights> PartWeightsOf(const PartitionBook& book, int part,
                                    const SampleRequest& request, const EdgeRowsLookup& lookup) {
  if (request.prob.empty()) return PartWeights{};
  RETURN_IF_ERROR(CheckFanouts(request.fanout, request.etype_fanouts, book));
  if (book.is_homogeneous()) {
    const std::string key = WeightKey(book, request.prob, 0);
    ASSIGN_OR_RETURN(EdgeRows rows, lookup(key));
    RETURN_IF_ERROR(CheckWeightArray(key, rows.dtype, rows.shape));
    return PartWeights{
        .weights = {static_cast<const float*>(rows.data), static_cast<size_t>(rows.shape[0])},
        .keepalive = std::move(rows.keepalive)};
  }
  // Partition `part` owns edge ids [EdgeRange(part)), relation by relation.
  const auto [first, end] = book.EdgeRange(part);
  PartWeights out;
  out.relations.resize(book.num_etypes());
  auto keepalives = std::make_shared<std::vector<std::shared_ptr<const void>>>();
  for (int r = 0; r < book.num_etypes(); ++r) {
    if (!SamplesRelation(request.etype_fanouts, r)) continue;  // Never read.
    const std::string key = WeightKey(book, request.prob, r);
    StatusOr<EdgeRows> rows = lookup(key);
    if (absl::IsNotFound(rows.status())) return MissingWeights(book, request.prob, r);
    RETURN_IF_ERROR(rows.status());
    RETURN_IF_ERROR(CheckWeightArray(key, rows->dtype, rows->shape));
    const auto [begin, stop] = book.EdgeTypeRange(r, part);
    if (rows->shape[0] != stop - begin || begin < first || stop > end) {
      return absl::DataLossError(
          fmt::format("sampling weights '{}' have {} rows on partition {}, which owns {} edges of "
                      "relation {}",
                      key, rows->shape[0], part, stop - begin, RelationName(book, r)));
    }
    out.relations[r] = {
        .weights = {static_cast<const float*>(rows->data), static_cast<size_t>(stop - begin)},
        .eid_base = begin};
    keepalives->push_back(std::move(rows->keepalive));
  }
  out.keepalive = std::move(keepalives);
  return out;
}

sampling::NeighborOptions NeighborOptionsOf(const SampleRequest& request,
                                            const PartWeights& weights) {
  return {.fanout = request.fanout,
          .etype_fanouts = request.etype_fanouts,
          .dir = request.dir,
          .replace = request.replace,
          .weights = weights.weights,
          .relation_weights = weights.relations,
          .exclude = request.exclude,
          .seed = request.seed,
          .num_threads = request.num_threads,
          // 24 bytes an edge (src, dst, eid), in a quarter of the memory
          // available: a fanout of 10^7 with replacement is an error, not
          // a bad_alloc after gigabytes.
          .max_edges = std::clamp<int64_t>(RecentAvailableMemoryBytes() / 4 / 24, int64_t{1} << 20,
                                           int64_t{1} << 30)};
}

}  // namespace tessera::kvstore
