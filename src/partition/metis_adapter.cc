#include "src/partition/metis_adapter.h"

#include <metis.h>

#include <algorithm>
#include <limits>
#include <type_traits>

#include "spdlog/spdlog.h"
#include "src/base/logging.h"
#include "src/base/strings.h"

namespace tessera {
namespace {

static_assert(sizeof(idx_t) == 4 || sizeof(idx_t) == 8, "unexpected METIS idx_t");

// Symmetric CSR without self loops or duplicates, in METIS index type. The
// weight of {u, v} is the number of directed edges u->v and v->u, so the cut
// METIS minimises is exactly the directed edge cut that sampling pays for.
struct MetisGraph {
  std::vector<idx_t> xadj;
  std::vector<idx_t> adjncy;
  std::vector<idx_t> adjwgt;
};

StatusOr<MetisGraph> Symmetrize(const Graph& graph) {
  const int64_t n = graph.num_nodes;
  auto src = graph.src_ids();
  auto dst = graph.dst_ids();
  std::vector<int64_t> degree(n + 1, 0);
  for (size_t e = 0; e < src.size(); ++e) {
    if (src[e] == dst[e]) continue;
    ++degree[src[e] + 1];
    ++degree[dst[e] + 1];
  }
  for (int64_t v = 0; v < n; ++v) degree[v + 1] += degree[v];
  const int64_t total = degree[n];
  if (total > std::numeric_limits<idx_t>::max() || n > std::numeric_limits<idx_t>::max()) {
    return absl::ResourceExhaustedError(StrCat(
        "the symmetrised graph has ", total, " adjacency entries, more than this METIS build's ",
        sizeof(idx_t) * 8, "-bit indices can hold; use --part-method random"));
  }
  MetisGraph g;
  g.adjncy.resize(total);
  {
    std::vector<int64_t> cursor(degree.begin(), degree.end() - 1);
    for (size_t e = 0; e < src.size(); ++e) {
      if (src[e] == dst[e]) continue;
      g.adjncy[cursor[src[e]]++] = static_cast<idx_t>(dst[e]);
      g.adjncy[cursor[dst[e]]++] = static_cast<idx_t>(src[e]);
    }
  }
  // Sort every row and merge repeated neighbours into one weighted entry,
  // compacting in place (the write position never passes the read position).
  g.xadj.resize(n + 1);
  g.adjwgt.resize(total);
  int64_t out = 0;
  for (int64_t v = 0; v < n; ++v) {
    g.xadj[v] = static_cast<idx_t>(out);
    auto begin = g.adjncy.begin() + degree[v];
    auto end = g.adjncy.begin() + degree[v + 1];
    std::sort(begin, end);
    for (auto it = begin; it != end;) {
      auto run_end = std::find_if(it, end, [&](idx_t x) { return x != *it; });
      g.adjncy[out] = *it;
      g.adjwgt[out] = static_cast<idx_t>(run_end - it);
      ++out;
      it = run_end;
    }
  }
  g.xadj[n] = static_cast<idx_t>(out);
  g.adjncy.resize(out);
  g.adjncy.shrink_to_fit();
  g.adjwgt.resize(out);
  g.adjwgt.shrink_to_fit();
  return g;
}

}  // namespace

StatusOr<std::vector<int32_t>> MetisPartition(const Graph& graph, const MetisOptions& options) {
  const int64_t n = graph.num_nodes;
  if (options.num_parts < 1 || options.num_parts > n) {
    return absl::InvalidArgumentError(
        StrCat("METIS: cannot make ", options.num_parts, " parts of ", n, " nodes"));
  }
  if (options.num_parts == 1) return std::vector<int32_t>(n, 0);
  if (!options.vertex_weights.empty() &&
      static_cast<int64_t>(options.vertex_weights.size()) != n * options.num_constraints) {
    return absl::InternalError("METIS: vertex weight array has the wrong size");
  }

  Progress sym("METIS input (symmetrise, deduplicate)", 0, "");
  ASSIGN_OR_RETURN(MetisGraph g, Symmetrize(graph));
  sym.Done();

  idx_t nvtxs = static_cast<idx_t>(n);
  idx_t ncon = static_cast<idx_t>(options.num_constraints);
  idx_t nparts = static_cast<idx_t>(options.num_parts);
  // The weights go to METIS as they are when idx_t is 32-bit (METIS only
  // reads them), else as a widened copy.
  std::vector<idx_t> widened;
  idx_t* vwgt = nullptr;
  if (!options.vertex_weights.empty()) {
    if constexpr (std::is_same_v<idx_t, int32_t>) {
      vwgt = const_cast<idx_t*>(options.vertex_weights.data());
    } else {
      widened.assign(options.vertex_weights.begin(), options.vertex_weights.end());
      vwgt = widened.data();
    }
  }
  std::vector<real_t> ubvec(ncon, static_cast<real_t>(options.imbalance));
  idx_t metis_options[METIS_NOPTIONS];
  METIS_SetDefaultOptions(metis_options);
  metis_options[METIS_OPTION_SEED] = static_cast<idx_t>(options.seed & 0x7fffffff);
  metis_options[METIS_OPTION_OBJTYPE] =
      options.minimize_volume ? METIS_OBJTYPE_VOL : METIS_OBJTYPE_CUT;
  metis_options[METIS_OPTION_NUMBERING] = 0;
  metis_options[METIS_OPTION_NITER] = options.refine_iterations;
  metis_options[METIS_OPTION_NCUTS] = options.num_cuts;
  idx_t objval = 0;
  std::vector<idx_t> part(n);

  spdlog::info("METIS: k-way into {} parts, {} nodes, {} undirected edges, {} constraint(s)",
               options.num_parts, n, g.adjncy.size() / 2, ncon);
  Progress run("METIS", 0, "");
  int rc = METIS_PartGraphKway(&nvtxs, &ncon, g.xadj.data(), g.adjncy.data(), vwgt,
                               /*vsize=*/nullptr, g.adjwgt.data(), &nparts, /*tpwgts=*/nullptr,
                               ubvec.data(), metis_options, &objval, part.data());
  run.Done();
  switch (rc) {
    case METIS_OK:
      break;
    case METIS_ERROR_INPUT:
      return absl::InvalidArgumentError("METIS rejected its input (METIS_ERROR_INPUT)");
    case METIS_ERROR_MEMORY:
      return absl::ResourceExhaustedError("METIS ran out of memory (METIS_ERROR_MEMORY)");
    default:
      return absl::InternalError(StrCat("METIS failed with code ", rc));
  }
  spdlog::info("METIS: objective {} ({})", objval,
               options.minimize_volume ? "communication volume" : "directed edges cut");
  return std::vector<int32_t>(part.begin(), part.end());
}

}  // namespace tessera
