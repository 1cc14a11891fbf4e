// File: src/kvstore/forged_answers_test.cc
//
// A KvClient talking to a fake server (an rpc::Service on loopback) that
// answers with forged sizes, counts and shapes: sample counts whose sum
// wraps around 2^64, negative counts, arrays shorter than the request,
// impossible tensor shapes. The client must refuse each answer with
// DataLoss before writing anything, and keep working with honest answers.
// The fake graph: one machine owning nodes 0..9 and edges 0..19.
#include <atomic>
#include <limits>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/kvstore/kv_client.h"
#include "src/shm/segment.h"

using ::testing::HasSubstr;

namespace tessera::kvstore {
namespace {

enum class Forge {
  kNone,
  kWrappingCounts,
  kNegativeCount,
  kFewCounts,
  kShortArrays,
  kBadShape,
  kBadNode,  // Node ids (and degrees) outside the graph.
  kBadEdge,  // Edge ids outside the graph.
};

class FakeServer : public rpc::Service {
 public:
  explicit FakeServer(std::string job) : job_(std::move(job)) {}
  std::atomic<Forge> forge{Forge::kNone};

  std::optional<rpc::Message> Handle(const rpc::Peer&, rpc::Message& request) override {
    rpc::Message response = rpc::MakeResponse(request.header, absl::OkStatus());
    Forge f = forge.load();
    switch (request.header.method()) {
      case wire::HELLO: {
        wire::ServerInfo* info = response.header.mutable_server_info();
        info->set_server_id(0);
        info->set_servers_per_machine(1);
        info->set_graph_name("fake");
        info->set_job_id(job_);
        info->set_halo_hops(1);
        for (int64_t v : {0, 10}) info->add_node_offsets(v);
        for (int64_t v : {0, 20}) info->add_edge_offsets(v);
        break;
      }
      case wire::LIST_DATA: {
        wire::DataInfo* d = response.header.add_data_infos();
        d->set_name("node/x");
        d->set_dtype(static_cast<uint32_t>(DType::kFloat32));
        for (int64_t v : {10, 4}) d->add_shape(v);
        if (f == Forge::kBadShape) {
          // Rows of 4 * 2^62 * 2^62 bytes: 0 modulo 2^64.
          d = response.header.add_data_infos();
          d->set_name("node/wrap");
          for (int64_t v : {int64_t{10}, int64_t{1} << 62, int64_t{1} << 62}) d->add_shape(v);
        }
        break;
      }
      case wire::PULL: {
        int64_t n = request.arrays[0].shape[0];
        // Honest: [n, 4] float32 rows holding the id; forged: one row short.
        int64_t rows = f == Forge::kShortArrays ? n - 1 : n;
        std::vector<float> values;
        for (int64_t id : request.arrays[0].span<int64_t>()) {
          for (int k = 0; k < 4; ++k) values.push_back(static_cast<float>(id));
        }
        values.resize(rows * 4);
        response.arrays.push_back(
            {DType::kFloat32, {rows, 4}, rpc::Blob::FromVector(std::move(values))});
        break;
      }
      case wire::SAMPLE: {
        // Honest: one in-edge per seed, from seed + 1, edge id = seed.
        std::span<const int64_t> seeds = request.arrays[0].span<int64_t>();
        std::vector<int64_t> neighbours, eids, counts;
        for (int64_t s : seeds) {
          neighbours.push_back(s + 1);
          eids.push_back(s);
          counts.push_back(1);
        }
        if (f == Forge::kWrappingCounts) {
          // 4 x 2^62 + 3 = 3 (mod 2^64): the sum matches the 3 edges sent.
          counts.assign(seeds.size(), int64_t{1} << 62);
          counts.back() += 3;
          neighbours.resize(3);
          eids.resize(3);
        } else if (f == Forge::kNegativeCount) {
          counts.assign(seeds.size(), 0);
          counts[0] = -1;
          counts[1] = static_cast<int64_t>(seeds.size()) + 1;
        } else if (f == Forge::kFewCounts) {
          counts.pop_back();
        } else if (f == Forge::kBadNode) {
          neighbours[1] = -1;
        } else if (f == Forge::kBadEdge) {
          eids[1] = 20;
        }
        response.arrays.push_back(rpc::MakeWireArray(std::move(neighbours)));
        response.arrays.push_back(rpc::MakeWireArray(std::move(eids)));
        response.arrays.push_back(rpc::MakeWireArray(std::move(counts)));
        break;
      }
      case wire::IN_DEGREES:
      case wire::FIND_EDGES: {
        std::vector<int64_t> v(request.arrays[0].shape[0], 7);
        if (f == Forge::kShortArrays) v.pop_back();
        if (f == Forge::kBadNode) v.back() = request.header.method() == wire::FIND_EDGES ? 10 : -3;
        response.arrays.push_back(rpc::MakeWireArray(v));
        if (request.header.method() == wire::FIND_EDGES) {
          response.arrays.push_back(rpc::MakeWireArray(v));
        }
        break;
      }
      default:
        return rpc::MakeResponse(request.header, absl::UnimplementedError("fake"));
    }
    return response;
  }

 private:
  std::string job_;
};

class ForgedAnswersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto rpc = rpc::RpcServer::Bind({.host = "127.0.0.1", .token = "t"});
    ASSERT_TRUE(rpc.ok()) << rpc.status();
    rpc_ = std::move(*rpc);
    thread_ = std::thread([this] { (void)rpc_->Serve(fake_, stop_); });
    auto client = KvClient::Connect({.job_id = job_,
                                     .token = "t",
                                     .client_id = 0,
                                     .machine_id = -1,
                                     .servers = {"tcp://127.0.0.1:" + std::to_string(rpc_->port())},
                                     .num_clients = 1,
                                     .call_timeout = rpc::Millis(10000),
                                     .connect_timeout = rpc::Millis(10000)});
    ASSERT_TRUE(client.ok()) << client.status();
    client_ = std::move(*client);
  }
  void TearDown() override {
    client_.reset();
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  void ExpectDataLoss(const Status& s) { EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s; }

  std::string job_ = shm::RandomJobId();
  FakeServer fake_{job_};
  std::unique_ptr<rpc::RpcServer> rpc_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::unique_ptr<KvClient> client_;
};

TEST_F(ForgedAnswersTest, SampleCountsThatWrapOrLieAreRefused) {
  std::vector<int64_t> seeds = {2, 3, 4, 5};
  SampleRequest request{.fanout = 1};
  auto honest = client_->graph().SampleNeighbors(seeds, request);
  ASSERT_TRUE(honest.ok()) << honest.status();
  EXPECT_EQ(honest->src, (UninitVector<int64_t>{3, 4, 5, 6}));
  EXPECT_EQ(honest->dst, UninitVector<int64_t>(seeds.begin(), seeds.end()));
  for (Forge f : {Forge::kWrappingCounts, Forge::kNegativeCount, Forge::kFewCounts}) {
    fake_.forge = f;
    ExpectDataLoss(client_->graph().SampleNeighbors(seeds, request).status());
  }
  fake_.forge = Forge::kNone;
  auto again = client_->graph().SampleNeighbors(seeds, request);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->src, honest->src);
}

TEST_F(ForgedAnswersTest, ShortGraphAnswersAreRefused) {
  std::vector<int64_t> ids = {1, 2, 3};
  std::vector<int64_t> out(3, -1), src(3, -1), dst(3, -1);
  ASSERT_TRUE(
      client_->graph().Degrees(ids, sampling::EdgeDir::kIn, kAllRelations, out.data()).ok());
  EXPECT_EQ(out, (std::vector<int64_t>{7, 7, 7}));
  fake_.forge = Forge::kShortArrays;
  ExpectDataLoss(client_->graph().Degrees(ids, sampling::EdgeDir::kIn, kAllRelations, out.data()));
  ExpectDataLoss(client_->graph().FindEdges(ids, src.data(), dst.data()));
}

// Ids outside the graph in an answer are refused where they arrive, naming
// the machine and the id (a consumer would read past its arrays).
TEST_F(ForgedAnswersTest, IdsOutsideTheGraphAreRefused) {
  std::vector<int64_t> seeds = {2, 3, 4};
  std::vector<int64_t> out(3, -1), src(3, -1), dst(3, -1);
  auto expect = [&](const Status& s, const std::string& says) {
    ExpectDataLoss(s);
    EXPECT_THAT(s.message(), HasSubstr(says)) << s;
  };
  fake_.forge = Forge::kBadNode;
  expect(client_->graph().SampleNeighbors(seeds, {.fanout = 1}).status(),
         "sample_neighbors: machine 0 answered node -1 (entry 1), not one of the graph's 10");
  expect(client_->graph().FindEdges(seeds, src.data(), dst.data()),
         "find_edges: machine 0 answered node 10 (entry 2)");
  expect(client_->graph().Degrees(seeds, sampling::EdgeDir::kIn, kAllRelations, out.data()),
         "degrees: machine 0 answered degree -3");
  fake_.forge = Forge::kBadEdge;
  expect(client_->graph().SampleNeighbors(seeds, {.fanout = 1}).status(),
         "answered edge 20 (entry 1), not one of the graph's 20");
  fake_.forge = Forge::kNone;
  ASSERT_TRUE(client_->graph().SampleNeighbors(seeds, {.fanout = 1}).ok());
}

TEST_F(ForgedAnswersTest, PullAnswersAndTensorShapesAreChecked) {
  std::vector<int64_t> ids = {9, 0, 9};
  std::vector<float> out(ids.size() * 4, -1);
  ASSERT_TRUE(client_->features().PullInto("node/x", ids, RowsOf<float>(4), out.data()).ok());
  EXPECT_EQ(out[0], 9);
  EXPECT_EQ(out[4], 0);
  EXPECT_EQ(out[11], 9);
  fake_.forge = Forge::kShortArrays;
  ExpectDataLoss(client_->features().PullInto("node/x", ids, RowsOf<float>(4), out.data()));
  fake_.forge = Forge::kBadShape;
  auto list = client_->features().List();
  ExpectDataLoss(list.status());
  EXPECT_THAT(list.status().message(), HasSubstr("'node/wrap' with an impossible shape"))
      << list.status();
}

}  // namespace
}  // namespace tessera::kvstore
