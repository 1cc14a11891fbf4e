// File: src/launcher/remote.h
//
// Where the processes of a launched job run: machines whose address is this
// host's are started directly, the others over OpenSSH (non-interactive:
// BatchMode, no password prompt, connection and keep-alive timeouts).
#ifndef TESSERA_SRC_LAUNCHER_REMOTE_H_
#define TESSERA_SRC_LAUNCHER_REMOTE_H_

#include <string>
#include <vector>

#include "tessera/base/status.h"

namespace tessera::launcher {

// True for 127.0.0.0/8, ::1, "localhost" and any address of this host's
// interfaces.
bool IsLocalAddress(const std::string& address);

// `text` quoted for a POSIX shell.
std::string ShellQuote(const std::string& text);
// argv quoted and joined for a POSIX shell.
std::string ShellCommand(const std::vector<std::string>& argv);

struct SshOptions {
  std::string ssh = "ssh";  // Program (resolved with tessera::FindProgram).
  int port = 22;
  std::string user;                // Empty: ssh's default.
  std::vector<std::string> extra;  // More `-o Key=Value` options.
  int connect_timeout_s = 10;
};

// The ssh command line that runs `remote_command` (a shell command) on
// `host`: no prompts, no pseudo-terminal, keep-alives that notice a dead
// peer within about 15 s.
std::vector<std::string> SshArgv(const SshOptions& options, const std::string& host,
                                 const std::string& remote_command);

}  // namespace tessera::launcher

#endif  // TESSERA_SRC_LAUNCHER_REMOTE_H_
