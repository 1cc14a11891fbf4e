// File: examples/rgcn/train_rgcn.cpp
//
// Distributed R-GCN entity classification on a heterogeneous graph: DGL's
// examples/distributed/rgcn (node_classification.py), in C++ over tessera's
// public API. Node types with a feature array ("feat") enter through a linear
// projection, featureless types through a learned DistEmbedding per type
// trained with a sparse optimizer (DGL's DistEmbedLayer); RelGraphConv layers
// with basis decomposition run over sampled blocks in the homogeneous id
// space, each edge carrying its relation. The same binary runs standalone
// (one-part partition) and launched:
//
//   rgcn_train --graph-name mag --part-config parts/mag.json --predict-ntype paper
//       --num-epochs 10 --fan-out 10,10 --num-hidden 64 --num-bases 2   (one line)
//
// --model mlp trains a features-only baseline on the same seeds (no graph).
// Trainer 0 prints, with --json, a last line "RESULT {...}".
#include <torch/nn/functional/loss.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/container/moduledict.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/optim/adam.h>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "examples/common.h"
#include "nlohmann/json.hpp"
#include "spdlog/spdlog.h"
#include "tessera/base/resource.h"
#include "tessera/base/time.h"
#include "tessera/dist.h"
#include "tessera/dist/embedding.h"
#include "tessera/dist/parallel.h"
#include "tessera/nn.h"

namespace {

namespace dist = tessera::dist;
namespace tnn = tessera::nn;
using tessera::Stopwatch;
using tessera::examples::ParseFanouts;

struct Flags : tessera::examples::CommonFlags {
  Flags() {
    num_epochs = 10;
    batch_size = 1024;
    fan_out = "10,10";
    num_hidden = 64;
    lr = 0.01;
  }
  std::string predict_ntype = "paper", feat = "feat", label = "label", model = "rgcn";
  int64_t batch_size_eval = 4096, num_bases = 2;
  double sparse_lr = 0.06;
  tessera::examples::CheckpointFlags checkpoint;
};

// The dense part of the model (what DDP synchronises): one projection per
// node type with features, and the R-GCN (or the MLP baseline).
struct NetImpl : torch::nn::Module {
  torch::nn::ModuleDict projections{nullptr};
  tnn::RGCN rgcn{nullptr};
  torch::nn::Sequential mlp{nullptr};
};
TORCH_MODULE(Net);

class Trainer {
 public:
  Trainer(const Flags& f, dist::DistGraph& g) : f_(f), g_(g) {
    const auto& ntypes = g.ntypes();
    predict_ = g.get_ntype_id(f.predict_ntype);
    for (size_t t = 0; t < ntypes.size(); ++t) {
      auto schemes = g.nodes(ntypes[t]).schemes();
      auto it = schemes.find(f.feat);
      if (it != schemes.end() && it->second.shape.size() == 1) {
        features_.emplace(static_cast<int>(t), g.nodes(ntypes[t]).data(f.feat));
        feat_dims_[t] = it->second.shape[0];
      }
    }
    // A featureless predicted type learns an embedding like every other
    // featureless type (the R-GCN paper's AIFB, MUTAG, BGS and AM have no
    // features at all); only the features-only baseline needs them.
    if (f.model == "mlp" && !features_.count(predict_)) {
      throw dist::Error("--model mlp: node type '" + f.predict_ntype + "' has no array '" + f.feat +
                        "' (the baseline reads the seeds' features only)");
    }
    labels_ = std::make_unique<dist::DistTensor>(g.nodes(f.predict_ntype).data(f.label));
    net_ = Net();
    torch::OrderedDict<std::string, std::shared_ptr<torch::nn::Module>> projections;
    for (const auto& [t, dim] : feat_dims_) {
      projections.insert(ntypes[t], torch::nn::Linear(dim, f.num_hidden).ptr());
    }
    net_->projections = net_->register_module("projections", torch::nn::ModuleDict(projections));
    num_classes_ = NumClasses();
    const int layers = static_cast<int>(ParseFanouts(f.fan_out).size());
    if (f.model == "rgcn") {
      net_->rgcn =
          net_->register_module("rgcn", tnn::RGCN(f.num_hidden, f.num_hidden, num_classes_,
                                                  static_cast<int64_t>(g.canonical_etypes().size()),
                                                  f.num_bases, layers, f.dropout));
      for (size_t t = 0; t < ntypes.size(); ++t) {
        if (features_.count(static_cast<int>(t))) continue;
        embeddings_.emplace(
            static_cast<int>(t),
            dist::DistEmbedding(g.num_nodes(ntypes[t]), f.num_hidden, "rgcn_emb_" + ntypes[t],
                                dist::Init::Uniform(-1, 1, f.seed), dist::PartPolicy::kNode,
                                ntypes[t]));
      }
    } else {
      net_->mlp = net_->register_module(
          "mlp", torch::nn::Sequential(torch::nn::ReLU(), torch::nn::Dropout(f.dropout),
                                       torch::nn::Linear(f.num_hidden, f.num_hidden),
                                       torch::nn::ReLU(), torch::nn::Dropout(f.dropout),
                                       torch::nn::Linear(f.num_hidden, num_classes_)));
    }
    std::vector<dist::DistEmbedding> embs;
    for (auto& [t, e] : embeddings_) embs.push_back(e);
    if (!embs.empty()) sparse_ = std::make_unique<dist::SparseAdam>(embs, f.sparse_lr);
  }

  Net& net() { return net_; }
  int64_t num_classes() const { return num_classes_; }
  dist::SparseAdam* sparse() { return sparse_.get(); }
  void set_training(bool on) {
    net_->train(on);
    for (auto& [t, e] : embeddings_) e.train(on);
  }

  // Hidden input rows of homogeneous node ids: projected features, or the
  // type's learned embedding. Each type's rows are computed together, then
  // put in the nodes' order by one gather (one scatter in the backward).
  torch::Tensor Input(const torch::Tensor& nodes) {
    auto [types, per] = g_.map_to_per_ntype(nodes);
    const int64_t n = nodes.size(0);
    std::vector<torch::Tensor> parts, places;
    int64_t placed = 0;
    for (size_t t = 0; t < g_.ntypes().size(); ++t) {
      torch::Tensor where = (types == static_cast<int64_t>(t)).nonzero().reshape({-1});
      if (where.size(0) == 0) continue;
      torch::Tensor ids = per.index_select(0, where);
      torch::Tensor rows;
      auto feat = features_.find(static_cast<int>(t));
      if (feat != features_.end()) {
        auto proj = net_->projections[g_.ntypes()[t]]->as<torch::nn::Linear>();
        rows = proj->forward(feat->second[ids].to(torch::kFloat32));
      } else {
        auto emb = embeddings_.find(static_cast<int>(t));
        if (emb == embeddings_.end()) continue;  // MLP: no other types are read.
        rows = emb->second(ids);
      }
      parts.push_back(rows);
      places.push_back(where);
      placed += where.size(0);
    }
    if (placed < n) {  // Types read by neither (the MLP's): zero rows.
      torch::Tensor unread = torch::ones({n}, torch::kBool);
      for (const torch::Tensor& where : places) unread.index_fill_(0, where, false);
      places.push_back(unread.nonzero().reshape({-1}));
      parts.push_back(torch::zeros({n - placed, f_.num_hidden}));
    }
    if (parts.empty()) return torch::zeros({0, f_.num_hidden});
    // inverse[i]: the row of node i in the concatenated parts.
    torch::Tensor inverse = torch::empty({n}, torch::kInt64);
    inverse.index_put_({torch::cat(places)}, torch::arange(n, torch::kInt64));
    return torch::cat(parts).index_select(0, inverse);
  }

  torch::Tensor Forward(const dist::MiniBatch& batch) {
    if (f_.model == "mlp") return net_->mlp->forward(Input(batch.seeds[0]));
    std::vector<torch::Tensor> etypes;
    for (const dist::Block& b : batch.blocks) etypes.push_back(tnn::block_etypes(g_, b));
    return net_->rgcn->forward(batch.blocks, etypes, Input(batch.input_nodes[0]));
  }

  torch::Tensor Labels(const torch::Tensor& seeds) {
    return (*labels_)[g_.map_to_per_ntype(seeds).second].to(torch::kInt64);
  }

  // This trainer's seeds of a mask of the predicted type, as homogeneous ids.
  torch::Tensor Split(const std::string& mask) {
    torch::Tensor mine =
        dist::node_split(g_.nodes(f_.predict_ntype).data(mask), g_.partition_book());
    return g_.map_to_homo_nid(mine, f_.predict_ntype);
  }

 private:
  int64_t NumClasses() {
    auto ctx = dist::initialize();
    torch::Tensor slots = torch::zeros({ctx->world_size()}, torch::kFloat64);
    dist::SplitOptions o;
    o.type = f_.predict_ntype;
    torch::Tensor mine = dist::node_split(
        torch::ones({g_.num_nodes(f_.predict_ntype)}, torch::kBool), g_.partition_book(), o);
    if (mine.size(0) > 0) slots[ctx->rank()] = (*labels_)[mine].max().item<double>();
    dist::all_reduce_sum(slots);
    return static_cast<int64_t>(slots.max().item<double>()) + 1;
  }

  const Flags& f_;
  dist::DistGraph& g_;
  int predict_ = 0;
  std::map<int, dist::DistTensor> features_;
  std::map<int, int64_t> feat_dims_;
  std::map<int, dist::DistEmbedding> embeddings_;
  std::unique_ptr<dist::DistTensor> labels_;
  Net net_{nullptr};
  std::unique_ptr<dist::SparseAdam> sparse_;
  int64_t num_classes_ = 0;
};

// Accuracy over every trainer's seeds, and the majority-class share.
double Evaluate(Trainer& t, dist::DistGraph& g, const torch::Tensor& seeds,
                const std::vector<int64_t>& fanouts, int64_t batch_size, uint64_t seed) {
  t.set_training(false);
  torch::NoGradGuard no_grad;
  dist::DistNodeDataLoader loader(g, seeds, {.fanouts = fanouts},
                                  {.batch_size = batch_size, .shuffle = false, .seed = seed});
  torch::Tensor counts = torch::zeros({2}, torch::kFloat64);
  for (const dist::MiniBatch& batch : loader) {
    torch::Tensor pred = t.Forward(batch).argmax(1);
    counts[0] += (pred == t.Labels(batch.seeds[0])).sum().item<double>();
    counts[1] += static_cast<double>(batch.seeds[0].size(0));
  }
  dist::all_reduce_sum(counts);
  return counts[0].item<double>() / std::max(1.0, counts[1].item<double>());
}

int Run(const Flags& f) {
  Stopwatch total;
  auto ctx = dist::initialize(f.ip_config);
  const int rank = ctx->rank();
  dist::DistGraph g(f.graph_name, f.part_config);
  torch::manual_seed(f.seed);
  dist::manual_seed(f.seed + static_cast<uint64_t>(rank));
  const std::vector<int64_t> fanouts = ParseFanouts(f.fan_out);
  Trainer t(f, g);
  torch::Tensor train = t.Split("train_mask"), val = t.Split("val_mask"),
                test = t.Split("test_mask");
  spdlog::info(
      "trainer {}: {} node types, {} relations; {} train / {} val / {} test '{}' "
      "nodes here, {} classes, model {}",
      rank, g.ntypes().size(), g.canonical_etypes().size(), train.size(0), val.size(0),
      test.size(0), f.predict_ntype, t.num_classes(), f.model);
  // The majority-class baseline: the most frequent training label.
  torch::Tensor hist = torch::zeros({t.num_classes()}, torch::kFloat64);
  if (train.size(0) > 0) {
    hist.index_add_(0, t.Labels(train), torch::ones({train.size(0)}, torch::kFloat64));
  }
  dist::all_reduce_sum(hist);
  const int64_t majority = hist.argmax().item<int64_t>();
  torch::Tensor test_hist = torch::zeros({2}, torch::kFloat64);
  if (test.size(0) > 0) {
    test_hist[0] = (t.Labels(test) == majority).sum().item<double>();
    test_hist[1] = static_cast<double>(test.size(0));
  }
  dist::all_reduce_sum(test_hist);
  const double majority_acc =
      test_hist[0].item<double>() / std::max(1.0, test_hist[1].item<double>());

  dist::DistributedDataParallel ddp(t.net().ptr());
  torch::optim::Adam optimizer(t.net()->parameters(), torch::optim::AdamOptions(f.lr));
  dist::DistNodeDataLoader loader(
      g, train, {.fanouts = fanouts},
      {.batch_size = f.batch_size, .shuffle = true, .seed = f.seed, .num_workers = f.num_workers});
  // The dense net and its optimizer; the embeddings and SparseAdam's state
  // come with every checkpoint.
  tessera::examples::TrainingCheckpoints checkpoints(
      g, f.checkpoint, {.module = t.net().ptr().get(), .optimizer = &optimizer});
  const int first_epoch = checkpoints.Resume(loader, ctx->rank());
  nlohmann::json epochs = nlohmann::json::array();
  double val_acc = 0, test_acc = 0;
  for (int epoch = first_epoch; epoch < f.num_epochs; ++epoch) {
    int64_t batches = 0;
    t.set_training(true);
    Stopwatch watch, step;
    double loss_sum = 0, correct = 0, seeds = 0;
    // sample: waiting for the next batch (sampled ahead by the sampler
    // threads); forward includes reading the input rows and embeddings.
    double sample_s = 0, forward_s = 0, backward_s = 0, update_s = 0;
    auto it = loader.begin();
    sample_s += step.Seconds();
    for (; it != loader.end();) {
      const dist::MiniBatch& batch = *it;
      step.Reset();
      torch::Tensor logits = t.Forward(batch);
      torch::Tensor y = t.Labels(batch.seeds[0]);
      torch::Tensor loss = torch::nn::functional::cross_entropy(logits, y);
      forward_s += step.Seconds();
      step.Reset();
      optimizer.zero_grad();
      loss.backward();
      ddp.synchronize();
      backward_s += step.Seconds();
      step.Reset();
      optimizer.step();
      if (t.sparse()) t.sparse()->step();
      checkpoints.Step(epoch, ++batches);
      loss_sum += loss.item<double>() * static_cast<double>(y.size(0));
      correct += (logits.argmax(1) == y).sum().item<double>();
      seeds += static_cast<double>(y.size(0));
      update_s += step.Seconds();
      step.Reset();
      ++it;
      sample_s += step.Seconds();
    }
    torch::Tensor sums = torch::tensor({loss_sum, correct, seeds}, torch::kFloat64);
    dist::all_reduce_sum(sums);
    const double n = std::max(1.0, sums[2].item<double>()), seconds = watch.Seconds();
    val_acc = Evaluate(t, g, val, fanouts, f.batch_size_eval, f.seed);
    spdlog::info(
        "trainer {} epoch {}: loss {:.4f}, train acc {:.4f}, val acc {:.4f}, {:.2f} s "
        "(sample {:.2f}, forward {:.2f}, backward {:.2f}, update {:.2f})",
        rank, epoch, sums[0].item<double>() / n, sums[1].item<double>() / n, val_acc, seconds,
        sample_s, forward_s, backward_s, update_s);
    epochs.push_back({{"epoch", epoch},
                      {"time_s", seconds},
                      {"sample_s", sample_s},
                      {"forward_s", forward_s},
                      {"backward_s", backward_s},
                      {"update_s", update_s},
                      {"loss", sums[0].item<double>() / n},
                      {"train_acc", sums[1].item<double>() / n},
                      {"val_acc", val_acc}});
  }
  test_acc = Evaluate(t, g, test, fanouts, f.batch_size_eval, f.seed);
  double checksum = 0;  // Of the dense parameters: the same on every trainer (DDP).
  for (const torch::Tensor& p : t.net()->parameters()) {
    checksum += p.detach().to(torch::kFloat64).abs().sum().item<double>();
  }
  double mean = 0;
  for (const auto& e : epochs) mean += e["time_s"].get<double>();
  mean /= std::max<size_t>(1, epochs.size());
  if (rank == 0) {
    spdlog::info(
        "done ({}): test accuracy {:.4f} (val {:.4f}; majority class {:.4f}), mean "
        "epoch {:.2f} s, total {:.1f} s",
        f.model, test_acc, val_acc, majority_acc, mean, total.Seconds());
  }
  return tessera::examples::Finish(f, rank,
                                   {{"mode", ctx->standalone() ? "standalone" : "distributed"},
                                    {"model", f.model},
                                    {"world_size", ctx->world_size()},
                                    {"epochs", epochs},
                                    {"epoch_time_mean_s", mean},
                                    {"val_acc", val_acc},
                                    {"test_acc", test_acc},
                                    {"majority_acc", majority_acc},
                                    {"parameter_checksum", checksum},
                                    {"peak_rss_bytes", tessera::PeakRssBytes()},
                                    {"total_s", total.Seconds()}});
}

}  // namespace

int main(int argc, char** argv) {
  tessera::examples::RestartWithPassiveOmpWait(argv);
  Flags f;
  CLI::App app{"Distributed R-GCN entity classification on a heterogeneous graph (tessera)"};
  tessera::examples::AddCommonFlags(app, f);
  tessera::examples::AddCheckpointFlags(app, f.checkpoint);
  app.add_option("--predict-ntype,--predict_ntype", f.predict_ntype)->capture_default_str();
  app.add_option("--feat", f.feat, "Node feature array (types without it learn embeddings)")
      ->capture_default_str();
  app.add_option("--label", f.label)->capture_default_str();
  app.add_option("--model", f.model, "rgcn, or mlp (features of the seeds only)")
      ->capture_default_str()
      ->check(CLI::IsMember({"rgcn", "mlp"}));
  tessera::examples::AddPositive(app, "--batch-size-eval,--batch_size_eval", f.batch_size_eval);
  app.add_option("--num-bases,--num_bases", f.num_bases, "Basis weights (<= 0: one per relation)")
      ->capture_default_str();
  tessera::examples::AddPositive(app, "--sparse-lr,--sparse_lr", f.sparse_lr);
  return tessera::examples::ParseAndRun(app, argc, argv, [&] { return Run(f); });
}
