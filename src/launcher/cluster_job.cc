// File: src/launcher/cluster_job.cc
#include "src/launcher/cluster_job.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <string_view>
#include <utility>

#include "fmt/format.h"
#include "spdlog/spdlog.h"
#include "src/base/process.h"
#include "src/launcher/env_var.h"
#include "src/launcher/ip_config.h"
#include "src/launcher/job_env.h"
#include "src/launcher/remote.h"
#include "src/rpc/security.h"
#include "src/shm/segment.h"
#include "tessera/base/strings.h"
#include "tessera/base/time.h"
#include "tessera/partition/partition_config.h"

namespace tessera::launcher {
namespace {

std::atomic<int> g_signal{0};
void OnSignal(int s) { g_signal.store(s); }

// A pipe read line by line.
struct Stream {
  int fd = -1;
  std::string partial;  // A line not ended yet.
};

// One process of the job and its link (stdin) and output pipes.
struct Member {
  int machine = 0;
  bool server = false;
  int rank = 0;  // Server id or trainer rank.
  std::string host;
  Process process;
  int link_fd = -1;
  // What it prints; a server's stderr only, as its stdout carries its
  // reports ("ready <port>", "lost <client> <talking>") and nothing else.
  Stream output, reports;
  bool ready = false;
  // Its last output line that looks like an error, and its last non-empty
  // line: the cause a failure message quotes.
  std::string last_error, last_line;
  // When its first error line arrived (whether that line reports a peer's
  // failure: a consequence) and when its exit was first seen: when it failed.
  std::optional<Clock::time_point> first_error_at, exited_at;
  bool first_error_is_consequence = false;
  std::optional<Clock::time_point> FailedAt() const {
    return first_error_at ? first_error_at : exited_at;
  }
  std::string Label() const {
    return fmt::format("[{}/{}/{}]", machine, server ? "server" : "trainer", rank);
  }
  std::string Describe() const {
    return fmt::format("{} {} on machine {} ({})", server ? "server" : "trainer", rank, machine,
                       host);
  }
  void Remember(const std::string& line);
  // ": <last error line>", else "; last output: <last line>", or "" when it
  // printed nothing.
  std::string Cause() const {
    if (!last_error.empty()) return ": " + last_error;
    return last_line.empty() ? "" : "; last output: " + last_line;
  }
};

// tessera's own tools print "error: ...", spdlog "[error]", C++ "what():",
// Python "...Error: ..." as the last line of a traceback.
bool LooksLikeError(std::string_view line) {
  std::string lower(line);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (lower.find("traceback (most recent call last)") != std::string::npos) return false;
  for (std::string_view word : {"error", "what():", "exception", "fatal", "terminate called"}) {
    if (lower.find(word) != std::string::npos) return true;
  }
  return false;
}

// spdlog's lines below the error level ("[info]", "[warning]", "[debug]").
bool IsLowLevelLogLine(std::string_view line) {
  for (std::string_view level : {"] [info] ", "] [warning] ", "] [debug] ", "] [trace] "}) {
    if (line.find(level) != std::string_view::npos) return true;
  }
  return false;
}

// An error that reports a peer's failure rather than its own: a closed or
// reset connection, a collective another trainer did not reach (tessera's
// DDP, Gloo through PyTorch).
bool LooksLikeConsequence(std::string_view line) {
  std::string lower(line);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (std::string_view words : {"a trainer failed or did not arrive", "connection closed by peer",
                                 "connection reset by peer", "broken pipe"}) {
    if (lower.find(words) != std::string::npos) return true;
  }
  return false;
}

void Member::Remember(const std::string& line) {
  std::string_view text = StripWhitespace(line);
  if (text.empty()) return;
  constexpr size_t kMaxCause = 400;  // Enough for a message; no log-sized lines.
  std::string kept(text.substr(0, kMaxCause));
  if (text.size() > kMaxCause) kept += "...";
  if (LooksLikeError(text)) {
    // When it failed: its first error line that is not a log line of a
    // lower level (a warning that mentions an error is not a failure). A
    // process whose errors report a peer's failure anywhere (a traceback's
    // last line, too) is a consequence.
    if (!first_error_at && !IsLowLevelLogLine(text)) first_error_at = Clock::now();
    if (LooksLikeConsequence(text)) first_error_is_consequence = true;
    last_error = kept;
  }
  last_line = std::move(kept);
}

// The process whose failure caused the others' among those that failed
// (exit code != 0): the first to fail in time (its first error line, or
// its exit without one), except that a failure reporting a peer's (a closed
// connection, a collective a trainer did not reach) ranks after one that
// does not, since that peer failed first. Not the loudest: a process that
// crashed while failing because of another is not the cause.
Member* RootCause(const std::vector<std::unique_ptr<Member>>& members) {
  Member* root = nullptr;
  auto key = [](const Member& m) {
    return std::make_pair(m.first_error_at.has_value() && m.first_error_is_consequence,
                          m.FailedAt().value_or(Clock::time_point::max()));
  };
  for (const auto& m : members) {
    // A process that failed and is still exiting (saying goodbye, running
    // exit handlers) counts once it printed an error of its own.
    bool failed = m->process.finished() ? m->process.exit_code() != 0
                                        : m->first_error_at && !m->first_error_is_consequence;
    if (!failed) continue;
    if (root == nullptr || key(*m) < key(*root)) root = m.get();
  }
  return root;
}

// Whether `m` has exited; notes when that was first seen.
bool PollExit(Member& m) {
  if (!m.process.Poll()) return false;
  if (!m.exited_at) m.exited_at = Clock::now();
  return true;
}

class ClusterJob {
 public:
  ClusterJob(ClusterJobOptions f, int attempt) : f_(std::move(f)), attempt_(attempt) {}
  StatusOr<int> Run();
  // The failure that ended the job ("" after success); whether a signal
  // (SIGINT/SIGTERM) to the launcher ended it.
  const std::string& failure() const { return failure_; }
  bool interrupted() const { return interrupted_; }
  // Whether every trainer had exited 0 (a later failure is the servers').
  bool trainers_succeeded() const { return trainers_succeeded_; }

 private:
  Status Check();
  Status ChooseMachines();
  Status Start(Member& m, const std::vector<std::string>& argv,
               const std::vector<std::pair<std::string, std::string>>& env);
  // Reads and prints output for up to `millis`; marks servers ready.
  void Pump(int millis);
  void Print(Member& m, const std::string& line);
  void Report(Member& m, const std::string& line);
  // Pumps until `m`'s output ends (it exited) or `millis` pass: its last lines.
  void Drain(const Member& m, int millis);
  void Teardown();
  std::string Path(const std::string& p) const {
    return std::filesystem::path(p).is_absolute() ? p : f_.workspace + "/" + p;
  }

  ClusterJobOptions f_;
  IpConfig ip_;
  PartitionConfig config_;
  std::vector<bool> local_;
  std::string machines_;  // The lines of ip_config in use, when it lists spares ("0,2").
  SshOptions ssh_;
  std::string job_id_, token_, key_;
  std::vector<std::unique_ptr<Member>> members_;
  // Each "lost <client id> <others talking>" a server reported: a trainer
  // it stopped hearing from (--heartbeat-timeout).
  struct Lost {
    const Member* server;
    int client, others_talking;
  };
  std::vector<Lost> lost_;
  std::vector<std::pair<std::string, std::string>> extra_envs_;  // Checked --extra-envs.
  int attempt_ = 0;
  std::string failure_;
  bool interrupted_ = false, trainers_succeeded_ = false;
};

Status ClusterJob::Check() {
  if (f_.command.empty()) return absl::InvalidArgumentError("no command to launch");
  for (const std::string& kv : f_.extra_envs) {
    StatusOr<std::pair<std::string, std::string>> var = ParseEnvAssignment(kv);
    if (!var.ok()) return Annotate(var.status(), "--extra-envs");
    extra_envs_.push_back(std::move(*var));
  }
  if (!std::filesystem::is_directory(f_.workspace)) {
    return absl::NotFoundError(fmt::format("--workspace {} is not a directory", f_.workspace));
  }
  ASSIGN_OR_RETURN(ip_, ReadIpConfig(Path(f_.ip_config)));
  RETURN_IF_ERROR(CheckNoPortClash(ip_, f_.num_servers));
  ASSIGN_OR_RETURN(config_, ReadPartitionConfig(Path(f_.part_config)));
  if (ip_.num_machines() < config_.num_parts) {
    return absl::InvalidArgumentError(fmt::format(
        "{} has {} partitions but {} lists {} machines: one machine serves one partition",
        f_.part_config, config_.num_parts, f_.ip_config, ip_.num_machines()));
  }
  if (f_.tessera.empty()) return absl::InvalidArgumentError("no tessera program path");
  ssh_.port = f_.ssh_port;
  ssh_.user = f_.ssh_username;
  ssh_.extra = f_.ssh_options;
  for (const auto& machine : ip_.machines) {
    local_.push_back(!f_.force_ssh && IsLocalAddress(machine.ip));
  }
  if (std::find(local_.begin(), local_.end(), false) != local_.end()) {
    ASSIGN_OR_RETURN(ssh_.ssh, FindProgram("ssh"));
  }
  return ChooseMachines();
}

// With spares (more lines than partitions), machine i serves partition i
// when it answers (it holds that partition); a machine that does not is
// replaced by the next spare that does (a spare holds every partition). A
// local machine always answers, a remote one if `ssh host true` succeeds
// within its connect timeout.
Status ClusterJob::ChooseMachines() {
  const int P = config_.num_parts, M = ip_.num_machines();
  if (M > P) {
    auto answers = [&](int i) {
      if (local_[static_cast<size_t>(i)]) return true;
      StatusOr<Process> probe =
          Process::Spawn({.argv = SshArgv(ssh_, ip_.machines[static_cast<size_t>(i)].ip, "true"),
                          .stdin_null = true});
      StatusOr<int> code = probe.ok() ? probe->Wait(Deadline::InSeconds(ssh_.connect_timeout_s + 5))
                                      : probe.status();
      if (probe.ok() && !code.ok()) probe->Stop();
      return code.ok() && *code == 0;
    };
    std::vector<int> chosen(static_cast<size_t>(P));
    int spare = P;
    for (int p = 0; p < P; ++p) {
      chosen[static_cast<size_t>(p)] = p;
      if (answers(p)) continue;
      while (spare < M && !answers(spare)) ++spare;
      if (spare == M) {
        return absl::UnavailableError(
            fmt::format("machine {} ({}) of {} does not answer ssh, and no spare does", p,
                        ip_.machines[static_cast<size_t>(p)].ip, f_.ip_config));
      }
      spdlog::warn("launch: machine {} ({}) does not answer ssh; spare {} ({}) takes partition {}",
                   p, ip_.machines[static_cast<size_t>(p)].ip, spare,
                   ip_.machines[static_cast<size_t>(spare)].ip, p);
      chosen[static_cast<size_t>(p)] = spare++;
    }
    machines_ = StrJoin(chosen, ",");
    spdlog::info("launch: {} lists {} machines for {} partitions; running on lines {}",
                 f_.ip_config, M, P, machines_);
    IpConfig selected;
    std::vector<bool> local;
    for (int i : chosen) {
      selected.machines.push_back(ip_.machines[static_cast<size_t>(i)]);
      local.push_back(local_[static_cast<size_t>(i)]);
    }
    ip_ = std::move(selected);
    local_ = std::move(local);
  }
  if (f_.master_port == 0) {
    f_.master_port = ip_.machines[0].port + f_.num_servers;
    if (f_.master_port > 65535) {
      return absl::InvalidArgumentError(fmt::format(
          "the trainers' rendezvous port would be {} (machine 0's server port {} + {} servers), "
          "above 65535: pass --master-port",
          f_.master_port, ip_.machines[0].port, f_.num_servers));
    }
  }
  return absl::OkStatus();
}

Status ClusterJob::Start(Member& m, const std::vector<std::string>& program,
                         const std::vector<std::pair<std::string, std::string>>& env) {
  std::string block;  // The environment, for the supervisor's stdin.
  for (const auto& [k, v] : env) {
    // Flags end up in values too (--part-config, --ip-config): none may add a variable.
    if (Status st = CheckEnvVariable(k, v); !st.ok()) {
      return Annotate(st, "environment of " + m.Describe());
    }
    block += k + "=" + v + "\n";
  }
  block += "\n";
  std::vector<std::string> wrapped = {f_.tessera,
                                      "supervise",
                                      "--cwd",
                                      f_.workspace,
                                      "--cleanup-job",
                                      job_id_,
                                      "--grace",
                                      fmt::format("{}", f_.grace_s),
                                      "--"};
  wrapped.insert(wrapped.end(), program.begin(), program.end());
  // A server's stdout is its reports' own pipe (over ssh, the channel's
  // stdout; its logs go to stderr).
  int link[2] = {-1, -1}, output[2] = {-1, -1}, reports[2] = {-1, -1};
  auto close_all = [&] {
    for (int fd : {link[0], link[1], output[0], output[1], reports[0], reports[1]}) {
      if (fd >= 0) close(fd);
    }
  };
  if (pipe2(link, O_CLOEXEC) != 0 || pipe2(output, O_CLOEXEC) != 0 ||
      (m.server && pipe2(reports, O_CLOEXEC) != 0)) {
    const int e = errno;
    close_all();
    return ErrnoError("pipe for " + m.Describe(), e);
  }
  SpawnOptions spawn;
  spawn.argv = local_[static_cast<size_t>(m.machine)]
                   ? wrapped
                   : SshArgv(ssh_, m.host, ShellCommand(wrapped));
  spawn.stdin_fd = link[0];
  spawn.output_fd = m.server ? reports[1] : output[1];
  spawn.output_stdout_only = m.server;
  spawn.error_fd = output[1];
  spawn.grace_seconds = f_.grace_s + 5;
  StatusOr<Process> p = Process::Spawn(spawn);
  if (!p.ok()) {
    close_all();
    return Annotate(p.status(), "start " + m.Describe());
  }
  m.process = std::move(*p);
  m.link_fd = std::exchange(link[1], -1);
  m.output.fd = std::exchange(output[0], -1);
  m.reports.fd = std::exchange(reports[0], -1);
  close_all();
  if (write(m.link_fd, block.data(), block.size()) != static_cast<ssize_t>(block.size())) {
    return absl::UnavailableError(fmt::format("{} did not take its environment", m.Describe()));
  }
  return absl::OkStatus();
}

void ClusterJob::Report(Member& m, const std::string& line) {
  int64_t port = 0;
  if (!m.ready && line.rfind("ready ", 0) == 0 && ParseInt64(line.substr(6), &port)) {
    m.ready = true;
    return;
  }
  if (m.ready) {
    if (const std::optional<LostReport> lost = ParseLostReport(line)) {
      lost_.push_back({&m, lost->client, lost->others_talking});
      return;  // The server logs it too, in words.
    }
  }
  Print(m, line);  // Not a report (a server without --ready-fd, say): shown.
}

void ClusterJob::Print(Member& m, const std::string& line) {
  m.Remember(line);
  std::string out = m.Label() + " " + line + "\n";
  (void)!write(STDOUT_FILENO, out.data(), out.size());
}

void ClusterJob::Pump(int millis) {
  std::vector<pollfd> fds;
  std::vector<std::pair<Member*, Stream*>> owners;
  for (auto& m : members_) {
    for (Stream* s : {&m->output, &m->reports}) {
      if (s->fd < 0) continue;
      fds.push_back({s->fd, POLLIN, 0});
      owners.emplace_back(m.get(), s);
    }
  }
  if (fds.empty()) {
    usleep(static_cast<useconds_t>(millis) * 1000);
    return;
  }
  if (poll(fds.data(), fds.size(), millis) <= 0) return;
  for (size_t i = 0; i < fds.size(); ++i) {
    if (fds[i].revents == 0) continue;
    auto [m, s] = owners[i];
    auto line = [this, m = m, reports = s == &m->reports](const std::string& text) {
      reports ? Report(*m, text) : Print(*m, text);
    };
    char buffer[65536];
    ssize_t n = read(s->fd, buffer, sizeof(buffer));
    if (n <= 0) {
      if (!s->partial.empty()) line(s->partial);
      s->partial.clear();
      close(s->fd);
      s->fd = -1;
      continue;
    }
    s->partial.append(buffer, static_cast<size_t>(n));
    size_t start = 0, end;
    while ((end = s->partial.find('\n', start)) != std::string::npos) {
      line(s->partial.substr(start, end - start));
      start = end + 1;
    }
    s->partial.erase(0, start);
  }
}

void ClusterJob::Drain(const Member& m, int millis) {
  Deadline deadline = Deadline::InSeconds(millis / 1000.0);
  while ((m.output.fd >= 0 || m.reports.fd >= 0) && !deadline.Expired()) Pump(50);
}

void ClusterJob::Teardown() {
  // Closing a process's link makes its supervisor stop it and remove the
  // job's shared memory on its machine (over ssh: the channel closes).
  for (auto& m : members_) {
    if (m->link_fd >= 0) close(m->link_fd);
    m->link_fd = -1;
  }
  Deadline deadline = Deadline::InSeconds(f_.grace_s + 10);
  while (!deadline.Expired()) {
    bool running = false;
    for (auto& m : members_) running |= !m->process.Poll();
    if (!running) break;
    Pump(100);
  }
  for (auto& m : members_) {
    if (!m->process.Poll()) {
      spdlog::warn("launch: {} did not stop in time; killing it", m->Describe());
      m->process.Stop();
    }
  }
  Pump(0);
  // This host's machines: anything a killed server left (one /dev/shm for
  // all of them).
  if (std::find(local_.begin(), local_.end(), true) != local_.end()) {
    (void)shm::RemoveJobSegments(job_id_);
  }
}

StatusOr<int> ClusterJob::Run() {
  Status checked = Check();
  if (!checked.ok()) return checked;
  HandleSignals(OnSignal, {SIGINT, SIGTERM});
  signal(SIGPIPE, SIG_IGN);
  job_id_ = shm::RandomJobId();
  token_ = RandomToken();
  if (!f_.no_encryption) {
    StatusOr<std::string> key = rpc::NewCurveSecretKey();
    if (!key.ok()) return key.status();
    key_ = *key;
  }
  const int M = ip_.num_machines(), S = f_.num_servers, T = f_.num_trainers;
  const int world = M * T;
  spdlog::info("launch: job {}: {} machine(s) x ({} server(s) + {} trainer(s)), workspace {}",
               job_id_, M, S, T, f_.workspace);
  if (key_.empty()) {
    spdlog::warn(
        "launch: --no-encryption: the job's traffic, its token included, is readable "
        "by anyone on the network path");
  }
  Stopwatch watch;
  std::string failure;
  int failure_code = 0;
  auto fail = [&](const std::string& why, int code) {
    if (failure.empty()) {
      failure = why;
      failure_code = code == 0 ? 1 : code;
    }
  };
  const std::vector<std::pair<std::string, std::string>>& extra = extra_envs_;
  // Servers.
  for (int machine = 0; machine < M && failure.empty(); ++machine) {
    for (int i = 0; i < S && failure.empty(); ++i) {
      auto m = std::make_unique<Member>();
      m->machine = machine;
      m->server = true;
      m->rank = machine * S + i;
      m->host = ip_.machines[static_cast<size_t>(machine)].ip;
      std::vector<std::string> argv = {
          f_.tessera,      "server",          "--ip-config",   f_.ip_config,
          "--part-config", f_.part_config,    "--server-id",   std::to_string(m->rank),
          "--num-servers", std::to_string(S), "--num-clients", std::to_string(world),
          "--job-id",      job_id_,           "--ready-fd",    "1"};
      argv.insert(argv.end(), {"--heartbeat-timeout", fmt::format("{}", f_.heartbeat_timeout_s)});
      if (!machines_.empty()) argv.insert(argv.end(), {"--machines", machines_});
      std::vector<std::pair<std::string, std::string>> env = CredentialVariables(token_, key_);
      env.emplace_back("OMP_NUM_THREADS", std::to_string(f_.num_server_threads));
      env.insert(env.end(), extra.begin(), extra.end());
      Status st = Start(*m, argv, env);
      members_.push_back(std::move(m));
      if (!st.ok()) fail(std::string(st.message()), 1);
    }
  }
  // Wait until every server serves.
  Deadline startup = Deadline::InSeconds(f_.startup_timeout_s);
  while (failure.empty()) {
    bool all_ready = true;
    for (auto& m : members_) {
      if (m->ready) continue;
      all_ready = false;
      if (m->process.Poll()) {
        Drain(*m, 1000);
        fail(fmt::format("{} exited (code {}) before it was ready{}", m->Describe(),
                         m->process.exit_code(), m->Cause()),
             m->process.exit_code() < 0 ? 128 - m->process.exit_code() : m->process.exit_code());
      }
    }
    if (all_ready) break;
    if (g_signal.load() != 0) fail("interrupted while the servers started", 128 + g_signal.load());
    if (startup.Expired()) fail("servers not ready within --startup-timeout", 1);
    Pump(100);
  }
  if (failure.empty()) {
    spdlog::info("launch: {} servers ready in {:.1f} s; starting {} trainers", M * S,
                 watch.Seconds(), world);
  }
  // Trainers.
  for (int machine = 0; machine < M && failure.empty(); ++machine) {
    for (int t = 0; t < T && failure.empty(); ++t) {
      auto m = std::make_unique<Member>();
      m->machine = machine;
      m->rank = machine * T + t;
      m->host = ip_.machines[static_cast<size_t>(machine)].ip;
      JobEnv env{.job_id = job_id_,
                 .token = token_,
                 .curve_secret_key = key_,
                 .ip_config = f_.ip_config,
                 .part_config = f_.part_config,
                 .num_servers = S,
                 .machine_id = machine,
                 .rank = m->rank,
                 .world_size = world,
                 .local_rank = t,
                 .master_addr = ip_.machines[0].ip,
                 .master_port = f_.master_port,
                 .num_samplers = f_.num_samplers,
                 .machines = machines_};
      auto vars = env.ToVariables();
      if (f_.num_omp_threads > 0)
        vars.emplace_back("OMP_NUM_THREADS", std::to_string(f_.num_omp_threads));
      // LibTorch's OpenMP threads would otherwise spin between parallel
      // regions, taking the cores from the sampler threads (see
      // examples/common.h); a value the user exported is kept.
      if (std::getenv("OMP_WAIT_POLICY") == nullptr)
        vars.emplace_back("OMP_WAIT_POLICY", "PASSIVE");
      vars.emplace_back("TESSERA_RESTART", std::to_string(attempt_));
      if (!f_.checkpoint_dir.empty())
        vars.emplace_back("TESSERA_CHECKPOINT_DIR", Path(f_.checkpoint_dir));
      vars.insert(vars.end(), extra.begin(), extra.end());
      Status st = Start(*m, {"/bin/sh", "-c", StrJoin(f_.command, " ")}, vars);
      members_.push_back(std::move(m));
      if (!st.ok()) fail(std::string(st.message()), 1);
    }
  }
  // Supervise: the first failure stops everything.
  Deadline servers_exit = Deadline::Infinite();
  bool trainers_done = false;
  while (failure.empty()) {
    Pump(200);
    if (g_signal.load() != 0) {
      interrupted_ = true;
      fail(fmt::format("interrupted (signal {})", g_signal.load()), 128 + g_signal.load());
      break;
    }
    bool trainers_running = false, servers_running = false, failed = false;
    for (auto& m : members_) {
      if (!PollExit(*m)) {
        (m->server ? servers_running : trainers_running) = true;
        continue;
      }
      if (m->process.exit_code() != 0) failed = true;
    }
    if (failed) {
      // One failure makes its peers fail too (a closed Gloo connection, a
      // dead server): let the exits and errors of this moment arrive, then
      // name the first (RootCause).
      Deadline settle = Deadline::InSeconds(1);
      while (!settle.Expired()) {
        Pump(50);
        for (auto& m : members_) PollExit(*m);
      }
      Member* root = RootCause(members_);
      Drain(*root, 1000);
      if (!PollExit(*root)) {  // Failed, still exiting (RootCause).
        fail(fmt::format("{} failed{}", root->Describe(), root->Cause()), 1);
        break;
      }
      int code = root->process.exit_code();
      // Through supervise and /bin/sh a signal's death is exit code 128 + it.
      fail(fmt::format("{} {}{}", root->Describe(),
                       code < 0 ? fmt::format("was killed by signal {}", -code)
                       : code > 128 && code < 160
                           ? fmt::format("was killed by signal {} (exit code {})", code - 128, code)
                           : fmt::format("exited with code {}", code),
                       root->Cause()),
           code < 0 ? 128 - code : code);
      break;
    }
    // A trainer still running that a server stopped hearing from while
    // others still talk to it is stopped, frozen or cut off: they would wait
    // for it in their collectives (10 minutes for tessera's, 30 for
    // PyTorch's). One that exited is seen above. Without others talking, it
    // may be a trainer whose process ended without a goodbye (os._exit)
    // while its command goes on, and nobody waits for it.
    for (const Lost& lost : lost_) {
      for (auto& m : members_) {
        if (m->server || m->rank != lost.client || PollExit(*m)) continue;
        if (lost.others_talking == 0) {
          spdlog::warn("launch: {} no longer talks to {} (no goodbye) and no trainer waits for it",
                       m->Describe(), lost.server->Describe());
          continue;
        }
        fail(fmt::format("{} is running but {} has not heard from it for {} s (--heartbeat-"
                         "timeout) while {} other trainer(s) still work: it is stopped, frozen or "
                         "cut off from the network",
                         m->Describe(), lost.server->Describe(), f_.heartbeat_timeout_s,
                         lost.others_talking),
             1);
      }
    }
    lost_.clear();
    if (!failure.empty()) break;
    // (A server exits by itself, with code 0, only once every trainer has
    // said goodbye: its trainers are finishing too.)
    if (trainers_running) continue;
    if (!trainers_done) {
      trainers_done = true;
      trainers_succeeded_ = true;
      servers_exit = Deadline::InSeconds(f_.server_exit_timeout_s);
      spdlog::info("launch: all {} trainers finished in {:.1f} s; waiting for the servers", world,
                   watch.Seconds());
    }
    if (!servers_running) break;
    if (servers_exit.Expired()) {
      spdlog::warn("launch: servers still running {} s after the trainers left; stopping them",
                   f_.server_exit_timeout_s);
      break;
    }
  }
  if (!failure.empty()) spdlog::error("launch: {}; stopping every process of the job", failure);
  Teardown();
  failure_ = failure;
  if (g_signal.load() != 0) interrupted_ = true;
  if (!failure.empty()) {
    spdlog::error("launch: job {} failed after {:.1f} s: {}", job_id_, watch.Seconds(), failure);
    return failure_code;
  }
  spdlog::info("launch: job {} succeeded in {:.1f} s", job_id_, watch.Seconds());
  return 0;
}

}  // namespace

StatusOr<int> RunClusterJob(ClusterJobOptions options) {
  if (options.max_restarts < 0) {
    return absl::InvalidArgumentError("--max-restarts must be 0 or more");
  }
  for (int attempt = 0;; ++attempt) {
    ClusterJob job(options, attempt);
    StatusOr<int> code = job.Run();
    // Not after an interrupt, nor once the trainers finished (their work
    // is done; only the servers' shutdown failed).
    if (!code.ok() || *code == 0 || job.interrupted() || job.trainers_succeeded() ||
        attempt >= options.max_restarts) {
      return code;
    }
    spdlog::warn("launch: restart {} of {} (the trainers get TESSERA_RESTART={}{}) after: {}",
                 attempt + 1, options.max_restarts, attempt + 1,
                 options.checkpoint_dir.empty()
                     ? ""
                     : fmt::format(" and TESSERA_CHECKPOINT_DIR={}", options.checkpoint_dir),
                 job.failure());
  }
}

}  // namespace tessera::launcher
