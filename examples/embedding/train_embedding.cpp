// File: examples/embedding/train_embedding.cpp
//
// Transductive node classification without input features: every node gets
// a learnable embedding (DistEmbedding, updated by SparseAdam on the machine
// that owns its rows), a GraphSAGE model on top (dense weights averaged by
// DistributedDataParallel). Before training it evaluates the untrained model
// on the random embeddings: the baseline the trained one must beat.
//
//   embedding_train --graph-name cora --part-config parts/cora.json --num-epochs 100
//
// Trainer 0 prints "RESULT {json}" with --json.
#include <torch/nn/functional/loss.h>
#include <torch/optim/adam.h>

#include <cstdio>
#include <string>

#include "CLI/CLI.hpp"
#include "examples/common.h"
#include "nlohmann/json.hpp"
#include "spdlog/spdlog.h"
#include "tessera/base/time.h"
#include "tessera/dist.h"
#include "tessera/dist/embedding.h"
#include "tessera/dist/parallel.h"
#include "tessera/nn.h"

namespace {

namespace dist = tessera::dist;
using tessera::Stopwatch;

struct Flags : tessera::examples::CommonFlags {
  Flags() {
    num_epochs = 100;
    num_hidden = 64;
    lr = 0.01;
  }
  std::string label = "label", save_dir;
  int num_layers = 2, eval_every = 20;
  int64_t embedding_dim = 64;
  double sparse_lr = 0.05;
};

int Run(const Flags& f) {
  Stopwatch total;
  auto ctx = dist::initialize(f.ip_config);
  dist::DistGraph g(f.graph_name, f.part_config);
  torch::manual_seed(f.seed);
  dist::manual_seed(f.seed + static_cast<uint64_t>(ctx->rank()));
  tessera::examples::RequireNodeData(g, {f.label, "train_mask", "val_mask", "test_mask"});
  const std::vector<int64_t> fanouts = tessera::examples::ParseFanouts(f.fan_out);
  dist::DistTensor labels = g.ndata(f.label);
  const int64_t num_classes = tessera::examples::NumClasses(g, labels);
  const auto& book = g.partition_book();
  torch::Tensor train_nid = dist::node_split(g.ndata("train_mask"), book);
  torch::Tensor val_nid = dist::node_split(g.ndata("val_mask"), book);
  torch::Tensor test_nid = dist::node_split(g.ndata("test_mask"), book);

  dist::DistEmbedding emb(g.num_nodes(), f.embedding_dim, "node_emb",
                          dist::Init::Normal(0, 1, f.seed));
  tessera::nn::SAGE model(f.embedding_dim, f.num_hidden, num_classes, f.num_layers, f.dropout);
  dist::DistributedDataParallel ddp(model.ptr());
  torch::optim::Adam optimizer(model->parameters(), torch::optim::AdamOptions(f.lr));
  dist::SparseAdam sparse_optimizer({emb}, f.sparse_lr);
  dist::DistNodeDataLoader loader(
      g, train_nid, {.fanouts = fanouts},
      {.batch_size = f.batch_size, .shuffle = true, .seed = f.seed, .num_workers = f.num_workers});

  auto evaluate = [&](const char* when) {
    Stopwatch watch;
    dist::DistTensor out = model->inference(g, emb.weight(), 10000);
    double val = tessera::examples::Accuracy(out, labels, val_nid);
    double test = tessera::examples::Accuracy(out, labels, test_nid);
    g.barrier();
    spdlog::info("trainer {} {}: val acc {:.4f}, test acc {:.4f} ({:.2f} s)", ctx->rank(), when,
                 val, test, watch.Seconds());
    return std::make_pair(val, test);
  };
  auto [untrained_val, untrained_test] = evaluate("untrained");
  double val = 0, test = 0;
  for (int epoch = 0; epoch < f.num_epochs; ++epoch) {
    model->train();
    emb.train();
    Stopwatch watch;
    double loss_sum = 0;
    int64_t seeds = 0;
    for (const dist::MiniBatch& batch : loader) {
      torch::Tensor h = emb(batch.input_nodes[0]);
      torch::Tensor logits = model->forward(batch.blocks, h);
      torch::Tensor loss =
          torch::nn::functional::cross_entropy(logits, labels[batch.seeds[0]].to(torch::kInt64));
      optimizer.zero_grad();
      loss.backward();
      ddp.synchronize();
      optimizer.step();
      sparse_optimizer.step();
      loss_sum += loss.item<double>() * static_cast<double>(batch.seeds[0].size(0));
      seeds += batch.seeds[0].size(0);
    }
    spdlog::info("trainer {} epoch {}: loss {:.4f}, {:.2f} s", ctx->rank(), epoch,
                 loss_sum / std::max<int64_t>(1, seeds), watch.Seconds());
    if ((f.eval_every > 0 && (epoch + 1) % f.eval_every == 0) || epoch + 1 == f.num_epochs) {
      emb.eval();
      std::tie(val, test) = evaluate(("epoch " + std::to_string(epoch)).c_str());
    }
  }
  if (!f.save_dir.empty()) {
    emb.save(f.save_dir + "/node_emb");
    sparse_optimizer.save(f.save_dir + "/optimizer");
  }
  if (ctx->rank() == 0) {
    spdlog::info("done: test accuracy {:.4f} (untrained {:.4f}), total {:.1f} s", test,
                 untrained_test, total.Seconds());
  }
  return tessera::examples::Finish(f, ctx->rank(),
                                   {{"untrained_val_acc", untrained_val},
                                    {"untrained_test_acc", untrained_test},
                                    {"val_acc", val},
                                    {"test_acc", test},
                                    {"world_size", ctx->world_size()},
                                    {"total_s", total.Seconds()}});
}

}  // namespace

int main(int argc, char** argv) {
  tessera::examples::RestartWithPassiveOmpWait(argv);
  Flags f;
  CLI::App app{"Transductive node classification with learned node embeddings (tessera)"};
  tessera::examples::AddCommonFlags(app, f);
  tessera::examples::AddPositive(app, "--embedding-dim,--embedding_dim", f.embedding_dim);
  tessera::examples::AddPositive(app, "--num-layers,--num_layers", f.num_layers);
  app.add_option("--sparse-lr,--sparse_lr", f.sparse_lr, "SparseAdam learning rate")
      ->capture_default_str();
  app.add_option("--eval-every,--eval_every", f.eval_every)->capture_default_str();
  app.add_option("--label", f.label)->capture_default_str();
  app.add_option("--save-dir", f.save_dir,
                 "Write the embedding and the optimizer state here after training");
  return tessera::examples::ParseAndRun(app, argc, argv, [&] {
    if (f.num_layers != static_cast<int>(tessera::examples::ParseFanouts(f.fan_out).size())) {
      throw dist::Error("--num-layers needs one fanout per layer in --fan-out");
    }
    return Run(f);
  });
}
