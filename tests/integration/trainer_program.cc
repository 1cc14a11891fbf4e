// File: tests/integration/trainer_program.cc
//
// A trainer written only against include/tessera/dist.h, run by the runtime
// tests twice: standalone (no launcher environment; a one-part partition) and
// launched by LocalJob on a two-machine job. Same binary, same code path.
//
//   trainer_program <graph_name> <part_config>
// Prints "ok <checksum>" and exits 0, or prints the error and exits 1.
//
//   trainer_program <graph_name> <part_config> models-differ
// Trainer 0 builds Linear(10, 4), the others Linear(1433, 4) (as features
// of another width on one partition would): DistributedDataParallel must
// fail on every trainer with an error, never a Gloo abort.
//
//   trainer_program <graph_name> <part_config> fail-in-allreduce
// The exit path after a failed collective: trainer 0 fails on purpose after
// 2 s while the others wait for it in an all-reduce, which then fails
// ("Connection closed by peer"); each prints its error and exits 1. The test
// stops a server meanwhile, so the exit path talks to a silent server.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <set>
#include <thread>

#include "tessera/dist.h"
#include "tessera/dist/parallel.h"

namespace {

int FailInAllReduce(const char* graph_name, const char* part_config) {
  namespace dist = tessera::dist;
  auto ctx = dist::initialize();
  dist::DistGraph g(graph_name, part_config);
  torch::Tensor x = g.ndata("feat")[torch::arange(std::min<int64_t>(g.num_nodes(), 64))];
  torch::Tensor sum = x.sum(0);
  dist::all_reduce_sum(sum);  // Every trainer is in the group.
  std::printf("rank %d ready\n", ctx->rank());
  std::fflush(stdout);
  if (ctx->rank() == 0) {
    std::this_thread::sleep_for(std::chrono::seconds(2));
    throw dist::Error("trainer 0 fails on purpose");
  }
  dist::all_reduce_sum(sum);  // Trainer 0 never comes.
  throw dist::Error("the all-reduce returned without trainer 0");
}

int ModelsDiffer(const char* graph_name, const char* part_config) {
  namespace dist = tessera::dist;
  auto ctx = dist::initialize();
  dist::DistGraph g(graph_name, part_config);
  auto model = std::make_shared<torch::nn::LinearImpl>(ctx->rank() == 0 ? 10 : 1433, 4);
  dist::DistributedDataParallel ddp(model);
  throw dist::Error("DistributedDataParallel took models of different shapes");
}

}  // namespace

int main(int argc, char** argv) {
  namespace dist = tessera::dist;
  if (argc == 4 && (std::strcmp(argv[3], "fail-in-allreduce") == 0 ||
                    std::strcmp(argv[3], "models-differ") == 0)) {
    try {
      return std::strcmp(argv[3], "models-differ") == 0 ? ModelsDiffer(argv[1], argv[2])
                                                        : FailInAllReduce(argv[1], argv[2]);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "trainer_program: error: %s\n", e.what());
      return 1;
    }
  }
  if (argc != 3) return 2;
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
    // Mini-batches over this trainer's share of the training nodes, split
    // unevenly on purpose (force_even off), sampled by the launcher's number
    // of sampler threads: every trainer still runs the same number of batches.
    torch::Tensor mine =
        dist::node_split(g.ndata("train_mask"), g.partition_book(), {.force_even = false});
    dist::DistNodeDataLoader loader(g, mine, {.fanouts = {5, 5}},
                                    {.batch_size = 8, .shuffle = true});
    int64_t batches = 0;
    std::set<int64_t> covered;
    for (const dist::MiniBatch& batch : loader) {
      ++batches;
      for (int64_t i = 0; i < batch.seeds[0].size(0); ++i)
        covered.insert(batch.seeds[0][i].item<int64_t>());
      torch::Tensor x = g.ndata("feat")[batch.input_nodes[0]];
      if (x.size(0) != batch.blocks[0].num_src_nodes()) {
        std::fprintf(stderr, "input features do not match the first block\n");
        return 1;
      }
    }
    if (static_cast<int64_t>(covered.size()) != mine.size(0) || batches != loader.size()) {
      std::fprintf(stderr, "the epoch covered %zu of %ld ids in %ld batches (%ld expected)\n",
                   covered.size(), static_cast<long>(mine.size(0)), static_cast<long>(batches),
                   static_cast<long>(loader.size()));
      return 1;
    }
    std::printf("loader batches %ld own %ld samplers %d\n", static_cast<long>(batches),
                static_cast<long>(mine.size(0)), ctx->num_samplers());
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
