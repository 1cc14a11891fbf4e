// File: tests/integration/partition_check.h
//
// Tests only: checks a partition written with --return-mapping against the
// npy graph it was made from, edge by edge (mpi_partition_test, and
// cluster_test's runs across two hosts).
#ifndef TESSERA_TESTS_INTEGRATION_PARTITION_CHECK_H_
#define TESSERA_TESTS_INTEGRATION_PARTITION_CHECK_H_

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "src/graph/npy.h"
#include "tessera/partition/load_partition.h"

namespace tessera::testing {

inline std::vector<int64_t> ReadIds(const std::string& path) {
  auto raw = ReadNpy(path);
  EXPECT_TRUE(raw.ok()) << raw.status();
  if (!raw.ok()) return {};
  auto ids = ToInt64Ids(std::move(*raw), path, false);
  EXPECT_TRUE(ids.ok());
  auto span = ids->span<int64_t>();
  return {span.begin(), span.end()};
}

// Checks a partition (written with --return-mapping and one HALO hop)
// against its npy input: contiguous ranges, every edge exactly once in the
// part of its destination, features following their nodes, and the HALO of
// every part (the sources of its in-edges and the destinations of its
// out-edges, with exactly the edges that leave the part).
inline void CheckAgainstInput(const std::string& config_path, const std::string& input) {
  const std::vector<int64_t> src = ReadIds(input + "/src.npy"), dst = ReadIds(input + "/dst.npy");
  auto feat = ReadNpy(input + "/feat.npy");
  ASSERT_TRUE(feat.ok());
  const std::vector<int64_t> orig_nids =
      ReadIds(std::filesystem::path(config_path).parent_path().string() + "/orig_nids.npy");
  const std::vector<int64_t> orig_eids =
      ReadIds(std::filesystem::path(config_path).parent_path().string() + "/orig_eids.npy");
  const int64_t n = feat->rows(), m = static_cast<int64_t>(src.size());
  ASSERT_EQ(static_cast<int64_t>(orig_nids.size()), n);
  ASSERT_EQ(static_cast<int64_t>(orig_eids.size()), m);
  std::vector<int64_t> new_of(n, -1), seen_edge(m, 0);
  for (int64_t v = 0; v < n; ++v) new_of[orig_nids[v]] = v;
  for (int64_t v = 0; v < n; ++v) ASSERT_GE(new_of[v], 0) << "orig_nids is not a permutation";
  auto first = LoadPartition(config_path, 0);
  ASSERT_TRUE(first.ok()) << first.status();
  const auto& offsets = first->config.node_offsets;
  auto part_of = [&](int64_t new_id) {
    return static_cast<int>(std::upper_bound(offsets.begin(), offsets.end(), new_id) -
                            offsets.begin()) -
           1;
  };
  for (int p = 0; p < first->config.num_parts; ++p) {
    auto lp = LoadPartition(config_path, p);
    ASSERT_TRUE(lp.ok()) << lp.status();
    const int64_t a = offsets[p], b = offsets[p + 1];
    auto nid = lp->nids();
    auto indptr = lp->indptrs();
    auto indices = lp->src_locals();
    auto eid = lp->eids();
    auto inner_edge = lp->inner_edge.span<uint8_t>();
    for (int64_t k = 0; k < b - a; ++k) ASSERT_EQ(nid[k], a + k);
    // Features follow their nodes.
    const Array& part_feat = lp->node_data.at("feat");
    ASSERT_EQ(part_feat.rows(), b - a);
    for (int64_t k = 0; k < b - a; ++k) {
      ASSERT_EQ(
          std::memcmp(static_cast<const char*>(part_feat.data()) + k * feat->row_bytes(),
                      static_cast<const char*>(feat->data()) + orig_nids[a + k] * feat->row_bytes(),
                      feat->row_bytes()),
          0);
    }
    // Every stored edge is an input edge; inner ones are exactly the part's
    // in-edges, HALO ones exactly its out-edges to other parts.
    std::set<int64_t> halo_nodes, expected_halo_nodes, halo_edges, expected_halo_edges;
    for (int64_t row = 0; row < lp->num_local_nodes(); ++row) {
      if (row >= b - a) halo_nodes.insert(nid[row]);
      for (int64_t k = indptr[row]; k < indptr[row + 1]; ++k) {
        const int64_t e = orig_eids[eid[k]];
        ASSERT_EQ(orig_nids[nid[indices[k]]], src[e]);
        ASSERT_EQ(orig_nids[nid[row]], dst[e]);
        if (inner_edge[k]) {
          ASSERT_LT(row, b - a);
          ASSERT_TRUE(eid[k] >= first->config.edge_offsets[p] &&
                      eid[k] < first->config.edge_offsets[p + 1]);
          ++seen_edge[e];
          if (part_of(nid[indices[k]]) != p) expected_halo_nodes.insert(nid[indices[k]]);
        } else {
          halo_edges.insert(e);
        }
      }
    }
    for (int64_t e = 0; e < m; ++e) {
      const int64_t u = new_of[src[e]], w = new_of[dst[e]];
      if (part_of(u) == p && part_of(w) != p) {
        expected_halo_edges.insert(e);
        expected_halo_nodes.insert(w);
      }
    }
    EXPECT_EQ(halo_edges, expected_halo_edges) << "part " << p;
    EXPECT_EQ(halo_nodes, expected_halo_nodes) << "part " << p;
  }
  for (int64_t e = 0; e < m; ++e) ASSERT_EQ(seen_edge[e], 1) << "edge " << e;
}

}  // namespace tessera::testing

#endif  // TESSERA_TESTS_INTEGRATION_PARTITION_CHECK_H_
