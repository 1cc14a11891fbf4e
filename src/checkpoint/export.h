// File: src/checkpoint/export.h
//
// `tessera export-embeddings`: a checkpoint's tensors as .npy files in the
// original node (or edge) order of the input graph, for use outside
// training.
#ifndef TESSERA_SRC_CHECKPOINT_EXPORT_H_
#define TESSERA_SRC_CHECKPOINT_EXPORT_H_

#include <string>
#include <vector>

#include "tessera/base/status.h"

namespace tessera::checkpoint {

struct ExportOptions {
  // Tensor names ("emb", "paper/emb") or keys ("node/emb"); empty: all but
  // the sparse optimizers' state.
  std::vector<std::string> tensors;
  bool optimizer_state = false;  // With `tensors` empty: the optimizers' state too.
};

// Writes <out_dir>/<key with '/' as '~'>.npy for each tensor: row i is the
// node (edge) whose original id is i; on a heterograph, whose original
// per-type id is i. Every file read is verified against the manifest.
// Returns the paths written. Needs the original ids the checkpoint holds
// when its partition had --return-mapping.
StatusOr<std::vector<std::string>> ExportTensors(const std::string& checkpoint,
                                                 const std::string& out_dir,
                                                 const ExportOptions& options = {});

}  // namespace tessera::checkpoint

#endif  // TESSERA_SRC_CHECKPOINT_EXPORT_H_
