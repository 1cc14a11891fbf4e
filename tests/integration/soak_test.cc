// File: tests/integration/soak_test.cc
//
// The bounded soak of issue 13: one job of 2 machines x 2 trainers trains
// GraphSAGE on Cora (examples/graphsage, fixed seed) for at least
// TESSERA_SOAK_SECONDS (default 300) while a hostile client attacks every
// server: for the first half without the job's key (raw TCP garbage, frames
// announcing gigabytes, ZeroMQ peers without or with a foreign key), then
// with the key and token (malformed requests, pulls of a million ids,
// absurd tensors, out-of-range ids and client ids, wrong tokens). The job
// must succeed with exactly the accuracy of the same job unattacked
// (training is deterministic for a seed), and each server's memory at the
// end must match the unattacked run's. When the long job ends before the
// soak time (epochs vary with load), shorter attacked jobs make up the rest.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <random>
#include <thread>

#include "fmt/format.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "src/base/test_util.h"
#include "src/kvstore/test_cluster.h"
#include "src/launcher/local_job.h"
#include "src/rpc/message.h"
#include "src/rpc/security.h"
#include "tessera/base/resource.h"
#include "tests/integration/attack_util.h"
#include "zmq.hpp"

namespace tessera {
namespace {

using namespace testing::attack;  // NOLINT

std::string Program(const std::string& name) {
  return std::string(TESSERA_BINARY_DIR) + "/bin/" + name;
}

// Attacks every endpoint in turn from its own thread until stopped.
class Hostile {
 public:
  // `member_id`: the client id its keyed requests carry (one no trainer
  // uses). Attacks without the key for `keyless_s`, then with it.
  Hostile(std::vector<std::string> endpoints, rpc::JobCredentials credentials, int member_id,
          double keyless_s)
      : endpoints_(std::move(endpoints)),
        credentials_(std::move(credentials)),
        member_id_(member_id),
        keyless_s_(keyless_s),
        thread_([this] { Run(); }) {}
  ~Hostile() { Stop(); }
  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  uint64_t keyless_sent() const { return keyless_sent_.load(); }
  uint64_t sent() const { return sent_.load(); }
  uint64_t answered() const { return answered_.load(); }

 private:
  std::string RandomBytes(size_t n) {
    std::string s(n, '\0');
    for (char& c : s) c = static_cast<char>(rng_());
    return s;
  }

  // Without the key: nothing of this may reach the server's queues.
  void Unauthenticated(const std::string& endpoint) {
    int fd = TcpConnect(PortOf(endpoint));
    if (fd >= 0) {
      std::string bytes = rng_() % 2 ? RandomBytes(rng_() % 4096) : Greeting("CURVE");
      if (rng_() % 2) {
        bytes.push_back(0x06);
        for (int i = 0; i < 8; ++i) bytes.push_back(i == 3 ? 0x04 : 0);  // 16 GiB.
        bytes += RandomBytes(1 << 16);
      }
      (void)SendAll(fd, bytes);
      close(fd);
    }
    zmq::socket_t raw(context_, zmq::socket_type::dealer);
    raw.set(zmq::sockopt::linger, 0);
    // A socket whose handshakes all fail may take nothing: never block on it.
    raw.set(zmq::sockopt::sndtimeo, 200);
    if (rng_() % 2) {
      char pub[41] = {}, sec[41] = {}, server[41] = {};
      zmq_curve_keypair(pub, sec);
      zmq_curve_public(server, credentials_.curve_secret_key.c_str());
      raw.set(zmq::sockopt::curve_serverkey, std::string(server));
      raw.set(zmq::sockopt::curve_publickey, std::string(pub));
      raw.set(zmq::sockopt::curve_secretkey, std::string(sec));
    }
    raw.connect(endpoint);
    for (int i = 0; i < 1000; ++i) {
      if (!raw.send(zmq::buffer(RandomBytes(16)), zmq::send_flags::sndmore)) return;
      ++keyless_sent_;
    }
    if (raw.send(zmq::message_t(), zmq::send_flags::none)) ++keyless_sent_;
  }

  // With the key and token: well-formed ZeroMQ, malformed requests.
  void Authenticated(zmq::socket_t& socket) {
    rpc::Message m = rpc::MakeRequest(static_cast<wire::Method>(4 + rng_() % 11));
    m.header.set_token(credentials_.token);
    m.header.set_client_id(member_id_);
    std::vector<std::string> arrays;
    bool random_header = false;
    auto ids = [&](size_t n, bool huge) {
      std::vector<int64_t> v(n);
      for (auto& x : v)
        x = huge ? static_cast<int64_t>(rng_()) : static_cast<int64_t>(rng_() % 1000);
      auto* meta = m.header.add_arrays();
      meta->set_dtype(static_cast<uint32_t>(DType::kInt64));
      meta->add_shape(static_cast<int64_t>(n));
      arrays.emplace_back(reinterpret_cast<const char*>(v.data()), n * 8);
    };
    switch (rng_() % 10) {
      case 0:  // Half a million ids (just under the frame limit): the answer would be 2.9 GB.
        m.header.set_method(wire::PULL);
        m.header.set_name("node/feat");
        ids((1 << 19) - 1024, false);
        break;
      case 1:  // Ids nobody owns.
        m.header.set_method(rng_() % 2 ? wire::PUSH : wire::PULL);
        m.header.set_name("node/feat");
        ids(64, true);
        break;
      case 2: {  // A tensor whose size wraps around 2^64, or larger than /dev/shm.
        m.header.set_method(wire::INIT_DATA);
        auto* init = m.header.mutable_init_data();
        init->set_name(fmt::format("x{}", rng_() % 100));
        init->set_dtype(static_cast<uint32_t>(DType::kFloat32));
        init->add_shape(2708);
        init->add_shape(rng_() % 2 ? (int64_t{1} << 62) : (int64_t{1} << 36));
        break;
      }
      case 3:  // Sampling with absurd arguments.
        m.header.set_method(wire::SAMPLE);
        m.header.mutable_sample()->set_fanout(static_cast<int64_t>(rng_() % 5) - 3);
        m.header.mutable_sample()->set_prob(RandomBytes(6));
        ids(16, rng_() % 2);
        break;
      case 4:  // Wrong token.
        m.header.set_token(RandomBytes(16));
        break;
      case 5:  // A client id outside the job.
        m.header.set_client_id(static_cast<int32_t>(rng_() % 100000) + 1000);
        break;
      case 6:  // A shape that lies about its frame.
        ids(8, false);
        arrays.back().resize(rng_() % 64);
        break;
      case 7:  // Random header bytes.
        random_header = true;
        break;
      default:  // Random everything else.
        m.header.set_name(RandomBytes(rng_() % 12));
        ids(rng_() % 32, rng_() % 2);
    }
    std::string head = random_header ? RandomBytes(rng_() % 200) : m.header.SerializeAsString();
    bool more = !arrays.empty();
    socket.send(zmq::buffer(head), more ? zmq::send_flags::sndmore : zmq::send_flags::none);
    for (size_t i = 0; i < arrays.size(); ++i) {
      socket.send(zmq::buffer(arrays[i]),
                  i + 1 < arrays.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
    }
    ++sent_;
    zmq::message_t reply;
    if (socket.recv(reply)) {  // Every message of this kind gets an (error) answer.
      ++answered_;
      while (reply.more()) (void)socket.recv(reply);
    }
  }

  void Run() {
    std::vector<std::unique_ptr<zmq::socket_t>> members;
    for (const std::string& endpoint : endpoints_) {
      auto s = std::make_unique<zmq::socket_t>(context_, zmq::socket_type::dealer);
      s->set(zmq::sockopt::linger, 0);
      s->set(zmq::sockopt::rcvtimeo, 5000);
      s->set(zmq::sockopt::sndtimeo, 5000);
      (void)rpc::SecureClientSocket(*s, credentials_);
      s->connect(endpoint);
      members.push_back(std::move(s));
    }
    for (uint64_t round = 0; !stop_; ++round) {
      size_t target = round % endpoints_.size();
      try {
        if (clock_.Seconds() < keyless_s_) {
          Unauthenticated(endpoints_[target]);
        } else {
          Authenticated(*members[target]);
        }
      } catch (const zmq::error_t&) {
        // A full queue to a busy server: try the next.
      }
    }
  }

  std::vector<std::string> endpoints_;
  rpc::JobCredentials credentials_;
  int member_id_;
  double keyless_s_;
  Stopwatch clock_;
  std::mt19937_64 rng_{2024};
  zmq::context_t context_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> keyless_sent_{0}, sent_{0}, answered_{0};
  std::thread thread_;
};

struct JobOutcome {
  bool ok = false;
  double test_acc = -1;
  std::vector<int64_t> server_rss;  // At the end of training, servers still up.
  double seconds = 0;
  uint64_t keyless_sent = 0, hostile_sent = 0, hostile_answered = 0;
};

// One 2 x 2 training job. The test holds one extra client slot (id 4) so the
// servers stay up after the trainers leave, to measure their memory.
// `attack_s` > 0: the hostile client attacks, the first half without the key.
JobOutcome RunJob(const std::string& config, const std::string& workdir, int epochs,
                  double attack_s) {
  JobOutcome out;
  launcher::LocalJobOptions o;
  o.tessera_binary = testing::TesseraBinary();
  o.part_config = config;
  o.workdir = workdir;
  o.clients_per_machine = 2;
  o.num_clients = 5;
  o.client_log_dir = workdir;
  o.startup_timeout_s = 60;
  auto job = launcher::LocalJob::Start(o);
  EXPECT_TRUE(job.ok()) << job.status();
  if (!job.ok()) return out;
  const launcher::JobEnv& env = (*job)->base_env();
  std::vector<std::string> endpoints = (*job)->ip_config().ServerEndpoints(1);
  auto holder = kvstore::KvClient::Connect({.job_id = env.job_id,
                                            .token = env.token,
                                            .curve_secret_key = env.curve_secret_key,
                                            .client_id = 4,
                                            .machine_id = -1,
                                            .servers = endpoints,
                                            .num_clients = 5});
  EXPECT_TRUE(holder.ok()) << holder.status();
  if (!holder.ok()) return out;
  std::unique_ptr<Hostile> hostile;
  if (attack_s > 0) {
    hostile = std::make_unique<Hostile>(
        endpoints, rpc::JobCredentials{env.token, env.curve_secret_key}, /*member_id=*/4,
        /*keyless_s=*/attack_s / 2);
  }
  Stopwatch watch;
  std::vector<std::string> argv = {Program("graphsage_train_dist"),
                                   "--graph-name",
                                   "cora",
                                   "--part-config",
                                   config,
                                   "--seed",
                                   "42",
                                   "--row-normalize",
                                   "--input-dropout",
                                   "0.5",
                                   "--lr",
                                   "0.01",
                                   "--weight-decay",
                                   "5e-4",
                                   "--batch-size",
                                   "140",
                                   "--num-epochs",
                                   std::to_string(epochs),
                                   "--eval-every",
                                   std::to_string(epochs),
                                   "--log-every",
                                   "0",
                                   "--json"};
  EXPECT_TRUE((*job)->StartClients(argv).ok());
  bool running = true;
  Deadline deadline = Deadline::InSeconds(900);
  while (running && !deadline.Expired()) {
    running = false;
    for (auto& c : (*job)->clients()) running |= !c.Poll();
    for (auto& s : (*job)->servers()) EXPECT_FALSE(s.Poll()) << "a server died under attack";
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  out.seconds = watch.Seconds();
  if (hostile) {
    hostile->Stop();
    out.keyless_sent = hostile->keyless_sent();
    out.hostile_sent = hostile->sent();
    out.hostile_answered = hostile->answered();
  }
  std::this_thread::sleep_for(std::chrono::seconds(2));  // Trims run within a second.
  for (auto& s : (*job)->servers()) out.server_rss.push_back(RssBytes(s.pid()));
  (void)(*holder)->job().Close();
  holder->reset();
  auto result = (*job)->Wait(Deadline::InSeconds(60));
  EXPECT_TRUE(result.ok()) << result.status();
  if (!result.ok()) return out;
  out.ok = result->ok();
  std::string log = testing::ReadAll(workdir + "/client-0.log");
  size_t at = log.rfind("RESULT ");
  EXPECT_NE(at, std::string::npos) << log;
  if (at == std::string::npos) return out;
  auto r = nlohmann::json::parse(log.substr(at + 7, log.find('\n', at) - at - 7));
  out.test_acc = r["test_acc"].get<double>();
  return out;
}

TEST(SoakTest, TrainingUnderAttackKeepsItsAccuracyAndMemory) {
  double soak_seconds = 300;
  if (const char* s = std::getenv("TESSERA_SOAK_SECONDS")) soak_seconds = std::atof(s);
  testing::TempDir dir;
  std::string config = kvstore::testing::PartitionCora(dir / "parts", 2);
  // 200 epochs tell how many make the soak long enough on this machine.
  JobOutcome calibration = RunJob(config, dir / "calibration", 200, 0);
  ASSERT_TRUE(calibration.ok);
  // A quarter more: epochs of a long run are quicker than those of a short one.
  int epochs =
      200 * std::max(1, static_cast<int>(std::ceil(1.25 * soak_seconds / calibration.seconds)));
  JobOutcome reference = epochs == 200 ? calibration : RunJob(config, dir / "reference", epochs, 0);
  ASSERT_TRUE(reference.ok);
  std::printf("reference: %d epochs, test accuracy %.4f in %.1f s, server RSS %s / %s\n", epochs,
              reference.test_acc, reference.seconds, FormatBytes(reference.server_rss[0]).c_str(),
              FormatBytes(reference.server_rss[1]).c_str());
  std::fflush(stdout);
  JobOutcome attacked = RunJob(config, dir / "attacked", epochs, reference.seconds);
  std::printf(
      "under attack: test accuracy %.4f in %.1f s, server RSS %s / %s; %llu frames without the "
      "key, then %llu keyed messages (%llu answered)\n",
      attacked.test_acc, attacked.seconds, FormatBytes(attacked.server_rss[0]).c_str(),
      FormatBytes(attacked.server_rss[1]).c_str(),
      static_cast<unsigned long long>(attacked.keyless_sent),
      static_cast<unsigned long long>(attacked.hostile_sent),
      static_cast<unsigned long long>(attacked.hostile_answered));
  ASSERT_TRUE(attacked.ok);
  EXPECT_GT(attacked.keyless_sent, 1000u);
  EXPECT_GT(attacked.hostile_answered, 100u);
  EXPECT_EQ(attacked.test_acc, reference.test_acc);  // Deterministic for the seed.
  for (size_t s = 0; s < 2; ++s) {
    EXPECT_LT(attacked.server_rss[s], reference.server_rss[s] + (int64_t{48} << 20)) << s;
  }
  // How long an epoch takes varies with the machine's load, so the long job
  // may end early: shorter attacked jobs (each checked against the
  // calibration run of the same length) make up the rest of the soak.
  double total = attacked.seconds;
  while (total < soak_seconds && !::testing::Test::HasFailure()) {
    JobOutcome more =
        RunJob(config, dir / fmt::format("attacked-{:.0f}", total), 200, calibration.seconds);
    std::printf("under attack (top-up): test accuracy %.4f in %.1f s\n", more.test_acc,
                more.seconds);
    std::fflush(stdout);
    ASSERT_TRUE(more.ok);
    EXPECT_EQ(more.test_acc, calibration.test_acc);
    EXPECT_GT(more.keyless_sent, 0u);
    for (size_t s = 0; s < 2; ++s) {
      EXPECT_LT(more.server_rss[s], calibration.server_rss[s] + (int64_t{48} << 20)) << s;
    }
    total += more.seconds;
  }
  EXPECT_GE(total, soak_seconds);
}

}  // namespace
}  // namespace tessera
