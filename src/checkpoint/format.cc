// File: src/checkpoint/format.cc
#include "src/checkpoint/format.h"

#include <algorithm>
#include <filesystem>

#include "fmt/format.h"
#include "spdlog/spdlog.h"
#include "src/base/crc32c.h"
#include "src/graph/npy.h"

namespace tessera::checkpoint {

namespace fs = std::filesystem;

std::string Hex(uint32_t crc) { return fmt::format("{:08x}", crc); }

std::optional<DType> DTypeNamed(std::string_view name) {
  for (int d = 0; d <= static_cast<int>(DType::kFloat64); ++d) {
    if (DTypeName(static_cast<DType>(d)) == name) return static_cast<DType>(d);
  }
  return std::nullopt;
}

std::string FileStem(const std::string& key) {
  std::string stem = key;
  std::replace(stem.begin(), stem.end(), '/', '~');
  return stem;
}

StatusOr<Json> ReadManifest(const std::string& folder) {
  const std::string path = folder + "/" + kManifest;
  if (!PathExists(path)) {
    return absl::NotFoundError(
        fmt::format("checkpoint {}: no {} (not a checkpoint, or one whose save did not finish)",
                    folder, kManifest));
  }
  ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  Json manifest = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  auto bad = [&](const std::string& why) {
    return absl::DataLossError(
        fmt::format("checkpoint {}: {} is malformed: {}", folder, kManifest, why));
  };
  if (manifest.is_discarded() || !manifest.is_object()) return bad("not a JSON object");
  // Every access below may meet a value of the wrong type: json's exceptions
  // become this error.
  try {
    if (manifest.value("format", std::string()) != kFormat) {
      return bad("no \"format\": \"tessera-checkpoint\"");
    }
    if (!manifest.contains("version") || manifest["version"] != kFormatVersion) {
      return bad(fmt::format("version {} (this tessera reads {})",
                             manifest.value("version", Json()).dump(), kFormatVersion));
    }
    for (const char* key : {"files", "tensors", "dense_files", "trainer_files"}) {
      if (!manifest.contains(key) || !manifest[key].is_array()) {
        return bad(fmt::format("no \"{}\" list", key));
      }
    }
    for (const char* key : {"step", "num_trainers", "num_parts"}) {
      if (!manifest.contains(key) || !manifest[key].is_number_integer() ||
          manifest[key].get<int64_t>() < 0) {
        return bad(fmt::format("no integer \"{}\" >= 0", key));
      }
    }
    (void)manifest.value("graph_name", std::string());
    (void)manifest.value("partition_config_crc32c", std::string());
    (void)manifest.value("rotate", false);
    for (const Json& f : manifest["files"]) {
      (void)f.at("path").get<std::string>();
      (void)f.at("bytes").get<uint64_t>();
      (void)f.at("crc32c").get<std::string>();
    }
    for (const Json& t : manifest["tensors"]) {
      const std::string key = t.at("key").get<std::string>();
      if (key.rfind("node/", 0) != 0 && key.rfind("edge/", 0) != 0) {
        return bad(fmt::format("tensor key '{}'", key));
      }
      const std::optional<DType> dtype = DTypeNamed(t.at("dtype").get<std::string>());
      if (!dtype) return bad("unknown dtype");
      const auto shape = t.at("shape").get<std::vector<int64_t>>();
      // Sizes are checked: no buffer is ever sized from an impossible shape.
      uint64_t bytes = DTypeSize(*dtype);
      bool valid = !shape.empty() && shape.size() <= 32;
      for (size_t i = 0; valid && i < shape.size(); ++i) {
        valid = shape[i] >= 0 &&
                !__builtin_mul_overflow(bytes, static_cast<uint64_t>(shape[i]), &bytes);
      }
      if (!valid || bytes > (uint64_t{1} << 50)) {
        return bad(fmt::format("the shape [{}] of '{}'", fmt::join(shape, ", "), key));
      }
      // The shards tile [0, rows): every row saved exactly once.
      std::vector<std::pair<int64_t, int64_t>> ranges;
      for (const Json& sh : t.at("shards")) {
        (void)sh.at("file").get<std::string>();
        ranges.emplace_back(sh.at("begin").get<int64_t>(), sh.at("end").get<int64_t>());
        if (sh.contains("orig")) (void)sh["orig"].get<std::string>();
      }
      std::sort(ranges.begin(), ranges.end());
      int64_t next = 0;
      for (const auto& [begin, end] : ranges) {
        if (begin != next || end < begin) break;
        next = end;
      }
      if (next != shape[0]) {
        return bad(fmt::format("the shards of '{}' do not hold its rows [0, {}) once each", key,
                               shape[0]));
      }
    }
    for (const Json& names : manifest["trainer_files"]) (void)names.get<std::vector<std::string>>();
    (void)manifest["dense_files"].get<std::vector<std::string>>();
  } catch (const Json::exception& e) {
    return bad(e.what());
  }
  return manifest;
}

std::map<std::string, Json> FilesOf(const Json& manifest) {
  std::map<std::string, Json> files;
  for (const Json& f : manifest["files"]) files[f["path"].get<std::string>()] = f;
  return files;
}

namespace {

struct Found {
  int64_t step;
  std::string path;
  bool rotate;  // Saved with keep: one of a rotating series (what Prune may remove).
};

// The real folders of `dir` (links are not followed: a link to a checkpoint
// is not a second one), and whether each is a complete checkpoint.
std::vector<Found> Scan(const std::string& dir, std::vector<std::string>* incomplete) {
  std::vector<Found> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.is_symlink(ec) || !entry.is_directory(ec)) continue;
    const std::string path = entry.path().string();
    if (!PathExists(path + "/" + kManifest)) {
      if (incomplete != nullptr && PathExists(path + "/" + kMarker)) incomplete->push_back(path);
      continue;
    }
    StatusOr<Json> manifest = ReadManifest(path);
    if (manifest.ok()) {
      found.push_back({(*manifest)["step"].get<int64_t>(), path, manifest->value("rotate", false)});
    }
  }
  // Newest first; among equal steps the shorter name ("x" before a leftover
  // "x.old" or "x.new").
  std::sort(found.begin(), found.end(), [](const Found& a, const Found& b) {
    if (a.step != b.step) return a.step > b.step;
    return a.path < b.path;
  });
  return found;
}

}  // namespace

std::vector<std::pair<int64_t, std::string>> CompleteCheckpoints(const std::string& dir) {
  std::vector<std::pair<int64_t, std::string>> out;
  for (Found& f : Scan(dir, nullptr)) out.emplace_back(f.step, std::move(f.path));
  return out;
}

void Prune(const std::string& dir, int keep, const std::string& current) {
  std::vector<std::string> remove;
  int kept = 0;
  for (const Found& f : Scan(dir, &remove)) {
    if (f.rotate && ++kept > keep && f.path != current) remove.push_back(f.path);
  }
  std::erase(remove, current);
  for (const std::string& path : remove) {
    // The manifest goes first: a folder half removed is incomplete, never damaged.
    Status st = RemoveAll(path + "/" + kManifest);
    if (st.ok()) st = RemoveAll(path);
    if (!st.ok()) {
      spdlog::warn("checkpoint: cannot remove the old checkpoint {}: {}", path,
                   std::string(st.message()));
    }
  }
}

StatusOr<MappedFile> VerifiedFile(const std::string& folder, const std::string& name,
                                  const std::map<std::string, Json>& files) {
  auto it = files.find(name);
  if (it == files.end()) {
    return absl::NotFoundError(
        fmt::format("checkpoint {}: {} is not listed in its manifest", folder, name));
  }
  StatusOr<MappedFile> file = MappedFile::Open(folder + "/" + name);
  if (!file.ok()) {
    return absl::DataLossError(fmt::format("checkpoint {}: file {} cannot be read: {}", folder,
                                           name, std::string(file.status().message())));
  }
  const auto bytes = it->second["bytes"].get<uint64_t>();
  if (file->size() != bytes) {
    return absl::DataLossError(
        fmt::format("checkpoint {}: file {} has {} bytes, its manifest says {} (truncated or "
                    "altered)",
                    folder, name, file->size(), bytes));
  }
  const std::string crc = Hex(Crc32c(file->data(), file->size()));
  if (crc != it->second["crc32c"].get<std::string>()) {
    return absl::DataLossError(
        fmt::format("checkpoint {}: file {} is corrupt: CRC-32C {}, its manifest says {}", folder,
                    name, crc, it->second["crc32c"].get<std::string>()));
  }
  return file;
}

namespace {

// A verified .npy of the checkpoint that must hold `dtype` [shape].
StatusOr<std::pair<MappedFile, const uint8_t*>> VerifiedArray(
    const std::string& folder, const std::string& name, const std::map<std::string, Json>& files,
    DType dtype, const std::vector<int64_t>& shape) {
  ASSIGN_OR_RETURN(MappedFile file, VerifiedFile(folder, name, files));
  ASSIGN_OR_RETURN(NpyHeader h, ParseNpyHeader(file.data(), file.size(), folder + "/" + name));
  if (h.dtype != dtype || h.shape != shape) {
    return absl::DataLossError(fmt::format(
        "checkpoint {}: file {} holds {} [{}], its manifest says {} [{}]", folder, name,
        DTypeName(h.dtype), fmt::join(h.shape, ", "), DTypeName(dtype), fmt::join(shape, ", ")));
  }
  const uint8_t* data = file.data() + h.data_offset;
  return std::make_pair(std::move(file), data);
}

}  // namespace

StatusOr<ShardRows> ReadShardRows(const std::string& folder, const Json& tensor, const Json& shard,
                                  const std::map<std::string, Json>& files) {
  std::vector<int64_t> shape = tensor["shape"].get<std::vector<int64_t>>();
  shape[0] = shard["end"].get<int64_t>() - shard["begin"].get<int64_t>();
  ASSIGN_OR_RETURN(auto array,
                   VerifiedArray(folder, shard["file"].get<std::string>(), files,
                                 *DTypeNamed(tensor["dtype"].get<std::string>()), shape));
  return ShardRows{std::move(array.first), array.second, shape[0]};
}

StatusOr<ShardIds> ReadShardOriginalIds(const std::string& folder, const Json& tensor,
                                        const Json& shard,
                                        const std::map<std::string, Json>& files) {
  if (!shard.contains("orig")) {
    return absl::FailedPreconditionError(
        fmt::format("checkpoint {}: {} of '{}' has no original ids (its job's partition lacked "
                    "--return-mapping)",
                    folder, shard["file"].get<std::string>(), tensor["key"].get<std::string>()));
  }
  const int64_t rows = shard["end"].get<int64_t>() - shard["begin"].get<int64_t>();
  ASSIGN_OR_RETURN(auto array, VerifiedArray(folder, shard["orig"].get<std::string>(), files,
                                             DType::kInt64, {rows}));
  return ShardIds{std::move(array.first), reinterpret_cast<const int64_t*>(array.second)};
}

StatusOr<CheckedFile> CheckedFile::Create(const std::string& folder, const std::string& name) {
  CheckedFile f;
  f.name_ = name;
  ASSIGN_OR_RETURN(f.file_, OutputFile::Create(folder + "/" + name));
  return f;
}

Status CheckedFile::Append(const void* data, size_t size) {
  RETURN_IF_ERROR(file_.Append(data, size));
  crc_ = Crc32cExtend(crc_, data, size);
  bytes_ += size;
  return absl::OkStatus();
}

StatusOr<Json> CheckedFile::Finish() {
  RETURN_IF_ERROR(file_.Sync());
  RETURN_IF_ERROR(file_.Close());
  return Json{{"path", name_}, {"bytes", bytes_}, {"crc32c", Hex(crc_)}};
}

StatusOr<Json> EntriesOf(const std::string& folder, const std::vector<std::string>& names) {
  Json files = Json::array();
  for (const std::string& name : names) {
    if (name.empty() || name.front() == '/' || name.find("..") != std::string::npos) {
      return absl::InvalidArgumentError(
          fmt::format("checkpoint: '{}' is not a file name inside the folder", name));
    }
    const std::string path = folder + "/" + name;
    ASSIGN_OR_RETURN(MappedFile file, MappedFile::Open(path));
    RETURN_IF_ERROR(SyncPath(path));
    files.push_back({{"path", name},
                     {"bytes", file.size()},
                     {"crc32c", Hex(Crc32c(file.data(), file.size()))}});
  }
  return files;
}

}  // namespace tessera::checkpoint
