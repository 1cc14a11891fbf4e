// File: tests/integration/training_test.cc
//
// End-to-end training with the example programs (examples/), on the real
// datasets of shared/datasets (testdata/), standalone and as real local jobs
// (server and trainer processes on loopback):
//   * GraphSAGE reaches the published-level test accuracy on Cora and
//     CiteSeer (public split), and 2 machines x 2 trainers reach the
//     standalone accuracy within one point, with identical weights on every
//     trainer (gradients really are averaged);
//   * learned node embeddings (no features) beat the untrained model;
//   * a trainer killed with SIGKILL stops the whole job at once, leaving no
//     process and no shared memory.
#include <signal.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "src/base/test_util.h"
#include "src/graph/generator.h"
#include "src/graph/typed_generator.h"
#include "src/kvstore/test_cluster.h"
#include "src/launcher/local_job.h"
#include "src/partition/partition.h"

namespace tessera {
namespace {

std::string Program(const std::string& name) {
  return std::string(TESSERA_BINARY_DIR) + "/bin/" + name;
}

// Flags for citation graphs (see examples/graphsage/train_dist.cpp).
const std::vector<std::string> kCitationFlags = {"--row-normalize",
                                                 "--input-dropout",
                                                 "0.5",
                                                 "--lr",
                                                 "0.01",
                                                 "--weight-decay",
                                                 "5e-4",
                                                 "--batch-size",
                                                 "140",
                                                 "--num-epochs",
                                                 "200",
                                                 "--eval-every",
                                                 "200",
                                                 "--log-every",
                                                 "0",
                                                 "--json"};

nlohmann::json ResultIn(const std::string& output) {
  size_t at = output.rfind("RESULT ");
  if (at == std::string::npos) return nullptr;
  return nlohmann::json::parse(output.substr(at + 7, output.find('\n', at) - at - 7));
}

// Runs a program standalone (no launcher environment); its output.
std::string RunStandalone(const std::vector<std::string>& argv, int* exit_code) {
  std::string command = "env -u TESSERA_JOB_ID";
  for (const std::string& a : argv) command += " '" + a + "'";
  command += " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  std::string output;
  std::array<char, 4096> buffer;
  size_t n;
  while (pipe != nullptr && (n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) {
    output.append(buffer.data(), n);
  }
  int status = pipe == nullptr ? -1 : pclose(pipe);
  *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return output;
}

struct JobRun {
  launcher::JobResult result;
  std::vector<std::string> logs;  // Per trainer rank.
  std::string job_id;
};

JobRun RunJob(const std::string& config, const std::string& workdir, int trainers,
              const std::vector<std::string>& argv) {
  launcher::LocalJobOptions o;
  o.tessera_binary = testing::TesseraBinary();
  o.part_config = config;
  o.workdir = workdir;
  o.clients_per_machine = trainers;
  o.client_argv = argv;
  o.client_log_dir = workdir;
  JobRun run;
  auto job = launcher::LocalJob::Start(o);
  EXPECT_TRUE(job.ok()) << job.status();
  if (!job.ok()) return run;
  run.job_id = (*job)->job_id();
  auto result = (*job)->Wait(Deadline::InSeconds(600));
  EXPECT_TRUE(result.ok()) << result.status();
  if (result.ok()) run.result = *result;
  for (int rank = 0; rank < (*job)->num_machines() * trainers; ++rank) {
    run.logs.push_back(testing::ReadAll(workdir + "/client-" + std::to_string(rank) + ".log"));
  }
  return run;
}

double Checksum(const std::string& log) {
  size_t at = log.find("parameter checksum ");
  return at == std::string::npos ? -1 : std::stod(log.substr(at + 19));
}

// A generated ogbn-mag shaped graph of `nodes` nodes (mag/ in `dir`)
// partitioned into each count of `parts` (p<count>/); the configs, in that
// order (fewer on a failure, which is reported).
std::vector<std::string> MagPartitions(const testing::TempDir& dir, int64_t nodes,
                                       std::initializer_list<int> parts) {
  TypedGenerateOptions gen{.num_nodes = nodes, .num_threads = 2};
  Status generated = GenerateMagGraph(gen, dir / "mag").status();
  EXPECT_TRUE(generated.ok()) << generated;
  auto graph = ReadGraph(dir / "mag");
  EXPECT_TRUE(graph.ok()) << graph.status();
  std::vector<std::string> configs;
  for (int n : parts) {
    if (!graph.ok()) break;
    auto r = PartitionGraph(*graph, "mag", n, dir / ("p" + std::to_string(n)), {});
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok()) break;
    configs.push_back(r->config_path);
  }
  return configs;
}

TEST(TrainingTest, CoraReachesPublishedAccuracyStandaloneAndDistributed) {
  testing::TempDir dir;
  std::string one = kvstore::testing::PartitionCora(dir / "one", 1);
  std::string two = kvstore::testing::PartitionCora(dir / "two", 2);
  double standalone = 0, distributed = 0;
  const std::vector<std::string> seeds = {"42", "1", "2"};  // Means over 3 seeds.
  for (const std::string& seed : seeds) {
    std::vector<std::string> argv = {Program("graphsage_train_dist"),
                                     "--graph-name",
                                     "cora",
                                     "--part-config",
                                     one,
                                     "--seed",
                                     seed};
    argv.insert(argv.end(), kCitationFlags.begin(), kCitationFlags.end());
    int code = 0;
    std::string output = RunStandalone(argv, &code);
    ASSERT_EQ(code, 0) << output;
    nlohmann::json r = ResultIn(output);
    ASSERT_FALSE(r.is_null()) << output;
    EXPECT_EQ(r["mode"], "standalone");
    standalone += r["test_acc"].get<double>() / seeds.size();

    argv[4] = two;
    JobRun job = RunJob(two, dir / ("job" + seed), 2, argv);
    ASSERT_TRUE(job.result.ok()) << job.result.first_failure << "\n" << job.logs[0];
    nlohmann::json d = ResultIn(job.logs[0]);
    ASSERT_FALSE(d.is_null()) << job.logs[0];
    EXPECT_EQ(d["world_size"], 4);
    distributed += d["test_acc"].get<double>() / seeds.size();
    // DDP: every trainer ends with the same weights.
    std::set<double> checksums;
    for (const std::string& log : job.logs) {
      EXPECT_THAT(log, HasSubstr("process group of 4 trainers")) << log;
      checksums.insert(Checksum(log));
    }
    EXPECT_EQ(checksums.size(), 1u) << "the trainers' weights differ";
    EXPECT_GT(*checksums.begin(), 0);
  }
  std::printf("cora test accuracy: standalone %.4f, 2 machines x 2 trainers %.4f\n", standalone,
              distributed);
  EXPECT_GE(standalone, 0.78);
  EXPECT_GE(distributed, 0.78);
  EXPECT_NEAR(distributed, standalone, 0.01);
}

// R-GCN on a generated ogbn-mag shaped graph (examples/rgcn): well above a
// features-only MLP and the majority class, and 2 machines x 2 trainers
// (each with a quarter of the batch, so that the steps per epoch match)
// close to standalone, over 3 seeds.
TEST(TrainingTest, RgcnOnGeneratedMagBeatsMlpAndMatchesStandaloneDistributed) {
  testing::TempDir dir;
  const std::vector<std::string> configs = MagPartitions(dir, 20000, {1, 2});
  ASSERT_EQ(configs.size(), 2u);
  const std::string &one = configs[0], &two = configs[1];
  auto flags = [&](const std::string& config, const std::string& seed, int64_t batch) {
    return std::vector<std::string>{Program("rgcn_train"),
                                    "--graph-name",
                                    "mag",
                                    "--part-config",
                                    config,
                                    "--seed",
                                    seed,
                                    "--num-epochs",
                                    "30",
                                    "--batch-size",
                                    std::to_string(batch),
                                    "--json"};
  };
  double standalone = 0, distributed = 0, mlp = 0, majority = 0;
  const std::vector<std::string> seeds = {"42", "1", "2"};
  for (const std::string& seed : seeds) {
    int code = 0;
    std::string output = RunStandalone(flags(one, seed, 1024), &code);
    ASSERT_EQ(code, 0) << output;
    nlohmann::json r = ResultIn(output);
    ASSERT_FALSE(r.is_null()) << output;
    standalone += r["test_acc"].get<double>() / seeds.size();
    majority = r["majority_acc"].get<double>();

    std::vector<std::string> argv = flags(one, seed, 1024);
    argv[8] = "60";  // --num-epochs: an MLP epoch is cheap.
    argv.insert(argv.end(), {"--model", "mlp", "--dropout", "0", "--lr", "0.003"});
    output = RunStandalone(argv, &code);
    ASSERT_EQ(code, 0) << output;
    r = ResultIn(output);
    ASSERT_FALSE(r.is_null()) << output;
    mlp += r["test_acc"].get<double>() / seeds.size();

    JobRun job = RunJob(two, dir / ("job" + seed), 2, flags(two, seed, 256));
    ASSERT_TRUE(job.result.ok()) << job.result.first_failure << "\n" << job.logs[0];
    nlohmann::json d = ResultIn(job.logs[0]);
    ASSERT_FALSE(d.is_null()) << job.logs[0];
    EXPECT_EQ(d["world_size"], 4);
    distributed += d["test_acc"].get<double>() / seeds.size();
  }
  std::printf(
      "mag (20k) test accuracy: R-GCN standalone %.4f, 2 machines x 2 trainers %.4f; "
      "MLP %.4f; majority class %.4f\n",
      standalone, distributed, mlp, majority);
  EXPECT_GT(standalone, mlp + 0.3);
  EXPECT_GT(mlp, majority);
  // Runs are deterministic for a seed; the mean of 3 seeds over 759 test
  // papers still has a standard error near 0.8 points, so 2 points here (the
  // measured difference was 1.1: 0.8498 distributed, 0.8388 standalone).
  EXPECT_NEAR(distributed, standalone, 0.02);
}

// Runs `argv` (a training example, standalone) three times with
// --checkpoint-every 3: to `epochs` uninterrupted, stopped after
// `stop_epochs`, then again to `epochs` from its checkpoints. Expects the
// resumed run to log `resumed`, and returns the first and last RESULTs.
std::pair<nlohmann::json, nlohmann::json> RunStoppedAndResumed(std::vector<std::string> argv,
                                                               const testing::TempDir& dir,
                                                               const std::string& epochs,
                                                               const std::string& stop_epochs,
                                                               const std::string& resumed) {
  auto run = [&](const std::string& ckpt, const std::string& n) {
    std::vector<std::string> full = argv;
    full.insert(full.end(), {"--num-epochs", n, "--seed", "3", "--checkpoint-every", "3",
                             "--checkpoint-dir", ckpt, "--json"});
    int code = 0;
    std::string output = RunStandalone(full, &code);
    EXPECT_EQ(code, 0) << output;
    return output;
  };
  nlohmann::json plain = ResultIn(run(dir / "plain", epochs));
  run(dir / "stopped", stop_epochs);
  std::string output = run(dir / "stopped", epochs);
  EXPECT_THAT(output, HasSubstr(resumed)) << output;
  EXPECT_FALSE(plain.is_null());
  nlohmann::json last = ResultIn(output);
  EXPECT_FALSE(last.is_null()) << output;
  return {plain, last};
}

// The C++ GraphSAGE example resumes from its checkpoints: a run stopped
// after 4 epochs (last checkpoint at step 18, in the middle of epoch 3) and
// run again to 12 epochs ends with the parameters of an uninterrupted run.
TEST(TrainingTest, GraphSageResumesMidEpochToTheUninterruptedParameters) {
  testing::TempDir dir;
  std::string one = kvstore::testing::PartitionCora(dir / "one", 1);
  // 5 batches per epoch: the last save of 4 epochs, step 18, is epoch 3, batch 3.
  auto [plain, resumed] = RunStoppedAndResumed(
      {Program("graphsage_train_dist"), "--graph-name", "cora", "--part-config", one,
       "--batch-size", "32", "--eval-every", "0", "--log-every", "0"},
      dir, "12", "4", "resumed from step 18 (epoch 3, batch 3)");
  EXPECT_EQ(resumed["parameter_checksum"], plain["parameter_checksum"]);
}

// The C++ R-GCN example too (embeddings and SparseAdam's state come with
// the checkpoint): stopped after 2 epochs, run again to 4, it ends with the
// dense parameters and test accuracy of an uninterrupted run.
TEST(TrainingTest, RgcnResumesToTheUninterruptedParameters) {
  testing::TempDir dir;
  const std::vector<std::string> configs = MagPartitions(dir, 3000, {1});
  ASSERT_EQ(configs.size(), 1u);
  // 11 batches per epoch: the last save of 2 epochs, step 21, is epoch 1, batch 10.
  auto [plain, resumed] = RunStoppedAndResumed(
      {Program("rgcn_train"), "--graph-name", "mag", "--part-config", configs[0], "--batch-size",
       "64", "--fan-out", "5,5", "--num-hidden", "16"},
      dir, "4", "2", "resumed from step 21 (epoch 1, batch 10)");
  EXPECT_EQ(resumed["parameter_checksum"], plain["parameter_checksum"]);
  EXPECT_EQ(resumed["test_acc"], plain["test_acc"]);
}

TEST(TrainingTest, CiteSeerReachesPublishedAccuracy) {
  testing::TempDir dir;
  auto graph = ReadGraph(testing::TestDataDir() + "/citeseer");
  ASSERT_TRUE(graph.ok()) << graph.status();
  auto parts = PartitionGraph(*graph, "citeseer", 1, dir / "one", {});
  ASSERT_TRUE(parts.ok()) << parts.status();
  std::vector<std::string> argv = {Program("graphsage_train_dist"), "--graph-name", "citeseer",
                                   "--part-config", parts->config_path};
  argv.insert(argv.end(), kCitationFlags.begin(), kCitationFlags.end());
  int code = 0;
  std::string output = RunStandalone(argv, &code);
  ASSERT_EQ(code, 0) << output;
  nlohmann::json r = ResultIn(output);
  ASSERT_FALSE(r.is_null()) << output;
  std::printf("citeseer test accuracy: %.4f\n", r["test_acc"].get<double>());
  EXPECT_GE(r["test_acc"].get<double>(), 0.67);
}

// Learned embeddings on 2 machines: each row is updated by SparseAdam on the
// machine that owns it. The trained model must clearly beat the same model
// on the untrained (random) embeddings.
TEST(TrainingTest, LearnedEmbeddingsBeatTheUntrainedModel) {
  testing::TempDir dir;
  std::string two = kvstore::testing::PartitionCora(dir / "two", 2);
  JobRun job = RunJob(
      two, dir / "job", 1,
      {Program("embedding_train"), "--graph-name", "cora", "--part-config", two, "--num-epochs",
       "60", "--batch-size", "70", "--eval-every", "0", "--save-dir", dir.path(), "--json"});
  ASSERT_TRUE(job.result.ok()) << job.result.first_failure << "\n" << job.logs[0];
  nlohmann::json r = ResultIn(job.logs[0]);
  ASSERT_FALSE(r.is_null()) << job.logs[0];
  std::printf("embeddings: test accuracy %.4f, untrained %.4f\n", r["test_acc"].get<double>(),
              r["untrained_test_acc"].get<double>());
  EXPECT_GE(r["test_acc"].get<double>(), r["untrained_test_acc"].get<double>() + 0.2);
  // Checkpoint folders: the machines' shards of the rows and of Adam's state.
  EXPECT_TRUE(std::filesystem::exists(dir / "node_emb/manifest.json"));
  for (std::string part : {"p0", "p1"}) {
    EXPECT_TRUE(
        std::filesystem::exists(dir / ("node_emb/tensors/node~node_emb." + part + ".0.npy")));
    EXPECT_TRUE(std::filesystem::exists(
        dir / ("optimizer/tensors/node~node_emb.adam_step." + part + ".0.npy")));
  }
}

// kill -9 of one trainer mid-training: the job stops within seconds (the
// other trainer would otherwise wait in its next allreduce), naming the dead
// trainer, and leaves no process and no shared memory.
TEST(TrainingTest, AKilledTrainerStopsTheJob) {
  testing::TempDir dir;
  GenerateOptions gen{
      .num_nodes = 20000, .num_undirected_edges = 200000, .feat_dim = 16, .num_classes = 4};
  ASSERT_TRUE(GenerateSbmGraph(gen, dir / "graph").ok());
  auto graph = ReadGraph(dir / "graph");
  ASSERT_TRUE(graph.ok());
  auto parts = PartitionGraph(*graph, "g", 2, dir / "parts", {});
  ASSERT_TRUE(parts.ok()) << parts.status();
  launcher::LocalJobOptions o;
  o.tessera_binary = testing::TesseraBinary();
  o.part_config = parts->config_path;
  o.workdir = dir / "job";
  o.client_argv = {Program("graphsage_train_dist"),
                   "--graph-name",
                   "g",
                   "--part-config",
                   parts->config_path,
                   "--num-epochs",
                   "100000",
                   "--batch-size",
                   "100"};
  o.client_log_dir = dir / "job";
  auto job = launcher::LocalJob::Start(o);
  ASSERT_TRUE(job.ok()) << job.status();
  std::string job_id = (*job)->job_id();
  // Wait until trainer 1 has finished an epoch, then kill it.
  Deadline started = Deadline::InSeconds(120);
  while (testing::ReadAll(dir / "job/client-1.log").find("epoch 0:") == std::string::npos) {
    ASSERT_FALSE(started.Expired()) << testing::ReadAll(dir / "job/client-1.log");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  pid_t victim = (*job)->clients()[1].pid();
  ASSERT_EQ(kill(victim, SIGKILL), 0);
  Stopwatch watch;
  auto result = (*job)->Wait(Deadline::InSeconds(60));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_LT(watch.Seconds(), 30);
  EXPECT_FALSE(result->ok());
  EXPECT_THAT(result->first_failure, HasSubstr("client 1")) << result->first_failure;
  for (auto& p : (*job)->clients()) EXPECT_TRUE(p.finished());
  for (auto& p : (*job)->servers()) EXPECT_TRUE(p.finished());
  job->reset();
  for (const auto& entry : std::filesystem::directory_iterator("/dev/shm")) {
    EXPECT_THAT(entry.path().filename().string(), Not(HasSubstr(job_id)))
        << entry.path() << " was left behind";
  }
}

}  // namespace
}  // namespace tessera
