// File: examples/graphsage/train_dist.cpp
//
// Distributed GraphSAGE node classification: DGL's
// examples/distributed/graphsage/node_classification.py, in C++ over
// tessera's public API. The same binary runs standalone (one-part partition,
// no launcher) and launched on a cluster:
//
//   graphsage_train_dist --graph-name cora --part-config parts/cora.json
//       --num-epochs 20 --batch-size 1000 --fan-out 10,25 --num-hidden 16  (one line)
//
// Every trainer prints its epochs; trainer 0 prints the summary, and with
// --json a last line "RESULT {...}" that tests and `tessera bench train` read.
#include <torch/nn/functional/loss.h>
#include <torch/optim/adam.h>
#include <torch/serialize.h>
#include <torch/utils.h>

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "examples/common.h"
#include "nlohmann/json.hpp"
#include "spdlog/spdlog.h"
#include "tessera/base/resource.h"
#include "tessera/base/strings.h"
#include "tessera/base/time.h"
#include "tessera/dist.h"
#include "tessera/dist/parallel.h"
#include "tessera/nn.h"

namespace {

namespace dist = tessera::dist;
using tessera::Stopwatch;
using tessera::examples::Accuracy;
using tessera::examples::NumClasses;
using tessera::examples::ParseFanouts;
using tessera::examples::RequireNodeData;

struct Flags : tessera::examples::CommonFlags {
  int64_t batch_size_eval = 10000;
  int num_layers = 2;
  double input_dropout = 0, weight_decay = 0;
  int eval_every = 5, log_every = 20;
  std::string feat = "feat", label = "label";
  std::string save_model;
  bool row_normalize = false;
  tessera::examples::CheckpointFlags checkpoint;
};

// A copy of `feat` with every row divided by its sum (rows summing to zero
// stay zero), as GCN's preprocessing: each trainer fills its share.
dist::DistTensor RowNormalized(const dist::DistGraph& g, const dist::DistTensor& feat) {
  Stopwatch watch;
  dist::DistTensor out(feat.shape(), torch::kFloat32, feat.name() + ".row_normalized");
  torch::Tensor mine =
      dist::node_split(torch::ones({g.num_nodes()}, torch::kBool), g.partition_book());
  constexpr int64_t kChunk = 100'000;
  for (int64_t begin = 0; begin < mine.size(0); begin += kChunk) {
    torch::Tensor ids = mine.slice(0, begin, std::min(mine.size(0), begin + kChunk));
    torch::Tensor rows = feat[ids].to(torch::kFloat32);
    torch::Tensor sums = rows.sum(1, /*keepdim=*/true);
    out.set(ids, rows / torch::where(sums == 0, torch::ones_like(sums), sums));
  }
  g.barrier();
  spdlog::info("row-normalised '{}' in {:.2f} s", feat.name(), watch.Seconds());
  return out;
}

struct EpochStats {
  // sample: waiting for the next batch (sampled and its rows pulled by the
  // loader's threads, while earlier batches computed); pull: taking its
  // rows (0 unless prefetching is off).
  double seconds = 0, sample = 0, pull = 0, forward = 0, backward = 0, update = 0, sync = 0;
  double loss = 0, train_acc = 0;
  int64_t seeds = 0, batches = 0;
};

int Run(const Flags& f) {
  Stopwatch total;
  auto ctx = dist::initialize(f.ip_config);
  const int rank = ctx->rank();
  dist::DistGraph g(f.graph_name, f.part_config);
  torch::manual_seed(f.seed);
  dist::manual_seed(f.seed + static_cast<uint64_t>(rank));
  const std::vector<int64_t> fanouts = ParseFanouts(f.fan_out);

  RequireNodeData(g, {f.feat, f.label, "train_mask", "val_mask", "test_mask"});
  auto schemes = g.node_attr_schemes();
  if (schemes[f.feat].shape.size() != 1) throw dist::Error("'" + f.feat + "' must be [nodes, dim]");
  const int64_t in_feats = schemes[f.feat].shape[0];
  dist::DistTensor feat = g.ndata(f.feat), labels = g.ndata(f.label);
  const auto& book = g.partition_book();
  if (f.row_normalize) feat = RowNormalized(g, feat);
  torch::Tensor train_nid = dist::node_split(g.ndata("train_mask"), book);
  torch::Tensor val_nid = dist::node_split(g.ndata("val_mask"), book);
  torch::Tensor test_nid = dist::node_split(g.ndata("test_mask"), book);
  const int64_t num_classes = NumClasses(g, labels);
  spdlog::info("trainer {}: {} train / {} val / {} test nodes here, {} features, {} classes", rank,
               train_nid.size(0), val_nid.size(0), test_nid.size(0), in_feats, num_classes);

  tessera::nn::SAGE model(in_feats, f.num_hidden, num_classes, f.num_layers, f.dropout,
                          f.input_dropout);
  dist::DistributedDataParallel ddp(model.ptr());
  torch::optim::Adam optimizer(model->parameters(),
                               torch::optim::AdamOptions(f.lr).weight_decay(f.weight_decay));
  // The sampler threads pull each batch's features and labels while the
  // previous batch computes (DGL's prefetch_node_feats / prefetch_labels).
  dist::DistNodeDataLoader loader(
      g, train_nid,
      {.fanouts = fanouts, .prefetch_node_feats = {feat.name()}, .prefetch_labels = {f.label}},
      {.batch_size = f.batch_size, .shuffle = true, .seed = f.seed, .num_workers = f.num_workers});

  nlohmann::json result = {{"mode", ctx->standalone() ? "standalone" : "distributed"},
                           {"world_size", ctx->world_size()},
                           {"num_hidden", f.num_hidden},
                           {"fan_out", fanouts},
                           {"batch_size", f.batch_size},
                           {"batches_per_epoch", loader.size()},
                           {"startup_s", total.Seconds()}};
  tessera::examples::TrainingCheckpoints checkpoints(
      g, f.checkpoint, {.module = model.ptr().get(), .optimizer = &optimizer});
  const int first_epoch = checkpoints.Resume(loader, rank);
  nlohmann::json epochs = nlohmann::json::array();
  double val_acc = 0, test_acc = 0, inference_s = 0, best_val = -1, test_at_best_val = 0;
  for (int epoch = first_epoch; epoch < f.num_epochs; ++epoch) {
    model->train();
    EpochStats e;
    Stopwatch epoch_watch, step;
    double loss_sum = 0, correct = 0;
    auto it = loader.begin();
    e.sample += step.Seconds();
    for (; it != loader.end();) {
      const dist::MiniBatch& batch = *it;
      step.Reset();
      torch::Tensor x = batch.blocks.front().srcdata.at(feat.name());  // Row-normalised or not.
      torch::Tensor y = batch.blocks.back().dstdata.at(f.label).to(torch::kInt64);
      e.pull += step.Seconds();
      step.Reset();
      torch::Tensor logits = model->forward(batch.blocks, x);
      torch::Tensor loss = torch::nn::functional::cross_entropy(logits, y);
      e.forward += step.Seconds();
      step.Reset();
      optimizer.zero_grad();
      loss.backward();
      e.backward += step.Seconds();
      e.sync += ddp.synchronize().wait_seconds;
      step.Reset();
      optimizer.step();
      const int64_t n = batch.seeds[0].size(0);
      loss_sum += loss.item<double>() * static_cast<double>(n);
      correct += (logits.argmax(1) == y).sum().item<double>();
      e.seeds += n;
      ++e.batches;
      e.update += step.Seconds();
      checkpoints.Step(epoch, e.batches);
      if (f.log_every > 0 && e.batches % f.log_every == 0) {
        spdlog::info("trainer {} epoch {} batch {}/{}: loss {:.4f}", rank, epoch, e.batches,
                     loader.size(), loss.item<double>());
      }
      step.Reset();
      ++it;
      e.sample += step.Seconds();
    }
    e.seconds = epoch_watch.Seconds();
    // Loss and accuracy over every trainer's seeds.
    torch::Tensor sums =
        torch::tensor({loss_sum, correct, static_cast<double>(e.seeds)}, torch::kFloat64);
    dist::all_reduce_sum(sums);
    double all_seeds = std::max(1.0, sums[2].item<double>());
    e.loss = sums[0].item<double>() / all_seeds;
    e.train_acc = sums[1].item<double>() / all_seeds;
    spdlog::info(
        "trainer {} epoch {}: loss {:.4f}, train acc {:.4f}, {:.2f} s (sample {:.2f}, pull {:.2f} "
        "[waited for; done ahead by the sampler threads], forward {:.2f}, backward {:.2f}, update "
        "{:.2f}, gradient sync {:.2f}), {:.0f} seeds/s here, {:.0f} in all",
        rank, epoch, e.loss, e.train_acc, e.seconds, e.sample, e.pull, e.forward, e.backward,
        e.update, e.sync, static_cast<double>(e.seeds) / e.seconds, all_seeds / e.seconds);
    epochs.push_back({{"epoch", epoch},
                      {"time_s", e.seconds},
                      {"sample_s", e.sample},
                      {"pull_s", e.pull},
                      {"forward_backward_s", e.forward + e.backward},
                      {"forward_s", e.forward},
                      {"backward_s", e.backward},
                      {"update_s", e.update},
                      {"sync_s", e.sync},
                      {"loss", e.loss},
                      {"train_acc", e.train_acc},
                      {"seeds_per_s", all_seeds / e.seconds}});
    if ((f.eval_every > 0 && (epoch + 1) % f.eval_every == 0) || epoch + 1 == f.num_epochs) {
      Stopwatch eval_watch;
      dist::DistTensor out = model->inference(g, feat, f.batch_size_eval);
      inference_s = eval_watch.Seconds();
      val_acc = Accuracy(out, labels, val_nid);
      test_acc = Accuracy(out, labels, test_nid);
      if (val_acc > best_val) {
        best_val = val_acc;
        test_at_best_val = test_acc;
      }
      spdlog::info("trainer {} epoch {}: val acc {:.4f}, test acc {:.4f}, inference {:.2f} s", rank,
                   epoch, val_acc, test_acc, inference_s);
      g.barrier();  // Nobody drops the outputs while another trainer still reads them.
    }
  }
  double mean = 0;
  for (const auto& e : epochs) mean += e["time_s"].get<double>();
  mean /= std::max<size_t>(1, epochs.size());
  result["epochs"] = epochs;
  result["epoch_time_mean_s"] = mean;
  result["inference_s"] = inference_s;
  result["val_acc"] = val_acc;
  result["test_acc"] = test_acc;
  result["test_acc_at_best_val"] = test_at_best_val;
  result["peak_rss_bytes"] = tessera::PeakRssBytes();
  result["total_s"] = total.Seconds();
  // Every trainer holds the same weights (DDP): a checksum to compare.
  double checksum = 0;
  for (const torch::Tensor& p : model->parameters()) {
    checksum += p.to(torch::kFloat64).abs().sum().item<double>();
  }
  std::printf("trainer %d parameter checksum %.12g\n", rank, checksum);
  result["parameter_checksum"] = checksum;
  if (!f.save_model.empty() && rank == 0) torch::save(model, f.save_model);
  if (rank == 0) {
    spdlog::info(
        "done: test accuracy {:.4f} (val {:.4f}), mean epoch {:.2f} s, inference "
        "{:.2f} s, total {:.1f} s",
        test_acc, val_acc, mean, inference_s, total.Seconds());
  }
  return tessera::examples::Finish(f, rank, result);
}

}  // namespace

int main(int argc, char** argv) {
  tessera::examples::RestartWithPassiveOmpWait(argv);
  Flags f;
  CLI::App app{"Distributed GraphSAGE node classification (tessera)"};
  tessera::examples::AddCommonFlags(app, f);
  tessera::examples::AddPositive(app, "--batch-size-eval,--batch_size_eval", f.batch_size_eval);
  tessera::examples::AddPositive(app, "--num-layers,--num_layers", f.num_layers);
  app.add_option("--input-dropout,--input_dropout", f.input_dropout,
                 "Dropout on the input features")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 0.999));
  app.add_option("--weight-decay,--weight_decay", f.weight_decay)->capture_default_str();
  app.add_option("--eval-every,--eval_every", f.eval_every)->capture_default_str();
  app.add_option("--log-every,--log_every", f.log_every, "Batches between progress lines (0: none)")
      ->capture_default_str();
  app.add_option("--feat", f.feat, "Node feature tensor")->capture_default_str();
  app.add_option("--label", f.label, "Node label tensor")->capture_default_str();
  app.add_option("--save-model", f.save_model, "Write the trained model here (trainer 0)");
  tessera::examples::AddCheckpointFlags(app, f.checkpoint);
  app.add_flag("--row-normalize,--row_normalize", f.row_normalize,
               "Divide every feature row by its sum first (GCN's preprocessing)");
  return tessera::examples::ParseAndRun(app, argc, argv, [&] {
    if (f.num_layers != static_cast<int>(ParseFanouts(f.fan_out).size())) {
      throw dist::Error("--num-layers " + std::to_string(f.num_layers) + " needs " +
                        std::to_string(f.num_layers) + " fanouts, --fan-out is " + f.fan_out);
    }
    return Run(f);
  });
}
