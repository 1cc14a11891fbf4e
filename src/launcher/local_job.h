// File: src/launcher/local_job.h
//
// LocalJob: runs a whole job on this host, for tests, benchmarks and the
// demo: one machine per partition, all on 127.0.0.1 with probed free ports;
// S `tessera server` processes per machine and C client processes per
// machine (any program; it finds the job through the environment of
// job_env.h). Start() returns once every server is ready: each one reports
// readiness on a pipe, so there are no sleeps, and a server that dies or does
// not become ready in time is an error naming it (and its log).
//
// Destroying a LocalJob stops whatever still runs (SIGTERM, then SIGKILL)
// and removes any shared memory of the job a killed server left behind.
#ifndef TESSERA_SRC_LAUNCHER_LOCAL_JOB_H_
#define TESSERA_SRC_LAUNCHER_LOCAL_JOB_H_

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "src/base/process.h"
#include "src/launcher/ip_config.h"
#include "src/launcher/job_env.h"
#include "tessera/base/status.h"
#include "tessera/base/time.h"

namespace tessera::launcher {

struct LocalJobOptions {
  std::string tessera_binary;  // Runs `<binary> server ...`.
  std::string part_config;
  std::string workdir;  // ip_config.txt and server logs go here.
  int servers_per_machine = 1;
  int clients_per_machine = 1;
  int num_samplers = 0;                  // Sampler threads per trainer (TESSERA_NUM_SAMPLERS).
  std::vector<std::string> client_argv;  // Empty: servers only.
  std::vector<std::string> server_args;  // Extra flags for every server.
  std::string client_log_dir;            // Empty: clients inherit stdout/stderr.
  int num_clients = -1;                  // Clients the servers wait for; -1: those started here.
  bool encryption = true;                // false: like `tessera launch --no-encryption`.
  double startup_timeout_s = 300;
};

struct JobResult {
  std::vector<int> client_exit_codes;
  std::vector<int> server_exit_codes;
  double seconds = 0;
  std::string first_failure;  // The client whose failure stopped the job, if one did.
  bool ok() const;
};

class LocalJob {
 public:
  static StatusOr<std::unique_ptr<LocalJob>> Start(const LocalJobOptions& options);
  ~LocalJob();

  const std::string& job_id() const { return env_.job_id; }
  const JobEnv& base_env() const { return env_; }  // rank fields unset.
  const IpConfig& ip_config() const { return ip_config_; }
  int num_machines() const { return ip_config_.num_machines(); }
  std::vector<Process>& servers() { return servers_; }
  std::vector<Process>& clients() { return clients_; }
  // Server logs: <workdir>/server-<id>.log.
  std::string ServerLog(int server_id) const;

  // Starts the clients (Start() does this when client_argv is set).
  Status StartClients(const std::vector<std::string>& argv);
  // Waits for every client to exit (stopping everything as soon as one
  // client fails: see JobResult::first_failure), then for the servers (which exit once
  // their clients have left) for up to `server_grace_s`, stopping any that
  // remain. DeadlineExceeded (everything stopped) if the clients run past
  // `deadline`; Cancelled if `cancel` becomes true.
  StatusOr<JobResult> Wait(Deadline deadline, const std::atomic<bool>* cancel = nullptr,
                           double server_grace_s = 60);
  // Stops everything now.
  void StopAll();
  // A client the servers reported lost (silent for their heartbeat timeout)
  // that still runs while other clients talk: stopped, frozen or cut off,
  // and its peers would wait for it. Its description, or "".
  std::string StoppedClient();

 private:
  explicit LocalJob(LocalJobOptions options) : options_(std::move(options)) {}
  Status StartServers();

  LocalJobOptions options_;
  JobEnv env_;
  IpConfig ip_config_;
  std::vector<Process> servers_;
  std::vector<Process> clients_;
  // After a server's "ready": the pipe of its "lost <client> <others
  // talking>" reports, and a line not ended yet.
  struct Reports {
    int server_id;
    int fd;
    std::string partial;
  };
  std::vector<Reports> reports_;
  Stopwatch watch_;
};

}  // namespace tessera::launcher

#endif  // TESSERA_SRC_LAUNCHER_LOCAL_JOB_H_
