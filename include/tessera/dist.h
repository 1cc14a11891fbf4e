// File: include/tessera/dist.h
//
// The trainer-side API, with DGL's names (dgl.distributed):
//
//   auto ctx = tessera::dist::initialize("ip_config.txt");  // standalone when not launched
//   tessera::dist::DistGraph g("products", "parts/products.json");
//   torch::Tensor x = g.ndata("feat")[ids];                  // pull rows by global id
//   tessera::dist::DistTensor h({g.num_nodes(), 16}, torch::kFloat32, "h");
//   h.set(ids, rows);                                        // push rows (acknowledged)
//   g.barrier();
//
//   auto train = tessera::dist::node_split(mask, g.partition_book());
//   tessera::dist::DistNodeDataLoader loader(g, train, {.fanouts = {10, 25}},
//                                            {.batch_size = 1000, .shuffle = true});
//   for (const auto& batch : loader) {                       // input_nodes, seeds, blocks
//     torch::Tensor x = g.ndata("feat")[batch.input_nodes[0]];  // The one (untyped) type.
//     ...
//   }
//
// Modes. Launched by `tessera launch` (or the local runner), the environment
// names the job (src/launcher/job_env.h) and initialize() connects to every
// server of the job; a trainer reads its own machine's rows straight from
// shared memory. Without that environment the program is standalone:
// nothing is started, and DistGraph loads a one-part partition in process.
// The same program runs unchanged in both modes.
//
// Errors (a dead server, a deadline, a bad id, a missing tensor) are thrown
// as tessera::dist::Error, whose message names the cause; nothing blocks
// without a deadline. DistGraph and DistTensor are safe to use from several
// threads at once.
//
// The API is split as DGL's dgl.distributed is: tessera/dist/context.h,
// dist_tensor.h, dist_graph.h, graph_services.h, dataloader.h, embedding.h
// and parallel.h (DDP); this header includes them all.
#ifndef TESSERA_INCLUDE_TESSERA_DIST_H_
#define TESSERA_INCLUDE_TESSERA_DIST_H_

#include "tessera/dist/checkpoint.h"      // IWYU pragma: export
#include "tessera/dist/context.h"         // IWYU pragma: export
#include "tessera/dist/dataloader.h"      // IWYU pragma: export
#include "tessera/dist/dist_graph.h"      // IWYU pragma: export
#include "tessera/dist/dist_tensor.h"     // IWYU pragma: export
#include "tessera/dist/embedding.h"       // IWYU pragma: export
#include "tessera/dist/graph_services.h"  // IWYU pragma: export
#include "tessera/dist/parallel.h"        // IWYU pragma: export

#endif  // TESSERA_INCLUDE_TESSERA_DIST_H_
