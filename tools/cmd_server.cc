// File: tools/cmd_server.cc
//
// `tessera server`: serves one machine's partition (see src/kvstore). It
// binds its port first (a clash fails at once, not after loading), loads or
// attaches to the partition, reports "ready <port>" on --ready-fd (later
// "lost <client id> <others talking>" for each client lost), and serves until its clients
// have left. SIGTERM, SIGINT and SIGHUP stop it cleanly at any point,
// loading included; its shared memory is always unlinked.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>

#include "fmt/format.h"
#include "spdlog/spdlog.h"
#include "src/base/process.h"
#include "src/kvstore/kv_server.h"
#include "src/launcher/ip_config.h"
#include "src/launcher/job_env.h"
#include "src/rpc/transport.h"
#include "src/shm/segment.h"
#include "tessera/base/resource.h"
#include "tessera/base/time.h"
#include "tessera/partition/partition_config.h"
#include "tools/commands.h"

namespace tessera::tools {
namespace {

std::atomic<bool> g_stop{false};
std::atomic<int> g_signal{0};

void OnSignal(int signal) {
  g_signal.store(signal);
  g_stop.store(true);
}

struct ServerFlags {
  std::string ip_config;
  std::string machines;  // --machines: the job's lines of ip_config (spares).
  std::string part_config;
  int server_id = 0;
  int num_servers = 1;
  int num_clients = 0;
  std::string job_id;
  double heartbeat_timeout = 30;
  double startup_timeout = 600;
  int ready_fd = -1;
  int64_t max_message_bytes = rpc::kDefaultMaxMessageBytes;
  double handshake_timeout = 5;
};

Status RunServer(const ServerFlags& flags) {
  RetainFreedMemory();  // Sampling answers reuse the same buffers request after request.
  HandleSignals(OnSignal, {SIGTERM, SIGINT, SIGHUP});
  signal(SIGPIPE, SIG_IGN);
  int ready_fd = flags.ready_fd;
  if (ready_fd == STDOUT_FILENO) {
    // The reports get stdout to themselves: anything else printed there (a
    // library's line) goes to stderr instead of into a launcher's reading.
    ready_fd = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
    if (ready_fd < 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
      return ErrnoError("--ready-fd 1: moving the reports off stdout", errno);
    }
  }

  std::string token, key;
  RETURN_IF_ERROR(launcher::ParseCredentials(std::getenv, &token, &key));
  // Connections that never finish a handshake hold a descriptor each for
  // --handshake-timeout: a low limit lets a flood starve the job's own.
  if (int64_t limit = RaiseDescriptorLimit(); limit < 16384) {
    spdlog::warn(
        "open-file limit {} (hard limit): a flood of connections could keep this server's "
        "clients out for up to --handshake-timeout; raise it (ulimit -Hn, LimitNOFILE)",
        limit);
  }
  std::string job_id = flags.job_id;
  if (job_id.empty()) {
    const char* env_job = std::getenv("TESSERA_JOB_ID");
    if (env_job == nullptr)
      return absl::InvalidArgumentError("--job-id or TESSERA_JOB_ID is required");
    job_id = env_job;
  }
  RETURN_IF_ERROR(shm::ValidateJobId(job_id));
  ASSIGN_OR_RETURN(launcher::IpConfig all, launcher::ReadIpConfig(flags.ip_config));
  ASSIGN_OR_RETURN(launcher::IpConfig ip, launcher::SelectMachines(all, flags.machines));
  RETURN_IF_ERROR(launcher::CheckNoPortClash(ip, flags.num_servers));
  ASSIGN_OR_RETURN(PartitionConfig config, ReadPartitionConfig(flags.part_config));
  if (ip.num_machines() != config.num_parts) {
    return absl::InvalidArgumentError(fmt::format(
        "{} lists {} machines but {} has {} partitions: one machine serves one partition",
        flags.ip_config, ip.num_machines(), flags.part_config, config.num_parts));
  }
  int S = flags.num_servers;
  if (flags.server_id < 0 || flags.server_id >= ip.num_machines() * S) {
    return absl::InvalidArgumentError(
        fmt::format("--server-id {} is out of range: {} machines x {} servers", flags.server_id,
                    ip.num_machines(), S));
  }
  kvstore::KvServerOptions options{.job_id = job_id,
                                   .part_config = flags.part_config,
                                   .machine_id = flags.server_id / S,
                                   .local_index = flags.server_id % S,
                                   .servers_per_machine = S,
                                   .num_clients = flags.num_clients,
                                   .max_message_bytes = flags.max_message_bytes};
  const launcher::MachineAddress& address = ip.machines[options.machine_id];
  std::string name = fmt::format("server {}", flags.server_id);
  ASSIGN_OR_RETURN(
      std::unique_ptr<rpc::RpcServer> rpc,
      rpc::RpcServer::Bind(
          {.host = address.ip,
           .port = address.port + options.local_index,
           .token = token,
           .curve_secret_key = key,
           .name = name,
           .heartbeat_timeout = rpc::Millis(static_cast<int64_t>(flags.heartbeat_timeout * 1000)),
           .startup_timeout = rpc::Millis(static_cast<int64_t>(flags.startup_timeout * 1000)),
           .expected_clients = flags.num_clients,
           .max_message_bytes = flags.max_message_bytes,
           .handshake_timeout =
               rpc::Millis(static_cast<int64_t>(flags.handshake_timeout * 1000))}));
  std::unique_ptr<kvstore::KvServer> kv;
  if (options.local_index == 0) {
    ASSIGN_OR_RETURN(kv, kvstore::KvServer::Load(options, g_stop));
  } else {
    ASSIGN_OR_RETURN(kv, kvstore::KvServer::Attach(options));
  }
  kv->set_rpc(rpc.get());
  spdlog::info("{}: serving partition {} on {}:{} (job {})", name, options.machine_id, address.ip,
               rpc->port(), job_id);
  if (ready_fd >= 0) {
    std::string line = fmt::format("ready {}\n", rpc->port());
    (void)!write(ready_fd, line.data(), line.size());
    // Then "lost <client id> <others talking>" per client lost: a launcher
    // stops a job whose trainer is alive but silent. At most 1,000 such
    // lines (20 kB), so that a starter that reads only "ready" cannot block
    // the server on a full pipe (one that closed it gets EPIPE: SIGPIPE is
    // ignored).
    kv->set_on_lost_client([fd = ready_fd, reported = 0](int client, int talking) mutable {
      if (reported++ >= 1000) return;
      std::string lost = fmt::format("lost {} {}\n", client, talking);
      (void)!write(fd, lost.data(), lost.size());
    });
  }
  Status served = rpc->Serve(*kv, g_stop);
  if (ready_fd >= 0) close(ready_fd);
  if (g_signal.load() != 0) {
    spdlog::info("{}: stopped by signal {}; shared memory removed", name, g_signal.load());
  }
  return served;
}

}  // namespace

Command RegisterServer(CLI::App& app) {
  auto flags = std::make_shared<ServerFlags>();
  CLI::App* cmd =
      app.add_subcommand("server", "Serve one machine's partition (started by the launcher)");
  cmd->add_option("--machines", flags->machines,
                  "The job's lines of ip_config, in partition order (\"0,2\"), when it lists "
                  "spares (tessera launch sets it)");
  cmd->add_option("--ip-config", flags->ip_config,
                  "ip_config file: one 'IP [port]' line per machine")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--part-config", flags->part_config, "partition config (JSON)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--server-id", flags->server_id,
                  "global server id: machine * num_servers + index")
      ->required();
  cmd->add_option("--num-servers", flags->num_servers, "servers per machine")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  cmd->add_option("--num-clients", flags->num_clients,
                  "clients of the whole job; the server exits once all have come and left "
                  "(0: when those that came have left)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 20));
  cmd->add_option("--job-id", flags->job_id, "job id (default: $TESSERA_JOB_ID)");
  cmd->add_option("--heartbeat-timeout", flags->heartbeat_timeout,
                  "seconds of silence after which a client is considered dead")
      ->capture_default_str()
      ->check(Seconds(0.1, 86400));
  cmd->add_option("--startup-timeout", flags->startup_timeout,
                  "seconds to wait for the first client")
      ->capture_default_str()
      ->check(Seconds(0.1, 1e6));
  cmd->add_option("--max-message-bytes", flags->max_message_bytes,
                  "larger message frames are refused (their connection is dropped); clients "
                  "send pieces of at most 1 MiB, or one row when a row is larger")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{4096}, int64_t{1} << 40));
  cmd->add_option("--handshake-timeout", flags->handshake_timeout,
                  "seconds a connection may take to prove it holds the job's key")
      ->capture_default_str()
      ->check(Seconds(0.1, 600));
  cmd->add_option("--ready-fd", flags->ready_fd,
                  "descriptor to write 'ready <port>' to, then 'lost <client id> <others "
                  "talking>' for each client lost (no heartbeat)");
  return {cmd, [flags] {
            Status s = RunServer(*flags);
            if (!s.ok()) return ReportError(s);
            return g_signal.load() != 0 ? 128 + g_signal.load() : 0;
          }};
}

}  // namespace tessera::tools
