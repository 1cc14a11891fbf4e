#include "src/partition/partition.h"

#include <algorithm>
#include <map>

#include "spdlog/spdlog.h"
#include "src/base/logging.h"
#include "src/partition/metis_adapter.h"
#include "src/partition/part_writer.h"
#include "src/partition/partition_util.h"
#include "tessera/base/file.h"
#include "tessera/base/strings.h"
#include "tessera/partition/partition_config.h"

namespace tessera {

StatusOr<PartMethod> ParsePartMethod(const std::string& name) {
  if (name == "metis") return PartMethod::kMetis;
  if (name == "random") return PartMethod::kRandom;
  return absl::InvalidArgumentError(
      StrCat("unknown part_method '", name, "' (expected metis or random)"));
}

namespace {

constexpr int kMaxBalanceTypes = 64;

Status CheckArguments(const Graph& graph, const std::string& graph_name, int num_parts,
                      const PartitionOptions& o) {
  auto bad = [](auto&&... parts) { return absl::InvalidArgumentError(StrCat(parts...)); };
  RETURN_IF_ERROR(
      CheckPartitionArguments(graph_name, graph.num_nodes, graph.num_edges(), num_parts, o));
  if (o.metis_iterations < 1 || o.metis_cuts < 1) {
    return bad("METIS iterations and cuts must be >= 1");
  }
  if (o.objtype != "cut" && o.objtype != "vol") {
    return bad("objtype must be 'cut' or 'vol', got '", o.objtype, "'");
  }
  std::vector<const std::map<std::string, Array>*> node_arrays, edge_arrays;
  if (graph.is_hetero()) {
    for (const auto& arrays : graph.ntype_data) node_arrays.push_back(&arrays);
    for (const auto& arrays : graph.etype_data) edge_arrays.push_back(&arrays);
  } else {
    node_arrays = {&graph.node_data};
    edge_arrays = {&graph.edge_data};
  }
  for (const auto* arrays : node_arrays) {
    if (o.num_trainers_per_machine > 1 && arrays->count("trainer_id")) {
      return bad("the input already has a node array 'trainer_id', which ",
                 "num_trainers_per_machine > 1 would overwrite");
    }
  }
  for (const auto* arrays : edge_arrays) {
    if (o.num_trainers_per_machine > 1 && arrays->count("trainer_id")) {
      return bad("the input already has an edge array 'trainer_id', which ",
                 "num_trainers_per_machine > 1 would overwrite");
    }
  }
  for (const auto& list : {node_arrays, edge_arrays}) {
    for (const auto* arrays : list) {
      for (const auto& [name, array] : *arrays) {
        if (!SafeName(name)) return bad("array name '", name, "' is not a safe file name");
      }
    }
  }
  if (!o.balance_ntypes.empty()) {
    std::vector<std::string> names;
    bool found = false;
    for (size_t t = 0; t < node_arrays.size(); ++t) {
      for (const auto& [name, array] : *node_arrays[t]) {
        names.push_back(graph.is_hetero() ? graph.ntypes[t] + "/" + name : name);
        if (name != o.balance_ntypes) continue;
        found = true;
        if (array.ndim() != 1 || IsFloating(array.dtype())) {
          return bad("balance_ntypes: node array '", names.back(), "' is ", array.Describe(),
                     "; it must be a 1-D integer or bool array");
        }
      }
    }
    if (!found) {
      return bad("balance_ntypes: no node array named '", o.balance_ntypes,
                 "' (have: ", StrJoin(names, ", "), ")");
    }
  }
  return absl::OkStatus();
}

// The balance class of every node: with a balance array, one class per
// distinct value; on a heterograph one class per node type (DGL balances
// node types by default), split by the values of the balance array on the
// types that have it. Returns the number of classes.
StatusOr<int> BalanceClasses(const Graph& graph, const PartitionOptions& o,
                             std::vector<int32_t>* classes) {
  classes->assign(graph.num_nodes, 0);
  int num_classes = 0;
  for (int t = 0; t < graph.num_ntypes(); ++t) {
    const auto& arrays = graph.is_hetero() ? graph.ntype_data[t] : graph.node_data;
    const int64_t base = graph.is_hetero() ? graph.ntype_offsets[t] : 0;
    const int64_t end = graph.is_hetero() ? graph.ntype_offsets[t + 1] : graph.num_nodes;
    auto it = o.balance_ntypes.empty() ? arrays.end() : arrays.find(o.balance_ntypes);
    if (it == arrays.end()) {
      std::fill(classes->begin() + base, classes->begin() + end, num_classes++);
      continue;
    }
    ASSIGN_OR_RETURN(Array values, ToInt64Ids(it->second.Clone(), o.balance_ntypes, false));
    auto v = values.span<int64_t>();
    std::vector<int64_t> distinct(v.begin(), v.end());
    std::sort(distinct.begin(), distinct.end());
    distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
    if (num_classes + distinct.size() > kMaxBalanceTypes) {
      return absl::InvalidArgumentError(
          StrCat("balance_ntypes: '", o.balance_ntypes, "' makes more than ", kMaxBalanceTypes,
                 " balance classes (distinct values", graph.is_hetero() ? " per node type" : "",
                 "); at most ", kMaxBalanceTypes, " can be balanced"));
    }
    for (int64_t i = 0; i < end - base; ++i) {
      (*classes)[base + i] =
          num_classes +
          static_cast<int32_t>(std::lower_bound(distinct.begin(), distinct.end(), v[i]) -
                               distinct.begin());
    }
    num_classes += static_cast<int>(distinct.size());
  }
  return num_classes;
}

// Row-major vertex weights for METIS: one indicator column per balance class,
// then (with balance_edges) one in-degree column per class.
StatusOr<MetisOptions> BalanceWeights(const Graph& graph, const PartitionOptions& o) {
  MetisOptions metis;
  std::vector<int32_t> classes;
  ASSIGN_OR_RETURN(int num_classes, BalanceClasses(graph, o, &classes));
  if (num_classes == 1 && !o.balance_edges) return metis;
  const int64_t n = graph.num_nodes;
  std::vector<int32_t> in_degree;
  if (o.balance_edges) {
    in_degree.assign(n, 0);
    for (int64_t d : graph.dst_ids()) ++in_degree[d];
    graph.dst.ReleasePages();
  }
  const int ncon = num_classes * (o.balance_edges ? 2 : 1);
  metis.num_constraints = ncon;
  metis.vertex_weights.assign(static_cast<size_t>(n) * ncon, 0);
  for (int64_t i = 0; i < n; ++i) {
    int32_t* w = &metis.vertex_weights[static_cast<size_t>(i) * ncon];
    w[classes[i]] = 1;
    if (o.balance_edges) w[num_classes + classes[i]] = in_degree[i];
  }
  return metis;
}

// PartitionGraph; `consumed` (the same graph, or null) gives up its edge list
// once the parts are written; `narrow_ids` as WritePartsOptions.
StatusOr<PartitionResult> Partition(const Graph& graph, Graph* consumed,
                                    const std::string& graph_name, int num_parts,
                                    const std::string& out_path, const PartitionOptions& o,
                                    bool narrow_ids) {
  RETURN_IF_ERROR(CheckArguments(graph, graph_name, num_parts, o));
  RETURN_IF_ERROR(graph.Validate("input graph"));
  const std::string config_path = StrCat(out_path, "/", graph_name, ".json");
  ASSIGN_OR_RETURN(OutputLock lock, PrepareOutputFolder(out_path, config_path, num_parts));

  PartitionResult result;
  const int64_t num_edges = graph.num_edges();
  const int trainers = o.num_trainers_per_machine;
  const int total_parts = num_parts * trainers;

  // 1. Assignment.
  Progress assign_step(
      StrCat("assign nodes (", o.part_method == PartMethod::kMetis ? "metis" : "random", ", ",
             total_parts, " parts)"),
      0, "");
  std::vector<int32_t> trainer;  // Raw assignment into K*T parts.
  if (total_parts == 1) {
    trainer.assign(graph.num_nodes, 0);
  } else if (o.part_method == PartMethod::kMetis) {
    ASSIGN_OR_RETURN(MetisOptions metis, BalanceWeights(graph, o));
    metis.num_parts = total_parts;
    metis.seed = o.seed;
    metis.minimize_volume = o.objtype == "vol";
    metis.refine_iterations = o.metis_iterations;
    metis.num_cuts = o.metis_cuts;
    metis.coarsening = o.coarsening;
    metis.coarsen_min_entries = o.coarsen_min_arcs;
    ASSIGN_OR_RETURN(trainer, MetisPartition(graph, metis));
  } else {
    trainer = RandomParts(o.seed, 0, graph.num_nodes, total_parts);
  }
  std::vector<int32_t> part(trainer.size());
  for (size_t v = 0; v < trainer.size(); ++v) part[v] = trainer[v] / trainers;
  if (trainers == 1) trainer.clear();
  result.assign_seconds = assign_step.Done();

  // 2. Reshuffle, then local graphs and files, one part at a time.
  auto cleanup = [&](const Status& st) {
    for (int p = 0; p < num_parts; ++p) RemoveAll(StrCat(out_path, "/", PartName(p))).IgnoreError();
    RemoveAll(out_path + "/orig_nids.npy").IgnoreError();
    RemoveAll(out_path + "/orig_eids.npy").IgnoreError();
    return st;
  };
  WritePartsOptions write;
  write.num_parts = num_parts;
  write.num_hops = o.num_hops;
  write.return_mapping = o.return_mapping;
  write.trainer = trainer;
  write.narrow_ids = narrow_ids;
  if (!o.write_balance_array) write.skip_node_array = o.balance_ntypes;
  auto written = WriteParts(graph, part, out_path, write);
  if (!written.ok()) return cleanup(written.status());
  if (consumed != nullptr) {  // A heap edge list (a heterograph's) is freed here.
    consumed->src = Array();
    consumed->dst = Array();
  }
  result.reshuffle_seconds = written->reshuffle_seconds;
  result.write_seconds = written->write_seconds;
  result.parts = std::move(written->parts);
  result.edge_cut = written->edge_cut;

  PartitionConfig config = BaseConfig(graph_name, graph.num_nodes, num_edges, num_parts, o);
  config.node_offsets = written->node_offsets;
  config.edge_offsets = written->edge_offsets;
  if (graph.is_hetero()) {
    config.layout.ntypes = graph.ntypes;
    config.layout.etypes = graph.etypes;
  } else {
    config.layout.ntypes = {"_N"};
    config.layout.etypes = {{"_N", "_E", "_N"}};
  }
  config.layout.node_counts = written->node_counts;
  config.layout.edge_counts = written->edge_counts;
  if (!o.write_balance_array) config.balance_ntypes.clear();  // Not in the output.
  for (int t = 0; t < graph.num_ntypes(); ++t) {
    for (const auto& [name, array] : TypeArrays(graph, true, t, write.skip_node_array)) {
      config.node_feat_names.push_back(name);
    }
    if (trainers > 1) {
      config.node_feat_names.push_back(TypedLayout(graph) ? graph.ntypes[t] + "/trainer_id"
                                                          : "trainer_id");
    }
  }
  for (int t = 0; t < graph.num_etypes(); ++t) {
    for (const auto& [name, array] : TypeArrays(graph, false, t)) {
      config.edge_feat_names.push_back(name);
    }
    if (trainers > 1) {
      config.edge_feat_names.push_back(
          TypedLayout(graph) ? graph.etypes[t].Canonical() + "/trainer_id" : "trainer_id");
    }
  }
  Status st = WriteFileAtomic(config_path, PartitionConfigToJson(config));
  if (!st.ok()) return cleanup(st);
  result.config_path = config_path;
  spdlog::info("edge cut: {} of {} edges ({:.2f}%)", result.edge_cut, num_edges,
               100.0 * result.edge_cut / num_edges);
  return result;
}

}  // namespace

StatusOr<PartitionResult> PartitionGraph(const Graph& graph, const std::string& graph_name,
                                         int num_parts, const std::string& out_path,
                                         const PartitionOptions& options) {
  return Partition(graph, nullptr, graph_name, num_parts, out_path, options, true);
}

StatusOr<PartitionResult> PartitionGraph(Graph&& graph, const std::string& graph_name,
                                         int num_parts, const std::string& out_path,
                                         const PartitionOptions& options) {
  return Partition(graph, &graph, graph_name, num_parts, out_path, options, true);
}

StatusOr<PartitionResult> TEST_PartitionGraphWideIds(const Graph& graph,
                                                     const std::string& graph_name, int num_parts,
                                                     const std::string& out_path,
                                                     const PartitionOptions& options) {
  return Partition(graph, nullptr, graph_name, num_parts, out_path, options, false);
}

}  // namespace tessera
