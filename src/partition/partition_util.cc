#include "src/partition/partition_util.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "spdlog/spdlog.h"
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

Status CheckPartitionArguments(const std::string& graph_name, int64_t num_nodes, int64_t num_edges,
                               int num_parts, const PartitionOptions& o, const std::string& input) {
  auto bad = [](auto&&... parts) { return absl::InvalidArgumentError(StrCat(parts...)); };
  if (!SafeName(graph_name)) {
    return bad("graph name '", graph_name, "' must be non-empty and use only letters, digits, ",
               "'_', '-' and '.'");
  }
  if (num_nodes <= 0 || num_edges == 0) {
    return bad(input.empty() ? "" : input + ": ", "the graph is empty (", num_nodes, " nodes, ",
               num_edges, " edges); nothing to partition");
  }
  if (num_parts < 1 || num_parts > num_nodes) {
    return bad("num_parts must be in [1, num_nodes = ", num_nodes, "], got ", num_parts);
  }
  if (o.num_trainers_per_machine < 1 ||
      static_cast<int64_t>(num_parts) * o.num_trainers_per_machine >
          std::min<int64_t>(num_nodes, INT32_MAX)) {
    return bad("num_trainers_per_machine must be >= 1 and num_parts * num_trainers_per_machine ",
               "<= num_nodes = ", num_nodes, " (and < 2^31), got ", o.num_trainers_per_machine);
  }
  if (o.num_hops < 0) return bad("num_hops must be >= 0, got ", o.num_hops);
  if (!(o.coarsening >= 1)) return bad("coarsening must be >= 1, got ", o.coarsening);
  if (o.coarsen_min_arcs < 0) {
    return bad("coarsen_min_arcs must be >= 0, got ", o.coarsen_min_arcs);
  }
  return absl::OkStatus();
}

PartitionConfig BaseConfig(const std::string& graph_name, int64_t num_nodes, int64_t num_edges,
                           int num_parts, const PartitionOptions& o) {
  PartitionConfig config;
  config.graph_name = graph_name;
  config.num_nodes = num_nodes;
  config.num_edges = num_edges;
  config.part_method = o.part_method == PartMethod::kMetis ? "metis" : "random";
  config.num_parts = num_parts;
  config.halo_hops = o.num_hops;
  config.parts = PartFolders(num_parts);
  config.num_trainers_per_machine = o.num_trainers_per_machine;
  config.balance_ntypes = o.balance_ntypes;
  config.balance_edges = o.balance_edges;
  config.seed = o.seed;
  return config;
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

OutputLock::~OutputLock() {
  if (fd_ >= 0) close(fd_);  // Releases the flock.
}

StatusOr<OutputLock> LockOutputFolder(const std::string& out_path) {
  OutputLock lock;
  lock.fd_ = open(out_path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (lock.fd_ >= 0 && flock(lock.fd_, LOCK_EX | LOCK_NB) == 0) return lock;
  if (lock.fd_ >= 0 && errno == EWOULDBLOCK) {
    return absl::FailedPreconditionError(
        StrCat("output folder ", out_path,
               " is being written by another partitioning run; wait for it or use another --out"));
  }
  // A folder this process cannot read, or a file system without flock on
  // folders (NFS): the run goes on, unguarded.
  spdlog::warn(
      "cannot lock output folder {} ({}); a second run writing there at the same time "
      "would not be refused",
      out_path, std::strerror(errno));
  return OutputLock();
}

StatusOr<OutputLock> PrepareOutputFolder(const std::string& out_path,
                                         const std::string& config_path, int num_parts) {
  RETURN_IF_ERROR(Annotate(MakeDirs(out_path), "output folder"));
  ASSIGN_OR_RETURN(OutputLock lock, LockOutputFolder(out_path));
  RETURN_IF_ERROR(CheckNoOtherConfig(out_path, config_path, num_parts));
  RETURN_IF_ERROR(RemoveAll(config_path));
  RETURN_IF_ERROR(Annotate(WriteFileAtomic(out_path + "/.tessera-write-test", ""),
                           "output folder is not writable"));
  RETURN_IF_ERROR(RemoveAll(out_path + "/.tessera-write-test"));
  return lock;
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
