// File: src/checkpoint/export.cc
#include "src/checkpoint/export.h"

#include <stdio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <limits>

#include "fmt/format.h"
#include "spdlog/spdlog.h"
#include "src/checkpoint/format.h"
#include "src/graph/npy.h"
#include "tessera/base/time.h"

namespace tessera::checkpoint {
namespace {

size_t RowBytes(DType dtype, const std::vector<int64_t>& shape) {
  size_t bytes = DTypeSize(dtype);
  for (size_t i = 1; i < shape.size(); ++i) bytes *= static_cast<size_t>(shape[i]);
  return bytes;  // (ReadManifest checked the shape's size.)
}

bool IsOptimizerState(const std::string& key) {
  for (const char* suffix : {".adagrad_sum", ".adam_m", ".adam_v", ".adam_step"}) {
    const std::string s = suffix;
    if (key.size() > s.size() && key.compare(key.size() - s.size(), s.size(), s) == 0) return true;
  }
  return false;
}

bool Wanted(const std::string& key, const ExportOptions& options) {
  if (options.tensors.empty()) return options.optimizer_state || !IsOptimizerState(key);
  for (const std::string& name : options.tensors) {
    if (name == key || name == key.substr(5)) return true;
  }
  return false;
}

// Writes the rows of `tensor` to `path` (a temporary name of the export).
Status WriteExport(const std::string& folder, const Json& tensor,
                   const std::map<std::string, Json>& files, const std::string& path) {
  const std::string key = tensor["key"].get<std::string>();
  const DType dtype = *DTypeNamed(tensor["dtype"].get<std::string>());
  const auto shape = tensor["shape"].get<std::vector<int64_t>>();
  const int64_t num_rows = shape[0];
  // Every shard file is there with its listed size (which the manifest's
  // shape matches) before anything is sized from the shape.
  RETURN_IF_ERROR(CheckShardFiles(folder, tensor, files, /*orig=*/true));
  // The original ids of one node type (relation) are a contiguous block of
  // the input's homogeneous ids: the smallest is the type's offset (0 on a
  // homogeneous graph).
  int64_t offset = num_rows == 0 ? 0 : std::numeric_limits<int64_t>::max();
  for (const Json& shard : tensor["shards"]) {
    RETURN_IF_ERROR(ReadShard(folder, tensor, shard, files, {.rows = false, .orig = true},
                              [&](const ShardChunk& chunk) {
                                for (int64_t i = 0; i < chunk.rows; ++i) {
                                  offset = std::min(offset, chunk.ids[i]);
                                }
                                return absl::OkStatus();
                              }));
  }
  ASSIGN_OR_RETURN(NpyWriter out,
                   NpyWriter::Create(path, dtype, shape, NpyWriter::Mode::kPositional));
  std::vector<bool> seen(static_cast<size_t>(num_rows), false);
  int64_t covered = 0;
  const size_t row_bytes = RowBytes(dtype, shape);
  for (const Json& shard : tensor["shards"]) {
    const std::string name = shard["file"].get<std::string>();
    // In chunks of bounded size; a file changed while it is read fails the
    // export (whose file is then removed).
    RETURN_IF_ERROR(ReadShard(
        folder, tensor, shard, files, {.rows = true, .orig = true}, [&](const ShardChunk& chunk) {
          const int64_t n = chunk.rows;
          const int64_t* ids = chunk.ids;
          // Rows come in runs of consecutive original ids (a partition keeps
          // the input's order within each type): one write per run.
          for (int64_t i = 0; i < n;) {
            const int64_t first = ids[i] - offset;
            int64_t j = i;
            for (; j < n; ++j) {
              const int64_t o = ids[j] - offset;
              if (o != first + (j - i)) break;
              if (o < 0 || o >= num_rows || seen[o]) {
                return absl::DataLossError(fmt::format(
                    "checkpoint {}: row {} of {} has original id {}, outside '{}' ({} rows) or "
                    "seen twice",
                    folder, chunk.first + j, name, ids[j], key, num_rows));
              }
              seen[o] = true;
            }
            RETURN_IF_ERROR(out.WriteRowsAt(first, chunk.data + i * row_bytes, j - i));
            covered += j - i;
            i = j;
          }
          return absl::OkStatus();
        }));
  }
  if (covered != num_rows) {
    return absl::DataLossError(
        fmt::format("checkpoint {}: its shards of '{}' hold {} of its {} rows", folder, key,
                    covered, num_rows));
  }
  return out.Close();
}

// Exports `tensor` to <out_dir>/<stem>.npy: written under a temporary name
// and renamed when complete, so that a failure leaves an earlier export of
// the tensor as it was, and no partial file.
StatusOr<std::string> ExportOne(const std::string& folder, const Json& tensor,
                                const std::map<std::string, Json>& files,
                                const std::string& out_dir) {
  Stopwatch watch;
  const std::string key = tensor["key"].get<std::string>();
  const std::string path = fmt::format("{}/{}.npy", out_dir, FileStem(key));
  const std::string tmp = path + ".tmp";
  Status st = WriteExport(folder, tensor, files, tmp);
  if (st.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) {
    st = ErrnoError(fmt::format("cannot rename {} to {}", tmp, path), errno);
  }
  if (!st.ok()) {
    ::unlink(tmp.c_str());
    return st;
  }
  spdlog::info("export-embeddings: {} [{}] -> {}, {:.2f} s", key,
               fmt::join(tensor["shape"].get<std::vector<int64_t>>(), ", "), path, watch.Seconds());
  return path;
}

}  // namespace

StatusOr<std::vector<std::string>> ExportTensors(const std::string& checkpoint,
                                                 const std::string& out_dir,
                                                 const ExportOptions& options) {
  ASSIGN_OR_RETURN(Json manifest, ReadManifest(checkpoint));
  const std::map<std::string, Json> files = FilesOf(manifest);
  RETURN_IF_ERROR(MakeDirs(out_dir));
  std::vector<std::string> written;
  std::vector<std::string> unmatched = options.tensors;
  for (const Json& tensor : manifest["tensors"]) {
    const std::string key = tensor["key"].get<std::string>();
    if (!Wanted(key, options)) continue;
    std::erase_if(unmatched, [&](const std::string& n) { return n == key || n == key.substr(5); });
    ASSIGN_OR_RETURN(std::string path, ExportOne(checkpoint, tensor, files, out_dir));
    written.push_back(std::move(path));
  }
  if (!unmatched.empty()) {
    return absl::NotFoundError(
        fmt::format("checkpoint {} has no tensor {}", checkpoint, fmt::join(unmatched, ", ")));
  }
  return written;
}

}  // namespace tessera::checkpoint
