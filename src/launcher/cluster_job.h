// File: src/launcher/cluster_job.h
//
// RunClusterJob, behind `tessera launch`: runs a training job on the
// machines of an ip_config (DGL's tools/launch.py, without its orphans and
// hangs):
//
//   tessera launch --workspace ~/work --num-trainers 2 --num-servers 1
//       --part-config parts/g.json --ip-config ip_config.txt "build/bin/graphsage_train_dist ..."
//
// On every machine (directly when its address is this host's, else over
// ssh) it starts S servers, waits until each reports ready, then T trainers
// with the job environment (src/launcher/job_env.h). Every process runs
// under `tessera supervise` (tools/cmd_supervise.cc), whose stdin is its
// link to this launcher: closing it, or losing the ssh connection, stops
// the process and removes the job's shared memory on that machine. Output
// is streamed line by line, prefixed [machine/role/rank]. The first failure
// (or SIGINT/SIGTERM) stops every process on every machine, and is named as
// the job's cause, and so is a trainer that runs but stops heartbeating
// (its servers report it lost). With max_restarts, a failed job is started again (a new
// job id, the same machines) and the log says which failure caused each
// restart. The exit code is 0 when all trainers succeed, else the failed
// process's (of the last attempt).
#ifndef TESSERA_SRC_LAUNCHER_CLUSTER_JOB_H_
#define TESSERA_SRC_LAUNCHER_CLUSTER_JOB_H_

#include <string>
#include <vector>

#include "tessera/base/status.h"

namespace tessera::launcher {

struct ClusterJobOptions {
  // tessera: the path of the tessera program on every machine.
  std::string workspace, part_config, ip_config, tessera;
  int num_trainers = 1, num_samplers = 0, num_servers = 1;
  int num_server_threads = 1, num_omp_threads = 0;
  int ssh_port = 22, master_port = 0;
  std::string ssh_username;
  std::vector<std::string> extra_envs, ssh_options, command;
  bool force_ssh = false;
  bool no_encryption = false;
  double startup_timeout_s = 600, grace_s = 5, server_exit_timeout_s = 60;
  // A trainer the servers do not hear from for this long while it runs
  // (stopped, frozen, cut off) fails the job.
  double heartbeat_timeout_s = 30;
  // After a failure (not an interrupt), start the whole job again up to
  // this many times; the trainers get TESSERA_RESTART (the attempt, 0
  // first) and, when set, TESSERA_CHECKPOINT_DIR to continue from.
  int max_restarts = 0;
  std::string checkpoint_dir;
};

// Runs the job to its end. Returns its exit code, or an error when it could
// not start (bad options, unreadable configs, no ssh).
StatusOr<int> RunClusterJob(ClusterJobOptions options);

}  // namespace tessera::launcher

#endif  // TESSERA_SRC_LAUNCHER_CLUSTER_JOB_H_
