// File: src/base/process.cc
#include "src/base/process.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "fmt/format.h"

extern char** environ;

namespace tessera {
namespace {

// First steps of a child of `parent`: it dies with `death_signal` when its
// parent dies (and at once if the parent died before this call) and leads
// its own process group, so that a terminal's Ctrl-C reaches the parent only.
void EnterChild(pid_t parent, int death_signal) {
  prctl(PR_SET_PDEATHSIG, death_signal);
  if (getppid() != parent) _exit(127);
  setpgid(0, 0);
}

// Nothing blocked, and the stop signals at their defaults (the parent may
// block or handle them: Python handles SIGINT, servers block them).
void ResetSignals() {
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  for (int s : {SIGPIPE, SIGINT, SIGTERM, SIGHUP}) signal(s, SIG_DFL);
}

}  // namespace

StatusOr<std::string> FindProgram(const std::string& name, const std::string* search_path) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = search_path != nullptr ? search_path->c_str() : std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t begin = 0;
  while (begin <= dirs.size()) {
    size_t end = dirs.find(':', begin);
    if (end == std::string::npos) end = dirs.size();
    std::string candidate = dirs.substr(begin, end - begin) + "/" + name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
    begin = end + 1;
  }
  return absl::NotFoundError(fmt::format("'{}' is not installed (not found in PATH)", name));
}

StatusOr<Process> Process::Spawn(const SpawnOptions& options) {
  if (options.argv.empty()) return absl::InvalidArgumentError("empty command");
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string entry(*e);
    std::string key = entry.substr(0, entry.find('='));
    bool overridden = false;
    for (const auto& [k, v] : options.env) overridden |= k == key;
    if (!overridden) env_strings.push_back(std::move(entry));
  }
  for (const auto& [k, v] : options.env) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp, argv;
  for (std::string& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = options.argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  // The program is looked up in the PATH the child will have.
  const std::string* search_path = nullptr;
  for (const auto& [k, v] : options.env) {
    if (k == "PATH") search_path = &v;
  }
  ASSIGN_OR_RETURN(const std::string program, FindProgram(options.argv[0], search_path));

  int log_fd = -1;
  if (!options.log_path.empty()) {
    log_fd = open(options.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (log_fd < 0) return ErrnoError(fmt::format("open log file {}", options.log_path), errno);
  }
  int stdin_fd = options.stdin_fd;
  if (options.stdin_null) {
    stdin_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (stdin_fd < 0) {
      int e = errno;
      if (log_fd >= 0) close(log_fd);
      return ErrnoError("open /dev/null", e);
    }
  }
  auto close_fds = [&] {
    if (log_fd >= 0) close(log_fd);
    if (options.stdin_null) close(stdin_fd);
  };
  // Reports exec failures to the parent through a close-on-exec pipe.
  int err_pipe[2];
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    int e = errno;
    close_fds();
    return ErrnoError("pipe", e);
  }
  const pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    int e = errno;
    close(err_pipe[0]);
    close(err_pipe[1]);
    close_fds();
    return ErrnoError("fork", e);
  }
  if (pid == 0) {
    EnterChild(parent, SIGTERM);
    if (options.output_fd >= 0) {
      dup2(options.output_fd, STDOUT_FILENO);
      if (!options.output_stdout_only) {
        dup2(options.output_fd, STDERR_FILENO);
      } else if (options.error_fd >= 0) {
        dup2(options.error_fd, STDERR_FILENO);
      }
    } else if (log_fd >= 0) {
      dup2(log_fd, STDOUT_FILENO);
      dup2(log_fd, STDERR_FILENO);
    }
    if (stdin_fd >= 0) dup2(stdin_fd, STDIN_FILENO);
    if (options.inherit_fd >= 0) fcntl(options.inherit_fd, F_SETFD, 0);
    if (!options.cwd.empty() && chdir(options.cwd.c_str()) != 0) {
      int e = -errno;  // Negative: entering cwd failed, not exec.
      (void)!write(err_pipe[1], &e, sizeof(e));
      _exit(126);
    }
    ResetSignals();
    execve(program.c_str(), argv.data(), envp.data());
    int e = errno;
    (void)!write(err_pipe[1], &e, sizeof(e));
    _exit(127);
  }
  setpgid(pid, pid);  // Also here, so that Signal() reaches the group at once.
  close(err_pipe[1]);
  close_fds();
  int exec_errno = 0;
  ssize_t n;
  do {
    n = read(err_pipe[0], &exec_errno, sizeof(exec_errno));
  } while (n < 0 && errno == EINTR);
  close(err_pipe[0]);
  Process p;
  p.pid_ = pid;
  p.name_ = options.argv[0];
  p.grace_seconds_ = options.grace_seconds;
  if (n == sizeof(exec_errno)) {
    waitpid(pid, nullptr, 0);
    p.pid_ = -1;
    if (exec_errno < 0) {
      return absl::FailedPreconditionError(fmt::format("cannot enter {} to run {}: {}", options.cwd,
                                                       options.argv[0],
                                                       std::strerror(-exec_errno)));
    }
    return ErrnoError(fmt::format("run {}", options.argv[0]), exec_errno);
  }
  p.pidfd_ = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  return p;
}

StatusOr<Process> Process::Fork(const std::function<int()>& body, std::string name,
                                double grace_seconds) {
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) return ErrnoError(fmt::format("fork a process for {}", name), errno);
  if (pid == 0) {
    EnterChild(parent, SIGKILL);  // Nothing of the child's outlives its parent.
    ResetSignals();
    int code = 125;  // An exception must not unwind into the parent's code.
    try {
      code = body();
    } catch (...) {
    }
    _exit(code);
  }
  setpgid(pid, pid);
  Process p;
  p.pid_ = pid;
  p.name_ = std::move(name);
  p.grace_seconds_ = grace_seconds;
  p.pidfd_ = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  return p;
}

Process::Process(Process&& other) noexcept { *this = std::move(other); }

Process& Process::operator=(Process&& other) noexcept {
  if (this != &other) {
    Reset();
    pid_ = std::exchange(other.pid_, -1);
    pidfd_ = std::exchange(other.pidfd_, -1);
    finished_ = other.finished_;
    exit_code_ = other.exit_code_;
    peak_rss_bytes_ = other.peak_rss_bytes_;
    grace_seconds_ = other.grace_seconds_;
    name_ = std::move(other.name_);
  }
  return *this;
}

Process::~Process() { Reset(); }

void Process::Reset() {
  if (pid_ > 0 && !finished_) Stop();
  if (pidfd_ >= 0) close(pidfd_);
  pid_ = -1;
  pidfd_ = -1;
}

void Process::Signal(int signal) const {
  if (pid_ > 0 && !finished_ && kill(-pid_, signal) != 0) kill(pid_, signal);
}

bool Process::Poll() {
  if (finished_ || pid_ <= 0) return true;
  siginfo_t info{};
  if (waitid(P_PID, pid_, &info, WEXITED | WNOHANG | WNOWAIT) != 0) {
    if (errno != ECHILD) return false;
    finished_ = true;  // Reaped elsewhere (a subreaper's sweep): not a success, no signal.
    exit_code_ = -SIGKILL;
    return true;
  }
  if (info.si_pid != pid_) return false;
  // Exited but not reaped: its pid (and so its group id) is still ours.
  kill(-pid_, SIGKILL);
  int status = 0;
  struct rusage usage {};
  pid_t r;
  do {
    r = wait4(pid_, &status, 0, &usage);
  } while (r < 0 && errno == EINTR);
  finished_ = true;
  if (r != pid_) {
    exit_code_ = -SIGKILL;  // Reaped elsewhere: its status is unknown, never success.
    return true;
  }
  exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
  peak_rss_bytes_ = static_cast<int64_t>(usage.ru_maxrss) * 1024;
  return true;
}

StatusOr<int> Process::Wait(Deadline deadline) {
  while (!Poll()) {
    if (deadline.Expired()) {
      return absl::DeadlineExceededError(fmt::format("{} (pid {}) is still running", name_, pid_));
    }
    if (pidfd_ >= 0) {
      struct pollfd pfd = {pidfd_, POLLIN, 0};
      poll(&pfd, 1, std::min(deadline.RemainingMillis(), 1000));
    } else {
      usleep(10000);  // Kernels without pidfd (< 5.3).
    }
  }
  return exit_code_;
}

int Process::Stop() {
  if (Poll()) return exit_code_;
  Signal(SIGTERM);
  Signal(SIGCONT);  // A stopped process acts on SIGTERM only once continued.
  if (!Wait(Deadline::InSeconds(grace_seconds_)).ok()) {
    Signal(SIGKILL);
    (void)Wait(Deadline::InSeconds(60));
  }
  // Not reaped a minute after SIGKILL (stuck in the kernel): killed, not a success.
  return finished_ ? exit_code_ : -SIGKILL;
}

namespace {

sigset_t StopSignals() {
  sigset_t mask;
  sigemptyset(&mask);
  for (int s : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&mask, s);
  return mask;
}

}  // namespace

void HandleSignals(void (*handler)(int), std::initializer_list<int> signals) {
  struct sigaction action {};
  action.sa_handler = handler;
  sigemptyset(&action.sa_mask);
  for (int s : signals) sigaction(s, &action, nullptr);
}

sigset_t BlockStopSignals() {
  const sigset_t mask = StopSignals();
  sigset_t old;
  sigprocmask(SIG_BLOCK, &mask, &old);
  return old;
}

int WaitInForeground(Process& child, int link_fd, bool* stopped, int* by_signal) {
  int received = 0;
  const sigset_t mask = StopSignals();
  const sigset_t old = BlockStopSignals();
  int sig_fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
  bool stop = false;
  while (!child.Poll() && !stop) {
    pollfd fds[3] = {{child.exit_fd(), POLLIN, 0}, {sig_fd, POLLIN, 0}, {link_fd, POLLIN, 0}};
    if (poll(fds, link_fd >= 0 ? 3 : 2, child.exit_fd() >= 0 ? -1 : 100) < 0 && errno != EINTR) {
      break;
    }
    if (fds[1].revents) {
      signalfd_siginfo info;
      if (read(sig_fd, &info, sizeof(info)) == static_cast<ssize_t>(sizeof(info))) {
        received = static_cast<int>(info.ssi_signo);
      }
      stop = true;
    }
    if (link_fd >= 0 && fds[2].revents) {
      char buffer[256];
      ssize_t n = read(link_fd, buffer, sizeof(buffer));
      if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) stop = true;
    }
  }
  int code = child.Stop();
  if (sig_fd >= 0) {
    // Signals that came during the stop are consumed too (a second Ctrl-C
    // must not kill this process once the mask is restored).
    signalfd_siginfo info;
    while (read(sig_fd, &info, sizeof(info)) == static_cast<ssize_t>(sizeof(info))) stop = true;
    close(sig_fd);
  }
  sigprocmask(SIG_SETMASK, &old, nullptr);
  if (stopped != nullptr) *stopped = stop;
  if (by_signal != nullptr) *by_signal = received;
  return code >= 0 ? code : 128 - code;
}

void BecomeSubreaper() { prctl(PR_SET_CHILD_SUBREAPER, 1); }

namespace {

struct ChildProcess {
  pid_t pid;
  pid_t group;
  bool zombie;
};

// This process's children, from /proc/<pid>/stat ("pid (comm) state ppid
// pgrp ...", comm may hold spaces and parentheses).
std::vector<ChildProcess> Children() {
  std::vector<ChildProcess> children;
  const pid_t self = getpid();
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return children;
  while (dirent* entry = readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(entry->d_name, &end, 10);
    if (pid <= 0 || *end != '\0') continue;
    char path[64], text[512];
    std::snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
    const int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    const ssize_t n = read(fd, text, sizeof(text) - 1);
    close(fd);
    if (n <= 0) continue;
    text[n] = '\0';
    const char* close_paren = std::strrchr(text, ')');
    char state = 0;
    int ppid = 0, group = 0;
    if (close_paren != nullptr &&
        std::sscanf(close_paren + 1, " %c %d %d", &state, &ppid, &group) == 3 && ppid == self) {
      children.push_back(
          {static_cast<pid_t>(pid), static_cast<pid_t>(group), state == 'Z' || state == 'X'});
    }
  }
  closedir(proc);
  return children;
}

void ReapAny() {
  while (waitpid(-1, nullptr, WNOHANG) > 0) {
  }
}

}  // namespace

int StopOrphans(double grace_s, pid_t stopped_group) {
  std::vector<pid_t> signalled;
  int counted = 0;
  const Deadline kill_at = Deadline::InSeconds(grace_s);
  for (Deadline give_up = Deadline::InSeconds(grace_s + 10); !give_up.Expired();) {
    ReapAny();
    std::vector<ChildProcess> children = Children();
    if (children.empty()) break;
    for (const ChildProcess& child : children) {
      if (child.zombie ||
          std::find(signalled.begin(), signalled.end(), child.pid) != signalled.end()) {
        continue;
      }
      signalled.push_back(child.pid);
      counted += child.group != stopped_group;
      kill(child.pid, SIGTERM);
      kill(child.pid, SIGCONT);  // A stopped one acts on SIGTERM only once continued.
    }
    if (kill_at.Expired()) {
      for (const ChildProcess& child : children) kill(child.pid, SIGKILL);
    }
    usleep(20000);
  }
  ReapAny();
  return counted;
}

}  // namespace tessera
