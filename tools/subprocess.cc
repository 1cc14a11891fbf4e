#include "tools/subprocess.h"

#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "src/base/strings.h"

namespace tessera::tools {

StatusOr<ChildResult> RunChild(const std::vector<std::string>& argv, Deadline deadline) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  Stopwatch watch;
  const pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) return ErrnoError("fork", errno);
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);  // The parent died before prctl.
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  bool killed = false;
  if (pidfd >= 0) {
    struct pollfd pfd = {pidfd, POLLIN, 0};
    while (true) {
      int rc = ::poll(&pfd, 1, deadline.RemainingMillis());
      if (rc > 0) break;
      if (rc < 0 && errno == EINTR) continue;
      ::kill(pid, SIGKILL);  // Deadline passed (or poll failed).
      killed = true;
      break;
    }
    ::close(pidfd);
  }
  int status = 0;
  struct rusage usage {};
  while (::wait4(pid, &status, 0, &usage) < 0) {
    if (errno != EINTR) return ErrnoError("wait4", errno);
  }
  ChildResult result;
  result.seconds = watch.Seconds();
  result.peak_rss_bytes = static_cast<int64_t>(usage.ru_maxrss) * 1024;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
  if (killed) {
    return absl::DeadlineExceededError(StrCat(argv[0], " did not finish in time and was killed"));
  }
  return result;
}

}  // namespace tessera::tools
