// File: examples/common.h
//
// Pieces the example trainers share: flag parsing and evaluation helpers,
// written against the public API only.
#ifndef TESSERA_EXAMPLES_COMMON_H_
#define TESSERA_EXAMPLES_COMMON_H_

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "CLI/CLI.hpp"
#include "fmt/format.h"
#include "nlohmann/json.hpp"
#include "spdlog/spdlog.h"
#include "tessera/base/strings.h"
#include "tessera/dist.h"
#include "tessera/dist/checkpoint.h"
#include "tessera/dist/parallel.h"

namespace tessera::examples {

// The flags every example takes, with DGL's names (dashes or underscores).
// An example sets its own defaults before AddCommonFlags.
struct CommonFlags {
  std::string graph_name, ip_config, part_config;
  int num_epochs = 20;
  int64_t batch_size = 1000;
  std::string fan_out = "10,25";
  int64_t num_hidden = 16;
  double lr = 0.003, dropout = 0.5;
  int num_workers = -1;
  uint64_t seed = 42;
  bool json = false;
};

// An option with its default shown that must be positive.
template <typename T>
CLI::Option* AddPositive(CLI::App& app, const std::string& names, T& value,
                         const std::string& help = "") {
  return app.add_option(names, value, help)->capture_default_str()->check(CLI::PositiveNumber);
}

inline void AddCommonFlags(CLI::App& app, CommonFlags& f) {
  app.add_option("--graph-name,--graph_name", f.graph_name, "Graph name of the partition")
      ->required();
  app.add_option("--ip-config,--ip_config", f.ip_config,
                 "ip_config file (default: the launcher's)");
  app.add_option("--part-config,--part_config", f.part_config,
                 "Partition config (needed standalone)");
  app.add_option("--num-epochs,--num_epochs", f.num_epochs)
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  AddPositive(app, "--batch-size,--batch_size", f.batch_size);
  app.add_option("--fan-out,--fan_out", f.fan_out, "Fanout per layer, input layer first")
      ->capture_default_str();
  AddPositive(app, "--num-hidden,--num_hidden", f.num_hidden);
  AddPositive(app, "--lr", f.lr, "Dense (model) learning rate");
  app.add_option("--dropout", f.dropout)->capture_default_str()->check(CLI::Range(0.0, 0.999));
  app.add_option("--num-workers,--num_workers", f.num_workers,
                 "Sampler threads (-1: the launcher's --num-samplers)")
      ->capture_default_str();
  app.add_option("--seed", f.seed)->capture_default_str();
  app.add_flag("--json", f.json, "Print a last line RESULT {json} with the figures");
}

// Checkpoints of an example's training loop (docs/checkpoint.md).
struct CheckpointFlags {
  std::string dir;    // Default: the launcher's TESSERA_CHECKPOINT_DIR.
  int64_t every = 0;  // Steps between saves (0: only resume).
  int keep = 3;
};

inline void AddCheckpointFlags(CLI::App& app, CheckpointFlags& f) {
  if (const char* dir = std::getenv("TESSERA_CHECKPOINT_DIR")) f.dir = dir;
  app.add_option("--checkpoint-dir,--checkpoint_dir", f.dir,
                 "Checkpoints go here, and a run continues from the newest one (default: the "
                 "launcher's --checkpoint-dir)");
  app.add_option("--checkpoint-every,--checkpoint_every", f.every,
                 "Save every this many steps (0: never)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--keep", f.keep, "Checkpoints kept")->capture_default_str();
}

// Resume and periodic saves: the model, its optimizer, every embedding and
// sparse optimizer state, the random state, and the loader's position.
class TrainingCheckpoints {
 public:
  TrainingCheckpoints(const dist::DistGraph& g, const CheckpointFlags& f,
                      dist::CheckpointContents contents)
      : every_(f.every), contents_(std::move(contents)) {
    if (!f.dir.empty()) ckpt_.emplace(g, f.dir, f.keep);
  }
  // Restores the newest checkpoint, if any, and moves `loader` to the batch
  // after it; returns the epoch to start at.
  template <typename Loader>
  int Resume(Loader& loader, int rank) {
    if (!ckpt_) return 0;
    std::optional<dist::RestoredCheckpoint> r = ckpt_->restore(contents_);
    if (!r) return 0;
    const nlohmann::json extra = nlohmann::json::parse(r->extra);
    const int64_t epoch = extra.at("epoch").get<int64_t>(),
                  batch = extra.at("batch").get<int64_t>();
    step_ = extra.at("step").get<int64_t>();
    loader.resume(epoch, batch);
    first_epoch_ = static_cast<int>(loader.epoch());
    first_batch_ = epoch == first_epoch_ ? batch : 0;
    spdlog::info("trainer {}: resumed from step {} (epoch {}, batch {}) of {}", rank, step_,
                 first_epoch_, first_batch_, r->path);
    return first_epoch_;
  }
  // After each optimizer step: `batches` of epoch `epoch` done in this run.
  void Step(int epoch, int64_t batches) {
    ++step_;
    if (!ckpt_ || every_ <= 0 || step_ % every_ != 0) return;
    dist::CheckpointContents save = contents_;
    const int64_t batch = (epoch == first_epoch_ ? first_batch_ : 0) + batches;
    save.extra = nlohmann::json{{"step", step_}, {"epoch", epoch}, {"batch", batch}}.dump();
    ckpt_->save(step_, save);
  }

 private:
  std::optional<dist::Checkpoint> ckpt_;
  int64_t every_ = 0, step_ = 0, first_batch_ = 0;
  int first_epoch_ = 0;
  dist::CheckpointContents contents_;
};

// The end of each example's Run: with --json, trainer 0 prints a last line
// `RESULT <json>` (tests and `tessera bench train` read it); then the client
// leaves the job.
inline int Finish(const CommonFlags& f, int rank, const nlohmann::json& result) {
  if (f.json && rank == 0) std::printf("RESULT %s\n", result.dump().c_str());
  std::fflush(stdout);
  dist::exit_client();
  return 0;
}

// The end of each example's main: parses the flags, then runs `run`; an
// exception ends the program with its message.
template <typename Run>
int ParseAndRun(CLI::App& app, int argc, char** argv, Run run) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    return run();
  } catch (const std::exception& e) {
    const std::string_view program = argv[0];
    std::fprintf(stderr, "%s: error: %s\n", program.substr(program.rfind('/') + 1).data(),
                 e.what());
    return 1;
  }
}

// LibTorch's OpenMP threads (libgomp) spin between parallel regions unless
// OMP_WAIT_POLICY=PASSIVE, taking the cores from the loader's sampler
// threads (GraphSAGE epoch on 2 cores: 2.28 s spinning, 1.20 s passive).
// libgomp reads the variable once, as it loads, before main: so when it is
// unset, set it and restart this program (first thing in main, before any
// thread exists). Any value already set is kept (OMP_WAIT_POLICY=active
// keeps libgomp's default). Returns only if it was set or the restart
// failed (then the program goes on as it is).
inline void RestartWithPassiveOmpWait(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") != nullptr) return;
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0 || setenv("OMP_WAIT_POLICY", "PASSIVE", 1) != 0) return;
  self[n] = '\0';
  execv(self, argv);
  std::perror("restarting with OMP_WAIT_POLICY=PASSIVE");
}

// "10,25" -> {10, 25}; -1 means every neighbour.
inline std::vector<int64_t> ParseFanouts(const std::string& text) {
  std::vector<int64_t> fanouts;
  for (std::string_view part : SplitString(text, ',')) {
    int64_t value = 0;
    if (!ParseInt64(part, &value) || value == 0 || value < -1) {
      throw dist::Error("--fan-out: '" + text + "' is not a list like 10,25 (-1: all neighbours)");
    }
    fanouts.push_back(value);
  }
  if (fanouts.empty()) throw dist::Error("--fan-out is empty");
  return fanouts;
}

// Throws naming what is missing unless the graph has every node array.
inline void RequireNodeData(const dist::DistGraph& g, const std::vector<std::string>& names) {
  auto schemes = g.node_attr_schemes();
  for (const std::string& name : names) {
    if (schemes.count(name)) continue;
    std::string have;
    for (const auto& [n, s] : schemes) have += (have.empty() ? "" : ", ") + n;
    throw dist::Error("the graph has no node data '" + name + "' (it has: " + have + ")");
  }
}

// Accuracy of argmax(logits) over every trainer's `nids` (a collective).
inline double Accuracy(const dist::DistTensor& logits, const dist::DistTensor& labels,
                       const torch::Tensor& nids) {
  torch::Tensor counts = torch::zeros({2}, torch::kFloat64);
  if (nids.size(0) > 0) {
    torch::Tensor pred = logits[nids].argmax(1);
    counts[0] = (pred == labels[nids].to(torch::kInt64)).sum().item<double>();
    counts[1] = static_cast<double>(nids.size(0));
  }
  dist::all_reduce_sum(counts);
  return counts[1].item<double>() > 0 ? counts[0].item<double>() / counts[1].item<double>() : 0;
}

// The number of classes: the largest label + 1 over all nodes (a collective).
// A label of 2^20 or more is an error (it would size an output layer of that
// many classes); negative labels (unlabelled nodes) are left to the loss.
inline int64_t NumClasses(const dist::DistGraph& g, const dist::DistTensor& labels) {
  constexpr double kMaxClasses = 1 << 20;
  auto ctx = dist::initialize();
  torch::Tensor slots = torch::zeros({ctx->world_size()}, torch::kFloat64);
  torch::Tensor mine =
      dist::node_split(torch::ones({g.num_nodes()}, torch::kBool), g.partition_book());
  if (mine.size(0) > 0) slots[ctx->rank()] = labels[mine].max().item<double>();
  dist::all_reduce_sum(slots);  // Each trainer fills its own slot: the sum gathers them.
  const double largest = slots.max().item<double>();
  if (!(largest < kMaxClasses)) {
    throw dist::Error(fmt::format("labels must be class indices below {}; the largest is {:.0f}",
                                  static_cast<int64_t>(kMaxClasses), largest));
  }
  return static_cast<int64_t>(largest) + 1;
}

}  // namespace tessera::examples

#endif  // TESSERA_EXAMPLES_COMMON_H_
