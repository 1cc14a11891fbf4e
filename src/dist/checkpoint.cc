// File: src/dist/checkpoint.cc
//
// Checkpoints (include/tessera/dist/checkpoint.h; the format is in
// docs/checkpoint.md). Saving: every trainer writes its share of its own
// machine's rows (read from this machine's shards), checksumming as it
// writes, and lists its files in rank-<r>.json; trainer 0 merges the lists
// into manifest.json, written durably last. Restoring: the shards are dealt
// round-robin over the trainers, each verified before use and pushed to the
// rows' owners now (by id, or by original id on another partitioning).
// Every collective step ends in a BarrierMax that carries failures, so one
// trainer's error ends the call on all of them instead of leaving them
// waiting.
#include "tessera/dist/checkpoint.h"

#include <ATen/CPUGeneratorImpl.h>
#include <fcntl.h>
#include <stdio.h>
#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>
#include <torch/serialize.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>

#include "fmt/format.h"
#include "nlohmann/json.hpp"
#include "spdlog/spdlog.h"
#include "src/base/crc32c.h"
#include "src/checkpoint/format.h"
#include "src/dist/dist_internal.h"
#include "src/graph/npy.h"
#include "src/kvstore/services.h"
#include "tessera/base/file.h"
#include "tessera/base/resource.h"
#include "tessera/base/strings.h"
#include "tessera/base/time.h"
#include "tessera/partition/partition_config.h"

#ifndef TESSERA_VERSION_STRING
#define TESSERA_VERSION_STRING "unknown"
#endif

namespace tessera::dist {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using checkpoint::kFormat;
using checkpoint::kFormatVersion;
using checkpoint::kManifest;
using checkpoint::kMarker;
using internal::ThrowIfError;
using internal::ValueOrThrow;

// The value, or an Error with the status's own message (which names the
// checkpoint and the file).
template <typename T>
T Must(StatusOr<T> value) {
  if (!value.ok()) throw Error(std::string(value.status().message()));
  return std::move(*value);
}
void Must(const Status& status) {
  if (!status.ok()) throw Error(std::string(status.message()));
}

constexpr size_t kIoBytes = size_t{16} << 20;  // Rows per pull / push / write, in bytes.

// What the job's graph looks like to a checkpoint.
struct Job {
  kvstore::Services* store;
  std::shared_ptr<Context> context;
  PartitionConfig config;
  std::string config_hash;  // CRC-32C of the config file's bytes.
  int rank = 0, world = 1;
};

// The job, without its partition config yet (LoadConfig reads it inside
// the first collective step, so that a trainer failing to read it fails the
// step everywhere instead of leaving the others at a barrier).
Job OpenJob(kvstore::Services& store) {
  Job job{.store = &store, .context = internal::CurrentContext()};
  job.rank = job.context->rank();
  job.world = job.context->world_size();
  return job;
}

void LoadConfig(Job& job) {
  const std::string& path = job.context->part_config();
  std::string text = ValueOrThrow(ReadFileToString(path), "checkpoint: the partition config");
  job.config_hash = checkpoint::Hex(Crc32c(text.data(), text.size()));
  job.config = ValueOrThrow(ReadPartitionConfig(path), "checkpoint: the partition config");
}

// A folder path without a trailing separator ("ckpt/step-5/" -> "ckpt/step-5"),
// so that its parent is the folder it is in.
std::string FolderPath(const std::string& path) {
  fs::path p = fs::path(path).lexically_normal();
  if (!p.has_filename() && p.has_parent_path()) p = p.parent_path();
  return p.string();
}

// Whether every trainer passed the same `value` (two barriers: the maximum
// and the minimum agree); an Error naming `what` otherwise.
void Agree(const Job& job, const std::string& what, const std::string& value) {
  const auto h = static_cast<int64_t>(Crc32c(value.data(), value.size()));
  const int64_t high = ValueOrThrow(job.store->job().BarrierMax(h), what);
  const int64_t low = -ValueOrThrow(job.store->job().BarrierMax(-h), what);
  if (high != low) {
    throw Error(fmt::format("{}: the trainers asked for different checkpoints (this one: {})", what,
                            value));
  }
}

// Runs `step` on this trainer, then agrees with every trainer on whether all
// of them succeeded: each gets its own error, or one naming the failure
// elsewhere. `what` names the collective step.
void Collectively(const Job& job, const std::string& what, const std::function<void()>& step) {
  std::string error;
  try {
    step();
  } catch (const std::exception& e) {
    error = e.what();
  }
  StatusOr<int64_t> failed = job.store->job().BarrierMax(error.empty() ? 0 : 1);
  if (!error.empty()) throw Error(error);
  ThrowIfError(failed.status(), what);
  if (*failed != 0) {
    throw Error(fmt::format("{}: another trainer failed (its log names the cause)", what));
  }
}

// ------------------------------------------------------------------ tensors

struct TensorInfo {
  kvstore::TensorMeta meta;  // key, dtype, global shape, policy
  int type = 0;
  std::string type_name;
};

TensorInfo Describe(const Job& job, const kvstore::TensorMeta& meta) {
  const PartitionBook& book = job.store->book();
  TensorInfo info{.meta = meta};
  info.type =
      ValueOrThrow(kvstore::TensorType(book, meta.policy, std::string_view(meta.key).substr(5)),
                   fmt::format("checkpoint: tensor '{}'", meta.key));
  info.type_name = book.TypeName(meta.policy == shm::Policy::kNode, info.type);
  return info;
}

// The tensors a save holds: those named, and with persistent_tensors every
// persistent one not read from the partition.
std::vector<TensorInfo> TensorsToSave(const Job& job, const CheckpointContents& contents) {
  std::set<std::string> partition_arrays;
  for (const std::string& name : job.config.node_feat_names)
    partition_arrays.insert("node/" + name);
  for (const std::string& name : job.config.edge_feat_names)
    partition_arrays.insert("edge/" + name);
  std::set<std::string> named;
  for (const DistTensor& t : contents.tensors) named.insert(t.key());
  std::vector<TensorInfo> out;
  std::vector<kvstore::TensorMeta> all =
      ValueOrThrow(job.store->features().List(), "checkpoint: listing the tensors");
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.key < b.key; });
  for (const kvstore::TensorMeta& meta : all) {
    const bool automatic =
        contents.persistent_tensors && meta.persistent && partition_arrays.count(meta.key) == 0;
    const bool listed = named.erase(meta.key) > 0;
    if (automatic || listed) out.push_back(Describe(job, meta));
  }
  if (!named.empty()) {
    throw Error(fmt::format("checkpoint: no tensor {} in the job", fmt::join(named, ", ")));
  }
  return out;
}

// The original (input graph) homogeneous ids of a partitioning, if it was
// written with --return-mapping: orig_nids.npy / orig_eids.npy beside the
// config.
std::optional<Array> OriginalIds(const PartitionConfig& config, shm::Policy policy) {
  const std::string path =
      config.dir + (policy == shm::Policy::kNode ? "/orig_nids.npy" : "/orig_eids.npy");
  if (!PathExists(path)) return std::nullopt;
  Array ids = ValueOrThrow(ReadNpy(path), "checkpoint: the partition's original ids");
  const int64_t expected = policy == shm::Policy::kNode ? config.num_nodes : config.num_edges;
  if (ids.dtype() != DType::kInt64 || ids.shape() != std::vector<int64_t>{expected}) {
    throw Error(fmt::format("checkpoint: {} holds {} [{}], not int64 [{}]", path,
                            DTypeName(ids.dtype()), fmt::join(ids.shape(), ", "), expected));
  }
  return ids;
}

// A tensor row's homogeneous id in the partitioning (per-type ids on a typed
// layout map through the book).
int64_t HomoId(const PartitionBook& book, const TensorInfo& t, int64_t id) {
  if (book.is_homogeneous()) return id;
  return t.meta.policy == shm::Policy::kNode ? book.MapToHomoNid(t.type, id)
                                             : book.MapToHomoEid(t.type, id);
}

// Which pieces of which partitions this trainer writes: with T trainers per
// machine (world = parts x T), trainer t of machine p writes the t-th of T
// slices of partition p (its own machine's rows); otherwise (standalone)
// each trainer writes whole partitions, round-robin.
std::vector<std::tuple<int, int, int>> MyPieces(const Job& job, int num_parts) {
  std::vector<std::tuple<int, int, int>> pieces;  // (part, piece, pieces)
  if (job.world >= num_parts && job.world % num_parts == 0) {
    const int per = job.world / num_parts;
    const int part = job.context->machine_id();
    const int local = job.rank - part * per;
    if (part >= 0 && part < num_parts && local >= 0 && local < per) {
      pieces.emplace_back(part, local, per);
      return pieces;
    }
  }
  for (int p = job.rank; p < num_parts; p += job.world) pieces.emplace_back(p, 0, 1);
  return pieces;
}

// Writes this trainer's shards of `t`; returns their manifest entries.
json SaveShards(const Job& job, const TensorInfo& t, const std::string& folder,
                const std::optional<Array>& orig, json& files) {
  const PartitionBook& book = job.store->book();
  const size_t row_bytes = t.meta.row_bytes();
  const int64_t chunk =
      std::max<int64_t>(1, static_cast<int64_t>(kIoBytes / std::max<size_t>(row_bytes, 1)));
  json shards = json::array();
  for (auto [part, piece, pieces] : MyPieces(job, book.num_partitions())) {
    auto [first, last] = kvstore::IdRange(book, t.meta.policy, t.type, part);
    const int64_t count = last - first;
    const int64_t begin = first + count * piece / pieces,
                  end = first + count * (piece + 1) / pieces;
    if (begin >= end) continue;
    const std::string stem =
        fmt::format("tensors/{}.p{}.{}", checkpoint::FileStem(t.meta.key), part, piece);
    std::vector<int64_t> shape = t.meta.shape;
    shape[0] = end - begin;
    checkpoint::CheckedFile rows = Must(checkpoint::CheckedFile::Create(folder, stem + ".npy"));
    const std::string header = EncodeNpyHeader(t.meta.dtype, shape);
    Must(rows.Append(header.data(), header.size()));
    std::vector<char> buffer;
    std::vector<int64_t> ids;
    for (int64_t b = begin; b < end; b += chunk) {
      const int64_t n = std::min(chunk, end - b);
      ids.resize(n);
      for (int64_t i = 0; i < n; ++i) ids[i] = b + i;
      buffer.resize(static_cast<size_t>(n) * row_bytes);
      ThrowIfError(job.store->features().PullInto(t.meta.key, ids, LayoutOf(t.meta), buffer.data()),
                   fmt::format("checkpoint: reading '{}'", t.meta.key));
      Must(rows.Append(buffer.data(), buffer.size()));
    }
    files.push_back(Must(rows.Finish()));
    json shard = {{"file", stem + ".npy"}, {"part", part}, {"begin", begin}, {"end", end}};
    if (orig) {
      checkpoint::CheckedFile ids_file =
          Must(checkpoint::CheckedFile::Create(folder, stem + ".orig.npy"));
      const std::string ids_header = EncodeNpyHeader(DType::kInt64, {end - begin});
      Must(ids_file.Append(ids_header.data(), ids_header.size()));
      const auto* map = static_cast<const int64_t*>(orig->data());
      for (int64_t b = begin; b < end; b += chunk) {
        const int64_t n = std::min(chunk, end - b);
        ids.resize(n);
        for (int64_t i = 0; i < n; ++i) ids[i] = map[HomoId(book, t, b + i)];
        Must(ids_file.Append(ids.data(), ids.size() * sizeof(int64_t)));
      }
      files.push_back(Must(ids_file.Finish()));
      shard["orig"] = stem + ".orig.npy";
    }
    shards.push_back(std::move(shard));
  }
  return shards;
}

// What restoring by original id needs of one policy: the inverse of the
// current partitioning's original ids (original id -> homogeneous id).
struct Remap {
  std::vector<int64_t> homo_of_orig;
};

Remap MakeRemap(const PartitionConfig& config, shm::Policy policy) {
  std::optional<Array> orig = OriginalIds(config, policy);
  if (!orig) {
    throw Error(
        fmt::format("checkpoint: this job's partitioning differs from the saved one, so "
                    "rows are matched by original id, but {} has no {} (partition with "
                    "--return-mapping)",
                    config.dir, policy == shm::Policy::kNode ? "orig_nids.npy" : "orig_eids.npy"));
  }
  const auto* ids = static_cast<const int64_t*>(orig->data());
  const int64_t n = orig->shape()[0];
  Remap remap;
  remap.homo_of_orig.assign(static_cast<size_t>(n), -1);
  for (int64_t h = 0; h < n; ++h) {
    if (ids[h] < 0 || ids[h] >= n || remap.homo_of_orig[ids[h]] >= 0) {
      throw Error(fmt::format("checkpoint: {}/{} is not a permutation (entry {} is {})", config.dir,
                              policy == shm::Policy::kNode ? "orig_nids.npy" : "orig_eids.npy", h,
                              ids[h]));
    }
    remap.homo_of_orig[ids[h]] = h;
  }
  return remap;
}

// Pushes the rows of `shard` to their owners, a chunk at a time (bounded
// memory; checkpoint::ReadShard verifies the whole file first). A file
// rewritten while it is read fails the restore after earlier chunks were
// pushed.
void RestoreShard(const Job& job, const std::string& folder, const json& tensor, const json& shard,
                  const std::map<std::string, json>& files, const TensorInfo& t,
                  const Remap* remap) {
  const std::string name = shard["file"].get<std::string>();
  const int64_t begin = shard["begin"].get<int64_t>();
  const PartitionBook& book = job.store->book();
  const int64_t limit = t.meta.shape[0];
  std::vector<int64_t> ids;
  Status st = checkpoint::ReadShard(
      folder, tensor, shard, files, {.rows = true, .orig = remap != nullptr},
      [&](const checkpoint::ShardChunk& chunk) {
        const int64_t n = chunk.rows;
        ids.resize(n);
        for (int64_t i = 0; i < n; ++i) {
          const int64_t row = chunk.first + i;  // In the shard.
          int64_t id = begin + row;
          if (remap != nullptr) {
            const int64_t o = chunk.ids[i];
            const int64_t h = o >= 0 && o < static_cast<int64_t>(remap->homo_of_orig.size())
                                  ? remap->homo_of_orig[o]
                                  : -1;
            if (h < 0) {
              throw Error(
                  fmt::format("checkpoint {}: row {} of {} has original id {}, which this "
                              "job's graph does not have",
                              folder, row, name, o));
            }
            id = h;
            if (!book.is_homogeneous()) {
              auto [type, per_type] = t.meta.policy == shm::Policy::kNode ? book.MapToPerNtype(h)
                                                                          : book.MapToPerEtype(h);
              if (type != t.type) {
                throw Error(
                    fmt::format("checkpoint {}: row {} of {} (original id {}) is of another "
                                "type in this job's graph",
                                folder, row, name, o));
              }
              id = per_type;
            }
          }
          if (id < 0 || id >= limit) {
            throw Error(
                fmt::format("checkpoint {}: row {} of {} maps to id {}, outside '{}' ({} rows)",
                            folder, row, name, id, t.meta.key, limit));
          }
          ids[i] = id;
        }
        ThrowIfError(job.store->features().Push(t.meta.key, ids, LayoutOf(t.meta), chunk.data,
                                                kvstore::PushMode::kAssign),
                     fmt::format("checkpoint: writing '{}'", t.meta.key));
        return absl::OkStatus();
      });
  if (st.code() == absl::StatusCode::kFailedPrecondition) {
    throw Error(
        fmt::format("this job's partitioning differs from the saved one, so rows are "
                    "matched by original id: {}",
                    std::string(st.message())));
  }
  Must(st);
}

// `text` (a CheckpointContents::extra) as it goes into the manifest: a
// JSON object that leaves the manifest readable (nested at most
// kMaxJsonDepth deep within it, and within its size cap). Checked before
// any file is written.
json ManifestExtra(const std::string& text) {
  StatusOr<json> extra = checkpoint::ParseJson(text, "checkpoint: extra");
  if (extra.ok() && !extra->is_object()) {
    extra = absl::InvalidArgumentError("checkpoint: extra must be the text of a JSON object");
  }
  json parsed = Must(std::move(extra));
  // As the manifest holds it: one level deeper, indented as it is written.
  const std::string within = json{{"extra", parsed}}.dump(1);
  if (within.size() > checkpoint::kMaxManifestBytes) {
    throw Error(fmt::format(
        "checkpoint: extra takes {} bytes in the manifest, more than a reader accepts ({} MiB)",
        within.size(), checkpoint::kMaxManifestBytes >> 20));
  }
  if (Status st = checkpoint::ParseJson(within, "checkpoint: extra").status(); !st.ok()) {
    throw Error(fmt::format("{} (within the manifest, which holds it one level deeper)",
                            std::string(st.message())));
  }
  return parsed;
}

std::string ModelFile() { return "model.pt"; }
std::string OptimizerFile() { return "optimizer.pt"; }
std::string TrainerFile(int rank) { return fmt::format("trainer-{}.pt", rank); }

// Puts the new checkpoint `folder` in place of the complete one at `target`:
// atomically where the file system can exchange two names (then the old one
// is removed from `folder`), otherwise by two renames, undoing the first if
// the second fails. A leftover that cannot be removed only warns: the new
// checkpoint is in place.
void SwapIn(const std::string& folder, const std::string& target, const std::string& parent) {
  std::string leftover = folder;
  if (renameat2(AT_FDCWD, folder.c_str(), AT_FDCWD, target.c_str(), RENAME_EXCHANGE) != 0) {
    if (errno != EINVAL && errno != ENOSYS) {
      ThrowIfError(ErrnoError(fmt::format("cannot put {} in place of {}", folder, target), errno),
                   "checkpoint");
    }
    leftover = target + ".old";
    ThrowIfError(RemoveAll(leftover), "checkpoint");
    if (std::rename(target.c_str(), leftover.c_str()) != 0) {
      ThrowIfError(ErrnoError(fmt::format("cannot move {} aside", target), errno), "checkpoint");
    }
    if (std::rename(folder.c_str(), target.c_str()) != 0) {
      const int err = errno;
      (void)std::rename(leftover.c_str(), target.c_str());  // The old one back.
      ThrowIfError(ErrnoError(fmt::format("cannot put {} in place of {}", folder, target), err),
                   "checkpoint");
    }
  }
  ThrowIfError(SyncPath(parent), "checkpoint");
  if (Status st = RemoveAll(leftover); !st.ok()) {
    spdlog::warn("checkpoint: the replaced checkpoint stays in {}: {}", leftover,
                 std::string(st.message()));
  }
}

}  // namespace

namespace internal {

void SaveCheckpointOf(kvstore::Services& store, const std::string& path, int64_t step,
                      const CheckpointContents& contents, int keep, bool replace) {
  Stopwatch watch;
  Job job = OpenJob(store);
  const std::string target = FolderPath(path);
  std::string parent = fs::path(target).parent_path().string();
  if (parent.empty()) parent = ".";  // "step-2": the working folder's checkpoints.
  // Replacing a complete checkpoint: the new one is written beside it and
  // swapped in at the end, so that a crash leaves one of the two whole.
  const bool swap = replace && PathExists(target + "/" + kManifest);
  const std::string folder = swap ? target + ".new" : target;
  Agree(job, "checkpoint: saving " + target, fmt::format("{} {} {}", target, step, swap));
  json extra = json::object();  // Trainer 0's, for the manifest.
  Collectively(job, "checkpoint: preparing " + folder, [&] {
    LoadConfig(job);
    if (step < 0) throw Error(fmt::format("checkpoint: step {} is negative", step));
    if (job.rank != 0) return;
    if (!contents.extra.empty()) extra = ManifestExtra(contents.extra);
    if (!swap && PathExists(folder + "/" + kManifest)) {
      throw Error(fmt::format("checkpoint: {} already holds a complete checkpoint", folder));
    }
    std::error_code ec;
    if (PathExists(folder) && !IsDirectory(folder)) {
      throw Error(fmt::format("checkpoint: {} exists and is not a folder", folder));
    }
    if (IsDirectory(folder) && !PathExists(folder + "/" + kMarker) && !fs::is_empty(folder, ec)) {
      throw Error(fmt::format("checkpoint: {} exists and is not a checkpoint folder", folder));
    }
    ThrowIfError(RemoveAll(folder), "checkpoint");  // An unfinished save's leftovers.
    ThrowIfError(MakeDirs(folder + "/tensors"), "checkpoint");
    ThrowIfError(WriteFileDurably(folder + "/" + kMarker, ""), "checkpoint");
    ThrowIfError(SyncPath(parent), "checkpoint");
  });
  std::vector<TensorInfo> tensors;
  json mine = {{"rank", job.rank}, {"files", json::array()}, {"tensors", json::array()}};
  int64_t bytes = 0;
  Collectively(job, "checkpoint: writing " + folder, [&] {
    tensors = TensorsToSave(job, contents);
    std::map<shm::Policy, std::optional<Array>> orig;
    for (const TensorInfo& t : tensors) {
      if (!orig.count(t.meta.policy)) orig[t.meta.policy] = OriginalIds(job.config, t.meta.policy);
      mine["tensors"].push_back(
          {{"key", t.meta.key},
           {"shards", SaveShards(job, t, folder, orig[t.meta.policy], mine["files"])}});
    }
    std::vector<std::string> dense, own;
    if (job.rank == 0) {
      if (contents.module != nullptr) {
        torch::serialize::OutputArchive archive;
        contents.module->save(archive);
        archive.save_to(folder + "/" + ModelFile());
        dense.push_back(ModelFile());
      }
      if (contents.optimizer != nullptr) {
        torch::serialize::OutputArchive archive;
        contents.optimizer->save(archive);
        archive.save_to(folder + "/" + OptimizerFile());
        dense.push_back(OptimizerFile());
      }
      if (contents.write_dense) {
        for (std::string& name : contents.write_dense(folder)) dense.push_back(std::move(name));
      }
    }
    if (contents.random_state) {
      torch::serialize::OutputArchive archive;
      at::Generator generator = at::detail::getDefaultCPUGenerator();
      torch::Tensor state;
      {
        std::lock_guard<std::mutex> lock(generator.mutex());
        state = generator.get_state();
      }
      archive.write("cpu_rng", state);
      archive.save_to(folder + "/" + TrainerFile(job.rank));
      own.push_back(TrainerFile(job.rank));
    }
    if (contents.write_trainer) {
      for (std::string& name : contents.write_trainer(folder)) own.push_back(std::move(name));
    }
    mine["dense_files"] = Must(checkpoint::EntriesOf(folder, dense));
    mine["trainer_files"] = Must(checkpoint::EntriesOf(folder, own));
    ThrowIfError(WriteFileDurably(fmt::format("{}/rank-{}.json", folder, job.rank), mine.dump()),
                 "checkpoint");
  });
  Collectively(job, "checkpoint: committing " + folder, [&] {
    if (job.rank != 0) return;
    json manifest = {{"format", kFormat},
                     {"version", kFormatVersion},
                     {"tessera_version", TESSERA_VERSION_STRING},
                     {"graph_name", store.graph_name()},
                     {"partition_config_crc32c", job.config_hash},
                     {"num_parts", job.store->book().num_partitions()},
                     {"num_trainers", job.world},
                     {"step", step},
                     {"rotate", keep > 0},
                     {"created_unix", static_cast<int64_t>(std::time(nullptr))},
                     {"extra", json::object()},
                     {"files", json::array()},
                     {"tensors", json::array()},
                     {"dense_files", json::array()},
                     {"trainer_files", json::array()}};
    manifest["extra"] = std::move(extra);
    for (const TensorInfo& t : tensors) {
      manifest["tensors"].push_back({{"key", t.meta.key},
                                     {"dtype", DTypeName(t.meta.dtype)},
                                     {"shape", t.meta.shape},
                                     {"policy", shm::PolicyName(t.meta.policy)},
                                     {"type", t.type_name},
                                     {"shards", json::array()}});
    }
    // Which trainer listed each file: two that wrote the same name (a
    // write_trainer that returns the same name on every trainer) fail the
    // save here, naming it.
    std::map<std::string, int> writer;
    auto list = [&](const json& f, int r) {
      const std::string name = f["path"].get<std::string>();
      auto [it, fresh] = writer.emplace(name, r);
      if (!fresh) {
        throw Error(fmt::format(
            "checkpoint: cannot save {}: {} was written by trainer {}{} (each trainer's files "
            "need names of their own, e.g. with the rank in them)",
            folder, name, it->second, it->second == r ? " twice" : fmt::format(" and by {}", r)));
      }
      manifest["files"].push_back(f);
    };
    for (int r = 0; r < job.world; ++r) {
      const std::string name = fmt::format("{}/rank-{}.json", folder, r);
      StatusOr<json> parsed =
          checkpoint::ParseJson(ValueOrThrow(ReadFileToString(name), "checkpoint"), name);
      json part = parsed.ok() ? std::move(*parsed) : json();
      if (!part.is_object() || part["tensors"].size() != tensors.size()) {
        throw Error(
            fmt::format("checkpoint: {} does not list the tensors trainer 0 saved (were "
                        "tensors created or deleted during the save?)",
                        name));
      }
      for (size_t i = 0; i < tensors.size(); ++i) {
        if (part["tensors"][i]["key"] != tensors[i].meta.key) {
          throw Error(fmt::format("checkpoint: trainer {} saved '{}' where trainer 0 saved '{}'", r,
                                  part["tensors"][i]["key"].get<std::string>(),
                                  tensors[i].meta.key));
        }
        for (json& shard : part["tensors"][i]["shards"])
          manifest["tensors"][i]["shards"].push_back(shard);
      }
      for (json& f : part["files"]) {
        bytes += f["bytes"].get<int64_t>();
        list(f, r);
      }
      for (json& f : part["dense_files"]) {
        list(f, r);
        manifest["dense_files"].push_back(f["path"]);
      }
      json own = json::array();
      for (json& f : part["trainer_files"]) {
        list(f, r);
        own.push_back(f["path"]);
      }
      manifest["trainer_files"].push_back(std::move(own));
    }
    const std::string text = manifest.dump(1);
    if (text.size() > checkpoint::kMaxManifestBytes) {
      throw Error(fmt::format(
          "checkpoint: the manifest of {} would have {} bytes, more than a reader accepts ({} MiB)",
          folder, text.size(), checkpoint::kMaxManifestBytes >> 20));
    }
    // Never a manifest that latest() would skip and restore refuse: the
    // readers' own checks, on the text about to be written.
    if (Status valid = checkpoint::ParseManifest(text).status(); !valid.ok()) {
      throw Error(fmt::format("checkpoint: cannot save {}: its readers would refuse its {}: {}",
                              folder, kManifest, std::string(valid.message())));
    }
    for (int r = 0; r < job.world; ++r) {
      ThrowIfError(RemoveAll(fmt::format("{}/rank-{}.json", folder, r)), "checkpoint");
    }
    ThrowIfError(SyncPath(folder + "/tensors"), "checkpoint");
    ThrowIfError(WriteFileDurably(folder + "/" + kManifest, text), "checkpoint");
    if (swap) SwapIn(folder, target, parent);
    spdlog::info("checkpoint: step {} saved to {}: {} tensors, {} in shards, {:.2f} s", step,
                 target, tensors.size(), FormatBytes(bytes), watch.Seconds());
    if (keep > 0) checkpoint::Prune(parent, keep, target);
  });
}

RestoredCheckpoint RestoreCheckpointOf(kvstore::Services& store, const std::string& path,
                                       const CheckpointContents& contents) {
  Stopwatch watch;
  Job job = OpenJob(store);
  const std::string folder = FolderPath(path);
  Agree(job, "checkpoint: restoring " + folder, folder);
  json manifest;
  std::map<std::string, json> files;
  std::vector<TensorInfo> tensors;
  std::vector<const json*> entries;  // Their manifest entries.
  std::map<shm::Policy, Remap> remaps;
  RestoredCheckpoint out;
  out.path = folder;
  // The tensors this trainer created (InitData tells exactly one trainer):
  // a restore that fails removes them again, whatever step failed.
  std::vector<std::string> created;
  try {
    Collectively(job, "checkpoint: reading " + folder, [&] {
      LoadConfig(job);
      manifest = Must(checkpoint::ReadManifest(folder));
      if (manifest.value("graph_name", "") != store.graph_name()) {
        throw Error(fmt::format("checkpoint {} is of graph '{}', this job's is '{}'", folder,
                                manifest.value("graph_name", ""), store.graph_name()));
      }
      files = checkpoint::FilesOf(manifest);
      out.step = manifest["step"].get<int64_t>();
      out.num_trainers = manifest["num_trainers"].get<int>();
      out.extra = manifest.value("extra", json::object()).dump();
      out.same_partitioning =
          manifest.value("partition_config_crc32c", "") == job.config_hash &&
          manifest["num_parts"].get<int>() == job.store->book().num_partitions();
      // Without persistent_tensors, only the tensors listed.
      std::set<std::string> only;
      for (const DistTensor& t : contents.tensors) only.insert(t.key());
      std::vector<const json*> selected;
      for (const json& t : manifest["tensors"]) {
        const std::string key = t["key"].get<std::string>();
        if (!contents.persistent_tensors && only.erase(key) == 0) continue;
        ThrowIfError(kvstore::CheckTensorKey(key), "checkpoint " + folder);
        selected.push_back(&t);
      }
      if (!contents.persistent_tensors && !only.empty()) {
        throw Error(fmt::format("checkpoint {} holds no tensor {}", folder, fmt::join(only, ", ")));
      }
      // Before a tensor is created (sized by the manifest's shape): every
      // shard file is there with the size the manifest lists, which
      // ReadManifest found to be that of the shard's rows.
      for (const json* t : selected) {
        Must(checkpoint::CheckShardFiles(folder, *t, files, /*orig=*/!out.same_partitioning));
        const shm::Policy policy = (*t)["key"].get<std::string>().rfind("node/", 0) == 0
                                       ? shm::Policy::kNode
                                       : shm::Policy::kEdge;
        if (!out.same_partitioning && !remaps.count(policy)) {
          remaps[policy] = MakeRemap(job.config, policy);
        }
      }
      kvstore::FeatureStore& features = job.store->features();
      for (const json* entry : selected) {
        const json& t = *entry;
        const std::string key = t["key"].get<std::string>();
        const DType dtype = *checkpoint::DTypeNamed(t["dtype"].get<std::string>());
        const std::vector<int64_t> shape = t["shape"].get<std::vector<int64_t>>();
        // A tensor the program has not created yet is created here (it attaches to it later).
        kvstore::InitSpec spec{
            .name = key.substr(5),
            .dtype = dtype,
            .shape = shape,
            .policy = key.rfind("node/", 0) == 0 ? shm::Policy::kNode : shm::Policy::kEdge,
            .init = kvstore::Init::kZeros,
            .persistent = true};
        StatusOr<bool> is_new = features.InitData(spec);
        if (!is_new.ok()) {
          throw Error(fmt::format("checkpoint {}: cannot restore '{}' {} [{}]: {}", folder, key,
                                  t["dtype"].get<std::string>(), fmt::join(shape, ", "),
                                  std::string(is_new.status().message())));
        }
        if (*is_new) created.push_back(key);
        kvstore::TensorMeta meta = ValueOrThrow(features.Meta(key), "checkpoint " + folder);
        meta.shape = shape;
        tensors.push_back(Describe(job, meta));
        entries.push_back(&t);
        out.tensors.push_back(key);
      }
    });
    Collectively(job, "checkpoint: restoring the tensors of " + folder, [&] {
      size_t index = 0;
      for (size_t i = 0; i < tensors.size(); ++i) {
        const json& t = *entries[i];
        const Remap* remap = out.same_partitioning ? nullptr : &remaps.at(tensors[i].meta.policy);
        for (const json& shard : t["shards"]) {
          if (index++ % static_cast<size_t>(job.world) == static_cast<size_t>(job.rank)) {
            RestoreShard(job, folder, t, shard, files, tensors[i], remap);
          }
        }
      }
    });
    Collectively(job, "checkpoint: restoring the dense state of " + folder, [&] {
      // Each file is read once and verified, then loaded from that memory:
      // the bytes checksummed are the bytes used (these files are small).
      std::map<std::string, std::string> verified;
      auto read = [&](std::vector<std::string>& names, const json& name) {
        names.push_back(name.get<std::string>());
        verified[names.back()] = Must(checkpoint::VerifiedFile(folder, names.back(), files));
      };
      auto load = [&](const std::string& name) {
        const std::string& bytes = verified.at(name);
        torch::serialize::InputArchive archive;
        archive.load_from(bytes.data(), bytes.size());
        return archive;
      };
      for (const json& name : manifest["dense_files"]) read(out.dense_files, name);
      if (contents.module != nullptr) {
        if (!verified.count(ModelFile())) {
          throw Error(fmt::format("checkpoint {} holds no model", folder));
        }
        torch::serialize::InputArchive archive = load(ModelFile());
        contents.module->load(archive);
      }
      if (contents.optimizer != nullptr) {
        if (!verified.count(OptimizerFile())) {
          throw Error(fmt::format("checkpoint {} holds no optimizer", folder));
        }
        torch::serialize::InputArchive archive = load(OptimizerFile());
        contents.optimizer->load(archive);
      }
      // The random state goes back only to the same trainer of a job of the same size.
      if (out.num_trainers == job.world &&
          manifest["trainer_files"].size() == static_cast<size_t>(job.world)) {
        for (const json& name : manifest["trainer_files"][job.rank]) read(out.trainer_files, name);
        if (contents.random_state && std::find(out.trainer_files.begin(), out.trainer_files.end(),
                                               TrainerFile(job.rank)) != out.trainer_files.end()) {
          torch::serialize::InputArchive archive = load(TrainerFile(job.rank));
          torch::Tensor state;
          archive.read("cpu_rng", state);
          at::Generator generator = at::detail::getDefaultCPUGenerator();
          std::lock_guard<std::mutex> lock(generator.mutex());
          generator.set_state(state);
        }
      }
      // The program's own files (write_dense / write_trainer), for it to use
      // instead of reading the files again.
      for (auto& [name, bytes] : verified) {
        if (name != ModelFile() && name != OptimizerFile() && name != TrainerFile(job.rank)) {
          out.file_bytes[name] = std::move(bytes);
        }
      }
    });
  } catch (...) {
    for (const std::string& key : created) {
      try {
        Status st = job.store->features().DeleteData(key);
        if (!st.ok()) {
          spdlog::warn("checkpoint: cannot remove '{}' after the failed restore: {}", key,
                       std::string(st.message()));
        }
      } catch (const std::exception& e) {
        spdlog::warn("checkpoint: cannot remove '{}' after the failed restore: {}", key, e.what());
      }
    }
    throw;
  }
  spdlog::info("checkpoint: restored step {} from {} ({} tensors{}), {:.2f} s", out.step, folder,
               tensors.size(), out.same_partitioning ? "" : ", mapped by original id",
               watch.Seconds());
  return out;
}

}  // namespace internal

void SaveCheckpoint(const DistGraph& g, const std::string& path, int64_t step,
                    const CheckpointContents& contents, int keep) {
  internal::SaveCheckpointOf(g.store(), path, step, contents, keep, /*replace=*/false);
}

RestoredCheckpoint RestoreCheckpoint(const DistGraph& g, const std::string& path,
                                     const CheckpointContents& contents) {
  return internal::RestoreCheckpointOf(g.store(), path, contents);
}

Checkpoint::Checkpoint(const DistGraph& g, std::string dir, int keep)
    : graph_(&g), dir_(std::move(dir)), keep_(keep) {
  ThrowIfError(MakeDirs(dir_), "checkpoint");
}

std::string Checkpoint::save(int64_t step, const CheckpointContents& contents) const {
  const std::string path = fmt::format("{}/step-{}", dir_, step);
  SaveCheckpoint(*graph_, path, step, contents, keep_);
  return path;
}

std::optional<RestoredCheckpoint> Checkpoint::restore(const CheckpointContents& contents) const {
  // Every trainer looks; they must have found the same one (or none).
  std::optional<std::string> path = latest(dir_);
  Agree(OpenJob(graph_->store()), "checkpoint: the newest in " + dir_, path.value_or(""));
  if (!path) return std::nullopt;
  return RestoreCheckpoint(*graph_, *path, contents);
}

std::optional<std::string> Checkpoint::latest(const std::string& dir) {
  std::vector<std::pair<int64_t, std::string>> found = checkpoint::CompleteCheckpoints(dir);
  if (found.empty()) return std::nullopt;
  return found.front().second;
}

}  // namespace tessera::dist
