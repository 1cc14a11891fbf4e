// Heterogeneous partitioning: a hand-drawn typed graph goes through
// PartitionGraph and comes back, every typed edge exactly once with its
// relation, endpoints and data; the typed partition book maps every id both
// ways; a one-type heterograph gives the homogeneous path's bytes.
#include <filesystem>
#include <set>
#include <tuple>

#include "gtest/gtest.h"
#include "src/base/test_util.h"
#include "src/graph/array_test_util.h"
#include "src/graph/npy.h"
#include "src/partition/partition.h"
#include "tessera/partition/load_partition.h"
#include "tessera/partition/partition_config.h"

namespace tessera {
namespace {

using testing::NpyValues;

using testing::ReadAll;
using testing::TempDir;

Array Ids(const std::vector<int64_t>& v) { return Array::From(v); }

// user (4 nodes), item (5), tag (2, featureless); relations
//   user:buys:item, item:bought-by:user (the reverse), user:follows:user,
//   item:has:tag.
// Node arrays: user/age = 10 * per-type id, item/price = per-type id + 0.5,
// item/label; edge array buys/w = per-relation edge id * 2 (float32 [E,2]).
Graph ShopGraph() {
  Graph g;
  g.ntypes = {"user", "item", "tag"};
  g.ntype_offsets = {0, 4, 9, 11};
  g.num_nodes = 11;
  g.etypes = {{"user", "buys", "item"},
              {"item", "bought-by", "user"},
              {"user", "follows", "user"},
              {"item", "has", "tag"}};
  // Per-type edges.
  std::vector<std::pair<int64_t, int64_t>> buys = {{0, 0}, {0, 1}, {1, 1}, {2, 3},
                                                   {3, 4}, {3, 0}, {1, 2}};
  std::vector<std::pair<int64_t, int64_t>> follows = {{0, 1}, {1, 2}, {2, 3}, {3, 0}, {1, 3}};
  std::vector<std::pair<int64_t, int64_t>> has = {{0, 0}, {1, 0}, {2, 1}, {3, 1}, {4, 0}};
  std::vector<int64_t> src, dst;
  g.etype_offsets = {0};
  auto add = [&](const std::vector<std::pair<int64_t, int64_t>>& edges, int s, int d,
                 bool reverse) {
    for (auto [u, v] : edges) {
      if (reverse) std::swap(u, v);
      src.push_back(g.ntype_offsets[s] + u);
      dst.push_back(g.ntype_offsets[d] + v);
    }
    g.etype_offsets.push_back(static_cast<int64_t>(src.size()));
  };
  add(buys, 0, 1, false);
  add(buys, 1, 0, true);
  add(follows, 0, 0, false);
  add(has, 1, 2, false);
  g.src = Ids(src);
  g.dst = Ids(dst);
  g.ntype_data.resize(3);
  g.etype_data.resize(4);
  std::vector<int64_t> age = {0, 10, 20, 30};
  g.ntype_data[0].emplace("age", Ids(age));
  std::vector<float> price = {0.5f, 1.5f, 2.5f, 3.5f, 4.5f};
  g.ntype_data[1].emplace("price", Array::From(price));
  std::vector<int64_t> label = {0, 1, 0, 1, 1};
  g.ntype_data[1].emplace("label", Ids(label));
  Array w = Array::Empty(DType::kFloat32, {7, 2});
  for (int e = 0; e < 7; ++e) {
    w.mutable_span<float>()[2 * e] = 2.0f * e;
    w.mutable_span<float>()[2 * e + 1] = -2.0f * e;
  }
  g.etype_data[0].emplace("w", std::move(w));
  return g;
}

int TypeOfId(const std::vector<int64_t>& offsets, int64_t id) {
  return static_cast<int>(std::upper_bound(offsets.begin() + 1, offsets.end(), id) -
                          offsets.begin()) -
         1;
}

class TypedPartitionTest : public ::testing::TestWithParam<std::tuple<PartMethod, int, int>> {};

TEST_P(TypedPartitionTest, EveryTypedEdgeOnceWithItsTypeEndpointsAndData) {
  auto [method, num_parts, num_hops] = GetParam();
  Graph g = ShopGraph();
  ASSERT_TRUE(g.Validate("shop").ok()) << g.Validate("shop");
  TempDir dir;
  PartitionOptions o;
  o.part_method = method;
  o.num_hops = num_hops;
  o.return_mapping = true;
  o.seed = 7;
  auto result = PartitionGraph(g, "shop", num_parts, dir / "out", o);
  ASSERT_TRUE(result.ok()) << result.status();
  auto config = ReadPartitionConfig(result->config_path);
  ASSERT_TRUE(config.ok()) << config.status();
  ASSERT_TRUE(config->typed());
  EXPECT_EQ(config->layout.ntypes, g.ntypes);
  EXPECT_EQ(config->layout.etypes, g.etypes);
  EXPECT_EQ(config->node_feat_names,
            (std::vector<std::string>{"user/age", "item/label", "item/price"}));
  EXPECT_EQ(config->edge_feat_names, (std::vector<std::string>{"user:buys:item/w"}));

  const std::vector<int64_t> orig_nids = NpyValues(dir / "out/orig_nids.npy");
  const std::vector<int64_t> orig_eids = NpyValues(dir / "out/orig_eids.npy");
  ASSERT_EQ(orig_nids.size(), 11u);
  ASSERT_EQ(orig_eids.size(), static_cast<size_t>(g.num_edges()));
  auto src = g.src_ids();
  auto dst = g.dst_ids();
  std::vector<int> seen(g.num_edges(), 0);
  std::set<int64_t> nodes_seen;
  for (int p = 0; p < num_parts; ++p) {
    auto lp = LoadPartition(result->config_path, p);
    ASSERT_TRUE(lp.ok()) << lp.status();
    const PartitionBook& book = lp->book;
    // Per-type ranges: contiguous blocks in type order filling the part.
    int64_t at = book.NodeRange(p).first;
    for (int t = 0; t < 3; ++t) {
      auto [s, e] = book.NodeTypeRange(t, p);
      EXPECT_EQ(s, at);
      for (int64_t v = s; v < e; ++v) {
        const int64_t orig = orig_nids[v];
        EXPECT_EQ(TypeOfId(g.ntype_offsets, orig), t) << "node " << v;
        auto [type, per] = book.MapToPerNtype(v);
        EXPECT_EQ(type, t);
        EXPECT_EQ(book.MapToHomoNid(t, per), v);
        EXPECT_EQ(book.TypedNodeOwner(t, per), p);
        EXPECT_TRUE(nodes_seen.insert(orig).second);
      }
      at = e;
    }
    EXPECT_EQ(at, book.NodeRange(p).second);
    int64_t eat = book.EdgeRange(p).first;
    for (int r = 0; r < 4; ++r) {
      auto [s, e] = book.EdgeTypeRange(r, p);
      EXPECT_EQ(s, eat);
      for (int64_t k = s; k < e; ++k) {
        EXPECT_EQ(TypeOfId(g.etype_offsets, orig_eids[k]), r) << "edge " << k;
        auto [type, per] = book.MapToPerEtype(k);
        EXPECT_EQ(type, r);
        EXPECT_EQ(book.MapToHomoEid(r, per), k);
      }
      eat = e;
    }
    // The local graph: endpoints, relation (etype.npy) and node types.
    auto nid = lp->nids();
    auto indptr = lp->indptrs();
    auto indices = lp->src_locals();
    auto eid = lp->eids();
    auto inner_edge = lp->inner_edge.span<uint8_t>();
    auto ntype = lp->ntype.span<int16_t>();
    auto etype = lp->etype.span<int32_t>();
    for (int64_t v = 0; v < lp->num_local_nodes(); ++v) {
      EXPECT_EQ(ntype[v], TypeOfId(g.ntype_offsets, orig_nids[nid[v]]));
      int previous_type = -1;
      for (int64_t j = indptr[v]; j < indptr[v + 1]; ++j) {
        const int64_t e = orig_eids[eid[j]];
        EXPECT_EQ(src[e], orig_nids[nid[indices[j]]]);
        EXPECT_EQ(dst[e], orig_nids[nid[v]]);
        EXPECT_EQ(etype[j], TypeOfId(g.etype_offsets, e));
        EXPECT_GE(etype[j], previous_type) << "rows must be sorted by relation";
        previous_type = etype[j];
        if (inner_edge[j]) ++seen[e];
      }
    }
    // Arrays follow their nodes and edges, per type.
    auto age = lp->node_data.at("user/age").span<int64_t>();
    auto [us, ue] = book.NodeTypeRange(0, p);
    ASSERT_EQ(static_cast<int64_t>(age.size()), ue - us);
    for (int64_t v = us; v < ue; ++v) EXPECT_EQ(age[v - us], 10 * orig_nids[v]);
    auto price = lp->node_data.at("item/price").span<float>();
    auto [is, ie] = book.NodeTypeRange(1, p);
    ASSERT_EQ(static_cast<int64_t>(price.size()), ie - is);
    for (int64_t v = is; v < ie; ++v) EXPECT_EQ(price[v - is], orig_nids[v] - 4 + 0.5f);
    auto w = lp->edge_data.at("user:buys:item/w").span<float>();
    auto [bs, be] = book.EdgeTypeRange(0, p);
    ASSERT_EQ(static_cast<int64_t>(w.size()), 2 * (be - bs));
    for (int64_t k = bs; k < be; ++k) {
      EXPECT_EQ(w[2 * (k - bs)], 2.0f * orig_eids[k]);
      EXPECT_EQ(w[2 * (k - bs) + 1], -2.0f * orig_eids[k]);
    }
  }
  EXPECT_EQ(nodes_seen.size(), 11u);
  // Without HALO (num_hops = 0) a part stores only the edges inside it.
  for (int64_t e = 0; e < g.num_edges(); ++e) {
    if (num_hops > 0) EXPECT_EQ(seen[e], 1) << "edge " << e;
    if (num_hops == 0) EXPECT_LE(seen[e], 1) << "edge " << e;
  }
  std::vector<int64_t> sorted = orig_eids;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t e = 0; e < g.num_edges(); ++e) EXPECT_EQ(sorted[e], e);
}

INSTANTIATE_TEST_SUITE_P(Methods, TypedPartitionTest,
                         ::testing::Values(std::tuple{PartMethod::kMetis, 2, 1},
                                           std::tuple{PartMethod::kRandom, 3, 1},
                                           std::tuple{PartMethod::kRandom, 2, 2},
                                           std::tuple{PartMethod::kMetis, 1, 1},
                                           std::tuple{PartMethod::kRandom, 2, 0}));

// Every file below `dir`, relative path -> bytes.
std::map<std::string, std::string> Files(const std::string& dir) {
  std::map<std::string, std::string> files;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    files[std::filesystem::relative(entry.path(), dir).string()] = ReadAll(entry.path().string());
  }
  return files;
}

TEST(TypedPartition, OneTypeHeterographGivesTheHomogeneousBytes) {
  Graph homo;
  homo.num_nodes = 40;
  std::vector<int64_t> src, dst;
  for (int64_t v = 0; v < 40; ++v) {
    for (int64_t d : {1, 3, 7}) {
      src.push_back(v);
      dst.push_back((v + d) % 40);
    }
  }
  homo.src = Ids(src);
  homo.dst = Ids(dst);
  std::vector<int64_t> mask(40);
  for (int v = 0; v < 40; ++v) mask[v] = v % 3 == 0;
  homo.node_data.emplace("train_mask", Ids(mask));
  std::vector<float> w(src.size());
  for (size_t e = 0; e < w.size(); ++e) w[e] = static_cast<float>(e);
  homo.edge_data.emplace("w", Array::From(w));

  for (std::string ntype : {"_N", "paper"}) {
    Graph hetero;
    hetero.num_nodes = 40;
    hetero.src = Ids(src);
    hetero.dst = Ids(dst);
    hetero.ntypes = {ntype};
    hetero.etypes = {{ntype, ntype == "_N" ? "_E" : "cites", ntype}};
    hetero.ntype_offsets = {0, 40};
    hetero.etype_offsets = {0, static_cast<int64_t>(src.size())};
    hetero.ntype_data.resize(1);
    hetero.etype_data.resize(1);
    hetero.ntype_data[0].emplace("train_mask", Ids(mask));
    hetero.etype_data[0].emplace("w", Array::From(w));
    for (int trainers : {1, 2}) {
      TempDir dir;
      PartitionOptions o;
      o.return_mapping = true;
      o.balance_ntypes = "train_mask";
      o.balance_edges = true;
      o.num_trainers_per_machine = trainers;
      auto a = PartitionGraph(homo, "g", 2, dir / "homo", o);
      auto b = PartitionGraph(hetero, "g", 2, dir / "hetero", o);
      ASSERT_TRUE(a.ok()) << a.status();
      ASSERT_TRUE(b.ok()) << b.status();
      auto fa = Files(dir / "homo");
      auto fb = Files(dir / "hetero");
      if (ntype == "_N") {
        EXPECT_EQ(fa, fb);
      } else {
        fa.erase("g.json");
        fb.erase("g.json");
        EXPECT_EQ(fa, fb);
        auto config = ReadPartitionConfig(b->config_path);
        ASSERT_TRUE(config.ok()) << config.status();
        EXPECT_FALSE(config->typed());
        EXPECT_EQ(config->layout.ntypes, std::vector<std::string>{"paper"});
        EXPECT_EQ(config->layout.etypes[0].Canonical(), "paper:cites:paper");
      }
    }
  }
}

// The consuming overload writes the same bytes, and frees the edge list.
// With trainers, every typed edge carries its destination's trainer.
TEST(TypedPartition, ConsumingTheGraphGivesTheSameBytesAndEdgesFollowTheirTrainer) {
  PartitionOptions o;
  o.part_method = PartMethod::kRandom;
  o.num_hops = 2;
  o.return_mapping = true;
  o.num_trainers_per_machine = 2;
  o.seed = 3;
  TempDir dir;
  const Graph g = ShopGraph();
  auto kept = PartitionGraph(g, "shop", 2, dir / "kept", o);
  ASSERT_TRUE(kept.ok()) << kept.status();
  Graph consumed = ShopGraph();
  auto freed = PartitionGraph(std::move(consumed), "shop", 2, dir / "freed", o);
  ASSERT_TRUE(freed.ok()) << freed.status();
  EXPECT_EQ(consumed.num_edges(), 0);  // NOLINT(bugprone-use-after-move): it is the contract.
  auto fa = Files(dir / "kept");
  auto fb = Files(dir / "freed");
  fa.erase("shop.json");
  fb.erase("shop.json");
  EXPECT_EQ(fa, fb);
  EXPECT_EQ(ReadAll(dir / "kept/shop.json"),
            ReadAll(dir / "freed/shop.json"));  // Paths inside are relative.

  const std::vector<int64_t> orig_nids = NpyValues(dir / "kept/orig_nids.npy");
  const std::vector<int64_t> orig_eids = NpyValues(dir / "kept/orig_eids.npy");
  std::vector<int64_t> new_of_old(orig_nids.size());
  for (size_t v = 0; v < orig_nids.size(); ++v) new_of_old[orig_nids[v]] = v;
  auto dst = g.dst_ids();
  for (int p = 0; p < 2; ++p) {
    auto lp = LoadPartition(kept->config_path, p);
    ASSERT_TRUE(lp.ok()) << lp.status();
    const PartitionBook& book = lp->book;
    for (int r = 0; r < 4; ++r) {
      auto edge_trainer = lp->edge_data.at(g.etypes[r].Canonical() + "/trainer_id").span<int64_t>();
      auto [s, e] = book.EdgeTypeRange(r, p);
      ASSERT_EQ(static_cast<int64_t>(edge_trainer.size()), e - s);
      for (int64_t k = s; k < e; ++k) {
        const int64_t d = new_of_old[dst[orig_eids[k]]];
        auto [t, per] = book.MapToPerNtype(d);
        auto node_trainer = lp->node_data.at(g.ntypes[t] + "/trainer_id").span<int64_t>();
        const int64_t at = d - book.NodeTypeRange(t, p).first;
        ASSERT_GE(at, 0);
        EXPECT_EQ(edge_trainer[k - s], node_trainer[at]) << "edge " << k;
        EXPECT_GE(edge_trainer[k - s], 2 * p);
        EXPECT_LT(edge_trainer[k - s], 2 * p + 2);
      }
    }
  }
}

TEST(TypedPartition, MetisBalancesNodeTypesByDefault) {
  // A bipartite-ish graph where types would otherwise cluster: 200 "a"
  // nodes in a ring, 200 "b" nodes each tied to one "a" node.
  Graph g;
  g.ntypes = {"a", "b"};
  g.ntype_offsets = {0, 200, 400};
  g.num_nodes = 400;
  g.etypes = {{"a", "next", "a"}, {"b", "of", "a"}, {"a", "rev-of", "b"}};
  std::vector<int64_t> src, dst;
  for (int v = 0; v < 200; ++v) {
    src.push_back(v);
    dst.push_back((v + 1) % 200);
  }
  for (int v = 0; v < 200; ++v) {
    src.push_back(200 + v);
    dst.push_back(v < 100 ? v : 0);  // Half of the b nodes hang on node 0.
  }
  for (int v = 0; v < 200; ++v) {
    src.push_back(v < 100 ? v : 0);
    dst.push_back(200 + v);
  }
  g.etype_offsets = {0, 200, 400, 600};
  g.src = Ids(src);
  g.dst = Ids(dst);
  g.ntype_data.resize(2);
  g.etype_data.resize(3);
  TempDir dir;
  auto result = PartitionGraph(g, "ab", 4, dir / "out", {});
  ASSERT_TRUE(result.ok()) << result.status();
  auto config = ReadPartitionConfig(result->config_path);
  ASSERT_TRUE(config.ok());
  for (int p = 0; p < 4; ++p) {
    for (int t = 0; t < 2; ++t) {
      // 50 each, within METIS's 3 % tolerance (and a node's rounding).
      EXPECT_NEAR(config->layout.node_counts[p * 2 + t], 50, 3) << "part " << p << " type " << t;
    }
  }
}

TEST(TypedPartition, BadTypedInputIsAClearError) {
  {
    Graph g = ShopGraph();
    g.etypes[3].dst_type = "label";
    Status st = g.Validate("shop");
    EXPECT_THAT(st.message(),
                HasSubstr("relation 'item:has:label' connects node type 'label', which the "
                          "graph does not have"))
        << st;
  }
  {
    Graph g = ShopGraph();
    std::vector<int64_t> short_age = {1, 2};
    g.ntype_data[0].erase("age");
    g.ntype_data[0].emplace("age", Ids(short_age));
    Status st = g.Validate("shop");
    EXPECT_THAT(st.message(),
                HasSubstr("node array 'user/age' is int64[2] but the graph has 4 'user' "
                          "nodes"))
        << st;
  }
  {
    Graph g = ShopGraph();
    g.etype_offsets[1] = 8;  // One "buys" edge now claims to be item -> user.
    Status st = g.Validate("shop");
    EXPECT_THAT(st.message(),
                HasSubstr("of relation 'user:buys:item' does not go from a node of type "
                          "'user' to one of type 'item'"))
        << st;
  }
  {
    Graph g = ShopGraph();
    g.etypes.push_back({"tag", "buys", "user"});
    g.etype_offsets.push_back(g.etype_offsets.back());
    g.etype_data.emplace_back();
    ASSERT_TRUE(g.Validate("shop").ok());
    auto id = g.EdgeTypeId("buys");
    EXPECT_THAT(id.status().message(),
                HasSubstr("edge type 'buys' is ambiguous: it names user:buys:item, tag:buys:user"))
        << id.status();
    EXPECT_EQ(*g.EdgeTypeId("tag:buys:user"), 4);
    EXPECT_EQ(*g.EdgeTypeId("follows"), 2);
    EXPECT_THAT(g.EdgeTypeId("likes").status().message(), HasSubstr("no edge type 'likes'"));
    EXPECT_THAT(g.NodeTypeId("shop").status().message(),
                HasSubstr("no node type 'shop' (the graph has: user, item, tag)"));
  }
  {
    Graph g = ShopGraph();
    TempDir dir;
    PartitionOptions o;
    o.balance_ntypes = "colour";
    auto r = PartitionGraph(g, "shop", 2, dir / "out", o);
    EXPECT_THAT(r.status().message(), HasSubstr("no node array named 'colour' (have: user/age, "
                                                "item/label, item/price)"))
        << r.status();
  }
}

TEST(TypedPartition, ConfigRejectsInconsistentTypes) {
  TempDir dir;
  Graph g = ShopGraph();
  auto result = PartitionGraph(g, "shop", 2, dir / "out", {});
  ASSERT_TRUE(result.ok()) << result.status();
  const std::string good = ReadAll(result->config_path);
  auto expect_error = [&](std::string from, std::string to, std::string message) {
    std::string text = good;
    size_t at = text.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    text.replace(at, from.size(), to);
    testing::WriteAll(dir / "out/bad.json", text);
    auto c = ReadPartitionConfig(dir / "out/bad.json");
    ASSERT_FALSE(c.ok()) << from;
    EXPECT_THAT(c.status().message(), HasSubstr(message)) << c.status();
  };
  expect_error("\"user:buys:item\": 0", "\"user:buys:shop\": 0",
               "relation 'user:buys:shop' names the node type 'shop', which 'ntypes' does not "
               "list");
  expect_error("\"user:buys:item\": 0", "\"buys\": 0", "is not a canonical type 'src:rel:dst'");
  expect_error("\"tag\": 2", "\"tag\": 1", "'ntypes' must number its types 0..2 once each");
  expect_error("\"user/age\"", "\"shop/age\"",
               "node array 'shop/age' does not start with one of the node types");
}

}  // namespace
}  // namespace tessera
