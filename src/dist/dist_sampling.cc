// File: src/dist/dist_sampling.cc
//
// LibTorch face of sampling: graph operations on a DistGraph (find_edges,
// degrees, sample_neighbors, in/edge subgraphs), blocks and the loaders,
// homogeneous and typed.
#include <algorithm>
#include <atomic>
#include <mutex>
#include <random>
#include <set>

#include "fmt/format.h"
#include "spdlog/spdlog.h"
#include "src/dist/dist_internal.h"
#include "src/kvstore/services.h"
#include "src/loader/minibatch.h"
#include "tessera/dist.h"

namespace tessera::dist {

using namespace internal;  // NOLINT: the shared helpers of this module.

// ------------------------------------------------------------ graph operations

namespace {

std::atomic<uint64_t> g_seed_base{std::random_device{}()};
std::atomic<uint64_t> g_seed_calls{0};

uint64_t NextSeed() { return loader::DeriveSeed(g_seed_base.load(), g_seed_calls.fetch_add(1)); }

sampling::EdgeDir ParseEdgeDir(const std::string& dir) {
  if (dir == "in") return sampling::EdgeDir::kIn;
  if (dir == "out") return sampling::EdgeDir::kOut;
  throw Error(fmt::format("edge_dir must be \"in\" or \"out\", got \"{}\"", dir));
}

// Every relation's fanout, by relation id, from a map keyed by relation
// name (plain or canonical). Every relation must be given, once.
std::vector<int64_t> RelationFanouts(const PartitionBook& book, const FanoutMap& fanout,
                                     const std::string& what) {
  const int R = book.num_etypes();
  std::vector<int64_t> out(R, 0);
  std::vector<bool> given(R, false);
  for (const auto& [name, f] : fanout) {
    int r = ValueOrThrow(book.EdgeTypeId(name), what);
    if (given[r]) {
      throw Error(
          fmt::format("{}: relation {} is given twice", what, book.etypes()[r].Canonical()));
    }
    if (f < -1) {
      throw Error(
          fmt::format("{}: fanout {} of relation {}: must be -1 (all) or >= 0", what, f, name));
    }
    given[r] = true;
    out[r] = f;
  }
  std::vector<std::string> missing;
  for (int r = 0; r < R; ++r) {
    if (!given[r]) missing.push_back(book.etypes()[r].Canonical());
  }
  if (!missing.empty()) {
    throw Error(
        fmt::format("{}: no fanout for relation{} {} (DGL needs every relation's; give 0 "
                    "for none)",
                    what, missing.size() > 1 ? "s" : "", fmt::join(missing, ", ")));
  }
  return out;
}

loader::NeighborSpec SpecOf(const NeighborSampler& sampler, kvstore::Services& store) {
  if (!sampler.fanouts.empty() && !sampler.etype_fanouts.empty()) {
    throw Error("NeighborSampler: give fanouts or etype_fanouts, not both");
  }
  loader::NeighborSpec spec{.fanouts = sampler.fanouts,
                            .dir = ParseEdgeDir(sampler.edge_dir),
                            .replace = sampler.replace,
                            .prob = sampler.prob};
  for (size_t l = 0; l < sampler.etype_fanouts.size(); ++l) {
    spec.etype_fanouts.push_back(RelationFanouts(store.book(), sampler.etype_fanouts[l],
                                                 fmt::format("NeighborSampler layer {}", l)));
  }
  ThrowIfError(loader::ValidateNeighborSpec(spec, store.book()), "NeighborSampler");
  // A typed graph's prob names per-relation arrays: the first sample checks them.
  if (!spec.prob.empty() && store.book().num_etypes() == 1) {
    kvstore::TensorMeta meta =
        ValueOrThrow(store.features().Meta("edge/" + spec.prob), "NeighborSampler prob");
    ThrowIfError(kvstore::CheckWeightArray(meta.key, meta.dtype, meta.shape),
                 "NeighborSampler prob");
  }
  return spec;
}

}  // namespace

void manual_seed(uint64_t seed) {
  g_seed_base = seed;
  g_seed_calls = 0;
}

kvstore::Services& DistGraph::store() const { return *context_->store_; }

std::pair<torch::Tensor, torch::Tensor> DistGraph::find_edges(const torch::Tensor& eids) const {
  torch::Tensor flat = AsIds(eids, "find_edges");
  torch::Tensor src = torch::empty({flat.size(0)}, torch::kInt64);
  torch::Tensor dst = torch::empty({flat.size(0)}, torch::kInt64);
  ThrowIfError(
      store().graph().FindEdges(SpanOf(flat), src.data_ptr<int64_t>(), dst.data_ptr<int64_t>()),
      "find_edges");
  return {src, dst};
}

namespace {

torch::Tensor Degrees(const DistGraph& g, const torch::Tensor& nids, sampling::EdgeDir dir) {
  const char* what = dir == sampling::EdgeDir::kIn ? "in_degrees" : "out_degrees";
  torch::Tensor flat = nids.defined() ? AsIds(nids, what) : torch::arange(g.num_nodes());
  torch::Tensor out = torch::empty({flat.size(0)}, torch::kInt64);
  ThrowIfError(
      g.store().graph().Degrees(SpanOf(flat), dir, kvstore::kAllRelations, out.data_ptr<int64_t>()),
      what);
  return out;
}

}  // namespace

torch::Tensor DistGraph::in_degrees(const torch::Tensor& nids) const {
  return Degrees(*this, nids, sampling::EdgeDir::kIn);
}

torch::Tensor DistGraph::out_degrees(const torch::Tensor& nids) const {
  return Degrees(*this, nids, sampling::EdgeDir::kOut);
}

namespace {

// Samples around homogeneous seeds: one fanout (per relation on a typed
// graph, as DGL) or per-relation fanouts.
sampling::SampledEdges SampleHomo(const DistGraph& g, const torch::Tensor& flat, int64_t fanout,
                                  std::vector<int64_t> etype_fanouts,
                                  const SampleOptions& options) {
  std::vector<int64_t> exclude;
  if (options.exclude_edges.defined()) {
    exclude = ToVector(options.exclude_edges, "sample_neighbors exclude_edges");
    std::sort(exclude.begin(), exclude.end());
    exclude.erase(std::unique(exclude.begin(), exclude.end()), exclude.end());
  }
  const PartitionBook& book = g.partition_book();
  if (etype_fanouts.empty() && book.num_etypes() > 1)
    etype_fanouts.assign(book.num_etypes(), fanout);
  kvstore::SampleRequest request{.fanout = fanout,
                                 .dir = ParseEdgeDir(options.edge_dir),
                                 .replace = options.replace,
                                 .prob = options.prob,
                                 .exclude = exclude,
                                 .seed = options.seed ? *options.seed : NextSeed()};
  request.etype_fanouts = std::move(etype_fanouts);
  return ValueOrThrow(g.store().graph().SampleNeighbors(SpanOf(flat), request), "sample_neighbors");
}

Subgraph ToSubgraph(sampling::SampledEdges&& edges) {
  return {Owned(std::move(edges.src)), Owned(std::move(edges.dst)), Owned(std::move(edges.eid))};
}

// {type: per-type ids} -> homogeneous ids, types in the order given: node
// types (`node`) or relations. Errors name the type.
torch::Tensor HomoIds(const DistGraph& g, const TypedIds& ids, bool node, const std::string& what) {
  const PartitionBook& book = g.partition_book();
  std::set<int> given;
  std::vector<torch::Tensor> parts;
  for (const auto& [type, per] : ids.items()) {
    int t = node ? ValueOrThrow(book.NodeTypeId(type), what)
                 : ValueOrThrow(book.EdgeTypeId(type), what);
    if (!given.insert(t).second) {
      throw Error(fmt::format("{}: {} {} is given twice", what, node ? "node type" : "relation",
                              book.TypeName(node, t)));
    }
    try {
      parts.push_back(node ? g.map_to_homo_nid(AsIds(per, what), type)
                           : g.map_to_homo_eid(AsIds(per, what), type));
    } catch (const Error& e) {
      throw Error(fmt::format("{}: {}", what, e.what()));
    }
  }
  return parts.empty() ? torch::empty({0}, torch::kInt64) : torch::cat(parts);
}

// Sampled edges in homogeneous ids -> per relation, in per-type ids.
TypedSubgraph ToTyped(const PartitionBook& book, const sampling::SampledEdges& edges) {
  const int R = book.num_etypes();
  TypedSubgraph out;
  out.canonical_etypes = book.etypes();
  std::vector<std::vector<int64_t>> src(R), dst(R), eid(R);
  for (size_t i = 0; i < edges.size(); ++i) {
    auto [r, e] = book.MapToPerEtype(edges.eid[i]);
    src[r].push_back(book.MapToPerNtype(edges.src[i]).second);
    dst[r].push_back(book.MapToPerNtype(edges.dst[i]).second);
    eid[r].push_back(e);
  }
  for (int r = 0; r < R; ++r) {
    out.edges.push_back(
        {Owned(std::move(src[r])), Owned(std::move(dst[r])), Owned(std::move(eid[r]))});
  }
  return out;
}

}  // namespace

Subgraph sample_neighbors(const DistGraph& g, const torch::Tensor& seeds, int64_t fanout,
                          const SampleOptions& options) {
  return ToSubgraph(SampleHomo(g, AsIds(seeds, "sample_neighbors"), fanout, {}, options));
}

Subgraph sample_neighbors(const DistGraph& g, const torch::Tensor& seeds, const FanoutMap& fanout,
                          const SampleOptions& options) {
  std::vector<int64_t> per = RelationFanouts(g.partition_book(), fanout, "sample_neighbors");
  return ToSubgraph(SampleHomo(g, AsIds(seeds, "sample_neighbors"), -1, std::move(per), options));
}

TypedSubgraph sample_neighbors(const DistGraph& g,
                               const std::map<std::string, torch::Tensor>& seeds, int64_t fanout,
                               const SampleOptions& options) {
  sampling::SampledEdges edges =
      SampleHomo(g, HomoIds(g, seeds, true, "sample_neighbors"), fanout, {}, options);
  return ToTyped(g.partition_book(), edges);
}

TypedSubgraph sample_neighbors(const DistGraph& g,
                               const std::map<std::string, torch::Tensor>& seeds,
                               const FanoutMap& fanout, const SampleOptions& options) {
  std::vector<int64_t> per = RelationFanouts(g.partition_book(), fanout, "sample_neighbors");
  sampling::SampledEdges edges =
      SampleHomo(g, HomoIds(g, seeds, true, "sample_neighbors"), -1, std::move(per), options);
  return ToTyped(g.partition_book(), edges);
}

const Subgraph& TypedSubgraph::operator[](const std::string& etype) const {
  int r = ValueOrThrow(FindEdgeType(canonical_etypes, etype), "TypedSubgraph");
  return edges[r];
}

int64_t TypedSubgraph::num_edges() const {
  int64_t n = 0;
  for (const Subgraph& e : edges) n += e.num_edges();
  return n;
}

Subgraph in_subgraph(const DistGraph& g, const torch::Tensor& nodes) {
  return sample_neighbors(g, nodes, -1, {.seed = 0});
}

EdgeSubgraph edge_subgraph(const DistGraph& g, const torch::Tensor& eids) {
  torch::Tensor flat = AsIds(eids, "edge_subgraph");
  auto [src, dst] = g.find_edges(flat);
  torch::Tensor nodes = std::get<0>(torch::_unique(torch::cat({src, dst}), /*sorted=*/true));
  return {torch::searchsorted(nodes, src), torch::searchsorted(nodes, dst), nodes, flat};
}

std::pair<torch::Tensor, torch::Tensor> DistGraph::find_edges(const torch::Tensor& eids,
                                                              const std::string& etype) const {
  auto [src, dst] = find_edges(map_to_homo_eid(AsIds(eids, "find_edges"), etype));
  return {map_to_per_ntype(src).second, map_to_per_ntype(dst).second};
}

namespace {

// Degrees of one relation, counted by the servers (per-type node ids of the
// relation's destination type for in-degrees, source type for out-degrees).
torch::Tensor RelationDegrees(const DistGraph& g, const torch::Tensor& nids,
                              const std::string& etype, sampling::EdgeDir dir) {
  const bool in = dir == sampling::EdgeDir::kIn;
  const char* what = in ? "in_degrees" : "out_degrees";
  const int r = g.get_etype_id(etype);
  const EdgeType& et = g.partition_book().etypes()[r];
  const std::string& ntype = in ? et.dst_type : et.src_type;
  torch::Tensor ids = nids.defined() ? AsIds(nids, what) : torch::arange(g.num_nodes(ntype));
  torch::Tensor homo = g.map_to_homo_nid(ids, ntype).contiguous();
  torch::Tensor out = torch::empty({homo.size(0)}, torch::kInt64);
  ThrowIfError(g.store().graph().Degrees(SpanOf(homo), dir, r, out.data_ptr<int64_t>()), what);
  return out;
}

}  // namespace

torch::Tensor DistGraph::in_degrees(const torch::Tensor& nids, const std::string& etype) const {
  return RelationDegrees(*this, nids, etype, sampling::EdgeDir::kIn);
}

torch::Tensor DistGraph::out_degrees(const torch::Tensor& nids, const std::string& etype) const {
  return RelationDegrees(*this, nids, etype, sampling::EdgeDir::kOut);
}

// ------------------------------------------------------------ blocks

torch::Tensor Block::Relation::edge_dst() const {
  torch::Tensor counts = indptr.slice(0, 1) - indptr.slice(0, 0, -1);
  return torch::repeat_interleave(torch::arange(indptr.size(0) - 1), counts);
}

namespace {

// A type by name, "" being the only one.
int NamedType(const std::vector<std::string>& ntypes, const std::string& ntype, const char* what) {
  if (!ntype.empty()) return ValueOrThrow(FindNodeType(ntypes, ntype), what);
  if (ntypes.size() != 1) {
    throw Error(fmt::format("{}: {} node types ({}): name one", what, ntypes.size(),
                            fmt::join(ntypes, ", ")));
  }
  return 0;
}

// A relation by name (plain or "src:rel:dst"), "" being the only one.
int NamedRelation(const std::vector<EdgeType>& etypes, const std::string& etype, const char* what) {
  if (!etype.empty()) return ValueOrThrow(FindEdgeType(etypes, etype), what);
  if (etypes.size() != 1) {
    throw Error(fmt::format("{}: {} relations: name one", what, etypes.size()));
  }
  return 0;
}

// A sampled block with the book's names; an untyped block of a typed
// graph has one type "_N" and one relation ("_N", "_E", "_N").
Block ToTorch(const PartitionBook& book, sampling::Block&& b) {
  Block out;
  if (b.typed() || book.is_homogeneous()) {
    out.ntypes = book.ntypes();
    out.canonical_etypes = book.etypes();
  } else {
    out.ntypes = {"_N"};
    out.canonical_etypes = {{"_N", "_E", "_N"}};
  }
  for (int t = 0; t < b.num_ntypes(); ++t) {
    out.src_nodes.push_back(Owned(std::move(b.src_nodes[t])));
    out.dst_counts.push_back(b.num_dst(t));
    out.homo_src_nodes.push_back(b.typed() ? Owned(std::move(b.homo_src_nodes[t]))
                                           : out.src_nodes[t]);
  }
  for (sampling::BlockEdges& e : b.edges) {
    out.edges.push_back({e.src_type, e.dst_type, Owned(std::move(e.indptr)),
                         Owned(std::move(e.indices)), Owned(std::move(e.eids))});
  }
  return out;
}

std::vector<Block> ToTorch(const PartitionBook& book, std::vector<sampling::Block>&& blocks) {
  std::vector<Block> out;
  out.reserve(blocks.size());
  for (sampling::Block& b : blocks) out.push_back(ToTorch(book, std::move(b)));
  return out;
}

}  // namespace

Block Block::Untyped(torch::Tensor src_nodes, torch::Tensor indptr, torch::Tensor indices,
                     torch::Tensor eids) {
  const int64_t num_dst = indptr.dim() == 1 ? indptr.size(0) - 1 : -1;
  if (src_nodes.dim() != 1 || num_dst < 0 || num_dst > src_nodes.size(0) || indices.dim() != 1 ||
      eids.sizes() != indices.sizes()) {
    throw Error(fmt::format(
        "Block::Untyped: {} sources, indptr of shape {}, {} indices and {} edge ids do not make "
        "a block",
        fmt::join(src_nodes.sizes(), "x"), fmt::join(indptr.sizes(), "x"),
        fmt::join(indices.sizes(), "x"), fmt::join(eids.sizes(), "x")));
  }
  Block b;
  b.ntypes = {"_N"};
  b.canonical_etypes = {{"_N", "_E", "_N"}};
  b.src_nodes = {src_nodes};
  b.dst_counts = {num_dst};
  b.homo_src_nodes = {std::move(src_nodes)};
  b.edges = {{0, 0, std::move(indptr), std::move(indices), std::move(eids)}};
  return b;
}

int Block::ntype_id(const std::string& ntype) const { return NamedType(ntypes, ntype, "Block"); }

int Block::etype_id(const std::string& etype) const {
  return NamedRelation(canonical_etypes, etype, "Block");
}

int64_t Block::num_src_nodes(const std::string& ntype) const {
  return src_nodes[ntype_id(ntype)].size(0);
}

int64_t Block::num_dst_nodes(const std::string& ntype) const { return dst_counts[ntype_id(ntype)]; }

torch::Tensor Block::dst_nodes(const std::string& ntype) const {
  const int t = ntype_id(ntype);
  return src_nodes[t].slice(0, 0, dst_counts[t]);
}

int64_t Block::num_edges() const {
  int64_t n = 0;
  for (const Relation& r : edges) n += r.num_edges();
  return n;
}

int64_t Block::num_edges(const std::string& etype) const { return edges_of(etype).num_edges(); }

const Block::Relation& Block::edges_of(const std::string& etype) const {
  return edges[etype_id(etype)];
}

int64_t PairGraph::num_nodes(const std::string& ntype) const {
  return nodes[NamedType(ntypes, ntype, "PairGraph")].size(0);
}

int64_t PairGraph::num_edges() const {
  int64_t n = 0;
  for (const Relation& r : edges) n += r.src.size(0);
  return n;
}

int64_t PairGraph::num_edges(const std::string& etype) const { return edges_of(etype).src.size(0); }

const PairGraph::Relation& PairGraph::edges_of(const std::string& etype) const {
  return edges[NamedRelation(canonical_etypes, etype, "PairGraph")];
}

// ------------------------------------------------------------ loaders

struct ContextAccess {
  static kvstore::Services* Store(const Context& ctx) { return ctx.store_.get(); }
};

namespace internal {

std::shared_ptr<const loader::EpochPlan> MakePlan(std::vector<int64_t> items,
                                                  const LoaderOptions& options) {
  std::shared_ptr<Context> ctx = CurrentContext();
  loader::BatchOptions batch{.batch_size = options.batch_size,
                             .shuffle = options.shuffle,
                             .drop_last = options.drop_last,
                             .seed = options.seed};
  if (options.batch_size < 1) {
    throw Error(fmt::format("loader: batch_size must be at least 1, got {}", options.batch_size));
  }
  int64_t batches = loader::EpochPlan::OwnBatches(static_cast<int64_t>(items.size()), batch);
  kvstore::Services* store = ContextAccess::Store(*ctx);
  if (options.even_batches && !ctx->standalone() && store != nullptr) {
    int64_t own = batches;
    batches = ValueOrThrow(store->job().BarrierMax(own),
                           "loader: agreeing on the batches per epoch with the other trainers");
    if (batches != own) {
      spdlog::info("loader: {} batches of my own, {} per epoch like every trainer (padded)", own,
                   batches);
    }
  }
  return std::make_shared<const loader::EpochPlan>(
      ValueOrThrow(loader::EpochPlan::Create(std::move(items), batch, batches), "loader"));
}

int ResolveWorkers(const LoaderOptions& options) {
  // Threads past the cores only wait; thousands exhaust the address space.
  constexpr int kMaxWorkers = 1024;
  if (options.num_workers > kMaxWorkers) {
    throw Error(fmt::format("loader: num_workers must be at most {} sampler threads, got {}",
                            kMaxWorkers, options.num_workers));
  }
  if (options.num_workers >= 0) return options.num_workers;
  return CurrentContext()->num_samplers();
}

}  // namespace internal

namespace {

// The batches of `plan`: batch b of epoch e is make(its ids, its seed), the
// same whichever thread samples it.
template <typename T, typename Make>
std::function<typename loader::Pipeline<T>::Produce(int64_t)> EpochBatches(
    std::shared_ptr<const loader::EpochPlan> plan, Make make) {
  return [plan, make](int64_t epoch) -> typename loader::Pipeline<T>::Produce {
    auto order = std::make_shared<const std::vector<int64_t>>(plan->Order(epoch));
    return [plan, make, order, epoch](int64_t b) -> StatusOr<T> {
      return make(plan->Batch(*order, b), plan->BatchSeed(epoch, b));
    };
  };
}

}  // namespace

// The node tensors a loader's sampler threads pull for each batch: the
// sampler's, looked up when the loader is made (an unknown name is an Error
// then, not in a sampler thread), and those add_prefetch adds while batches
// are being sampled.
struct internal::Prefetch {
  struct Entry {
    std::string name;
    DistTensor tensor;
    bool label;        // At the seeds (dstdata), else at the input nodes (srcdata).
    bool best_effort;  // Added by add_prefetch: a failed pull drops it, not the batch.
  };
  DistGraph g;
  mutable std::mutex mutex;
  std::vector<Entry> entries;          // Guarded by mutex.
  const char* typed_loader = nullptr;  // Non-null: the loader's blocks are typed, no prefetching.

  void Add(const std::string& name, bool label, bool best_effort) {
    if (typed_loader != nullptr) {
      throw Error(fmt::format(
          "{}: prefetching works on untyped loaders only for now; pull the typed rows in the "
          "training loop",
          typed_loader));
    }
    DistTensor t = g.ndata(name);
    std::lock_guard<std::mutex> lock(mutex);
    for (const Entry& e : entries) {
      if (e.name == name && e.label == label) return;
    }
    entries.push_back({name, std::move(t), label, best_effort});
  }

  void Remove(const std::string& name) {
    std::lock_guard<std::mutex> lock(mutex);
    std::erase_if(entries, [&](const Entry& e) { return e.name == name; });
  }
};

namespace {

// `typed_loader`: the name of a loader of typed blocks (which refuses
// prefetching), or null.
std::shared_ptr<internal::Prefetch> PrefetchOf(const DistGraph& g, const NeighborSampler& sampler,
                                               const char* typed_loader) {
  auto p = std::make_shared<internal::Prefetch>(g);
  p->typed_loader = typed_loader;
  for (const std::string& name : sampler.prefetch_node_feats) p->Add(name, false, false);
  for (const std::string& name : sampler.prefetch_labels) p->Add(name, true, false);
  return p;
}

// Pulls the prefetched rows (in a sampler thread): input nodes' into the
// first block's srcdata, the seeds' into the last block's dstdata. A
// best-effort entry whose pull fails (its tensor deleted, say) is dropped
// with a warning; the trainer then pulls it itself.
Status PullPrefetched(internal::Prefetch& p, std::vector<Block>& blocks) {
  std::vector<internal::Prefetch::Entry> entries;
  {
    std::lock_guard<std::mutex> lock(p.mutex);
    entries = p.entries;
  }
  for (const internal::Prefetch::Entry& e : entries) {
    try {
      if (e.label) {
        blocks.back().dstdata[e.name] = e.tensor[blocks.back().dst_nodes()];
      } else {
        blocks.front().srcdata[e.name] = e.tensor[blocks.front().src_nodes[0]];
      }
    } catch (const std::exception& error) {
      if (!e.best_effort) {
        return absl::UnavailableError(
            fmt::format("prefetching node data '{}': {}", e.name, error.what()));
      }
      spdlog::warn("loader: no longer prefetching '{}': {}", e.name, error.what());
      p.Remove(e.name);
    }
  }
  return absl::OkStatus();
}

}  // namespace

namespace {

// The batches of a node loader over global seed ids.
std::function<loader::Pipeline<MiniBatch>::Produce(int64_t)> NodeBatches(
    const DistGraph& g, std::shared_ptr<const loader::EpochPlan> plan,
    std::shared_ptr<const loader::NeighborSpec> spec,
    std::shared_ptr<internal::Prefetch> prefetch) {
  auto make = [g, spec, prefetch](std::vector<int64_t> seeds,
                                  uint64_t seed) -> StatusOr<MiniBatch> {
    ASSIGN_OR_RETURN(loader::MiniBatch mb,
                     loader::SampleBlocks(g.store().graph(), std::move(seeds), *spec, seed));
    MiniBatch out;
    out.blocks = ToTorch(g.partition_book(), std::move(mb.blocks));
    out.input_nodes = out.blocks.front().src_nodes;  // The same tensors, no copy.
    const Block& last = out.blocks.back();
    for (size_t t = 0; t < last.src_nodes.size(); ++t) {
      out.seeds.push_back(last.src_nodes[t].slice(0, 0, last.dst_counts[t]));
    }
    RETURN_IF_ERROR(PullPrefetched(*prefetch, out.blocks));
    return out;
  };
  return EpochBatches<MiniBatch>(std::move(plan), std::move(make));
}

}  // namespace

DistNodeDataLoader::DistNodeDataLoader(const DistGraph& g, const torch::Tensor& nids,
                                       NeighborSampler sampler, LoaderOptions options) {
  loader::NeighborSpec spec = SpecOf(sampler, g.store());
  spec.typed = false;
  auto plan = internal::MakePlan(ToVector(nids, "DistNodeDataLoader nids"), options);
  prefetch_ = PrefetchOf(g, sampler, nullptr);
  Init(plan->num_batches(), options,
       NodeBatches(g, plan, std::make_shared<const loader::NeighborSpec>(std::move(spec)),
                   prefetch_));
}

DistNodeDataLoader::DistNodeDataLoader(const DistGraph& g, const TypedIds& nids,
                                       NeighborSampler sampler, LoaderOptions options) {
  const char* what = "DistNodeDataLoader with typed seeds";
  loader::NeighborSpec spec = SpecOf(sampler, g.store());
  if (spec.dir != sampling::EdgeDir::kIn && !g.partition_book().is_homogeneous()) {
    throw Error(fmt::format(
        "{}: edge_dir must be \"in\" (for out-edges, sample the reverse relations)", what));
  }
  if (nids.empty()) throw Error(fmt::format("{}: no seed types given", what));
  auto plan = internal::MakePlan(
      ToVector(HomoIds(g, nids, true, "DistNodeDataLoader nids"), "DistNodeDataLoader nids"),
      options);
  prefetch_ = PrefetchOf(g, sampler, what);
  Init(plan->num_batches(), options,
       NodeBatches(g, plan, std::make_shared<const loader::NeighborSpec>(std::move(spec)),
                   prefetch_));
}

void DistNodeDataLoader::add_prefetch(const std::string& name, bool labels) {
  prefetch_->Add(name, labels, /*best_effort=*/true);
}

void DistNodeDataLoader::remove_prefetch(const std::string& name) { prefetch_->Remove(name); }

namespace {

// reverse_id per relation (DGL's dict) as one homogeneous reverse per edge;
// the edges of relations not given are their own reverse (excluded anyway).
std::vector<int64_t> TypedReverseEids(const PartitionBook& book,
                                      const std::map<std::string, torch::Tensor>& typed,
                                      const std::string& what) {
  std::vector<int64_t> out(static_cast<size_t>(book.num_edges()));
  for (int64_t e = 0; e < book.num_edges(); ++e) out[e] = e;
  std::set<int> given;
  for (const auto& [etype, ids] : typed) {
    const int r = ValueOrThrow(book.EdgeTypeId(etype), what + " reverse_eids");
    const std::string name = book.etypes()[r].Canonical();
    if (!given.insert(r).second) {
      throw Error(fmt::format("{} reverse_eids: relation {} is given twice", what, name));
    }
    std::vector<int64_t> reverse = ToVector(ids, what + " reverse_eids");
    const int64_t count = book.NumEdgesOfType(r);
    if (static_cast<int64_t>(reverse.size()) != count) {
      throw Error(
          fmt::format("{} reverse_eids of relation {}: {} entries, the relation has {} edges", what,
                      name, reverse.size(), count));
    }
    for (int64_t i = 0; i < count; ++i) {
      if (reverse[i] < 0 || reverse[i] >= count) {
        throw Error(
            fmt::format("{} reverse_eids of relation {}: entry {} is {}, not an edge id of "
                        "the relation (0 to {})",
                        what, name, i, reverse[i], count - 1));
      }
      out[book.MapToHomoEid(r, i)] = book.MapToHomoEid(r, reverse[i]);
    }
  }
  return out;
}

loader::EdgeSpec EdgeSpecOf(const DistGraph& g, const NeighborSampler& sampler,
                            const EdgeLoaderOptions& options, const std::string& what) {
  const PartitionBook& book = g.partition_book();
  loader::EdgeSpec spec;
  spec.neighbors = SpecOf(sampler, g.store());
  spec.negatives = options.negatives;
  const std::string& ex = options.exclude;
  if (ex == "none" || ex.empty()) {
    spec.exclude = loader::Exclude::kNone;
  } else if (ex == "self") {
    spec.exclude = loader::Exclude::kSelf;
  } else if (ex == "reverse_id") {
    spec.exclude = loader::Exclude::kReverseId;
  } else if (ex == "reverse_types") {
    spec.exclude = loader::Exclude::kReverseTypes;
  } else {
    throw Error(fmt::format(
        "{}: exclude must be \"none\", \"self\", \"reverse_id\" or \"reverse_types\", got \"{}\"",
        what, ex));
  }
  if (options.reverse_eids.defined() && !options.typed_reverse_eids.empty()) {
    throw Error(fmt::format("{}: give reverse_eids or per-relation reverse_eids, not both", what));
  }
  if (options.reverse_eids.defined()) {
    spec.reverse_eids = ToVector(options.reverse_eids, what + " reverse_eids");
  } else if (!options.typed_reverse_eids.empty()) {
    spec.reverse_eids = TypedReverseEids(book, options.typed_reverse_eids, what);
  }
  if (!options.reverse_etypes.empty()) {
    spec.reverse_etypes.assign(book.num_etypes(), -1);
    for (const auto& [etype, reverse] : options.reverse_etypes) {
      const int r = ValueOrThrow(book.EdgeTypeId(etype), what + " reverse_etypes");
      if (spec.reverse_etypes[r] != -1) {
        throw Error(fmt::format("{} reverse_etypes: relation {} is given twice", what,
                                book.etypes()[r].Canonical()));
      }
      spec.reverse_etypes[r] = ValueOrThrow(book.EdgeTypeId(reverse), what + " reverse_etypes");
    }
  }
  ThrowIfError(loader::ValidateEdgeSpec(spec, book), what);
  return spec;
}

}  // namespace

namespace {

// A batch's pair graph over the last block's destinations; positive: with
// the edge ids.
PairGraph PairGraphOf(const Block& last, std::vector<loader::PairEdges>&& pairs, bool positive) {
  PairGraph out;
  out.ntypes = last.ntypes;
  out.canonical_etypes = last.canonical_etypes;
  for (size_t t = 0; t < last.src_nodes.size(); ++t) {
    out.nodes.push_back(last.src_nodes[t].slice(0, 0, last.dst_counts[t]));
  }
  for (loader::PairEdges& p : pairs) {
    out.edges.push_back({Owned(std::move(p.src)), Owned(std::move(p.dst)),
                         positive ? Owned(std::move(p.eids)) : torch::empty({0}, torch::kInt64)});
  }
  return out;
}

// The batches of an edge loader over global edge ids.
std::function<loader::Pipeline<EdgeMiniBatch>::Produce(int64_t)> EdgeBatches(
    const DistGraph& g, std::shared_ptr<const loader::EpochPlan> plan,
    std::shared_ptr<const loader::EdgeSpec> spec, std::shared_ptr<internal::Prefetch> prefetch) {
  auto make = [g, spec, prefetch](std::vector<int64_t> eids,
                                  uint64_t seed) -> StatusOr<EdgeMiniBatch> {
    ASSIGN_OR_RETURN(loader::EdgeBatch eb,
                     loader::SampleEdgeBatch(g.store().graph(), eids, *spec, seed));
    EdgeMiniBatch out;
    out.eids = Owned(std::move(eb.eids));
    out.blocks = ToTorch(g.partition_book(), std::move(eb.mini.blocks));
    out.input_nodes = out.blocks.front().src_nodes;
    out.positive = PairGraphOf(out.blocks.back(), std::move(eb.positive), true);
    out.negative = PairGraphOf(out.blocks.back(), std::move(eb.negative), false);
    RETURN_IF_ERROR(PullPrefetched(*prefetch, out.blocks));
    return out;
  };
  return EpochBatches<EdgeMiniBatch>(std::move(plan), std::move(make));
}

}  // namespace

DistEdgeDataLoader::DistEdgeDataLoader(const DistGraph& g, const torch::Tensor& eids,
                                       NeighborSampler sampler, LoaderOptions options,
                                       EdgeLoaderOptions edge_options) {
  const std::string what = "DistEdgeDataLoader";
  loader::EdgeSpec spec = EdgeSpecOf(g, sampler, edge_options, what);
  spec.neighbors.typed = false;
  std::vector<int64_t> ids = ToVector(eids, what + " eids");
  if (spec.exclude == loader::Exclude::kReverseId && !edge_options.typed_reverse_eids.empty()) {
    // Per-relation reverse_eids must cover every relation of the batches
    // (a relation left out would silently be its own reverse).
    const PartitionBook& book = g.partition_book();
    std::vector<bool> reversed(book.num_etypes(), false);
    for (const auto& [etype, unused] : edge_options.typed_reverse_eids) {
      reversed[ValueOrThrow(book.EdgeTypeId(etype), what)] = true;
    }
    for (int64_t e : ids) {
      if (e < 0 || e >= book.num_edges()) continue;  // Refused by the batches.
      const int r = book.MapToPerEtype(e).first;
      if (!reversed[r]) {
        throw Error(
            fmt::format("{}: exclude reverse_id: relation {} (of edge {}) has no "
                        "reverse_eids",
                        what, book.etypes()[r].Canonical(), e));
      }
    }
  }
  auto plan = internal::MakePlan(std::move(ids), options);
  Init(plan->num_batches(), options,
       EdgeBatches(g, plan, std::make_shared<const loader::EdgeSpec>(std::move(spec)),
                   PrefetchOf(g, sampler, nullptr)));
}

DistEdgeDataLoader::DistEdgeDataLoader(const DistGraph& g, const TypedIds& eids,
                                       NeighborSampler sampler, LoaderOptions options,
                                       EdgeLoaderOptions edge_options) {
  const std::string what = "DistEdgeDataLoader";
  const PartitionBook& book = g.partition_book();
  auto prefetch = PrefetchOf(g, sampler, "DistEdgeDataLoader with typed edges");
  loader::EdgeSpec spec = EdgeSpecOf(g, sampler, edge_options, what);
  if (spec.neighbors.dir != sampling::EdgeDir::kIn && !book.is_homogeneous()) {
    throw Error(what +
                " with typed eids: edge_dir must be \"in\" (for out-edges, sample the "
                "reverse relations)");
  }
  if (eids.empty()) throw Error(what + ": no relations given");
  // Every relation of the batches needs its reverse.
  std::set<int> reversed;
  for (const auto& [etype, ids] : edge_options.typed_reverse_eids) {
    reversed.insert(ValueOrThrow(book.EdgeTypeId(etype), what));
  }
  for (const auto& [etype, ids] : eids.items()) {
    const int r = ValueOrThrow(book.EdgeTypeId(etype), what + " eids");
    const std::string name = book.etypes()[r].Canonical();
    if (spec.exclude == loader::Exclude::kReverseTypes && spec.reverse_etypes[r] < 0) {
      throw Error(
          fmt::format("{}: exclude reverse_types: relation {} has no reverse in "
                      "reverse_etypes",
                      what, name));
    }
    if (spec.exclude == loader::Exclude::kReverseId && !edge_options.typed_reverse_eids.empty() &&
        !reversed.count(r)) {
      throw Error(
          fmt::format("{}: exclude reverse_id: relation {} has no reverse_eids", what, name));
    }
  }
  auto plan = internal::MakePlan(ToVector(HomoIds(g, eids, false, what + " eids"), what + " eids"),
                                 options);
  Init(plan->num_batches(), options,
       EdgeBatches(g, plan, std::make_shared<const loader::EdgeSpec>(std::move(spec)),
                   std::move(prefetch)));
}

}  // namespace tessera::dist
