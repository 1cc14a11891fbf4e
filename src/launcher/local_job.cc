// File: src/launcher/local_job.cc
#include "src/launcher/local_job.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <random>
#include <utility>

#include "fmt/format.h"
#include "spdlog/spdlog.h"
#include "src/rpc/security.h"
#include "src/shm/segment.h"
#include "tessera/base/file.h"
#include "tessera/base/strings.h"
#include "tessera/partition/partition_config.h"

namespace tessera::launcher {

bool JobResult::ok() const {
  for (int c : client_exit_codes) {
    if (c != 0) return false;
  }
  for (int c : server_exit_codes) {
    if (c != 0) return false;
  }
  return true;
}

std::string LocalJob::ServerLog(int server_id) const {
  return fmt::format("{}/server-{}.log", options_.workdir, server_id);
}

StatusOr<std::unique_ptr<LocalJob>> LocalJob::Start(const LocalJobOptions& options) {
  std::unique_ptr<LocalJob> job(new LocalJob(options));
  ASSIGN_OR_RETURN(PartitionConfig config, ReadPartitionConfig(options.part_config));
  RETURN_IF_ERROR(MakeDirs(options.workdir));
  int S = options.servers_per_machine;
  if (S < 1 || options.clients_per_machine < 0) {
    return absl::InvalidArgumentError("need at least one server per machine");
  }
  // One probe for every port of the job (each machine's servers, then the
  // trainers' c10d store), so that no two of them can be the same.
  ASSIGN_OR_RETURN(int base, ProbeFreePortRange("127.0.0.1", S * config.num_parts + 1));
  for (int m = 0; m < config.num_parts; ++m) {
    job->ip_config_.machines.push_back({"127.0.0.1", base + m * S});
  }
  const int master_port = base + S * config.num_parts;
  JobEnv& env = job->env_;
  env.job_id = shm::RandomJobId();
  env.token = RandomToken();
  if (options.encryption) {
    ASSIGN_OR_RETURN(env.curve_secret_key, rpc::NewCurveSecretKey());
  }
  env.ip_config = options.workdir + "/ip_config.txt";
  env.part_config = options.part_config;
  env.num_servers = S;
  env.world_size = config.num_parts * options.clients_per_machine;
  env.master_port = master_port;
  env.num_samplers = options.num_samplers;
  RETURN_IF_ERROR(WriteFileAtomic(env.ip_config, job->ip_config_.ToText()));
  RETURN_IF_ERROR(job->StartServers());
  if (!options.client_argv.empty()) RETURN_IF_ERROR(job->StartClients(options.client_argv));
  return job;
}

Status LocalJob::StartServers() {
  int S = options_.servers_per_machine;
  int num_servers = num_machines() * S;
  struct Pending {
    int server_id;
    int read_fd;
    std::string received;
  };
  std::vector<Pending> pending;
  auto close_pending = [&] {
    for (Pending& p : pending) {
      if (p.read_fd >= 0) close(p.read_fd);
    }
  };
  for (int id = 0; id < num_servers; ++id) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
      close_pending();
      return ErrnoError("pipe", errno);
    }
    SpawnOptions spawn;
    spawn.argv = {
        options_.tessera_binary,
        "server",
        "--ip-config",
        env_.ip_config,
        "--part-config",
        options_.part_config,
        "--server-id",
        std::to_string(id),
        "--num-servers",
        std::to_string(S),
        "--num-clients",
        std::to_string(options_.num_clients >= 0 ? options_.num_clients : env_.world_size),
        "--job-id",
        env_.job_id,
        "--ready-fd",
        std::to_string(fds[1])};
    for (const std::string& a : options_.server_args) spawn.argv.push_back(a);
    spawn.env = CredentialVariables(env_.token, env_.curve_secret_key);
    spawn.log_path = ServerLog(id);
    spawn.inherit_fd = fds[1];
    StatusOr<Process> p = Process::Spawn(spawn);
    close(fds[1]);
    if (!p.ok()) {
      close(fds[0]);
      close_pending();
      return Annotate(p.status(), fmt::format("start server {}", id));
    }
    servers_.push_back(std::move(*p));
    pending.push_back({id, fds[0], ""});
  }
  // Each server writes "ready <port>\n" once it serves; EOF without it means
  // the server died.
  Deadline deadline = Deadline::InSeconds(options_.startup_timeout_s);
  size_t ready = 0;
  while (ready < pending.size()) {
    std::vector<pollfd> fds;
    std::vector<size_t> which;
    for (size_t i = 0; i < pending.size(); ++i) {
      if (pending[i].read_fd < 0) continue;
      fds.push_back({pending[i].read_fd, POLLIN, 0});
      which.push_back(i);
    }
    int rc = poll(fds.data(), fds.size(), deadline.RemainingMillis());
    if (rc == 0 || deadline.Expired()) {
      close_pending();
      std::vector<int> late;
      for (const Pending& p : pending) {
        if (p.read_fd >= 0) late.push_back(p.server_id);
      }
      return absl::DeadlineExceededError(
          fmt::format("server(s) {} not ready within {:.0f} s (logs: {})", fmt::join(late, ", "),
                      options_.startup_timeout_s, ServerLog(late[0])));
    }
    if (rc < 0) {
      if (errno == EINTR) continue;
      close_pending();
      return ErrnoError("poll", errno);
    }
    for (size_t k = 0; k < fds.size(); ++k) {
      if (fds[k].revents == 0) continue;
      Pending& p = pending[which[k]];
      char buf[64];
      ssize_t n = read(p.read_fd, buf, sizeof(buf));
      if (n < 0 && errno == EINTR) continue;
      if (n > 0) {
        p.received.append(buf, static_cast<size_t>(n));
        if (p.received.find('\n') == std::string::npos) continue;
      }
      // A whole "ready" line (not one cut short by the server's end).
      if (const size_t end = p.received.find('\n');
          end != std::string::npos && p.received.rfind("ready", 0) == 0) {
        // Its "lost" reports follow on the same pipe.
        reports_.push_back({p.server_id, p.read_fd, p.received.substr(end + 1)});
        p.read_fd = -1;
        ++ready;
        continue;
      }
      close_pending();
      int code = servers_[p.server_id].Wait(Deadline::InSeconds(5)).value_or(-1);
      std::string log = ReadFileToString(ServerLog(p.server_id)).value_or("");
      if (log.size() > 2000) log = "..." + log.substr(log.size() - 2000);
      return absl::AbortedError(
          fmt::format("server {} exited (code {}) before it was ready; its log ({}):\n{}",
                      p.server_id, code, ServerLog(p.server_id), log));
    }
  }
  spdlog::info("job {}: {} servers ready on {} machines in {:.2f} s", env_.job_id, num_servers,
               num_machines(), watch_.Seconds());
  return absl::OkStatus();
}

Status LocalJob::StartClients(const std::vector<std::string>& argv) {
  int per_machine = options_.clients_per_machine;
  for (int rank = 0; rank < env_.world_size; ++rank) {
    JobEnv env = env_;
    env.rank = rank;
    env.machine_id = rank / per_machine;
    env.local_rank = rank % per_machine;
    SpawnOptions spawn;
    spawn.argv = argv;
    spawn.env = env.ToVariables();
    if (!options_.client_log_dir.empty()) {
      spawn.log_path = fmt::format("{}/client-{}.log", options_.client_log_dir, rank);
    }
    ASSIGN_OR_RETURN(Process p, Process::Spawn(spawn));
    clients_.push_back(std::move(p));
  }
  return absl::OkStatus();
}

std::string LocalJob::StoppedClient() {
  std::string found;
  for (auto& [s, fd, partial] : reports_) {
    for (char buffer[4096]; fd >= 0;) {
      pollfd p{fd, POLLIN, 0};
      if (poll(&p, 1, 0) <= 0) break;
      const ssize_t n = read(fd, buffer, sizeof(buffer));
      if (n <= 0) {
        close(std::exchange(fd, -1));
        break;
      }
      partial.append(buffer, static_cast<size_t>(n));
    }
    for (size_t end; (end = partial.find('\n')) != std::string::npos; partial.erase(0, end + 1)) {
      const std::optional<LostReport> lost = ParseLostReport(partial.substr(0, end));
      if (!lost || lost->client >= static_cast<int>(clients_.size())) continue;
      const int client = lost->client, talking = lost->others_talking;
      Process& c = clients_[static_cast<size_t>(client)];
      if (c.Poll() || !found.empty()) continue;  // It ended: the others go on.
      if (talking == 0) {
        spdlog::warn(
            "job {}: server {} lost client {} ({}, pid {}), still running, while no "
            "other client talks",
            env_.job_id, s, client, c.name(), c.pid());
        continue;
      }
      found = fmt::format(
          "client {} ({}, pid {}) is running but server {} has not heard from it for its "
          "heartbeat timeout while {} other client(s) still work: it is stopped, frozen or cut "
          "off from the network",
          client, c.name(), c.pid(), s, talking);
    }
  }
  return found;
}

StatusOr<JobResult> LocalJob::Wait(Deadline deadline, const std::atomic<bool>* cancel,
                                   double server_grace_s) {
  auto all_done = [](std::vector<Process>& ps) {
    bool done = true;
    for (Process& p : ps) done &= p.Poll();
    return done;
  };
  auto wait_some = [](std::vector<Process>& ps, int millis) {
    std::vector<pollfd> fds;
    for (Process& p : ps) {
      if (!p.finished() && p.exit_fd() >= 0) fds.push_back({p.exit_fd(), POLLIN, 0});
    }
    poll(fds.data(), fds.size(), millis);
  };
  std::string failure;
  while (!all_done(clients_)) {
    // One client failing dooms the rest (they would wait for it in the next
    // collective): stop everything now rather than at the deadline.
    for (size_t rank = 0; rank < clients_.size() && failure.empty(); ++rank) {
      const Process& p = clients_[rank];
      if (p.finished() && p.exit_code() != 0) {
        failure = fmt::format("client {} ({}, pid {}) {} {}", rank, p.name(), p.pid(),
                              p.exit_code() < 0 ? "was killed by signal" : "exited with code",
                              std::abs(p.exit_code()));
      }
    }
    if (failure.empty()) failure = StoppedClient();
    if (!failure.empty()) {
      spdlog::error("job {}: {}; stopping the other processes", env_.job_id, failure);
      StopAll();
      break;
    }
    if (cancel != nullptr && cancel->load()) {
      StopAll();
      return absl::CancelledError("job cancelled; all processes stopped");
    }
    if (deadline.Expired()) {
      StopAll();
      return absl::DeadlineExceededError("clients still running at the deadline; all stopped");
    }
    wait_some(clients_, std::min(deadline.RemainingMillis(), 200));
  }
  Deadline grace = Deadline::InSeconds(server_grace_s);
  while (!all_done(servers_) && !grace.Expired()) {
    if (cancel != nullptr && cancel->load()) break;
    wait_some(servers_, std::min(grace.RemainingMillis(), 200));
  }
  JobResult result;
  result.first_failure = failure;
  for (Process& p : servers_) {
    if (!p.finished()) {
      spdlog::warn("job {}: {} (pid {}) still running after its clients left; stopping it",
                   env_.job_id, p.name(), p.pid());
      p.Stop();
    }
    result.server_exit_codes.push_back(p.exit_code());
  }
  for (Process& p : clients_) result.client_exit_codes.push_back(p.exit_code());
  result.seconds = watch_.Seconds();
  return result;
}

void LocalJob::StopAll() {
  for (Process& p : clients_) p.Signal(SIGTERM);
  for (Process& p : servers_) p.Signal(SIGTERM);
  for (Process& p : clients_) p.Stop();
  for (Process& p : servers_) p.Stop();
}

LocalJob::~LocalJob() {
  StopAll();
  for (const Reports& r : reports_) {
    if (r.fd >= 0) close(r.fd);
  }
  StatusOr<int> removed = shm::RemoveJobSegments(env_.job_id);
  if (removed.ok() && *removed > 0) {
    spdlog::warn("job {}: removed {} shared-memory segments left by killed servers", env_.job_id,
                 *removed);
  }
}

}  // namespace tessera::launcher
