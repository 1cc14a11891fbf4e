// File: tests/integration/attack_util.h
//
// What the attack tests use: a fixture with real servers on Cora and a
// valid client of them, ways to watch a server process (/proc) and to speak
// to it as a hostile peer would: raw TCP, ZMTP greetings and frame headers.
#ifndef TESSERA_TESTS_INTEGRATION_ATTACK_UTIL_H_
#define TESSERA_TESTS_INTEGRATION_ATTACK_UTIL_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <utility>

#include "gtest/gtest.h"
#include "src/base/test_util.h"
#include "src/kvstore/test_cluster.h"
#include "src/launcher/local_job.h"
#include "tessera/base/time.h"

namespace tessera::testing::attack {

inline int64_t ProcStatusKb(pid_t pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::stoll(line.substr(field.size() + 1));
  }
  return -1;
}
inline int64_t RssBytes(pid_t pid) { return ProcStatusKb(pid, "VmRSS") * 1024; }

inline int CountDescriptors(pid_t pid) {
  int n = 0;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    ++n;
  }
  return n;
}

// "Max open files" soft and hard limits of `pid`.
inline std::pair<std::string, std::string> DescriptorLimits(pid_t pid) {
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
inline int TcpConnect(int port, bool wait = true) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | (wait ? 0 : SOCK_NONBLOCK), 0);
  if (fd < 0) return -1;
  timeval timeout{5, 0};  // A server that stops reading cannot hang a test.
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
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
inline std::string Greeting(const std::string& mechanism) {
  std::string g(64, '\0');
  g[0] = static_cast<char>(0xFF);
  g[9] = 0x7F;
  g[10] = 3;
  g.replace(12, mechanism.size(), mechanism);
  return g;
}

// Sends `data` until done or the peer closes; false if it closed.
inline bool SendAll(int fd, const std::string& data) {
  for (size_t done = 0; done < data.size();) {
    ssize_t n = send(fd, data.data() + done, data.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

inline int PortOf(const std::string& endpoint) {
  return std::stoi(endpoint.substr(endpoint.rfind(':') + 1));
}

// Waits until `done()` or `seconds` pass; returns done().
inline bool WaitFor(double seconds, const std::function<bool()>& done) {
  Deadline deadline = Deadline::InSeconds(seconds);
  while (!done() && !deadline.Expired()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return done();
}

// Cora in two partitions (once per suite), a servers-only job of it on
// loopback (2 machines x 1 server, client ids 0 and 1) and a valid client 0
// whose pull of rows of both machines is the reference.
class CoraServersTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    config_ = new std::string(kvstore::testing::PartitionCora(dir_->path(), 2));
  }
  static void TearDownTestSuite() {
    delete config_;
    delete dir_;
  }

  void StartJob(std::vector<std::string> server_args = {}) {
    launcher::LocalJobOptions o;
    o.tessera_binary = TesseraBinary();
    o.part_config = *config_;
    o.workdir = work_.path();
    o.num_clients = 2;
    o.server_args = std::move(server_args);
    o.startup_timeout_s = 60;
    auto job = launcher::LocalJob::Start(o);
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
                       .num_clients = 1,  // Barriers: this client alone.
                       .connect_timeout = rpc::Millis(30000)};
    auto client = kvstore::KvClient::Connect(client_options_);
    ASSERT_TRUE(client.ok()) << client.status();
    client_ = std::move(*client);
    reference_ = PullRows();
    ASSERT_EQ(reference_.size(), ids_.size() * 1433);
  }
  // The rows of ids_, as the valid client sees them (empty on an error).
  std::vector<float> PullRows() {
    std::vector<float> out(ids_.size() * 1433);
    Status s =
        client_->features().PullInto("node/feat", ids_, kvstore::RowsOf<float>(1433), out.data());
    EXPECT_TRUE(s.ok()) << s;
    return s.ok() ? out : std::vector<float>();
  }
  pid_t ServerPid(int i) { return job_->servers()[static_cast<size_t>(i)].pid(); }
  void ExpectServersRunning(const std::string& after = "") {
    for (auto& s : job_->servers()) EXPECT_FALSE(s.Poll()) << s.name() << " exited " << after;
  }

  inline static TempDir* dir_ = nullptr;
  inline static std::string* config_ = nullptr;
  TempDir work_;
  std::unique_ptr<launcher::LocalJob> job_;
  std::vector<std::string> endpoints_;
  kvstore::KvClientOptions client_options_;
  std::unique_ptr<kvstore::KvClient> client_;
  std::vector<int64_t> ids_ = {0, 1, 1500, 2700};  // Rows of both machines.
  std::vector<float> reference_;
};

}  // namespace tessera::testing::attack

#endif  // TESSERA_TESTS_INTEGRATION_ATTACK_UTIL_H_
