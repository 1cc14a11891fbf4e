#include "src/partition/metis_adapter.h"

#include <metis.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <memory>
#include <type_traits>

#include "spdlog/spdlog.h"
#include "src/base/logging.h"
#include "src/base/resource.h"
#include "src/base/strings.h"

namespace tessera {
namespace {

static_assert(sizeof(idx_t) == 4 || sizeof(idx_t) == 8, "unexpected METIS idx_t");

// Symmetric CSR without self loops or duplicates, in METIS index type. The
// weight of {u, v} is the number of directed edges u->v and v->u, so the cut
// METIS minimises is exactly the directed edge cut that sampling pays for.
// The adjacency is malloc'd so that it shrinks in place once deduplicated.
struct FreeDelete {
  void operator()(idx_t* p) const { std::free(p); }
};
using IdxArray = std::unique_ptr<idx_t[], FreeDelete>;

struct MetisGraph {
  std::vector<idx_t> xadj;
  IdxArray adjncy;
  IdxArray adjwgt;
  int64_t num_entries = 0;  // Of adjncy and adjwgt.
};

// Resident bytes of this process now (/proc/self/statm), or -1.
int64_t ResidentBytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t size = 0, resident = 0;
  if (!(statm >> size >> resident)) return -1;
  return resident * static_cast<int64_t>(::sysconf(_SC_PAGESIZE));
}

StatusOr<IdxArray> AllocateIdx(int64_t count) {
  IdxArray a(static_cast<idx_t*>(std::malloc(std::max<int64_t>(count, 1) * sizeof(idx_t))));
  if (a == nullptr) {
    return absl::ResourceExhaustedError(
        StrCat("METIS input: cannot allocate ", FormatBytes(count * sizeof(idx_t))));
  }
  return a;
}

// Calls fn(src, dst) for every edge but self loops, in order; a mapped edge
// list's pages are dropped behind the sweep.
template <typename Fn>
void ForEachNonLoop(const Graph& graph, Fn&& fn) {
  constexpr int64_t kChunk = 1 << 20;
  auto src = graph.src_ids();
  auto dst = graph.dst_ids();
  const int64_t m = graph.num_edges();
  for (int64_t begin = 0; begin < m; begin += kChunk) {
    const int64_t end = std::min(m, begin + kChunk);
    for (int64_t e = begin; e < end; ++e) {
      if (src[e] != dst[e]) fn(src[e], dst[e]);
    }
    graph.src.ReleasePages(begin, end);
    graph.dst.ReleasePages(begin, end);
  }
  graph.src.ReleasePages();  // The pages that chunk boundaries split.
  graph.dst.ReleasePages();
}

// Reads the edge list twice; holds at most every directed entry once plus the
// weights of the distinct ones.
StatusOr<MetisGraph> Symmetrize(const Graph& graph) {
  const int64_t n = graph.num_nodes;
  std::vector<int64_t> begin(n + 1, 0);  // Row starts before deduplication.
  ForEachNonLoop(graph, [&](int64_t s, int64_t d) {
    ++begin[s + 1];
    ++begin[d + 1];
  });
  for (int64_t v = 0; v < n; ++v) begin[v + 1] += begin[v];
  const int64_t total = begin[n];
  if (total > std::numeric_limits<idx_t>::max() || n > std::numeric_limits<idx_t>::max()) {
    return absl::ResourceExhaustedError(StrCat(
        "the symmetrised graph has ", total, " adjacency entries, more than this METIS build's ",
        sizeof(idx_t) * 8, "-bit indices can hold; use --part-method random"));
  }
  MetisGraph g;
  ASSIGN_OR_RETURN(g.adjncy, AllocateIdx(total));
  {
    std::vector<int64_t> cursor(begin.begin(), begin.end() - 1);
    ForEachNonLoop(graph, [&](int64_t s, int64_t d) {
      g.adjncy[cursor[s]++] = static_cast<idx_t>(d);
      g.adjncy[cursor[d]++] = static_cast<idx_t>(s);
    });
  }
  // Sort every row and count its distinct neighbours; then merge repeated
  // neighbours into one weighted entry, compacting in place (the write
  // position never passes the read position).
  g.xadj.assign(n + 1, 0);
  for (int64_t v = 0; v < n; ++v) {
    idx_t* row = g.adjncy.get();
    std::sort(row + begin[v], row + begin[v + 1]);
    int64_t distinct = 0;
    for (int64_t i = begin[v]; i < begin[v + 1]; ++i) {
      distinct += i == begin[v] || row[i] != row[i - 1];
    }
    g.xadj[v + 1] = static_cast<idx_t>(g.xadj[v] + distinct);
  }
  g.num_entries = g.xadj[n];
  ASSIGN_OR_RETURN(g.adjwgt, AllocateIdx(g.num_entries));
  int64_t out = 0;  // Entry i - 1 is only ever rewritten with its own value before i is read.
  for (int64_t v = 0; v < n; ++v) {
    for (int64_t i = begin[v]; i < begin[v + 1]; ++i) {
      if (i > begin[v] && g.adjncy[i] == g.adjncy[i - 1]) {
        ++g.adjwgt[out - 1];
        continue;
      }
      g.adjncy[out] = g.adjncy[i];
      g.adjwgt[out++] = 1;
    }
  }
  // Shrinking a block in place (glibc: mremap for large blocks) copies nothing.
  idx_t* shrunk =
      static_cast<idx_t*>(std::realloc(g.adjncy.get(), std::max<int64_t>(out, 1) * sizeof(idx_t)));
  if (shrunk != nullptr) {
    g.adjncy.release();
    g.adjncy.reset(shrunk);
  }
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

  const int64_t input_bytes = static_cast<int64_t>(sizeof(idx_t)) *
                              (static_cast<int64_t>(g.xadj.size()) + 2 * g.num_entries +
                               static_cast<int64_t>(options.vertex_weights.size()));
  const int64_t resident_before = ResidentBytes(), peak_before = PeakRssBytes();
  spdlog::info(
      "METIS: k-way into {} parts, {} nodes, {} undirected edges, {} constraint(s); input arrays "
      "{}, RSS {}",
      options.num_parts, n, g.num_entries / 2, ncon, FormatBytes(input_bytes),
      FormatBytes(resident_before));
  Progress run("METIS", 0, "");
  int rc = METIS_PartGraphKway(&nvtxs, &ncon, g.xadj.data(), g.adjncy.get(), vwgt,
                               /*vsize=*/nullptr, g.adjwgt.get(), &nparts, /*tpwgts=*/nullptr,
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
  // What METIS allocates on top of its input (its coarsened graphs), when its
  // peak is the process's.
  if (const int64_t peak = PeakRssBytes(); peak > peak_before && resident_before >= 0) {
    spdlog::info("METIS: peak RSS {} during the call, {} above the RSS it started with",
                 FormatBytes(peak), FormatBytes(peak - resident_before));
  }
  if constexpr (std::is_same_v<idx_t, int32_t>) {
    return part;
  } else {
    return std::vector<int32_t>(part.begin(), part.end());
  }
}

}  // namespace tessera
