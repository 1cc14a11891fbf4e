// File: tests/integration/attack_test.cc
//
// Real `tessera server` processes (LocalJob on loopback, Cora in two
// partitions) under the attacks of issue 13, each followed by a valid
// client's pull checked against a reference, and by the server's memory and
// descriptors back at their baseline:
//   * peers without the job's key: a frame announcing 15 GiB, a message of
//     many frames, idle connections by the thousand;
//   * a job member (key and token) sending a message of a million frames.
// The soak (label slow) trains a 2 x 2 job for five minutes while a hostile
// client attacks every server, without and with the key.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "src/base/resource.h"
#include "src/base/test_util.h"
#include "src/kvstore/test_cluster.h"
#include "src/launcher/local_job.h"
#include "src/rpc/security.h"
#include "zmq.hpp"

namespace tessera {
namespace {

using launcher::LocalJob;
using launcher::LocalJobOptions;

int64_t ProcStatusKb(pid_t pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::stoll(line.substr(field.size() + 1));
  }
  return -1;
}
int64_t RssBytes(pid_t pid) { return ProcStatusKb(pid, "VmRSS") * 1024; }

int CountDescriptors(pid_t pid) {
  int n = 0;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    ++n;
  }
  return n;
}

// "Max open files" soft and hard limits of `pid`.
std::pair<std::string, std::string> DescriptorLimits(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/limits");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("Max open files", 0) != 0) continue;
    std::istringstream fields(line.substr(14));
    std::string soft, hard;
    fields >> soft >> hard;
    return {soft, hard};
  }
  return {};
}

// A TCP connection to 127.0.0.1:port (non-blocking connect when `wait` is
// false); -1 on failure.
int TcpConnect(int port, bool wait = true) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | (wait ? 0 : SOCK_NONBLOCK), 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 && errno != EINPROGRESS) {
    close(fd);
    return -1;
  }
  return fd;
}

// A ZMTP 3.0 greeting proposing `mechanism`, as a client.
std::string Greeting(const std::string& mechanism) {
  std::string g(64, '\0');
  g[0] = static_cast<char>(0xFF);
  g[9] = 0x7F;
  g[10] = 3;
  g.replace(12, mechanism.size(), mechanism);
  return g;
}

// Sends `data` until done or the peer closes; false if it closed.
bool SendAll(int fd, const std::string& data) {
  for (size_t done = 0; done < data.size();) {
    ssize_t n = send(fd, data.data() + done, data.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

int PortOf(const std::string& endpoint) {
  return std::stoi(endpoint.substr(endpoint.rfind(':') + 1));
}

// Waits until `done()` or `seconds` pass; returns done().
bool WaitFor(double seconds, const std::function<bool()>& done) {
  Deadline deadline = Deadline::InSeconds(seconds);
  while (!done() && !deadline.Expired()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return done();
}

class AttackTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir();
    config_ = new std::string(kv::testing::PartitionCora(dir_->path(), 2));
  }
  static void TearDownTestSuite() {
    delete config_;
    delete dir_;
  }

  // A servers-only job (2 machines x 1 server) and a valid client of it.
  void StartJob(std::vector<std::string> server_args = {}) {
    LocalJobOptions o;
    o.tessera_binary = testing::TesseraBinary();
    o.part_config = *config_;
    o.workdir = work_.path();
    o.num_clients = 2;  // This test's client and the one a test may add.
    o.server_args = std::move(server_args);
    o.startup_timeout_s = 60;
    auto job = LocalJob::Start(o);
    ASSERT_TRUE(job.ok()) << job.status();
    job_ = std::move(*job);
    const launcher::JobEnv& env = job_->base_env();
    endpoints_ = job_->ip_config().ServerEndpoints(1);
    client_options_ = {.job_id = env.job_id,
                       .token = env.token,
                       .curve_secret_key = env.curve_secret_key,
                       .client_id = 0,
                       .machine_id = -1,
                       .servers = endpoints_,
                       .num_clients = 2,
                       .connect_timeout = rpc::Millis(30000)};
    auto client = kv::KvClient::Connect(client_options_);
    ASSERT_TRUE(client.ok()) << client.status();
    client_ = std::move(*client);
    reference_ = Pull();
    ASSERT_EQ(reference_.size(), 3u * 1433);
  }
  // Rows of nodes on both machines, as the valid client sees them.
  std::vector<float> Pull() {
    std::vector<int64_t> ids = {0, 1, 2700};
    std::vector<float> out(3 * 1433);
    Status s = client_->PullInto("node/feat", ids, out.data());
    EXPECT_TRUE(s.ok()) << s;
    return s.ok() ? out : std::vector<float>();
  }
  pid_t ServerPid(int i) { return job_->servers()[static_cast<size_t>(i)].pid(); }
  void ExpectServersRunning() {
    for (auto& s : job_->servers()) EXPECT_FALSE(s.Poll()) << s.name() << " exited";
  }

  static testing::TempDir* dir_;
  static std::string* config_;
  testing::TempDir work_;
  std::unique_ptr<LocalJob> job_;
  std::vector<std::string> endpoints_;
  kv::KvClientOptions client_options_;
  std::unique_ptr<kv::KvClient> client_;
  std::vector<float> reference_;
};

testing::TempDir* AttackTest::dir_ = nullptr;
std::string* AttackTest::config_ = nullptr;

// Two connections without the key announce 15 GiB frames and stream data:
// the server drops them at the frame header (the limit applies in the
// handshake), its memory does not move, and it serves on.
TEST_F(AttackTest, HugeFrameAnnouncementsWithoutTheKeyCostNothing) {
  ASSERT_NO_FATAL_FAILURE(StartJob());
  pid_t server = ServerPid(0);
  int64_t baseline = RssBytes(server);
  std::string header = Greeting("CURVE");
  header.push_back(0x06);  // A long command frame...
  uint64_t size = uint64_t{15} << 30;
  for (int i = 7; i >= 0; --i) header.push_back(static_cast<char>((size >> (8 * i)) & 0xFF));
  std::string junk(1 << 20, 'x');
  for (int c = 0; c < 2; ++c) {
    int fd = TcpConnect(PortOf(endpoints_[0]));
    ASSERT_GE(fd, 0);
    bool open = SendAll(fd, header);
    int64_t sent = 0;
    for (; open && sent < (int64_t{256} << 20); sent += static_cast<int64_t>(junk.size())) {
      open = SendAll(fd, junk);
    }
    close(fd);
    EXPECT_FALSE(open) << "the server read " << sent << " bytes of a 15 GiB frame";
    EXPECT_LT(sent, int64_t{64} << 20);  // Socket buffers at most.
  }
  EXPECT_LT(RssBytes(server), baseline + (int64_t{16} << 20));
  EXPECT_EQ(Pull(), reference_);
  ExpectServersRunning();
}

// Peers without the key cannot queue a frame: a plain (NULL mechanism)
// ZeroMQ peer and one with its own CURVE key pair each send a message of
// 200k frames; nothing reaches the server's queues.
TEST_F(AttackTest, ManyFramesWithoutTheKeyNeverReachTheServer) {
  ASSERT_NO_FATAL_FAILURE(StartJob());
  pid_t server = ServerPid(0);
  int64_t baseline = RssBytes(server);
  zmq::context_t context;
  char public_z85[41] = {}, secret_z85[41] = {}, server_z85[41] = {};
  ASSERT_EQ(zmq_curve_keypair(public_z85, secret_z85), 0);
  ASSERT_EQ(zmq_curve_public(server_z85, job_->base_env().curve_secret_key.c_str()), 0);
  for (bool own_key : {false, true}) {
    zmq::socket_t raw(context, zmq::socket_type::dealer);
    raw.set(zmq::sockopt::linger, 0);
    if (own_key) {
      raw.set(zmq::sockopt::curve_serverkey, std::string(server_z85));
      raw.set(zmq::sockopt::curve_publickey, std::string(public_z85));
      raw.set(zmq::sockopt::curve_secretkey, std::string(secret_z85));
    }
    raw.connect(endpoints_[0]);
    for (int i = 0; i < 200000; ++i) raw.send(zmq::message_t(), zmq::send_flags::sndmore);
    raw.send(zmq::message_t(), zmq::send_flags::none);
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  EXPECT_LT(RssBytes(server), baseline + (int64_t{16} << 20));
  EXPECT_EQ(Pull(), reference_);
  std::string log = testing::ReadAll(job_->ServerLog(0));
  EXPECT_EQ(log.find("rejected"), std::string::npos) << log;  // No message got in.
  EXPECT_NE(log.find("refused a connection"), std::string::npos) << log;  // The own key.
  ExpectServersRunning();
}

// A job member (key and token) sends one message of a million empty
// frames: ZeroMQ holds it whole before the server sees it (ZeroMQ has no
// per-message frame limit), the server drops it, and the memory goes back.
TEST_F(AttackTest, AMemberSendingAMillionFramesLeavesNoMemoryBehind) {
  ASSERT_NO_FATAL_FAILURE(StartJob());
  pid_t server = ServerPid(0);
  int64_t baseline = RssBytes(server);
  zmq::context_t context;
  zmq::socket_t raw(context, zmq::socket_type::dealer);
  raw.set(zmq::sockopt::linger, 0);
  const launcher::JobEnv& env = job_->base_env();
  ASSERT_TRUE(rpc::SecureClientSocket(raw, {env.token, env.curve_secret_key}).ok());
  raw.connect(endpoints_[0]);
  for (int i = 0; i < 1000000; ++i) raw.send(zmq::message_t(), zmq::send_flags::sndmore);
  raw.send(zmq::message_t(), zmq::send_flags::none);
  EXPECT_TRUE(WaitFor(60, [&] {
    return testing::ReadAll(job_->ServerLog(0)).find("more than 64 frames") != std::string::npos;
  }));
  int64_t peak = ProcStatusKb(server, "VmHWM") * 1024;
  EXPECT_TRUE(WaitFor(10, [&] { return RssBytes(server) < baseline + (int64_t{16} << 20); }))
      << "RSS " << FormatBytes(RssBytes(server)) << ", baseline " << FormatBytes(baseline)
      << ", peak " << FormatBytes(peak);
  EXPECT_EQ(Pull(), reference_);
  ExpectServersRunning();
}

// Thousands of connections that never finish a handshake: the server's
// descriptor limit is raised to the hard limit, its own client is served
// throughout, and each such connection is closed after --handshake-timeout.
TEST_F(AttackTest, IdleConnectionFloodIsDroppedAndTheJobIsServed) {
  ASSERT_NO_FATAL_FAILURE(StartJob({"--handshake-timeout", "1"}));
  pid_t server = ServerPid(0);
  auto [soft, hard] = DescriptorLimits(server);
  EXPECT_EQ(soft, hard) << "the server did not raise its descriptor limit";
  int baseline = CountDescriptors(server);
  int64_t own_limit = RaiseDescriptorLimit();
  int n = static_cast<int>(std::min<int64_t>(3000, own_limit - 300));
  std::vector<int> fds;
  for (int i = 0; i < n; ++i) {
    int fd = TcpConnect(PortOf(endpoints_[0]), /*wait=*/false);
    if (fd >= 0) fds.push_back(fd);
  }
  EXPECT_GT(fds.size(), static_cast<size_t>(n) * 9 / 10);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_GT(CountDescriptors(server), baseline + 100);  // The flood did arrive.
  // Served while the flood is open, on new connections too.
  for (int i = 0; i < 5; ++i) EXPECT_EQ(Pull(), reference_);
  Stopwatch watch;
  kv::KvClientOptions second = client_options_;
  second.client_id = 1;
  auto fresh = kv::KvClient::Connect(second);
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  EXPECT_LT(watch.Seconds(), 5);
  (*fresh)->Close().IgnoreError();
  fresh->reset();
  EXPECT_TRUE(WaitFor(20, [&] { return CountDescriptors(server) <= baseline + 10; }))
      << CountDescriptors(server) << " descriptors, baseline " << baseline;
  for (int fd : fds) close(fd);
  EXPECT_EQ(Pull(), reference_);
  ExpectServersRunning();
}

}  // namespace
}  // namespace tessera
