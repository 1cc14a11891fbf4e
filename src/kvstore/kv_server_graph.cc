// File: src/kvstore/kv_server_graph.cc
//
// The graph service of a server: SAMPLE, IN_DEGREES, OUT_DEGREES and
// FIND_EDGES on the nodes and edges of this machine's partition.
#include <algorithm>
#include <limits>

#include "fmt/format.h"
#include "spdlog/spdlog.h"
#include "src/kvstore/graph_service.h"
#include "src/kvstore/id_groups.h"
#include "src/kvstore/kv_server.h"
#include "tessera/base/resource.h"

namespace tessera::kvstore {

using rpc::Message;
using rpc::WireArray;

void KvServer::RegisterGraphHandlers() {
  On(wire::SAMPLE, [this](const rpc::Peer&, Message& r) -> Reply { return Sample(r); });
  On(wire::IN_DEGREES, [this](const rpc::Peer&, Message& r) -> Reply { return Degrees(r); });
  On(wire::OUT_DEGREES, [this](const rpc::Peer&, Message& r) -> Reply { return Degrees(r); });
  On(wire::FIND_EDGES, [this](const rpc::Peer&, Message& r) -> Reply { return FindEdges(r); });
}

StatusOr<const sampling::LocalGraph*> KvServer::Graph() {
  if (!graph_) {
    ASSIGN_OR_RETURN(graph_, LocalGraphFromShards(*shards_, book_, halo_hops_));
  }
  return graph_.get();
}

namespace {

// The request's arrays[index] as int64 ids (1-d).
StatusOr<std::span<const int64_t>> IdsArg(const Message& request, size_t index, const char* what) {
  if (request.arrays.size() <= index) {
    return absl::InvalidArgumentError(fmt::format("missing array: {}", what));
  }
  const WireArray& a = request.arrays[index];
  if (a.dtype != DType::kInt64 || a.shape.size() != 1) {
    return absl::InvalidArgumentError(fmt::format("{} must be a 1-d int64 array", what));
  }
  return a.span<int64_t>();
}

// Ids below `limit` as int32 when they fit (half the bytes on the wire).
template <typename Alloc>
WireArray CompactIds(std::vector<int64_t, Alloc> ids, int64_t limit) {
  if (limit > std::numeric_limits<int32_t>::max()) return rpc::MakeWireArray(std::move(ids));
  UninitVector<int32_t> narrow(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) narrow[i] = static_cast<int32_t>(ids[i]);
  return rpc::MakeWireArray(std::move(narrow));
}

}  // namespace

Status KvServer::CheckSampleSize(const sampling::LocalGraph& graph, std::span<const int64_t> seeds,
                                 const SampleRequest& sample) const {
  // The counts alone: one int64 per seed.
  RETURN_IF_ERROR(CheckSize("sample", seeds.size(), sizeof(int64_t)));
  std::vector<int64_t> degrees(seeds.size());
  RETURN_IF_ERROR(sample.dir == sampling::EdgeDir::kIn ? graph.InDegrees(seeds, degrees.data())
                                                       : graph.OutDegrees(seeds, degrees.data()));
  // At most this many edges per seed of degree d (exclusions only remove
  // some), each a neighbour and an edge id of up to 8 bytes. Per-relation
  // fanouts are bounded as a whole: -1 takes at most every edge, the others
  // at most their sum (without replacement never more than d).
  const bool per_relation = !sample.etype_fanouts.empty();
  bool all = per_relation ? false : sample.fanout < 0;
  uint64_t sum = 0;  // Of the non-negative fanouts, saturated.
  if (per_relation) {
    for (int64_t f : sample.etype_fanouts) {
      if (f < 0) {
        all = true;
      } else if (__builtin_add_overflow(sum, static_cast<uint64_t>(f), &sum)) {
        sum = std::numeric_limits<uint64_t>::max();
      }
    }
  } else if (!all) {
    sum = static_cast<uint64_t>(sample.fanout);
  }
  uint64_t edges = static_cast<uint64_t>(seeds.size());  // Room for the counts.
  bool overflow = false;
  for (int64_t degree : degrees) {
    uint64_t d = static_cast<uint64_t>(degree);
    uint64_t picked = 0;
    if (!sample.replace) {
      picked = all ? d : std::min(d, sum);
    } else if (d > 0) {  // Draws of the counted relations, and every edge of the -1 ones.
      overflow |= __builtin_add_overflow(all ? d : 0, sum, &picked);
    }
    overflow |= __builtin_add_overflow(edges, picked, &edges);
  }
  if (overflow) edges = std::numeric_limits<uint64_t>::max();
  std::string fanouts =
      per_relation ? fmt::format("per-relation fanouts [{}]", fmt::join(sample.etype_fanouts, ", "))
                   : fmt::format("fanout {}", sample.fanout);
  return CheckSize(fmt::format("sample of {} seeds with {}{}", seeds.size(), fanouts,
                               sample.replace ? " (with replacement)" : ""),
                   edges, 2 * sizeof(int64_t));
}

StatusOr<Message> KvServer::Sample(const Message& request) {
  if (request.arrays.empty() || request.arrays.size() > 2) {
    return absl::InvalidArgumentError("sample takes the seeds and, optionally, excluded edges");
  }
  ASSIGN_OR_RETURN(std::span<const int64_t> seeds, IdsArg(request, 0, "seeds"));
  std::span<const int64_t> exclude;
  if (request.arrays.size() == 2) {
    ASSIGN_OR_RETURN(exclude, IdsArg(request, 1, "excluded edges"));
  }
  const wire::SampleArgs& args = request.header.sample();
  // Checked before it is copied: a peer's list must have one entry per relation.
  std::span<const int64_t> etype_fanouts(args.etype_fanouts().data(),
                                         static_cast<size_t>(args.etype_fanouts().size()));
  RETURN_IF_ERROR(CheckFanouts(args.fanout(), etype_fanouts, book_));
  SampleRequest sample{.fanout = args.fanout(),
                       .etype_fanouts = {etype_fanouts.begin(), etype_fanouts.end()},
                       .dir = args.out() ? sampling::EdgeDir::kOut : sampling::EdgeDir::kIn,
                       .replace = args.replace(),
                       .prob = args.prob(),
                       .exclude = exclude,
                       .seed = args.seed()};
  ASSIGN_OR_RETURN(const sampling::LocalGraph* graph, Graph());
  RETURN_IF_ERROR(CheckSampleSize(*graph, seeds, sample));
  ASSIGN_OR_RETURN(PartWeights weights,
                   EdgeWeightsFromShards(*shards_, book_, options_.machine_id, sample));
  // Each distinct seed sampled once (its edges depend only on it and the
  // request's seed): a request's work is bounded by its distinct rows.
  DistinctIds distinct = FindRepeats(seeds, graph->node_range(), seed_bits_);
  ASSIGN_OR_RETURN(sampling::SampledEdges edges,
                   graph->SampleNeighbors(distinct.ids.empty() ? seeds : distinct.ids,
                                          NeighborOptionsOf(sample, weights)));
  if (!distinct.ids.empty()) edges = RepeatEdges(edges, distinct.index);
  Message response = rpc::MakeResponse(request.header, absl::OkStatus());
  // The seed's side of each edge is implied by the counts: send the other.
  UninitVector<int64_t>& neighbours = args.out() ? edges.dst : edges.src;
  response.arrays.push_back(CompactIds(std::move(neighbours), book_.num_nodes()));
  response.arrays.push_back(CompactIds(std::move(edges.eid), book_.num_edges()));
  std::vector<int64_t> counts(seeds.size());
  for (size_t i = 0; i < seeds.size(); ++i) counts[i] = edges.offsets[i + 1] - edges.offsets[i];
  response.arrays.push_back(rpc::MakeWireArray(std::move(counts)));
  return response;
}

StatusOr<Message> KvServer::Degrees(const Message& request) {
  if (request.arrays.size() != 1) return absl::InvalidArgumentError("degrees take one array");
  ASSIGN_OR_RETURN(std::span<const int64_t> nids, IdsArg(request, 0, "node ids"));
  RETURN_IF_ERROR(CheckSize("degrees", nids.size(), sizeof(int64_t)));
  ASSIGN_OR_RETURN(const sampling::LocalGraph* graph, Graph());
  // One relation's (checked by the graph against the part's relations).
  const int etype = request.header.has_degree() ? request.header.degree().etype() : -1;
  if (request.header.has_degree() && etype < 0) {
    return absl::InvalidArgumentError(fmt::format(
        "degrees of relation {}: not a relation id (0 to {})", etype, book_.num_etypes() - 1));
  }
  std::vector<int64_t> degrees(nids.size());
  const sampling::EdgeDir dir = request.header.method() == wire::IN_DEGREES
                                    ? sampling::EdgeDir::kIn
                                    : sampling::EdgeDir::kOut;
  RETURN_IF_ERROR(graph->Degrees(nids, dir, etype, degrees.data()));
  Message response = rpc::MakeResponse(request.header, absl::OkStatus());
  response.arrays.push_back(rpc::MakeWireArray(std::move(degrees)));
  return response;
}

StatusOr<Message> KvServer::FindEdges(const Message& request) {
  if (request.arrays.size() != 1) return absl::InvalidArgumentError("find_edges takes one array");
  ASSIGN_OR_RETURN(std::span<const int64_t> eids, IdsArg(request, 0, "edge ids"));
  RETURN_IF_ERROR(CheckSize("find_edges", eids.size(), 2 * sizeof(int64_t)));
  ASSIGN_OR_RETURN(const sampling::LocalGraph* graph, Graph());
  std::vector<int64_t> src(eids.size()), dst(eids.size());
  RETURN_IF_ERROR(graph->FindEdges(eids, src.data(), dst.data()));
  Message response = rpc::MakeResponse(request.header, absl::OkStatus());
  response.arrays.push_back(rpc::MakeWireArray(std::move(src)));
  response.arrays.push_back(rpc::MakeWireArray(std::move(dst)));
  return response;
}

}  // namespace tessera::kvstore
