#include "src/partition/metis_adapter.h"

#include <metis.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>
#include <utility>

#include "spdlog/spdlog.h"
#include "src/base/logging.h"
#include "src/base/process.h"
#include "src/partition/coarsen.h"
#include "tessera/base/interrupt.h"
#include "tessera/base/resource.h"
#include "tessera/base/strings.h"

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

// A shared anonymous mapping: what a forked child writes there, its parent
// reads.
class SharedMemory {
 public:
  static StatusOr<SharedMemory> Map(int64_t bytes) {
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      return ErrnoError(StrCat("map ", FormatBytes(bytes), " of memory shared with METIS"), errno);
    }
    SharedMemory m;
    m.data_ = p;
    m.bytes_ = bytes;
    return m;
  }
  SharedMemory() = default;
  SharedMemory(SharedMemory&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), bytes_(other.bytes_) {}
  SharedMemory& operator=(SharedMemory&&) = delete;
  ~SharedMemory() {
    if (data_ != nullptr) munmap(data_, bytes_);
  }
  void* data() const { return data_; }

 private:
  void* data_ = nullptr;
  int64_t bytes_ = 0;
};

// What the METIS process hands back, followed by the n parts.
struct MetisAnswer {
  int rc;
  idx_t objval;
};

// How METIS's process ended, unless it returned.
Status MetisProcessStatus(const Process& child) {
  if (const int code = child.exit_code(); code < 0) {
    return absl::InternalError(
        StrCat("METIS's process (pid ", child.pid(), ") was killed by signal ", -code, " (",
               strsignal(-code), ") after reaching ", FormatBytes(child.peak_rss_bytes()), " RSS",
               -code == SIGKILL ? "; the kernel's out-of-memory killer sends SIGKILL" : ""));
  } else if (code != 0) {
    return absl::InternalError(StrCat("METIS's process exited with code ", code));
  }
  return absl::OkStatus();
}

// METIS k-way on one graph (METIS's own arrays; it only reads them), with
// the log of its share of memory. METIS runs in a forked child: GKlib traps
// SIGTERM and SIGABRT while METIS runs and longjmps out of the handler, which
// in a process with other threads (or inside malloc) corrupts the heap or
// lands on another thread's stack. In a child of its own, the partitioner
// dies by a SIGTERM sent to it as any program does (and METIS with it), a
// crash or kill of METIS is an error naming the signal instead of the end of
// the process (a SIGTERM or abort sent to METIS's own process is still
// trapped by GKlib: METIS_ERROR, which names the process), and the memory
// METIS used returns to the system when the child exits. Where fork has no
// memory for the copy (strict overcommit), METIS runs in this process after
// all, with those hazards, and a warning says so.
StatusOr<std::vector<idx_t>> RunMetis(int64_t n, std::vector<idx_t>& xadj, idx_t* adjncy,
                                      idx_t* adjwgt, int64_t num_entries, idx_t* vwgt, int ncon,
                                      const MetisOptions& options) {
  idx_t nvtxs = static_cast<idx_t>(n);
  idx_t metis_ncon = static_cast<idx_t>(ncon);
  idx_t nparts = static_cast<idx_t>(options.num_parts);
  std::vector<real_t> ubvec(ncon, static_cast<real_t>(options.imbalance));
  idx_t metis_options[METIS_NOPTIONS];
  METIS_SetDefaultOptions(metis_options);
  metis_options[METIS_OPTION_SEED] = static_cast<idx_t>(options.seed & 0x7fffffff);
  metis_options[METIS_OPTION_OBJTYPE] =
      options.minimize_volume ? METIS_OBJTYPE_VOL : METIS_OBJTYPE_CUT;
  metis_options[METIS_OPTION_NUMBERING] = 0;
  metis_options[METIS_OPTION_NITER] = options.refine_iterations;
  metis_options[METIS_OPTION_NCUTS] = options.num_cuts;
  ASSIGN_OR_RETURN(SharedMemory shared,
                   SharedMemory::Map(static_cast<int64_t>(sizeof(MetisAnswer)) +
                                     n * static_cast<int64_t>(sizeof(idx_t))));
  auto* answer = static_cast<MetisAnswer*>(shared.data());
  auto* part = reinterpret_cast<idx_t*>(answer + 1);
  answer->rc = std::numeric_limits<int>::min();  // Not a METIS code: METIS did not return.

  const int64_t input_bytes =
      static_cast<int64_t>(sizeof(idx_t)) *
      (static_cast<int64_t>(xadj.size()) + 2 * num_entries + (vwgt != nullptr ? n * ncon : 0));
  const int64_t resident_before = ResidentBytes();
  spdlog::info(
      "METIS: k-way into {} parts, {} nodes, {} undirected edges, {} constraint(s); input arrays "
      "{}, RSS {}",
      options.num_parts, n, num_entries / 2, ncon, FormatBytes(input_bytes),
      FormatBytes(resident_before));
  Progress run("METIS", 0, "");
  const auto metis = [&] {
    answer->rc = METIS_PartGraphKway(&nvtxs, &metis_ncon, xadj.data(), adjncy, vwgt,
                                     /*vsize=*/nullptr, adjwgt, &nparts, /*tpwgts=*/nullptr,
                                     ubvec.data(), metis_options, &answer->objval, part);
    return 0;
  };
  StatusOr<Process> forked = Process::Fork(metis, "METIS", /*grace_seconds=*/0);
  if (absl::IsResourceExhausted(forked.status())) {
    // Under strict overcommit (vm.overcommit_memory=2) fork must commit a
    // second copy of this process's memory. METIS then runs here, as it
    // did before it had a process of its own.
    spdlog::warn(
        "METIS: cannot {}; running it in this process: a SIGTERM is then trapped by METIS "
        "(risking memory corruption in a multi-threaded process), a crash in METIS ends the "
        "partitioner, and Python's partition_graph waits for METIS to return on Ctrl-C",
        std::string(forked.status().message()));
    metis();
  } else if (!forked.ok()) {
    return forked.status();
  } else {
    Process& child = *forked;
    spdlog::info("METIS: running in process {}", child.pid());
    while (!child.Wait(Deadline::InSeconds(0.1)).ok()) {
      if (Status interrupted = CheckInterrupt(); !interrupted.ok()) {
        child.Stop();
        return interrupted;
      }
    }
    RETURN_IF_ERROR(MetisProcessStatus(child));
  }
  run.Done();
  switch (answer->rc) {
    case METIS_OK:
      break;
    case METIS_ERROR_INPUT:
      return absl::InvalidArgumentError("METIS rejected its input (METIS_ERROR_INPUT)");
    case METIS_ERROR_MEMORY:
      return absl::ResourceExhaustedError("METIS ran out of memory (METIS_ERROR_MEMORY)");
    case METIS_ERROR:  // GKlib's trap of SIGTERM / SIGABRT, or METIS's own failure.
      return absl::InternalError(StrCat("METIS stopped with METIS_ERROR: its process (pid ",
                                        forked.ok() ? forked->pid() : getpid(),
                                        ") received SIGTERM or SIGABRT, or METIS failed inside"));
    default:
      return absl::InternalError(StrCat("METIS failed with code ", answer->rc));
  }
  spdlog::info("METIS: objective {} ({})", answer->objval,
               options.minimize_volume ? "communication volume" : "directed edges cut");
  // What METIS allocated on top of its input (its coarsened graphs): its
  // process started with this one's pages.
  if (const int64_t peak = forked.ok() ? forked->peak_rss_bytes() : 0;
      peak > 0 && resident_before >= 0) {
    spdlog::info("METIS: peak RSS {} in its process, {} above the partitioner's when it started",
                 FormatBytes(peak), FormatBytes(std::max<int64_t>(peak - resident_before, 0)));
  }
  return std::vector<idx_t>(part, part + n);
}

#if IDXTYPEWIDTH == 32  // --coarsening hands METIS its 32-bit arrays as they are.

// The most finest-level nodes a cluster may hold (Contract's
// max_cluster_size) for n nodes in k parts: 1/256 of a part (finer clusters
// cost METIS nothing in cut, coarser ones did:
// docs/distributed-partitioning.md), at least 8 (smaller caps contract
// little), but never more than a part may exceed its average by, so that
// METIS can balance the coarse nodes as it would the fine ones. (Half a part,
// the bound before, gave METIS clusters it could not balance on small parts:
// 2000 nodes in 250 parts came back 50 % over the average, with empty parts.)
// 1: nothing to contract.
int64_t MaxClusterSize(int64_t n, int64_t k, double imbalance) {
  const auto slack =
      static_cast<int64_t>((imbalance - 1) * static_cast<double>(n) / static_cast<double>(k));
  return std::max<int64_t>(1, std::min(std::max<int64_t>(n / (k * 256), 8), slack));
}

// MetisOptions::coarsening (32-bit METIS): contraction levels of the
// symmetrised graph `g` (coarsen.h), METIS on the coarsest, then the parts
// projected back and refined level by level, each level freed once its parts
// are projected. A level that removes under 10 % of the nodes is dropped;
// with none left (or clusters capped at one node), METIS gets `g` itself.
StatusOr<std::vector<int32_t>> CoarsenedParts(MetisGraph& g, idx_t* vwgt,
                                              const MetisOptions& options) {
  const int64_t n = static_cast<int64_t>(g.xadj.size()) - 1;
  const int64_t k = options.num_parts;
  const int ncon = vwgt != nullptr ? options.num_constraints : 1;
  const int64_t max_cluster = MaxClusterSize(n, k, options.imbalance);
  const auto target = static_cast<int64_t>(static_cast<double>(g.num_entries) / options.coarsening);
  constexpr int kMaxLevels = 8;
  std::vector<CoarseLevel> levels;
  std::vector<int32_t> ones;  // Every fine node's size and, unweighted, its weight.
  if (max_cluster > 1) ones.assign(n, 1);
  const CsrView fine{g.xadj,
                     {g.adjncy.get(), static_cast<size_t>(g.num_entries)},
                     {g.adjwgt.get(), static_cast<size_t>(g.num_entries)},
                     vwgt != nullptr ? std::span<const int32_t>(vwgt, static_cast<size_t>(n) * ncon)
                                     : std::span<const int32_t>(ones),
                     ncon};
  Progress contract("coarsening", 0, "");
  while (max_cluster > 1 && static_cast<int>(levels.size()) < kMaxLevels) {
    const CsrView finer = levels.empty() ? fine : levels.back().view();
    if (finer.num_entries() <= target || finer.num_entries() <= options.coarsen_min_entries) break;
    ASSIGN_OR_RETURN(CoarseLevel level,
                     Contract(finer,
                              levels.empty() ? std::span<const int32_t>(ones)
                                             : std::span<const int32_t>(levels.back().size),
                              max_cluster));
    const int64_t nodes = static_cast<int64_t>(level.size.size());
    const bool kept = nodes * 10 <= finer.num_nodes() * 9;  // At least 10 % fewer nodes.
    spdlog::info("coarsening level {}: {} nodes -> {}, {} adjacency entries -> {}{}",
                 levels.size() + 1, finer.num_nodes(), nodes, finer.num_entries(),
                 level.num_entries, kept ? "" : " (under 10 % fewer nodes: dropped)");
    if (!kept) break;
    levels.push_back(std::move(level));
  }
  contract.Done();
  if (levels.empty()) {
    spdlog::info("coarsening: nothing contracted ({}); METIS on the whole graph",
                 max_cluster > 1 ? "the first level removed under 10 % of the nodes"
                                 : "parts too small for clusters within the balance");
    ones = {};
    return RunMetis(n, g.xadj, g.adjncy.get(), g.adjwgt.get(), g.num_entries, vwgt,
                    options.num_constraints, options);
  }
  std::vector<int32_t> part;
  {
    CoarseLevel& coarsest = levels.back();
    ASSIGN_OR_RETURN(std::vector<idx_t> coarse_part,
                     RunMetis(static_cast<int64_t>(coarsest.size.size()), coarsest.xadj,
                              coarsest.adjncy.get(), coarsest.adjwgt.get(), coarsest.num_entries,
                              coarsest.vwgt.data(), coarsest.ncon, options));
    part.assign(coarse_part.begin(), coarse_part.end());
  }
  Progress refine("project and refine", 0, "");
  while (!levels.empty()) {
    const CsrView finer = levels.size() == 1 ? fine : levels[levels.size() - 2].view();
    std::vector<int32_t> finer_part(finer.num_nodes());
    const std::vector<int32_t>& cmap = levels.back().cmap;
    for (size_t v = 0; v < finer_part.size(); ++v) finer_part[v] = part[cmap[v]];
    levels.pop_back();
    part = std::move(finer_part);
    const int64_t cut_before = WeightedCut(finer, part);
    const int64_t moves = RefineParts(finer, options.num_parts, options.imbalance, part);
    spdlog::info("refinement on {} nodes: {} moves, weighted cut {} -> {}", finer.num_nodes(),
                 moves, cut_before, WeightedCut(finer, part));
  }
  refine.Done();
  return part;
}

#endif  // IDXTYPEWIDTH == 32

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

  // The weights go to METIS as they are when idx_t is 32-bit (METIS only
  // reads them), else as a widened copy.
  std::vector<idx_t> widened;
  idx_t* vwgt = nullptr;
  if (!options.vertex_weights.empty()) {
#if IDXTYPEWIDTH == 32
    vwgt = const_cast<idx_t*>(options.vertex_weights.data());
#else
    widened.assign(options.vertex_weights.begin(), options.vertex_weights.end());
    vwgt = widened.data();
#endif
  }
  if (options.coarsening > 1 && g.num_entries > options.coarsen_min_entries) {
#if IDXTYPEWIDTH == 32
    return CoarsenedParts(g, vwgt, options);
#else
    return absl::UnimplementedError(
        "--coarsening needs METIS built with 32-bit indices (Debian's is)");
#endif
  }
  ASSIGN_OR_RETURN(std::vector<idx_t> part,
                   RunMetis(n, g.xadj, g.adjncy.get(), g.adjwgt.get(), g.num_entries, vwgt,
                            static_cast<int>(options.num_constraints), options));
#if IDXTYPEWIDTH == 32
  return part;
#else
  return std::vector<int32_t>(part.begin(), part.end());
#endif
}

}  // namespace tessera
