#include "tools/subprocess.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "spdlog/spdlog.h"
#include "src/base/process.h"
#include "tessera/base/strings.h"

namespace tessera::tools {

StatusOr<ChildResult> RunChild(const std::vector<std::string>& argv, Deadline deadline) {
  Stopwatch watch;
  SpawnOptions spawn;
  spawn.argv = argv;
  spawn.grace_seconds = 0;
  spawn.stdin_null = true;  // Its own group must not read the terminal.
  ASSIGN_OR_RETURN(Process child, Process::Spawn(spawn));
  StatusOr<int> code = child.Wait(deadline);
  if (!code.ok()) {
    child.Signal(SIGKILL);
    (void)child.Wait(Deadline::InSeconds(60));
    return absl::DeadlineExceededError(StrCat(argv[0], " did not finish in time and was killed"));
  }
  ChildResult result;
  result.seconds = watch.Seconds();
  result.peak_rss_bytes = child.peak_rss_bytes();
  result.exit_code = *code;
  return result;
}

void RemoveWhenThisProcessEnds(const std::string& path) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    spdlog::warn("cannot watch {} for removal: {}", path, std::strerror(errno));
    return;
  }
  const char* argv[] = {"rm", "-rf", "--", path.c_str(), nullptr};  // Built before fork.
  const pid_t pid = fork();
  if (pid == 0) {  // Async-signal-safe calls only until exec.
    // Outlive what ends this process: Ctrl-C reaches the whole group, and
    // supervisors kill what a child leaves in its group. It ends itself
    // right after this process.
    setsid();
    signal(SIGINT, SIG_IGN);
    signal(SIGTERM, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    close(fds[1]);
    char byte;
    while (read(fds[0], &byte, 1) < 0 && errno == EINTR) {
    }
    execv("/bin/rm", const_cast<char* const*>(argv));
    _exit(127);
  }
  close(fds[0]);
  if (pid < 0) {
    close(fds[1]);
    spdlog::warn("cannot watch {} for removal: {}", path, std::strerror(errno));
  }
  // fds[1] stays open (close-on-exec) until this process ends.
}

StatusOr<ScratchDir> OpenScratchDir(const std::string& path, const std::string& prefix, bool keep) {
  ASSIGN_OR_RETURN(ScratchDir dir, ScratchDir::Open(path, prefix, keep));
  if (dir.removed_on_exit()) RemoveWhenThisProcessEnds(dir.path());
  return dir;
}

}  // namespace tessera::tools
