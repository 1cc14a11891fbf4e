// File: tools/bench_job.h
//
// The job the distributed benchmarks run against: one `tessera server` per
// machine of a partition, on loopback (logs under <workdir>/job), and this
// process as client 0 of machine 0, reading machine 0's rows from shared
// memory.
#ifndef TESSERA_TOOLS_BENCH_JOB_H_
#define TESSERA_TOOLS_BENCH_JOB_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "src/kvstore/kv_client.h"
#include "src/launcher/local_job.h"
#include "tessera/base/status.h"
#include "tools/subprocess.h"

namespace tessera::tools {

struct BenchJob {
  std::unique_ptr<launcher::LocalJob> job;
  std::unique_ptr<kvstore::KvClient> client;
};

// `encryption`: the wire is encrypted (the default of real jobs).
// `num_clients`: the job's trainers; the returned client is client 0, the
// caller connects the others (BenchClient).
StatusOr<BenchJob> StartBenchJob(const std::string& part_config, const std::string& workdir,
                                 bool encryption = true, int num_clients = 1);

// The options of client `client_id` of `job` (of `num_clients`), on machine 0.
kvstore::KvClientOptions BenchClient(const launcher::LocalJob& job, int client_id, int num_clients);

// The benchmark graph's partitions (graph name "bench"): one part
// (<workdir>/one, for standalone runs) and two METIS parts (<workdir>/two),
// made from `graph` unless the workdir has them from an earlier run.
struct BenchPartitions {
  std::string one, two;  // Partition configs.
};
StatusOr<BenchPartitions> EnsureBenchPartitions(const std::string& graph,
                                                const std::string& workdir);

// The upper median (0 for none).
double Median(std::vector<double> v);

// The training seeds, sorted: on a typed book the nodes of type `ntype` with
// train_mask (as homogeneous ids); on a homogeneous one the nodes with
// train_mask, or every node if there is no node/train_mask.
StatusOr<std::vector<int64_t>> TrainSeeds(kvstore::Services& store,
                                          const std::string& ntype = "paper");

// The runner of a `bench` subcommand: runs `bench` in the scratch folder
// `workdir` (a temporary "<prefix>-*" folder if empty, removed after) and
// returns the exit code, reporting a failure.
std::function<int()> BenchRunner(const std::string* workdir, const std::string& prefix,
                                 std::function<Status(const std::string& workdir)> bench);

// Runs this program as a child, `tessera --log-level warn <args>`, allowed
// `timeout_s` seconds; InternalError "<what> exited with <code>" unless it
// exits 0.
StatusOr<ChildResult> RunSelf(std::vector<std::string> args, double timeout_s,
                              const std::string& what);

}  // namespace tessera::tools

#endif  // TESSERA_TOOLS_BENCH_JOB_H_
