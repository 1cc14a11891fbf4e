// File: src/graph/typed_generator.h
//
// `tessera generate --hetero`: a synthetic heterogeneous node-classification
// graph shaped like ogbn-mag, written straight to disk in the heterogeneous
// npy layout (readers.h layout (d), docs/hetero-input.md).
//
// Node types (type-id order) and their shares of --num-nodes, ogbn-mag's:
//   paper 736389, author 1134649, institution 8740, field_of_study 59965
//   (of 1939743). Only papers have arrays: feat, label, train/val/test masks.
// Relations (relation-id order): author:writes:paper, paper:cites:paper,
//   paper:has_topic:field_of_study, author:affiliated_with:institution, then
//   the reverse of each (paper:rev-writes:author, paper:rev-cites:paper,
//   field_of_study:rev-has_topic:paper, institution:rev-affiliated_with:author):
//   edge i of a reverse relation is edge i of its forward relation reversed.
//   rev-cites is included because DGL's distributed R-GCN example builds its
//   ogbn-mag graph as every relation plus its reverse, and because without it
//   a paper hears only from the papers citing it: citation counts follow a
//   power law, and at full scale 14% of the papers are cited by none.
// Edge counts: ogbn-mag's per-relation average degree halved (so at full
//   scale the graph with reverses has ogbn-mag's 21.1 M edges): per paper 3.68
//   citations, 4.85 authors, 5.10 fields; per author 0.46 affiliations. At
//   1939743 nodes: 2708136 cites, 3572830 writes, 3752539 has_topic, 521999
//   affiliated_with, 21111008 stored in all.
//
// The community model: C = --num-classes communities. Every node has one
// (uniform): a paper's is its label, an author's is its home community, a
// field's the community it is a topic of, an institution's the community whose
// authors it groups. Each forward relation picks an anchor uniformly (the
// citing paper; the paper for writes and has_topic; the author for
// affiliated_with) and a target by power-law weight (Pareto, --power-law):
// with probability --homophily among the targets of the anchor's community,
// else among all (no self citations). So anchors have Poisson degrees and
// targets power-law ones. Paper features are the class centroid (N(0,1) per
// dimension) plus N(0, noise^2) noise per dimension: with the defaults (128
// dimensions, 64 classes, noise 6, homophily 0.5) a nearest-centroid
// classifier of a paper's own features is right about 26% of the time
// (ogbn-mag's MLP: 27%), of its features averaged with its cites neighbours'
// about 60%, so that an R-GCN beats a features-only MLP, as on ogbn-mag
// (typed_generator_test measures both).
//
// Output is streamed in chunks (memory about 50 bytes per node: 91 MiB at
// full scale, for 689 MiB written in 2 s on 2 cores) into ".partial" files
// renamed once all are complete, meta.json last (WriteGeneratorOutputs): a
// folder with a meta.json is complete. The result depends only on the
// options, not on num_threads.
#ifndef TESSERA_SRC_GRAPH_TYPED_GENERATOR_H_
#define TESSERA_SRC_GRAPH_TYPED_GENERATOR_H_

#include <cstdint>
#include <string>
#include <vector>

#include "src/graph/generator.h"
#include "tessera/base/status.h"

namespace tessera {

struct TypedGenerateOptions {
  int64_t num_nodes = 1'939'743;  // All types; ogbn-mag's size.
  int64_t feat_dim = 128;
  int64_t num_classes = 64;
  double homophily = 0.5;
  double noise = 6.0;
  double power_law_exponent = 1.5;
  // Of the papers; the rest belong to no split.
  double train_fraction = 0.6;
  double val_fraction = 0.1;
  double test_fraction = 0.1;
  uint64_t seed = 42;
  int num_threads = 0;  // 0 = hardware concurrency.
};

// The node and edge counts that `options` give (validated first).
struct TypedShape {
  std::vector<std::string> ntypes;  // Type-id order.
  std::vector<int64_t> num_nodes;
  std::vector<std::string> etypes;  // Canonical, relation-id order.
  std::vector<int64_t> num_edges;
};
StatusOr<TypedShape> MagShape(const TypedGenerateOptions& options);

// Validates `options` (InvalidArgument naming the bad option as its flag)
// and writes the graph into `out_dir` (created if needed).
StatusOr<GenerateStats> GenerateMagGraph(const TypedGenerateOptions& options,
                                         const std::string& out_dir);

}  // namespace tessera

#endif  // TESSERA_SRC_GRAPH_TYPED_GENERATOR_H_
