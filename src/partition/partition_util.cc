#include "src/partition/partition_util.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "src/base/random.h"
#include "tessera/base/file.h"
#include "tessera/base/strings.h"
#include "tessera/partition/partition_config.h"

namespace tessera {

bool SafeName(const std::string& name) {
  if (name.empty() || name == "." || name == "..") return false;
  return std::all_of(name.begin(), name.end(), [](char ch) {
    return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '-' || ch == '.';
  });
}

std::vector<PartitionConfig::PartFiles> PartFolders(int num_parts) {
  std::vector<PartitionConfig::PartFiles> parts;
  for (int p = 0; p < num_parts; ++p) {
    parts.push_back({StrCat("part", p, "/graph"), StrCat("part", p, "/node_feat"),
                     StrCat("part", p, "/edge_feat")});
  }
  return parts;
}

namespace {

constexpr uint64_t kRandomPartStream = 101;

Status CheckNoOtherConfig(const std::string& out_path, const std::string& config_path,
                          int num_parts) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(out_path, ec)) {
    const std::string path = entry.path().string();
    if (entry.path().extension() != ".json" || path == config_path) continue;
    auto other = ReadPartitionConfig(path);
    if (!other.ok()) continue;  // Not a partition config.
    for (const auto& files : other->parts) {
      for (int p = 0; p < num_parts; ++p) {
        if (files.part_graph.rfind(StrCat("part", p, "/"), 0) == 0) {
          return absl::FailedPreconditionError(
              StrCat("output folder ", out_path, " already holds the partition ", path,
                     ", whose files this run would overwrite; use another --out or remove it"));
        }
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

Status PrepareOutputFolder(const std::string& out_path, const std::string& config_path,
                           int num_parts) {
  RETURN_IF_ERROR(Annotate(MakeDirs(out_path), "output folder"));
  RETURN_IF_ERROR(CheckNoOtherConfig(out_path, config_path, num_parts));
  RETURN_IF_ERROR(RemoveAll(config_path));
  RETURN_IF_ERROR(Annotate(WriteFileAtomic(out_path + "/.tessera-write-test", ""),
                           "output folder is not writable"));
  return RemoveAll(out_path + "/.tessera-write-test");
}

std::vector<int32_t> RandomParts(uint64_t seed, int64_t begin, int64_t end, int num_parts) {
  std::vector<int32_t> parts(end - begin, 0);
  if (num_parts == 1) return parts;
  Rng rng(seed, kRandomPartStream);
  for (int64_t i = 0; i < begin; ++i) rng.Next();  // One Next() per draw.
  for (int32_t& p : parts) p = static_cast<int32_t>(rng.Below(num_parts));
  return parts;
}

}  // namespace tessera
