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
// signal if the child was killed.
#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <memory>

#include "spdlog/spdlog.h"
#include "src/base/time.h"
#include "src/launcher/env_var.h"
#include "src/shm/segment.h"
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
StatusOr<std::vector<std::string>> ReadEnvironment(Deadline deadline) {
  std::vector<std::string> env;
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
    env.push_back(line);
    line.clear();
  }
}

int ExitCodeOf(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

int RunSupervise(const SuperviseFlags& f) {
  // Signals arrive on a descriptor, next to stdin and the child.
  sigset_t mask;
  sigemptyset(&mask);
  for (int s : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&mask, s);
  sigprocmask(SIG_BLOCK, &mask, nullptr);
  signal(SIGPIPE, SIG_IGN);
  int sig_fd = signalfd(-1, &mask, SFD_CLOEXEC);
  auto env = ReadEnvironment(Deadline::InSeconds(60));
  if (!env.ok()) return ReportError(env.status());
  pid_t child = fork();
  if (child < 0) return ReportError(absl::InternalError(std::strerror(errno)));
  if (child == 0) {
    setpgid(0, 0);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    signal(SIGPIPE, SIG_DFL);
    int null_fd = open("/dev/null", O_RDONLY);
    if (null_fd >= 0) dup2(null_fd, STDIN_FILENO);  // The link stays the supervisor's.
    if (!f.cwd.empty() && chdir(f.cwd.c_str()) != 0) {
      std::fprintf(stderr, "supervise: cannot enter %s: %s\n", f.cwd.c_str(), std::strerror(errno));
      _exit(126);
    }
    for (std::string& e : *env) putenv(e.data());
    std::vector<char*> argv;
    for (const std::string& a : f.argv) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    std::fprintf(stderr, "supervise: cannot run %s: %s\n", argv[0], std::strerror(errno));
    _exit(127);
  }
  setpgid(child, child);
  int child_fd = static_cast<int>(syscall(SYS_pidfd_open, child, 0));
  bool stop = false;
  int status = 0;
  bool exited = false;
  while (!exited && !stop) {
    pollfd fds[3] = {{STDIN_FILENO, POLLIN, 0}, {sig_fd, POLLIN, 0}, {child_fd, POLLIN, 0}};
    if (poll(fds, 3, -1) < 0 && errno != EINTR) break;
    if (fds[2].revents) {
      exited = waitpid(child, &status, 0) == child;
    }
    if (fds[1].revents) {
      signalfd_siginfo info;
      (void)!read(sig_fd, &info, sizeof(info));
      stop = true;
    }
    if (fds[0].revents) {
      char buffer[256];
      ssize_t n = read(STDIN_FILENO, buffer, sizeof(buffer));
      if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) stop = true;
    }
  }
  if (!exited) {
    kill(-child, SIGTERM);
    pollfd fd{child_fd, POLLIN, 0};
    if (poll(&fd, 1, static_cast<int>(f.grace_s * 1000)) <= 0) kill(-child, SIGKILL);
    waitpid(child, &status, 0);
  }
  kill(-child, SIGKILL);  // Anything the child left in its group.
  if (stop && !f.cleanup_job.empty()) {
    StatusOr<int> removed = shm::RemoveJobSegments(f.cleanup_job);
    if (removed.ok() && *removed > 0) {
      spdlog::info("supervise: removed {} shared-memory segments of job {}", *removed,
                   f.cleanup_job);
    }
  }
  return ExitCodeOf(status);
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
      ->check(CLI::NonNegativeNumber);
  sub->add_option("argv", f->argv, "The program and its arguments (after --)")->required();
  return {sub, [f] { return RunSupervise(*f); }};
}

}  // namespace tessera::tools
