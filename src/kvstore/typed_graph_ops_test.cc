// File: src/kvstore/typed_graph_ops_test.cc
//
// Sampling a heterograph through the KV layer: per-relation fanouts and
// per-relation weights (`prob`) over real servers on loopback (2 machines),
// standalone (LocalKvStore over one part) and in raw requests, on the
// hand-drawn shop graph of src/sampling/typed_test_graph.h:
//
//   users u0..u3, items i0..i3, tags t0, t1
//   [0] user:buys:item   [1] item:bought-by:user (buys reversed)
//   [2] user:follows:user   [3] item:has:tag
//
// Distributed results must equal each part's LocalGraph sampling its own
// seeds, and every (seed, relation) gets what its fanout says, checked
// against the drawn graph in original ids.
#include <algorithm>
#include <limits>
#include <map>
#include <set>

#include "fmt/format.h"
#include "gtest/gtest.h"
#include "src/kvstore/local_store.h"
#include "src/kvstore/test_cluster.h"
#include "src/sampling/typed_test_graph.h"

namespace tessera::kvstore {
namespace {

const PartWeights kNoWeights;  // Uniform sampling.

using sampling::EdgeDir;
using sampling::SampledEdges;
using sampling::typed_test::PartitionedGraph;
using sampling::typed_test::TypedEdge;
using testing::TestCluster;

// (seed's original id, relation) -> what was sampled or what exists.
using Key = std::pair<int64_t, int>;

constexpr const char* kRelations[] = {"user:buys:item", "item:bought-by:user", "user:follows:user",
                                      "item:has:tag"};

// What a job over `pg` must answer (weights: each part's).
SampledEdges Reference(const PartitionedGraph& pg, const std::vector<int64_t>& seeds,
                       const SampleRequest& request,
                       const std::vector<std::vector<float>>& weights = {}) {
  return testing::PartsReference(pg.graphs, seeds, NeighborOptionsOf(request, kNoWeights), weights);
}

class TypedGraphOpsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new tessera::testing::TempDir();
    graph_ = new Graph(sampling::typed_test::ShopGraph());
    for (int parts : {1, 2}) {
      std::string dir = dir_->path() + "/p" + std::to_string(parts);
      auto pg = sampling::typed_test::PartitionAndLoad(*graph_, parts, dir);
      ASSERT_TRUE(pg.ok()) << pg.status();
      (parts == 1 ? one_ : two_) = new PartitionedGraph(std::move(*pg));
      (parts == 1 ? one_config_ : two_config_) = new std::string(dir + "/shop.json");
    }
    ASSERT_EQ(two_->graphs.size(), 2u);
    for (const auto& g : two_->graphs) ASSERT_GT(g->num_owned_nodes(), 0) << "a part is empty";
    for (int64_t e = 0; e < graph_->num_edges(); ++e) {
      TypedEdge edge{graph_->src_ids()[e], graph_->dst_ids()[e], e,
                     sampling::typed_test::RelationOf(*graph_, e)};
      in_[{edge.dst, edge.relation}].insert(edge);
      out_[{edge.src, edge.relation}].insert(edge);
    }
  }
  static void TearDownTestSuite() {
    delete one_;
    delete two_;
    delete one_config_;
    delete two_config_;
    delete graph_;
    delete dir_;
    in_.clear();
    out_.clear();
  }

  // The sampled edges in original ids by (seed, relation); each must be an
  // edge of the drawn graph with the relation the book gives it.
  static std::map<Key, std::vector<TypedEdge>> BySeed(const PartitionedGraph& pg,
                                                      const SampledEdges& got, EdgeDir dir) {
    std::map<Key, std::vector<TypedEdge>> out;
    for (size_t i = 0; i < got.size(); ++i) {
      TypedEdge e = pg.Orig(got.src[i], got.dst[i], got.eid[i]);
      EXPECT_EQ(graph_->src_ids()[e.eid], e.src) << "edge " << e.eid;
      EXPECT_EQ(graph_->dst_ids()[e.eid], e.dst) << "edge " << e.eid;
      EXPECT_EQ(e.relation, sampling::typed_test::RelationOf(*graph_, e.eid)) << "edge " << e.eid;
      out[{dir == EdgeDir::kIn ? e.dst : e.src, e.relation}].push_back(e);
    }
    return out;
  }

  static std::vector<int64_t> AllNodes(const PartitionedGraph& pg) {
    std::vector<int64_t> seeds;  // Mixed owners, not in id order.
    for (int64_t orig : {7, 0, 9, 3, 5, 1, 8, 2, 6, 4}) seeds.push_back(pg.NewNid(orig));
    return seeds;
  }

  static tessera::testing::TempDir* dir_;
  static Graph* graph_;
  static PartitionedGraph *one_, *two_;
  static std::string *one_config_, *two_config_;
  static std::map<Key, std::set<TypedEdge>> in_, out_;
};
tessera::testing::TempDir* TypedGraphOpsTest::dir_ = nullptr;
Graph* TypedGraphOpsTest::graph_ = nullptr;
PartitionedGraph* TypedGraphOpsTest::one_ = nullptr;
PartitionedGraph* TypedGraphOpsTest::two_ = nullptr;
std::string* TypedGraphOpsTest::one_config_ = nullptr;
std::string* TypedGraphOpsTest::two_config_ = nullptr;
std::map<Key, std::set<TypedEdge>> TypedGraphOpsTest::in_;
std::map<Key, std::set<TypedEdge>> TypedGraphOpsTest::out_;

// Two machines, two servers each; the trainer on machine 0, on machine 1, or
// on neither (every seed remote). In- and out-edges, with and without
// replacement, fanouts 0 and -1 among them.
TEST_F(TypedGraphOpsTest, PerRelationFanoutsOverTwoMachinesEqualTheLocalReference) {
  TestCluster cluster(*two_config_, 2, 2);
  const std::vector<int64_t> seeds = AllNodes(*two_);
  const std::vector<std::vector<int64_t>> fanout_lists = {
      {2, 1, 0, -1}, {-1, 0, 1, 2}, {1, 1, 1, 1}, {0, 0, 0, 0}, {-1, -1, -1, -1}};
  for (int machine : {0, 1, -1}) {
    auto client = cluster.Connect(5 + machine, machine);
    ASSERT_TRUE(client);
    for (EdgeDir dir : {EdgeDir::kIn, EdgeDir::kOut}) {
      for (const std::vector<int64_t>& fanouts : fanout_lists) {
        for (bool replace : {false, true}) {
          for (uint64_t seed : {3u, 8u}) {
            SampleRequest request{
                .etype_fanouts = fanouts, .dir = dir, .replace = replace, .seed = seed};
            auto got = client->graph().SampleNeighbors(seeds, request);
            ASSERT_TRUE(got.ok()) << got.status();
            SampledEdges want = Reference(*two_, seeds, request);
            std::string what = ::testing::PrintToString(fanouts) + " machine " +
                               std::to_string(machine) + (replace ? " replace" : "");
            EXPECT_EQ(got->eid, want.eid) << what;
            EXPECT_EQ(got->src, want.src) << what;
            EXPECT_EQ(got->dst, want.dst) << what;
            // Each (seed, relation) got what its fanout says.
            std::map<Key, std::vector<TypedEdge>> by_seed = BySeed(*two_, *got, dir);
            const auto& truth = dir == EdgeDir::kIn ? in_ : out_;
            for (const auto& [key, edges] : by_seed) {
              EXPECT_TRUE(truth.count(key)) << "edges for a relation the node lacks " << what;
            }
            for (const auto& [key, all] : truth) {
              int64_t degree = static_cast<int64_t>(all.size());
              int64_t fanout = fanouts[key.second];
              const std::vector<TypedEdge>& edges = by_seed[key];
              for (const TypedEdge& e : edges) EXPECT_TRUE(all.count(e)) << "not its edge";
              std::set<TypedEdge> distinct(edges.begin(), edges.end());
              int64_t n = static_cast<int64_t>(edges.size());
              if (fanout == -1) {
                EXPECT_EQ(distinct, all) << what;
                EXPECT_EQ(n, degree) << what;
              } else if (replace) {
                EXPECT_EQ(n, degree > 0 ? fanout : 0) << what;
              } else {
                EXPECT_EQ(n, std::min(fanout, degree)) << what << " node " << key.first;
                EXPECT_EQ(distinct.size(), edges.size()) << "repeated edge " << what;
              }
            }
          }
        }
      }
    }
    // An int fanout keeps its meaning: a total over all of a seed's edges.
    SampleRequest single{.fanout = 2, .seed = 5};
    auto got = client->graph().SampleNeighbors(seeds, single);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(got->eid, Reference(*two_, seeds, single).eid);
  }
}

// Per-relation degrees are counted where the nodes live: over two machines
// (the trainer on one or on neither) and standalone, every node's in- and
// out-degree of every relation is its number of input edges of it; a bad
// relation id is an error, from the client and straight on the wire.
TEST_F(TypedGraphOpsTest, PerRelationDegreesCountTheInputEdges) {
  TestCluster cluster(*two_config_, 2, 2);
  auto standalone = LocalKvStore::Open(*one_config_);
  ASSERT_TRUE(standalone.ok()) << standalone.status();
  auto near = cluster.Connect(3, 0), remote = cluster.Connect(4, -1);
  ASSERT_TRUE(near && remote);
  struct Case {
    Services* store;
    const PartitionedGraph* pg;
  };
  for (Case c : {Case{near.get(), two_}, Case{remote.get(), two_}, Case{standalone->get(), one_}}) {
    std::vector<int64_t> nodes = AllNodes(*c.pg);
    nodes.push_back(nodes[2]);  // Repeats are answered twice.
    for (EdgeDir dir : {EdgeDir::kIn, EdgeDir::kOut}) {
      std::vector<int64_t> total(nodes.size(), 0), all(nodes.size());
      for (int r = 0; r < 4; ++r) {
        std::vector<int64_t> got(nodes.size(), -1);
        ASSERT_TRUE(c.store->graph().Degrees(nodes, dir, r, got.data()).ok());
        for (size_t i = 0; i < nodes.size(); ++i) {
          const Key key{c.pg->orig_nid[nodes[i]], r};
          const auto& edges = dir == EdgeDir::kIn ? in_ : out_;
          const int64_t want = edges.count(key) ? static_cast<int64_t>(edges.at(key).size()) : 0;
          EXPECT_EQ(got[i], want) << "node " << key.first << " relation " << r;
          total[i] += got[i];
        }
      }
      ASSERT_TRUE(c.store->graph().Degrees(nodes, dir, kAllRelations, all.data()).ok());
      EXPECT_EQ(all, total);
    }
    for (int bad : {4, -2}) {
      std::vector<int64_t> out(1);
      Status s =
          c.store->graph().Degrees(std::vector<int64_t>{nodes[0]}, EdgeDir::kIn, bad, out.data());
      EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
      EXPECT_THAT(s.message(), HasSubstr(fmt::format("relation {} is not one of the", bad))) << s;
    }
  }
  auto rpc = rpc::RpcClient::Create({.token = "t",
                                     .curve_secret_key = cluster.key(),
                                     .client_id = 78,
                                     .servers = cluster.endpoints()});
  ASSERT_TRUE(rpc.ok()) << rpc.status();
  const int64_t owned = two_->graphs[0]->node_range().first;  // Machine 0's node.
  for (int bad : {4, -1, 1 << 30}) {
    rpc::Message m = rpc::MakeRequest(wire::OUT_DEGREES);
    m.header.mutable_degree()->set_etype(bad);
    m.arrays.push_back(rpc::MakeWireArray(std::vector<int64_t>{owned}));
    auto s = (*rpc)->CallOne(0, std::move(m), Deadline::InSeconds(10)).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  }
  rpc::Message m = rpc::MakeRequest(wire::IN_DEGREES);
  m.header.mutable_degree()->set_etype(0);
  m.arrays.push_back(rpc::MakeWireArray(std::vector<int64_t>{owned}));
  auto fine = (*rpc)->CallOne(0, std::move(m), Deadline::InSeconds(10));
  ASSERT_TRUE(fine.ok()) << fine.status();  // Still serving.
}

// A wrong count or a fanout below -1 is refused with the same words by the
// client, standalone, and a server asked directly.
TEST_F(TypedGraphOpsTest, BadPerRelationFanoutsAreNamedErrors) {
  const std::string count_error =
      "3 per-relation fanouts for a graph of 4 relations (user:buys:item, item:bought-by:user, "
      "user:follows:user, item:has:tag)";
  const std::string value_error = "fanout -2 of relation item:bought-by:user is invalid";
  auto expect = [](const Status& s, const std::string& says) {
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_THAT(s.message(), HasSubstr(says)) << s;
  };
  TestCluster cluster(*two_config_, 2, 1);
  auto standalone = LocalKvStore::Open(*one_config_);
  ASSERT_TRUE(standalone.ok()) << standalone.status();
  auto client = cluster.Connect(1, 0);
  ASSERT_TRUE(client);
  for (Services* store :
       {static_cast<Services*>(client.get()), static_cast<Services*>(standalone->get())}) {
    std::vector<int64_t> seeds = {0, 1};
    expect(store->graph().SampleNeighbors(seeds, {.etype_fanouts = {1, 2, 3}}).status(),
           count_error);
    expect(store->graph().SampleNeighbors(seeds, {.etype_fanouts = {1, -2, 3, 4}}).status(),
           value_error);
    expect(store->graph().SampleNeighbors(seeds, {.etype_fanouts = {1, 2, 3, 4, 5}}).status(),
           "5 per-relation fanouts for a graph of 4 relations");
  }

  // Straight on the wire: errors, and the server goes on serving.
  auto rpc = rpc::RpcClient::Create({.token = "t",
                                     .curve_secret_key = cluster.key(),
                                     .client_id = 77,
                                     .servers = cluster.endpoints()});
  ASSERT_TRUE(rpc.ok()) << rpc.status();
  const int64_t owned = two_->graphs[0]->node_range().first;  // Machine 0's node.
  auto call = [&](std::vector<int64_t> fanouts, bool replace = false, std::string prob = "") {
    rpc::Message m = rpc::MakeRequest(wire::SAMPLE);
    wire::SampleArgs* args = m.header.mutable_sample();
    args->set_fanout(-1);
    args->set_replace(replace);
    args->set_prob(prob);
    for (int64_t f : fanouts) args->add_etype_fanouts(f);
    m.arrays.push_back(rpc::MakeWireArray(std::vector<int64_t>{owned, owned}));
    return (*rpc)->CallOne(0, std::move(m), Deadline::InSeconds(10));
  };
  expect(call({1, 2, 3}).status(), count_error);
  expect(call({1, -2, 3, 4}).status(), value_error);
  expect(call(std::vector<int64_t>(5000, 1)).status(),
         "5000 per-relation fanouts for a graph of 4 relations");
  // Fanouts whose sum overflows: bounded without wrapping, and refused.
  const int64_t max = std::numeric_limits<int64_t>::max();
  for (std::vector<int64_t> absurd : {std::vector<int64_t>{max, max, max, max},
                                      std::vector<int64_t>{-1, int64_t{1} << 40, 0, 0}}) {
    auto s = call(absurd, /*replace=*/true).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
    EXPECT_THAT(s.message(), HasSubstr("sample of 2 seeds with per-relation fanouts [")) << s;
  }
  // A weights name some sampled relation lacks.
  auto missing = call({1, 1, 1, 1}, false, "nope").status();
  EXPECT_EQ(missing.code(), absl::StatusCode::kNotFound) << missing;
  EXPECT_THAT(missing.message(), HasSubstr("relation user:buys:item has no edge array "
                                           "'user:buys:item/nope'"))
      << missing;
  auto fine = call({2, 0, 1, -1});
  ASSERT_TRUE(fine.ok()) << fine.status();
  auto none = call({0, 0, 0, 0}, false, "nope");  // No relation sampled: no weights read.
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(none->arrays.at(0).rows(), 0);
}

// Per-relation weights "<relation>/p": buys all zero, follows positive only
// on per-type ids {1, 4, 6}, bought-by and has positive everywhere.
constexpr int64_t kWeighted[] = {1, 4, 6};

Status MakeWeights(Services& store) {
  const PartitionBook& book = store.book();
  for (int r = 0; r < 4; ++r) {
    InitSpec spec{.name = std::string(kRelations[r]) + "/p",
                  .dtype = DType::kFloat32,
                  .shape = {book.NumEdgesOfType(r)},
                  .policy = shm::Policy::kEdge,
                  .init = r == 1 || r == 3 ? Init::kUniform : Init::kZeros,
                  .a = 0.5,
                  .b = 2,
                  .seed = 7};
    RETURN_IF_ERROR(store.features().InitData(spec).status());
  }
  std::vector<int64_t> ids(std::begin(kWeighted), std::end(kWeighted));
  std::vector<float> ones(ids.size(), 1.0f);
  RETURN_IF_ERROR(store.features().Push("edge/user:follows:user/p", ids, RowsOf<float>(1),
                                        ones.data(), PushMode::kAssign));
  // "q": every relation but follows.
  for (int r : {0, 1, 3}) {
    InitSpec spec{.name = std::string(kRelations[r]) + "/q",
                  .dtype = DType::kFloat32,
                  .shape = {book.NumEdgesOfType(r)},
                  .policy = shm::Policy::kEdge,
                  .init = Init::kUniform,
                  .a = 1,
                  .b = 2};
    RETURN_IF_ERROR(store.features().InitData(spec).status());
  }
  return absl::OkStatus();
}

// Each part's weights of `prob` as the reference sampler takes them: the
// rows of each relation's array, pulled through the store, in relation order.
std::vector<std::vector<float>> PartWeightsFrom(Services& store, int parts,
                                                const std::string& prob) {
  const PartitionBook& book = store.book();
  std::vector<std::vector<float>> weights(parts);
  for (int p = 0; p < parts; ++p) {
    for (int r = 0; r < book.num_etypes(); ++r) {
      auto [begin, end] = IdRange(book, shm::Policy::kEdge, r, p);
      std::vector<int64_t> ids;
      for (int64_t e = begin; e < end; ++e) ids.push_back(e);
      std::vector<float> rows(ids.size());
      Status s = store.features().PullInto("edge/" + std::string(kRelations[r]) + "/" + prob, ids,
                                           RowsOf<float>(1), rows.data());
      EXPECT_TRUE(s.ok()) << s;
      weights[p].insert(weights[p].end(), rows.begin(), rows.end());
    }
  }
  return weights;
}

// Checks typed `prob` sampling on `store` (a job over `pg`): zero-weight
// edges never come, the rest fill each fanout, results equal the reference,
// and a relation without the array is an error unless its fanout is 0.
void CheckTypedProb(Services& store, const PartitionedGraph& pg, const Graph& graph,
                    const std::vector<int64_t>& seeds,
                    const std::vector<std::vector<float>>& weights, const std::string& what) {
  const PartitionBook& book = store.book();
  // Positive in-edges per (seed's original id, relation).
  std::map<Key, int64_t> positive;
  for (int64_t e = 0; e < book.num_edges(); ++e) {
    auto [r, id] = book.MapToPerEtype(e);
    bool weighted = r == 1 || r == 3 ||
                    (r == 2 && std::find(std::begin(kWeighted), std::end(kWeighted), id) !=
                                   std::end(kWeighted));
    if (weighted) ++positive[{graph.dst_ids()[pg.orig_eid[e]], r}];
  }
  int64_t users = 0, tags = 0, followed = 0;  // Seeds with positive in-edges per relation.
  for (const auto& [key, n] : positive) {
    users += key.second == 1;
    followed += key.second == 2;
    tags += key.second == 3;
  }
  ASSERT_EQ(users, 4);
  ASSERT_EQ(tags, 2);
  ASSERT_GE(followed, 1);
  for (bool replace : {false, true}) {
    for (uint64_t seed : {1u, 2u, 3u}) {
      SampleRequest request{
          .etype_fanouts = {2, 2, 2, 2}, .replace = replace, .prob = "p", .seed = seed};
      auto got = store.graph().SampleNeighbors(seeds, request);
      ASSERT_TRUE(got.ok()) << got.status() << " " << what;
      std::map<Key, int64_t> count;
      for (size_t i = 0; i < got->size(); ++i) {
        auto [r, id] = book.MapToPerEtype(got->eid[i]);
        EXPECT_NE(r, 0) << "an edge of the all-zero relation " << what;
        if (r == 2) {
          EXPECT_NE(std::find(std::begin(kWeighted), std::end(kWeighted), id), std::end(kWeighted))
              << "zero-weight follows edge " << id << " " << what;
        }
        ++count[{pg.orig_nid[got->dst[i]], r}];
      }
      for (const auto& [key, n] : positive) {
        EXPECT_EQ(count[key], replace ? 2 : std::min<int64_t>(2, n))
            << what << " node " << key.first << " relation " << key.second;
      }
      EXPECT_EQ(got->eid, Reference(pg, seeds, request, weights).eid) << what;
    }
  }
  // One fanout over every relation: the weights still decide.
  auto single = store.graph().SampleNeighbors(seeds, {.fanout = 3, .prob = "p", .seed = 4});
  ASSERT_TRUE(single.ok()) << single.status() << " " << what;
  for (int64_t e : single->eid) EXPECT_NE(book.MapToPerEtype(e).first, 0) << what;
  // "q" lacks follows: an error naming it, unless follows is not sampled.
  for (SampleRequest bad : {SampleRequest{.etype_fanouts = {1, 1, 1, 1}, .prob = "q"},
                            SampleRequest{.fanout = 2, .prob = "q"}}) {
    Status s = store.graph().SampleNeighbors(seeds, bad).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s << " " << what;
    EXPECT_THAT(s.message(), HasSubstr("relation user:follows:user has no edge array "
                                       "'user:follows:user/q'"))
        << s;
  }
  auto skipped = store.graph().SampleNeighbors(seeds, {.etype_fanouts = {1, 1, 0, 1}, .prob = "q"});
  ASSERT_TRUE(skipped.ok()) << skipped.status() << " " << what;
  EXPECT_FALSE(skipped->eid.empty());
  for (int64_t e : skipped->eid) EXPECT_NE(book.MapToPerEtype(e).first, 2) << what;
}

// A relation's array of the wrong dtype is named (run last: it gives
// follows a "q").
void CheckWrongDtype(Services& store, const std::vector<int64_t>& seeds, const std::string& what) {
  const PartitionBook& book = store.book();
  ASSERT_TRUE(store.features()
                  .InitData({.name = "user:follows:user/q",
                             .dtype = DType::kInt64,
                             .shape = {book.NumEdgesOfType(2)},
                             .policy = shm::Policy::kEdge})
                  .ok())
      << what;
  Status wrong =
      store.graph().SampleNeighbors(seeds, {.etype_fanouts = {1, 1, 1, 1}, .prob = "q"}).status();
  EXPECT_EQ(wrong.code(), absl::StatusCode::kInvalidArgument) << wrong << " " << what;
  EXPECT_THAT(wrong.message(), HasSubstr("'edge/user:follows:user/q' must be float32"))
      << wrong << " " << what;
}

// Per-relation weights on two machines (the trainer on machine 0, or on
// neither: the servers assemble them) and standalone.
TEST_F(TypedGraphOpsTest, TypedProbReadsEachRelationsOwnWeights) {
  {
    TestCluster cluster(*two_config_, 2, 1);
    auto writer = cluster.Connect(0, 0);
    ASSERT_TRUE(writer);
    ASSERT_TRUE(MakeWeights(*writer).ok());
    std::vector<std::vector<float>> weights = PartWeightsFrom(*writer, 2, "p");
    for (int machine : {0, -1}) {
      auto client = cluster.Connect(3 + machine, machine);
      ASSERT_TRUE(client);
      CheckTypedProb(*client, *two_, *graph_, AllNodes(*two_), weights,
                     "machine " + std::to_string(machine));
    }
    CheckWrongDtype(*writer, AllNodes(*two_), "distributed");
  }
  auto standalone = LocalKvStore::Open(*one_config_);
  ASSERT_TRUE(standalone.ok()) << standalone.status();
  Services& store = **standalone;
  ASSERT_TRUE(MakeWeights(store).ok());
  CheckTypedProb(store, *one_, *graph_, AllNodes(*one_), PartWeightsFrom(store, 1, "p"),
                 "standalone");
  CheckWrongDtype(store, AllNodes(*one_), "standalone");
}

// The partition's own per-relation arrays "w" (original edge id % 3), read
// from the part files by the servers and by the standalone store.
TEST_F(TypedGraphOpsTest, TypedProbFromThePartitionFiles) {
  TestCluster cluster(*two_config_, 2, 1);
  auto client = cluster.Connect(0, 1);
  ASSERT_TRUE(client);
  auto standalone = LocalKvStore::Open(*one_config_);
  ASSERT_TRUE(standalone.ok()) << standalone.status();
  struct Job {
    Services* store;
    const PartitionedGraph* pg;
  };
  for (Job job : {Job{client.get(), two_}, Job{standalone->get(), one_}}) {
    std::vector<std::vector<float>> weights;
    for (size_t p = 0; p < job.pg->parts.size(); ++p) {
      weights.push_back(job.pg->Weights(static_cast<int>(p)));
    }
    std::vector<int64_t> seeds = AllNodes(*job.pg);
    for (SampleRequest request : {SampleRequest{.etype_fanouts = {2, 1, -1, 2}, .prob = "w"},
                                  SampleRequest{.fanout = 3, .prob = "w", .seed = 2}}) {
      auto got = job.store->graph().SampleNeighbors(seeds, request);
      ASSERT_TRUE(got.ok()) << got.status();
      for (size_t i = 0; i < got->size(); ++i) {
        TypedEdge e = job.pg->Orig(got->src[i], got->dst[i], got->eid[i]);
        // Every edge of relation 2 (fanout -1), otherwise never a zero weight.
        if (request.etype_fanouts.empty() || e.relation != 2) {
          EXPECT_NE(e.eid % 3, 0) << "zero-weight edge " << e.eid;
        }
      }
      EXPECT_EQ(got->eid, Reference(*job.pg, seeds, request, weights).eid);
    }
  }
}

}  // namespace
}  // namespace tessera::kvstore
