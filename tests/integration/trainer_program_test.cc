// File: tests/integration/trainer_program_test.cc
//
// One trainer binary (trainer_program.cc, public API only) run standalone on
// a one-part Cora partition and launched on a two-machine job: both runs
// succeed and see the same graph (same feature and label sums).
#include <array>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <set>
#include <sstream>
#include <thread>

#include "gtest/gtest.h"
#include "src/base/test_util.h"
#include "src/kvstore/test_cluster.h"
#include "src/launcher/local_job.h"
#include "src/shm/segment.h"

namespace tessera {
namespace {

std::string TrainerBinary() {
  return std::string(TESSERA_BINARY_DIR) + "/bin/tessera_trainer_program";
}

struct Summary {
  double feat_sum = 0;
  long label_sum = 0;
  long batches = -1, own = -1;  // The loader's epoch: batches run, own training ids.
};

Summary Parse(const std::string& output) {
  Summary s;
  // The program's summary line starts with "ok " (log lines may contain it).
  size_t at_ok = output.rfind("\nok ");
  at_ok = output.compare(0, 3, "ok ") == 0 ? 0 : at_ok == std::string::npos ? at_ok : at_ok + 1;
  if (at_ok == std::string::npos) return s;
  std::istringstream in(output.substr(at_ok));
  std::string word;
  in >> word >> s.feat_sum >> s.label_sum;
  if (size_t at = output.find("loader batches "); at != std::string::npos) {
    std::istringstream loader(output.substr(at));
    loader >> word >> word >> s.batches >> word >> s.own;
  }
  return s;
}

TEST(TrainerTest, SameProgramStandaloneAndDistributed) {
  testing::TempDir dir;
  std::string one = kvstore::testing::PartitionCora(dir / "one", 1);
  std::string two = kvstore::testing::PartitionCora(dir / "two", 2);

  // Standalone: no launcher environment.
  std::string command = "env -u TESSERA_JOB_ID " + TrainerBinary() + " cora " + one + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string standalone;
  std::array<char, 4096> buffer;
  size_t n;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0)
    standalone.append(buffer.data(), n);
  ASSERT_EQ(pclose(pipe), 0) << standalone;
  ASSERT_THAT(standalone, HasSubstr("rank 0 of 1")) << standalone;

  // Distributed: 2 machines x 2 trainers.
  launcher::LocalJobOptions o;
  o.tessera_binary = testing::TesseraBinary();
  o.part_config = two;
  o.workdir = dir / "job";
  o.clients_per_machine = 2;
  o.num_samplers = 2;
  o.client_argv = {TrainerBinary(), "cora", two};
  o.client_log_dir = dir / "job";
  auto job = launcher::LocalJob::Start(o);
  ASSERT_TRUE(job.ok()) << job.status();
  auto result = (*job)->Wait(Deadline::InSeconds(180));
  ASSERT_TRUE(result.ok()) << result.status();
  Summary a = Parse(standalone);
  EXPECT_EQ(a.own, 140);  // Cora's training nodes, all on the one trainer.
  EXPECT_EQ(a.batches, 18);
  long own_total = 0, most = 0;
  std::set<long> batch_counts;
  for (int rank = 0; rank < 4; ++rank) {
    std::string log = testing::ReadAll(dir / ("job/client-" + std::to_string(rank) + ".log"));
    EXPECT_EQ(result->client_exit_codes[rank], 0) << log;
    ASSERT_THAT(log, HasSubstr("rank " + std::to_string(rank) + " of 4")) << log;
    EXPECT_THAT(log, HasSubstr("samplers 2")) << log;  // From the runner's env.
    Summary b = Parse(log);
    EXPECT_NEAR(b.feat_sum, a.feat_sum, 1e-3 * std::abs(a.feat_sum));
    EXPECT_EQ(b.label_sum, a.label_sum);
    own_total += b.own;
    most = std::max(most, b.own);
    batch_counts.insert(b.batches);
  }
  // Uneven shares, yet the same number of batches everywhere: that of the
  // largest share (DGL #3538 deadlocks here).
  EXPECT_EQ(own_total, 140);
  EXPECT_EQ(batch_counts, (std::set<long>{(most + 7) / 8}));
  for (int code : result->server_exit_codes) EXPECT_EQ(code, 0);
}

// A trainer that fails in a collective exits with its error, not a signal,
// even while a server it would say goodbye to is stopped: its exit path used
// to log through spdlog's already destroyed logger (SIGSEGV). Repeated, since
// what the exit path meets depends on timing.
TEST(TrainerTest, FailedCollectiveExitsWithItsErrorWhileAServerIsStopped) {
  testing::TempDir dir;
  std::string two = kvstore::testing::PartitionCora(dir / "two", 2);
  for (int run = 0; run < 3; ++run) {
    launcher::LocalJobOptions o;
    o.tessera_binary = testing::TesseraBinary();
    o.part_config = two;
    o.workdir = dir / ("job" + std::to_string(run));
    o.clients_per_machine = 1;
    o.client_argv = {TrainerBinary(), "cora", two, "fail-in-allreduce"};
    o.client_log_dir = o.workdir;
    auto job = launcher::LocalJob::Start(o);
    ASSERT_TRUE(job.ok()) << job.status();
    std::string log1 = o.workdir + "/client-1.log";
    Deadline ready = Deadline::InSeconds(60);
    while (testing::ReadAll(log1).find("rank 1 ready") == std::string::npos && !ready.Expired())
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    (*job)->servers()[1].Signal(SIGSTOP);
    // Trainer 1 must exit by itself: LocalJob stops the others once one
    // failed, so wait for it directly.
    auto& clients = (*job)->clients();
    auto code0 = clients[0].Wait(Deadline::InSeconds(60));
    auto code1 = clients[1].Wait(Deadline::InSeconds(60));
    std::string out0 = testing::ReadAll(o.workdir + "/client-0.log");
    std::string out1 = testing::ReadAll(log1);
    ASSERT_TRUE(code0.ok() && code1.ok()) << out0 << out1;
    EXPECT_EQ(*code0, 1) << out0;
    EXPECT_EQ(*code1, 1) << "trainer 1 (negative: killed by that signal): " << out1;
    EXPECT_THAT(out1, HasSubstr("all_reduce_sum: a trainer failed or did not arrive")) << out1;
    (*job)->servers()[1].Signal(SIGKILL);
    auto result = (*job)->Wait(Deadline::InSeconds(60));
    ASSERT_TRUE(result.ok()) << result.status();
  }
}

// Trainers whose models differ in shape (features of another width on one
// partition) fail with an error naming it, on every trainer, instead of an
// abort inside Gloo's broadcast.
TEST(TrainerTest, ModelsOfDifferentShapesAreAnErrorOnEveryTrainer) {
  testing::TempDir dir;
  std::string two = kvstore::testing::PartitionCora(dir / "two", 2);
  launcher::LocalJobOptions o;
  o.tessera_binary = testing::TesseraBinary();
  o.part_config = two;
  o.workdir = dir / "job";
  o.clients_per_machine = 1;
  o.client_argv = {TrainerBinary(), "cora", two, "models-differ"};
  o.client_log_dir = o.workdir;
  auto job = launcher::LocalJob::Start(o);
  ASSERT_TRUE(job.ok()) << job.status();
  // Both fail at once; LocalJob may stop the second (SIGTERM) as the first
  // exits, but no trainer may die by Gloo's abort or any other signal.
  auto& clients = (*job)->clients();
  int named = 0;
  for (int rank = 0; rank < 2; ++rank) {
    auto code = clients[static_cast<size_t>(rank)].Wait(Deadline::InSeconds(120));
    std::string out = testing::ReadAll(o.workdir + "/client-" + std::to_string(rank) + ".log");
    ASSERT_TRUE(code.ok()) << out;
    EXPECT_TRUE(*code == 1 || *code == -SIGTERM)
        << "trainer " << rank << " (negative: killed by that signal): " << *code << "\n"
        << out;
    if (*code == 1) {
      EXPECT_THAT(out, HasSubstr("built a model whose parameters or buffers differ from "
                                 "trainer 0's"))
          << out;
      ++named;
    }
  }
  EXPECT_GE(named, 1);
  auto result = (*job)->Wait(Deadline::InSeconds(60));
  ASSERT_TRUE(result.ok()) << result.status();
}

}  // namespace
}  // namespace tessera
