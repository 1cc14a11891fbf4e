// `tessera launch`: the flags of the multi-machine launcher
// (src/launcher/cluster_job.h), DGL's tools/launch.py with our spellings and
// DGL's underscore ones.
#include <memory>

#include "src/launcher/cluster_job.h"
#include "tools/commands.h"

namespace tessera::tools {

Command RegisterLaunch(CLI::App& app) {
  auto f = std::make_shared<launcher::ClusterJobOptions>();
  CLI::App* sub = app.add_subcommand(
      "launch", "Run a training job on the machines of an ip_config (servers, then trainers)");
  sub->add_option("--workspace", f->workspace,
                  "Folder on every machine the processes run in; relative paths are relative to it")
      ->required();
  sub->add_option("--part-config,--part_config", f->part_config,
                  "Partition config (relative to the workspace)")
      ->required();
  sub->add_option("--ip-config,--ip_config", f->ip_config,
                  "ip_config: one 'IP [port]' line per machine (relative to the workspace)")
      ->required();
  sub->add_option("--num-trainers,--num_trainers", f->num_trainers, "Trainers per machine")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  sub->add_option("--num-samplers,--num_samplers", f->num_samplers,
                  "Sampler threads per trainer (TESSERA_NUM_SAMPLERS); 0: as in DGL, no "
                  "sampler processes, and the trainer samples ahead on one thread per 4 "
                  "cores of its share (its OMP threads, at most the cores over the "
                  "machine's trainers; none below 2)")
      ->capture_default_str()
      ->check(CLI::Range(0, 256));
  sub->add_option("--num-servers,--num_servers", f->num_servers, "Servers per machine")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  sub->add_option("--num-server-threads,--num_server_threads", f->num_server_threads,
                  "OMP_NUM_THREADS of the servers")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  sub->add_option("--num-omp-threads,--num_omp_threads", f->num_omp_threads,
                  "OMP_NUM_THREADS of the trainers (0: leave unset)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1024));
  sub->add_option("--ssh-port,--ssh_port", f->ssh_port)->capture_default_str();
  sub->add_option("--ssh-username,--ssh_username", f->ssh_username);
  sub->add_option("--ssh-option", f->ssh_options,
                  "More ssh -o options, e.g. StrictHostKeyChecking=accept-new: it trusts a "
                  "machine's host key on first contact but still refuses a changed key (a man in "
                  "the middle), where =no would accept any key");
  sub->add_flag("--ssh", f->force_ssh, "Use ssh for local machines too");
  sub->add_flag("--no-encryption", f->no_encryption,
                "Send everything in clear text (trusted networks only): peers still prove the "
                "job token before they can send anything, but anyone on the path can read the "
                "token and the data (docs/runtime.md)");
  sub->add_option("--extra-envs,--extra_envs", f->extra_envs, "KEY=VALUE for every process");
  sub->add_option("--master-port,--master_port", f->master_port,
                  "Trainer rendezvous port on machine 0 (default: its server port + num servers)")
      ->check(CLI::Range(1, 65535));
  sub->add_option("--tessera", f->tessera,
                  "Path of the tessera program on every machine (default: this one's)");
  sub->add_option("--startup-timeout", f->startup_timeout_s, "Seconds for the servers to start")
      ->capture_default_str()
      ->check(Seconds(0.001, 1e6));
  sub->add_option("--grace", f->grace_s, "Seconds between SIGTERM and SIGKILL when stopping")
      ->capture_default_str()
      ->check(Seconds(0, 3600));
  sub->add_option("--heartbeat-timeout", f->heartbeat_timeout_s,
                  "Seconds of silence after which the servers treat a trainer as lost; one "
                  "that is still running (stopped, frozen, cut off) while others work fails "
                  "the job (trainers send heartbeats every second)")
      ->capture_default_str()
      ->check(Seconds(3, 86400));
  sub->add_option("--max-restarts", f->max_restarts,
                  "After a failure, start the job again up to this many times (trainers get "
                  "TESSERA_RESTART, the attempt; the log names each restart's cause)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1000));
  sub->add_option("--checkpoint-dir", f->checkpoint_dir,
                  "Checkpoint folder the trainers continue from (TESSERA_CHECKPOINT_DIR; "
                  "relative to the workspace)");
  sub->add_option("command", f->command, "The trainer command (one argument, run by /bin/sh)")
      ->required()
      ->check([](const std::string& word) -> std::string {  // Else: servers wait for no one.
        return word.find_first_not_of(" \t\n") == std::string::npos ? "is empty" : "";
      });
  return {sub, [f] {
            launcher::ClusterJobOptions options = *f;
            if (options.tessera.empty()) options.tessera = SelfExecutable();
            StatusOr<int> code = launcher::RunClusterJob(std::move(options));
            return code.ok() ? *code : ReportError(code.status());
          }};
}

}  // namespace tessera::tools
