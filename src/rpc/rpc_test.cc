// File: src/rpc/rpc_test.cc
//
// RpcServer and RpcClient over real loopback sockets (port 0), with the
// server running in a thread of the test process. Servers and clients use a
// job key (encrypted, as jobs run) unless a test says otherwise.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "gtest/gtest.h"
#include "src/base/test_util.h"
#include "src/rpc/security.h"
#include "src/rpc/transport.h"
#include "zmq.hpp"

namespace tessera::rpc {
namespace {

const std::string& Key() {
  static const std::string key = NewCurveSecretKey().value();
  return key;
}

// PULL echoes its ids back doubled; a request named "fail" gets an error;
// one named "slow" is never answered.
class EchoService : public Service {
 public:
  std::optional<Message> Handle(const Peer& peer, Message& request) override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      connections_.insert(peer.routing_id);
    }
    if (request.header.name() == "fail") {
      return MakeResponse(request.header, absl::NotFoundError("no tensor named 'fail'"));
    }
    if (request.header.name() == "slow") return std::nullopt;
    if (request.header.name() == "big") {  // 4 MiB.
      Message big = MakeResponse(request.header, absl::OkStatus());
      big.arrays.push_back(MakeWireArray(std::vector<int64_t>(size_t{1} << 19, 7)));
      return big;
    }
    Message response = MakeResponse(request.header, absl::OkStatus());
    if (!request.arrays.empty()) {
      std::vector<int64_t> out;
      for (int64_t v : request.arrays[0].span<int64_t>()) out.push_back(2 * v);
      response.arrays.push_back(MakeWireArray(std::move(out)));
    }
    return response;
  }
  void OnClientGone(int client_id, bool lost) override { (lost ? lost_ : left_)++; }
  void OnClientLostSettled(int client_id, int others_talking) override {
    settled_talking_ = others_talking;
  }
  // The connections requests came on (ZeroMQ's routing ids).
  size_t connections() {
    std::lock_guard<std::mutex> lock(mutex_);
    return connections_.size();
  }
  std::atomic<int> lost_{0}, left_{0}, settled_talking_{-1};
  std::mutex mutex_;
  std::set<std::string> connections_;
};

struct ServerThread {
  // `encrypted`: the server uses the job key Key().
  explicit ServerThread(ServerOptions options, bool encrypted = true) {
    if (encrypted) options.curve_secret_key = Key();
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

// A raw DEALER socket of a job member (key, token "secret") connected to
// `endpoint`, for messages RpcClient would never send.
std::unique_ptr<zmq::socket_t> RawMember(zmq::context_t& context, const std::string& endpoint,
                                         int receive_timeout_ms = 10000) {
  auto raw = std::make_unique<zmq::socket_t>(context, zmq::socket_type::dealer);
  raw->set(zmq::sockopt::linger, 0);
  raw->set(zmq::sockopt::rcvtimeo, receive_timeout_ms);
  EXPECT_TRUE(SecureClientSocket(*raw, {"secret", Key()}).ok());
  raw->connect(endpoint);
  return raw;
}

ClientOptions Client(const std::string& endpoint, int id = 0) {
  return {.token = "secret", .curve_secret_key = Key(), .client_id = id, .servers = {endpoint}};
}

// Found by fuzz/wire_fuzz.cc: an empty array frame at an address that is not
// 8-byte aligned made ParseMessage memcpy zero bytes to a null pointer (UB).
TEST(MessageTest, EmptyArrayFrameAtAnyAddressParses) {
  Message request = MakeRequest(wire::PULL);
  request.header.set_token("secret");
  request.arrays.push_back(MakeWireArray(std::vector<int64_t>{7, 8}));
  request.arrays.push_back(MakeWireArray(std::vector<int64_t>{}));
  std::string header = EncodeHeader(request);
  alignas(8) static const uint64_t buffer[4] = {7, 8, 0, 0};
  const char* bytes = reinterpret_cast<const char*>(buffer);
  for (size_t offset : {0, 1, 3, 8}) {
    std::vector<Blob> frames = {Blob::Borrow(header.data(), header.size()),
                                Blob::Borrow(buffer, 16), Blob::Borrow(bytes + offset, 0)};
    auto parsed = ParseMessage(std::move(frames), "secret");
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    ASSERT_EQ(parsed->arrays.size(), 2u);
    EXPECT_EQ(parsed->arrays[0].span<int64_t>()[1], 8);
    EXPECT_TRUE(parsed->arrays[1].span<int64_t>().empty());
  }
}

TEST(MessageTest, ShapesOfZeroRowsMustStillFit) {
  Message request = MakeRequest(wire::PUSH);
  request.header.set_token("secret");
  auto* meta = request.header.add_arrays();
  meta->set_dtype(static_cast<uint32_t>(DType::kFloat32));
  for (int64_t d : {int64_t{0}, int64_t{1} << 40, int64_t{1} << 40}) meta->add_shape(d);
  std::string header = request.header.SerializeAsString();
  std::vector<Blob> frames = {Blob::Borrow(header.data(), header.size()), Blob::Borrow("", 0)};
  auto parsed = ParseMessage(std::move(frames), "secret");
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(parsed.status().message(), HasSubstr("shape too large"));
  WireArray unchecked{DType::kFloat64, {0, int64_t{1} << 40, int64_t{1} << 40}, {}};
  EXPECT_EQ(unchecked.row_bytes(), SIZE_MAX);
}

// An encrypted client spreads one CallMany's requests to a server over its
// streams (connections, each encrypted on one of ZeroMQ's I/O threads), and
// every answer still reaches its own call.
TEST(RpcTest, EncryptedCallsAreSpreadOverStreams) {
  ServerThread st({.host = "127.0.0.1", .token = "secret", .io_threads = 3});
  ClientOptions options = Client(st.endpoint);
  options.io_threads = 3;
  options.streams = 3;
  auto client = RpcClient::Create(options);
  ASSERT_TRUE(client.ok()) << client.status();
  std::vector<Call> calls;
  for (int64_t i = 0; i < 12; ++i) {
    Message pull = MakeRequest(wire::PULL);
    pull.arrays.push_back(MakeWireArray(std::vector<int64_t>(1000 + i, i)));
    calls.push_back({0, std::move(pull)});
  }
  auto responses = (*client)->CallMany(std::move(calls), Deadline::InSeconds(30));
  ASSERT_TRUE(responses.ok()) << responses.status();
  ASSERT_EQ(responses->size(), 12u);
  for (int64_t i = 0; i < 12; ++i) {
    auto values = (*responses)[i].arrays.at(0).span<int64_t>();
    ASSERT_EQ(values.size(), static_cast<size_t>(1000 + i));
    EXPECT_EQ(values.front(), 2 * i);
    EXPECT_EQ(values.back(), 2 * i);
  }
  EXPECT_EQ(st.service.connections(), 3u);

  // The default I/O threads, and bounds.
  EXPECT_GE(DefaultIoThreads(), 1);
  EXPECT_LE(DefaultIoThreads(), 4);
  ClientOptions bad = Client(st.endpoint);
  bad.streams = kMaxStreams + 1;
  EXPECT_EQ(RpcClient::Create(bad).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RpcServer::Bind({.host = "127.0.0.1", .token = "t", .io_threads = -1}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// Thousands of calls in one CallMany, answered while the caller is still
// busy: ZeroMQ's ROUTER drops answers past its high-water marks (1000
// messages a side), so a call may only have so many unanswered at once.
// (find_edges of 16M ids on a launched job waited for dropped answers until
// its deadline.) A deadline names each late server once.
TEST(RpcTest, ThousandsOfCallsInOneCallManyAllGetTheirAnswers) {
  ServerThread st({.host = "127.0.0.1", .token = "secret"}, /*encrypted=*/false);
  auto client = RpcClient::Create({.token = "secret", .servers = {st.endpoint}, .streams = 1});
  ASSERT_TRUE(client.ok()) << client.status();
  // 64 KiB answers: the sockets' 4 MiB buffers hold few of them.
  constexpr int64_t kCalls = 3000, kIds = 8192;
  std::vector<Call> calls;
  for (int64_t i = 0; i < kCalls; ++i) {
    Message pull = MakeRequest(wire::PULL);
    pull.arrays.push_back(MakeWireArray(std::vector<int64_t>(kIds, i)));
    calls.push_back({0, std::move(pull)});
  }
  int64_t sum = 0, answered = 0;
  auto done = (*client)->CallMany(
      std::move(calls), Deadline::InSeconds(60),
      [] { std::this_thread::sleep_for(std::chrono::milliseconds(500)); },
      [&](size_t index, Message& response) {
        auto values = response.arrays.at(0).span<int64_t>();
        EXPECT_EQ(values.size(), static_cast<size_t>(kIds));
        EXPECT_EQ(values.back(), 2 * static_cast<int64_t>(index));
        sum += values.back();
        ++answered;
        return absl::OkStatus();
      });
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(answered, kCalls);
  EXPECT_EQ(sum, kCalls * (kCalls - 1));

  std::vector<Call> slow;
  for (int i = 0; i < 3; ++i) {
    Message never = MakeRequest(wire::PULL);
    never.header.set_name("slow");
    slow.push_back({0, std::move(never)});
  }
  auto late = (*client)->CallMany(std::move(slow), Deadline::InSeconds(0.5));
  ASSERT_EQ(late.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(late.status().message(),
              HasSubstr("server 0 (" + st.endpoint + ") did not answer pull in time (3 requests)"))
      << late.status();

  // A server whose connection is full (300 calls it never answers) does not
  // hold back the calls to another, listed after them.
  ServerThread other({.host = "127.0.0.1", .token = "secret"}, /*encrypted=*/false);
  auto two = RpcClient::Create(
      {.token = "secret", .servers = {st.endpoint, other.endpoint}, .streams = 1});
  ASSERT_TRUE(two.ok()) << two.status();
  std::vector<Call> mixed;
  for (int i = 0; i < 300; ++i) {
    Message never = MakeRequest(wire::PULL);
    never.header.set_name("slow");
    mixed.push_back({0, std::move(never)});
  }
  Message quick = MakeRequest(wire::PULL);
  quick.arrays.push_back(MakeWireArray(std::vector<int64_t>{21}));
  mixed.push_back({1, std::move(quick)});
  int64_t got = 0;
  auto held = (*two)->CallMany(std::move(mixed), Deadline::InSeconds(1), {},
                               [&](size_t index, Message& response) {
                                 EXPECT_EQ(index, 300u);
                                 got = response.arrays.at(0).span<int64_t>()[0];
                                 return absl::OkStatus();
                               });
  ASSERT_EQ(held.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(got, 42);
  EXPECT_THAT(held.status().message(), HasSubstr("(300 requests)")) << held.status();
  EXPECT_THAT(held.status().message(), Not(HasSubstr(other.endpoint))) << held.status();
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
  EXPECT_THAT(error.status().message(), HasSubstr("no tensor named 'fail'"));
  EXPECT_THAT(error.status().message(), HasSubstr(st.endpoint));

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
  EXPECT_THAT(denied.status().message(), HasSubstr("wrong job token"));
  auto good = RpcClient::Create(Client(st.endpoint));
  EXPECT_TRUE((*good)->CallOne(0, MakeRequest(wire::LIST_DATA), Deadline::InSeconds(10)).ok());
  EXPECT_EQ(st.server->requests_rejected(), 1u);
}

TEST(RpcTest, NoServerMeansDeadlineNotHang) {
  // Bind and close a socket to get a port nobody listens on.
  int port;
  {
    auto s = RpcServer::Bind({.host = "127.0.0.1", .token = "secret"});
    port = (*s)->port();
  }
  auto client = RpcClient::Create(Client("tcp://127.0.0.1:" + std::to_string(port)));
  Stopwatch watch;
  auto r = (*client)->CallOne(0, MakeRequest(wire::HELLO), Deadline::InSeconds(0.5));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(r.status().message(), HasSubstr("did not answer hello"));
  EXPECT_LT(watch.Seconds(), 5);
}

TEST(RpcTest, ServerExitsWhenClientsLeaveOrGoSilent) {
  auto bound = RpcServer::Bind({.host = "127.0.0.1",
                                .token = "secret",
                                .curve_secret_key = Key(),
                                .heartbeat_timeout = Millis(300),
                                .expected_clients = 2});
  ASSERT_TRUE(bound.ok());
  std::string endpoint = "tcp://127.0.0.1:" + std::to_string((*bound)->port());
  EchoService service;
  std::atomic<bool> stop{false};
  Status result = absl::UnknownError("not run");
  std::thread serving([&] { result = (*bound)->Serve(service, stop); });
  {
    ClientOptions quiet = Client(endpoint, 0);
    quiet.heartbeat_timeout = Millis(0);  // Sends no heartbeats: will be lost.
    auto a = RpcClient::Create(quiet);
    ASSERT_TRUE((*a)->CallOne(0, MakeRequest(wire::HELLO), Deadline::InSeconds(10)).ok());
    ClientOptions chatty = Client(endpoint, 1);
    chatty.heartbeat_interval = Millis(50);
    auto b = RpcClient::Create(chatty);
    ASSERT_TRUE((*b)->CallOne(0, MakeRequest(wire::HELLO), Deadline::InSeconds(10)).ok());
    std::this_thread::sleep_for(std::chrono::milliseconds(800));
    EXPECT_EQ(service.lost_.load(), 1);              // a; b's heartbeats keep it alive.
    EXPECT_EQ(service.settled_talking_.load(), -1);  // 3 s after the loss, not before.
    std::this_thread::sleep_for(std::chrono::milliseconds(3000));
    EXPECT_EQ(service.settled_talking_.load(), 1);  // b still talks: it may wait for a.
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
  EXPECT_THAT(r.status().message(), HasSubstr("server 0"));
  EXPECT_LT(watch.Seconds(), 5);
}

// Random and hostile frames straight from a raw DEALER socket.
TEST(RpcTest, GarbageNeverStopsTheServer) {
  ServerThread st({.host = "127.0.0.1", .token = "secret", .max_message_bytes = 1 << 20});
  zmq::context_t context;
  auto member = RawMember(context, st.endpoint);  // A job member gone rogue.
  zmq::socket_t& raw = *member;
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

// Forwards TCP connections to a server and records every byte both ways:
// what anyone on the network path sees.
class RecordingProxy {
 public:
  explicit RecordingProxy(int target_port) : target_port_(target_port) {
    listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    EXPECT_EQ(listen(listen_fd_, 16), 0);
    socklen_t len = sizeof(addr);
    getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { Run(); });
  }
  ~RecordingProxy() {
    stop_ = true;
    thread_.join();
    close(listen_fd_);
  }
  std::string endpoint() const { return "tcp://127.0.0.1:" + std::to_string(port_); }
  std::string recorded() {
    std::lock_guard<std::mutex> lock(mutex_);
    return recorded_;
  }
  // From now on nothing is forwarded (a peer whose host died), but the
  // connections stay open.
  void Freeze() { frozen_ = true; }
  // Connections the server closed.
  int server_closed() const { return server_closed_.load(); }

 private:
  void Run() {
    std::vector<std::pair<int, int>> links;  // (accepted, upstream)
    while (!stop_) {
      std::vector<pollfd> fds = {{listen_fd_, POLLIN, 0}};
      std::erase_if(links, [](const auto& link) { return link.first < 0; });
      for (auto [a, b] : links) {
        fds.push_back({a, POLLIN, 0});
        fds.push_back({b, POLLIN, 0});
      }
      if (poll(fds.data(), fds.size(), 50) <= 0) continue;
      if (fds[0].revents & POLLIN) {
        int a = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
        int b = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        addr.sin_port = htons(static_cast<uint16_t>(target_port_));
        if (a >= 0 && connect(b, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
          links.push_back({a, b});
        } else {
          if (a >= 0) close(a);
          close(b);
        }
        continue;
      }
      char buffer[65536];
      for (size_t i = 1; i < fds.size(); ++i) {
        if (!(fds[i].revents & (POLLIN | POLLHUP))) continue;
        auto& [a, b] = links[(i - 1) / 2];
        if (a < 0) continue;  // Closed in this round.
        int from = i % 2 == 1 ? a : b, to = i % 2 == 1 ? b : a;
        ssize_t n = read(from, buffer, sizeof(buffer));
        if (n <= 0) {  // One side closed: close both (no busy polling on EOF).
          if (from == b) ++server_closed_;
          close(a);
          close(b);
          a = b = -1;
          continue;
        }
        if (frozen_) continue;
        {
          std::lock_guard<std::mutex> lock(mutex_);
          recorded_.append(buffer, static_cast<size_t>(n));
        }
        for (ssize_t done = 0; done < n;) {
          ssize_t w = write(to, buffer + done, static_cast<size_t>(n - done));
          if (w <= 0) break;
          done += w;
        }
      }
    }
    for (auto [a, b] : links) {
      if (a >= 0) close(a);
      if (b >= 0) close(b);
    }
  }

  int target_port_, listen_fd_ = -1, port_ = 0;
  std::atomic<bool> stop_{false}, frozen_{false};
  std::atomic<int> server_closed_{0};
  std::mutex mutex_;
  std::string recorded_;
  std::thread thread_;
};

// What a pull looks like on the wire, with and without encryption.
std::string WireBytesOfOneCall(bool encrypted) {
  ServerThread st({.host = "127.0.0.1", .token = "token-in-the-clear"}, encrypted);
  RecordingProxy proxy(st.server->port());
  ClientOptions options{.token = "token-in-the-clear",
                        .curve_secret_key = encrypted ? Key() : "",
                        .servers = {proxy.endpoint()},
                        .heartbeat_timeout = Millis(0)};
  auto client = RpcClient::Create(options);
  EXPECT_TRUE(client.ok()) << client.status();
  Message pull = MakeRequest(wire::PULL);
  pull.header.set_name("secret-tensor-name");
  pull.arrays.push_back(MakeWireArray(std::vector<int64_t>{0x0123456789abcdef}));
  auto r = (*client)->CallOne(0, std::move(pull), Deadline::InSeconds(20));
  EXPECT_TRUE(r.ok()) << r.status();
  if (r.ok()) {
    EXPECT_EQ(r->arrays[0].span<int64_t>()[0], 2 * 0x0123456789abcdef);
  }
  return proxy.recorded();
}

TEST(RpcSecurityTest, EncryptionHidesTokenNamesAndData) {
  const int64_t doubled = 2 * 0x0123456789abcdef;
  std::string answer(reinterpret_cast<const char*>(&doubled), sizeof(doubled));
  std::string clear = WireBytesOfOneCall(/*encrypted=*/false);
  EXPECT_THAT(clear, HasSubstr("token-in-the-clear"));  // The proxy works...
  EXPECT_THAT(clear, HasSubstr("secret-tensor-name"));
  EXPECT_THAT(clear, HasSubstr(answer));
  std::string hidden = WireBytesOfOneCall(/*encrypted=*/true);
  EXPECT_GT(hidden.size(), 200u);  // ...and saw the encrypted exchange.
  EXPECT_THAT(hidden, Not(HasSubstr("token-in-the-clear")));
  EXPECT_THAT(hidden, Not(HasSubstr("secret-tensor-name")));
  EXPECT_THAT(hidden, Not(HasSubstr(answer)));
  EXPECT_THAT(hidden, HasSubstr("CURVE"));
}

// A peer whose host vanished (its connection open, nothing answering the
// server's ZMTP pings) is disconnected after three heartbeat intervals.
TEST(RpcSecurityTest, ServerDropsConnectionsThatStopAnsweringPings) {
  ServerThread st({.host = "127.0.0.1", .token = "secret", .connection_heartbeat = Millis(200)});
  RecordingProxy proxy(st.server->port());
  ClientOptions options = Client(proxy.endpoint());
  options.heartbeat_timeout = Millis(0);  // Only ZeroMQ's own pings.
  auto client = RpcClient::Create(options);
  ASSERT_TRUE((*client)->CallOne(0, MakeRequest(wire::LIST_DATA), Deadline::InSeconds(10)).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  EXPECT_EQ(proxy.server_closed(), 0);  // Alive and answering pings: kept.
  proxy.Freeze();
  Deadline deadline = Deadline::InSeconds(30);
  while (proxy.server_closed() == 0 && !deadline.Expired()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(proxy.server_closed(), 1);
}

TEST(RpcSecurityTest, PeersWithoutTheJobKeyAreRefusedInTheHandshake) {
  ServerThread st({.host = "127.0.0.1", .token = "secret"});
  ClientOptions other = Client(st.endpoint);
  other.curve_secret_key = NewCurveSecretKey().value();  // Another job's key.
  ClientOptions plain = Client(st.endpoint);
  plain.curve_secret_key.clear();  // No encryption, right token.
  for (const ClientOptions& options : {other, plain}) {
    auto intruder = RpcClient::Create(options);
    ASSERT_TRUE(intruder.ok());
    auto r = (*intruder)->CallOne(0, MakeRequest(wire::HELLO), Deadline::InSeconds(1));
    EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded);
    EXPECT_THAT(r.status().message(), HasSubstr("same job key")) << r.status();
  }
  // A peer that knows the server's public key (public keys are not meant to
  // be secret) but has its own key pair gets past the key exchange; the ZAP
  // handler refuses it.
  char public_z85[41] = {}, secret_z85[41] = {}, server_z85[41] = {};
  ASSERT_EQ(zmq_curve_keypair(public_z85, secret_z85), 0);
  ASSERT_EQ(zmq_curve_public(server_z85, Key().c_str()), 0);
  zmq::context_t context;
  zmq::socket_t raw(context, zmq::socket_type::dealer);
  raw.set(zmq::sockopt::linger, 0);
  raw.set(zmq::sockopt::rcvtimeo, 1000);
  raw.set(zmq::sockopt::curve_serverkey, std::string(server_z85));
  raw.set(zmq::sockopt::curve_publickey, std::string(public_z85));
  raw.set(zmq::sockopt::curve_secretkey, std::string(secret_z85));
  raw.connect(st.endpoint);
  Message hello = MakeRequest(wire::HELLO);
  hello.header.set_token("secret");  // Even with the token.
  raw.send(zmq::buffer(EncodeHeader(hello)), zmq::send_flags::none);
  Deadline deadline = Deadline::InSeconds(30);
  while (st.server->connections_refused() == 0 && !deadline.Expired()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_GE(st.server->connections_refused(), 1u);
  zmq::message_t reply;
  EXPECT_FALSE(raw.recv(reply));                                                 // Never an answer.
  EXPECT_EQ(st.server->requests_served() + st.server->requests_rejected(), 0u);  // No frame.
  auto good = RpcClient::Create(Client(st.endpoint));
  EXPECT_TRUE((*good)->CallOne(0, MakeRequest(wire::HELLO), Deadline::InSeconds(10)).ok());
}

TEST(RpcSecurityTest, WithoutEncryptionTheTokenIsCheckedInTheHandshake) {
  ServerThread st({.host = "127.0.0.1", .token = "secret"}, /*encrypted=*/false);
  ClientOptions bad = Client(st.endpoint);
  bad.curve_secret_key.clear();
  bad.token = "guess";
  auto intruder = RpcClient::Create(bad);
  auto r = (*intruder)->CallOne(0, MakeRequest(wire::HELLO), Deadline::InSeconds(1));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_GE(st.server->connections_refused(), 1u);
  EXPECT_EQ(st.server->requests_served() + st.server->requests_rejected(), 0u);
  ClientOptions good_options = Client(st.endpoint);
  good_options.curve_secret_key.clear();
  auto good = RpcClient::Create(good_options);
  EXPECT_TRUE((*good)->CallOne(0, MakeRequest(wire::HELLO), Deadline::InSeconds(10)).ok());
}

TEST(RpcSecurityTest, WrongTokenLearnsNothingButTheRefusal) {
  ServerThread st({.host = "127.0.0.1", .token = "secret"});
  zmq::context_t context;
  auto member = RawMember(context, st.endpoint);
  zmq::socket_t& raw = *member;
  for (uint32_t version : {kWireVersion, 99u}) {
    Message m = MakeRequest(wire::LIST_DATA);
    m.header.set_token("guess");
    m.header.set_version(version);
    raw.send(zmq::buffer(m.header.SerializeAsString()), zmq::send_flags::none);
    zmq::message_t reply;
    ASSERT_TRUE(raw.recv(reply));
    EXPECT_FALSE(reply.more());
    wire::Header h;
    ASSERT_TRUE(h.ParseFromArray(reply.data(), static_cast<int>(reply.size())));
    EXPECT_EQ(h.version(), 0u);  // Not even the wire version.
    EXPECT_EQ(h.method(), wire::METHOD_UNSPECIFIED);
    EXPECT_EQ(h.request_id(), m.header.request_id());
    EXPECT_EQ(h.status_code(), static_cast<int>(absl::StatusCode::kPermissionDenied));
    EXPECT_EQ(h.status_message(), "wrong job token");
  }
}

TEST(RpcSecurityTest, ClientIdsOutsideTheJobAreRejected) {
  ServerThread st({.host = "127.0.0.1", .token = "secret", .expected_clients = 4});
  for (int id : {-1, 4, 20000}) {
    auto client = RpcClient::Create(Client(st.endpoint, id));
    auto r = (*client)->CallOne(0, MakeRequest(wire::HELLO), Deadline::InSeconds(10));
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << id;
    EXPECT_THAT(r.status().message(), HasSubstr("outside 0..3")) << r.status();
  }
  auto client = RpcClient::Create(Client(st.endpoint, 3));
  EXPECT_TRUE((*client)->CallOne(0, MakeRequest(wire::HELLO), Deadline::InSeconds(10)).ok());
}

// 20,000 hellos with client ids outside the job (once 20,001 "clients" that
// then left, and as many unthrottled warnings): all rejected, one log line.
TEST(RpcSecurityTest, FakeClientIdsAreRejectedWithOneLogLine) {
  auto log = std::make_unique<testing::CapturedLog>();
  {
    ServerThread st({.host = "127.0.0.1", .token = "secret", .expected_clients = 2});
    zmq::context_t context;
    auto member = RawMember(context, st.endpoint);
    zmq::socket_t& raw = *member;
    // In batches: a ROUTER drops answers beyond its send queue (1000).
    for (int first = 2; first < 20002; first += 500) {
      for (int id = first; id < first + 500; ++id) {
        Message hello = MakeRequest(wire::HELLO);
        hello.header.set_token("secret");
        hello.header.set_client_id(id);
        raw.send(zmq::buffer(EncodeHeader(hello)), zmq::send_flags::none);
      }
      for (int i = 0; i < 500; ++i) {
        zmq::message_t reply;
        ASSERT_TRUE(raw.recv(reply)) << first + i;
      }
    }
    EXPECT_EQ(st.server->requests_rejected(), 20000u);
    auto client = RpcClient::Create(Client(st.endpoint, 1));
    EXPECT_TRUE((*client)->CallOne(0, MakeRequest(wire::HELLO), Deadline::InSeconds(10)).ok());
  }
  std::string text = log->text();
  // One line of its own; a slow run may add one summary ("N more like it").
  EXPECT_EQ(log->CountLines("server: rejected a message"), 1) << text;
  EXPECT_LE(
      log->CountLines() - log->CountLines("server: rejected") - log->CountLines("server: stopping"),
      1)
      << text;
  log.reset();
  EXPECT_THAT(text, Not(HasSubstr("treating it as dead"))) << text;
}

// A member that asks for big answers and never reads them: ZeroMQ would
// hold every answer; past the limit they become errors, and once the
// answers are read the server answers in full again.
TEST(RpcSecurityTest, UnreadAnswersAreBounded) {
  ServerThread st({.host = "127.0.0.1", .token = "secret", .max_queued_reply_bytes = 32 << 20});
  zmq::context_t context;
  zmq::socket_t raw(context, zmq::socket_type::dealer);
  raw.set(zmq::sockopt::linger, 0);
  raw.set(zmq::sockopt::rcvhwm, 1);
  raw.set(zmq::sockopt::rcvbuf, 64 << 10);
  raw.set(zmq::sockopt::rcvtimeo, 20000);
  ASSERT_TRUE(SecureClientSocket(raw, {"secret", Key()}).ok());
  raw.connect(st.endpoint);
  const int kRequests = 40;  // 160 MiB of answers.
  for (int i = 0; i < kRequests; ++i) {
    Message m = MakeRequest(wire::PULL);
    m.header.set_token("secret");
    m.header.set_name("big");
    raw.send(zmq::buffer(EncodeHeader(m)), zmq::send_flags::none);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));  // Nothing read meanwhile.
  int full = 0, refused = 0;
  for (int i = 0; i < kRequests; ++i) {
    zmq::message_t head;
    ASSERT_TRUE(raw.recv(head)) << i;
    wire::Header h;
    ASSERT_TRUE(h.ParseFromArray(head.data(), static_cast<int>(head.size())));
    while (head.more()) ASSERT_TRUE(raw.recv(head));
    if (h.status_code() == 0) {
      ++full;
    } else {
      ++refused;
      EXPECT_THAT(h.status_message(), HasSubstr("answers are waiting for their clients"))
          << h.status_message();
    }
  }
  EXPECT_GT(refused, 0);
  // At most the limit, plus what the kernel's socket buffers took.
  EXPECT_LE(full, 16) << refused << " refused";
  auto client = RpcClient::Create(Client(st.endpoint));
  Message big = MakeRequest(wire::PULL);
  big.header.set_name("big");
  auto r = (*client)->CallOne(0, std::move(big), Deadline::InSeconds(20));
  EXPECT_TRUE(r.ok()) << r.status();
}

TEST(RpcSecurityTest, KeysAndTokensAreChecked) {
  EXPECT_FALSE(RpcServer::Bind({.host = "127.0.0.1"}).ok());  // No token.
  EXPECT_FALSE(
      RpcServer::Bind({.host = "127.0.0.1", .token = "t", .curve_secret_key = "short"}).ok());
  EXPECT_FALSE(RpcClient::Create({.token = "t",
                                  .curve_secret_key = std::string(40, '~'),
                                  .servers = {"tcp://127.0.0.1:1"}})
                   .ok());
  Status invalid = ValidateCurveSecretKey("abc", "TESSERA_JOB_KEY");
  EXPECT_THAT(invalid.message(), HasSubstr("TESSERA_JOB_KEY"));
  EXPECT_THAT(invalid.message(), Not(HasSubstr("abc")));  // Never echoed.
  std::string a = NewCurveSecretKey().value(), b = NewCurveSecretKey().value();
  EXPECT_NE(a, b);
  EXPECT_TRUE(ValidateCurveSecretKey(a, "key").ok());
  EXPECT_TRUE(ConstantTimeEquals("abc", "abc"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "abd"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "abcd"));
}

}  // namespace
}  // namespace tessera::rpc
