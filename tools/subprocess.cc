#include "tools/subprocess.h"

#include <signal.h>

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

}  // namespace tessera::tools
