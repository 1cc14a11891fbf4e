// File: src/rpc/rpc_test.cc
//
// RpcServer and RpcClient over real loopback sockets (port 0), with the
// server running in a thread of the test process.
#include <atomic>
#include <random>
#include <thread>

#include "gtest/gtest.h"
#include "src/rpc/transport.h"
#include "zmq.hpp"

namespace tessera::rpc {
namespace {

// PULL echoes its ids back doubled; a request named "fail" gets an error;
// one named "slow" is never answered.
class EchoService : public Service {
 public:
  std::optional<Message> Handle(const Peer& peer, Message& request) override {
    if (request.header.name() == "fail") {
      return MakeResponse(request.header, absl::NotFoundError("no tensor named 'fail'"));
    }
    if (request.header.name() == "slow") return std::nullopt;
    Message response = MakeResponse(request.header, absl::OkStatus());
    if (!request.arrays.empty()) {
      std::vector<int64_t> out;
      for (int64_t v : request.arrays[0].span<int64_t>()) out.push_back(2 * v);
      response.arrays.push_back(MakeWireArray(std::move(out)));
    }
    return response;
  }
  void OnClientGone(int client_id, bool lost) override { (lost ? lost_ : left_)++; }
  std::atomic<int> lost_{0}, left_{0};
};

struct ServerThread {
  explicit ServerThread(ServerOptions options) {
    auto bound = RpcServer::Bind(options);
    EXPECT_TRUE(bound.ok()) << bound.status();
    server = std::move(*bound);
    endpoint = "tcp://127.0.0.1:" + std::to_string(server->port());
    thread = std::thread([this] { result = server->Serve(service, stop); });
  }
  ~ServerThread() {
    stop = true;
    thread.join();
  }
  EchoService service;
  std::unique_ptr<RpcServer> server;
  std::string endpoint;
  std::atomic<bool> stop{false};
  Status result;
  std::thread thread;
};

ClientOptions Client(const std::string& endpoint, int id = 0) {
  return {.token = "secret", .client_id = id, .servers = {endpoint}};
}

TEST(RpcTest, RequestResponseWithArraysAndErrors) {
  ServerThread st({.host = "127.0.0.1", .token = "secret"});
  auto client = RpcClient::Create(Client(st.endpoint));
  ASSERT_TRUE(client.ok());
  Message hello = MakeRequest(wire::HELLO);
  ASSERT_TRUE((*client)->CallOne(0, std::move(hello), Deadline::InSeconds(10)).ok());

  Message pull = MakeRequest(wire::PULL);
  pull.arrays.push_back(MakeWireArray(std::vector<int64_t>{1, 2, 3}));
  auto response = (*client)->CallOne(0, std::move(pull), Deadline::InSeconds(10));
  ASSERT_TRUE(response.ok()) << response.status();
  ASSERT_EQ(response->arrays.size(), 1u);
  auto values = response->arrays[0].span<int64_t>();
  EXPECT_EQ(std::vector<int64_t>(values.begin(), values.end()), (std::vector<int64_t>{2, 4, 6}));

  Message fail = MakeRequest(wire::PULL);
  fail.header.set_name("fail");
  auto error = (*client)->CallOne(0, std::move(fail), Deadline::InSeconds(10));
  EXPECT_EQ(error.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(std::string(error.status().message()).find("no tensor named 'fail'"),
            std::string::npos);
  EXPECT_NE(std::string(error.status().message()).find(st.endpoint), std::string::npos);

  Message slow = MakeRequest(wire::PULL);
  slow.header.set_name("slow");
  Stopwatch watch;
  auto late = (*client)->CallOne(0, std::move(slow), Deadline::InSeconds(0.3));
  EXPECT_EQ(late.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_LT(watch.Seconds(), 5);
  // The connection is still usable after an abandoned call.
  Message again = MakeRequest(wire::LIST_DATA);
  EXPECT_TRUE((*client)->CallOne(0, std::move(again), Deadline::InSeconds(10)).ok());
}

TEST(RpcTest, WrongTokenIsRejectedAndServerKeepsServing) {
  ServerThread st({.host = "127.0.0.1", .token = "secret"});
  ClientOptions bad = Client(st.endpoint);
  bad.token = "guess";
  auto intruder = RpcClient::Create(bad);
  ASSERT_TRUE(intruder.ok());
  auto denied = (*intruder)->CallOne(0, MakeRequest(wire::LIST_DATA), Deadline::InSeconds(10));
  EXPECT_EQ(denied.status().code(), absl::StatusCode::kPermissionDenied);
  auto good = RpcClient::Create(Client(st.endpoint));
  EXPECT_TRUE((*good)->CallOne(0, MakeRequest(wire::LIST_DATA), Deadline::InSeconds(10)).ok());
  EXPECT_EQ(st.server->requests_rejected(), 1u);
}

TEST(RpcTest, NoServerMeansDeadlineNotHang) {
  // Bind and close a socket to get a port nobody listens on.
  int port;
  {
    auto s = RpcServer::Bind({.host = "127.0.0.1"});
    port = (*s)->port();
  }
  auto client = RpcClient::Create(Client("tcp://127.0.0.1:" + std::to_string(port)));
  Stopwatch watch;
  auto r = (*client)->CallOne(0, MakeRequest(wire::HELLO), Deadline::InSeconds(0.5));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_NE(std::string(r.status().message()).find("did not answer hello"), std::string::npos);
  EXPECT_LT(watch.Seconds(), 5);
}

TEST(RpcTest, ServerExitsWhenClientsLeaveOrGoSilent) {
  auto bound = RpcServer::Bind({.host = "127.0.0.1",
                                .token = "secret",
                                .heartbeat_timeout = Millis(300),
                                .expected_clients = 2});
  ASSERT_TRUE(bound.ok());
  std::string endpoint = "tcp://127.0.0.1:" + std::to_string((*bound)->port());
  EchoService service;
  std::atomic<bool> stop{false};
  Status result = absl::UnknownError("not run");
  std::thread serving([&] { result = (*bound)->Serve(service, stop); });
  {
    ClientOptions quiet = Client(endpoint, 1);
    quiet.heartbeat_timeout = Millis(0);  // Sends no heartbeats: will be lost.
    auto a = RpcClient::Create(quiet);
    ASSERT_TRUE((*a)->CallOne(0, MakeRequest(wire::HELLO), Deadline::InSeconds(10)).ok());
    ClientOptions chatty = Client(endpoint, 2);
    chatty.heartbeat_interval = Millis(50);
    auto b = RpcClient::Create(chatty);
    ASSERT_TRUE((*b)->CallOne(0, MakeRequest(wire::HELLO), Deadline::InSeconds(10)).ok());
    std::this_thread::sleep_for(std::chrono::milliseconds(800));
    EXPECT_EQ(service.lost_.load(), 1);  // a; b's heartbeats keep it alive.
    EXPECT_TRUE((*b)->CallOne(0, MakeRequest(wire::GOODBYE), Deadline::InSeconds(10)).ok());
  }
  serving.join();  // Returns by itself: everyone left.
  EXPECT_TRUE(result.ok()) << result;
  EXPECT_EQ(service.left_.load(), 1);
}

TEST(RpcTest, ClientNoticesDeadServerThroughHeartbeats) {
  auto st = std::make_unique<ServerThread>(ServerOptions{.host = "127.0.0.1", .token = "secret"});
  ClientOptions options = Client(st->endpoint);
  options.heartbeat_interval = Millis(50);
  options.heartbeat_timeout = Millis(400);
  auto client = RpcClient::Create(options);
  ASSERT_TRUE((*client)->CallOne(0, MakeRequest(wire::HELLO), Deadline::InSeconds(10)).ok());
  st.reset();  // The server goes away.
  Message slow = MakeRequest(wire::LIST_DATA);
  Stopwatch watch;
  auto r = (*client)->CallOne(0, std::move(slow), Deadline::InSeconds(30));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable) << r.status();
  EXPECT_NE(std::string(r.status().message()).find("server 0"), std::string::npos);
  EXPECT_LT(watch.Seconds(), 5);
}

// Random and hostile frames straight from a raw DEALER socket.
TEST(RpcTest, GarbageNeverStopsTheServer) {
  ServerThread st({.host = "127.0.0.1", .token = "secret", .max_message_bytes = 1 << 20});
  zmq::context_t context;
  zmq::socket_t raw(context, zmq::socket_type::dealer);
  raw.set(zmq::sockopt::linger, 0);
  raw.connect(st.endpoint);
  std::mt19937_64 rng(7);
  for (int i = 0; i < 3000; ++i) {
    int frames = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < frames; ++f) {
      std::string bytes(rng() % 64, '\0');
      for (char& c : bytes) c = static_cast<char>(rng());
      if (f == 0 && i % 3 == 0) {  // A valid header with lies in it.
        Message m = MakeRequest(static_cast<wire::Method>(rng() % 12));
        m.header.set_token(i % 2 ? "secret" : "nope");
        m.header.set_version(static_cast<uint32_t>(rng() % 3));
        auto* meta = m.header.add_arrays();
        meta->set_dtype(static_cast<uint32_t>(rng() % 10));
        meta->add_shape(static_cast<int64_t>(rng() % 5) - 1);
        bytes = m.header.SerializeAsString();
      }
      raw.send(zmq::buffer(bytes),
               f + 1 < frames ? zmq::send_flags::sndmore : zmq::send_flags::none);
    }
  }
  std::string big(2 << 20, 'x');  // Over max_message_bytes: the peer is dropped.
  raw.send(zmq::buffer(big), zmq::send_flags::none);
  auto client = RpcClient::Create(Client(st.endpoint));
  Message pull = MakeRequest(wire::PULL);
  pull.arrays.push_back(MakeWireArray(std::vector<int64_t>{21}));
  auto r = (*client)->CallOne(0, std::move(pull), Deadline::InSeconds(30));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->arrays[0].span<int64_t>()[0], 42);
  // The valid call may overtake the garbage (another connection); the
  // server still judges all of it.
  Deadline deadline = Deadline::InSeconds(30);
  while (st.server->requests_rejected() <= 1000 && !deadline.Expired()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_GT(st.server->requests_rejected(), 1000u);
}

}  // namespace
}  // namespace tessera::rpc
