// File: src/kvstore/kvstore_test.cc
//
// KV servers (threads, real sockets, real shared memory) over a 2-part Cora
// partition, and clients on "machine 0" (local rows from shared memory) and
// on no machine (everything remote).
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <thread>

#include "gtest/gtest.h"
#include "src/kvstore/test_cluster.h"
#include "tessera/partition/load_partition.h"

namespace tessera::kvstore {
namespace {

using testing::TestCluster;

class KvStoreTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { config_ = &testing::CoraPartitions(2); }
  // Row `gid` of node array `name`, read from the partition files.
  static std::vector<float> FileRow(const std::string& name, int64_t gid) {
    auto book = ReadPartitionConfig(*config_)->Book(0);
    int p = book->NodeOwner(gid);
    auto part = LoadPartition(*config_, p);
    const Array& a = part->node_data.at(name);
    std::vector<float> row(a.row_elems());
    std::memcpy(
        row.data(),
        static_cast<const char*>(a.data()) + (gid - book->NodeRange(p).first) * a.row_bytes(),
        a.row_bytes());
    return row;
  }
  static inline const std::string* config_ = nullptr;
};

TEST_F(KvStoreTest, PullMatchesPartitionFilesLocalAndRemote) {
  TestCluster cluster(*config_, 2, 1);
  for (int machine : {0, -1}) {
    auto client = cluster.Connect(machine + 5, machine);
    ASSERT_TRUE(client);
    EXPECT_EQ(client->local_shards() != nullptr, machine == 0);
    EXPECT_EQ(client->graph_name(), "cora");
    EXPECT_EQ(client->book().num_nodes(), 2708);
    auto meta = client->features().Meta("node/feat");
    ASSERT_TRUE(meta.ok()) << meta.status();
    EXPECT_EQ(meta->shape, (std::vector<int64_t>{2708, 1433}));
    std::vector<int64_t> ids = {2707, 0, 1500, 0, 42, 1354, 1353};
    std::vector<float> out(ids.size() * 1433);
    ASSERT_TRUE(
        client->features().PullInto("node/feat", ids, RowsOf<float>(1433), out.data()).ok());
    for (size_t i = 0; i < ids.size(); ++i) {
      std::vector<float> want = FileRow("feat", ids[i]);
      ASSERT_EQ(std::memcmp(out.data() + i * 1433, want.data(), 1433 * 4), 0) << ids[i];
    }
    auto bad = client->features().PullInto("node/feat", std::vector<int64_t>{2708},
                                           RowsOf<float>(1433), out.data());
    EXPECT_EQ(bad.code(), absl::StatusCode::kOutOfRange);
    EXPECT_EQ(client->features().PullInto("node/nope", ids, RowsOf<float>(1433), out.data()).code(),
              absl::StatusCode::kNotFound);
    EXPECT_TRUE(client->job().Close().ok());
  }
}

TEST_F(KvStoreTest, InitPushPullDeleteAcrossClients) {
  TestCluster cluster(*config_, 2, 2);
  auto a = cluster.Connect(0, 0);
  auto b = cluster.Connect(1, 1);  // Machine 1 has no shared memory here? It does: same host.
  ASSERT_TRUE(a && b);
  InitSpec spec{.name = "emb",
                .dtype = DType::kFloat32,
                .shape = {2708, 4},
                .init = Init::kUniform,
                .a = -1,
                .b = 1,
                .seed = 9};
  auto created = a->features().InitData(spec);
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_TRUE(*created);
  auto again = b->features().InitData(spec);
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(*again);  // Attach.
  spec.shape = {2708, 5};
  EXPECT_EQ(b->features().InitData(spec).status().code(), absl::StatusCode::kAlreadyExists);
  spec.shape = {100, 4};
  EXPECT_EQ(b->features().InitData(spec).status().code(), absl::StatusCode::kInvalidArgument);
  // A NUL would cut the name short in the catalog: a second "node/emb".
  InitSpec nul{.name = std::string("emb\0x", 5), .dtype = DType::kInt8, .shape = {2708}};
  auto refused = b->features().InitData(nul);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.status().message(), HasSubstr("bad tensor name \"emb\\x00x\""))
      << refused.status();

  std::vector<int64_t> all(2708);
  std::iota(all.begin(), all.end(), 0);
  std::vector<float> va(2708 * 4), vb(2708 * 4);
  ASSERT_TRUE(a->features().PullInto("node/emb", all, RowsOf<float>(4), va.data()).ok());
  ASSERT_TRUE(b->features().PullInto("node/emb", all, RowsOf<float>(4), vb.data()).ok());
  EXPECT_EQ(va, vb);
  for (float v : va) ASSERT_TRUE(v >= -1 && v < 1);
  EXPECT_NE(va[0], va[1]);

  // Read-your-writes, across machines and servers.
  std::vector<int64_t> ids = {3, 2000, 7};
  std::vector<float> rows = {1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3};
  ASSERT_TRUE(
      a->features().Push("node/emb", ids, RowsOf<float>(4), rows.data(), PushMode::kAssign).ok());
  ASSERT_TRUE(
      a->features().Push("node/emb", ids, RowsOf<float>(4), rows.data(), PushMode::kAdd).ok());
  std::vector<float> got(12);
  ASSERT_TRUE(b->features().PullInto("node/emb", ids, RowsOf<float>(4), got.data()).ok());
  EXPECT_EQ(got, (std::vector<float>{2, 2, 2, 2, 4, 4, 4, 4, 6, 6, 6, 6}));
  // Wrong row size is an error, not a crash.
  auto meta = b->features().List();
  ASSERT_TRUE(meta.ok());

  ASSERT_TRUE(a->features().DeleteData("node/emb").ok());
  EXPECT_EQ(b->features().PullInto("node/emb", ids, RowsOf<float>(4), got.data()).code(),
            absl::StatusCode::kNotFound);
}

// A caller whose buffer was sized before its tensor was deleted and created
// again with wider rows gets an error, never a read or write past its buffer
// (DistTensor handles held across a delete did): at first from a cached
// meta, against which this machine's shard and remote answers are checked,
// then from the meta read again.
TEST_F(KvStoreTest, BuffersSizedBeforeATensorWasCreatedAgainAreRefused) {
  TestCluster cluster(*config_, 2, 1);
  auto a = cluster.Connect(0, 0);   // Machine 0: its rows from shared memory.
  auto w = cluster.Connect(3, 0);   // The same, writing.
  auto c = cluster.Connect(1, -1);  // Every row remote.
  auto b = cluster.Connect(2, 1);
  ASSERT_TRUE(a && b && c && w);
  ASSERT_TRUE(a->features().InitData({.name = "emb", .shape = {2708, 4}}).ok());
  const std::vector<int64_t> local = {3}, remote = {2700}, both = {3, 2700};
  std::vector<float> narrow(both.size() * 4), wide(both.size() * 64);
  for (auto* client : {&a, &c, &w}) {  // Each caches the meta.
    ASSERT_TRUE(
        (*client)->features().PullInto("node/emb", both, RowsOf<float>(4), narrow.data()).ok());
  }
  ASSERT_TRUE(b->features().DeleteData("node/emb").ok());
  ASSERT_TRUE(b->features().InitData({.name = "emb", .shape = {2708, 64}}).ok());

  const std::string shard_differs =
      "this machine's shard of 'node/emb' holds float32 rows of 256 bytes, not float32 rows of "
      "16 bytes";
  Status shard = a->features().PullInto("node/emb", local, RowsOf<float>(4), narrow.data());
  EXPECT_EQ(shard.code(), absl::StatusCode::kDataLoss) << shard;
  EXPECT_THAT(shard.message(), HasSubstr(shard_differs));
  std::fill(narrow.begin(), narrow.end(), 5.0f);
  Status written =
      w->features().Push("node/emb", local, RowsOf<float>(4), narrow.data(), PushMode::kAssign);
  EXPECT_EQ(written.code(), absl::StatusCode::kDataLoss) << written;
  EXPECT_THAT(written.message(), HasSubstr(shard_differs));
  Status answer = c->features().PullInto("node/emb", remote, RowsOf<float>(4), narrow.data());
  EXPECT_EQ(answer.code(), absl::StatusCode::kDataLoss) << answer;
  EXPECT_THAT(answer.message(), HasSubstr("does not match the tensor's dtype, row size"));
  const std::string refused =
      "tensor 'node/emb' now holds float32 rows of 256 bytes, and the caller's buffer float32 "
      "rows of 16 bytes";
  for (auto* client : {&a, &c, &w}) {
    Status pull = (*client)->features().PullInto("node/emb", both, RowsOf<float>(4), narrow.data());
    EXPECT_EQ(pull.code(), absl::StatusCode::kFailedPrecondition) << pull;
    EXPECT_THAT(pull.message(), HasSubstr(refused));
    Status push = (*client)->features().Push("node/emb", both, RowsOf<float>(4), narrow.data(),
                                             PushMode::kAssign);
    EXPECT_EQ(push.code(), absl::StatusCode::kFailedPrecondition) << push;
    EXPECT_THAT(push.message(), HasSubstr(refused));
    Status update = (*client)->features().SparseUpdate("node/emb", both, 4, narrow.data(),
                                                       {.kind = SparseOptimizerKind::kAdagrad});
    EXPECT_EQ(update.code(), absl::StatusCode::kFailedPrecondition) << update;
    EXPECT_THAT(update.message(), HasSubstr(refused));
    // A buffer of the new rows: the zeros the tensor was created with (no
    // refused write reached them).
    std::fill(wide.begin(), wide.end(), 1.0f);
    ASSERT_TRUE(
        (*client)->features().PullInto("node/emb", both, RowsOf<float>(64), wide.data()).ok());
    EXPECT_EQ(wide, std::vector<float>(wide.size(), 0.0f));
  }
}

// Four clients add to the same 16 rows through both servers of each machine
// and through the local shared-memory path; no update may be lost.
// A row larger than the servers take in one message cannot be pushed
// remotely (it would drop the connection): a clear error instead. Pulls of
// it work: answers are not limited.
TEST_F(KvStoreTest, RowsLargerThanTheServersMessageLimitAreNotPushed) {
  TestCluster cluster(*config_, 2, 1, rpc::Millis(30000), 1 << 20, /*max_message_bytes=*/16 << 10);
  auto a = cluster.Connect(0, 0);
  ASSERT_TRUE(a);
  InitSpec wide{.name = "wide", .dtype = DType::kFloat32, .shape = {2708, 8192}};  // 32 KiB rows.
  ASSERT_TRUE(a->features().InitData(wide).ok());
  std::vector<float> row(8192, 1.0f);
  std::vector<int64_t> local_id = {0}, remote_id = {2700};  // Machine 0's, machine 1's.
  EXPECT_TRUE(a->features()
                  .Push("node/wide", local_id, RowsOf<float>(8192), row.data(), PushMode::kAssign)
                  .ok());
  Status pushed = a->features().Push("node/wide", remote_id, RowsOf<float>(8192), row.data(),
                                     PushMode::kAssign);
  EXPECT_EQ(pushed.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(pushed.message(),
              HasSubstr("a row of 'node/wide' is 32.00 KiB in one message, more than "
                        "the servers accept (16.00 KiB)"))
      << pushed;
  EXPECT_TRUE(a->features().PullInto("node/wide", remote_id, RowsOf<float>(8192), row.data()).ok());
}

TEST_F(KvStoreTest, ConcurrentAddsWithTwoServersPerMachineLoseNothing) {
  TestCluster cluster(*config_, 2, 2);
  {
    auto c = cluster.Connect(100, 0);
    ASSERT_TRUE(
        c->features().InitData({.name = "acc", .dtype = DType::kFloat64, .shape = {2708, 8}}).ok());
  }
  constexpr int kClients = 4, kRounds = 150;
  std::vector<int64_t> ids = {0, 1, 2, 3, 1354, 1355, 2700, 2701,
                              5, 6, 7, 8, 2702, 2703, 2704, 2705};
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int c = 0; c < kClients; ++c) {
    threads.emplace_back([&, c] {
      auto client = cluster.Connect(c, c % 2 == 0 ? 0 : -1);
      std::vector<double> ones(ids.size() * 8, 1.0);
      for (int r = 0; r < kRounds; ++r) {
        if (!client->features()
                 .Push("node/acc", ids, RowsOf<double>(8), ones.data(), PushMode::kAdd)
                 .ok())
          ++failures;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  auto reader = cluster.Connect(200, 1);
  std::vector<double> out(ids.size() * 8);
  ASSERT_TRUE(reader->features().PullInto("node/acc", ids, RowsOf<double>(8), out.data()).ok());
  for (double v : out) ASSERT_EQ(v, kClients * kRounds);
}

// Sparse optimizer updates from 4 clients (two reading this machine's rows
// from shared memory, two remote) through 2 servers per machine: every
// update lands with its optimizer state (DGL PR #3561 lost them and made
// NaNs with several servers per machine). With gradient 1, Adagrad's state
// sum counts the updates exactly and Adam's step counter too.
TEST_F(KvStoreTest, ConcurrentSparseUpdatesLoseNothing) {
  TestCluster cluster(*config_, 2, 2);
  constexpr int kDim = 4;
  {
    auto c = cluster.Connect(100, 0);
    for (const char* name : {"emb", "emb.adagrad_sum", "emb.adam_m", "emb.adam_v"}) {
      ASSERT_TRUE(c->features().InitData({.name = name, .shape = {2708, kDim}}).ok());
    }
    ASSERT_TRUE(c->features().InitData({.name = "emb.adam_step", .shape = {2708, 1}}).ok());
  }
  constexpr int kClients = 4, kRounds = 100;
  std::vector<int64_t> ids = {0, 1, 1354, 1355, 2700, 2707, 5, 1400};
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int c = 0; c < kClients; ++c) {
    threads.emplace_back([&, c] {
      auto client = cluster.Connect(c, c % 2 == 0 ? 0 : -1);
      std::vector<float> grads(ids.size() * kDim, 1.0f);
      for (int r = 0; r < kRounds; ++r) {
        SparseOptimizerSpec adagrad{.kind = SparseOptimizerKind::kAdagrad, .lr = 0.01};
        SparseOptimizerSpec adam{.kind = SparseOptimizerKind::kAdam, .lr = 0.01, .eps = 1e-8};
        if (!client->features()
                 .SparseUpdate("node/emb", ids, kDim, grads.data(), r % 2 ? adam : adagrad)
                 .ok()) {
          ++failures;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  auto reader = cluster.Connect(200, 1);
  std::vector<float> sums(ids.size() * kDim), steps(ids.size()), rows(ids.size() * kDim);
  ASSERT_TRUE(reader->features()
                  .PullInto("node/emb.adagrad_sum", ids, RowsOf<float>(kDim), sums.data())
                  .ok());
  ASSERT_TRUE(
      reader->features().PullInto("node/emb.adam_step", ids, RowsOf<float>(1), steps.data()).ok());
  ASSERT_TRUE(reader->features().PullInto("node/emb", ids, RowsOf<float>(kDim), rows.data()).ok());
  for (float v : sums) ASSERT_EQ(v, kClients * kRounds / 2);
  for (float v : steps) ASSERT_EQ(v, kClients * kRounds / 2);
  for (float v : rows) ASSERT_TRUE(std::isfinite(v) && v < 0) << v;  // Always pushed down.
}

// Bad sparse updates get an error naming the problem; nothing changes.
TEST_F(KvStoreTest, BadSparseUpdatesAreRefused) {
  TestCluster cluster(*config_, 2, 1);
  auto c = cluster.Connect(0, 0);
  ASSERT_TRUE(c->features().InitData({.name = "emb", .shape = {2708, 2}}).ok());
  ASSERT_TRUE(
      c->features().InitData({.name = "emb64", .dtype = DType::kFloat64, .shape = {2708, 2}}).ok());
  std::vector<int64_t> ids = {3, 2000};
  std::vector<float> grads(4, 1.0f);
  auto expect = [&](Status st, const char* says) {
    EXPECT_FALSE(st.ok());
    EXPECT_THAT(st.message(), HasSubstr(says)) << st;
  };
  SparseOptimizerSpec adagrad{.kind = SparseOptimizerKind::kAdagrad};
  expect(c->features().SparseUpdate("node/emb", ids, 2, grads.data(), adagrad), "emb.adagrad_sum");
  expect(c->features().SparseUpdate("node/emb64", ids, 2, grads.data(), adagrad), "float32");
  expect(c->features().SparseUpdate("node/emb", ids, 2, grads.data(),
                                    {.kind = SparseOptimizerKind::kAdagrad, .lr = -1}),
         "lr");
  expect(c->features().SparseUpdate("node/emb", ids, 2, grads.data(),
                                    {.kind = SparseOptimizerKind::kAdam, .beta1 = 1.5}),
         "betas");
  expect(c->features().SparseUpdate("node/emb", {{5000}}, 2, grads.data(), adagrad), "5000");
  // Straight on the wire: unknown kind, wrong gradient shape, foreign ids.
  auto rpc = rpc::RpcClient::Create({.token = "t",
                                     .curve_secret_key = cluster.key(),
                                     .client_id = 77,
                                     .servers = cluster.endpoints()});
  ASSERT_TRUE(rpc.ok()) << rpc.status();
  ASSERT_TRUE(c->features().InitData({.name = "emb.adagrad_sum", .shape = {2708, 2}}).ok());
  auto call = [&](uint32_t kind, std::vector<rpc::WireArray> arrays) {
    rpc::Message m = rpc::MakeRequest(wire::SPARSE_UPDATE);
    m.header.set_name("node/emb");
    m.header.mutable_sparse_optimizer()->set_kind(kind);
    m.header.mutable_sparse_optimizer()->set_lr(0.1);
    m.header.mutable_sparse_optimizer()->set_eps(1e-10);
    m.arrays = std::move(arrays);
    return (*rpc)->CallOne(0, std::move(m), Deadline::InSeconds(10)).status();
  };
  auto wire_ids = [](std::vector<int64_t> v) { return rpc::MakeWireArray(std::move(v)); };
  auto grad_rows = [](int64_t rows, int64_t dim) {
    rpc::WireArray a = rpc::MakeWireArray(std::vector<float>(rows * dim, 1.0f));
    a.shape = {rows, dim};
    return a;
  };
  expect(call(9, {wire_ids({0}), grad_rows(1, 2)}), "kind");
  expect(call(1, {wire_ids({0})}), "two arrays");
  expect(call(1, {wire_ids({0, 1}), grad_rows(1, 2)}), "gradients");
  expect(call(1, {wire_ids({0}), grad_rows(1, 3)}), "dim 2");
  int64_t foreign = c->book().NodeRange(1).first;
  expect(call(1, {wire_ids({foreign}), grad_rows(1, 2)}), "not owned");
  std::vector<float> row(2);
  ASSERT_TRUE(c->features().PullInto("node/emb", {{0}}, RowsOf<float>(2), row.data()).ok());
  EXPECT_EQ(row, (std::vector<float>{0, 0}));  // Zeros, as created: nothing was applied.
  // And the server still serves.
  EXPECT_TRUE(c->features().SparseUpdate("node/emb", ids, 2, grads.data(), adagrad).ok());
}

TEST_F(KvStoreTest, BarrierWaitsForAllAndFailsWhenOneLeaves) {
  TestCluster cluster(*config_, 2, 1);
  std::atomic<int> passed{0};
  std::vector<std::thread> threads;
  for (int c = 0; c < 3; ++c) {
    threads.emplace_back([&, c] {
      auto client = cluster.Connect(c, c % 2, 3);
      for (int round = 0; round < 3; ++round) {
        if (client->job().Barrier().ok()) ++passed;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(passed.load(), 9);

  // One of two participants leaves: the other's barrier fails, no hang.
  auto x = cluster.Connect(10, 0, 2);
  auto y = cluster.Connect(11, 1, 2);
  ASSERT_TRUE(y->job().Close().ok());
  Stopwatch watch;
  Status s = x->job().Barrier();
  EXPECT_EQ(s.code(), absl::StatusCode::kAborted) << s;
  EXPECT_THAT(s.message(), HasSubstr("client 11")) << s;
  EXPECT_LT(watch.Seconds(), 10);
}

TEST_F(KvStoreTest, WrongJobOrServerListIsAClearError) {
  TestCluster cluster(*config_, 2, 1);
  KvClientOptions o = cluster.ClientOptions(0, 0);
  std::swap(o.servers[0], o.servers[1]);
  auto c = KvClient::Connect(o);
  EXPECT_EQ(c.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(c.status().message(), HasSubstr("check ip_config"));
}

}  // namespace
}  // namespace tessera::kvstore
