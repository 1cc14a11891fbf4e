// File: src/checkpoint/format.cc
#include "src/checkpoint/format.h"

#include <algorithm>
#include <filesystem>

#include "fmt/format.h"
#include "spdlog/spdlog.h"
#include "src/base/crc32c.h"

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
  if (manifest.value("format", "") != kFormat) return bad("no \"format\": \"tessera-checkpoint\"");
  if (manifest.value("version", 0) != kFormatVersion) {
    return bad(fmt::format("version {} (this tessera reads {})", manifest.value("version", 0),
                           kFormatVersion));
  }
  for (const char* key : {"files", "tensors", "dense_files", "trainer_files"}) {
    if (!manifest.contains(key) || !manifest[key].is_array()) {
      return bad(fmt::format("no \"{}\" list", key));
    }
  }
  for (const char* key : {"step", "num_trainers", "num_parts"}) {
    if (!manifest.contains(key) || !manifest[key].is_number_integer()) {
      return bad(fmt::format("no integer \"{}\"", key));
    }
  }
  try {
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
      if (!DTypeNamed(t.at("dtype").get<std::string>())) return bad("unknown dtype");
      const auto shape = t.at("shape").get<std::vector<int64_t>>();
      if (shape.empty() || *std::min_element(shape.begin(), shape.end()) < 0) {
        return bad(fmt::format("the shape of '{}'", key));
      }
      for (const Json& s : t.at("shards")) {
        (void)s.at("file").get<std::string>();
        const auto begin = s.at("begin").get<int64_t>(), end = s.at("end").get<int64_t>();
        if (begin < 0 || begin > end || end > shape[0]) {
          return bad(fmt::format("a shard of '{}' holds rows [{}, {})", key, begin, end));
        }
        if (s.contains("orig")) (void)s["orig"].get<std::string>();
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

std::vector<std::pair<int64_t, std::string>> CompleteCheckpoints(const std::string& dir) {
  std::vector<std::pair<int64_t, std::string>> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string path = entry.path().string();
    if (!entry.is_directory(ec) || !PathExists(path + "/" + kManifest)) continue;
    StatusOr<Json> manifest = ReadManifest(path);
    if (manifest.ok()) found.emplace_back((*manifest)["step"].get<int64_t>(), path);
  }
  std::sort(found.rbegin(), found.rend());
  return found;
}

void Prune(const std::string& dir, int keep, const std::string& current) {
  std::vector<std::pair<int64_t, std::string>> complete = CompleteCheckpoints(dir);
  std::vector<std::string> remove;
  for (size_t i = static_cast<size_t>(std::max(keep, 0)); i < complete.size(); ++i) {
    if (complete[i].second != current) remove.push_back(complete[i].second);
  }
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string path = entry.path().string();
    if (entry.is_directory(ec) && path != current && PathExists(path + "/" + kMarker) &&
        !PathExists(path + "/" + kManifest)) {
      remove.push_back(path);
    }
  }
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
