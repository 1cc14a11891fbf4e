// File: fuzz/text_readers_fuzz.cc
//
// Fuzzes the text graph readers through ReadGraph: the CSV/TSV edge list and
// the OGB node-property-prediction layout.
//
// Input: one flags byte, then the files.
//   flags bit 0: 0 = edge list, 1 = OGB directory;
//   bits 1-3: ReadOptions remove_self_loops, add_reverse_edges,
//             remove_duplicate_edges; bit 4 (edge list): num_nodes = 64.
// Edge list: the rest is the file. OGB: the rest is split at each "\n|||\n"
// into raw/num-node-list, raw/edge, raw/node-feat, raw/node-label,
// raw/edge-feat, split/public/{train,valid,test} (all "*.csv.gz"; plain text
// is read as is, gzip by content). A missing section, or one that is exactly
// "-", leaves that file out.
//
// ReadGraph must fail with a Status or return a graph that Validate accepts.
//
// Memory: a few bytes of num-node-list.csv.gz (or one large id in an edge
// list) can claim billions of nodes. The readers refuse a claim whose
// per-node arrays exceed the memory available, but on a 24 GB machine that
// still lets one input allocate gigabytes (three 1-byte split masks of
// 2.9 billion nodes pass a check of 8 bytes per node against 23 GB), more
// than scripts/fuzz.sh's -rss_limit_mb=4096 (which ASan also applies to
// each malloc), so libFuzzer would report an out-of-memory crash that
// depends on the machine. kMaxClaimedBytes bounds each claim far inside
// that budget (2 million nodes; with two fuzzers at once as well), so the
// limit paths are fuzzed the same way everywhere and executions stay fast.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz/fuzz_util.h"
#include "tessera/graph/readers.h"

namespace tessera {
namespace {

constexpr std::string_view kSeparator = "\n|||\n";
constexpr int64_t kMaxClaimedBytes = int64_t{16} << 20;
constexpr const char* kOgbFiles[] = {"raw/num-node-list.csv.gz",  "raw/edge.csv.gz",
                                     "raw/node-feat.csv.gz",      "raw/node-label.csv.gz",
                                     "raw/edge-feat.csv.gz",      "split/public/train.csv.gz",
                                     "split/public/valid.csv.gz", "split/public/test.csv.gz"};

void WriteOgb(const std::string& dir, std::string_view rest) {
  FUZZ_ASSERT(RemoveAll(dir).ok());
  FUZZ_ASSERT(MakeDirs(dir + "/raw").ok() && MakeDirs(dir + "/split/public").ok());
  for (const char* name : kOgbFiles) {
    if (rest.data() == nullptr) break;
    size_t end = rest.find(kSeparator);
    std::string_view section = rest.substr(0, end);
    rest =
        end == std::string_view::npos ? std::string_view() : rest.substr(end + kSeparator.size());
    if (section != "-") fuzz::WriteFile(dir + "/" + name, section);
  }
}

}  // namespace
}  // namespace tessera

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  tessera::fuzz::Quiet();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tessera;
  if (size < 1) return 0;
  static const std::string edges = fuzz::ScratchFolder() + "/edges.csv";
  static const std::string ogb = fuzz::ScratchFolder() + "/ogb";
  const uint8_t flags = data[0];
  std::string_view rest = fuzz::AsText(data + 1, size - 1);
  ReadOptions options;
  options.max_claimed_bytes = kMaxClaimedBytes;
  options.remove_self_loops = flags & 2;
  options.add_reverse_edges = flags & 4;
  options.remove_duplicate_edges = flags & 8;
  std::string path;
  if (flags & 1) {
    options.format = GraphFormat::kOgb;
    WriteOgb(ogb, rest);
    path = ogb;
  } else {
    options.format = GraphFormat::kEdgeList;
    if (flags & 16) options.num_nodes = 64;
    fuzz::WriteFile(edges, rest);
    path = edges;
  }
  auto graph = ReadGraph(path, options);
  fuzz::Report("ReadGraph", graph.status());
  if (graph.ok()) FUZZ_ASSERT(graph->Validate(path).ok());
  return 0;
}
