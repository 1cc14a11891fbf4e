// File: src/kvstore/request_limits_test.cc
//
// Requests from a job member that ask too much: answers larger than the
// server's limit, shapes whose size wraps around 2^64, tensors larger than
// /dev/shm, barriers that cannot be matched, allocation failures. Each is
// handed straight to KvServer::Handle (machine 0 of a 2-part Cora, loaded
// into real shared memory); each must get a clear error answer, and the
// server must go on answering valid requests correctly.
#include <sys/resource.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <limits>
#include <numeric>

#include "gtest/gtest.h"
#include "src/kvstore/test_cluster.h"
#include "tessera/partition/load_partition.h"

namespace tessera::kvstore {
namespace {

constexpr size_t kLimit = size_t{256} << 10;  // The servers' answer limit here.
constexpr int64_t kFeatRowBytes = 1433 * 4;

class RequestLimitsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { config_ = &testing::CoraPartitions(2); }
  void SetUp() override {
    book_ = *ReadPartitionConfig(*config_)->Book(0);
    server_ = Load(kLimit, job_);
    ASSERT_TRUE(server_);
    auto rpc = rpc::RpcServer::Bind({.host = "127.0.0.1", .token = "t"});  // For late answers.
    ASSERT_TRUE(rpc.ok()) << rpc.status();
    rpc_ = std::move(*rpc);
    server_->set_rpc(rpc_.get());
    std::iota(owned_.begin(), owned_.end(), book_.NodeRange(0).first);
    reference_ = Pull(*server_, owned_);
    ASSERT_TRUE(rpc::ResponseStatus(reference_.header).ok());
  }
  std::unique_ptr<KvServer> Load(size_t limit, const std::string& job) {
    KvServerOptions o{.job_id = job,
                      .part_config = *config_,
                      .machine_id = 0,
                      .num_clients = 4,
                      .max_response_bytes = limit};
    std::atomic<bool> cancel{false};
    auto kv = KvServer::Load(o, cancel);
    EXPECT_TRUE(kv.ok()) << kv.status();
    return kv.ok() ? std::move(*kv) : nullptr;
  }
  static rpc::Message Call(KvServer& server, rpc::Message request, int client_id = 0) {
    std::optional<rpc::Message> response = server.Handle({"peer", client_id}, request);
    EXPECT_TRUE(response.has_value());
    return response ? std::move(*response) : rpc::Message{};
  }
  static rpc::Message IdsRequest(wire::Method method, std::vector<int64_t> ids,
                                 const std::string& name = "") {
    rpc::Message m = rpc::MakeRequest(method);
    m.header.set_name(name);
    m.arrays.push_back(rpc::MakeWireArray(std::move(ids)));
    return m;
  }
  static rpc::Message Pull(KvServer& server, std::vector<int64_t> ids) {
    return Call(server, IdsRequest(wire::PULL, std::move(ids), "node/feat"));
  }
  // The server still answers a valid pull with the rows it had.
  void ExpectServing() {
    rpc::Message again = Pull(*server_, owned_);
    ASSERT_TRUE(rpc::ResponseStatus(again.header).ok()) << rpc::ResponseStatus(again.header);
    ASSERT_EQ(again.arrays.size(), 1u);
    ASSERT_EQ(again.arrays[0].blob.size, reference_.arrays[0].blob.size);
    EXPECT_EQ(std::memcmp(again.arrays[0].blob.data, reference_.arrays[0].blob.data,
                          again.arrays[0].blob.size),
              0);
  }
  static void ExpectError(const rpc::Message& response, absl::StatusCode code,
                          const std::string& part) {
    Status s = rpc::ResponseStatus(response.header);
    EXPECT_EQ(s.code(), code) << s;
    EXPECT_THAT(s.message(), HasSubstr(part)) << s;
  }
  static rpc::Message Sample(KvServer& server, std::vector<int64_t> seeds, int64_t fanout,
                             bool replace) {
    rpc::Message m = IdsRequest(wire::SAMPLE, std::move(seeds));
    m.header.mutable_sample()->set_fanout(fanout);
    m.header.mutable_sample()->set_replace(replace);
    return Call(server, std::move(m));
  }
  static rpc::Message InitData(KvServer& server, const std::string& name,
                               std::vector<int64_t> shape) {
    rpc::Message m = rpc::MakeRequest(wire::INIT_DATA);
    wire::InitDataArgs* args = m.header.mutable_init_data();
    args->set_name(name);
    args->set_dtype(static_cast<uint32_t>(DType::kFloat32));
    for (int64_t d : shape) args->add_shape(d);
    return Call(server, std::move(m));
  }
  static rpc::Message Barrier(KvServer& server, int client_id, int num_clients) {
    rpc::Message m = rpc::MakeRequest(wire::BARRIER);
    m.header.mutable_barrier()->set_num_clients(num_clients);
    std::optional<rpc::Message> response = server.Handle({"peer", client_id}, m);
    return response ? std::move(*response) : rpc::Message{};  // Empty header: waiting.
  }
  static bool Waiting(const rpc::Message& m) { return !m.header.is_response(); }

  static inline const std::string* config_ = nullptr;
  std::string job_ = shm::RandomJobId();
  PartitionBook book_;
  std::unique_ptr<KvServer> server_;
  std::unique_ptr<rpc::RpcServer> rpc_;
  std::vector<int64_t> owned_ = std::vector<int64_t>(40);  // 40 rows: under the limit.
  rpc::Message reference_;
};

TEST_F(RequestLimitsTest, PullLargerThanTheLimitIsRefusedWithTheNumbers) {
  int64_t first = book_.NodeRange(0).first;
  int64_t rows = kLimit / kFeatRowBytes;  // 45 rows fit.
  EXPECT_TRUE(rpc::ResponseStatus(Pull(*server_, std::vector<int64_t>(rows, first)).header).ok());
  rpc::Message refused = Pull(*server_, std::vector<int64_t>(rows + 1, first));
  ExpectError(refused, absl::StatusCode::kResourceExhausted,
              "pull of 'node/feat': 46 x 5732 bytes = 257.49 KiB is more than one request may "
              "move (256.00 KiB)");
  EXPECT_TRUE(refused.arrays.empty());
  // Far beyond: refused before the ids are even looked at.
  refused = Pull(*server_, std::vector<int64_t>(1 << 20, -1));
  ExpectError(refused, absl::StatusCode::kResourceExhausted, "1048576 x 5732 bytes");
  ExpectServing();
}

TEST_F(RequestLimitsTest, PushesAndSparseUpdatesLargerThanTheLimitAreRefused) {
  int64_t first = book_.NodeRange(0).first;
  size_t n = kLimit / kFeatRowBytes + 1;
  for (wire::Method method : {wire::PUSH, wire::SPARSE_UPDATE}) {
    rpc::Message m = IdsRequest(method, std::vector<int64_t>(n, first), "node/feat");
    std::vector<float> rows(n * 1433, 1.0f);
    m.arrays.push_back(
        {DType::kFloat32, {static_cast<int64_t>(n), 1433}, rpc::Blob::FromVector(std::move(rows))});
    ExpectError(Call(*server_, std::move(m)), absl::StatusCode::kResourceExhausted,
                "46 x 5732 bytes");
  }
  ExpectServing();  // Nothing was written.
}

TEST_F(RequestLimitsTest, GraphRequestsLargerThanTheLimitAreRefused) {
  auto [begin, end] = book_.NodeRange(0);
  std::vector<int64_t> all(end - begin);
  std::iota(all.begin(), all.end(), begin);
  // Every in-edge of every owned node fits...
  rpc::Message whole = Sample(*server_, all, -1, false);
  ASSERT_TRUE(rpc::ResponseStatus(whole.header).ok()) << rpc::ResponseStatus(whole.header);
  int64_t edges = whole.arrays[0].shape[0];
  // ... but not the same hubs asked for many times over (fanout -1).
  std::vector<int64_t> repeated;
  for (int64_t copies = kLimit / (edges * 16) + 1; copies > 0; --copies) {
    repeated.insert(repeated.end(), all.begin(), all.end());
  }
  ExpectError(Sample(*server_, repeated, -1, false), absl::StatusCode::kResourceExhausted,
              "sample of " + std::to_string(repeated.size()) + " seeds with fanout -1");
  // A huge fanout with replacement asks for that many edges per seed.
  ExpectError(Sample(*server_, {begin}, int64_t{1} << 40, true),
              absl::StatusCode::kResourceExhausted,
              "sample of 1 seeds with fanout 1099511627776 (with replacement): 1099511627777 x "
              "16 bytes");
  ExpectError(Sample(*server_, all, std::numeric_limits<int64_t>::max(), true),
              absl::StatusCode::kResourceExhausted, "more than 2^64 bytes");
  // Without replacement a fanout is capped by the degree: fine.
  EXPECT_TRUE(
      rpc::ResponseStatus(Sample(*server_, all, std::numeric_limits<int64_t>::max(), false).header)
          .ok());
  // Degrees: 8 bytes per id; find_edges: 16.
  ExpectError(
      Call(*server_, IdsRequest(wire::IN_DEGREES, std::vector<int64_t>(kLimit / 8 + 1, begin))),
      absl::StatusCode::kResourceExhausted, "degrees: 32769 x 8 bytes");
  EXPECT_TRUE(
      rpc::ResponseStatus(
          Call(*server_, IdsRequest(wire::OUT_DEGREES, std::vector<int64_t>(kLimit / 8, begin)))
              .header)
          .ok());
  int64_t edge = book_.EdgeRange(0).first;
  ExpectError(
      Call(*server_, IdsRequest(wire::FIND_EDGES, std::vector<int64_t>(kLimit / 16 + 1, edge))),
      absl::StatusCode::kResourceExhausted, "find_edges: 16385 x 16 bytes");
  // The server samples as before.
  rpc::Message again = Sample(*server_, all, -1, false);
  ASSERT_TRUE(rpc::ResponseStatus(again.header).ok());
  EXPECT_EQ(again.arrays[0].shape, whole.arrays[0].shape);
  ExpectServing();
}

TEST_F(RequestLimitsTest, InitDataShapesThatWrapOrDoNotFitAreRefused) {
  int64_t n = book_.num_nodes();
  std::vector<std::string> before = shm::ListJobSegments(job_);
  // 4 * 2708 * 2^62 * 8 wraps around 2^64.
  ExpectError(InitData(*server_, "wrap", {n, int64_t{1} << 62, 8}),
              absl::StatusCode::kInvalidArgument, "is more than 2^63 bytes");
  ExpectError(InitData(*server_, "wrap", {n, -1}), absl::StatusCode::kInvalidArgument,
              "negative dimension");
  // 2708 x 2^40 floats: no overflow, but no /dev/shm holds this machine's
  // half (> 1354 x 2^42 bytes). Refused before any page is taken.
  struct statvfs st {};
  ASSERT_EQ(statvfs("/dev/shm", &st), 0);
  ASSERT_GT(int64_t{1354} << 42, static_cast<int64_t>(st.f_blocks * st.f_frsize));
  rpc::Message refused = InitData(*server_, "big", {n, int64_t{1} << 40});
  ExpectError(refused, absl::StatusCode::kResourceExhausted, "not enough shared memory");
  ExpectError(refused, absl::StatusCode::kResourceExhausted, "creating 'node/big'");
  ExpectError(refused, absl::StatusCode::kResourceExhausted, "TiB, have ");
  EXPECT_EQ(shm::ListJobSegments(job_), before);
  rpc::Message list = Call(*server_, rpc::MakeRequest(wire::LIST_DATA));
  for (const wire::DataInfo& d : list.header.data_infos()) EXPECT_NE(d.name(), "node/big");
  // A reasonable tensor is made as usual.
  rpc::Message made = InitData(*server_, "small", {n, 4});
  EXPECT_TRUE(rpc::ResponseStatus(made.header).ok()) << rpc::ResponseStatus(made.header);
  EXPECT_TRUE(made.header.created());
  ExpectServing();
}

TEST_F(RequestLimitsTest, BarriersAreBoundedAndMustAgreeOnTheirSize) {
  // The job has 4 clients: larger barriers can never complete.
  ExpectError(Barrier(*server_, 0, 1 << 30), absl::StatusCode::kInvalidArgument,
              "barrier of 1073741824 clients: num_clients must be 1 to 4");
  ExpectError(Barrier(*server_, 0, 5), absl::StatusCode::kInvalidArgument, "1 to 4");
  ExpectError(Barrier(*server_, 0, 0), absl::StatusCode::kInvalidArgument, "1 to 4");
  // A round of 3 is under way; a client asking for a round of 2 is refused.
  EXPECT_TRUE(Waiting(Barrier(*server_, 1, 3)));
  ExpectError(Barrier(*server_, 2, 2), absl::StatusCode::kInvalidArgument,
              "barrier of 2 clients from client 2 while a barrier of 3 clients is in progress "
              "(1 waiting)");
  // The only waiter may change its mind (a retry replaces its entry).
  EXPECT_TRUE(Waiting(Barrier(*server_, 1, 2)));
  EXPECT_TRUE(Waiting(Barrier(*server_, 2, 2)));  // Completes the round (answered late).
  // A fresh round of another size starts: the table was emptied.
  EXPECT_TRUE(Waiting(Barrier(*server_, 3, 4)));
  // Many requests from the same few clients never grow the table: one
  // entry per client.
  for (int i = 0; i < 1000; ++i) EXPECT_TRUE(Waiting(Barrier(*server_, i % 2, 4)));
  ExpectError(Barrier(*server_, 2, 3), absl::StatusCode::kInvalidArgument,
              "a barrier of 4 clients is in progress (3 waiting)");
  ExpectServing();
}

// Current virtual memory of this process, in bytes.
uint64_t VirtualBytes() {
  std::ifstream in("/proc/self/statm");
  uint64_t pages = 0;
  in >> pages;
  return pages * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

// With no answer limit, an allocation that fails (std::bad_alloc) becomes
// an error answer, not a dead server.
TEST_F(RequestLimitsTest, AllocationFailureIsAnErrorAnswer) {
  std::unique_ptr<KvServer> unlimited =
      Load(std::numeric_limits<size_t>::max(), shm::RandomJobId());
  ASSERT_TRUE(unlimited);
  std::vector<int64_t> ids(200000, book_.NodeRange(0).first);  // 1.07 GiB of rows.
  rpc::Message request = IdsRequest(wire::PULL, ids, "node/feat");
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer reserves terabytes of address space and aborts on a failed "
                  "allocation instead of throwing std::bad_alloc";
#endif
  struct rlimit old {};
  ASSERT_EQ(getrlimit(RLIMIT_AS, &old), 0);
  struct rlimit tight = old;
  tight.rlim_cur = VirtualBytes() + (size_t{512} << 20);
  ASSERT_EQ(setrlimit(RLIMIT_AS, &tight), 0);
  std::optional<rpc::Message> response = unlimited->Handle({"peer", 0}, request);
  ASSERT_EQ(setrlimit(RLIMIT_AS, &old), 0);
  ASSERT_TRUE(response.has_value());
  ExpectError(*response, absl::StatusCode::kResourceExhausted, "out of memory while serving pull");
  rpc::Message again = Pull(*unlimited, owned_);
  ASSERT_TRUE(rpc::ResponseStatus(again.header).ok());
  EXPECT_EQ(std::memcmp(again.arrays[0].blob.data, reference_.arrays[0].blob.data,
                        again.arrays[0].blob.size),
            0);
}

}  // namespace
}  // namespace tessera::kvstore
