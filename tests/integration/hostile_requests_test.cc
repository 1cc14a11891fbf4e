// File: tests/integration/hostile_requests_test.cc
//
// Requests from a job member (valid token and key) that ask too much, sent
// to real `tessera server` processes on loopback (Cora in two parts): a pull
// of millions of ids, a sample with an absurd fanout, tensors whose size
// wraps around 2^64 or exceeds /dev/shm, a barrier of a billion clients.
// Each gets a clear error; the server stays up, answers a valid client
// correctly afterwards, keeps exactly its shared-memory segments, and its
// memory returns to its baseline.
#include <algorithm>
#include <fstream>
#include <thread>

#include "gtest/gtest.h"
#include "src/base/test_util.h"
#include "src/kvstore/test_cluster.h"
#include "src/launcher/local_job.h"
#include "src/shm/segment.h"
#include "tests/integration/attack_util.h"

namespace tessera {
namespace {

using testing::attack::RssBytes;

class HostileRequestsTest : public testing::attack::CoraServersTest {
 protected:
  // The job, and a hostile member: client 1, registered with both servers.
  void Start(std::vector<std::string> server_args = {}) {
    ASSERT_NO_FATAL_FAILURE(StartJob(std::move(server_args)));
    const launcher::JobEnv& env = job_->base_env();
    auto hostile = rpc::RpcClient::Create({.token = env.token,
                                           .curve_secret_key = env.curve_secret_key,
                                           .client_id = 1,
                                           .servers = endpoints_});
    ASSERT_TRUE(hostile.ok()) << hostile.status();
    hostile_ = std::move(*hostile);
    for (int server = 0; server < 2; ++server) {
      ASSERT_TRUE(
          hostile_->CallOne(server, rpc::MakeRequest(wire::HELLO), Deadline::InSeconds(30)).ok());
    }
    segments_ = Segments();
  }
  std::vector<std::string> Segments() const {
    std::vector<std::string> s = shm::ListJobSegments(job_->job_id());
    std::sort(s.begin(), s.end());
    return s;
  }
  Status Send(rpc::Message request, int server = 0) {
    request.header.set_token(job_->base_env().token);
    return hostile_->CallOne(server, std::move(request), Deadline::InSeconds(60)).status();
  }
  static rpc::Message Pull(int64_t count, int64_t id) {
    rpc::Message m = rpc::MakeRequest(wire::PULL);
    m.header.set_name("node/feat");
    m.arrays.push_back(rpc::MakeWireArray(std::vector<int64_t>(count, id)));
    return m;
  }
  // Both servers are up and serve the valid client correctly.
  void ExpectServing(const std::string& after) {
    ExpectServersRunning(after);
    EXPECT_EQ(PullRows(), reference_) << after;
    EXPECT_EQ(Segments(), segments_) << after;
  }
  static void ExpectError(const Status& s, absl::StatusCode code, const std::string& part) {
    EXPECT_EQ(s.code(), code) << s;
    EXPECT_THAT(s.message(), HasSubstr(part)) << s;
  }

  std::unique_ptr<rpc::RpcClient> hostile_;
  std::vector<std::string> segments_;
};

TEST_F(HostileRequestsTest, RequestsThatAskTooMuchGetClearErrors) {
  Start();
  // Half a million ids fit in one message (4 MB), their rows (2.7 GiB) in no
  // answer.
  ExpectError(Send(Pull(500000, 0)), absl::StatusCode::kResourceExhausted,
              "pull of 'node/feat': 500000 x 5732 bytes = 2.67 GiB is more than one request "
              "may move (256.00 MiB)");
  ExpectServing("a pull of a million rows");
  // 2^40 edges per seed, with replacement.
  rpc::Message sample = rpc::MakeRequest(wire::SAMPLE);
  std::vector<int64_t> seeds(4096);
  for (size_t i = 0; i < seeds.size(); ++i) seeds[i] = static_cast<int64_t>(i % 1000);
  sample.arrays.push_back(rpc::MakeWireArray(seeds));
  sample.header.mutable_sample()->set_fanout(int64_t{1} << 40);
  sample.header.mutable_sample()->set_replace(true);
  ExpectError(Send(std::move(sample)), absl::StatusCode::kResourceExhausted,
              "sample of 4096 seeds with fanout 1099511627776");
  ExpectServing("a sample with fanout 2^40");
  // Tensors whose size wraps around 2^64, or that no /dev/shm holds.
  auto init = [&](std::vector<int64_t> shape) {
    rpc::Message m = rpc::MakeRequest(wire::INIT_DATA);
    m.header.mutable_init_data()->set_name("big");
    m.header.mutable_init_data()->set_dtype(static_cast<uint32_t>(DType::kFloat32));
    for (int64_t d : shape) m.header.mutable_init_data()->add_shape(d);
    return Send(std::move(m));
  };
  ExpectError(init({2708, int64_t{1} << 62, 8}), absl::StatusCode::kInvalidArgument,
              "more than 2^63 bytes");
  ExpectError(init({2708, int64_t{1} << 40}), absl::StatusCode::kResourceExhausted,
              "not enough shared memory");
  ExpectServing("tensors too large");
  auto created = client_->features().InitData({.name = "small", .shape = {2708, 2}});
  EXPECT_TRUE(created.ok() && *created) << created.status();
  segments_ = Segments();
  // A barrier of a billion clients (the job has 2).
  rpc::Message barrier = rpc::MakeRequest(wire::BARRIER);
  barrier.header.mutable_barrier()->set_num_clients(1 << 30);
  ExpectError(Send(std::move(barrier)), absl::StatusCode::kInvalidArgument,
              "num_clients must be 1 to 2");
  ExpectServing("a barrier of a billion clients");
  EXPECT_TRUE(client_->job().BarrierMax(5).ok());  // client 0 alone: num_clients 1.
}

// The pull of issue 13: 20 million ids with a valid token, on a server whose
// message limit lets them through. It used to kill the server with an
// uncaught std::bad_alloc and leave its shared memory behind.
TEST_F(HostileRequestsTest, PullOfTwentyMillionIds) {
  Start({"--max-message-bytes", std::to_string(int64_t{512} << 20)});
  pid_t pid = job_->servers()[0].pid();
  int64_t baseline = RssBytes(pid);
  ASSERT_GT(baseline, 0);
  for (int round = 0; round < 3; ++round) {
    ExpectError(Send(Pull(20000000, 0)), absl::StatusCode::kResourceExhausted,
                "20000000 x 5732 bytes");
    ExpectServing("a pull of 20 million ids");
  }
  // The 160 MB requests are gone again.
  int64_t rss = RssBytes(pid);
  for (int i = 0; i < 50 && rss > baseline + (int64_t{64} << 20); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    rss = RssBytes(pid);
  }
  EXPECT_LE(rss, baseline + (int64_t{64} << 20)) << "baseline " << baseline;
  client_.reset();
  for (int server = 0; server < 2; ++server) {
    EXPECT_TRUE(
        hostile_->CallOne(server, rpc::MakeRequest(wire::GOODBYE), Deadline::InSeconds(30)).ok());
  }
  hostile_.reset();
  std::string job_id = job_->job_id();
  auto result = job_->Wait(Deadline::InSeconds(60));
  ASSERT_TRUE(result.ok()) << result.status();
  for (int code : result->server_exit_codes) EXPECT_EQ(code, 0);
  EXPECT_TRUE(shm::ListJobSegments(job_id).empty());
}

}  // namespace
}  // namespace tessera
