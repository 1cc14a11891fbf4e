// File: src/kvstore/remote_graph_service.cc
//
// The graph service of a distributed job: sampling, find_edges and degrees of ids
// spread over the machines, in pieces of kGraphChunk, with this machine's
// part done from shared memory while the remote answers travel. Every
// answer is checked before it is unpacked (counts summed with overflow
// checks, array lengths against the request).
#include "src/kvstore/remote_graph_service.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "fmt/format.h"
#include "src/kvstore/id_groups.h"

namespace tessera::kvstore {

using rpc::Message;

namespace {

// Graph requests carry at most this many seeds or ids: the server samples
// the next piece while the previous answer travels and is unpacked here.
// Measured on the medium graph (remote seeds, fanout 25, 25k seeds; ns per
// sampled edge): one request 36, 16k 37-51, 4k 30-31, 2k 31-34, 1k 31-33.
constexpr size_t kGraphChunk = 4096;

// A graph request of `method` whose first array holds `ids`.
Message IdsRequest(wire::Method method, std::span<const int64_t> ids) {
  Message m = rpc::MakeRequest(method);
  m.arrays.push_back(rpc::MakeWireArray(std::vector<int64_t>(ids.begin(), ids.end())));
  return m;
}

// Checks a graph answer: `count` 1-d int64 arrays of `rows` entries each.
Status CheckIdArrays(const Message& response, size_t count, int64_t rows, int part,
                     const char* what) {
  bool ok = response.arrays.size() == count;
  for (size_t i = 0; ok && i < count; ++i) {
    const rpc::WireArray& a = response.arrays[i];
    ok = a.dtype == DType::kInt64 && a.shape.size() == 1 && a.shape[0] == rows;
  }
  if (ok) return absl::OkStatus();
  return absl::DataLossError(
      fmt::format("{}: the answer of machine {} does not have the expected arrays", what, part));
}

// int32 or int64 ids of a 1-d array, widened to int64.
bool IsIdArray(const rpc::WireArray& a) {
  return (a.dtype == DType::kInt32 || a.dtype == DType::kInt64) && a.shape.size() == 1;
}

UninitVector<int64_t> WidenIds(const rpc::WireArray& a) {
  if (a.dtype == DType::kInt64) {
    std::span<const int64_t> s = a.span<int64_t>();
    return {s.begin(), s.end()};
  }
  std::span<const int32_t> s = a.span<int32_t>();
  return {s.begin(), s.end()};
}

// A SAMPLE answer for `seeds`: [neighbour, eid, counts per seed].
// Ids in a machine's answer must lie in [0, bound): a forged one is DataLoss
// here, not an out-of-range read in whatever uses it.
Status CheckIdRange(std::span<const int64_t> ids, int64_t bound, int part, const char* what,
                    const char* kind) {
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= bound) {
      return absl::DataLossError(
          fmt::format("{}: machine {} answered {} {} (entry {}), not one of "
                      "the graph's {}",
                      what, part, kind, ids[i], i, bound));
    }
  }
  return absl::OkStatus();
}

Status UnpackSample(const Message& response, std::span<const int64_t> seeds, int part,
                    sampling::EdgeDir dir, const PartitionBook& book, sampling::SampledEdges* out) {
  const auto& a = response.arrays;
  bool ok = a.size() == 3 && IsIdArray(a[0]) && IsIdArray(a[1]) && a[0].shape == a[1].shape &&
            a[2].dtype == DType::kInt64 && a[2].shape.size() == 1 &&
            a[2].shape[0] == static_cast<int64_t>(seeds.size());
  // Every count is checked against what is left before it is added: forged
  // counts must neither wrap the sum nor point past the arrays.
  int64_t total = 0;
  if (ok) {
    const int64_t edges = a[0].shape[0];
    for (int64_t c : a[2].span<int64_t>()) {
      if (c < 0 || c > edges - total) {
        ok = false;
        break;
      }
      total += c;
    }
    ok &= total == edges;
  }
  if (!ok) {
    return absl::DataLossError(fmt::format(
        "sample_neighbors: the answer of machine {} does not have the expected arrays", part));
  }
  bool in = dir == sampling::EdgeDir::kIn;
  UninitVector<int64_t>& seed_side = in ? out->dst : out->src;
  UninitVector<int64_t>& neighbours = in ? out->src : out->dst;
  neighbours = WidenIds(a[0]);
  out->eid = WidenIds(a[1]);
  RETURN_IF_ERROR(CheckIdRange(neighbours, book.num_nodes(), part, "sample_neighbors", "node"));
  RETURN_IF_ERROR(CheckIdRange(out->eid, book.num_edges(), part, "sample_neighbors", "edge"));
  seed_side.resize(static_cast<size_t>(total));
  std::span<const int64_t> counts = a[2].span<int64_t>();
  int64_t k = 0;
  for (size_t i = 0; i < seeds.size(); ++i) {
    for (int64_t j = 0; j < counts[i]; ++j) seed_side[k++] = seeds[i];
  }
  return absl::OkStatus();
}

}  // namespace

RemoteGraphService::RemoteGraphService(std::shared_ptr<JobClient> job,
                                       std::shared_ptr<FeatureStore> features)
    : job_(std::move(job)),
      features_(std::move(features)),
      rpc_(&job_->rpc()),
      book_(job_->book()),
      local_(job_->local_shards()) {}

StatusOr<std::shared_ptr<const sampling::LocalGraph>> RemoteGraphService::LocalGraph() {
  std::lock_guard<std::mutex> lock(graph_mutex_);
  if (!graph_) {
    if (!local_) return absl::InternalError("no local partition in this process");
    ASSIGN_OR_RETURN(graph_, LocalGraphFromShards(*local_, book_, job_->halo_hops()));
  }
  return graph_;
}

Status RemoteGraphService::GraphCall(
    const Split& split, const std::function<Message(std::span<const int64_t>)>& make_request,
    const std::function<Status()>& run_local,
    const std::function<Status(const Piece&, Message&)>& place) {
  int local = local_part();
  std::vector<rpc::Call> calls;
  std::vector<Piece> pieces;
  for (int p = 0; p < book_.num_partitions(); ++p) {
    if (p == local) continue;
    const std::vector<int64_t>& ids = split.ids[p];
    for (size_t begin = 0; begin < ids.size(); begin += kGraphChunk) {
      size_t count = std::min(kGraphChunk, ids.size() - begin);
      calls.push_back({job_->PickServer(p), make_request({ids.data() + begin, count})});
      pieces.push_back({p, begin, count});
    }
  }
  Status local_status;
  auto between = [&] {
    if (local >= 0 && !split.ids[local].empty()) local_status = run_local();
  };
  if (calls.empty()) {
    between();
    return local_status;
  }
  RETURN_IF_ERROR(
      rpc_->CallMany(std::move(calls), job_->CallDeadline(), between,
                     [&](size_t c, Message& response) { return place(pieces[c], response); })
          .status());
  return local_status;
}

StatusOr<sampling::SampledEdges> RemoteGraphService::SampleNeighbors(std::span<const int64_t> seeds,
                                                                     const SampleRequest& request) {
  RETURN_IF_ERROR(job_->Health());
  RETURN_IF_ERROR(CheckFanouts(request.fanout, request.etype_fanouts, book_));
  // The weights of every relation sampled (one array on a homogeneous graph).
  for (int r = 0; !request.prob.empty() && r < book_.num_etypes(); ++r) {
    if (!SamplesRelation(request.etype_fanouts, r)) continue;
    StatusOr<TensorMeta> meta = features_->Meta(WeightKey(book_, request.prob, r));
    if (absl::IsNotFound(meta.status()) && !book_.is_homogeneous()) {
      return MissingWeights(book_, request.prob, r);
    }
    RETURN_IF_ERROR(meta.status());
    RETURN_IF_ERROR(CheckWeightArray(meta->key, meta->dtype, meta->shape));
  }
  ASSIGN_OR_RETURN(Split split,
                   SplitByOwner(book_, shm::Policy::kNode, kAllTypes, "sample_neighbors", seeds));
  // The edges a machine may pick are its own in-edges, or any out-edges.
  auto exclude_for = [&](int p) {
    if (request.dir == sampling::EdgeDir::kOut) return request.exclude;
    auto [begin, end] = book_.EdgeRange(p);
    auto lo = std::lower_bound(request.exclude.begin(), request.exclude.end(), begin);
    auto hi = std::lower_bound(lo, request.exclude.end(), end);
    return std::span<const int64_t>(lo, hi);
  };
  std::vector<std::vector<sampling::SampledEdges>> parts(book_.num_partitions());
  for (int p = 0; p < book_.num_partitions(); ++p) {
    parts[p].resize((split.ids[p].size() + kGraphChunk - 1) / kGraphChunk);
    if (p == local_part() || split.ids[p].empty()) continue;
    // Every request to machine p carries its excluded edges.
    RETURN_IF_ERROR(
        job_->CheckFrameFits(exclude_for(p).size() * sizeof(int64_t),
                             fmt::format("the list of edges excluded on machine {}", p)));
  }
  auto make_request = [&](std::span<const int64_t> ids) {
    int p = book_.NodeOwner(ids[0]);
    Message m = IdsRequest(wire::SAMPLE, ids);
    wire::SampleArgs* args = m.header.mutable_sample();
    args->set_fanout(request.fanout);
    args->set_out(request.dir == sampling::EdgeDir::kOut);
    args->set_replace(request.replace);
    args->set_prob(request.prob);
    args->set_seed(request.seed);
    for (int64_t f : request.etype_fanouts) args->add_etype_fanouts(f);
    std::span<const int64_t> exclude = exclude_for(p);
    if (!exclude.empty()) {
      m.arrays.push_back(rpc::MakeWireArray(std::vector<int64_t>(exclude.begin(), exclude.end())));
    }
    return m;
  };
  auto run_local = [&]() -> Status {
    int p = local_part();
    ASSIGN_OR_RETURN(std::shared_ptr<const sampling::LocalGraph> graph, LocalGraph());
    ASSIGN_OR_RETURN(PartWeights weights, EdgeWeightsFromShards(*local_, book_, p, request));
    SampleRequest local = request;
    local.exclude = exclude_for(p);
    parts[p].resize(1);
    ASSIGN_OR_RETURN(parts[p][0],
                     graph->SampleNeighbors(split.ids[p], NeighborOptionsOf(local, weights)));
    return absl::OkStatus();
  };
  auto place = [&](const Piece& piece, Message& response) -> Status {
    const std::vector<int64_t>& ids = split.ids[piece.part];
    return UnpackSample(response, {ids.data() + piece.begin, piece.count}, piece.part, request.dir,
                        book_, &parts[piece.part][piece.begin / kGraphChunk]);
  };
  RETURN_IF_ERROR(GraphCall(split, make_request, run_local, place));
  size_t total = 0, non_empty = 0;
  sampling::SampledEdges* only = nullptr;
  for (auto& part : parts) {
    for (auto& e : part) {
      total += e.size();
      if (e.size() > 0) {
        ++non_empty;
        only = &e;
      }
    }
  }
  if (non_empty == 1) {
    only->offsets.clear();  // Seed order is the caller's only within one part.
    return std::move(*only);
  }
  sampling::SampledEdges merged;
  merged.src.reserve(total);
  merged.dst.reserve(total);
  merged.eid.reserve(total);
  for (const auto& part : parts) {
    for (const auto& e : part) {
      merged.src.insert(merged.src.end(), e.src.begin(), e.src.end());
      merged.dst.insert(merged.dst.end(), e.dst.begin(), e.dst.end());
      merged.eid.insert(merged.eid.end(), e.eid.begin(), e.eid.end());
    }
  }
  return merged;
}

Status RemoteGraphService::FindEdges(std::span<const int64_t> eids, int64_t* src, int64_t* dst) {
  RETURN_IF_ERROR(job_->Health());
  ASSIGN_OR_RETURN(Split split,
                   SplitByOwner(book_, shm::Policy::kEdge, kAllTypes, "find_edges", eids));
  auto scatter = [&](int p, size_t begin, std::span<const int64_t> s, std::span<const int64_t> d) {
    const std::vector<int64_t>& positions = split.positions[p];
    for (size_t i = 0; i < s.size(); ++i) {
      src[positions[begin + i]] = s[i];
      dst[positions[begin + i]] = d[i];
    }
  };
  auto make_request = [](std::span<const int64_t> ids) {
    return IdsRequest(wire::FIND_EDGES, ids);
  };
  auto run_local = [&]() -> Status {
    int p = local_part();
    ASSIGN_OR_RETURN(std::shared_ptr<const sampling::LocalGraph> graph, LocalGraph());
    std::vector<int64_t> s(split.ids[p].size()), d(split.ids[p].size());
    RETURN_IF_ERROR(graph->FindEdges(split.ids[p], s.data(), d.data()));
    scatter(p, 0, s, d);
    return absl::OkStatus();
  };
  auto place = [&](const Piece& piece, Message& response) -> Status {
    RETURN_IF_ERROR(
        CheckIdArrays(response, 2, static_cast<int64_t>(piece.count), piece.part, "find_edges"));
    for (const rpc::WireArray& a : response.arrays) {
      RETURN_IF_ERROR(
          CheckIdRange(a.span<int64_t>(), book_.num_nodes(), piece.part, "find_edges", "node"));
    }
    scatter(piece.part, piece.begin, response.arrays[0].span<int64_t>(),
            response.arrays[1].span<int64_t>());
    return absl::OkStatus();
  };
  return GraphCall(split, make_request, run_local, place);
}

Status RemoteGraphService::Degrees(std::span<const int64_t> nids, sampling::EdgeDir dir, int etype,
                                   int64_t* out) {
  RETURN_IF_ERROR(job_->Health());
  bool in = dir == sampling::EdgeDir::kIn;
  if (etype != kAllRelations && (etype < 0 || etype >= book_.num_etypes())) {
    return absl::InvalidArgumentError(
        fmt::format("{}: relation {} is not one of the graph's {} relations",
                    in ? "in_degrees" : "out_degrees", etype, book_.num_etypes()));
  }
  ASSIGN_OR_RETURN(Split split, SplitByOwner(book_, shm::Policy::kNode, kAllTypes,
                                             in ? "in_degrees" : "out_degrees", nids));
  auto scatter = [&](int p, size_t begin, std::span<const int64_t> degrees) {
    for (size_t i = 0; i < degrees.size(); ++i) out[split.positions[p][begin + i]] = degrees[i];
  };
  auto make_request = [&](std::span<const int64_t> ids) {
    Message m = IdsRequest(in ? wire::IN_DEGREES : wire::OUT_DEGREES, ids);
    if (etype != kAllRelations) m.header.mutable_degree()->set_etype(etype);
    return m;
  };
  auto run_local = [&]() -> Status {
    int p = local_part();
    ASSIGN_OR_RETURN(std::shared_ptr<const sampling::LocalGraph> graph, LocalGraph());
    std::vector<int64_t> degrees(split.ids[p].size());
    RETURN_IF_ERROR(graph->Degrees(split.ids[p], dir, etype, degrees.data()));
    scatter(p, 0, degrees);
    return absl::OkStatus();
  };
  auto place = [&](const Piece& piece, Message& response) -> Status {
    RETURN_IF_ERROR(
        CheckIdArrays(response, 1, static_cast<int64_t>(piece.count), piece.part, "degrees"));
    // A degree is at most the number of edges.
    RETURN_IF_ERROR(CheckIdRange(response.arrays[0].span<int64_t>(), book_.num_edges() + 1,
                                 piece.part, "degrees", "degree"));
    scatter(piece.part, piece.begin, response.arrays[0].span<int64_t>());
    return absl::OkStatus();
  };
  return GraphCall(split, make_request, run_local, place);
}

}  // namespace tessera::kvstore
