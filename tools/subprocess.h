// File: tools/subprocess.h
//
// RunChild: runs a program to completion with a deadline and reports its exit
// status, wall time and peak RSS (the benchmarks use it to measure one
// configuration per process). The child (Process: stdin
// /dev/null, its own process group) is killed with SIGKILL if the deadline
// passes, and stopped with SIGTERM if this process dies first.
#ifndef TESSERA_TOOLS_SUBPROCESS_H_
#define TESSERA_TOOLS_SUBPROCESS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "tessera/base/file.h"
#include "tessera/base/status.h"
#include "tessera/base/time.h"

namespace tessera::tools {

struct ChildResult {
  int exit_code = -1;  // -signal if killed by a signal.
  double seconds = 0;
  int64_t peak_rss_bytes = 0;
};

// argv[0] is the program (looked up in PATH). Output goes to this process's stdout/stderr.
// DeadlineExceeded if the child had to be killed.
StatusOr<ChildResult> RunChild(const std::vector<std::string>& argv, Deadline deadline);

// Removes the folder `path` once this process has ended, however it ends
// (Ctrl-C, SIGTERM, SIGKILL, a crash): a child blocked on a pipe whose write
// end only this process holds runs `rm -rf` when it reads end-of-file. For
// scratch folders a signal would leak. Call it before threads or sockets
// exist: the child holds what is open until then.
void RemoveWhenThisProcessEnds(const std::string& path);

// ScratchDir::Open, and a folder it removes is also removed if a signal ends
// this process first (RemoveWhenThisProcessEnds).
StatusOr<ScratchDir> OpenScratchDir(const std::string& path, const std::string& prefix,
                                    bool keep = false);

}  // namespace tessera::tools

#endif  // TESSERA_TOOLS_SUBPROCESS_H_
