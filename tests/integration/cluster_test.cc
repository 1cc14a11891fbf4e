// File: tests/integration/cluster_test.cc
//
// `tessera copy-files` and `tessera launch` on a real two-host cluster: two
// network namespaces joined by a veth link, each with its own address and
// its own sshd (key authentication, a key made for the test). The launcher
// runs in the first namespace and reaches both hosts over ssh (--ssh), like
// a launch from a head node. Then:
//   * copy-files, then GraphSAGE training end to end across the hosts;
//   * kill -9 of a trainer, kill -9 of a server, SIGINT to the launcher: each
//     time the launcher exits non-zero within 30 s, and no process of the job
//     and no shared-memory segment of it remains on either host;
//   * `tessera mpi-partition` under Open MPI's mpirun across the hosts (its
//     ssh launcher with the test's key, TCP over the veth link), 2 and 4
//     ranks: random output byte-identical to `tessera partition`, METIS
//     checked edge by edge; a failing or killed rank on the second host ends
//     the job non-zero, naming it, with no config and nothing left running.
// The namespaces share this machine's file system, process table and
// /dev/shm, so "on either host" is checked once for both. The tests skip
// (with the reason) where namespaces or sshd are unavailable (the MPI one
// also where mpirun is not Open MPI's), and remove their namespaces and
// whatever still runs in them whatever happens.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <thread>
#include <tuple>

#include "gtest/gtest.h"
#include "src/base/process.h"
#include "src/base/test_util.h"
#include "src/kvstore/test_cluster.h"
#include "tessera/base/strings.h"
#include "tessera/base/time.h"
#include "tests/integration/partition_check.h"

namespace tessera {
namespace {

namespace fs = std::filesystem;

int Shell(const std::string& command) {
  int status = std::system((command + " >/dev/null 2>&1").c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string Program(const std::string& name) {
  return std::string(TESSERA_BINARY_DIR) + "/bin/" + name;
}

class ClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SetUpHosts();
    if (IsSkipped() || HasFatalFailure()) return;
    SetUpJob();
  }

  // The two hosts: namespaces, veth link, addresses, keys and sshds.
  void SetUpHosts() {
    if (geteuid() != 0) GTEST_SKIP() << "needs root to create network namespaces";
    if (!fs::exists("/usr/sbin/sshd")) GTEST_SKIP() << "sshd is not installed (openssh-server)";
    const std::string tag = std::to_string(getpid() % 100000);
    ns_ = {"tsa" + tag, "tsb" + tag};
    subnet_ = "10.213." + std::to_string(getpid() % 250) + ".";
    ip_ = {subnet_ + "1", subnet_ + "2"};
    if (Shell("ip netns add " + ns_[0]) != 0) {
      ns_.clear();
      GTEST_SKIP() << "cannot create network namespaces here (ip netns add failed)";
    }
    created_ = 1;
    ASSERT_EQ(Shell("ip netns add " + ns_[1]), 0);
    created_ = 2;
    const std::string va = "tva" + tag, vb = "tvb" + tag;
    ASSERT_EQ(Shell("ip link add " + va + " netns " + ns_[0] + " type veth peer name " + vb +
                    " netns " + ns_[1]),
              0);
    for (int h = 0; h < 2; ++h) {
      const std::string exec = "ip netns exec " + ns_[h] + " ";
      const std::string dev = h == 0 ? va : vb;
      ASSERT_EQ(Shell(exec + "ip link set lo up"), 0);
      ASSERT_EQ(Shell(exec + "ip addr add " + ip_[h] + "/24 dev " + dev), 0);
      ASSERT_EQ(Shell(exec + "ip link set " + dev + " up"), 0);
    }
    // Keys and one sshd per host.
    dir_ = std::make_unique<testing::TempDir>();
    ASSERT_EQ(Shell("ssh-keygen -q -t ed25519 -N '' -f " + *dir_ / "host_key"), 0);
    ASSERT_EQ(Shell("ssh-keygen -q -t ed25519 -N '' -f " + *dir_ / "id"), 0);
    fs::copy_file(*dir_ / "id.pub", *dir_ / "authorized_keys");
    fs::create_directories("/run/sshd");
    for (int h = 0; h < 2; ++h) {
      std::string config = *dir_ / ("sshd" + std::to_string(h) + ".conf");
      std::ofstream(config) << "Port 22\nListenAddress " << ip_[h] << "\nHostKey "
                            << *dir_ / "host_key"
                            << "\nAuthorizedKeysFile " << *dir_ / "authorized_keys"
                            << "\nPermitRootLogin prohibit-password\nPasswordAuthentication no\n"
                               "KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n"
                               "PidFile none\nLogLevel ERROR\nSubsystem sftp internal-sftp\n";
      auto sshd = Process::Spawn({.argv = {"/usr/sbin/ip", "netns", "exec", ns_[h],
                                           "/usr/sbin/sshd", "-D", "-e", "-f", config},
                                  .log_path = *dir_ / ("sshd" + std::to_string(h) + ".log")});
      ASSERT_TRUE(sshd.ok()) << sshd.status();
      sshd_.push_back(std::move(*sshd));
    }
    ssh_options_ = {
        "--ssh-option", "IdentityFile=" + *dir_ / "id", "--ssh-option", "StrictHostKeyChecking=no",
        "--ssh-option", "UserKnownHostsFile=/dev/null", "--ssh-option", "LogLevel=ERROR"};
    // Wait until both sshds answer.
    for (int h = 0; h < 2; ++h) {
      Deadline deadline = Deadline::InSeconds(20);
      while (Shell("ip netns exec " + ns_[0] + " ssh -o BatchMode=yes -o IdentityFile=" +
                   *dir_ / "id" + " -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null " +
                   ip_[h] + " true") != 0) {
        ASSERT_FALSE(deadline.Expired())
            << "sshd on " << ip_[h] << " does not answer: "
            << testing::ReadAll(*dir_ / ("sshd" + std::to_string(h) + ".log"));
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    }
  }

  // The job: Cora in 2 parts, copied to the hosts' workspace.
  void SetUpJob() {
    std::string parts = kvstore::testing::PartitionCora(*dir_ / "parts", 2);
    std::ofstream(*dir_ / "ip_config.txt") << ip_[0] << " 30050\n" << ip_[1] << " 30050\n";
    fs::create_directories(*dir_ / "scripts");
    std::ofstream(*dir_ / "scripts/train.sh")
        << "exec " << Program("graphsage_train_dist")
        << " --graph-name cora --part-config data/cora.json --log-every 0 \"$@\"\n";
    // The Python example (tessera.distributed + PyTorch DDP), with this build's package.
    std::ofstream(*dir_ / "scripts/train_py.sh")
        << "export PYTHONPATH=" << TESSERA_BINARY_DIR << "/python\n"
        << "exec /usr/bin/python3 " << TESSERA_SOURCE_DIR
        << "/examples/python/graphsage/node_classification.py --graph_name cora "
           "--part_config data/cora.json --log_every 0 \"$@\"\n";
    for (const char* name : {"graphsage/link_prediction", "embedding/node_embedding"}) {
      std::string file = std::string(name).substr(std::string(name).find('/') + 1);
      std::ofstream(*dir_ / ("scripts/" + file + ".sh"))
          << "export PYTHONPATH=" << TESSERA_BINARY_DIR << "/python\n"
          << "exec /usr/bin/python3 " << TESSERA_SOURCE_DIR << "/examples/python/" << name
          << ".py --graph_name cora --part_config data/cora.json --json \"$@\"\n";
    }
    workspace_ = *dir_ / "workspace";
    fs::create_directories(workspace_);
    std::vector<std::string> copy = {TesseraArgv()[0],        "copy-files",  "--ssh",
                                     "--part-config",         parts,         "--ip-config",
                                     *dir_ / "ip_config.txt", "--workspace", workspace_,
                                     "--rel-data-path",       "data",        "--script-folder",
                                     *dir_ / "scripts"};
    copy.insert(copy.end(), ssh_options_.begin(), ssh_options_.end());
    SpawnOptions spawn{.argv = InNamespace(copy), .log_path = *dir_ / "copy.log"};
    auto copier = Process::Spawn(spawn);
    ASSERT_TRUE(copier.ok());
    auto code = copier->Wait(Deadline::InSeconds(120));
    ASSERT_TRUE(code.ok() && *code == 0) << testing::ReadAll(*dir_ / "copy.log");
  }

  void TearDown() override {
    // Whatever a failed test left on the hosts, then the sshds.
    for (int h = 0; h < created_; ++h) {
      for (const auto& [pid, cmdline] : HostProcesses(h)) kill(pid, SIGKILL);
    }
    sshd_.clear();  // Stops them.
    for (int h = 0; h < created_; ++h) Shell("ip netns del " + ns_[h]);
  }

  std::vector<std::string> TesseraArgv() const { return {testing::TesseraBinary()}; }
  std::vector<std::string> InNamespace(std::vector<std::string> argv) const {
    argv.insert(argv.begin(), {"/usr/sbin/ip", "netns", "exec", ns_[0]});
    return argv;
  }
  // Starts `tessera launch` (in the first namespace) with trainer arguments.
  Process StartLaunch(const std::string& train_args, const std::string& log,
                      const std::string& script = "scripts/train.sh",
                      const std::vector<std::string>& launch_args = {}) {
    std::vector<std::string> argv = {
        testing::TesseraBinary(), "launch",      "--ssh",         "--workspace", workspace_,
        "--num-trainers",         "1",           "--num-servers", "1",           "--part-config",
        "data/cora.json",         "--ip-config", "ip_config.txt", "--grace",     "2"};
    argv.insert(argv.end(), ssh_options_.begin(), ssh_options_.end());
    argv.insert(argv.end(), launch_args.begin(), launch_args.end());
    argv.push_back("sh " + script + " " + train_args);
    auto p = Process::Spawn({.argv = InNamespace(argv), .log_path = log});
    EXPECT_TRUE(p.ok()) << p.status();
    return std::move(*p);
  }
  // The job id the launcher printed.
  static std::string JobOf(const std::string& log) {
    std::string text = testing::ReadAll(log);
    size_t at = text.find("launch: job ");
    if (at == std::string::npos) return "";
    return text.substr(at + 12, text.find(':', at + 12) - at - 12);
  }
  // Waits for `needle` in the log.
  static bool WaitFor(const std::string& log, const std::string& needle, double seconds) {
    Deadline deadline = Deadline::InSeconds(seconds);
    while (testing::ReadAll(log).find(needle) == std::string::npos) {
      if (deadline.Expired()) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return true;
  }
  // A pgrep/pkill pattern for `regex` that does not match the shell running
  // pgrep itself (whose command line contains the pattern): "[x]yz".
  static std::string NotSelf(const std::string& regex) {
    return "'[" + regex.substr(0, 1) + "]" + regex.substr(1) + "'";
  }
  // No process of the job and none of its shared memory remains.
  static void ExpectNothingLeft(const std::string& job) {
    ASSERT_FALSE(job.empty());
    Deadline deadline = Deadline::InSeconds(10);
    while (Shell("pgrep -f " + NotSelf(job)) == 0 && !deadline.Expired()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    EXPECT_NE(Shell("pgrep -f " + NotSelf(job)), 0) << "processes of job " << job << " remain";
    for (const auto& entry : fs::directory_iterator("/dev/shm")) {
      EXPECT_THAT(entry.path().filename().string(), Not(HasSubstr(job)))
          << entry.path() << " remains";
    }
  }
  // The processes of host `h` (pid, command line) but its sshd listener.
  std::vector<std::pair<pid_t, std::string>> HostProcesses(int h) const {
    std::vector<std::pair<pid_t, std::string>> found;
    FILE* pipe = popen(("ip netns pids " + ns_[h] + " 2>/dev/null").c_str(), "r");
    if (pipe == nullptr) return found;
    int pid = 0;
    while (fscanf(pipe, "%d", &pid) == 1) {
      if (h < static_cast<int>(sshd_.size()) && pid == sshd_[h].pid()) continue;
      std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline");
      std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
      found.emplace_back(pid, cmdline);
    }
    pclose(pipe);
    return found;
  }
  // Kills (SIGKILL) the processes of host `h` whose command line contains
  // every one of `words`.
  void KillOnHost(int h, const std::vector<std::string>& words) {
    FILE* pipe = popen(("ip netns pids " + ns_[h]).c_str(), "r");
    ASSERT_NE(pipe, nullptr);
    int pid = 0, killed = 0;
    while (fscanf(pipe, "%d", &pid) == 1) {
      std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline");
      std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
      bool all = !cmdline.empty();
      for (const std::string& w : words) all &= cmdline.find(w) != std::string::npos;
      if (all && cmdline.find("supervise") == std::string::npos && kill(pid, SIGKILL) == 0) {
        ++killed;
      }
    }
    pclose(pipe);
    ASSERT_GT(killed, 0) << "no process on host " << h << " matches";
  }

  std::vector<std::string> ns_, ip_, ssh_options_;
  std::string subnet_, workspace_;
  int created_ = 0;
  std::unique_ptr<testing::TempDir> dir_;
  std::vector<Process> sshd_;
};

TEST_F(ClusterTest, CopyFilesPutsEachPartitionOnItsMachine) {
  EXPECT_TRUE(fs::exists(workspace_ + "/data/part0/graph"));
  EXPECT_TRUE(fs::exists(workspace_ + "/data/part1/graph"));
  EXPECT_TRUE(fs::exists(workspace_ + "/data/cora.json"));
  EXPECT_TRUE(fs::exists(workspace_ + "/ip_config.txt"));
  EXPECT_TRUE(fs::exists(workspace_ + "/scripts/train.sh"));
  std::string config = testing::ReadAll(workspace_ + "/data/cora.json");
  EXPECT_THAT(config, HasSubstr("\"part1/graph\"")) << config;
}

TEST_F(ClusterTest, PythonExampleTrainsAcrossHosts) {
  // DGL's example ported to tessera.distributed, its gradients averaged by
  // PyTorch's DistributedDataParallel over Gloo between the two hosts.
  std::string log = *dir_ / "python.log";
  Process launch = StartLaunch("--num_epochs 3 --batch_size 64", log, "scripts/train_py.sh");
  auto code = launch.Wait(Deadline::InSeconds(300));
  ASSERT_TRUE(code.ok()) << testing::ReadAll(log);
  ASSERT_EQ(*code, 0) << testing::ReadAll(log);
  std::string out = testing::ReadAll(log);
  for (const char* line : {"[0/trainer/0] Part 0, Val Acc", "[1/trainer/1] Part 1, Val Acc"}) {
    EXPECT_THAT(out, HasSubstr(line)) << out;
  }
  // Both trainers end with the same parameters.
  std::vector<std::string> sums;
  for (size_t at = out.find("Params checksum "); at != std::string::npos;
       at = out.find("Params checksum ", at + 1)) {
    sums.push_back(out.substr(at + 16, out.find('\n', at) - at - 16));
  }
  ASSERT_EQ(sums.size(), 2u) << out;
  EXPECT_EQ(sums[0], sums[1]) << out;
  ExpectNothingLeft(JobOf(log));
  // The other two examples across the hosts: they finish and print results.
  for (const auto& [script, args, needle] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"scripts/link_prediction.sh", "--num_epochs 1 --log_every 0", "trained AUC"},
           {"scripts/node_embedding.sh", "--num_epochs 5", "test accuracy"}}) {
    SCOPED_TRACE(script);
    std::string elog = *dir_ / (script.substr(8) + ".log");
    Process run = StartLaunch(args, elog, script);
    auto done = run.Wait(Deadline::InSeconds(300));
    ASSERT_TRUE(done.ok()) << testing::ReadAll(elog);
    ASSERT_EQ(*done, 0) << testing::ReadAll(elog);
    std::string text = testing::ReadAll(elog);
    EXPECT_THAT(text, HasSubstr("[1/trainer/1] Part 1, " + needle)) << text;
    EXPECT_THAT(text, HasSubstr("RESULT")) << text;
    ExpectNothingLeft(JobOf(elog));
  }
}

TEST_F(ClusterTest, TrainsAcrossHostsAndStopsCleanlyOnEveryFailure) {
  // 1. Training end to end, then a second launch right away (ports free).
  for (int round = 0; round < 2; ++round) {
    std::string log = *dir_ / ("ok" + std::to_string(round) + ".log");
    Process launch = StartLaunch("--num-epochs 2 --batch-size 64", log);
    auto code = launch.Wait(Deadline::InSeconds(180));
    ASSERT_TRUE(code.ok()) << testing::ReadAll(log);
    ASSERT_EQ(*code, 0) << testing::ReadAll(log);
    std::string out = testing::ReadAll(log);
    EXPECT_THAT(out, HasSubstr("[1/trainer/1]")) << out;
    EXPECT_THAT(out, HasSubstr("[0/trainer/0]")) << out;
    EXPECT_THAT(out, HasSubstr("process group of 2 trainers")) << out;
    EXPECT_THAT(out, HasSubstr("done: test accuracy")) << out;
    ExpectNothingLeft(JobOf(log));
  }
  // 2. kill -9 a trainer on host 1, 3. kill -9 a server on host 1,
  // 4. SIGINT to the launcher.
  for (const std::string what : {"trainer", "server", "sigint"}) {
    SCOPED_TRACE(what);
    std::string log = *dir_ / (what + ".log");
    const std::string marker = "--seed 77" + std::to_string(what.size());
    Process launch = StartLaunch("--num-epochs 100000 --batch-size 32 " + marker, log);
    ASSERT_TRUE(WaitFor(log, "[1/trainer/1]", 120)) << testing::ReadAll(log);
    ASSERT_TRUE(WaitFor(log, "epoch 0:", 120)) << testing::ReadAll(log);
    std::string job = JobOf(log);
    if (what == "trainer") {
      KillOnHost(1, {"graphsage_train_dist", marker});
    } else if (what == "server") {
      KillOnHost(1, {" server ", "--job-id " + job});
    } else {
      launch.Signal(SIGINT);
    }
    Stopwatch watch;
    auto code = launch.Wait(Deadline::InSeconds(60));
    ASSERT_TRUE(code.ok()) << testing::ReadAll(log);
    EXPECT_NE(*code, 0) << testing::ReadAll(log);
    EXPECT_LT(watch.Seconds(), 30) << testing::ReadAll(log);
    std::string out = testing::ReadAll(log);
    if (what == "trainer") {
      EXPECT_THAT(out, HasSubstr("trainer 1 on machine 1")) << out;
    }
    if (what == "server") {
      EXPECT_THAT(out, HasSubstr("server 1 on machine 1")) << out;
    }
    if (what == "sigint") {
      EXPECT_THAT(out, HasSubstr("interrupted")) << out;
    }
    ExpectNothingLeft(job);
  }
}

// Every process of host 1 (servers, trainers, supervisors: all but its
// sshd, so the machine comes back) killed with SIGKILL after a checkpoint:
// under --max-restarts 1 the job starts again on both hosts, resumes, and
// ends with the parameters of an uninterrupted run (2 trainers: bit for bit).
TEST_F(ClusterTest, AJobResumesAfterAWholeMachineIsKilled) {
  // Cora's 140 training nodes over 2 trainers, batches of 16: 5 steps per epoch.
  const std::string train =
      "--num-epochs 6 --batch-size 16 --eval-every 0 --seed 5 --checkpoint-every 3";
  auto checksum = [](const std::string& out) {
    size_t at = out.find("trainer 0 parameter checksum ");
    return at == std::string::npos ? std::string() : out.substr(at, out.find('\n', at) - at);
  };
  std::string plain_log = *dir_ / "plain.log";
  Process plain = StartLaunch(train + " --checkpoint-dir ckpt_plain", plain_log);
  auto code = plain.Wait(Deadline::InSeconds(180));
  ASSERT_TRUE(code.ok() && *code == 0) << testing::ReadAll(plain_log);
  const std::string expected = checksum(testing::ReadAll(plain_log));
  ASSERT_FALSE(expected.empty()) << testing::ReadAll(plain_log);

  std::string log = *dir_ / "machine.log";
  Process launch = StartLaunch(train, log, "scripts/train.sh",
                               {"--max-restarts", "1", "--checkpoint-dir", "ckpt"});
  ASSERT_TRUE(WaitFor(log, "checkpoint: step 6 saved", 120)) << testing::ReadAll(log);
  const std::string first_job = JobOf(log);
  int killed = 0;
  for (const auto& [pid, cmdline] : HostProcesses(1)) killed += kill(pid, SIGKILL) == 0;
  ASSERT_GT(killed, 0);
  code = launch.Wait(Deadline::InSeconds(240));
  std::string out = testing::ReadAll(log);
  ASSERT_TRUE(code.ok()) << out;
  EXPECT_EQ(*code, 0) << out;
  EXPECT_THAT(out, HasSubstr("restart 1 of 1")) << out;
  EXPECT_THAT(out, HasSubstr("[1/trainer/1] [")) << out;
  EXPECT_THAT(out, HasSubstr("resumed from step")) << out;
  EXPECT_EQ(checksum(out), expected) << out;
  ExpectNothingLeft(first_job);
  const size_t last = out.rfind("launch: job ");
  ExpectNothingLeft(out.substr(last + 12, out.find(':', last + 12) - last - 12));
}

// `tessera mpi-partition` with Open MPI across the two hosts: mpirun in the
// first namespace starts the second host's ranks through its ssh launcher
// (the test's key) and the ranks talk TCP over the veth link.
class MpiClusterTest : public ClusterTest {
 protected:
  void SetUp() override {
    testing::ShellRun version = testing::RunShell(std::string(TESSERA_MPIRUN) + " --version");
    if (version.exit_code != 0 || version.output.find("Open MPI") == std::string::npos) {
      GTEST_SKIP() << TESSERA_MPIRUN << " is not Open MPI's mpirun: " << version.output;
    }
    SetUpHosts();
    if (IsSkipped() || HasFatalFailure()) return;
    // The graph of mpi_partition_test, chunked, and its single-process
    // random partition.
    for (const std::string& args :
         {"generate --out " + *dir_ / "g" +
              " --nodes 2000 --edges 8000 --feat-dim 4 --classes 3 --threads 1",
          "chunk --input " + *dir_ / "g" + " --out " + *dir_ / "chunked" +
              " --num-chunks 3 --graph-name g",
          "partition --input " + *dir_ / "g" + " --graph-name g --num-parts 4 " +
              "--part-method random --seed 3 --num-hops 2 --return-mapping --out " +
              *dir_ / "serial"}) {
      testing::ShellRun run = testing::RunShell(testing::TesseraBinary() + " " + args);
      ASSERT_EQ(run.exit_code, 0) << args << "\n" << run.output;
    }
  }

  // What mpirun needs to start ranks on the other host and reach them.
  std::vector<std::string> MpirunOptions() const {
    const std::string subnet = subnet_ + "0/24";
    return {"--allow-run-as-root",
            "--mca",
            "plm_rsh_agent",
            "ssh -o BatchMode=yes -o IdentityFile=" + *dir_ / "id" +
                " -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR",
            "--mca",
            "btl",
            "self,tcp",
            "--mca",
            "btl_tcp_if_include",
            subnet,
            "--mca",
            "oob_tcp_if_include",
            subnet};
  }
  // `mpirun -np 2*per_host`, `per_host` ranks on each host, of `program`
  // (default: `tessera mpi-partition`) with `args` (split at spaces).
  std::vector<std::string> Mpirun(int per_host, const std::string& args,
                                  std::vector<std::string> program = {}) const {
    std::vector<std::string> argv = {TESSERA_MPIRUN, "-np", std::to_string(2 * per_host), "--host",
                                     StrCat(ip_[0], ":", per_host, ",", ip_[1], ":", per_host)};
    for (const std::string& option : MpirunOptions()) argv.push_back(option);
    if (program.empty()) program = {testing::TesseraBinary(), "mpi-partition"};
    argv.insert(argv.end(), program.begin(), program.end());
    for (std::string_view arg : SplitString(args, ' ')) argv.emplace_back(arg);
    return argv;
  }
  // Runs `argv` in the first namespace: its exit code, its output in `log`.
  // Past `seconds` it fails the test and kills the run's process group and
  // whatever runs on the hosts (Open MPI waits forever on a filtered port).
  int Run(const std::vector<std::string>& argv, const std::string& log, double seconds = 120) {
    auto p = Process::Spawn({.argv = InNamespace(argv), .log_path = log});
    EXPECT_TRUE(p.ok()) << p.status();
    if (!p.ok()) return -1;
    auto code = p->Wait(Deadline::InSeconds(seconds));
    if (code.ok()) return *code;
    ADD_FAILURE() << "still running after " << seconds << " s: " << StrJoin(argv, " ") << "\n"
                  << testing::ReadAll(log);
    kill(-p->pid(), SIGKILL);
    for (int h = 0; h < 2; ++h) {
      for (const auto& [pid, cmdline] : HostProcesses(h)) kill(pid, SIGKILL);
    }
    return -1;
  }
  // Nothing but the sshd listeners remains on either host (within 10 s: the
  // remote orted exits when it sees mpirun's connection close).
  void ExpectHostsIdle() const {
    Deadline deadline = Deadline::InSeconds(10);
    std::string left;
    do {
      left.clear();
      for (int h = 0; h < 2; ++h) {
        for (const auto& [pid, cmdline] : HostProcesses(h)) {
          left += StrCat("host ", h, ": ", pid, " ", cmdline, "\n");
        }
      }
      if (left.empty()) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    } while (!deadline.Expired());
    ADD_FAILURE() << "processes remain:\n" << left;
  }
};

TEST_F(MpiClusterTest, PartitionsAcrossHostsAndStopsWhenARemoteRankDies) {
  const std::string input = *dir_ / "chunked";
  const auto expected = testing::ReadTree(*dir_ / "serial");
  // 0. The ranks run on both hosts: two in each host's network namespace.
  {
    const std::string log = *dir_ / "where.log";
    ASSERT_EQ(Run(Mpirun(2, "/proc/self/ns/net", {"/usr/bin/readlink"}), log), 0)
        << testing::ReadAll(log);
    const std::string text = testing::ReadAll(log);
    for (int h = 0; h < 2; ++h) {
      const std::string net =
          fs::read_symlink("/proc/" + std::to_string(sshd_[h].pid()) + "/ns/net").string();
      size_t count = 0;
      for (size_t at = text.find(net); at != std::string::npos; at = text.find(net, at + 1)) {
        ++count;
      }
      EXPECT_EQ(count, 2u) << "host " << h << " (" << net << "):\n" << text;
    }
    ExpectHostsIdle();
  }
  // 1. Random: byte-identical to the single process, with one rank per host
  // (mpirun --host) and two per host (the --ranks wrapper on the machines
  // of an ip_config, with ssh options as `tessera launch` takes them).
  std::ofstream(*dir_ / "ip_config") << ip_[0] << "\n" << ip_[1] << " 30060\n";
  for (int per_host : {1, 2}) {
    SCOPED_TRACE(per_host);
    const std::string out = *dir_ / StrCat("random", per_host), log = out + ".log";
    const std::string args = "--input " + input +
                             " --num-parts 4 --part-method random --seed 3 --num-hops 2 "
                             "--return-mapping --out " +
                             out;
    std::vector<std::string> argv;
    if (per_host == 1) {
      argv = Mpirun(1, args);
    } else {
      argv = {
          testing::TesseraBinary(), "mpi-partition", "--ranks",        "4",        "--ip-config",
          *dir_ / "ip_config",      "--network",     subnet_ + "0/24", "--mpirun", TESSERA_MPIRUN};
      for (const char* option : {"IdentityFile=", "StrictHostKeyChecking=no",
                                 "UserKnownHostsFile=/dev/null", "LogLevel=ERROR"}) {
        argv.push_back(StrCat("--ssh-option=", option,
                              std::string_view(option) == "IdentityFile=" ? *dir_ / "id" : ""));
      }
      for (std::string_view arg : SplitString(args, ' ')) argv.emplace_back(arg);
    }
    Stopwatch watch;
    ASSERT_EQ(Run(argv, log), 0) << testing::ReadAll(log);
    std::cout << 2 * per_host << " ranks, random: " << watch.Seconds() << " s\n";
    const auto actual = testing::ReadTree(out);
    ASSERT_EQ(actual.size(), expected.size());
    for (const auto& [name, bytes] : expected) {
      ASSERT_TRUE(actual.count(name)) << name;
      EXPECT_TRUE(actual.at(name) == bytes) << name << " differs";
    }
    ExpectHostsIdle();
  }
  // 2. METIS (PT-Scotch across the hosts): a valid partition, checked edge
  // by edge against the input.
  for (int per_host : {1, 2}) {
    SCOPED_TRACE(per_host);
    const std::string out = *dir_ / StrCat("metis", per_host), log = out + ".log";
    Stopwatch watch;
    ASSERT_EQ(Run(Mpirun(per_host, "--input " + input +
                                       " --num-parts 4 --balance-ntypes train_mask "
                                       "--return-mapping --out " +
                                       out),
                  log),
              0)
        << testing::ReadAll(log);
    std::cout << 2 * per_host << " ranks, metis: " << watch.Seconds() << " s\n";
    testing::CheckAgainstInput(out + "/g.json", *dir_ / "g");
    testing::ShellRun inspect =
        testing::RunShell(testing::TesseraBinary() + " inspect " + out + "/g.json");
    EXPECT_EQ(inspect.exit_code, 0) << inspect.output;
    EXPECT_THAT(inspect.output, HasSubstr("2000 nodes, 16000 edges, 4 parts")) << inspect.output;
    ExpectHostsIdle();
  }
  // 3. The rank on the second host fails, then is killed mid-shuffle: the
  // job ends non-zero within 30 s naming rank 1 (and the host it ran on),
  // with no config, and nothing remains on either host.
  for (const std::string fail_at : {"halo:1", "shuffle:1:kill"}) {
    SCOPED_TRACE(fail_at);
    const std::string out = *dir_ / "failed", log = *dir_ / (fail_at + ".log");
    Stopwatch watch;
    const int code =
        Run(Mpirun(1, "--input " + input + " --num-parts 4 --part-method random --out " + out +
                          " --fail-at " + fail_at),
            log, 60);
    const std::string text = testing::ReadAll(log);
    EXPECT_NE(code, 0) << text;
    EXPECT_LT(watch.Seconds(), 30) << text;
    std::cout << fail_at << ": exit " << code << " after " << watch.Seconds() << " s\n";
    if (fail_at == "halo:1") {
      EXPECT_THAT(text, HasSubstr("error: rank 1 of 2: failure injected at step halo")) << text;
    } else {
      EXPECT_THAT(text, HasSubstr("rank 1 with PID")) << text;
      EXPECT_THAT(text, HasSubstr("on node " + ip_[1])) << text;
      EXPECT_THAT(text, HasSubstr("signal 9")) << text;
    }
    EXPECT_FALSE(fs::exists(out + "/g.json"));
    if (fail_at == "halo:1") {  // A failure that every rank saw removes what the run wrote.
      for (int p = 0; p < 4; ++p) EXPECT_FALSE(fs::exists(StrCat(out, "/part", p))) << p;
    }
    ExpectHostsIdle();
  }
}

}  // namespace
}  // namespace tessera
