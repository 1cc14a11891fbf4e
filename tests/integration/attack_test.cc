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
#include "src/base/test_util.h"
#include "src/kvstore/test_cluster.h"
#include "src/launcher/local_job.h"
#include "src/rpc/security.h"
#include "tessera/base/resource.h"
#include "tests/integration/attack_util.h"
#include "zmq.hpp"

namespace tessera {
namespace {

using namespace testing::attack;  // NOLINT

using AttackTest = CoraServersTest;

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
  EXPECT_EQ(PullRows(), reference_);
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
    raw.set(zmq::sockopt::sndtimeo, 1000);  // Never blocks the test.
    if (own_key) {
      raw.set(zmq::sockopt::curve_serverkey, std::string(server_z85));
      raw.set(zmq::sockopt::curve_publickey, std::string(public_z85));
      raw.set(zmq::sockopt::curve_secretkey, std::string(secret_z85));
    }
    raw.connect(endpoints_[0]);
    bool queued = true;
    for (int i = 0; i < 200000 && queued; ++i) {
      queued = raw.send(zmq::message_t(), zmq::send_flags::sndmore).has_value();
    }
    if (queued) (void)raw.send(zmq::message_t(), zmq::send_flags::none);
    if (own_key) {  // Refused by the ZAP handler (the other fails at the mechanism).
      EXPECT_TRUE(WaitFor(30, [&] {
        return testing::ReadAll(job_->ServerLog(0)).find("refused a connection") !=
               std::string::npos;
      }));
    }
  }
  EXPECT_LT(RssBytes(server), baseline + (int64_t{16} << 20));
  EXPECT_EQ(PullRows(), reference_);
  std::string log = testing::ReadAll(job_->ServerLog(0));
  EXPECT_THAT(log, Not(HasSubstr("rejected"))) << log;  // No message got in.
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
  EXPECT_EQ(PullRows(), reference_);
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
  EXPECT_TRUE(WaitFor(30, [&] { return CountDescriptors(server) > baseline + 100; }))
      << "the flood did not arrive";
  // Served while the flood is open, on new connections too.
  for (int i = 0; i < 5; ++i) EXPECT_EQ(PullRows(), reference_);
  Stopwatch watch;
  kvstore::KvClientOptions second = client_options_;
  second.client_id = 1;
  auto fresh = kvstore::KvClient::Connect(second);
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  EXPECT_LT(watch.Seconds(), 5);
  (*fresh)->job().Close().IgnoreError();
  fresh->reset();
  EXPECT_TRUE(WaitFor(20, [&] { return CountDescriptors(server) <= baseline + 10; }))
      << CountDescriptors(server) << " descriptors, baseline " << baseline;
  for (int fd : fds) close(fd);
  EXPECT_EQ(PullRows(), reference_);
  ExpectServersRunning();
}

}  // namespace
}  // namespace tessera
