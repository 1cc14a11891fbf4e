// File: src/dist/checkpoint_test.cc
//
// Checkpoints (include/tessera/dist/checkpoint.h) of Cora jobs: saved and
// restored standalone and against two servers, restored onto another
// partitioning by original id, and what a save or a restore does with
// incomplete, altered and truncated checkpoints and with a full disk.
#include "tessera/dist/checkpoint.h"

#include <sys/resource.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/adam.h>

#include <csignal>
#include <filesystem>
#include <functional>
#include <source_location>
#include <stdexcept>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "src/checkpoint/format.h"
#include "src/dist/dist_test_env.h"
#include "src/graph/npy.h"
#include "src/kvstore/services.h"
#include "src/kvstore/test_cluster.h"
#include "tessera/dist.h"

namespace tessera::dist {
namespace {

const torch::Tensor kAll = torch::arange(2708);

// Runs `f`, which must throw an Error whose message holds every one of `parts`.
template <typename F>
void ExpectError(F f, std::initializer_list<std::string> parts,
                 std::source_location where = std::source_location::current()) {
  try {
    f();
    ADD_FAILURE() << "expected an error at line " << where.line();
  } catch (const Error& e) {
    for (const std::string& part : parts) {
      EXPECT_THAT(e.what(), HasSubstr(part)) << e.what();
    }
  }
}

// The rows of `t` by original node id (orig_nids.npy beside `config`).
torch::Tensor ByOriginalId(const torch::Tensor& rows, const std::string& config) {
  StatusOr<Array> orig =
      ReadNpy(std::filesystem::path(config).parent_path().string() + "/orig_nids.npy");
  EXPECT_TRUE(orig.ok()) << orig.status();
  torch::Tensor ids =
      torch::from_blob(const_cast<void*>(orig->data()), {orig->shape()[0]}, torch::kInt64);
  return torch::zeros_like(rows).index_copy_(0, ids, rows);
}

// Restores of the complete checkpoint `folder` (whose manifest is put back
// afterwards) with its manifest altered: refused before a row is written,
// before a tensor is sized from a shape the files do not back, and leaving
// no tensor the failed restore created.
void CheckRefusals(const DistGraph& g, torch::nn::Module& model, const std::string& folder) {
  const std::string path = folder + "/manifest.json";
  const std::string text = *ReadFileToString(path);
  const nlohmann::json good = nlohmann::json::parse(text);
  DistTensor pred = g.ndata("ckpt_pred");
  const torch::Tensor rows = pred[kAll];
  pred.set(kAll, torch::zeros_like(rows));
  auto restore_with = [&](const std::function<void(nlohmann::json&)>& change) {
    nlohmann::json m = good;
    change(m);
    ASSERT_TRUE(WriteFileAtomic(path, m.dump(1)).ok());
  };
  auto pred_entry = [](nlohmann::json& m) -> nlohmann::json& {
    for (nlohmann::json& t : m["tensors"]) {
      if (t["key"] == "node/ckpt_pred") return t;
    }
    throw std::runtime_error("no node/ckpt_pred");
  };
  // Rows saved twice, or past the end.
  restore_with([&](nlohmann::json& m) {
    nlohmann::json& t = pred_entry(m);
    t["shards"].push_back(t["shards"][0]);
  });
  ExpectError([&] { RestoreCheckpoint(g, folder); }, {"do not hold its rows", "twice"});
  restore_with([&](nlohmann::json& m) {
    nlohmann::json& t = pred_entry(m);
    nlohmann::json extra = t["shards"].back();
    extra["begin"] = 2708;
    extra["end"] = 2708 + extra["end"].get<int64_t>() - t["shards"].back()["begin"].get<int64_t>();
    t["shards"].push_back(extra);
  });
  ExpectError([&] { RestoreCheckpoint(g, folder); }, {"do not hold its rows", "beyond its end"});
  EXPECT_TRUE(torch::equal(pred[kAll], torch::zeros_like(rows)));  // No row written.
  // A tensor of 2708 x 65536 floats whose (listed) shard file is small.
  restore_with([&](nlohmann::json& m) {
    nlohmann::json t = pred_entry(m);
    t["key"] = "node/ckpt_huge";
    t["dtype"] = "float32";
    t["shape"] = {2708, 65536};
    t["shards"] = nlohmann::json::array();
    t["shards"].push_back({{"file", "tensors/huge.npy"}, {"part", 0}, {"begin", 0}, {"end", 2708}});
    m["tensors"].push_back(t);
    m["files"].push_back({{"path", "tensors/huge.npy"},
                          {"bytes", EncodeNpyHeader(DType::kFloat32, {2708, 65536}).size() +
                                        int64_t{2708} * 65536 * 4},
                          {"crc32c", "00000000"}});
    ASSERT_TRUE(WriteFileAtomic(folder + "/tensors/huge.npy", "small").ok());
  });
  ExpectError([&] { RestoreCheckpoint(g, folder); },
              {"file tensors/huge.npy has 5 bytes, its manifest says 709886080"});
  EXPECT_FALSE(g.store().features().Meta("node/ckpt_huge").ok());
  // Refused before the shards of the tensors listed before it were restored.
  EXPECT_TRUE(torch::equal(pred[kAll], torch::zeros_like(rows)));
  // A restore that fails after it created a tensor removes it.
  restore_with([&](nlohmann::json& m) {
    nlohmann::json t = pred_entry(m);
    t["key"] = "node/ckpt_fresh";
    m["tensors"].push_back(t);
  });
  ExpectError([&] { RestoreCheckpoint(g, folder, {.module = &model}); }, {"holds no model"});
  EXPECT_FALSE(g.store().features().Meta("node/ckpt_fresh").ok());
  RestoreCheckpoint(g, folder);  // It restores when nothing else fails.
  EXPECT_TRUE(torch::equal(g.ndata("ckpt_fresh")[kAll], rows));
  ASSERT_TRUE(WriteFileAtomic(path, text).ok());
  RestoreCheckpoint(g, folder);
  EXPECT_TRUE(torch::equal(pred[kAll], rows));
}

// A save fails, before it writes its manifest, where its readers would
// refuse it; an extra the manifest cannot hold fails it before any file is
// written. The dense and trainer files are used as verified: the program's
// own ones come back as bytes, and an altered one is refused.
void CheckSavesOnlyWhatRestores(const DistGraph& g, torch::nn::Module& model,
                                const std::string& dir) {
  const std::string latest = *Checkpoint::latest(dir + "/ckpt");
  auto writes = [](std::vector<std::string> names) {
    return [names](const std::string& folder) {
      for (const std::string& name : names)
        EXPECT_TRUE(WriteFileAtomic(folder + "/" + name, name).ok());
      return names;
    };
  };
  // The same name from write_dense and write_trainer (as a write_trainer
  // returning one name on every trainer would give).
  ExpectError(
      [&] {
        SaveCheckpoint(g, dir + "/ckpt/step-91", 91,
                       {.write_dense = writes({"same.pt"}), .write_trainer = writes({"same.pt"})});
      },
      {"cannot save", "step-91", "same.pt was written by trainer 0 twice"});
  EXPECT_FALSE(PathExists(dir + "/ckpt/step-91/manifest.json"));
  EXPECT_EQ(Checkpoint::latest(dir + "/ckpt"), latest);
  // Nested 64 deep, extra is 65 deep in the manifest: refused before any file.
  std::string deep = "{}";
  for (int i = 1; i < 64; ++i) deep = R"({"a": )" + deep + "}";
  ExpectError([&] { SaveCheckpoint(g, dir + "/ckpt/step-92", 92, {.extra = deep}); },
              {"extra", "nested deeper than 64 levels", "one level deeper"});
  EXPECT_FALSE(PathExists(dir + "/ckpt/step-92"));
  ExpectError([&] { SaveCheckpoint(g, dir + "/ckpt/step-92", 92, {.extra = "[1]"}); },
              {"extra must be the text of a JSON object"});
  EXPECT_FALSE(PathExists(dir + "/ckpt/step-92"));
  std::string fine = "{}";
  for (int i = 1; i < 63; ++i) fine = R"({"a": )" + fine + "}";
  SaveCheckpoint(g, dir + "/files", 93,
                 {.module = &model,
                  .extra = fine,
                  .write_dense = writes({"notes.txt"}),
                  .write_trainer = writes({"t-0.txt"})});
  RestoredCheckpoint r = RestoreCheckpoint(g, dir + "/files", {.module = &model});
  EXPECT_EQ(r.file_bytes, (std::map<std::string, std::string>{{"notes.txt", "notes.txt"},
                                                              {"t-0.txt", "t-0.txt"}}));
  EXPECT_EQ(nlohmann::json::parse(r.extra), nlohmann::json::parse(fine));
  // model.pt altered in place (its size unchanged): refused, not loaded.
  std::string bytes = *ReadFileToString(dir + "/files/model.pt");
  bytes[bytes.size() / 2] ^= 1;
  ASSERT_TRUE(WriteFileAtomic(dir + "/files/model.pt", bytes).ok());
  ExpectError([&] { RestoreCheckpoint(g, dir + "/files", {.module = &model}); },
              {"file model.pt is corrupt", "CRC-32C"});
}

// What a training program does with checkpoints, the same in both modes.
void CheckCheckpoint(const std::string& config, const std::string& dir) {
  DistGraph g("cora", config);
  DistEmbedding emb(2708, 4, "ckpt_emb", Init::Uniform(-1, 1, 7));
  SparseAdam sparse({emb}, 0.1);
  emb(torch::tensor({1, 5, 2000})).pow(2).sum().backward();
  sparse.step();
  DistTensor pred({2708, 2}, torch::kInt64, "ckpt_pred", Init::Zeros(), PartPolicy::kNode,
                  /*persistent=*/true);
  pred.set(kAll, torch::arange(2708 * 2).view({2708, 2}));
  torch::nn::Linear model(3, 2);
  torch::optim::Adam adam(model->parameters(), 0.1);
  model->forward(torch::ones({4, 3})).sum().backward();
  adam.step();

  const std::vector<std::string> keys = {"ckpt_emb", "ckpt_emb.adam_m", "ckpt_emb.adam_v",
                                         "ckpt_emb.adam_step", "ckpt_pred"};
  auto snapshot = [&] {
    std::vector<torch::Tensor> rows;
    for (const std::string& key : keys) rows.push_back(g.ndata(key)[kAll]);
    return rows;
  };
  const std::vector<torch::Tensor> saved = snapshot();
  const torch::Tensor weight = model->weight.clone();
  Checkpoint ckpt(g, dir + "/ckpt", /*keep=*/2);
  EXPECT_FALSE(ckpt.restore().has_value());
  const std::string first =
      ckpt.save(10, {.module = model.get(), .optimizer = &adam, .extra = R"({"epoch": 3})"});
  EXPECT_EQ(Checkpoint::latest(ckpt.dir()), first);
  const torch::Tensor draw = torch::rand({5});  // What the generator gives after the save.
  auto dense_step = [&] {
    adam.zero_grad();
    model->forward(torch::ones({4, 3})).pow(2).sum().backward();
    adam.step();
    return model->weight.clone();
  };
  const torch::Tensor stepped = dense_step();

  // Everything changes, then comes back.
  for (size_t i = 0; i < keys.size(); ++i) g.ndata(keys[i]).set(kAll, torch::zeros_like(saved[i]));
  {
    torch::NoGradGuard no_grad;
    model->weight.zero_();
  }
  // In chunks of 1 KiB (each shard is tens of KiB): rows restored a chunk at a time.
  checkpoint::SetShardChunkBytesForTesting(1024);
  std::optional<RestoredCheckpoint> restored =
      ckpt.restore({.module = model.get(), .optimizer = &adam});
  checkpoint::SetShardChunkBytesForTesting(0);
  ASSERT_TRUE(restored.has_value());
  EXPECT_EQ(restored->step, 10);
  EXPECT_EQ(restored->num_trainers, 1);
  EXPECT_TRUE(restored->same_partitioning);
  EXPECT_EQ(restored->extra, R"({"epoch":3})");
  EXPECT_TRUE(torch::equal(model->weight, weight));
  EXPECT_TRUE(torch::equal(torch::rand({5}), draw));
  // Adam's moments and step count came back too: the same step again.
  EXPECT_TRUE(torch::equal(dense_step(), stepped));
  const std::vector<torch::Tensor> now = snapshot();
  for (size_t i = 0; i < keys.size(); ++i) EXPECT_TRUE(torch::equal(now[i], saved[i])) << keys[i];
  ExpectError([&] { SaveCheckpoint(g, first, 10, {}); }, {"already holds a complete checkpoint"});

  // keep = 2: the third save removes the first.
  ckpt.save(20, {.tensors = {pred, emb.weight()}});  // Listed and automatic at once.
  const std::string third = ckpt.save(30);
  EXPECT_FALSE(PathExists(first));
  EXPECT_TRUE(PathExists(dir + "/ckpt/step-20/manifest.json"));
  // A save that died before its manifest is no checkpoint; the next save removes it.
  ASSERT_TRUE(MakeDirs(dir + "/ckpt/step-40/tensors").ok());
  ASSERT_TRUE(WriteFileAtomic(dir + "/ckpt/step-40/.tessera-checkpoint", "").ok());
  EXPECT_EQ(Checkpoint::latest(ckpt.dir()), third);
  ExpectError([&] { RestoreCheckpoint(g, dir + "/ckpt/step-40"); },
              {"no manifest.json", "step-40"});

  // A full disk (here: a file size limit) fails the save with its cause and
  // leaves the last checkpoint as it was.
  {
    struct rlimit old {};
    ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old), 0);
    auto* old_handler = std::signal(SIGXFSZ, SIG_IGN);
    struct rlimit small = old;
    small.rlim_cur = 16 << 10;  // The embedding's shard is 2708 x 4 x 4 bytes.
    ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
    ExpectError([&] { ckpt.save(50); }, {"step-50/tensors/node~ckpt_emb", "File too large"});
    ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &old), 0);
    std::signal(SIGXFSZ, old_handler);
  }
  EXPECT_EQ(Checkpoint::latest(ckpt.dir()), third);
  ckpt.save(60);
  EXPECT_FALSE(PathExists(dir + "/ckpt/step-40"));
  EXPECT_FALSE(PathExists(dir + "/ckpt/step-50"));

  // An altered or truncated shard is found by its checksum, and named.
  const std::string shard = dir + "/ckpt/step-60/tensors/node~ckpt_pred.p0.0.npy";
  std::string bytes = *ReadFileToString(shard);
  std::string altered = bytes;
  altered[altered.size() - 3] ^= 1;
  ASSERT_TRUE(WriteFileAtomic(shard, altered).ok());
  ExpectError([&] { ckpt.restore(); }, {"tensors/node~ckpt_pred.p0.0.npy is corrupt", "CRC-32C"});
  ASSERT_TRUE(WriteFileAtomic(shard, bytes.substr(0, bytes.size() - 8)).ok());
  ExpectError([&] { ckpt.restore(); },
              {"tensors/node~ckpt_pred.p0.0.npy has", "bytes, its manifest says"});
  ASSERT_TRUE(WriteFileAtomic(shard, bytes).ok());
  EXPECT_EQ(ckpt.restore()->step, 60);
  ExpectError([&] { ckpt.restore({.module = model.get()}); }, {"holds no model"});

  // Pruning counts only rotating checkpoints (saved with keep), never follows
  // a link, and a malformed manifest elsewhere in the folder is skipped.
  SaveCheckpoint(g, dir + "/ckpt/final/", 5, {});  // Trailing slash: the folder "final".
  std::filesystem::create_directory_symlink("step-60", dir + "/ckpt/newest");
  ASSERT_TRUE(MakeDirs(dir + "/ckpt/bad").ok());
  ASSERT_TRUE(WriteFileAtomic(dir + "/ckpt/bad/manifest.json", R"({"format": 1})").ok());
  ckpt.save(70);
  EXPECT_TRUE(PathExists(dir + "/ckpt/step-60/manifest.json"));  // Not removed through the link.
  ckpt.save(80);
  EXPECT_TRUE(PathExists(dir + "/ckpt/final/manifest.json"));
  EXPECT_FALSE(PathExists(dir + "/ckpt/step-60/manifest.json"));  // Now the third newest.
  EXPECT_TRUE(PathExists(dir + "/ckpt/step-70/manifest.json"));
  EXPECT_EQ(Checkpoint::latest(ckpt.dir()), dir + "/ckpt/step-80");
  ExpectError([&] { RestoreCheckpoint(g, dir + "/ckpt/bad"); }, {"manifest.json is malformed"});
  // A manifest whose shards miss rows is refused before any row is written.
  std::string manifest = *ReadFileToString(dir + "/ckpt/step-80/manifest.json");
  const size_t shards = manifest.find("\"shards\": [");
  ASSERT_NE(shards, std::string::npos);
  const size_t entry_begin = manifest.find('{', shards),
               entry_end = manifest.find('}', entry_begin);
  std::string holed = manifest;
  holed.erase(entry_begin, entry_end - entry_begin + 1);
  if (holed[entry_begin] == ',') holed.erase(entry_begin, 1);
  ASSERT_TRUE(WriteFileAtomic(dir + "/ckpt/step-80/manifest.json", holed).ok());
  ExpectError([&] { RestoreCheckpoint(g, dir + "/ckpt/step-80"); }, {"do not hold its rows"});
  EXPECT_EQ(Checkpoint::latest(ckpt.dir()), dir + "/ckpt/step-70");  // The bad one is skipped.
  ASSERT_TRUE(WriteFileAtomic(dir + "/ckpt/step-80/manifest.json", manifest).ok());
  CheckRefusals(g, *model, dir + "/ckpt/step-80");
  // keep prunes the working folder's checkpoints too ("step-2" has no folder part).
  {
    ASSERT_TRUE(MakeDirs(dir + "/here").ok());
    const std::filesystem::path before = std::filesystem::current_path();
    std::filesystem::current_path(dir + "/here");
    SaveCheckpoint(g, "step-1", 1, {}, /*keep=*/1);
    SaveCheckpoint(g, "step-2", 2, {}, /*keep=*/1);
    std::filesystem::current_path(before);
    EXPECT_FALSE(PathExists(dir + "/here/step-1"));
    EXPECT_TRUE(PathExists(dir + "/here/step-2/manifest.json"));
  }
  CheckSavesOnlyWhatRestores(g, *model, dir);
  // A save never replaces a file that is not a checkpoint folder.
  ASSERT_TRUE(WriteFileAtomic(dir + "/model.pt", "weights").ok());
  ExpectError([&] { SaveCheckpoint(g, dir + "/model.pt", 1, {}); }, {"is not a folder"});
  EXPECT_EQ(*ReadFileToString(dir + "/model.pt"), "weights");
  g.barrier();
}

TEST(CheckpointTest, SavesAndRestoresStandalone) {
  tessera::testing::TempDir dir;
  std::string config = kvstore::testing::PartitionCora(dir.path(), 1);
  initialize("", {.getenv = [](const char*) -> const char* { return nullptr; }});
  CheckCheckpoint(config, dir.path());
  exit_client();
}

TEST(CheckpointTest, SavesAndRestoresAgainstTwoServers) {
  tessera::testing::TempDir dir;
  std::string config = kvstore::testing::PartitionCora(dir.path(), 2);
  kvstore::testing::TestCluster cluster(config, 2, 1);
  testing::TrainerEnv env(cluster, dir.path(), config);
  ASSERT_FALSE(initialize("", {.getenv = env.getenv()})->standalone());
  CheckCheckpoint(config, dir.path());
  exit_client();
}

// Saved by a job on two machines, restored by one on a one-part partition of
// the same graph: every row and optimizer state row, by original id.
TEST(CheckpointTest, RestoresOnAnotherPartitioningByOriginalId) {
  tessera::testing::TempDir dir;
  std::string two = kvstore::testing::PartitionCora(dir / "two", 2);
  std::string one = kvstore::testing::PartitionCora(dir / "one", 1);
  torch::Tensor weight, sums;
  {
    kvstore::testing::TestCluster cluster(two, 2, 1);
    testing::TrainerEnv env(cluster, dir.path(), two);
    initialize("", {.getenv = env.getenv()});
    DistGraph g("cora", two);
    DistEmbedding emb(2708, 3, "moved", Init::Uniform(-1, 1, 11));
    SparseAdagrad adagrad({emb}, 0.5);
    emb(torch::tensor({0, 100, 1500, 2000})).sum().backward();
    adagrad.step();
    weight = ByOriginalId(emb.weight()[kAll], two);
    sums = ByOriginalId(g.ndata("moved.adagrad_sum")[kAll], two);
    ASSERT_GT(sums.abs().sum().item<float>(), 0);
    SaveCheckpoint(g, dir / "ckpt", 5, {});
    exit_client();
  }
  initialize("", {.getenv = [](const char*) -> const char* { return nullptr; }});
  {
    DistGraph g("cora", one);
    checkpoint::SetShardChunkBytesForTesting(1000);  // Rows and original ids in small chunks.
    RestoredCheckpoint r = RestoreCheckpoint(g, dir / "ckpt");
    checkpoint::SetShardChunkBytesForTesting(0);
    EXPECT_FALSE(r.same_partitioning);
    EXPECT_EQ(r.step, 5);
    // The tensors exist now; the program's own handles attach to them.
    DistEmbedding emb(2708, 3, "moved");
    SparseAdagrad adagrad({emb}, 0.5);
    EXPECT_TRUE(torch::equal(ByOriginalId(emb.weight()[kAll], one), weight));
    EXPECT_TRUE(torch::equal(ByOriginalId(g.ndata("moved.adagrad_sum")[kAll], one), sums));
  }
  exit_client();
}

}  // namespace
}  // namespace tessera::dist
