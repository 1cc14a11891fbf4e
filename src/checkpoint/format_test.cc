// File: src/checkpoint/format_test.cc
//
// Reading hand-made checkpoints (docs/checkpoint.md): a malformed, hostile
// or changing manifest or shard file gets an error naming the problem,
// never a crash, a hang, a huge allocation or wrong rows; and
// `export-embeddings` never leaves a partial file in place of a good one.
#include "src/checkpoint/format.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <future>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "src/base/crc32c.h"
#include "src/base/test_util.h"
#include "src/checkpoint/export.h"
#include "src/graph/npy.h"

namespace tessera::checkpoint {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;
using Ranges = std::vector<std::pair<int64_t, int64_t>>;

// Writes `bytes` as file `name` of `folder`; returns its manifest entry.
Json Put(const std::string& folder, const std::string& name, const std::string& bytes) {
  EXPECT_TRUE(MakeDirs(fs::path(folder + "/" + name).parent_path().string()).ok());
  EXPECT_TRUE(WriteFileAtomic(folder + "/" + name, bytes).ok());
  return {
      {"path", name}, {"bytes", bytes.size()}, {"crc32c", Hex(Crc32c(bytes.data(), bytes.size()))}};
}

template <typename T>
std::string Npy(DType dtype, const std::vector<int64_t>& shape, const std::vector<T>& values) {
  return EncodeNpyHeader(dtype, shape) +
         std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
}

void WriteManifest(const std::string& folder, const Json& manifest) {
  ASSERT_TRUE(WriteFileAtomic(folder + "/" + kManifest, manifest.dump(1)).ok());
}

// A checkpoint in `folder` of one float32 tensor "node/emb" [rows, 2]
// (row r holds {r, r + 0.5}, original id r) in shards `ranges`; rows
// outside [0, rows) hold -1. Returns its manifest (written).
Json Make(const std::string& folder, const Ranges& ranges, int64_t rows = 6, int64_t step = 1) {
  Json m = {{"format", kFormat},       {"version", kFormatVersion}, {"graph_name", "g"},
            {"num_parts", 1},          {"num_trainers", 1},         {"step", step},
            {"rotate", true},          {"extra", Json::object()},   {"files", Json::array()},
            {"tensors", Json::array()}};
  m["dense_files"] = Json::array({"d.pt"});
  m["trainer_files"] = Json::array({Json::array({"t0.pt"})});
  m["files"].push_back(Put(folder, "d.pt", "dense"));
  m["files"].push_back(Put(folder, "t0.pt", "trainer"));
  Json shards = Json::array();
  for (size_t i = 0; i < ranges.size(); ++i) {
    const auto [begin, end] = ranges[i];
    std::vector<float> values;
    std::vector<int64_t> ids;
    for (int64_t r = begin; r < end; ++r) {
      const bool inside = r >= 0 && r < rows;
      values.push_back(inside ? static_cast<float>(r) : -1);
      values.push_back(inside ? static_cast<float>(r) + 0.5f : -1);
      ids.push_back(r);
    }
    const std::string file = fmt::format("tensors/node~emb.p0.{}.npy", i);
    const std::string orig = fmt::format("tensors/node~emb.p0.{}.orig.npy", i);
    m["files"].push_back(Put(folder, file, Npy(DType::kFloat32, {end - begin, 2}, values)));
    m["files"].push_back(Put(folder, orig, Npy(DType::kInt64, {end - begin}, ids)));
    shards.push_back({{"file", file}, {"part", 0}, {"begin", begin}, {"end", end}, {"orig", orig}});
  }
  m["tensors"].push_back({{"key", "node/emb"},
                          {"dtype", "float32"},
                          {"shape", {rows, 2}},
                          {"policy", "node"},
                          {"type", "_N"},
                          {"shards", shards}});
  WriteManifest(folder, m);
  return m;
}

// ReadManifest(folder) must fail with a message holding `part`.
void ExpectRefused(const std::string& folder, const std::string& part) {
  StatusOr<Json> m = ReadManifest(folder);
  ASSERT_FALSE(m.ok()) << "accepted, expected: " << part;
  EXPECT_EQ(m.status().code(), absl::StatusCode::kDataLoss) << m.status();
  EXPECT_THAT(m.status().message(), HasSubstr(part));
  EXPECT_THAT(m.status().message(), HasSubstr(folder));
}

TEST(CheckpointFormatTest, AGoodCheckpointReadsAndExports) {
  TempDir dir;
  Make(dir / "c", {{0, 4}, {4, 6}});
  ASSERT_TRUE(ReadManifest(dir / "c").ok()) << ReadManifest(dir / "c").status();
  StatusOr<std::vector<std::string>> written = ExportTensors(dir / "c", dir / "out");
  ASSERT_TRUE(written.ok()) << written.status();
  StatusOr<Array> a = ReadNpy(dir / "out/node~emb.npy");
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_EQ(a->shape(), (std::vector<int64_t>{6, 2}));
  EXPECT_EQ(static_cast<const float*>(a->data())[11], 5.5f);
  EXPECT_EQ(CompleteCheckpoints(dir.path()).size(), 1u);
}

// Every row once: an overlap, a shard past the end, a negative or reversed
// range and a hole are all refused by the manifest check, before a row is
// used (restore and export read only manifests that pass it).
TEST(CheckpointFormatTest, ShardsMustHoldEveryRowExactlyOnce) {
  TempDir dir;
  const std::vector<std::pair<Ranges, std::string>> cases = {
      {{{0, 6}, {0, 6}}, "rows [0, 6) twice"},
      {{{0, 6}, {4, 9}}, "rows [4, 6) twice"},
      {{{0, 6}, {6, 9}}, "rows [6, 9) beyond its end"},
      {{{0, 3}, {3, 4}, {3, 6}}, "rows [3, 4) twice"},
      {{{0, 3}}, "rows [3, 6) in none"},
      {{{0, 2}, {3, 6}}, "rows [2, 3) in none"}};
  for (const auto& [ranges, why] : cases) {
    Make(dir / "c", ranges);
    ExpectRefused(dir / "c", why);
    StatusOr<std::vector<std::string>> exported = ExportTensors(dir / "c", dir / "out");
    EXPECT_FALSE(exported.ok()) << why;
    EXPECT_FALSE(PathExists(dir / "out/node~emb.npy")) << why;
  }
  Json m = Make(dir / "c", {{0, 6}});
  m["tensors"][0]["shards"][0]["begin"] = 4;  // Reversed: [4, 0).
  m["tensors"][0]["shards"][0]["end"] = 0;
  WriteManifest(dir / "c", m);
  ExpectRefused(dir / "c", "has rows [4, 0)");
  m["tensors"][0]["shards"][0]["begin"] = -3;
  WriteManifest(dir / "c", m);
  ExpectRefused(dir / "c", "has rows [-3, 0)");
  EXPECT_TRUE(CompleteCheckpoints(dir.path()).empty());
}

// JSON nested a million deep: parsed, it would overflow the stack where
// json copies or dumps it recursively (the error message, "extra").
TEST(CheckpointFormatTest, DeeplyNestedJsonIsRefused) {
  TempDir dir;
  const std::string deep = std::string(1000000, '[') + std::string(1000000, ']');
  ASSERT_TRUE(MakeDirs(dir / "version").ok());
  ASSERT_TRUE(WriteFileAtomic(dir / "version/manifest.json",
                              R"({"format": "tessera-checkpoint", "version": )" + deep + "}")
                  .ok());
  ExpectRefused(dir / "version", "JSON nested deeper than 64 levels");
  Make(dir / "extra", {{0, 6}});
  std::string text = *ReadFileToString(dir / "extra/manifest.json");
  const size_t at = text.find("\"extra\": {");
  ASSERT_NE(at, std::string::npos);
  text.insert(at + 10, "\"x\": " + deep);
  ASSERT_TRUE(WriteFileAtomic(dir / "extra/manifest.json", text).ok());
  ExpectRefused(dir / "extra", "JSON nested deeper than 64 levels");
  EXPECT_TRUE(CompleteCheckpoints(dir.path()).empty());
  EXPECT_FALSE(ExportTensors(dir / "extra", dir / "out").ok());
  // Brackets inside strings do not count; 64 levels are fine.
  EXPECT_TRUE(ParseJson(R"({"a": "[[[[[[\"[[[["})", "t").ok());
  EXPECT_TRUE(ParseJson(std::string(64, '[') + std::string(64, ']'), "t").ok());
  EXPECT_FALSE(ParseJson(std::string(65, '[') + std::string(65, ']'), "t").ok());
  // A large version is shown by its type, not dumped whole.
  ASSERT_TRUE(WriteFileAtomic(dir / "version/manifest.json",
                              R"({"format": "tessera-checkpoint", "version": [")" +
                                  std::string(10000, 'x') + "\"]}")
                  .ok());
  StatusOr<Json> m = ReadManifest(dir / "version");
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(m.status().message(), HasSubstr("version an array"));
  EXPECT_LT(m.status().message().size(), 300u);
}

// A manifest above the cap is refused before it is read (here a sparse
// file: no bytes are written).
TEST(CheckpointFormatTest, AManifestAboveTheCapIsRefusedUnread) {
  TempDir dir;
  Make(dir / "c", {{0, 6}});
  ASSERT_EQ(::truncate((dir / "c/manifest.json").c_str(), kMaxManifestBytes + 1), 0);
  ExpectRefused(dir / "c", "larger than a manifest may be (64 MiB)");
  EXPECT_TRUE(CompleteCheckpoints(dir.path()).empty());
}

// No name from a manifest reaches outside the folder.
TEST(CheckpointFormatTest, FileNamesOutsideTheFolderAreRefused) {
  TempDir dir;
  const Json good = Make(dir / "c", {{0, 6}});
  ASSERT_TRUE(MakeDirs(dir / "elsewhere").ok());
  const Json outside = Put(dir / "c", "../elsewhere/secret.npy",
                           *ReadFileToString(dir / "c/tensors/node~emb.p0.0.npy"));
  auto with = [&](const std::function<void(Json&)>& change) {
    Json m = good;
    m["files"].push_back(outside);
    change(m);
    WriteManifest(dir / "c", m);
  };
  with([](Json&) {});
  ExpectRefused(dir / "c", R"("../elsewhere/secret.npy" is not a file name inside the folder)");
  with([&](Json& m) {
    m["files"].erase(m["files"].size() - 1);
    m["files"][0]["path"] = "/etc/passwd";
  });
  ExpectRefused(dir / "c", R"("/etc/passwd" is not a file name)");
  for (const char* field : {"file", "orig"}) {
    Json m = good;
    m["tensors"][0]["shards"][0][field] = "../c/tensors/node~emb.p0.0.npy";
    WriteManifest(dir / "c", m);
    ExpectRefused(dir / "c", R"("../c/tensors/node~emb.p0.0.npy" is not a file name)");
  }
  Json m = good;
  m["dense_files"] = Json::array({"../d.pt"});
  WriteManifest(dir / "c", m);
  ExpectRefused(dir / "c", R"("../d.pt" is not a file name)");
  m = good;
  m["trainer_files"] = Json::array({Json::array({"t0.pt", "/t1.pt"})});
  WriteManifest(dir / "c", m);
  ExpectRefused(dir / "c", R"("/t1.pt" is not a file name)");
  m = good;
  m["dense_files"] = Json::array({"unlisted.pt"});
  WriteManifest(dir / "c", m);
  ExpectRefused(dir / "c", "unlisted.pt is not listed in \"files\"");
}

// Sizes and counts are non-negative integers: a float, a boolean or a
// negative number is refused, not truncated or wrapped.
TEST(CheckpointFormatTest, SizeFieldsMustBeNonNegativeIntegers) {
  TempDir dir;
  const Json good = Make(dir / "c", {{0, 6}});
  const std::vector<std::pair<std::function<void(Json&)>, std::string>> cases = {
      {[](Json& m) {
         m["tensors"][0]["shape"] = {6.99, 2};
       },
       "the shape [6.99,2]"},
      {[](Json& m) {
         m["tensors"][0]["shape"] = {6, 1e300};
       },
       "the shape [6,1e+300]"},
      {[](Json& m) {
         m["tensors"][0]["shape"] = {6, true};
       },
       "the shape [6,true]"},
      {[](Json& m) {
         m["tensors"][0]["shape"] = {6, -2};
       },
       "the shape [6,-2]"},
      {[](Json& m) { m["tensors"][0]["shape"] = 6; }, "the shape 6"},
      // Rows above 1 GiB, even of a tensor without rows (a reader would
      // size a buffer of a row from it).
      {[](Json& m) {
         m["tensors"][0]["shape"] = {0, int64_t{1} << 40};
       },
       "the shape [0,1099511627776]"},
      {[](Json& m) {
         m["tensors"][0]["shape"] = {6, (int64_t{1} << 28) + 1};
       },
       "the shape [6,268435457]"},
      {[](Json& m) { m["tensors"][0]["shards"][0]["begin"] = 0.4; }, "has rows [0.4, 6)"},
      {[](Json& m) { m["tensors"][0]["shards"][0]["end"] = 6.5; }, "has rows [0, 6.5)"},
      {[](Json& m) { m["tensors"][0]["shards"][0]["end"] = "6"; }, R"(has rows [0, "6"))"},
      {[](Json& m) { m["tensors"][0]["shards"][0]["part"] = -1; }, "has part -1"},
      {[](Json& m) { m["files"][2]["bytes"] = m["files"][2]["bytes"].get<double>() + 0.75; },
       "the size"},
      {[](Json& m) { m["files"][2]["bytes"] = -1; }, "the size -1"},
      {[](Json& m) { m["files"][2]["bytes"] = UINT64_MAX; }, "the size 18446744073709551615"},
      {[](Json& m) { m["files"][2]["crc32c"] = "12"; }, R"(the CRC-32C "12")"},
      {[](Json& m) { m["step"] = 3.5; }, R"(no integer "step")"},
      {[](Json& m) { m["num_trainers"] = int64_t{1} << 40; }, R"(no integer "num_trainers")"},
      {[](Json& m) { m["version"] = 1.0; }, "version 1.0"},
      {[](Json& m) { m["files"].push_back(m["files"][0]); }, "d.pt listed twice"},
      {[](Json& m) {
         m["tensors"][0]["shards"] = {{"x", m["tensors"][0]["shards"][0]}};
       },
       R"(no "shards" list of "node/emb")"},
      {[](Json& m) { m["tensors"].push_back(m["tensors"][0]); }, R"("node/emb" listed twice)"}};
  for (const auto& [change, why] : cases) {
    Json m = good;
    change(m);
    WriteManifest(dir / "c", m);
    ExpectRefused(dir / "c", why);
    // The same checks on its text (what a save runs before it writes one).
    EXPECT_THAT(ParseManifest(m.dump()).status().message(), HasSubstr(why));
  }
  EXPECT_TRUE(ParseManifest(good.dump(1)).ok());
  Json m = good;
  m["trainer_files"] = Json::array({Json::array({"t0.pt"}), Json::array({"t0.pt"})});
  m["files"].push_back(m["files"][1]);  // Both trainers listed their t0.pt.
  EXPECT_THAT(ParseManifest(m.dump()).status().message(), HasSubstr("t0.pt listed twice"));
}

// A shard's listed size must be that of its rows, and the file on disk
// that size, before anything is sized from the tensor's shape.
TEST(CheckpointFormatTest, ShardFilesMustHoldTheBytesOfTheirRows) {
  TempDir dir;
  Json m = Make(dir / "c", {{0, 6}});
  m["tensors"][0]["shape"] = {6, int64_t{1} << 28};  // 6 GiB claimed by a small manifest.
  WriteManifest(dir / "c", m);
  ExpectRefused(dir / "c",
                "tensors/node~emb.p0.0.npy is listed with 176 bytes, but rows [0, 6) of "
                "\"node/emb\" take 6442451072");
  m = Make(dir / "c", {{0, 6}});
  ASSERT_EQ(::truncate((dir / "c/tensors/node~emb.p0.0.orig.npy").c_str(), 100), 0);
  StatusOr<Json> read = ReadManifest(dir / "c");
  ASSERT_TRUE(read.ok()) << read.status();
  const std::map<std::string, Json> files = FilesOf(*read);
  EXPECT_TRUE(CheckShardFiles(dir / "c", (*read)["tensors"][0], files, /*orig=*/false).ok());
  Status st = CheckShardFiles(dir / "c", (*read)["tensors"][0], files, /*orig=*/true);
  EXPECT_THAT(st.message(),
              HasSubstr("tensors/node~emb.p0.0.orig.npy has 100 bytes, its manifest says 176"));
  ASSERT_TRUE(RemoveAll(dir / "c/tensors/node~emb.p0.0.npy").ok());
  st = CheckShardFiles(dir / "c", (*read)["tensors"][0], files, /*orig=*/false);
  EXPECT_THAT(st.message(), HasSubstr("file tensors/node~emb.p0.0.npy cannot be read"));
  StatusOr<std::vector<std::string>> exported = ExportTensors(dir / "c", dir / "out");
  EXPECT_FALSE(exported.ok());
  EXPECT_FALSE(PathExists(dir / "out/node~emb.npy"));
}

// Runs `read` with a bounded wait: a read that waits for a writer of
// `fifo` fails the test (and is unblocked by one) rather than hang it.
template <typename F>
auto WithoutWaiting(const std::string& fifo, F read) {
  auto result = std::async(std::launch::async, read);
  if (result.wait_for(std::chrono::seconds(5)) != std::future_status::ready) {
    ADD_FAILURE() << "the read waits for a writer of " << fifo;
    const int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
    result.wait();
    if (fd >= 0) ::close(fd);
  }
  return result.get();
}

// A FIFO in place of a manifest or of a shard: refused at once (an open
// without O_NONBLOCK would wait for a writer forever).
TEST(CheckpointFormatTest, AFifoInPlaceOfAFileIsRefused) {
  TempDir dir;
  Make(dir / "c", {{0, 6}});
  const std::string orig = dir / "c/tensors/node~emb.p0.0.orig.npy";
  ASSERT_TRUE(RemoveAll(orig).ok());
  ASSERT_EQ(::mkfifo(orig.c_str(), 0600), 0);
  StatusOr<std::vector<std::string>> exported =
      WithoutWaiting(orig, [&] { return ExportTensors(dir / "c", dir / "out"); });
  ASSERT_FALSE(exported.ok());
  EXPECT_THAT(exported.status().message(), HasSubstr("is not a regular file"));
  const std::string manifest = dir / "c/manifest.json";
  ASSERT_TRUE(RemoveAll(manifest).ok());
  ASSERT_EQ(::mkfifo(manifest.c_str(), 0600), 0);
  StatusOr<Json> m = WithoutWaiting(manifest, [&] { return ReadManifest(dir / "c"); });
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(m.status().message(), HasSubstr("is not a regular file"));
  EXPECT_TRUE(WithoutWaiting(manifest, [&] { return CompleteCheckpoints(dir.path()); }).empty());
}

// Shards read in chunks of this many bytes while alive.
class SmallChunks {
 public:
  explicit SmallChunks(size_t bytes) { SetShardChunkBytesForTesting(bytes); }
  ~SmallChunks() { SetShardChunkBytesForTesting(0); }
};

// The chunks ReadShard hands out for shard `index` of the checkpoint in
// `folder`, with `change` called after the first; its status.
Status ReadChunks(const std::string& folder, size_t index, std::vector<ShardChunk>* chunks,
                  std::vector<float>* values, const std::function<void()>& change = {}) {
  StatusOr<Json> m = ReadManifest(folder);
  if (!m.ok()) return m.status();
  const std::map<std::string, Json> files = FilesOf(*m);
  bool changed = false;
  return ReadShard(folder, (*m)["tensors"][0], (*m)["tensors"][0]["shards"][index], files,
                   {.rows = true, .orig = true}, [&](const ShardChunk& chunk) {
                     chunks->push_back(chunk);
                     const auto* v = reinterpret_cast<const float*>(chunk.data);
                     values->insert(values->end(), v, v + 2 * chunk.rows);
                     for (int64_t i = 0; i < chunk.rows && !changed; ++i) {
                       // Original id r holds {r, r + 0.5}.
                       EXPECT_EQ(static_cast<float>(chunk.ids[i]), v[2 * i]);
                     }
                     if (chunks->size() == 1 && change) {
                       change();
                       changed = true;
                     }
                     return absl::OkStatus();
                   });
}

// A shard is read in chunks of bounded size, every byte checked before the
// first is handed out and checksummed again as it is: the file rewritten or
// truncated meanwhile gives an error (through a map, the truncation would
// raise SIGBUS), never rows used as if verified.
TEST(CheckpointFormatTest, RowsAreTheBytesVerifiedWhateverHappensToTheFile) {
  TempDir dir;
  Make(dir / "c", {{0, 3000}}, /*rows=*/3000);  // 24 000 bytes of rows, 24 000 of ids.
  const SmallChunks small(4096);
  std::vector<ShardChunk> chunks;
  std::vector<float> values;
  Status st = ReadChunks(dir / "c", 0, &chunks, &values);
  ASSERT_TRUE(st.ok()) << st;
  // 4096 bytes a chunk: 256 rows of 8 bytes and their 8-byte ids.
  ASSERT_EQ(chunks.size(), 12u);
  int64_t next = 0;
  for (const ShardChunk& chunk : chunks) {
    EXPECT_EQ(chunk.first, next);
    EXPECT_LE(chunk.rows, 256);
    next += chunk.rows;
  }
  EXPECT_EQ(next, 3000);
  ASSERT_EQ(values.size(), 6000u);
  EXPECT_EQ(values[2 * 2999 + 1], 2999.5f);

  // Rewritten in place (the same inode, the same size) after the first chunk.
  const std::string shard = dir / "c/tensors/node~emb.p0.0.npy";
  const std::string bytes = *ReadFileToString(shard);
  auto rewrite = [&] {
    const std::string twos(bytes.size() - 128, '\x02');
    FILE* f = std::fopen(shard.c_str(), "r+b");
    ASSERT_NE(f, nullptr);
    std::fseek(f, 128, SEEK_SET);
    std::fwrite(twos.data(), 1, twos.size(), f);
    std::fclose(f);
  };
  chunks.clear();
  st = ReadChunks(dir / "c", 0, &chunks, &values, rewrite);
  EXPECT_EQ(st.code(), absl::StatusCode::kDataLoss) << st;
  EXPECT_THAT(st.message(),
              HasSubstr("file tensors/node~emb.p0.0.npy changed while it was read: CRC-32C"));
  EXPECT_THAT(st.message(), HasSubstr(dir / "c"));
  // And read again now, the changed file is refused before a chunk is used.
  chunks.clear();
  st = ReadChunks(dir / "c", 0, &chunks, &values);
  EXPECT_THAT(st.message(), HasSubstr("tensors/node~emb.p0.0.npy is corrupt"));
  EXPECT_TRUE(chunks.empty());

  // Truncated after the first chunk: an error, not SIGBUS.
  ASSERT_TRUE(WriteFileAtomic(shard, bytes).ok());
  chunks.clear();
  st = ReadChunks(dir / "c", 0, &chunks, &values,
                  [&] { ASSERT_EQ(::truncate(shard.c_str(), 64), 0); });
  EXPECT_EQ(st.code(), absl::StatusCode::kDataLoss) << st;
  EXPECT_THAT(st.message(), HasSubstr("tensors/node~emb.p0.0.npy cannot be read"));
  EXPECT_THAT(st.message(), HasSubstr("shrank while it was read"));
  EXPECT_EQ(chunks.size(), 1u);
}

// Shards larger than a chunk export and read whole, whatever the chunk
// (even one smaller than a row and its id: one row at a time).
TEST(CheckpointFormatTest, ShardsLargerThanAChunkExportWhole) {
  TempDir dir;
  Make(dir / "c", {{0, 1000}, {1000, 2500}, {2500, 2500}, {2500, 3000}}, /*rows=*/3000);
  ASSERT_TRUE(ExportTensors(dir / "c", dir / "whole").ok());
  const std::string whole = *ReadFileToString(dir / "whole/node~emb.npy");
  for (const size_t chunk : {size_t{1}, size_t{100}, size_t{4096}}) {
    const SmallChunks small(chunk);
    StatusOr<std::vector<std::string>> written = ExportTensors(dir / "c", dir / "out");
    ASSERT_TRUE(written.ok()) << written.status();
    EXPECT_EQ(*ReadFileToString(dir / "out/node~emb.npy"), whole) << chunk;
    std::vector<ShardChunk> chunks;
    std::vector<float> values;
    ASSERT_TRUE(ReadChunks(dir / "c", 1, &chunks, &values).ok());
    EXPECT_EQ(chunks.size(),
              (1500 + std::max<size_t>(chunk / 16, 1) - 1) / std::max<size_t>(chunk / 16, 1))
        << chunk;
    ASSERT_EQ(values.size(), 3000u);
    EXPECT_EQ(values[0], 1000.0f);
    EXPECT_EQ(values.back(), 2499.5f);
  }
  StatusOr<Array> a = ReadNpy(dir / "whole/node~emb.npy");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(static_cast<const float*>(a->data())[2 * 2999 + 1], 2999.5f);
  EXPECT_EQ(ShardChunkBytes(), kShardChunkBytes);
}

// A failed export leaves an earlier export of the tensor as it was, and no
// temporary file.
TEST(CheckpointFormatTest, AFailedExportKeepsTheEarlierExport) {
  TempDir dir;
  Make(dir / "c", {{0, 3}, {3, 6}});
  ASSERT_TRUE(ExportTensors(dir / "c", dir / "out").ok());
  const std::string good = *ReadFileToString(dir / "out/node~emb.npy");
  std::string shard = *ReadFileToString(dir / "c/tensors/node~emb.p0.1.npy");
  shard[130] ^= 1;  // Its manifest entry is unchanged.
  ASSERT_TRUE(WriteFileAtomic(dir / "c/tensors/node~emb.p0.1.npy", shard).ok());
  StatusOr<std::vector<std::string>> exported = ExportTensors(dir / "c", dir / "out");
  ASSERT_FALSE(exported.ok());
  EXPECT_THAT(exported.status().message(), HasSubstr("node~emb.p0.1.npy is corrupt"));
  EXPECT_EQ(*ReadFileToString(dir / "out/node~emb.npy"), good);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir / "out"), fs::directory_iterator()), 1);
}

// Bool rows hold 0 or 1 only.
TEST(CheckpointFormatTest, BoolRowsOtherThanZeroOrOneAreRefused) {
  TempDir dir;
  Json m = Make(dir / "c", {{0, 4}}, /*rows=*/4);
  const std::vector<uint8_t> values = {0, 1, 1, 0, 2, 1, 0, 0};
  m["files"][2] = Put(dir / "c", "tensors/node~emb.p0.0.npy", Npy(DType::kBool, {4, 2}, values));
  m["tensors"][0]["dtype"] = "bool";
  m["tensors"][0]["shape"] = {4, 2};
  WriteManifest(dir / "c", m);
  StatusOr<std::vector<std::string>> exported = ExportTensors(dir / "c", dir / "out");
  ASSERT_FALSE(exported.ok());
  EXPECT_THAT(exported.status().message(),
              HasSubstr("tensors/node~emb.p0.0.npy holds the byte 2 at offset 132, not a bool"));
}

// Two keys never share a file stem ('~' may be in a type or tensor name).
TEST(CheckpointFormatTest, FileStemsAreOneToOne) {
  EXPECT_EQ(FileStem("node/paper/emb"), "node~paper~emb");
  EXPECT_EQ(FileStem("node/emb.adam_m"), "node~emb.adam_m");
  EXPECT_NE(FileStem("node/x~y/emb"), FileStem("node/x/y~emb"));
  EXPECT_EQ(FileStem("node/x~y/emb"), "node~x%7Ey~emb");
  EXPECT_NE(FileStem("node/a%7Eb"), FileStem("node/a~b"));
}

// Pruning in the working folder ("" as the parent of "step-3").
TEST(CheckpointFormatTest, PruneWorksInTheWorkingFolder) {
  TempDir dir;
  for (int step : {1, 2, 3}) Make(dir / fmt::format("step-{}", step), {{0, 6}}, 6, step);
  const fs::path before = fs::current_path();
  fs::current_path(dir.path());
  Prune("", 1, "step-3");
  fs::current_path(before);
  EXPECT_FALSE(PathExists(dir / "step-1"));
  EXPECT_FALSE(PathExists(dir / "step-2"));
  EXPECT_TRUE(PathExists(dir / "step-3/manifest.json"));
  // The current one is kept whatever the spelling of its folder.
  Make(dir / "step-4", {{0, 6}}, 6, 4);
  Prune(dir.path() + "/.", 1, dir / "step-3");
  EXPECT_TRUE(PathExists(dir / "step-3/manifest.json"));
  EXPECT_TRUE(PathExists(dir / "step-4/manifest.json"));
}

}  // namespace
}  // namespace tessera::checkpoint
