// File: tests/integration/trainer_program.cc
//
// A trainer written only against include/tessera/dist.h, run by the runtime
// tests twice: standalone (no launcher environment; a one-part partition) and
// launched by LocalJob on a two-machine job. Same binary, same code path.
//
//   trainer_program <graph_name> <part_config>
// Prints "ok <checksum>" and exits 0, or prints the error and exits 1.
#include <cstdio>

#include "include/tessera/dist.h"

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  namespace dist = tessera::dist;
  try {
    auto ctx = dist::initialize();
    dist::DistGraph g(argv[1], argv[2]);
    torch::Tensor ids = torch::arange(g.num_nodes());
    torch::Tensor feat = g.ndata("feat")[ids];
    torch::Tensor label = g.ndata("label")[ids];
    // Every trainer adds one to every row of a shared tensor.
    dist::DistTensor counts({g.num_nodes(), 2}, torch::kFloat64, "counts");
    g.barrier();
    counts.add(ids, torch::ones({g.num_nodes(), 2}, torch::kFloat64));
    g.barrier();
    torch::Tensor total = counts[ids];
    int trainers = ctx->world_size();
    if (!torch::all(total == trainers).item<bool>()) {
      std::fprintf(stderr, "counts hold %f, expected %d\n", total.min().item<double>(), trainers);
      return 1;
    }
    g.barrier();
    std::printf("ok %.6f %ld rank %d of %d\n", feat.sum().item<double>(),
                static_cast<long>(label.sum().item<int64_t>()), g.rank(), trainers);
  } catch (const dist::Error& e) {
    std::fprintf(stderr, "trainer_program: %s\n", e.what());
    return 1;
  }
  dist::exit_client();
  return 0;
}
