// File: src/base/process.h
//
// Process: the move-only owner of a child process, and the project's one way
// to start one (the launchers, `tessera supervise`, the benchmarks' runs,
// mpi-partition's mpirun, and METIS, which runs in a forked child). The
// child leads its own process group and dies with its parent
// (PR_SET_PDEATHSIG). Signals go to the whole group; when the child exits,
// whatever it left in its group is killed before the child is reaped (so the
// group id cannot have been reused). A Process destroyed while its child
// still runs stops it (SIGTERM, then SIGKILL after a grace period) and reaps
// it, so no code path leaves an orphan or a zombie. Waits have deadlines and
// use a pidfd (a 10 ms poll only on kernels without one).
#ifndef TESSERA_SRC_BASE_PROCESS_H_
#define TESSERA_SRC_BASE_PROCESS_H_

#include <signal.h>
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "tessera/base/status.h"
#include "tessera/base/time.h"

namespace tessera {

struct SpawnOptions {
  // argv[0]: the program, looked up in PATH (env's PATH when it sets one)
  // unless it contains a slash.
  std::vector<std::string> argv;
  std::vector<std::pair<std::string, std::string>> env;  // Added to this process's.
  std::string log_path;     // Where stdout and stderr go; empty: inherited.
  int inherit_fd = -1;      // One extra descriptor the child keeps open.
  int stdin_fd = -1;        // The child's stdin (default: inherited).
  bool stdin_null = false;  // stdin is /dev/null (overrides stdin_fd).
  int output_fd = -1;       // The child's stdout and stderr (overrides log_path).
  // output_fd is its stdout only, and its stderr is error_fd (if given;
  // else inherited). error_fd is used only with output_stdout_only.
  bool output_stdout_only = false;
  int error_fd = -1;
  std::string cwd;           // Directory to run in; empty: this one.
  double grace_seconds = 5;  // SIGTERM -> SIGKILL delay when stopping.
};

class Process {
 public:
  Process() = default;
  static StatusOr<Process> Spawn(const SpawnOptions& options);
  // Runs `body` in a copy of this process (fork, no exec), which exits with
  // body's return value (125 if it throws) through _exit (no destructors,
  // atexit handlers or stdio flushes). The child dies with SIGKILL when its parent dies, starts
  // with no signal blocked and SIGINT, SIGTERM, SIGHUP and SIGPIPE at their
  // defaults. After fork in a multi-threaded program `body` may allocate
  // (glibc makes malloc safe in the child), compute, and write memory shared
  // with the parent (a MAP_SHARED mapping made before); it must not take
  // locks other threads may hold (logging) or start threads.
  static StatusOr<Process> Fork(const std::function<int()>& body, std::string name,
                                double grace_seconds);
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
  // Peak resident set of the child (and its reaped descendants); once finished().
  int64_t peak_rss_bytes() const { return peak_rss_bytes_; }

  // Sends `signal` to the child's process group.
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
  int64_t peak_rss_bytes_ = 0;
  double grace_seconds_ = 5;
  std::string name_;
};

// The path of `name` found in `search_path` (default: this process's $PATH),
// or `name` itself if it has a '/'; NotFound naming it otherwise.
StatusOr<std::string> FindProgram(const std::string& name,
                                  const std::string* search_path = nullptr);

// Calls `handler` on each of `signals` (sigaction, no flags, nothing masked).
void HandleSignals(void (*handler)(int), std::initializer_list<int> signals);

// Blocks SIGINT, SIGTERM and SIGHUP in the calling thread (so they wait
// for WaitInForeground instead of killing the process); returns the mask
// before.
sigset_t BlockStopSignals();

// Waits for `child` to exit while this process runs in the foreground: a
// SIGINT, SIGTERM or SIGHUP to this process, or EOF (or an error) on
// `link_fd` when it is >= 0 (data read from it is discarded), stops the
// child (Process::Stop). Those signals are blocked while it waits and the
// one that arrived is consumed. Returns the exit code in the shell's form
// (128 + signal when the child was killed); *stopped says whether it was
// stopped, *by_signal (if given) by which signal (0: by link_fd). The
// mask is per thread: call it from a single-threaded program, or block
// those signals in every thread first (the supervisor and mpi-partition's
// wrapper, whose threads start after BlockStopSignals).
int WaitInForeground(Process& child, int link_fd, bool* stopped, int* by_signal = nullptr);

// Makes this process the reaper of its descendants' orphans, such as a
// daemon a child started with setsid, which stopping the child's process
// group misses; StopOrphans then stops them. (Best effort: without it,
// prctl failing, orphans go to init as before.)
void BecomeSubreaper();
// Stops the children this process has adopted (or still has): SIGTERM and
// SIGCONT, then SIGKILL after `grace_s`, and those their deaths orphan in
// turn; reaps them all. Returns how many were not in `stopped_group` (the
// group just stopped, whose members may still be dying). Call it when no
// child of this process is still wanted (it reaps any).
int StopOrphans(double grace_s, pid_t stopped_group);

}  // namespace tessera

#endif  // TESSERA_SRC_BASE_PROCESS_H_
