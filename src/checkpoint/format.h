// File: src/checkpoint/format.h
//
// The files of a checkpoint folder (docs/checkpoint.md), without LibTorch:
// the manifest, files checksummed as they are written or verified as they
// are read, finding the newest complete checkpoint and pruning old ones.
// Used by tessera::dist's save and restore and by `tessera
// export-embeddings`.
#ifndef TESSERA_SRC_CHECKPOINT_FORMAT_H_
#define TESSERA_SRC_CHECKPOINT_FORMAT_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "nlohmann/json.hpp"
#include "tessera/base/dtype.h"
#include "tessera/base/file.h"
#include "tessera/base/status.h"

namespace tessera::checkpoint {

// The largest row a checkpoint's tensor may have (1 GiB): readers hold a
// row at a time, and a manifest is refused beyond this.
inline constexpr uint64_t kMaxRowBytes = uint64_t{1} << 30;

inline constexpr char kManifest[] = "manifest.json";
// In every checkpoint folder from the start of its save: what pruning may remove.
inline constexpr char kMarker[] = ".tessera-checkpoint";
inline constexpr char kFormat[] = "tessera-checkpoint";
inline constexpr int kFormatVersion = 1;
// A reader refuses larger manifests (before reading them) and deeper JSON.
inline constexpr uint64_t kMaxManifestBytes = uint64_t{64} << 20;
inline constexpr int kMaxJsonDepth = 64;

using Json = nlohmann::json;

std::string Hex(uint32_t crc);
std::optional<DType> DTypeNamed(std::string_view name);
// A tensor key as a file name stem: "node/paper/emb" -> "node~paper~emb".
// One-to-one: a '~' of the key becomes "%7E" and a '%' "%25".
std::string FileStem(const std::string& key);
// Whether `name` (from a manifest, or to be listed in one) names a file
// inside the checkpoint folder: relative, no "..", no NUL.
bool IsFileName(std::string_view name);

// `text` parsed as JSON nested at most kMaxJsonDepth deep (deeper values
// would overflow the stack of json's recursive copy and dump); the error
// starts with `what`.
StatusOr<Json> ParseJson(std::string_view text, const std::string& what);

// The manifest of the complete checkpoint in `folder`, checked for every
// field a reader uses: types, sizes, names, the shards tiling each tensor's
// rows and listed in "files" with the bytes their rows take. Errors name
// the folder.
StatusOr<Json> ReadManifest(const std::string& folder);
// The checks of ReadManifest on the text of a manifest (its size, depth,
// JSON and contents): a save runs them on the manifest it is about to
// write, so that it never writes one its readers refuse. Errors (DataLoss)
// say only what is wrong.
StatusOr<Json> ParseManifest(std::string_view text);
// {path: entry} of the manifest's "files".
std::map<std::string, Json> FilesOf(const Json& manifest);
// Whether the shard files of `tensor` (and their original ids, with `orig`)
// are on disk with the sizes the manifest lists: checked before a buffer
// is sized from the tensor's shape.
Status CheckShardFiles(const std::string& folder, const Json& tensor,
                       const std::map<std::string, Json>& files, bool orig);

// Complete checkpoints among the folders of `dir`, newest (highest step) first.
std::vector<std::pair<int64_t, std::string>> CompleteCheckpoints(const std::string& dir);
// Keeps the newest `keep` of the rotating checkpoints (saved with keep) among
// the folders of `dir` and removes the others, and the folders of saves that
// never finished (never `current`). Links are not followed; only folders with
// the marker are touched; failures are logged.
void Prune(const std::string& dir, int keep, const std::string& current);

// A (small) file of the checkpoint, read into memory once; its size and
// the CRC-32C of exactly these bytes are checked against the manifest's
// entry (`files`: FilesOf), so a file changed meanwhile is never used
// unchecked. For the dense and trainer files; shards are read by ReadShard.
StatusOr<std::string> VerifiedFile(const std::string& folder, const std::string& name,
                                   const std::map<std::string, Json>& files);

// Shards are read in chunks of about this many bytes (rows and their
// original ids together, at least one row): a restore or an export holds
// one chunk of a shard in memory, never the whole file.
inline constexpr size_t kShardChunkBytes = size_t{16} << 20;
size_t ShardChunkBytes();
// Tests read in smaller chunks (0: kShardChunkBytes again).
void SetShardChunkBytesForTesting(size_t bytes);

// Consecutive rows of a shard, as ReadShard hands them out.
struct ShardChunk {
  int64_t first = 0;  // The index in the shard of the chunk's first row.
  int64_t rows = 0;
  const uint8_t* data = nullptr;  // rows x the row bytes (with `rows`).
  const int64_t* ids = nullptr;   // The rows' original ids (with `orig`).
};
struct ShardParts {
  bool rows = true;   // The rows (the shard's "file").
  bool orig = false;  // Their original ids ("orig").
};
// Reads the `parts` of a shard (a `shards` entry of a manifest `tensor`)
// in chunks of ShardChunkBytes(), calling `use` with each in order; an
// error of `use` ends the read and is returned (what `use` throws passes
// through). Two passes, both with pread (a truncated file is an error,
// never SIGBUS): the first checks each file's size and CRC-32C against the
// manifest, its header (the tensor's dtype and shape [end - begin, ...],
// or int64 [end - begin]) and that bool rows hold only 0 and 1, before any
// chunk is handed out; the second reads the rows again for `use`,
// checksumming them again. A file rewritten between the two is found at
// the end of the second ("changed while it was read"), after `use` had
// its chunks. FailedPrecondition if `orig` is asked for and the shard has
// none (its partition lacked --return-mapping).
Status ReadShard(const std::string& folder, const Json& tensor, const Json& shard,
                 const std::map<std::string, Json>& files, ShardParts parts,
                 const std::function<Status(const ShardChunk&)>& use);

// A file being written into a checkpoint: checksummed as it goes, flushed
// to the disk by Finish(), which returns its manifest entry.
class CheckedFile {
 public:
  static StatusOr<CheckedFile> Create(const std::string& folder, const std::string& name);
  Status Append(const void* data, size_t size);
  StatusOr<Json> Finish();

 private:
  OutputFile file_;
  std::string name_;
  uint32_t crc_ = 0;
  uint64_t bytes_ = 0;
};

// Manifest entries of files someone else wrote into the folder (read back,
// checksummed and flushed). Names must stay inside the folder.
StatusOr<Json> EntriesOf(const std::string& folder, const std::vector<std::string>& names);

}  // namespace tessera::checkpoint

#endif  // TESSERA_SRC_CHECKPOINT_FORMAT_H_
