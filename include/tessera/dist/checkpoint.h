// File: include/tessera/dist/checkpoint.h
//
// Checkpoints of a training job, restorable on the same or on a different
// number of machines and trainers:
//
//   tessera::dist::Checkpoint ckpt(g, "/shared/ckpt", /*keep=*/3);
//   int64_t step = 0;
//   if (auto restored = ckpt.restore({.module = model.get(), .optimizer = &opt})) {
//     step = restored->step;                // resume after the saved step
//   }
//   ...
//   if (step % 1000 == 0) ckpt.save(step, {.module = model.get(), .optimizer = &opt});
//
// A checkpoint is a folder (docs/checkpoint.md):
//   manifest.json            every file with its size and CRC-32C, the graph, the
//                            partition config's hash, trainer count, step, extra
//   tensors/<key>.p<P>.<i>.npy       rows [begin, end) of partition P, written by
//                                    a trainer of machine P
//   tensors/<key>.p<P>.<i>.orig.npy  their original ids (the input graph's), when
//                                    the partition has orig_nids.npy / orig_eids.npy
//   model.pt, optimizer.pt   dense state, written once (trainer 0)
//   trainer-<rank>.pt        each trainer's random generator state
// The manifest is written last, after every file is on disk: a folder without
// one is incomplete, and a crash while saving never touches an older
// checkpoint. The folder must be one all machines see (a shared file system).
//
// Which tensors: every tensor created at run time with persistent=true (so
// every DistEmbedding and its sparse optimizer's state), plus any listed.
// Rows are restored by id when the partitioning is the one that saved them,
// otherwise by original id (both partitionings need --return-mapping): a
// checkpoint of 2 machines x 2 trainers restores on 1 x 1 or 4 x 1.
#ifndef TESSERA_INCLUDE_TESSERA_DIST_CHECKPOINT_H_
#define TESSERA_INCLUDE_TESSERA_DIST_CHECKPOINT_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tessera/dist/dist_graph.h"
#include "tessera/dist/dist_tensor.h"

namespace torch::nn {
class Module;
}  // namespace torch::nn
namespace torch::optim {
class Optimizer;
}  // namespace torch::optim

namespace tessera::dist {

// What goes into a checkpoint besides the run-time persistent tensors.
struct CheckpointContents {
  torch::nn::Module* module = nullptr;           // Parameters and buffers (model.pt).
  torch::optim::Optimizer* optimizer = nullptr;  // Its state (optimizer.pt).
  std::vector<DistTensor> tensors;               // Saved besides the automatic ones.
  // false: only `tensors`, not every run-time persistent tensor (restore:
  // only `tensors` of those the checkpoint holds).
  bool persistent_tensors = true;
  // Each trainer's torch generator state (restored on the same trainer count).
  bool random_state = true;
  // A JSON object the program keeps with the checkpoint (epoch, loader
  // position, ...); save only. "" for none.
  std::string extra;
  // More files: trainer 0 writes the dense ones, every trainer its own
  // (names relative to the folder, unique per trainer). Each returns the names
  // it wrote; they are checksummed and listed in the manifest. (Python's
  // state_dicts go this way.)
  std::function<std::vector<std::string>(const std::string& folder)> write_dense;
  std::function<std::vector<std::string>(const std::string& folder)> write_trainer;
};

// What restore() found.
struct RestoredCheckpoint {
  std::string path;
  int64_t step = 0;
  std::string extra;                 // The JSON object saved with it ("{}" if none).
  int num_trainers = 0;              // Of the job that saved it.
  bool same_partitioning = true;     // false: rows were mapped by original id.
  std::vector<std::string> tensors;  // The keys of the tensors restored.
  // This trainer's own file from the saving job (same trainer count only);
  // the dense files. Names relative to `path`, checksums verified.
  std::vector<std::string> trainer_files, dense_files;
  // The bytes of those files that restore does not load itself (all but
  // model.pt, optimizer.pt and trainer-<rank>.pt: those of write_dense and
  // write_trainer), as read once and verified. Use these rather than read
  // the files again, which may have changed since.
  std::map<std::string, std::string> file_bytes;
};

class Checkpoint {
 public:
  // Checkpoints of `g`'s job in folder `dir` (created if needed), one per
  // step in dir/step-<step>. save() keeps the newest `keep` (<= 0: all).
  Checkpoint(const DistGraph& g, std::string dir, int keep = 3);

  // Collective (every trainer calls it with the same step). Returns the
  // checkpoint's folder once its manifest is on disk. Error (on every
  // trainer) if any trainer failed; the older checkpoints stay intact.
  std::string save(int64_t step, const CheckpointContents& contents = {}) const;
  // Collective: restores the newest complete checkpoint in the folder, or
  // nullopt if there is none. Error if a file is missing, truncated or
  // altered (naming it) or the graph differs.
  std::optional<RestoredCheckpoint> restore(const CheckpointContents& contents = {}) const;
  const std::string& dir() const { return dir_; }

  // The newest complete checkpoint (highest step) in `dir`, or nullopt.
  static std::optional<std::string> latest(const std::string& dir);

 private:
  const DistGraph* graph_;
  std::string dir_;
  int keep_;
};

// The same, on a folder of the caller's choice (Python's
// tessera.distributed.checkpoint): saves into `path` (Error if it holds a
// complete checkpoint already) and, with keep > 0, removes all but the
// newest `keep` of the sibling checkpoints also saved with keep (the
// manifest's "rotate"; others are never removed) and unfinished saves.
void SaveCheckpoint(const DistGraph& g, const std::string& path, int64_t step,
                    const CheckpointContents& contents, int keep = 0);
RestoredCheckpoint RestoreCheckpoint(const DistGraph& g, const std::string& path,
                                     const CheckpointContents& contents = {});

}  // namespace tessera::dist

#endif  // TESSERA_INCLUDE_TESSERA_DIST_CHECKPOINT_H_
