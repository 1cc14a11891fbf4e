// File: tests/integration/runtime_test.cc
//
// The runtime with real processes: `tessera server` processes and
// test_client processes started by LocalJob on loopback, over Cora
// partitioned into two machines. Failure behaviour: killed servers and
// clients, SIGTERM, hostile traffic, two jobs side by side.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <random>
#include <thread>

#include "gtest/gtest.h"
#include "src/base/test_util.h"
#include "src/kvstore/test_cluster.h"
#include "src/launcher/local_job.h"
#include "src/rpc/security.h"
#include "src/shm/segment.h"
#include "zmq.hpp"

namespace tessera {
namespace {

using launcher::LocalJob;
using launcher::LocalJobOptions;

std::string ClientBinary() { return std::string(TESSERA_BINARY_DIR) + "/bin/tessera_test_client"; }

class RuntimeTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir();
    config_ = new std::string(kvstore::testing::PartitionCora(dir_->path(), 2));
  }
  static void TearDownTestSuite() {
    delete config_;
    delete dir_;
  }
  LocalJobOptions Options(std::vector<std::string> client_args, int servers = 1,
                          int clients_per_machine = 1) {
    LocalJobOptions o;
    o.tessera_binary = testing::TesseraBinary();
    o.part_config = *config_;
    o.workdir = work_.path();
    o.servers_per_machine = servers;
    o.clients_per_machine = clients_per_machine;
    if (!client_args.empty()) {
      o.client_argv = {ClientBinary()};
      for (auto& a : client_args) o.client_argv.push_back(a);
    }
    o.client_log_dir = work_.path();
    o.startup_timeout_s = 60;
    return o;
  }
  std::string ClientLog(int rank) {
    return testing::ReadAll(work_ / ("client-" + std::to_string(rank) + ".log"));
  }

  static testing::TempDir* dir_;
  static std::string* config_;
  testing::TempDir work_;
};
testing::TempDir* RuntimeTest::dir_ = nullptr;
std::string* RuntimeTest::config_ = nullptr;

TEST_F(RuntimeTest, ClientsPullCorrectRowsAndServersExitAfterThem) {
  std::string job_id;
  {
    auto job = LocalJob::Start(Options({"pull-check"}, 1, 2));
    ASSERT_TRUE(job.ok()) << job.status();
    job_id = (*job)->job_id();
    EXPECT_FALSE(shm::ListJobSegments(job_id).empty());
    auto result = (*job)->Wait(Deadline::InSeconds(120));
    ASSERT_TRUE(result.ok()) << result.status();
    for (int r = 0; r < 4; ++r) EXPECT_EQ(result->client_exit_codes[r], 0) << ClientLog(r);
    for (int code : result->server_exit_codes) EXPECT_EQ(code, 0);
    // Servers left by themselves, cleaning up their shared memory.
    EXPECT_TRUE(shm::ListJobSegments(job_id).empty());
  }
}

TEST_F(RuntimeTest, ConcurrentPushesWithTwoServersPerMachine) {
  auto job = LocalJob::Start(Options({"push-add", "200"}, 2, 2));
  ASSERT_TRUE(job.ok()) << job.status();
  auto result = (*job)->Wait(Deadline::InSeconds(120));
  ASSERT_TRUE(result.ok()) << result.status();
  for (int r = 0; r < 4; ++r) EXPECT_EQ(result->client_exit_codes[r], 0) << ClientLog(r);
  for (int code : result->server_exit_codes) EXPECT_EQ(code, 0);
}

TEST_F(RuntimeTest, KilledServerFailsEveryClientWithinItsDeadline) {
  auto job = LocalJob::Start(Options({"pull-loop", "120"}, 1, 1));
  ASSERT_TRUE(job.ok()) << job.status();
  std::this_thread::sleep_for(std::chrono::seconds(1));  // Let the pulls run.
  (*job)->servers()[1].Signal(SIGKILL);
  Stopwatch watch;
  auto& clients = (*job)->clients();
  for (size_t r = 0; r < clients.size(); ++r) {
    auto code = clients[r].Wait(Deadline::InSeconds(40));
    ASSERT_TRUE(code.ok()) << "client " << r << " still running " << watch.Seconds()
                           << " s after the kill";
    EXPECT_EQ(*code, 3) << ClientLog(static_cast<int>(r));
    std::string log = ClientLog(static_cast<int>(r));
    EXPECT_THAT(log, HasSubstr("server 1 (tcp://127.0.0.1:")) << log;
  }
  EXPECT_LT(watch.Seconds(), 30);
  std::string job_id = (*job)->job_id();
  auto result = (*job)->Wait(Deadline::InSeconds(60));
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->server_exit_codes[0], 0);  // Left after its clients did.
  job->reset();
  EXPECT_TRUE(shm::ListJobSegments(job_id).empty());  // The killed one's, removed by LocalJob.
}

TEST_F(RuntimeTest, KilledClientDoesNotStopTheOthers) {
  LocalJobOptions o = Options({"pull-loop", "4", "--idle-ranks", "1"}, 1, 1);
  o.server_args = {"--heartbeat-timeout", "2"};
  auto job = LocalJob::Start(o);
  ASSERT_TRUE(job.ok()) << job.status();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  (*job)->clients()[1].Signal(SIGKILL);
  auto code = (*job)->clients()[0].Wait(Deadline::InSeconds(60));
  ASSERT_TRUE(code.ok());
  EXPECT_EQ(*code, 0) << ClientLog(0);
  // The servers notice the dead client and exit once client 0 has left.
  Stopwatch watch;
  auto result = (*job)->Wait(Deadline::InSeconds(60), nullptr, /*server_grace_s=*/20);
  ASSERT_TRUE(result.ok());
  for (int c : result->server_exit_codes) EXPECT_EQ(c, 0);
  EXPECT_LT(watch.Seconds(), 15);
  std::string log = testing::ReadAll((*job)->ServerLog(0));
  EXPECT_THAT(log, HasSubstr("client 1 not heard from")) << log;
}

// A client alive but silent (SIGSTOP) is not a killed one: its peers would
// wait for it, so the job stops once a server reports it lost while client
// 0 still works, naming it (as `tessera launch` does).
TEST_F(RuntimeTest, StoppedClientStopsTheJobNamingIt) {
  LocalJobOptions o = Options({"pull-loop", "60"}, 1, 1);
  o.server_args = {"--heartbeat-timeout", "3"};
  auto job = LocalJob::Start(o);
  ASSERT_TRUE(job.ok()) << job.status();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  (*job)->clients()[1].Signal(SIGSTOP);
  Stopwatch watch;
  auto result = (*job)->Wait(Deadline::InSeconds(90));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_THAT(
      result->first_failure,
      ::testing::MatchesRegex("client 1 .* is running but server [01] has not heard from it "
                              "for its heartbeat timeout while 1 other client\\(s\\) still "
                              "work: it is stopped, frozen or cut off from the network"));
  EXPECT_LT(watch.Seconds(), 30);  // 3 s, the report's 3 s, the stop: not the 60 s pulls.
  EXPECT_FALSE(result->ok());
}

TEST_F(RuntimeTest, SigtermUnlinksSharedMemoryAndTwoJobsDoNotCollide) {
  auto a = LocalJob::Start(Options({}));
  auto b = LocalJob::Start(Options({}));  // Same graph name, same host.
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_FALSE(shm::ListJobSegments((*a)->job_id()).empty());
  EXPECT_FALSE(shm::ListJobSegments((*b)->job_id()).empty());
  for (auto& s : (*a)->servers()) {
    s.Signal(SIGTERM);
    auto code = s.Wait(Deadline::InSeconds(30));
    ASSERT_TRUE(code.ok());
    EXPECT_EQ(*code, 128 + SIGTERM);
  }
  EXPECT_TRUE(shm::ListJobSegments((*a)->job_id()).empty());
  EXPECT_FALSE(shm::ListJobSegments((*b)->job_id()).empty());  // b is untouched.
}

// With --ready-fd 1 a server's stdout carries its reports only: anything
// else the process prints there (a library's line, here a preloaded one's
// "lost 0 1" once the server is ready) goes to stderr, where no launcher
// reads it as a report.
TEST_F(RuntimeTest, ServerStdoutCarriesOnlyItsReports) {
  auto port = launcher::ProbeFreePortRange("127.0.0.1", 2);
  ASSERT_TRUE(port.ok());
  testing::WriteAll(work_ / "ip2.txt", "127.0.0.1 " + std::to_string(*port) + "\n127.0.0.1 " +
                                           std::to_string(*port + 1) + "\n");
  const std::string out = work_ / "stdout", err = work_ / "stderr", go = work_ / "go";
  const int out_fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  const int err_fd = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  ASSERT_TRUE(out_fd >= 0 && err_fd >= 0);
  auto server =
      Process::Spawn({.argv = {testing::TesseraBinary(), "server", "--ip-config", work_ / "ip2.txt",
                               "--part-config", *config_, "--server-id", "0", "--num-clients", "1",
                               "--job-id", shm::RandomJobId(), "--ready-fd", "1"},
                      .env = {{"TESSERA_JOB_TOKEN", "t"},
                              {"TESSERA_JOB_ENCRYPTION", "off"},
                              {"LD_PRELOAD", TESSERA_STDOUT_WRITER},
                              {"ASAN_OPTIONS", "verify_asan_link_order=0"},  // SANITIZE=1 builds.
                              {"STDOUT_WRITER_AFTER", go}},
                      .output_fd = out_fd,
                      .output_stdout_only = true,
                      .error_fd = err_fd});
  ::close(out_fd);
  ::close(err_fd);
  ASSERT_TRUE(server.ok()) << server.status();
  auto wait_for = [](const std::string& path, const std::string& text) {
    for (Deadline d = Deadline::InSeconds(60); !d.Expired(); usleep(10000)) {
      if (testing::ReadAll(path).find(text) != std::string::npos) return true;
    }
    return false;
  };
  ASSERT_TRUE(wait_for(out, "\n")) << testing::ReadAll(err);
  testing::WriteAll(go, "");
  EXPECT_TRUE(wait_for(err, "lost 0 1\n")) << testing::ReadAll(err);
  EXPECT_THAT(testing::ReadAll(out), ::testing::MatchesRegex("ready [0-9]+\n"));
  server->Signal(SIGTERM);
  EXPECT_TRUE(server->Wait(Deadline::InSeconds(30)).ok());
}

// A server that cannot start says why, exits non-zero and leaves nothing.
TEST_F(RuntimeTest, ServerErrorsAreClearAndLeaveNothing) {
  std::string job = shm::RandomJobId();
  auto port = launcher::ProbeFreePortRange("127.0.0.1", 2);
  ASSERT_TRUE(port.ok());
  testing::WriteAll(work_ / "ip.txt", "127.0.0.1 " + std::to_string(*port) + "\n127.0.0.1 " +
                                          std::to_string(*port + 1) + "\n");
  auto run = [&](const std::string& ip, std::vector<std::string> extra, const std::string& log) {
    std::vector<std::string> argv = {
        testing::TesseraBinary(), "server", "--ip-config", work_ / ip, "--job-id", job};
    for (auto& a : extra) argv.push_back(a);
    auto p = Process::Spawn({.argv = argv,
                             .env = {{"TESSERA_JOB_TOKEN", "t"}, {"TESSERA_JOB_ENCRYPTION", "off"}},
                             .log_path = work_ / log});
    EXPECT_TRUE(p.ok());
    auto code = p->Wait(Deadline::InSeconds(60));
    EXPECT_TRUE(code.ok());
    return std::make_pair(code.value_or(-1), testing::ReadAll(work_ / log));
  };
  // A truncated feature file of partition 1.
  std::string parts = work_ / "parts";
  std::filesystem::copy(dir_->path(), parts, std::filesystem::copy_options::recursive);
  std::string feat = parts + "/part1/node_feat/feat.npy";
  std::filesystem::resize_file(feat, std::filesystem::file_size(feat) / 2);
  auto [code, log] =
      run("ip.txt", {"--part-config", parts + "/cora.json", "--server-id", "1"}, "a.log");
  EXPECT_EQ(code, 1);
  EXPECT_THAT(log, HasSubstr("feat.npy")) << log;
  // More partitions than machines in ip_config.
  testing::WriteAll(work_ / "ip1.txt", "127.0.0.1 " + std::to_string(*port) + "\n");
  std::tie(code, log) = run("ip1.txt", {"--part-config", *config_, "--server-id", "0"}, "b.log");
  EXPECT_EQ(code, 1);
  EXPECT_THAT(log, HasSubstr("1 machines but")) << log;
  // Port already taken.
  auto holder = rpc::RpcServer::Bind({.host = "127.0.0.1", .port = *port, .token = "t"});
  ASSERT_TRUE(holder.ok());
  std::tie(code, log) = run("ip.txt", {"--part-config", *config_, "--server-id", "0"}, "c.log");
  EXPECT_EQ(code, 1);
  EXPECT_THAT(log, HasSubstr("cannot listen on 127.0.0.1:" + std::to_string(*port))) << log;
  EXPECT_TRUE(shm::ListJobSegments(job).empty());
}

// 100k hostile messages at a live server, with a valid client checking
// between bursts that service goes on.
TEST_F(RuntimeTest, HundredThousandHostileMessagesDoNotStopTheServer) {
  LocalJobOptions o = Options({});
  o.server_args = {"--max-message-bytes", "1048576"};
  auto job = LocalJob::Start(o);
  ASSERT_TRUE(job.ok()) << job.status();
  const launcher::JobEnv& env = (*job)->base_env();
  std::vector<std::string> endpoints = (*job)->ip_config().ServerEndpoints(1);
  auto client = kvstore::KvClient::Connect({.job_id = env.job_id,
                                            .token = env.token,
                                            .curve_secret_key = env.curve_secret_key,
                                            .client_id = 0,
                                            .machine_id = -1,
                                            .servers = endpoints,
                                            .num_clients = 1});
  ASSERT_TRUE(client.ok()) << client.status();
  std::vector<int64_t> ids = {0, 1, 2700};
  std::vector<float> reference(3 * 1433), out(3 * 1433);
  ASSERT_TRUE((*client)
                  ->features()
                  .PullInto("node/feat", ids, kvstore::RowsOf<float>(1433), reference.data())
                  .ok());

  zmq::context_t context;
  zmq::socket_t raw(context, zmq::socket_type::dealer);
  raw.set(zmq::sockopt::linger, 0);
  raw.set(zmq::sockopt::rcvtimeo, 10000);
  // A job member gone rogue: it holds the job's key and token.
  ASSERT_TRUE(rpc::SecureClientSocket(raw, {env.token, env.curve_secret_key}).ok());
  raw.connect(endpoints[0]);
  std::mt19937_64 rng(123);
  auto random_bytes = [&](size_t n) {
    std::string s(n, '\0');
    for (char& c : s) c = static_cast<char>(rng());
    return s;
  };
  int sent = 0, replies = 0, unanswerable = 0;
  for (int burst = 0; burst < 10; ++burst) {
    for (int i = 0; i < 10000; ++i, ++sent) {
      rpc::Message m = rpc::MakeRequest(static_cast<wire::Method>(rng() % 12));
      m.header.set_token(env.token);
      m.header.set_name(rng() % 2 ? "node/feat" : random_bytes(8));
      std::vector<std::string> frames;
      switch (rng() % 8) {
        case 0:  // Random bytes as header.
          frames = {random_bytes(rng() % 100)};
          break;
        case 1:  // Wrong token.
          m.header.set_token("wrong");
          frames = {m.header.SerializeAsString()};
          break;
        case 2:  // Unknown version.
          m.header.set_version(99);
          frames = {m.header.SerializeAsString()};
          break;
        case 3: {  // Frame shorter than its shape says (truncated).
          m.header.set_method(wire::PULL);
          auto* a = m.header.add_arrays();
          a->set_dtype(static_cast<uint32_t>(DType::kInt64));
          a->add_shape(100);
          frames = {m.header.SerializeAsString(), random_bytes(rng() % 800)};
          break;
        }
        case 4: {  // Valid shape, hostile ids (out of range, negative).
          m.header.set_method(rng() % 2 ? wire::PULL : wire::PUSH);
          auto* a = m.header.add_arrays();
          a->set_dtype(static_cast<uint32_t>(DType::kInt64));
          a->add_shape(4);
          frames = {m.header.SerializeAsString(), random_bytes(32)};
          break;
        }
        case 5: {  // Absurd shapes and dtypes.
          auto* a = m.header.add_arrays();
          a->set_dtype(static_cast<uint32_t>(rng() % 12));
          a->add_shape(static_cast<int64_t>(rng()));
          a->add_shape(static_cast<int64_t>(rng()));
          frames = {m.header.SerializeAsString(), random_bytes(16)};
          break;
        }
        case 6: {  // Too many frames: dropped without an answer.
          frames.assign(70 + rng() % 10, "x");
          ++unanswerable;
          break;
        }
        default: {  // Barrier / init with nonsense arguments.
          m.header.set_method(rng() % 2 ? wire::BARRIER : wire::INIT_DATA);
          m.header.mutable_barrier()->set_num_clients(static_cast<int32_t>(rng() % 3) - 1);
          m.header.mutable_init_data()->set_name(random_bytes(4));
          m.header.mutable_init_data()->add_shape(-5);
          frames = {m.header.SerializeAsString()};
        }
      }
      for (size_t f = 0; f < frames.size(); ++f) {
        raw.send(zmq::buffer(frames[f]),
                 f + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
      }
      // Lock step: every answerable message must get its (error) answer.
      if (frames.size() <= 64) {
        zmq::message_t reply;
        ASSERT_TRUE(raw.recv(reply)) << "no answer to message " << sent;
        ++replies;
      }
    }
    ASSERT_TRUE((*client)
                    ->features()
                    .PullInto("node/feat", ids, kvstore::RowsOf<float>(1433), out.data())
                    .ok())
        << "after " << sent;
    ASSERT_EQ(out, reference);
  }
  EXPECT_EQ(sent, 100000);
  EXPECT_EQ(replies, sent - unanswerable);
  // An oversized message (over the server's limit): ZeroMQ drops that
  // connection; the server goes on.
  std::string big(2 << 20, 'x');
  raw.send(zmq::buffer(big), zmq::send_flags::none);
  EXPECT_FALSE((*job)->servers()[0].Poll());  // Still running.
  ASSERT_TRUE((*client)
                  ->features()
                  .PullInto("node/feat", ids, kvstore::RowsOf<float>(1433), out.data())
                  .ok());
  EXPECT_EQ(out, reference);
}

}  // namespace
}  // namespace tessera
