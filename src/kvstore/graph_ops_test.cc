// File: src/kvstore/graph_ops_test.cc
//
// Distributed graph operations (sample_neighbors, in_subgraph, find_edges,
// degrees) through KvClient against servers on loopback, compared exactly
// with each part's LocalGraph run on the partition files, and in
// distribution with standalone sampling of a one-part partition.
#include <cmath>
#include <map>
#include <numeric>
#include <set>

#include "gtest/gtest.h"
#include "src/graph/npy.h"
#include "src/kvstore/local_store.h"
#include "src/kvstore/test_cluster.h"

namespace tessera::kvstore {
namespace {

const PartWeights kNoWeights;  // Uniform sampling.

using sampling::EdgeDir;
using sampling::SampledEdges;
using testing::TestCluster;

class GraphOpsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new tessera::testing::TempDir();
    config_ = new std::string(testing::PartitionCora(dir_->path() + "/three", 3));
    for (int p = 0; p < 3; ++p) {
      auto part = LoadPartition(*config_, p);
      ASSERT_TRUE(part.ok()) << part.status();
      auto shared = std::make_shared<const LocalPartition>(std::move(*part));
      parts_.push_back(shared);
      auto graph = sampling::LocalGraph::Create(sampling::PartArraysOf(shared));
      ASSERT_TRUE(graph.ok()) << graph.status();
      graphs_.push_back(*graph);
    }
  }
  static void TearDownTestSuite() {
    parts_.clear();
    graphs_.clear();
    delete config_;
    delete dir_;
  }

  // What the job must answer: each part's own LocalGraph on its seeds.
  static SampledEdges Reference(const std::vector<int64_t>& seeds,
                                const sampling::NeighborOptions& o,
                                const std::vector<std::vector<float>>& weights = {}) {
    return testing::PartsReference(graphs_, seeds, o, weights);
  }

  static tessera::testing::TempDir* dir_;
  static std::string* config_;
  static std::vector<std::shared_ptr<const LocalPartition>> parts_;
  static std::vector<std::shared_ptr<const sampling::LocalGraph>> graphs_;
};
tessera::testing::TempDir* GraphOpsTest::dir_ = nullptr;
std::string* GraphOpsTest::config_ = nullptr;
std::vector<std::shared_ptr<const LocalPartition>> GraphOpsTest::parts_;
std::vector<std::shared_ptr<const sampling::LocalGraph>> GraphOpsTest::graphs_;

TEST_F(GraphOpsTest, DistributedSamplingEqualsEachPartSamplingItsOwnSeeds) {
  TestCluster cluster(*config_, 3, 2);
  std::vector<int64_t> seeds;
  for (int64_t v = 0; v < 2708; v += 7) seeds.push_back((v * 31) % 2708);  // Mixed owners.
  std::vector<int64_t> exclude;
  for (int64_t e = 0; e < 10556; e += 4) exclude.push_back(e);
  for (int machine : {0, 2, -1}) {  // Local part 0, local part 2, all remote.
    auto client = cluster.Connect(10 + machine, machine);
    ASSERT_TRUE(client);
    for (EdgeDir dir : {EdgeDir::kIn, EdgeDir::kOut}) {
      for (int64_t fanout : {int64_t{-1}, int64_t{3}}) {
        for (bool replace : {false, true}) {
          if (fanout < 0 && replace) continue;
          SampleRequest request{
              .fanout = fanout, .dir = dir, .replace = replace, .exclude = exclude, .seed = 11};
          auto got = client->graph().SampleNeighbors(seeds, request);
          ASSERT_TRUE(got.ok()) << got.status();
          SampledEdges want = Reference(seeds, NeighborOptionsOf(request, kNoWeights));
          EXPECT_EQ(got->eid, want.eid) << "machine " << machine << " fanout " << fanout;
          EXPECT_EQ(got->src, want.src);
          EXPECT_EQ(got->dst, want.dst);
        }
      }
    }
  }
}

// More seeds per machine than one request carries: the pieces come back in
// order (seeds may repeat in sample_neighbors; each occurrence is sampled).
TEST_F(GraphOpsTest, LargeRequestsTravelInPiecesAndStayInOrder) {
  TestCluster cluster(*config_, 3, 2);
  std::vector<int64_t> seeds;
  for (int rep = 0; rep < 6; ++rep) {
    for (int64_t v = 0; v < 2708; ++v) seeds.push_back((v * 7 + rep) % 2708);
  }
  auto client = cluster.Connect(3, -1);
  ASSERT_TRUE(client);
  for (EdgeDir dir : {EdgeDir::kIn, EdgeDir::kOut}) {
    SampleRequest request{.fanout = 2, .dir = dir, .seed = 9};
    auto got = client->graph().SampleNeighbors(seeds, request);
    ASSERT_TRUE(got.ok()) << got.status();
    SampledEdges want = Reference(seeds, NeighborOptionsOf(request, kNoWeights));
    EXPECT_EQ(got->eid, want.eid);
    EXPECT_EQ(got->src, want.src);
    EXPECT_EQ(got->dst, want.dst);
  }
}

TEST_F(GraphOpsTest, WeightedSamplingUsesTheEdgeArrayOfEachMachine) {
  TestCluster cluster(*config_, 3, 1);
  auto client = cluster.Connect(1, 1);
  ASSERT_TRUE(client);
  InitSpec spec{.name = "w",
                .dtype = DType::kFloat32,
                .shape = {10556},
                .policy = shm::Policy::kEdge,
                .init = Init::kUniform,
                .a = 0,
                .b = 1,
                .seed = 3};
  ASSERT_TRUE(client->features().InitData(spec).ok());
  // Zero the weights of every third edge: they must never be picked.
  std::vector<int64_t> zeroed;
  for (int64_t e = 0; e < 10556; e += 3) zeroed.push_back(e);
  std::vector<float> zeros(zeroed.size(), 0.0f);
  ASSERT_TRUE(client->features()
                  .Push("edge/w", zeroed, RowsOf<float>(1), zeros.data(), PushMode::kAssign)
                  .ok());
  std::vector<std::vector<float>> weights(3);
  for (int p = 0; p < 3; ++p) {
    std::vector<int64_t> ids;
    for (int64_t e = graphs_[p]->edge_range().first; e < graphs_[p]->edge_range().second; ++e) {
      ids.push_back(e);
    }
    weights[p].resize(ids.size());
    ASSERT_TRUE(
        client->features().PullInto("edge/w", ids, RowsOf<float>(1), weights[p].data()).ok());
  }
  std::vector<int64_t> seeds(2708);
  std::iota(seeds.begin(), seeds.end(), 0);
  SampleRequest request{.fanout = 2, .prob = "w", .seed = 4};
  auto got = client->graph().SampleNeighbors(seeds, request);
  ASSERT_TRUE(got.ok()) << got.status();
  SampledEdges want = Reference(seeds, NeighborOptionsOf(request, kNoWeights), weights);
  EXPECT_EQ(got->eid, want.eid);
  for (int64_t e : got->eid) EXPECT_NE(e % 3, 0) << "zero-weight edge " << e;
  // Bad weights: missing, wrong dtype, out-edges.
  EXPECT_EQ(client->graph().SampleNeighbors(seeds, {.fanout = 2, .prob = "nope"}).status().code(),
            absl::StatusCode::kNotFound);
  ASSERT_TRUE(client->features()
                  .InitData({.name = "iw",
                             .dtype = DType::kInt64,
                             .shape = {10556},
                             .policy = shm::Policy::kEdge})
                  .ok());
  auto int_weights = client->graph().SampleNeighbors(seeds, {.fanout = 2, .prob = "iw"});
  EXPECT_EQ(int_weights.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(int_weights.status().message(), HasSubstr("float32"));
  EXPECT_EQ(client->graph()
                .SampleNeighbors(seeds, {.fanout = 2, .dir = EdgeDir::kOut, .prob = "w"})
                .status()
                .code(),
            absl::StatusCode::kUnimplemented);
}

TEST_F(GraphOpsTest, FindEdgesAndDegreesInCallerOrder) {
  TestCluster cluster(*config_, 3, 1);
  for (int machine : {1, -1}) {
    auto client = cluster.Connect(20 + machine, machine);
    ASSERT_TRUE(client);
    std::vector<int64_t> eids = {10555, 0, 5000, 17, 0, 9000, 3333};
    std::vector<int64_t> src(eids.size()), dst(eids.size());
    ASSERT_TRUE(client->graph().FindEdges(eids, src.data(), dst.data()).ok());
    for (size_t i = 0; i < eids.size(); ++i) {
      int p = client->book().EdgeOwner(eids[i]);
      int64_t s = 0, d = 0;
      ASSERT_TRUE(graphs_[p]->FindEdges(std::vector<int64_t>{eids[i]}, &s, &d).ok());
      EXPECT_EQ(src[i], s);
      EXPECT_EQ(dst[i], d);
    }
    std::vector<int64_t> nids(2708);
    std::iota(nids.rbegin(), nids.rend(), 0);  // Reversed: positions matter.
    for (EdgeDir dir : {EdgeDir::kIn, EdgeDir::kOut}) {
      std::vector<int64_t> degrees(nids.size());
      ASSERT_TRUE(client->graph().Degrees(nids, dir, kAllRelations, degrees.data()).ok());
      int64_t total = 0;
      for (size_t i = 0; i < nids.size(); ++i) {
        int p = client->book().NodeOwner(nids[i]);
        int64_t want = 0;
        auto& g = *graphs_[p];
        ASSERT_TRUE((dir == EdgeDir::kIn ? g.InDegrees(std::vector<int64_t>{nids[i]}, &want)
                                         : g.OutDegrees(std::vector<int64_t>{nids[i]}, &want))
                        .ok());
        EXPECT_EQ(degrees[i], want);
        total += degrees[i];
      }
      EXPECT_EQ(total, 10556);
    }
    // Ids out of range name the operation.
    int64_t x = 0;
    auto bad = client->graph().FindEdges(std::vector<int64_t>{10556}, &x, &x);
    EXPECT_EQ(bad.code(), absl::StatusCode::kOutOfRange);
    EXPECT_THAT(bad.message(), HasSubstr("find_edges")) << bad;
    EXPECT_EQ(client->graph().SampleNeighbors(std::vector<int64_t>{-1}, {}).status().code(),
              absl::StatusCode::kOutOfRange);
    EXPECT_EQ(
        client->graph().SampleNeighbors(std::vector<int64_t>{1}, {.fanout = -2}).status().code(),
        absl::StatusCode::kInvalidArgument);
  }
}

// Bad graph requests straight on the wire: each gets an error answer naming
// the problem, and the server keeps serving.
TEST_F(GraphOpsTest, HostileGraphRequestsGetErrorsAndTheServerGoesOn) {
  TestCluster cluster(*config_, 3, 1);
  auto rpc = rpc::RpcClient::Create({.token = "t",
                                     .curve_secret_key = cluster.key(),
                                     .client_id = 77,
                                     .servers = cluster.endpoints()});
  ASSERT_TRUE(rpc.ok()) << rpc.status();
  auto call = [&](wire::Method method, std::vector<rpc::WireArray> arrays,
                  wire::SampleArgs args = {}) {
    rpc::Message m = rpc::MakeRequest(method);
    *m.header.mutable_sample() = args;
    m.arrays = std::move(arrays);
    return (*rpc)->CallOne(0, std::move(m), Deadline::InSeconds(10)).status();
  };
  auto ids = [](std::vector<int64_t> v) { return rpc::MakeWireArray(std::move(v)); };
  int64_t foreign = graphs_[1]->node_range().first;
  wire::SampleArgs huge;
  huge.set_fanout(int64_t{1} << 40);
  huge.set_replace(true);
  wire::SampleArgs negative;
  negative.set_fanout(-5);
  wire::SampleArgs bad_prob;
  bad_prob.set_fanout(2);
  bad_prob.set_prob("../../etc");
  struct Case {
    wire::Method method;
    std::vector<rpc::WireArray> arrays;
    wire::SampleArgs args;
    const char* says;
  };
  std::vector<Case> cases;
  cases.push_back({wire::SAMPLE, {}, {}, "seeds"});
  cases.push_back({wire::SAMPLE, {ids({foreign})}, {}, "not owned"});
  cases.push_back({wire::SAMPLE, {rpc::MakeWireArray(std::vector<float>{1.0f})}, {}, "int64"});
  cases.push_back({wire::SAMPLE, {ids({0}), ids({5, 1})}, {}, "sorted"});
  cases.push_back({wire::SAMPLE, {ids({0}), ids({1}), ids({2})}, {}, "seeds"});
  cases.push_back({wire::SAMPLE, {ids({0, 1})}, huge, "more than"});
  cases.push_back({wire::SAMPLE, {ids({0})}, negative, "fanout"});
  cases.push_back({wire::SAMPLE, {ids({0})}, bad_prob, "etc"});
  cases.push_back({wire::IN_DEGREES, {ids({foreign})}, {}, "not owned"});
  cases.push_back({wire::OUT_DEGREES, {}, {}, "one array"});
  cases.push_back({wire::FIND_EDGES, {ids({graphs_[2]->edge_range().first})}, {}, "not owned"});
  for (Case& c : cases) {
    Status s = call(c.method, std::move(c.arrays), c.args);
    EXPECT_FALSE(s.ok()) << rpc::MethodName(c.method);
    EXPECT_THAT(s.message(), HasSubstr(c.says)) << s;
  }
  wire::SampleArgs fine;
  fine.set_fanout(2);
  EXPECT_TRUE(call(wire::SAMPLE, {ids({0, 1, 2})}, fine).ok());
}

// A seed repeated in one request (the server samples it once: see
// id_groups_test.cc) gets the same edges at every occurrence, those of a
// request of that seed alone, as when each occurrence was sampled (a seed's
// stream depends only on it).
TEST_F(GraphOpsTest, RepeatedSeedsGetTheEdgesOfTheSeedAlone) {
  TestCluster cluster(*config_, 3, 1);
  auto client = cluster.Connect(0, 0);
  ASSERT_TRUE(client);
  InitSpec spec{
      .name = "w", .shape = {10556}, .policy = shm::Policy::kEdge, .init = Init::kUniform};
  ASSERT_TRUE(client->features().InitData(spec).ok());
  const sampling::LocalGraph& part = *graphs_[0];
  int64_t hub = part.node_range().first;
  std::vector<int64_t> one(1);
  for (int64_t v = part.node_range().first; v < part.node_range().second; ++v) {
    std::vector<int64_t> d(1), h(1);
    one[0] = v;
    ASSERT_TRUE(part.InDegrees(one, d.data()).ok());
    one[0] = hub;
    ASSERT_TRUE(part.InDegrees(one, h.data()).ok());
    if (d[0] > h[0]) hub = v;
  }
  auto rpc = rpc::RpcClient::Create({.token = "t",
                                     .curve_secret_key = cluster.key(),
                                     .client_id = 77,
                                     .servers = cluster.endpoints()});
  ASSERT_TRUE(rpc.ok()) << rpc.status();
  const int64_t other = hub == part.node_range().first ? hub + 1 : part.node_range().first;
  std::vector<int64_t> seeds(200000, hub);
  seeds[1] = other;
  seeds[3] = other;
  rpc::Message m = rpc::MakeRequest(wire::SAMPLE);
  m.header.mutable_sample()->set_fanout(3);
  m.header.mutable_sample()->set_prob("w");
  m.header.mutable_sample()->set_seed(5);
  m.arrays.push_back(rpc::MakeWireArray(seeds));
  auto answer = (*rpc)->CallOne(0, std::move(m), Deadline::InSeconds(60));
  ASSERT_TRUE(answer.ok()) << answer.status();
  ASSERT_EQ(answer->arrays.size(), 3u);
  auto counts = answer->arrays[2].span<int64_t>();
  ASSERT_EQ(counts.size(), seeds.size());
  // The edges of each occurrence, as (neighbour, edge id) pairs.
  const rpc::WireArray& nbrs = answer->arrays[0];
  auto eids = answer->arrays[1];
  auto value = [](const rpc::WireArray& a, size_t i) -> int64_t {
    return a.dtype == DType::kInt32 ? a.span<int32_t>()[i] : a.span<int64_t>()[i];
  };
  std::map<int64_t, std::vector<std::pair<int64_t, int64_t>>> first;
  size_t at = 0;
  for (size_t i = 0; i < seeds.size(); ++i) {
    std::vector<std::pair<int64_t, int64_t>> edges;
    for (int64_t k = 0; k < counts[i]; ++k, ++at)
      edges.push_back({value(nbrs, at), value(eids, at)});
    auto [it, added] = first.try_emplace(seeds[i], edges);
    if (!added) ASSERT_EQ(edges, it->second) << "occurrence " << i << " of seed " << seeds[i];
  }
  EXPECT_EQ(first[hub].size(), 3u);
  // The same edges as a request of each seed alone.
  for (int64_t v : {hub, other}) {
    auto got = client->graph().SampleNeighbors(std::vector<int64_t>{v},
                                               {.fanout = 3, .prob = "w", .seed = 5});
    ASSERT_TRUE(got.ok()) << got.status();
    std::vector<std::pair<int64_t, int64_t>> alone;
    for (size_t k = 0; k < got->size(); ++k) alone.push_back({got->src[k], got->eid[k]});
    EXPECT_EQ(alone, first[v]) << "seed " << v;
  }
}

TEST_F(GraphOpsTest, BarrierMaxReturnsTheLargestValue) {
  TestCluster cluster(*config_, 3, 1);
  auto a = cluster.Connect(0, 0, 2);
  auto b = cluster.Connect(1, 1, 2);
  ASSERT_TRUE(a && b);
  StatusOr<int64_t> from_b = 0;
  std::thread t([&] { from_b = b->job().BarrierMax(17); });
  auto from_a = a->job().BarrierMax(5);
  t.join();
  ASSERT_TRUE(from_a.ok() && from_b.ok()) << from_a.status() << from_b.status();
  EXPECT_EQ(*from_a, 17);
  EXPECT_EQ(*from_b, 17);
}

// Standalone (one part) and distributed (three parts) renumber the graph
// differently, so compare through the original ids: every edge set is the
// same, and sampling one node's in-edges is uniform in both.
TEST_F(GraphOpsTest, StandaloneAndDistributedAgreeInOriginalIds) {
  std::string one = testing::PartitionCora(dir_->path() + "/one", 1);
  auto standalone = LocalKvStore::Open(one);
  ASSERT_TRUE(standalone.ok()) << standalone.status();
  TestCluster cluster(*config_, 3, 1);
  auto client = cluster.Connect(0, 0);
  ASSERT_TRUE(client);
  auto load = [](const std::string& path) { return std::move(*ReadNpy(path)); };
  Array one_nid = load(dir_->path() + "/one/orig_nids.npy");
  Array one_eid = load(dir_->path() + "/one/orig_eids.npy");
  Array three_nid = load(dir_->path() + "/three/orig_nids.npy");
  Array three_eid = load(dir_->path() + "/three/orig_eids.npy");
  // New id of each original node in the three-part numbering.
  std::vector<int64_t> to_three(2708);
  for (int64_t v = 0; v < 2708; ++v) to_three[three_nid.span<int64_t>()[v]] = v;

  std::vector<int64_t> all_one(2708), all_three(2708);
  for (int64_t v = 0; v < 2708; ++v) {
    all_one[v] = v;
    all_three[v] = to_three[one_nid.span<int64_t>()[v]];  // Same nodes, same order.
  }
  for (EdgeDir dir : {EdgeDir::kIn, EdgeDir::kOut}) {
    auto a = (*standalone)->graph().SampleNeighbors(all_one, {.fanout = -1, .dir = dir});
    auto b = client->graph().SampleNeighbors(all_three, {.fanout = -1, .dir = dir});
    ASSERT_TRUE(a.ok() && b.ok());
    std::set<std::tuple<int64_t, int64_t, int64_t>> ea, eb;
    for (size_t i = 0; i < a->size(); ++i) {
      ea.insert({one_nid.span<int64_t>()[a->src[i]], one_nid.span<int64_t>()[a->dst[i]],
                 one_eid.span<int64_t>()[a->eid[i]]});
    }
    for (size_t i = 0; i < b->size(); ++i) {
      eb.insert({three_nid.span<int64_t>()[b->src[i]], three_nid.span<int64_t>()[b->dst[i]],
                 three_eid.span<int64_t>()[b->eid[i]]});
    }
    EXPECT_EQ(ea.size(), 10556u);
    EXPECT_EQ(ea, eb);
  }
  // The highest in-degree node: 3 of its in-edges, 4000 times, in both modes.
  std::vector<int64_t> degrees(2708);
  ASSERT_TRUE(
      (*standalone)->graph().Degrees(all_one, EdgeDir::kIn, kAllRelations, degrees.data()).ok());
  int64_t hub = std::max_element(degrees.begin(), degrees.end()) - degrees.begin();
  int64_t degree = degrees[hub];
  ASSERT_GE(degree, 20);
  for (bool distributed : {false, true}) {
    std::map<int64_t, double> counts;  // By original edge id.
    int64_t seed_node = distributed ? to_three[one_nid.span<int64_t>()[hub]] : hub;
    for (uint64_t seed = 0; seed < 4000; ++seed) {
      auto r = distributed ? client->graph().SampleNeighbors(std::vector<int64_t>{seed_node},
                                                             {.fanout = 3, .seed = seed})
                           : (*standalone)
                                 ->graph()
                                 .SampleNeighbors(std::vector<int64_t>{seed_node},
                                                  {.fanout = 3, .seed = seed});
      ASSERT_TRUE(r.ok());
      ASSERT_EQ(r->size(), 3u);
      for (int64_t e : r->eid) {
        counts[(distributed ? three_eid : one_eid).span<int64_t>()[e]] += 1;
      }
    }
    ASSERT_EQ(static_cast<int64_t>(counts.size()), degree);
    double expected = 4000.0 * 3 / degree, chi2 = 0;
    for (auto [e, c] : counts) chi2 += (c - expected) * (c - expected) / expected;
    double dof = static_cast<double>(degree - 1);
    EXPECT_LT(chi2, dof + 4.4 * std::sqrt(2 * dof)) << (distributed ? "distributed" : "standalone");
  }
}

}  // namespace
}  // namespace tessera::kvstore
