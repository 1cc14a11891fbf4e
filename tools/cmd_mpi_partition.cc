// `tessera mpi-partition`: distributed partitioning of a chunked graph by P
// MPI ranks (src/dist_partition/dist_partition.h). Every rank runs this
// command under mpirun; with --ranks P (and not under mpirun already) it
// starts mpirun itself, on this same command line, and stops it when a rank
// goes silent (--heartbeat-timeout).
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "fmt/format.h"
#include "nlohmann/json.hpp"
#include "spdlog/spdlog.h"
#include "src/base/process.h"
#include "src/dist_partition/dist_partition.h"
#include "src/dist_partition/mpi_comm.h"
#include "src/launcher/ip_config.h"
#include "tessera/base/file.h"
#include "tessera/base/resource.h"
#include "tessera/base/strings.h"
#include "tessera/base/time.h"
#include "tools/commands.h"

namespace tessera::tools {
namespace {

struct MpiPartitionFlags {
  std::string input, graph_name, out, part_method = "metis";
  int num_parts = 0;
  dist_partition::DistPartitionOptions options;  // Its defaults (coarsening 8).
  // Launching.
  int ranks = 0;
  std::string hostfile, ip_config, network, mpirun = "mpirun";
  std::vector<std::string> mpirun_args;
  int ssh_port = 0;  // 0: ssh's own (its config's, else 22).
  std::string ssh_username;
  std::vector<std::string> ssh_options;
  int64_t piece_mb = 16;
  bool log_all_ranks = false;
  std::string stats_json;
  // With --ranks: a rank not heard from for this long stops the run. Each
  // rank prints kAliveLine every --alive-every seconds (the wrapper sets it).
  double heartbeat_timeout_s = 60, alive_every_s = 0;
  // With --ranks: seconds mpirun has to start a rank (its first alive line).
  double startup_timeout_s = 120;
  // Tests: "<step>:<rank>[:kill|:stop]" makes that rank fail (die, stop) as
  // the step starts.
  std::string fail_at;
};

constexpr std::string_view kAliveLine = "tessera-mpi-alive ";

// The same command for every rank, without the launcher's flags.
std::vector<std::string> RankCommand(const MpiPartitionFlags& f) {
  const auto level = spdlog::level::to_string_view(spdlog::get_level());
  std::vector<std::string> args = {SelfExecutable(),
                                   "--log-level",
                                   std::string(level.data(), level.size()),
                                   "mpi-partition",
                                   "--input",
                                   f.input,
                                   "--num-parts",
                                   std::to_string(f.num_parts),
                                   "--out",
                                   f.out,
                                   "--part-method",
                                   f.part_method,
                                   "--num-hops",
                                   std::to_string(f.options.num_hops),
                                   "--seed",
                                   std::to_string(f.options.seed),
                                   "--piece-mb",
                                   std::to_string(f.piece_mb),
                                   "--coarsening",
                                   fmt::format("{}", f.options.coarsening),
                                   "--coarsen-min-arcs",
                                   std::to_string(f.options.coarsen_min_arcs),
                                   "--num-trainers-per-machine",
                                   std::to_string(f.options.num_trainers_per_machine)};
  if (!f.graph_name.empty()) args.insert(args.end(), {"--graph-name", f.graph_name});
  if (!f.options.balance_ntypes.empty()) {
    args.insert(args.end(), {"--balance-ntypes", f.options.balance_ntypes});
  }
  if (f.options.balance_edges) args.push_back("--balance-edges");
  if (f.options.return_mapping) args.push_back("--return-mapping");
  if (f.log_all_ranks) args.push_back("--log-all-ranks");
  if (!f.stats_json.empty()) args.insert(args.end(), {"--stats-json", f.stats_json});
  if (!f.fail_at.empty()) args.insert(args.end(), {"--fail-at", f.fail_at});
  if (f.alive_every_s > 0) {
    args.insert(args.end(), {"--alive-every", fmt::format("{}", f.alive_every_s)});
  }
  return args;
}

// mpirun's --host list for the machines of an ip_config (as `tessera
// launch` reads it): ranks / machines ranks on each machine, machines that
// share an IP (a single-host config) pooled.
StatusOr<std::string> HostsOf(const std::string& path, int ranks) {
  ASSIGN_OR_RETURN(launcher::IpConfig config, launcher::ReadIpConfig(path));
  const int machines = config.num_machines();
  if (ranks % machines != 0) {
    return absl::InvalidArgumentError(
        StrCat("--ranks ", ranks, " is not a multiple of the ", machines, " machines of ", path));
  }
  std::vector<std::pair<std::string, int>> hosts;
  for (const launcher::MachineAddress& m : config.machines) {
    auto it =
        std::find_if(hosts.begin(), hosts.end(), [&](const auto& h) { return h.first == m.ip; });
    if (it == hosts.end()) {
      hosts.emplace_back(m.ip, ranks / machines);
    } else {
      it->second += ranks / machines;
    }
  }
  std::vector<std::string> items;
  for (const auto& [ip, slots] : hosts) items.push_back(StrCat(ip, ":", slots));
  return StrJoin(items, ",");
}

// The mpirun arguments that place the ranks and reach other machines:
// --hostfile or the ip_config's hosts (else this machine only), ssh as
// `tessera launch` runs it, TCP over --network.
StatusOr<std::vector<std::string>> PlacementArgs(const MpiPartitionFlags& f) {
  std::vector<std::string> args;
  if (!f.hostfile.empty() && !f.ip_config.empty()) {
    return absl::InvalidArgumentError("give --hostfile or --ip-config, not both");
  }
  if (!f.hostfile.empty()) {
    args.insert(args.end(), {"--hostfile", f.hostfile});
  } else if (!f.ip_config.empty()) {
    ASSIGN_OR_RETURN(std::string hosts, HostsOf(f.ip_config, f.ranks));
    args.insert(args.end(), {"--host", hosts});
  } else {
    args.push_back("--oversubscribe");  // This machine only: more ranks than cores is fine.
  }
  // An MCA parameter the wrapper sets may not come from --mpirun-arg too
  // (mpirun refuses a parameter given twice with different values).
  auto also_given = [&](std::initializer_list<const char*> names) -> Status {
    for (const char* name : names) {
      if (std::find(f.mpirun_args.begin(), f.mpirun_args.end(), name) != f.mpirun_args.end()) {
        return absl::InvalidArgumentError(
            StrCat("--mpirun-arg sets ", name, ", which the wrapper's own flags set too"));
      }
    }
    return absl::OkStatus();
  };
  // Open MPI starts remote ranks with this command line (split at spaces):
  // only when told how to reach the machines, else its default ssh as the
  // user's ssh config has it.
  if (!f.ip_config.empty() || f.ssh_port != 0 || !f.ssh_username.empty() ||
      !f.ssh_options.empty()) {
    RETURN_IF_ERROR(also_given({"plm_rsh_agent"}));
    std::vector<std::string> ssh = {"ssh", "-o", "BatchMode=yes"};
    if (f.ssh_port != 0) ssh.insert(ssh.end(), {"-p", std::to_string(f.ssh_port)});
    for (const std::string& o : f.ssh_options) ssh.insert(ssh.end(), {"-o", o});
    if (!f.ssh_username.empty()) ssh.insert(ssh.end(), {"-l", f.ssh_username});
    for (const std::string& word : ssh) {
      if (word.empty() || word.find_first_of(" \t\n'\"") != std::string::npos) {
        return absl::InvalidArgumentError(
            StrCat("ssh option '", word,
                   "' is empty or has spaces or quotes, which mpirun's ssh "
                   "agent (one command line split at spaces) cannot carry"));
      }
    }
    args.insert(args.end(), {"--mca", "plm_rsh_agent", StrJoin(ssh, " ")});
  }
  if (!f.network.empty()) {
    RETURN_IF_ERROR(also_given({"btl", "btl_tcp_if_include", "oob_tcp_if_include"}));
    // TCP only: shared memory between ranks that Open MPI takes for one
    // node (same host name, as containers and namespaces often have)
    // crashes when they are not.
    args.insert(args.end(), {"--mca", "btl", "self,tcp", "--mca", "btl_tcp_if_include", f.network,
                             "--mca", "oob_tcp_if_include", f.network});
  }
  return args;
}

// Passes mpirun's output (`output_fd`) on to stdout, except the ranks'
// kAliveLine lines: once the first arrives (the ranks are up), a rank not
// heard from for `timeout_s` is stopped, frozen or cut off, and its peers
// would wait for it in a collective forever; before, mpirun has
// `startup_s` to start one. Then it says so and closes `stop_fd`, which
// makes WaitInForeground stop mpirun.
class RankWatch {
 public:
  RankWatch(int ranks, double timeout_s, double startup_s, int output_fd, int stop_fd)
      : heard_(static_cast<size_t>(ranks)),
        timeout_s_(timeout_s),
        startup_s_(startup_s),
        stop_fd_(stop_fd) {
    thread_ = std::thread([this, output_fd] { Run(output_fd); });
  }
  ~RankWatch() { Finish(); }
  // Passes on what is left to read (for a second at most) and returns the
  // message of the rank found silent, or "".
  std::string Finish() {
    if (!thread_.joinable()) return stalled_;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
    }
    thread_.join();
    if (stop_fd_ >= 0) close(stop_fd_);
    stop_fd_ = -1;
    return stalled_;
  }

 private:
  void Run(int fd) {
    std::string partial;
    std::optional<Clock::time_point> up;  // The first alive line.
    std::optional<Deadline> drain;        // Once mpirun has ended.
    for (;;) {
      pollfd p{fd, POLLIN, 0};
      int rc = poll(&p, 1, 200);
      if (!drain) {
        std::lock_guard<std::mutex> lock(mutex_);
        if (done_) drain = Deadline::InSeconds(1);
      }
      if (rc > 0) {
        char buffer[65536];
        ssize_t n = read(fd, buffer, sizeof(buffer));
        if (n == 0 || (n < 0 && errno != EINTR)) break;  // EOF: mpirun and the ranks are gone.
        if (n > 0) partial.append(buffer, static_cast<size_t>(n));
        // Time spent blocked passing lines on (a slow reader of stdout) is
        // time this thread did not read the ranks': it does not count.
        const Clock::time_point before = Clock::now();
        Lines(partial, up);
        if (const auto blocked = Clock::now() - before; blocked > std::chrono::milliseconds(50)) {
          // (Only times before it: a line read meanwhile is not older.)
          auto shift = [&](Clock::time_point& t) {
            if (t < before) t += blocked;
          };
          for (auto& heard : heard_) {
            if (heard) shift(*heard);  // A rank that ended (max) stays ended.
          }
          if (up) shift(*up);
          shift(started_);
          shift(last_line_);
        }
      }
      if (drain && (rc == 0 || drain->Expired())) break;  // Nothing more to read now.
      if (drain || stop_fd_ < 0) continue;
      const Clock::time_point now = Clock::now();
      auto silent = [&](Clock::time_point since, double limit) {
        return since != Clock::time_point::max() &&
               std::chrono::duration<double>(now - since).count() >= limit;
      };
      if (!up) {
        // A rank prints its first line as it starts (under Open MPI or a
        // PMI launcher, before MPI_Init).
        if (silent(started_, startup_s_)) {
          Stall(
              fmt::format("no rank started within {} s (--startup-timeout): mpirun cannot "
                          "start them, or is stopped",
                          startup_s_));
        }
        continue;
      }
      std::vector<size_t> quiet;  // Running ranks silent for the timeout.
      size_t running = 0;
      for (size_t r = 0; r < heard_.size(); ++r) {
        if (!heard_[r]) {  // Not started yet: it has --startup-timeout.
          ++running;
          if (silent(started_, startup_s_)) {
            Stall(
                fmt::format("rank {} did not start within {} s (--startup-timeout): mpirun "
                            "cannot start it, or it is stopped",
                            r, startup_s_));
            break;
          }
          continue;
        }
        running += *heard_[r] != Clock::time_point::max();
        if (silent(*heard_[r], timeout_s_)) quiet.push_back(r);
      }
      if (stop_fd_ < 0) continue;
      if (quiet.empty()) continue;
      // No line from any rank for a third of the timeout (two alive lines'
      // time) while one is silent: more likely mpirun, which passes their
      // lines on, than every rank at once.
      Stall(running > 1 && silent(last_line_, timeout_s_ / 3)
                ? fmt::format("no rank has been heard from for {:.1f} s, rank {} for {} s "
                              "(--heartbeat-timeout): mpirun, which passes their output on, "
                              "or every rank is stopped, frozen or cut off from the network; "
                              "stopping the run",
                              std::chrono::duration<double>(now - last_line_).count(),
                              quiet.front(), timeout_s_)
                : fmt::format("rank {} has not been heard from for {} s (--heartbeat-timeout): "
                              "it is stopped, frozen or cut off from the network; stopping the "
                              "run",
                              quiet.front(), timeout_s_));
    }
    if (!partial.empty() && forward_) (void)!write(STDOUT_FILENO, partial.data(), partial.size());
  }
  void Stall(std::string why) {
    stalled_ = std::move(why);
    spdlog::error("{}", stalled_);
    close(stop_fd_);
    stop_fd_ = -1;
  }
  void Lines(std::string& partial, std::optional<Clock::time_point>& up) {
    size_t start = 0, end;
    while ((end = partial.find('\n', start)) != std::string::npos) {
      std::string_view line(partial.data() + start, end - start);
      // Anywhere in the line: mpirun's --tag-output and --timestamp-output
      // put a prefix before it.
      const size_t at = line.find(kAliveLine);
      std::string_view rest =
          at == std::string_view::npos ? "" : line.substr(at + kAliveLine.size());
      const bool done = rest.ends_with(" done");  // The rank is ending: no more lines.
      if (done) rest.remove_suffix(5);
      int64_t rank = -1;
      if (ParseInt64(rest, &rank) && rank >= 0 && rank < static_cast<int64_t>(heard_.size())) {
        heard_[static_cast<size_t>(rank)] = done ? Clock::time_point::max() : Clock::now();
        last_line_ = Clock::now();
        if (!up) up = Clock::now();
      } else if (forward_) {
        // A reader that went away (`| head`) must not end the run: the
        // rest is dropped (SIGPIPE is ignored).
        forward_ =
            write(STDOUT_FILENO, partial.data() + start, end - start + 1) >= 0 || errno != EPIPE;
      }
      start = end + 1;
    }
    partial.erase(0, start);
  }

  std::vector<std::optional<Clock::time_point>> heard_;
  Clock::time_point started_ = Clock::now();
  Clock::time_point last_line_ = Clock::now();  // The last alive line of any rank.
  const double timeout_s_, startup_s_;
  int stop_fd_;
  std::string stalled_;
  bool forward_ = true;
  std::mutex mutex_;
  bool done_ = false;
  std::thread thread_;
};

// Prints kAliveLine with the rank every `seconds` until destroyed, then
// the same line ending in " done": the wrapper stops expecting lines from a
// rank that has ended while mpirun ends the others.
class AliveLines {
 public:
  AliveLines(int rank, double seconds) : rank_(rank) {
    if (seconds <= 0) return;
    thread_ = std::thread([this, line = fmt::format("{}{}\n", kAliveLine, rank), seconds] {
      for (;;) {
        (void)!write(STDOUT_FILENO, line.data(), line.size());  // Not under the lock.
        std::unique_lock<std::mutex> lock(mutex_);
        if (wake_.wait_for(lock, std::chrono::duration<double>(seconds), [&] { return done_; })) {
          return;
        }
      }
    });
  }
  ~AliveLines() {
    if (!thread_.joinable()) return;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
    }
    wake_.notify_all();
    thread_.join();
    const std::string line = fmt::format("{}{} done\n", kAliveLine, rank_);
    (void)!write(STDOUT_FILENO, line.data(), line.size());
  }

 private:
  const int rank_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool done_ = false;
  std::thread thread_;
};

// Runs `mpirun -np P ... <rank command>` and returns its exit code; Ctrl-C
// (or SIGTERM; then 128 + the signal), or a rank going silent, stops
// mpirun, which stops the ranks.
int RunMpirun(MpiPartitionFlags f) {
  // Six alive lines per timeout: one late line is no stall.
  f.alive_every_s = f.heartbeat_timeout_s / 6;
  std::vector<std::string> argv = {f.mpirun, "-np", std::to_string(f.ranks)};
  if (::geteuid() == 0) argv.push_back("--allow-run-as-root");  // Containers run as root.
  StatusOr<std::vector<std::string>> placement = PlacementArgs(f);
  if (!placement.ok()) return ReportError(placement.status());
  argv.insert(argv.end(), placement->begin(), placement->end());
  argv.insert(argv.end(), f.mpirun_args.begin(), f.mpirun_args.end());
  for (const std::string& arg : RankCommand(f)) argv.push_back(arg);
  // Open MPI's single-copy shared memory needs ptrace rights containers lack.
  ::setenv("OMPI_MCA_btl_vader_single_copy_mechanism", "none", /*overwrite=*/0);
  // A rank's rank comes from its launcher's variables, never from ones this
  // process inherited (an srun step around it, say).
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"}) ::unsetenv(name);
  spdlog::info("starting {} ranks: {}", f.ranks, StrJoin(argv, " "));
  int output[2], stop[2];
  if (pipe2(output, O_CLOEXEC) != 0) return ReportError(ErrnoError("pipe", errno));
  if (pipe2(stop, O_CLOEXEC) != 0) {
    close(output[0]);
    close(output[1]);
    return ReportError(ErrnoError("pipe", errno));
  }
  SpawnOptions spawn;
  spawn.argv = std::move(argv);
  spawn.grace_seconds = 10;  // mpirun's own teardown of remote ranks.
  // mpirun runs in its own process group: reading a terminal from there
  // would stop it (SIGTTIN), and the ranks read nothing.
  spawn.stdin_null = true;
  spawn.output_fd = output[1];  // The ranks' stdout; errors stay on stderr.
  spawn.output_stdout_only = true;
  signal(SIGPIPE, SIG_IGN);
  StatusOr<Process> mpirun = Process::Spawn(spawn);
  close(output[1]);
  int code = 0;
  std::string stalled;
  if (mpirun.ok()) {
    BlockStopSignals();  // In the watch's thread too: WaitInForeground consumes them.
    RankWatch watch(f.ranks, f.heartbeat_timeout_s, f.startup_timeout_s, output[0], stop[1]);
    int by_signal = 0;
    code = WaitInForeground(*mpirun, stop[0], nullptr, &by_signal);
    stalled = watch.Finish();                    // Once it has passed on the ranks' last lines.
    if (by_signal != 0) code = 128 + by_signal;  // Ctrl-C: 130, as a shell reports it.
  }
  close(output[0]);
  close(stop[0]);
  if (!mpirun.ok()) {
    close(stop[1]);
    return ReportError(Annotate(mpirun.status(), StrCat("cannot run ", f.mpirun)));
  }
  // A stopped rank that mpirun continued may have finished the run before
  // its SIGTERM arrived: then the output is whole (rank 0 writes the config
  // once every rank agrees).
  if (!stalled.empty() && code != 0) return ReportError(absl::DeadlineExceededError(stalled));
  if (!stalled.empty()) spdlog::warn("the run finished while it was being stopped");
  return code;
}

// --fail-at: the hook that fails or kills one rank as a step starts.
StatusOr<std::function<Status(dist_partition::Comm&, std::string_view)>> FaultHook(
    const std::string& spec) {
  if (spec.empty()) return std::function<Status(dist_partition::Comm&, std::string_view)>();
  auto parts = SplitString(spec, ':');
  int64_t rank = -1;
  if (parts.size() < 2 || parts.size() > 3 || !ParseInt64(parts[1], &rank) ||
      (parts.size() == 3 && parts[2] != "kill" && parts[2] != "stop")) {
    return absl::InvalidArgumentError("--fail-at must be <step>:<rank>[:kill|:stop]");
  }
  const std::string step(parts[0]);
  const int signal = parts.size() < 3 ? 0 : parts[2] == "kill" ? SIGKILL : SIGSTOP;
  return std::function<Status(dist_partition::Comm&, std::string_view)>(
      [step, rank, signal](dist_partition::Comm& comm, std::string_view name) -> Status {
        if (name != step || comm.rank() != rank) return absl::OkStatus();
        if (signal != 0) std::raise(signal);  // Stops or kills every thread of the rank.
        // Continued (SIGCONT, as when mpirun stops it): fails, so that the
        // run cannot finish in the moment before SIGTERM arrives.
        return absl::AbortedError(StrCat("failure injected at step ", step));
      });
}

// --stats-json's folder must exist: checked before the run, not after it.
Status CheckStatsFolder(const std::string& path) {
  const std::string folder = std::filesystem::path(path).parent_path();
  if (path.empty() || folder.empty() || IsDirectory(folder)) return absl::OkStatus();
  return absl::InvalidArgumentError(StrCat("--stats-json ", path, ": no folder ", folder));
}

// --stats-json: the steps with every rank's peak RSS, and the parts.
std::string StatsJson(const dist_partition::DistPartitionResult& result) {
  nlohmann::json steps = nlohmann::json::array(), parts = nlohmann::json::array();
  for (const auto& step : result.steps) {
    steps.push_back(
        {{"name", step.name}, {"seconds", step.seconds}, {"peak_rss_bytes", step.peak_rss}});
  }
  for (const PartStats& p : result.parts) {
    parts.push_back({{"inner_nodes", p.inner_nodes},
                     {"halo_nodes", p.halo_nodes},
                     {"inner_edges", p.inner_edges},
                     {"cut_edges", p.cut_edges}});
  }
  return nlohmann::json{{"config", result.config_path},
                        {"edge_cut", result.edge_cut},
                        {"steps", steps},
                        {"parts", parts}}
      .dump(1);
}

int RunRank(const MpiPartitionFlags& f) {
  Stopwatch watch;
  // PT-Scotch's threads make its result vary from run to run; one thread
  // per rank keeps the output a function of the input and options (set the
  // variable to trade that for speed).
  ::setenv("SCOTCH_PTHREAD_NUMBER", "1", /*overwrite=*/0);
  // Alive lines until MPI_Finalize has returned; from before MPI_Init,
  // which waits for every rank, when the launcher says the rank (Open MPI,
  // or a PMI one's): a rank stopped there is then silent beside the others.
  std::optional<AliveLines> alive;
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"}) {
    const char* env_rank = std::getenv(name);
    if (int64_t rank = -1; env_rank != nullptr && ParseInt64(env_rank, &rank)) {
      alive.emplace(static_cast<int>(rank), f.alive_every_s);
      break;
    }
  }
  auto session = dist_partition::MpiSession::Init(nullptr, nullptr, f.piece_mb << 20);
  if (!session.ok()) return ReportError(session.status());
  dist_partition::Comm& comm = (*session)->world();
  if (!alive) alive.emplace(comm.rank(), f.alive_every_s);
  spdlog::set_pattern(
      StrCat("[%H:%M:%S.%e] [rank ", comm.rank(), "/", comm.size(), "] [%^%l%$] %v"));
  if (comm.rank() != 0 && !f.log_all_ranks && spdlog::get_level() < spdlog::level::warn) {
    spdlog::set_level(spdlog::level::warn);
  }
  dist_partition::DistPartitionOptions o = f.options;
  auto method = ParsePartMethod(f.part_method);
  auto hook = FaultHook(f.fail_at);
  Status st = !method.ok() ? method.status() : hook.status();
  if (st.ok() && comm.rank() == 0) st = CheckStatsFolder(f.stats_json);
  st = dist_partition::Agree(comm, st);
  if (st.ok()) {
    o.part_method = *method;
    o.on_step = *hook;
    o.graph_name = f.graph_name;
    auto result = dist_partition::DistPartitionGraph(comm, f.input, f.num_parts, f.out, o);
    st = result.status();
    if (st.ok() && comm.rank() == 0) {
      spdlog::info("wrote {}", result->config_path);
      if (!f.stats_json.empty()) st = WriteFileAtomic(f.stats_json, StatsJson(*result));
      ReportFinish("mpi-partition", watch.Seconds());
    }
  }
  // Every rank has the same error; rank 0 says it. MPI_Finalize (the
  // session's end) waits for the other ranks, so it is said before any exits.
  const int code = st.ok() ? 0 : (comm.rank() == 0 ? ReportError(st) : 1);
  session->reset();
  return code;
}

}  // namespace

Command RegisterMpiPartition(CLI::App& app) {
  auto f = std::make_shared<MpiPartitionFlags>();
  CLI::App* sub = app.add_subcommand(
      "mpi-partition",
      "Partition a chunked graph (tessera chunk) with P MPI ranks, each holding 1/P of it; run "
      "under mpirun, or give --ranks P to start mpirun (docs/distributed-partitioning.md)");
  sub->add_option("--input,-i", f->input, "Chunked graph folder (metadata.json + chunks)")
      ->required();
  sub->add_option("--num-parts,--num_parts", f->num_parts,
                  "Number of partitions: a multiple of the number of ranks")
      ->required();
  sub->add_option("--out,--output,--out-path", f->out, "Output folder")->required();
  sub->add_option("--graph-name,--graph_name", f->graph_name,
                  "Name of the graph (default: metadata.json's graph_name)");
  AddPartitionFlags(sub, &f->options, &f->part_method, "PT-Scotch");
  sub->add_option("--ranks,-n", f->ranks,
                  "Start this many ranks with mpirun (not needed when started by mpirun)")
      ->check(CLI::Range(1, 1 << 16));
  sub->add_option("--hostfile", f->hostfile, "With --ranks: mpirun's hostfile (several machines)");
  sub->add_option("--ip-config,--ip_config", f->ip_config,
                  "With --ranks: run on the machines of this ip_config (as tessera launch), "
                  "--ranks / machines ranks on each");
  sub->add_option("--network", f->network,
                  "With --ranks: the subnet (e.g. 10.0.0.0/24) or interface the ranks talk over");
  sub->add_option("--ssh-port,--ssh_port", f->ssh_port,
                  "With --ranks: ssh port of other machines (default: ssh's own)")
      ->check(CLI::Range(1, 65535));
  sub->add_option("--ssh-username,--ssh_username", f->ssh_username,
                  "With --ranks: ssh user on other machines");
  sub->add_option("--ssh-option", f->ssh_options,
                  "With --ranks: more ssh -o options (e.g. IdentityFile=/path/key), as tessera "
                  "launch's");
  sub->add_option("--mpirun", f->mpirun, "With --ranks: the mpirun program")->capture_default_str();
  sub->add_option("--mpirun-arg", f->mpirun_args, "With --ranks: one more argument for mpirun");
  sub->add_option("--piece-mb", f->piece_mb, "MiB one rank sends another per round of an exchange")
      ->capture_default_str();
  sub->add_flag("--log-all-ranks", f->log_all_ranks, "Log info lines on every rank, not only 0");
  sub->add_option("--stats-json", f->stats_json,
                  "Rank 0 writes the steps' times, every rank's peak RSS and the parts here");
  sub->add_option("--heartbeat-timeout", f->heartbeat_timeout_s,
                  "With --ranks: seconds a rank may go unheard (stopped, frozen, cut off) "
                  "before the run is stopped; each prints an alive line 6 times as often")
      ->capture_default_str()
      ->check(Seconds(3, 86400));
  sub->add_option("--startup-timeout", f->startup_timeout_s,
                  "With --ranks: seconds mpirun has to start the first rank")
      ->capture_default_str()
      ->check(Seconds(1, 86400));
  sub->add_option("--alive-every", f->alive_every_s, "Set by --ranks: seconds between alive lines")
      ->group("")
      ->check(Seconds(0, 86400));
  sub->add_option("--fail-at", f->fail_at,
                  "Tests: <step>:<rank>[:kill|:stop] fails, kills or stops a rank")
      ->group("");
  return {sub, [f] {
            if (f->piece_mb < 1) {
              return ReportError(absl::InvalidArgumentError("--piece-mb must be >= 1"));
            }
            const bool placement = !f->hostfile.empty() || !f->ip_config.empty() ||
                                   !f->network.empty() || f->ssh_port != 0 ||
                                   !f->ssh_username.empty() || !f->ssh_options.empty();
            if (placement && f->ranks <= 0) {
              return ReportError(absl::InvalidArgumentError(
                  "--hostfile, --ip-config, --network and the ssh flags place the ranks that "
                  "--ranks starts: give --ranks, or give mpirun its own options"));
            }
            if (f->ranks > 0 && f->num_parts % f->ranks != 0) {  // Before mpirun starts them.
              return ReportError(absl::InvalidArgumentError(StrCat(
                  "--num-parts ", f->num_parts, " must be a multiple of --ranks ", f->ranks)));
            }
            if (f->ranks > 0 && !dist_partition::LaunchedByMpirun()) {
              if (Status st = CheckStatsFolder(f->stats_json); !st.ok()) return ReportError(st);
              return RunMpirun(*f);
            }
            return RunRank(*f);
          }};
}

}  // namespace tessera::tools
