// `tessera export-embeddings CHECKPOINT --out DIR`: a checkpoint's
// embeddings (and other saved tensors, such as predictions) as .npy files in
// the input graph's original node order (src/checkpoint/export.h).
#include <memory>

#include "fmt/format.h"
#include "src/checkpoint/export.h"
#include "tessera/base/time.h"
#include "tools/commands.h"

namespace tessera::tools {

Command RegisterExportEmbeddings(CLI::App& app) {
  struct Flags {
    std::string checkpoint, out;
    checkpoint::ExportOptions options;
  };
  auto f = std::make_shared<Flags>();
  CLI::App* sub = app.add_subcommand(
      "export-embeddings",
      "Write a checkpoint's embeddings as .npy files in the input graph's original node order");
  sub->add_option("checkpoint", f->checkpoint, "Checkpoint folder (with its manifest.json)")
      ->required();
  sub->add_option("--out", f->out, "Output folder (created if needed)")->required();
  sub->add_option("--tensor", f->options.tensors,
                  "Only these tensors (names, e.g. emb or paper/emb); default: every saved "
                  "tensor but the sparse optimizers' state");
  sub->add_flag("--optimizer-state", f->options.optimizer_state,
                "Also the sparse optimizers' state (Adagrad sums, Adam moments and steps)");
  return {sub, [f] {
            Stopwatch watch;
            StatusOr<std::vector<std::string>> written;
            try {
              written = checkpoint::ExportTensors(f->checkpoint, f->out, f->options);
            } catch (const std::exception& e) {  // A safety net: an error, never an abort.
              written = absl::InternalError(fmt::format("export-embeddings: {}", e.what()));
            }
            if (!written.ok()) return ReportError(written.status());
            ReportFinish(fmt::format("export-embeddings: {} files", written->size()),
                         watch.Seconds());
            return 0;
          }};
}

}  // namespace tessera::tools
