// Runs the real `tessera` binary on whole jobs: `launch`, `supervise`,
// `demo` and `bench`, which start servers and trainers, and must leave no
// process, shared memory or scratch folder behind, however they end.
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "src/base/process.h"
#include "src/base/test_util.h"
#include "src/kvstore/test_cluster.h"
#include "src/launcher/ip_config.h"
#include "src/shm/segment.h"
#include "tessera/base/strings.h"

namespace tessera {
namespace {

using testing::TempDir;
using testing::TesseraBinary;
using testing::TestDataDir;

using CliRun = testing::ShellRun;
using testing::RunTessera;

// A bench (or demo) ended by a signal leaves no scratch folder: it was
// removed only by the destructor a signal skips (267 MB left in /tmp).
TEST(Cli, ABenchEndedByASignalLeavesNoScratchFolder) {
  TempDir dir;
  ASSERT_TRUE(MakeDirs(dir / "tmp").ok());
  for (int sig : {SIGTERM, SIGKILL}) {
    auto bench = Process::Spawn({.argv = {TesseraBinary(), "bench", "pull", "--nodes", "3000000"},
                                 .env = {{"TMPDIR", dir / "tmp"}},
                                 .log_path = dir / ("log" + std::to_string(sig))});
    ASSERT_TRUE(bench.ok()) << bench.status();
    // Killed while it generates its graph in its scratch folder (which the
    // log names: "... into <folder>/graph").
    std::string log, folder;
    for (Deadline deadline = Deadline::InSeconds(60); folder.empty() && !deadline.Expired();) {
      log = testing::ReadAll(dir / ("log" + std::to_string(sig)));
      if (const size_t at = log.find(" into "), end = log.find("/graph\n");
          at != std::string::npos && end != std::string::npos) {
        folder = log.substr(at + 6, end - at - 6);
      }
      usleep(2000);
    }
    ASSERT_TRUE(PathExists(folder)) << folder << "\n" << log;
    ASSERT_EQ(kill(bench->pid(), sig), 0);
    ASSERT_TRUE(bench->Wait(Deadline::InSeconds(30)).ok());
    for (Deadline deadline = Deadline::InSeconds(20); PathExists(folder) && !deadline.Expired();) {
      usleep(10000);
    }
    EXPECT_FALSE(PathExists(folder)) << "signal " << sig << ": " << log;
  }
}

// --extra-envs travels as KEY=VALUE lines: a newline in a value would add
// variables to every process. Refused before anything starts.
TEST(Cli, LaunchRefusesExtraEnvsThatInjectVariables) {
  TempDir dir;
  ASSERT_TRUE(MakeDirs(dir / "ws").ok());
  const std::string base =
      "launch --workspace " + dir / "ws" + " --part-config p.json --ip-config i.txt --extra-envs ";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"'A=1\nB=2'", "error: --extra-envs: the value of A contains a newline (character 2)"},
      {"'1A=x'", "error: --extra-envs: '1A' is not a variable name"},
      {"'A B=x'", "error: --extra-envs: 'A B' is not a variable name"},
      {"NOEQUALS", "error: --extra-envs: 'NOEQUALS' is not KEY=VALUE"},
  };
  for (const auto& [value, expect] : cases) {
    SCOPED_TRACE(value);
    CliRun run = RunTessera(base + value + " true");
    EXPECT_EQ(run.exit_code, 1) << run.output;
    EXPECT_THAT(run.output, HasSubstr(expect)) << run.output;
    EXPECT_THAT(run.output, Not(HasSubstr("launch: job"))) << run.output;
  }
  // The supervisor, too, refuses a variable that is not a name.
  testing::WriteAll(dir / "env.txt", "A=1\nB-C=2\n\n");
  CliRun supervise = RunTessera("supervise -- true < " + dir / "env.txt");
  EXPECT_EQ(supervise.exit_code, 1) << supervise.output;
  EXPECT_THAT(supervise.output,
              HasSubstr("error: environment from the launcher: 'B-C' is not a variable name"))
      << supervise.output;
}

// A trainer's daemon in a session of its own (setsid) escaped the stop of
// the trainer's process group and outlived the job; the supervisor adopts
// and stops it, whether the trainer ends by itself or is stopped.
TEST(Cli, SuperviseStopsWhatItsChildLeftRunning) {
  TempDir dir;
  // The child ends by itself (1 s) while the link is open; the link closes
  // (1 s) while the child runs (30 s): stopped.
  for (const auto& [link, child] : {std::pair{"5", "1"}, std::pair{"1", "30"}}) {
    SCOPED_TRACE(child);
    std::filesystem::remove(dir / "pid");
    testing::ShellRun run = testing::RunShell(StrCat(
        "(echo; sleep ", link, ") | ", TesseraBinary(),
        " supervise -- sh -c 'setsid sleep 300 & echo $! > ", dir / "pid", "; sleep ", child, "'"));
    const std::string pid = testing::ReadAll(dir / "pid");
    ASSERT_FALSE(pid.empty()) << run.output;
    EXPECT_NE(kill(std::stoi(pid), 0), 0) << "sleep " << pid << " outlived its supervisor";
    EXPECT_THAT(run.output, HasSubstr("stopped 1 process(es) the job's process left running"))
        << run.output;
  }
}

TEST(Cli, DemoRunsAndCleansUp) {
  // The demo's scratch folder goes in $TMPDIR: a folder of this test's own,
  // which other tests running demos at the same time do not touch.
  TempDir scratch;
  ASSERT_EQ(::setenv("TMPDIR", scratch.path().c_str(), 1), 0);
  CliRun run = RunTessera("demo --nodes 5000 --epochs 3");
  ::unsetenv("TMPDIR");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_THAT(run.output, HasSubstr("demo 3/3: training GraphSAGE")) << run.output;
  EXPECT_THAT(run.output, HasSubstr("process group of 2 trainers")) << run.output;
  EXPECT_THAT(run.output, HasSubstr("done: test accuracy")) << run.output;
  EXPECT_THAT(run.output, HasSubstr("demo finished: wall"));
  EXPECT_THAT(run.output, HasSubstr(scratch.path())) << run.output;
  EXPECT_TRUE(std::filesystem::is_empty(scratch.path()))
      << "the demo left its temporary folder behind";
  // The job's shared memory is gone ("job <id>: ..." names it).
  size_t at = run.output.find("] job j");
  ASSERT_NE(at, std::string::npos) << run.output;
  std::string job = run.output.substr(at + 6, run.output.find(':', at) - at - 6);
  for (const auto& entry : std::filesystem::directory_iterator("/dev/shm")) {
    EXPECT_THAT(entry.path().filename().string(), Not(HasSubstr("tessera." + job)))
        << "the demo left " << entry.path() << " behind";
  }

  TempDir dir;
  CliRun cora = RunTessera("demo --dataset " + TestDataDir() +
                           "/cora --parts 3 --epochs 1 --workdir " + dir / "cora");
  ASSERT_EQ(cora.exit_code, 0) << cora.output;
  EXPECT_THAT(cora.output, HasSubstr("1433 features, 7 classes")) << cora.output;
  EXPECT_TRUE(PathExists(dir / "cora/parts/demo.json"));  // A named workdir is kept.

  CliRun bad = RunTessera("demo --dataset " + dir / "nowhere");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_THAT(bad.output, HasSubstr("nowhere")) << bad.output;
}

// Ctrl-C while the demo trains: every process stopped, the scratch folder
// removed, and the exit code a shell gives an interrupted command (was 1).
TEST(Cli, DemoInterruptedWhileTrainingExits130) {
  TempDir dir;
  ASSERT_TRUE(MakeDirs(dir / "tmp").ok());
  auto demo =
      Process::Spawn({.argv = {TesseraBinary(), "demo", "--nodes", "5000", "--epochs", "100000"},
                      .env = {{"TMPDIR", dir / "tmp"}},
                      .log_path = dir / "log"});
  ASSERT_TRUE(demo.ok()) << demo.status();
  std::string log;
  for (Deadline deadline = Deadline::InSeconds(120);
       log.find("epoch 2") == std::string::npos && !deadline.Expired(); usleep(100000)) {
    log = testing::ReadAll(dir / "log");
  }
  ASSERT_NE(log.find("epoch 2"), std::string::npos) << log;
  ASSERT_EQ(kill(demo->pid(), SIGINT), 0);
  auto code = demo->Wait(Deadline::InSeconds(60));
  log = testing::ReadAll(dir / "log");
  ASSERT_TRUE(code.ok()) << log;
  EXPECT_EQ(*code, 130) << log;
  EXPECT_THAT(log, HasSubstr("interrupted (signal 2); every process of the job was stopped"))
      << log;
  for (Deadline deadline = Deadline::InSeconds(20);
       !std::filesystem::is_empty(dir / "tmp") && !deadline.Expired(); usleep(10000)) {
  }
  EXPECT_TRUE(std::filesystem::is_empty(dir / "tmp")) << log;
}

// `tessera bench pull` on a small generated graph: it runs a real 2-machine
// job, prints its JSON report with every figure measured (> 0), and leaves no
// server or shared memory behind.
TEST(Cli, BenchPullReportsEveryFigure) {
  TempDir dir;
  CliRun run = RunTessera(
      "--log-level warn bench pull --nodes 20000 --batch 5000 --rounds 2 --workdir " + dir.path());
  ASSERT_EQ(run.exit_code, 0) << run.output;
  auto report = nlohmann::json::parse(run.output.substr(run.output.find('{')));
  EXPECT_EQ(report["benchmark"], "pull");
  for (const char* group : {"limits_gbps", "pull_gbps", "push_gbps", "latency_100_ids_us"}) {
    ASSERT_TRUE(report.contains(group)) << group;
    for (auto& [name, value] : report[group].items()) {
      EXPECT_GT(value.get<double>(), 0) << group << "." << name;
    }
  }
  EXPECT_GT(report["ratios"]["local_over_gather_limit"].get<double>(), 0);
  EXPECT_GT(report["ratios"]["remote_over_zeromq_limit"].get<double>(), 0);
  EXPECT_GT(report["pull_gbps"]["remote_encrypted_one_stream"].get<double>(), 0);
  // The servers left by themselves once the benchmark's clients had gone
  // (two on the encrypted job: one with streams, one without), and took
  // their shared memory with them.
  std::string log = testing::ReadAll(dir / "job/server-0.log");
  size_t at = log.find("(job ");
  ASSERT_NE(at, std::string::npos) << log;
  std::string job = log.substr(at + 5, log.find(')', at) - at - 5);
  EXPECT_TRUE(shm::ListJobSegments(job).empty()) << job;
  EXPECT_THAT(log, HasSubstr("all 2 clients left")) << log;
}

// `tessera bench sample` on a small generated graph: standalone and a real
// 2-machine job; every figure measured, the servers gone with their memory.
TEST(Cli, BenchSampleReportsEveryFigure) {
  TempDir dir;
  CliRun gen =
      RunTessera("generate --out " + dir / "g" + " --nodes 5000 --edges 40000 --train-frac 0.5");
  ASSERT_EQ(gen.exit_code, 0) << gen.output;
  CliRun run = RunTessera("--log-level warn bench sample --graph " + dir / "g" +
                          " --batch-size 100 --batches 5 --rounds 2 --workdir " + dir.path());
  ASSERT_EQ(run.exit_code, 0) << run.output;
  auto report = nlohmann::json::parse(run.output.substr(run.output.find('{')));
  EXPECT_EQ(report["benchmark"], "sample");
  for (const char* mode : {"standalone", "two_machines_trainer0"}) {
    ASSERT_EQ(report[mode].size(), 3u) << mode;  // 0, 1 and 2 sampler threads.
    for (const auto& r : report[mode]) {
      EXPECT_EQ(r["batches"].get<int>(), 5);
      EXPECT_GT(r["sampled_edges_per_s"].get<double>(), 0);
      EXPECT_GT(r["seeds_per_s"].get<double>(), 0);
      EXPECT_GT(r["input_nodes_per_batch"].get<double>(), 100);
    }
  }
  EXPECT_GT(report["remote_vs_local_one_layer"]["remote_over_local"].get<double>(), 0);
  EXPECT_GT(report["standalone_breakdown_1thread"]["to_block_ms_per_batch"].get<double>(), 0);
  std::string log = testing::ReadAll(dir / "job/server-0.log");
  size_t at = log.find("(job ");
  ASSERT_NE(at, std::string::npos) << log;
  std::string job = log.substr(at + 5, log.find(')', at) - at - 5);
  EXPECT_TRUE(shm::ListJobSegments(job).empty()) << job;
  // A second run reuses the partitions of the first.
  CliRun again = RunTessera(
      "bench sample --batches 2 --rounds 1 --threads 0 --batch-size 100 "
      "--workdir " +
      dir.path());
  ASSERT_EQ(again.exit_code, 0) << again.output;
  EXPECT_THAT(again.output, HasSubstr("reusing")) << again.output;
  CliRun missing = RunTessera("bench sample --workdir " + dir / "empty");
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_THAT(missing.output, HasSubstr("--graph")) << missing.output;
}

// `tessera bench hetero` at a small size: the three graphs partitioned in
// child processes, sampled standalone and on 2-machine jobs, R-GCN standalone
// and on 2 machines; every figure measured, the servers gone with their memory.
TEST(Cli, BenchHeteroReportsEveryFigure) {
  TempDir dir;
  CliRun run = RunTessera(
      "--log-level warn bench hetero --nodes 10000 --batch-size 100 --batches 3 --rounds 2 "
      "--workdir " +
      dir.path());
  ASSERT_EQ(run.exit_code, 0) << run.output;
  auto report = nlohmann::json::parse(run.output.substr(run.output.find('{')));
  EXPECT_EQ(report["benchmark"], "hetero");
  const std::vector<std::string> graphs = {"typed", "homogeneous", "same_structure"};
  for (const std::string& g : graphs) {
    EXPECT_EQ(report["graphs"][g]["nodes"].get<int64_t>(), 10000) << g;
    EXPECT_EQ(report["graphs"][g]["edges"], report["graphs"]["typed"]["edges"]) << g;
    const auto& p = report["partition"]["runs"][g];
    EXPECT_GT(p["wall_s"].get<double>(), 0) << g;
    EXPECT_GT(p["peak_rss_bytes_per_edge"].get<double>(), 0) << g;
    EXPECT_EQ(p["part_bytes"].size(), 2u) << g;
    for (const char* mode : {"standalone", "two_machines_trainer0"}) {
      const auto& s = report["sample"][mode][g];
      EXPECT_EQ(s["batches"].get<int>(), 3) << mode << " " << g;
      EXPECT_GT(s["ns_per_sampled_edge"].get<double>(), 0) << mode << " " << g;
      EXPECT_GT(s["sampled_edges_per_batch"].get<double>(), 100) << mode << " " << g;
    }
  }
  // The same METIS input: the typed graph and its homogeneous twin get the
  // same assignment, so the same cut.
  EXPECT_EQ(report["partition"]["runs"]["typed"]["edge_cut_fraction"],
            report["partition"]["runs"]["same_structure"]["edge_cut_fraction"]);
  for (const char* mode : {"standalone", "two_machines_trainer0"}) {
    EXPECT_GT(report["sample"][mode]["typed_over_homogeneous_ns_per_edge"].get<double>(), 0);
  }
  EXPECT_GT(report["sample"]["standalone_breakdown_1thread"]["typed"]["to_block_ns_per_edge"]
                .get<double>(),
            0);
  ASSERT_EQ(report["rgcn"]["runs"].size(), 2u);
  EXPECT_EQ(report["rgcn"]["runs"][0]["trainers"], 1);
  EXPECT_EQ(report["rgcn"]["runs"][1]["trainers"], 2);
  for (const auto& r : report["rgcn"]["runs"]) {
    EXPECT_GT(r["epoch_time_mean_s"].get<double>(), 0);
    EXPECT_GE(r["test_acc"].get<double>(), 0);
  }
  for (const std::string& g : graphs) {
    std::string log = testing::ReadAll(dir / (g + "/job/server-0.log"));
    size_t at = log.find("(job ");
    ASSERT_NE(at, std::string::npos) << log;
    std::string job = log.substr(at + 5, log.find(')', at) - at - 5);
    EXPECT_TRUE(shm::ListJobSegments(job).empty()) << job;
  }
  CliRun bad =
      RunTessera("bench hetero --nodes 10000 --stages partition,nothing --workdir " + dir / "bad");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_THAT(bad.output, HasSubstr("nothing")) << bad.output;
}

// `tessera launch` on this host (both machines on 127.0.0.1, no ssh):
// flag checks fail before anything starts, a job runs to the end with
// prefixed output, and a failing trainer stops everything with its code.
TEST(Cli, LaunchLocallyChecksRunsAndStops) {
  TempDir dir;
  std::string parts = kvstore::testing::PartitionCora(dir / "ws/parts", 2);
  {
    // Free ports: servers at p and p + 1 (machine 0; p + 1 is also the
    // rendezvous port), q (machine 1).
    auto p = launcher::ProbeFreePortRange("127.0.0.1", 2);
    auto q = launcher::ProbeFreePortRange("127.0.0.1", 1);
    ASSERT_TRUE(p.ok() && q.ok());
    std::ofstream(dir / "ws/ip_config.txt") << "127.0.0.1 " << *p << "\n127.0.0.1 " << *q << "\n";
    std::ofstream(dir / "ws/one.txt") << "127.0.0.1 " << *q << "\n";
  }
  const std::string base = "launch --workspace " + dir / "ws" + " --part-config parts/cora.json ";
  CliRun mismatch = RunTessera(base + "--ip-config one.txt true");
  EXPECT_NE(mismatch.exit_code, 0);
  EXPECT_THAT(mismatch.output, HasSubstr("2 partitions but one.txt lists 1 machines"))
      << mismatch.output;
  CliRun no_workspace = RunTessera("launch --workspace " + dir / "nowhere" +
                                   " --part-config p.json --ip-config i.txt true");
  EXPECT_THAT(no_workspace.output, HasSubstr("nowhere")) << no_workspace.output;
  CliRun bad_env = RunTessera(base + "--ip-config ip_config.txt --extra-envs NOEQUALS true");
  EXPECT_THAT(bad_env.output, HasSubstr("NOEQUALS")) << bad_env.output;

  const std::string trainer = std::string(TESSERA_BINARY_DIR) +
                              "/bin/graphsage_train_dist --graph-name cora --part-config "
                              "parts/cora.json --log-every 0 --num-epochs ";
  // Encrypted by default: every trainer has the job key, and no process of
  // the machine has it on its command line.
  std::ofstream(dir / "ws/check_key.sh")
      << "[ -n \"$TESSERA_JOB_KEY\" ] || { echo 'no job key'; exit 8; }\n"
         "for f in /proc/[0-9]*/cmdline; do\n"
         "  case \"$(tr '\\0' ' ' < \"$f\" 2>/dev/null)\" in\n"
         "    *\"$TESSERA_JOB_KEY\"*) echo \"error: the job key is in $f\"; exit 9;;\n"
         "  esac\n"
         "done\n";
  std::ofstream(dir / "ws/check_plain.sh")
      << "[ \"$TESSERA_JOB_ENCRYPTION\" = off ] && [ -z \"$TESSERA_JOB_KEY\" ]\n";
  CliRun ok =
      RunTessera(base + "--ip-config ip_config.txt --num-trainers 2 --extra-envs X_TAG=7 '" +
                 "sh check_key.sh && " + trainer + "1 && test \"$X_TAG\" = 7'");
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
  CliRun plain = RunTessera(base + "--ip-config ip_config.txt --no-encryption '" +
                            "sh check_plain.sh && " + trainer + "1'");
  EXPECT_EQ(plain.exit_code, 0) << plain.output;
  EXPECT_THAT(plain.output, HasSubstr("--no-encryption: the job's traffic")) << plain.output;
  EXPECT_THAT(ok.output, HasSubstr("[1/trainer/3]")) << ok.output;
  EXPECT_THAT(ok.output, HasSubstr("[0/server/0]")) << ok.output;
  EXPECT_THAT(ok.output, HasSubstr("succeeded")) << ok.output;

  // Trainer 1 fails at once: the others are stopped, the code is its own,
  // and the message quotes its last error line (not merely its last line).
  CliRun failed =
      RunTessera(base + "--ip-config ip_config.txt --num-trainers 1 '" +
                 "if [ $RANK = 1 ]; then echo starting; echo \"error: disk on fire\" >&2; "
                 "echo last words; exit 3; fi; " +
                 trainer + "100000'");
  EXPECT_EQ(failed.exit_code, 3) << failed.output;
  EXPECT_THAT(failed.output, HasSubstr("failed after")) << failed.output;
  EXPECT_THAT(failed.output, HasSubstr("trainer 1 on machine 1 (127.0.0.1) exited with code 3: "
                                       "error: disk on fire"))
      << failed.output;
  size_t at = failed.output.find("launch: job j");
  ASSERT_NE(at, std::string::npos);
  std::string job = failed.output.substr(at + 12, failed.output.find(':', at + 12) - at - 12);
  for (const auto& entry : std::filesystem::directory_iterator("/dev/shm")) {
    EXPECT_THAT(entry.path().filename().string(), Not(HasSubstr(job))) << entry.path();
  }
}

}  // namespace
}  // namespace tessera
