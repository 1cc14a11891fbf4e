// File: src/checkpoint/format.cc
#include "src/checkpoint/format.h"

#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <limits>
#include <set>

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
  std::string stem;
  for (const char c : key) {
    if (c == '/') {
      stem += '~';
    } else if (c == '~') {
      stem += "%7E";
    } else if (c == '%') {
      stem += "%25";
    } else {
      stem += c;
    }
  }
  return stem;
}

bool IsFileName(std::string_view name) {
  return !name.empty() && name.front() != '/' && name.find("..") == std::string_view::npos &&
         name.find('\0') == std::string_view::npos;
}

StatusOr<Json> ParseJson(std::string_view text, const std::string& what) {
  // The nesting depth, found by a scan that skips strings: json parses
  // iteratively, but copies, compares and dumps recursively.
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth) {
        return absl::DataLossError(fmt::format("{}: JSON nested deeper than {} levels (at byte {})",
                                               what, kMaxJsonDepth, i));
      }
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  Json json = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) return absl::DataLossError(fmt::format("{}: not valid JSON", what));
  return json;
}

namespace {

// A value for an error message: never the whole of a large or deep one.
std::string Brief(const Json& value) {
  if (value.is_string()) {
    const std::string& s = value.get_ref<const std::string&>();
    return fmt::format("{:?}", s.size() <= 60 ? s : s.substr(0, 57) + "...");
  }
  if (value.is_array() || value.is_object()) return std::string("an ") + value.type_name();
  return value.dump();
}

// A count or a size: an integer in [0, 2^63) (json gives floats, booleans
// and negatives to get<> silently converted).
std::optional<int64_t> Count(const Json& value) {
  if (value.is_number_unsigned()) {
    const auto v = value.get<uint64_t>();
    if (v <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return static_cast<int64_t>(v);
    }
  } else if (value.is_number_integer() && value.get<int64_t>() >= 0) {
    return value.get<int64_t>();
  }
  return std::nullopt;
}

// The bytes a shard file of `rows` rows of `dtype` [rows, row_shape...]
// has: the .npy header tessera writes and the rows; nullopt on overflow.
std::optional<uint64_t> NpyFileBytes(DType dtype, std::vector<int64_t> shape, int64_t rows) {
  shape[0] = rows;
  uint64_t bytes = DTypeSize(dtype);
  for (const int64_t d : shape) {
    if (__builtin_mul_overflow(bytes, static_cast<uint64_t>(d), &bytes)) return std::nullopt;
  }
  if (__builtin_add_overflow(bytes, EncodeNpyHeader(dtype, shape).size(), &bytes)) {
    return std::nullopt;
  }
  return bytes;
}

}  // namespace

StatusOr<Json> ReadManifest(const std::string& folder) {
  const std::string path = folder + "/" + kManifest;
  if (!PathExists(path)) {
    return absl::NotFoundError(
        fmt::format("checkpoint {}: no {} (not a checkpoint, or one whose save did not finish)",
                    folder, kManifest));
  }
  // Capped before it is read: its parsed form takes several times its size.
  StatusOr<std::string> text = ReadFileToString(path, kMaxManifestBytes);
  if (!text.ok()) {
    return absl::DataLossError(fmt::format(
        "checkpoint {}: {} {}: {}", folder, kManifest,
        text.status().code() == absl::StatusCode::kFailedPrecondition
            ? fmt::format("is larger than a manifest may be ({} MiB)", kMaxManifestBytes >> 20)
            : "cannot be read",
        std::string(text.status().message())));
  }
  StatusOr<Json> manifest = ParseManifest(*text);
  if (!manifest.ok()) {
    return absl::DataLossError(fmt::format("checkpoint {}: {} is malformed: {}", folder, kManifest,
                                           std::string(manifest.status().message())));
  }
  return manifest;
}

namespace {

// The checks of a parsed manifest, on a copy of our own (operator[] of a const json would
// assert on a missing key; here it adds a null, which the checks refuse).
Status CheckParsedManifest(Json& manifest) {
  auto bad = [](const std::string& why) { return absl::DataLossError(why); };
  if (!manifest.is_object()) return bad("not a JSON object");
  // Every access below may meet a value of the wrong type: json's exceptions
  // become this error.
  try {
    if (manifest.value("format", std::string()) != kFormat) {
      return bad("no \"format\": \"tessera-checkpoint\"");
    }
    if (!manifest.contains("version") || !manifest["version"].is_number_integer() ||
        manifest["version"] != kFormatVersion) {
      return bad(fmt::format("version {} (this tessera reads {})",
                             Brief(manifest.value("version", Json())), kFormatVersion));
    }
    for (const char* key : {"files", "tensors", "dense_files", "trainer_files"}) {
      if (!manifest.contains(key) || !manifest[key].is_array()) {
        return bad(fmt::format("no \"{}\" list", key));
      }
    }
    for (const char* key : {"step", "num_trainers", "num_parts"}) {
      const std::optional<int64_t> n = manifest.contains(key) ? Count(manifest[key]) : std::nullopt;
      // Trainer and part counts are ints.
      const bool is_int = std::string_view(key) != "step";
      if (!n || (is_int && *n > std::numeric_limits<int32_t>::max())) {
        return bad(fmt::format("no integer \"{}\" >= 0", key));
      }
    }
    if (manifest.contains("created_unix") && !manifest["created_unix"].is_number_integer()) {
      return bad("\"created_unix\" is not an integer");
    }
    (void)manifest.value("graph_name", std::string());
    (void)manifest.value("partition_config_crc32c", std::string());
    (void)manifest.value("rotate", false);
    auto check_name = [&](const Json& name) -> std::optional<std::string> {
      if (!name.is_string() || !IsFileName(name.get_ref<const std::string&>())) {
        return fmt::format("{} is not a file name inside the folder", Brief(name));
      }
      return std::nullopt;
    };
    std::map<std::string, uint64_t> listed;  // The files' sizes.
    for (const Json& f : manifest["files"]) {
      if (auto why = check_name(f.at("path"))) return bad(*why);
      const std::string name = f["path"].get<std::string>();
      const std::optional<int64_t> bytes = Count(f.at("bytes"));
      if (!bytes) return bad(fmt::format("the size {} of {}", Brief(f["bytes"]), name));
      const std::string crc = f.at("crc32c").get<std::string>();
      if (crc.size() != 8 || crc.find_first_not_of("0123456789abcdef") != std::string::npos) {
        return bad(fmt::format("the CRC-32C {} of {}", Brief(f["crc32c"]), name));
      }
      if (!listed.emplace(name, *bytes).second) return bad(fmt::format("{} listed twice", name));
    }
    std::set<std::string> keys;
    for (const Json& t : manifest["tensors"]) {
      const std::string key = t.at("key").get<std::string>();
      if (key.rfind("node/", 0) != 0 && key.rfind("edge/", 0) != 0) {
        return bad(fmt::format("tensor key {}", Brief(key)));
      }
      if (!keys.insert(key).second) return bad(fmt::format("tensor {} listed twice", Brief(key)));
      const std::optional<DType> dtype = DTypeNamed(t.at("dtype").get<std::string>());
      if (!dtype) return bad(fmt::format("the dtype {} of {}", Brief(t["dtype"]), Brief(key)));
      // Sizes are checked: no buffer is ever sized from an impossible shape.
      const Json& shape_json = t.at("shape");
      bool valid = shape_json.is_array() && !shape_json.empty() && shape_json.size() <= 32;
      std::vector<int64_t> shape;
      // A row is checked on its own too: readers size a buffer of a row
      // even when a tensor has no rows.
      uint64_t row_bytes = DTypeSize(*dtype), bytes = 0;
      for (size_t i = 0; valid && i < shape_json.size(); ++i) {
        const std::optional<int64_t> d = Count(shape_json[i]);
        valid = d.has_value() && (i == 0 || !__builtin_mul_overflow(
                                                row_bytes, static_cast<uint64_t>(*d), &row_bytes));
        if (valid) shape.push_back(*d);
      }
      valid = valid && row_bytes <= kMaxRowBytes &&
              !__builtin_mul_overflow(row_bytes, static_cast<uint64_t>(shape[0]), &bytes);
      if (!valid || bytes > (uint64_t{1} << 50)) {
        return bad(fmt::format("the shape {} of {}",
                               shape_json.is_array() && shape_json.size() <= 32 ? shape_json.dump()
                                                                                : Brief(shape_json),
                               Brief(key)));
      }
      // The shards tile [0, rows): every row saved exactly once, each in a
      // listed file that holds its rows.
      std::vector<std::pair<int64_t, int64_t>> ranges;
      if (!t.at("shards").is_array())
        return bad(fmt::format("no \"shards\" list of {}", Brief(key)));
      for (const Json& sh : t["shards"]) {
        const std::optional<int64_t> begin = Count(sh.at("begin")), end = Count(sh.at("end"));
        if (!begin || !end || *end < *begin) {
          return bad(fmt::format("a shard of {} has rows [{}, {})", Brief(key), Brief(sh["begin"]),
                                 Brief(sh["end"])));
        }
        if (sh.contains("part") && !Count(sh["part"])) {
          return bad(fmt::format("a shard of {} has part {}", Brief(key), Brief(sh["part"])));
        }
        ranges.emplace_back(*begin, *end);
        for (const char* field : {"file", "orig"}) {
          if (!sh.contains(field) && std::string_view(field) == "orig") continue;
          if (auto why = check_name(sh.at(field))) return bad(*why);
          const std::string name = sh[field].get<std::string>();
          auto it = listed.find(name);
          if (it == listed.end()) return bad(fmt::format("{} is not listed in \"files\"", name));
          const std::optional<uint64_t> expected =
              std::string_view(field) == "file"
                  ? NpyFileBytes(*dtype, shape, *end - *begin)
                  : NpyFileBytes(DType::kInt64, {*end - *begin}, *end - *begin);
          if (!expected || *expected != it->second) {
            return bad(fmt::format("{} is listed with {} bytes, but rows [{}, {}) of {} take {}",
                                   name, it->second, *begin, *end, Brief(key),
                                   expected ? fmt::to_string(*expected) : "more"));
          }
        }
      }
      std::sort(ranges.begin(), ranges.end());
      int64_t next = 0;
      for (const auto& [begin, end] : ranges) {
        if (begin != next) {
          return bad(fmt::format(
              "the shards of {} do not hold its rows [0, {}) once each: rows [{}, {}) {}",
              Brief(key), shape[0], std::min(begin, next), std::max(begin, next),
              begin < next ? "twice" : "in none"));
        }
        next = end;
      }
      if (next != shape[0]) {
        return bad(
            fmt::format("the shards of {} do not hold its rows [0, {}) once each: rows [{}, {}) {}",
                        Brief(key), shape[0], std::min(next, shape[0]), std::max(next, shape[0]),
                        next < shape[0] ? "in none" : "beyond its end"));
      }
    }
    auto check_listed = [&](const Json& names) -> std::optional<std::string> {
      if (!names.is_array()) return "a list of files is " + Brief(names);
      for (const Json& name : names) {
        if (auto why = check_name(name)) return why;
        if (!listed.count(name.get<std::string>())) {
          return fmt::format("{} is not listed in \"files\"", name.get<std::string>());
        }
      }
      return std::nullopt;
    };
    for (const Json& names : manifest["trainer_files"]) {
      if (auto why = check_listed(names)) return bad(*why);
    }
    if (auto why = check_listed(manifest["dense_files"])) return bad(*why);
  } catch (const Json::exception& e) {
    return bad(e.what());
  }
  return absl::OkStatus();
}

}  // namespace

StatusOr<Json> ParseManifest(std::string_view text) {
  if (text.size() > kMaxManifestBytes) {
    return absl::DataLossError(fmt::format("{} bytes, more than a manifest may have ({} MiB)",
                                           text.size(), kMaxManifestBytes >> 20));
  }
  ASSIGN_OR_RETURN(Json manifest, ParseJson(text, "its text"));
  RETURN_IF_ERROR(CheckParsedManifest(manifest));
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
  // Every path Scan finds is in `dir`, as `current` is: names tell them
  // apart, however `dir` is spelled ("" is the working folder).
  const fs::path current_name = fs::path(current).filename();
  auto is_current = [&](const std::string& path) {
    return fs::path(path).filename() == current_name;
  };
  std::vector<std::string> remove;
  int kept = 0;
  for (const Found& f : Scan(dir.empty() ? "." : dir, &remove)) {
    if (f.rotate && ++kept > keep && !is_current(f.path)) remove.push_back(f.path);
  }
  std::erase_if(remove, is_current);
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

namespace {

Status CannotRead(const std::string& folder, const std::string& name, const Status& st) {
  return absl::DataLossError(fmt::format("checkpoint {}: file {} cannot be read: {}", folder, name,
                                         std::string(st.message())));
}

Status Altered(const std::string& folder, const std::string& name, const std::string& size,
               uint64_t listed) {
  return absl::DataLossError(fmt::format(
      "checkpoint {}: file {} has {} bytes, its manifest says {} (truncated or altered)", folder,
      name, size, listed));
}

Status Corrupt(const std::string& folder, const std::string& name, const std::string& crc,
               const std::string& listed) {
  return absl::DataLossError(
      fmt::format("checkpoint {}: file {} is corrupt: CRC-32C {}, its manifest says {}", folder,
                  name, crc, listed));
}

}  // namespace

Status CheckShardFiles(const std::string& folder, const Json& tensor,
                       const std::map<std::string, Json>& files, bool orig) {
  for (const Json& shard : tensor["shards"]) {
    for (const char* field : {"file", "orig"}) {
      if (std::string_view(field) == "orig" && (!orig || !shard.contains("orig"))) continue;
      const std::string name = shard[field].get<std::string>();
      const auto bytes = files.at(name)["bytes"].get<uint64_t>();  // ReadManifest checked both.
      struct stat st {};
      const bool found = ::stat((folder + "/" + name).c_str(), &st) == 0;
      if (!found || !S_ISREG(st.st_mode)) {
        return absl::DataLossError(
            fmt::format("checkpoint {}: file {} cannot be read: {}", folder, name,
                        found ? "it is not a regular file" : std::strerror(errno)));
      }
      if (static_cast<uint64_t>(st.st_size) != bytes) {
        return Altered(folder, name, fmt::to_string(st.st_size), bytes);
      }
    }
  }
  return absl::OkStatus();
}

StatusOr<std::string> VerifiedFile(const std::string& folder, const std::string& name,
                                   const std::map<std::string, Json>& files) {
  auto it = files.find(name);
  if (it == files.end()) {
    return absl::NotFoundError(
        fmt::format("checkpoint {}: {} is not listed in its manifest", folder, name));
  }
  const auto bytes = it->second["bytes"].get<uint64_t>();
  // Read once into memory of our own, at most the listed size: the bytes
  // checksummed are the bytes used, whatever happens to the file meanwhile.
  StatusOr<std::string> file = ReadFileToString(folder + "/" + name, bytes);
  if (!file.ok() && file.status().code() == absl::StatusCode::kFailedPrecondition) {
    StatusOr<int64_t> size = FileSize(folder + "/" + name);
    return Altered(folder, name, size.ok() ? fmt::to_string(*size) : "more", bytes);
  }
  if (!file.ok()) return CannotRead(folder, name, file.status());
  if (file->size() != bytes) {
    return Altered(folder, name, fmt::to_string(file->size()), bytes);
  }
  const std::string crc = Hex(Crc32c(file->data(), file->size()));
  if (crc != it->second["crc32c"].get<std::string>()) {
    return Corrupt(folder, name, crc, it->second["crc32c"].get<std::string>());
  }
  return file;
}

namespace {

std::atomic<size_t> shard_chunk_bytes{kShardChunkBytes};

// Pass 1 reads at least this much at once: an .npy header (at most 64 KiB
// and a few bytes) is parsed from the first piece.
constexpr size_t kHeaderRoom = size_t{1} << 17;

// One file of a shard: the rows or their original ids.
struct ShardFile {
  std::string name;
  InputFile file;
  uint64_t data_offset = 0;  // Where the rows start.
  size_t row_bytes = 0;
  std::string listed_crc;
  uint32_t crc = 0;  // Of the bytes read by the second pass.
};

// The first pass over file `name` of a shard, which must hold `dtype`
// [shape]: its size, header and (bool) rows, and the CRC-32C of all its
// bytes against the manifest's. `buffer` is for the reads.
StatusOr<ShardFile> VerifyShardFile(const std::string& folder, const std::string& name,
                                    const std::map<std::string, Json>& files, DType dtype,
                                    const std::vector<int64_t>& shape, size_t chunk,
                                    std::vector<uint8_t>& buffer) {
  const Json& entry = files.at(name);  // ReadManifest checked that it is listed.
  const auto bytes = entry["bytes"].get<uint64_t>();
  const std::string path = folder + "/" + name;
  StatusOr<InputFile> opened = InputFile::Open(path);
  if (!opened.ok()) return CannotRead(folder, name, opened.status());
  ShardFile f{
      .name = name, .file = std::move(*opened), .listed_crc = entry["crc32c"].get<std::string>()};
  if (f.file.size() != bytes) {
    return Altered(folder, name, fmt::to_string(f.file.size()), bytes);
  }
  f.row_bytes = DTypeSize(dtype);
  for (size_t i = 1; i < shape.size(); ++i) f.row_bytes *= static_cast<size_t>(shape[i]);
  buffer.resize(static_cast<size_t>(std::min<uint64_t>(bytes, std::max(chunk, kHeaderRoom))));
  // A problem of the header or the rows is reported if the bytes are the
  // listed ones (a corrupt file is named corrupt first).
  Status problem;
  bool header_read = false;
  uint32_t crc = 0;
  for (uint64_t offset = 0; offset < bytes;) {
    const auto n = static_cast<size_t>(std::min<uint64_t>(buffer.size(), bytes - offset));
    if (Status st = f.file.ReadAt(offset, buffer.data(), n); !st.ok()) {
      return CannotRead(folder, name, st);
    }
    crc = Crc32cExtend(crc, buffer.data(), n);
    if (!header_read) {
      header_read = true;
      StatusOr<NpyHeader> h = ParseNpyHeader(buffer.data(), n, bytes, path);
      if (!h.ok()) {
        problem = h.status();
      } else if (h->dtype != dtype || h->shape != shape) {
        problem = absl::DataLossError(
            fmt::format("checkpoint {}: file {} holds {} [{}], its manifest says {} [{}]", folder,
                        name, DTypeName(h->dtype), fmt::join(h->shape, ", "), DTypeName(dtype),
                        fmt::join(shape, ", ")));
      } else {
        f.data_offset = h->data_offset;
      }
    }
    if (dtype == DType::kBool && problem.ok()) {
      // Any other byte is no bool (torch's bool tensors assume 0 or 1).
      const uint64_t from = std::max(offset, f.data_offset);
      for (uint64_t at = from; at < offset + n; ++at) {
        if (buffer[at - offset] > 1) {
          problem = absl::DataLossError(fmt::format(
              "checkpoint {}: file {} holds the byte {} at offset {}, not a bool (0 or 1)", folder,
              name, buffer[at - offset], at));
          break;
        }
      }
    }
    offset += n;
  }
  if (Hex(crc) != f.listed_crc) {
    return Corrupt(folder, name, Hex(crc), f.listed_crc);
  }
  RETURN_IF_ERROR(problem);
  if (!header_read) {
    return absl::DataLossError(fmt::format("checkpoint {}: file {} is empty", folder, name));
  }
  return f;
}

// The second pass's read of `rows` rows from row `first` of `f` into `out`
// (its header first, for the checksum, when `first` is 0).
Status ReadRows(const std::string& folder, ShardFile& f, int64_t first, int64_t rows,
                uint8_t* out) {
  if (first == 0 && f.data_offset > 0) {
    std::vector<uint8_t> header(static_cast<size_t>(f.data_offset));
    if (Status st = f.file.ReadAt(0, header.data(), header.size()); !st.ok()) {
      return CannotRead(folder, f.name, st);
    }
    f.crc = Crc32cExtend(f.crc, header.data(), header.size());
  }
  const size_t n = static_cast<size_t>(rows) * f.row_bytes;
  if (Status st = f.file.ReadAt(f.data_offset + static_cast<uint64_t>(first) * f.row_bytes, out, n);
      !st.ok()) {
    return CannotRead(folder, f.name, st);
  }
  f.crc = Crc32cExtend(f.crc, out, n);
  return absl::OkStatus();
}

}  // namespace

size_t ShardChunkBytes() { return shard_chunk_bytes.load(std::memory_order_relaxed); }

void SetShardChunkBytesForTesting(size_t bytes) {
  shard_chunk_bytes.store(bytes == 0 ? kShardChunkBytes : bytes, std::memory_order_relaxed);
}

Status ReadShard(const std::string& folder, const Json& tensor, const Json& shard,
                 const std::map<std::string, Json>& files, ShardParts parts,
                 const std::function<Status(const ShardChunk&)>& use) {
  if (parts.orig && !shard.contains("orig")) {
    return absl::FailedPreconditionError(
        fmt::format("checkpoint {}: {} of '{}' has no original ids (its job's partition lacked "
                    "--return-mapping)",
                    folder, shard["file"].get<std::string>(), tensor["key"].get<std::string>()));
  }
  std::vector<int64_t> shape = tensor["shape"].get<std::vector<int64_t>>();
  const int64_t rows = shard["end"].get<int64_t>() - shard["begin"].get<int64_t>();
  shape[0] = rows;
  const DType dtype = *DTypeNamed(tensor["dtype"].get<std::string>());
  const size_t chunk = ShardChunkBytes();
  // Pass 1: every byte checked before a row is handed out.
  std::vector<uint8_t> buffer;
  std::optional<ShardFile> data, ids;
  if (parts.rows) {
    ASSIGN_OR_RETURN(data, VerifyShardFile(folder, shard["file"].get<std::string>(), files, dtype,
                                           shape, chunk, buffer));
  }
  if (parts.orig) {
    ASSIGN_OR_RETURN(ids, VerifyShardFile(folder, shard["orig"].get<std::string>(), files,
                                          DType::kInt64, {rows}, chunk, buffer));
  }
  // Pass 2: the rows again, chunk by chunk, checksummed again.
  const size_t row_bytes = (data ? data->row_bytes : 0) + (ids ? sizeof(int64_t) : 0);
  const int64_t per_chunk =
      std::max<int64_t>(1, static_cast<int64_t>(chunk / std::max<size_t>(row_bytes, 1)));
  const int64_t chunk_rows = rows == 0 ? 0 : std::min(per_chunk, rows);  // No rows: no buffers.
  buffer.clear();
  buffer.shrink_to_fit();
  std::vector<uint8_t> data_buffer(data ? static_cast<size_t>(chunk_rows) * data->row_bytes : 0);
  std::vector<int64_t> ids_buffer(ids ? static_cast<size_t>(chunk_rows) : 0);
  for (int64_t first = 0; first < rows || first == 0; first += chunk_rows) {
    const int64_t n = std::min(chunk_rows, rows - first);
    if (data) RETURN_IF_ERROR(ReadRows(folder, *data, first, n, data_buffer.data()));
    if (ids) {
      RETURN_IF_ERROR(
          ReadRows(folder, *ids, first, n, reinterpret_cast<uint8_t*>(ids_buffer.data())));
    }
    if (data && dtype == DType::kBool) {
      const size_t bytes = static_cast<size_t>(n) * data->row_bytes;
      const auto other = std::find_if(data_buffer.begin(), data_buffer.begin() + bytes,
                                      [](uint8_t b) { return b > 1; });
      if (other != data_buffer.begin() + bytes) {
        return absl::DataLossError(
            fmt::format("checkpoint {}: file {} changed while it was read: it holds the byte {} "
                        "at offset {}, not a bool (0 or 1)",
                        folder, data->name, *other,
                        data->data_offset + static_cast<uint64_t>(first) * data->row_bytes +
                            (other - data_buffer.begin())));
      }
    }
    if (n > 0) {
      RETURN_IF_ERROR(use(ShardChunk{.first = first,
                                     .rows = n,
                                     .data = data ? data_buffer.data() : nullptr,
                                     .ids = ids ? ids_buffer.data() : nullptr}));
    }
    if (rows == 0) break;
  }
  for (ShardFile* f : {data ? &*data : nullptr, ids ? &*ids : nullptr}) {
    if (f != nullptr && Hex(f->crc) != f->listed_crc) {
      return absl::DataLossError(fmt::format(
          "checkpoint {}: file {} changed while it was read: CRC-32C {} the second time, its "
          "manifest says {}",
          folder, f->name, Hex(f->crc), f->listed_crc));
    }
  }
  return absl::OkStatus();
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
    if (!IsFileName(name)) {
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
