// File: src/launcher/process.h
//
// Process: the move-only owner of a child process. The child dies with its
// parent (PR_SET_PDEATHSIG), and a Process that is destroyed while its child
// still runs stops it (SIGTERM, then SIGKILL after a grace period) and reaps
// it, so no code path leaves an orphan or a zombie. Waits have deadlines and
// use a pidfd (no polling loops).
#ifndef TESSERA_SRC_LAUNCHER_PROCESS_H_
#define TESSERA_SRC_LAUNCHER_PROCESS_H_

#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

#include "src/base/status.h"
#include "src/base/time.h"

namespace tessera::launcher {

struct SpawnOptions {
  std::vector<std::string> argv;                         // argv[0]: path of the program.
  std::vector<std::pair<std::string, std::string>> env;  // Added to this process's.
  std::string log_path;      // Where stdout and stderr go; empty: inherited.
  int inherit_fd = -1;       // One extra descriptor the child keeps open.
  int stdin_fd = -1;         // The child's stdin (default: inherited).
  int output_fd = -1;        // The child's stdout and stderr (overrides log_path).
  double grace_seconds = 5;  // SIGTERM -> SIGKILL delay when stopping.
};

class Process {
 public:
  Process() = default;
  static StatusOr<Process> Spawn(const SpawnOptions& options);
  Process(Process&& other) noexcept;
  Process& operator=(Process&& other) noexcept;
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;
  ~Process();

  pid_t pid() const { return pid_; }
  const std::string& name() const { return name_; }
  // A descriptor that becomes readable when the child exits (-1 if none).
  int exit_fd() const { return pidfd_; }
  bool finished() const { return finished_; }
  // Exit code, or -signal; only meaningful once finished().
  int exit_code() const { return exit_code_; }

  void Signal(int signal) const;
  // Waits for the child to exit; DeadlineExceeded if it has not by then.
  StatusOr<int> Wait(Deadline deadline);
  // Reaps the child if it has exited; never blocks. True once finished.
  bool Poll();
  // SIGTERM, wait up to the grace period, then SIGKILL; reaps.
  int Stop();

 private:
  void Reset();
  pid_t pid_ = -1;
  int pidfd_ = -1;
  bool finished_ = false;
  int exit_code_ = 0;
  double grace_seconds_ = 5;
  std::string name_;
};

}  // namespace tessera::launcher

#endif  // TESSERA_SRC_LAUNCHER_PROCESS_H_
