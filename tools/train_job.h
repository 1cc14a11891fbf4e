// File: tools/train_job.h
//
// Runs the GraphSAGE example (examples/graphsage/train_dist.cpp, installed
// next to `tessera` as graphsage_train_dist) for `tessera demo` and
// `tessera bench train`: standalone as one process on a one-part partition,
// or as a local job (LocalJob: one machine per part on loopback, servers and
// trainers). Ctrl-C (SIGINT/SIGTERM) stops every process of the job; nothing
// is left running and no shared memory remains.
#ifndef TESSERA_TOOLS_TRAIN_JOB_H_
#define TESSERA_TOOLS_TRAIN_JOB_H_

#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "tessera/base/status.h"

namespace tessera::tools {

struct TrainJobOptions {
  std::string part_config;
  std::string graph_name;
  std::string workdir;      // Logs and ip_config of the job.
  bool standalone = false;  // One process, no servers (one-part partition).
  int trainers_per_machine = 1;
  int samplers = 0;               // Sampler threads per trainer.
  std::vector<std::string> args;  // Flags for graphsage_train_dist.
  // The trainer's command before the flags; empty: graphsage_train_dist.
  // The Python example is {python3, node_classification.py} (PythonExample()).
  std::vector<std::string> program;
  bool capture = false;    // Logs to <workdir>/... instead of the terminal.
  bool encryption = true;  // false: the job's wire is not encrypted (--no-encryption).
  double timeout_s = 3600;
};

// The trainer's "RESULT {json}" (trainer 0), or an error naming the failed
// process and its log.
StatusOr<nlohmann::json> RunTrainJob(const TrainJobOptions& options);

// Path of graphsage_train_dist (next to this executable); NotFound with a
// hint when it is missing.
StatusOr<std::string> TrainerProgram();

// {python3, examples/python/graphsage/node_classification.py} of this source
// tree, with PYTHONPATH set to this build's package; NotFound when missing.
StatusOr<std::vector<std::string>> PythonExample();

// Stops the running job on SIGINT / SIGTERM (installed by RunTrainJob).
void InstallCancelHandlers();
// The signal that stopped the job, or 0.
int CancelSignal();

}  // namespace tessera::tools

#endif  // TESSERA_TOOLS_TRAIN_JOB_H_
