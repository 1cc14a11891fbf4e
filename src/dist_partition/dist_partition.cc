// DistPartitionGraph (dist_partition.h): the steps in order, each ended by an
// agreement of all ranks, with progress and every rank's peak memory logged
// by rank 0.
#include "src/dist_partition/dist_partition.h"

#include <numeric>

#include "spdlog/spdlog.h"
#include "src/dist_partition/dist_internal.h"
#include "src/graph/reader_util.h"
#include "src/partition/partition_util.h"
#include "tessera/base/file.h"
#include "tessera/base/resource.h"
#include "tessera/base/strings.h"
#include "tessera/base/time.h"
#include "tessera/partition/partition_config.h"

namespace tessera::dist_partition {
namespace {

using internal::Layout;
using internal::LocalGraph;
using internal::Shuffled;

Status CheckArguments(const ChunkedGraph& g, const std::string& graph_name, int num_parts,
                      int num_ranks, const DistPartitionOptions& o) {
  auto bad = [](auto&&... parts) { return absl::InvalidArgumentError(StrCat(parts...)); };
  RETURN_IF_ERROR(CheckPartitionArguments(graph_name, g.num_nodes(), g.num_edges(), num_parts, o,
                                          g.metadata_path));
  if (o.num_trainers_per_machine > 1) {
    for (bool node : {true, false}) {
      for (const auto& arrays : node ? g.node_data : g.edge_data) {
        for (const ChunkedArray& a : arrays) {
          if (a.name == "trainer_id") {
            return bad("the input already has ", node ? "a node" : "an edge",
                       " array 'trainer_id', which num_trainers_per_machine > 1 would overwrite");
          }
        }
      }
    }
  }
  if (num_parts % num_ranks != 0) {
    return bad("num_parts (", num_parts, ") must be a multiple of the number of ranks (", num_ranks,
               "): each rank writes num_parts / ranks parts");
  }
  return absl::OkStatus();
}

// Rank 0 prepares the output folder as PartitionGraph does (no config of
// this graph stays until every part is written, none of another graph is
// overwritten); every rank creates it (the ranks may not share a file
// system).
// Rank 0 holds the folder's lock (`lock`) until the run ends.
Status PrepareOutput(Comm& comm, const std::string& out_path, const std::string& config_path,
                     int num_parts, OutputLock* lock) {
  Status st = Annotate(MakeDirs(out_path), "output folder");
  if (comm.rank() == 0) {
    StatusOr<OutputLock> locked = PrepareOutputFolder(out_path, config_path, num_parts);
    st = locked.status();
    if (locked.ok()) *lock = *std::move(locked);
  }
  return Agree(comm, st);
}

// part_method metis: the graph contracted by label propagation until it has
// o.coarsening times fewer arcs (PT-Scotch's memory per arc is the step's
// peak), PT-Scotch's k-way on the coarsest graph, its parts projected back
// and refined on every finer level, then the balance of every class.
// Consumes `edges`: BuildAdjacency frees them once their half edges are
// placed (the reshuffle reads them again), so that the step does not hold
// them too.
StatusOr<std::vector<int32_t>> MultilevelParts(Comm& comm, const ChunkedGraph& g,
                                               const Layout& layout, EdgeSlice& edges,
                                               const DistPartitionOptions& o) {
  constexpr int kMaxLevels = 8;
  // No cluster outweighs 1 / kClustersPerPart of a part. Larger clusters
  // snowball: on the 600k-node SBM graph of bench/README.md a cap of 1/32
  // of a part left a few clusters at the cap, across communities, and a
  // cut of 1.7x serial METIS's; 1/128 and 1/256 gave METIS's cut.
  constexpr int64_t kClustersPerPart = 256;
  StatusOr<internal::Adjacency> built = internal::BuildAdjacency(comm, layout, std::move(edges));
  RETURN_IF_ERROR(Agree(comm, built.status()));
  internal::Adjacency adjacency = std::move(*built);
  ASSIGN_OR_RETURN(internal::BalanceClasses classes,
                   internal::ClassesOf(comm, g, layout, o.balance_ntypes));
  // One weight for PT-Scotch and the clusters: nodes, or nodes and in-edges
  // with balance_edges (its interface balances a single weight).
  std::vector<int64_t> weight(adjacency.in_degree.size(), 1);
  if (o.balance_edges) {
    for (size_t i = 0; i < weight.size(); ++i) weight[i] += adjacency.in_degree[i];
  }
  ASSIGN_OR_RETURN(const int64_t input_arcs,
                   AllSum(comm, static_cast<int64_t>(adjacency.adjncy.size())));
  ASSIGN_OR_RETURN(const int64_t total_weight,
                   AllSum(comm, std::accumulate(weight.begin(), weight.end(), int64_t{0})));
  // (On small graphs, at least kMinClusterNodes average nodes: clusters of
  // one node would contract nothing.)
  constexpr int64_t kMinClusterNodes = 8;
  // (And at most half a part, so that the parts can be balanced.)
  const int64_t half_part = total_weight / (2 * int64_t{layout.num_parts});
  const int64_t max_cluster_weight = std::max<int64_t>(
      1, std::min(half_part, std::max(total_weight / (int64_t{layout.num_parts} * kClustersPerPart),
                                      kMinClusterNodes * total_weight /
                                          std::max<int64_t>(1, layout.home.back()))));
  // The levels, finest first: level l's graph, layout and weights are
  // levels[l - 1]'s coarse ones (level 0: the input's).
  std::vector<internal::Coarse> levels;
  auto layout_of = [&](size_t l) -> const Layout& {
    return l == 0 ? layout : levels[l - 1].layout;
  };
  auto graph_of = [&](size_t l) -> internal::Adjacency& {
    return l == 0 ? adjacency : levels[l - 1].graph;
  };
  auto weight_of = [&](size_t l) -> std::span<const int64_t> {
    return l == 0 ? weight : levels[l - 1].weight;
  };
  int64_t arcs = input_arcs, nodes = layout.home.back();
  // Contraction costs some cut (label propagation is a cruder coarsening
  // than PT-Scotch's matchings): graphs PT-Scotch can take whole are not
  // contracted, nor contracted below coarsen_min_arcs arcs per rank.
  const double min_arcs = static_cast<double>(o.coarsen_min_arcs) * layout.num_ranks;
  while (o.coarsening > 1 && layout.num_parts > 1 &&
         static_cast<double>(arcs) * o.coarsening > static_cast<double>(input_arcs) &&
         static_cast<double>(arcs) > min_arcs && levels.size() < kMaxLevels) {
    const size_t l = levels.size();
    ASSIGN_OR_RETURN(internal::Coarse coarse,
                     internal::Coarsen(comm, layout_of(l), graph_of(l), weight_of(l),
                                       max_cluster_weight, o.seed + l));
    const int64_t coarse_nodes = coarse.layout.home.back();
    ASSIGN_OR_RETURN(const int64_t coarse_arcs,
                     AllSum(comm, static_cast<int64_t>(coarse.graph.adjncy.size())));
    if (comm.rank() == 0) {
      spdlog::info("assign: level {}: {} nodes, {} arcs -> {} clusters, {} arcs", l + 1, nodes,
                   arcs, coarse_nodes, coarse_arcs);
    }
    if (coarse_nodes * 10 > nodes * 9) break;  // Under 10 % fewer nodes: not worth a level.
    levels.push_back(std::move(coarse));
    nodes = coarse_nodes;
    arcs = coarse_arcs;
  }
  const size_t top = levels.size();
  StatusOr<std::vector<int32_t>> parts = internal::ScotchParts(
      comm, layout_of(top), graph_of(top), top > 0 || o.balance_edges, weight_of(top), o.seed);
  RETURN_IF_ERROR(Agree(comm, parts.status()));
  int64_t refined = 0;
  for (size_t l = top; l-- > 0;) {
    ASSIGN_OR_RETURN(*parts, internal::Project(comm, levels[l], *parts));
    levels.pop_back();  // Level l + 1: no longer needed.
    ASSIGN_OR_RETURN(int64_t moves,
                     internal::RefineParts(comm, layout_of(l), graph_of(l), weight_of(l), *parts));
    refined += moves;
  }
  ASSIGN_OR_RETURN(int64_t moved,
                   internal::RepairBalance(comm, layout, adjacency, classes, *parts));
  if (comm.rank() == 0) {
    spdlog::info(
        "assign: PT-Scotch k-way into {} parts on {} nodes, {} arcs ({} contraction level{}, "
        "{} refinement moves); {} nodes moved to balance {} class{}",
        layout.num_parts, nodes, arcs, top, top == 1 ? "" : "s", refined, moved,
        classes.num_classes, classes.num_classes == 1 ? "" : "es");
  }
  return parts;
}

// Times the steps and records every rank's peak memory after each.
class Steps {
 public:
  Steps(Comm& comm, const DistPartitionOptions& o, DistPartitionResult* result)
      : comm_(comm), o_(o), result_(result) {}

  Status Start(const std::string& name) {
    name_ = name;
    watch_ = Stopwatch();
    if (comm_.rank() == 0) spdlog::info("{}: started ({} ranks)", name, comm_.size());
    return Agree(comm_, o_.on_step ? o_.on_step(comm_, name) : absl::OkStatus());
  }
  // Agrees on `local` and, if every rank succeeded, logs the step.
  Status End(const Status& local) {
    RETURN_IF_ERROR(Agree(comm_, local));
    DistPartitionResult::Step step{name_, watch_.Seconds(), {}};
    ASSIGN_OR_RETURN(step.peak_rss, AllGatherValue(comm_, PeakRssBytes()));
    if (comm_.rank() == 0) {
      std::vector<std::string> rss;
      for (int64_t b : step.peak_rss) rss.push_back(FormatBytes(b));
      spdlog::info("{}: done in {:.2f} s; peak RSS per rank: {}", name_, step.seconds,
                   StrJoin(rss, ", "));
    }
    result_->steps.push_back(std::move(step));
    return absl::OkStatus();
  }

 private:
  Comm& comm_;
  const DistPartitionOptions& o_;
  DistPartitionResult* result_;
  std::string name_;
  Stopwatch watch_;
};

// Every part's statistics (`mine`: this rank's parts'), on every rank.
StatusOr<std::vector<PartStats>> GatherStats(Comm& comm, const Layout& layout,
                                             const std::vector<PartStats>& mine) {
  constexpr int kFields = 5;
  std::vector<int64_t> fields;
  for (const PartStats& p : mine) {
    fields.insert(fields.end(),
                  {p.inner_nodes, p.halo_nodes, p.inner_edges, p.local_edges, p.cut_edges});
  }
  std::vector<int64_t> all(static_cast<size_t>(layout.num_parts) * kFields);
  RETURN_IF_ERROR(comm.AllGather(fields.data(), fields.size() * sizeof(int64_t), all.data()));
  std::vector<PartStats> stats(layout.num_parts);
  for (int p = 0; p < layout.num_parts; ++p) {
    const int64_t* f = &all[static_cast<size_t>(p) * kFields];
    stats[p] = {f[0], f[1], f[2], f[3], f[4]};
  }
  return stats;
}

PartitionConfig MakeConfig(const ChunkedGraph& g, const std::string& graph_name, int num_parts,
                           const DistPartitionOptions& o, const internal::IdLayout& ids,
                           const internal::ArrayNames& names) {
  PartitionConfig config = BaseConfig(graph_name, g.num_nodes(), g.num_edges(), num_parts, o);
  config.node_offsets = ids.node_offsets;
  config.edge_offsets = ids.edge_offsets;
  config.layout.ntypes = g.ntypes;
  for (const auto& rel : g.relations) config.layout.etypes.push_back(rel.type);
  config.layout.node_counts = ids.node_counts;
  config.layout.edge_counts = ids.edge_counts;
  config.node_feat_names = names.node;
  config.edge_feat_names = names.edge;
  return config;
}

}  // namespace

StatusOr<DistPartitionResult> DistPartitionGraph(Comm& comm, const std::string& input,
                                                 int num_parts, const std::string& out_path,
                                                 const DistPartitionOptions& o) {
  DistPartitionResult result;
  Steps steps(comm, o, &result);
  StatusOr<ChunkedGraph> g = ReadChunkedGraph(input);
  RETURN_IF_ERROR(Agree(comm, g.status()));
  const std::string graph_name = o.graph_name.empty() ? g->graph_name : o.graph_name;
  RETURN_IF_ERROR(Agree(comm, CheckArguments(*g, graph_name, num_parts, comm.size(), o)));
  // The node counts are the metadata's claim: this rank's share is checked
  // against memory before arrays of that size are made.
  const std::vector<int64_t> home = internal::EvenBounds(g->num_nodes(), comm.size());
  RETURN_IF_ERROR(
      Agree(comm, CheckClaimedNodes(g->metadata_path, home[comm.rank() + 1] - home[comm.rank()], 24,
                                    "this rank's node arrays (24 bytes per node)", 0)));
  const std::string config_path = StrCat(out_path, "/", graph_name, ".json");
  OutputLock lock;
  RETURN_IF_ERROR(PrepareOutput(comm, out_path, config_path, num_parts, &lock));

  Layout layout;
  layout.num_ranks = comm.size();
  layout.rank = comm.rank();
  layout.num_parts = num_parts;
  layout.home = home;
  layout.reads = internal::EvenBounds(g->num_edges(), comm.size());

  RETURN_IF_ERROR(steps.Start("read"));
  StatusOr<EdgeSlice> edges =
      ReadEdges(*g, layout.reads[layout.rank], layout.reads[layout.rank + 1]);
  RETURN_IF_ERROR(steps.End(edges.status()));

  RETURN_IF_ERROR(steps.Start("assign"));
  // Into num_parts * trainers sub-parts (as PartitionGraph); part = sub / T.
  const int trainers = o.num_trainers_per_machine;
  Layout sub_layout = layout;
  sub_layout.num_parts = num_parts * trainers;
  StatusOr<std::vector<int32_t>> home_part =
      o.part_method == PartMethod::kRandom
          ? RandomParts(o.seed, layout.home_begin(), layout.home_end(), sub_layout.num_parts)
          : MultilevelParts(comm, *g, sub_layout, *edges, o);
  std::vector<int32_t> home_trainer;
  if (home_part.ok() && trainers > 1) {
    home_trainer = *home_part;
    for (int32_t& p : *home_part) p /= trainers;
  }
  RETURN_IF_ERROR(steps.End(home_part.status()));

  RETURN_IF_ERROR(steps.Start("shuffle"));
  if (o.part_method == PartMethod::kMetis) {  // Freed for PT-Scotch; read again.
    edges = ReadEdges(*g, layout.reads[layout.rank], layout.reads[layout.rank + 1]);
    RETURN_IF_ERROR(Agree(comm, edges.status()));
  }
  StatusOr<Shuffled> shuffled =
      internal::Reshuffle(comm, *g, layout, std::move(*home_part), std::move(*edges));
  if (trainers > 1) {
    // (Every rank must agree the shuffle worked before the lookups.)
    Status spread = Agree(comm, shuffled.status());
    if (spread.ok()) {
      spread = Agree(comm, internal::SpreadTrainers(comm, layout, home_trainer, *shuffled));
    }
    internal::Free(home_trainer);
    if (!spread.ok()) shuffled = spread;
  }
  RETURN_IF_ERROR(steps.End(shuffled.status()));

  // From here on, a failure removes what this run wrote.
  std::vector<std::string> part_dirs;
  for (int p = layout.first_part(); p < layout.end_part(); ++p) {
    part_dirs.push_back(StrCat(out_path, "/part", p));
  }
  // Every failure below is agreed (each rank has it), so every rank cleans
  // up, and rank 0 keeps the folder's lock until all have: a run started
  // then cannot lose parts to this one's removals.
  auto cleanup = [&](const Status& st) {
    for (const std::string& dir : part_dirs) RemoveAll(dir).IgnoreError();
    if (comm.rank() == 0) {
      RemoveAll(out_path + "/orig_nids.npy").IgnoreError();
      RemoveAll(out_path + "/orig_eids.npy").IgnoreError();
      RemoveAll(config_path).IgnoreError();
    }
    Agree(comm, absl::OkStatus()).IgnoreError();
    return st;
  };
  const bool typed = g->ntypes.size() > 1 || g->relations.size() > 1;
  // Each part's graph is written as soon as it is built.
  if (Status started = steps.Start("halo"); !started.ok()) return cleanup(started);
  StatusOr<std::vector<PartStats>> mine = internal::BuildLocalGraphs(
      comm, layout, *shuffled, o.num_hops, [&](int p, const LocalGraph& graph) {
        const std::string& dir = part_dirs[p - layout.first_part()];
        RETURN_IF_ERROR(RemoveAll(dir));
        return internal::WriteLocalGraph(dir + "/graph", graph, shuffled->ids, typed);
      });
  if (Status st = steps.End(mine.status()); !st.ok()) return cleanup(st);
  // What the arrays and mappings do not need.
  internal::Free(shuffled->edges.in_ptr);
  internal::Free(shuffled->edges.src);
  internal::Free(shuffled->edges.eid);

  if (Status started = steps.Start("write"); !started.ok()) return cleanup(started);
  Status st;
  StatusOr<internal::ArrayNames> names =
      internal::WriteArrays(comm, *g, layout, *shuffled, part_dirs);
  if (!names.ok()) return cleanup(names.status());
  if (o.return_mapping) {
    st = internal::WriteMappings(comm, *shuffled, g->num_nodes(), g->num_edges(), out_path);
    if (!st.ok()) return cleanup(st);
  }
  StatusOr<std::vector<PartStats>> stats = GatherStats(comm, layout, *mine);
  if (!stats.ok()) return cleanup(stats.status());
  result.parts = *stats;
  for (const PartStats& part : result.parts) result.edge_cut += part.cut_edges;
  // The config last, once every rank has written its parts.
  st = steps.End(absl::OkStatus());
  if (!st.ok()) return cleanup(st);
  if (comm.rank() == 0) {
    st = WriteFileAtomic(config_path, PartitionConfigToJson(MakeConfig(*g, graph_name, num_parts, o,
                                                                       shuffled->ids, *names)));
  }
  if (st = Agree(comm, st); !st.ok()) return cleanup(st);
  result.config_path = config_path;
  if (comm.rank() == 0) {
    spdlog::info("edge cut: {} of {} edges ({:.2f}%)", result.edge_cut, g->num_edges(),
                 100.0 * result.edge_cut / g->num_edges());
  }
  return result;
}

}  // namespace tessera::dist_partition
