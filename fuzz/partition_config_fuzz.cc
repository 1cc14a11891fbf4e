// File: fuzz/partition_config_fuzz.cc
//
// Fuzzes the partition-config reader: the input is "<graph>.json".
// ReadPartitionConfig must fail with a Status or return a config that is
// consistent (K+1 offsets covering num_nodes/num_edges, K parts, a partition
// book for every part) and that survives PartitionConfigToJson and a second
// read unchanged.
#include <cstdint>
#include <string>

#include "fuzz/fuzz_util.h"
#include "tessera/partition/partition_config.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  tessera::fuzz::Quiet();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tessera;
  static const std::string path = fuzz::ScratchFolder() + "/graph.json";
  static const std::string again_path = fuzz::ScratchFolder() + "/again.json";
  fuzz::WriteFile(path, fuzz::AsText(data, size));
  auto config = ReadPartitionConfig(path);
  fuzz::Report("ReadPartitionConfig", config.status());
  if (!config.ok()) return 0;
  const PartitionConfig& c = *config;
  FUZZ_ASSERT(c.num_parts >= 1);
  FUZZ_ASSERT(c.node_offsets.size() == static_cast<size_t>(c.num_parts) + 1);
  FUZZ_ASSERT(c.edge_offsets.size() == static_cast<size_t>(c.num_parts) + 1);
  FUZZ_ASSERT(c.parts.size() == static_cast<size_t>(c.num_parts));
  FUZZ_ASSERT(c.node_offsets.back() == c.num_nodes && c.edge_offsets.back() == c.num_edges);
  for (int p = 0; p < c.num_parts && p < 8; ++p) {
    auto book = c.Book(p);
    FUZZ_ASSERT(book.ok());
    if (book->num_nodes() > 0) {
      int owner = book->NodeOwner(book->num_nodes() - 1);
      FUZZ_ASSERT(owner >= 0 && owner < c.num_parts);
    }
    (void)c.PartGraphDir(p);
  }

  fuzz::WriteFile(again_path, PartitionConfigToJson(c));
  auto again = ReadPartitionConfig(again_path);
  FUZZ_ASSERT(again.ok());
  FUZZ_ASSERT(again->graph_name == c.graph_name && again->num_parts == c.num_parts);
  FUZZ_ASSERT(again->node_offsets == c.node_offsets && again->edge_offsets == c.edge_offsets);
  FUZZ_ASSERT(again->halo_hops == c.halo_hops && again->seed == c.seed);
  FUZZ_ASSERT(again->node_feat_names == c.node_feat_names);
  FUZZ_ASSERT(again->num_trainers_per_machine == c.num_trainers_per_machine);
  return 0;
}
