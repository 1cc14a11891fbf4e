// File: src/graph/generator.h
//
// `tessera generate`: synthetic node-classification graphs from a
// degree-corrected stochastic block model, written straight to disk in the
// npy-directory layout (src.npy, dst.npy, feat.npy, label.npy, train_mask.npy,
// val_mask.npy, test_mask.npy, meta.json). The model follows
// shared/tools/gen_graph.py: power-law node weights, C classes; each
// undirected edge picks its source by weight and, with probability
// `homophily`, a destination of the same class by weight (else any node by
// weight); no self loops; both directions are stored (edge i and edge
// num_edges + i are reverses). Features are a class centroid (N(0,1) per
// dimension) plus N(0, noise^2) noise.
//
// Output is streamed in chunks, so memory stays far below the output size.
// The result depends only on the options (and not on `num_threads`).
#ifndef TESSERA_SRC_GRAPH_GENERATOR_H_
#define TESSERA_SRC_GRAPH_GENERATOR_H_

#include <cstdint>
#include <string>

#include "tessera/base/status.h"

namespace tessera {

struct GenerateOptions {
  int64_t num_nodes = 600'000;
  int64_t num_undirected_edges = 7'500'000;  // Stored twice.
  int64_t feat_dim = 100;
  int64_t num_classes = 47;
  double homophily = 0.8;
  double noise = 2.0;
  double power_law_exponent = 1.5;  // Pareto shape of the node weights.
  double train_fraction = 0.08;
  double val_fraction = 0.02;
  uint64_t seed = 42;
  int num_threads = 0;  // 0 = hardware concurrency.
};

struct GenerateStats {
  int64_t num_nodes = 0;
  int64_t num_edges = 0;  // Directed, as stored.
  int64_t bytes_written = 0;
  double seconds = 0;
};

// Validates `options` (InvalidArgument naming the bad option) and writes the
// graph into `out_dir` (created if needed).
StatusOr<GenerateStats> GenerateSbmGraph(const GenerateOptions& options,
                                         const std::string& out_dir);

}  // namespace tessera

#endif  // TESSERA_SRC_GRAPH_GENERATOR_H_
