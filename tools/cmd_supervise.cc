// `tessera supervise`: the launcher's agent on every machine. It wraps one
// process of a job (a server, or a trainer's shell command):
//
//   tessera supervise [--cwd DIR] [--cleanup-job JOB] [--grace S] -- PROGRAM ARGS...
//
// Its stdin is the link to the launcher (a pipe locally, the ssh channel
// remotely). It first reads the child's environment from it, "KEY=VALUE"
// lines up to an empty line (so secrets such as the job token never appear
// in a command line). It then runs the child in its own process group and
// watches stdin. EOF means the launcher stopped the job, died, or lost its
// ssh connection. EOF, SIGTERM, SIGINT or SIGHUP stop the child's whole
// group: SIGTERM, then SIGKILL after the grace period. The job's shared
// memory on this machine is then removed (--cleanup-job), so no process or
// segment outlives the launcher. It exits with the child's code, 128 +
// signal if the child was killed. Processes the child leaves (a daemon in a
// session of its own) are stopped too: this process adopts them.
#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <memory>
#include <thread>

#include "spdlog/spdlog.h"
#include "src/base/process.h"
#include "src/launcher/env_var.h"
#include "src/shm/segment.h"
#include "tessera/base/time.h"
#include "tools/commands.h"

namespace tessera::tools {
namespace {

struct SuperviseFlags {
  std::string cwd, cleanup_job;
  double grace_s = 5;
  std::vector<std::string> argv;
};

// Reads "KEY=VALUE" lines from fd 0 up to an empty line; keys must be
// variable names and values free of NUL (src/launcher/env_var.h).
using EnvVars = std::vector<std::pair<std::string, std::string>>;
StatusOr<EnvVars> ReadEnvironment(Deadline deadline) {
  EnvVars env;
  std::string line;
  char c;
  while (true) {
    pollfd fd{STDIN_FILENO, POLLIN, 0};
    int n = poll(&fd, 1, std::max(0, deadline.RemainingMillis()));
    if (n == 0) return absl::DeadlineExceededError("no environment from the launcher on stdin");
    ssize_t r = read(STDIN_FILENO, &c, 1);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return absl::CancelledError("the launcher went away before starting the process");
    if (c != '\n') {
      line.push_back(c);
      continue;
    }
    if (line.empty()) return env;
    StatusOr<std::pair<std::string, std::string>> var = launcher::ParseEnvAssignment(line);
    if (!var.ok()) return Annotate(var.status(), "environment from the launcher");
    env.push_back(*std::move(var));
    line.clear();
  }
}

int RunSupervise(const SuperviseFlags& f) {
  signal(SIGPIPE, SIG_IGN);
  // Until WaitInForeground watches them, a stop signal must not kill this
  // process before it can stop the child's group.
  BlockStopSignals();
  auto env = ReadEnvironment(Deadline::InSeconds(60));
  if (!env.ok()) return ReportError(env.status());
  SpawnOptions spawn;
  spawn.argv = f.argv;
  spawn.cwd = f.cwd;
  spawn.grace_seconds = f.grace_s;
  spawn.env = *std::move(env);
  spawn.stdin_null = true;  // The link stays the supervisor's.
  BecomeSubreaper();        // What the child starts in a session of its own is ours to stop.
  StatusOr<Process> child = Process::Spawn(spawn);
  if (!child.ok()) {
    ReportError(child.status());
    // The shell's codes: 126 when the directory cannot be entered, 127 when
    // the program cannot be run.
    return child.status().code() == absl::StatusCode::kFailedPrecondition ? 126 : 127;
  }
  // Orphans it adopts that exit while the child runs are reaped as they
  // go (a thread: WaitInForeground waits on the child alone). It stops at
  // the child's exit, which the main thread reaps.
  std::thread([child_pid = child->pid()] {
    for (siginfo_t info{}; waitid(P_ALL, 0, &info, WEXITED | WNOWAIT) == 0; info = {}) {
      if (info.si_pid == child_pid) return;
      waitpid(info.si_pid, nullptr, 0);
    }
  }).detach();
  bool stop = false;
  int code = WaitInForeground(*child, STDIN_FILENO, &stop);
  if (int orphans = StopOrphans(f.grace_s, child->pid()); orphans > 0) {
    spdlog::warn("supervise: stopped {} process(es) the job's process left running", orphans);
  }
  if (stop && !f.cleanup_job.empty()) {
    StatusOr<int> removed = shm::RemoveJobSegments(f.cleanup_job);
    if (removed.ok() && *removed > 0) {
      spdlog::info("supervise: removed {} shared-memory segments of job {}", *removed,
                   f.cleanup_job);
    }
  }
  return code;
}

}  // namespace

Command RegisterSupervise(CLI::App& app) {
  auto f = std::make_shared<SuperviseFlags>();
  CLI::App* sub = app.add_subcommand(
      "supervise",
      "Run one process of a job for the launcher (environment on stdin; EOF stops it)");
  sub->add_option("--cwd", f->cwd, "Directory to run in");
  sub->add_option("--cleanup-job", f->cleanup_job,
                  "Remove this job's shared memory on this machine when stopped");
  sub->add_option("--grace", f->grace_s, "Seconds between SIGTERM and SIGKILL")
      ->capture_default_str()
      ->check(Seconds(0, 3600));
  sub->add_option("argv", f->argv, "The program and its arguments (after --)")->required();
  return {sub, [f] { return RunSupervise(*f); }};
}

}  // namespace tessera::tools
