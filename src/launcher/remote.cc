// File: src/launcher/remote.cc
#include "src/launcher/remote.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>

#include "fmt/format.h"

namespace tessera::launcher {

bool IsLocalAddress(const std::string& address) {
  if (address == "localhost" || address == "::1") return true;
  in_addr v4{};
  if (inet_pton(AF_INET, address.c_str(), &v4) == 1 && (ntohl(v4.s_addr) >> 24) == 127) {
    return true;
  }
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return false;
  bool found = false;
  for (ifaddrs* a = list; a != nullptr && !found; a = a->ifa_next) {
    if (a->ifa_addr == nullptr) continue;
    char text[INET6_ADDRSTRLEN] = {};
    if (a->ifa_addr->sa_family == AF_INET) {
      inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr, text,
                sizeof(text));
    } else if (a->ifa_addr->sa_family == AF_INET6) {
      inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(a->ifa_addr)->sin6_addr, text,
                sizeof(text));
    }
    found = address == text;
  }
  freeifaddrs(list);
  return found;
}

std::string ShellQuote(const std::string& text) {
  if (!text.empty() && text.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                              "0123456789_-./=:,+@%") == std::string::npos) {
    return text;
  }
  std::string quoted = "'";
  for (char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

std::string ShellCommand(const std::vector<std::string>& argv) {
  std::string command;
  for (const std::string& a : argv) command += (command.empty() ? "" : " ") + ShellQuote(a);
  return command;
}

std::vector<std::string> SshArgv(const SshOptions& options, const std::string& host,
                                 const std::string& remote_command) {
  std::vector<std::string> argv = {
      options.ssh, "-T",
      "-o",        "BatchMode=yes",
      "-o",        fmt::format("ConnectTimeout={}", options.connect_timeout_s),
      "-o",        "ServerAliveInterval=5",
      "-o",        "ServerAliveCountMax=3",
      "-p",        std::to_string(options.port)};
  for (const std::string& o : options.extra) argv.insert(argv.end(), {"-o", o});
  if (!options.user.empty()) argv.insert(argv.end(), {"-l", options.user});
  argv.insert(argv.end(), {host, remote_command});
  return argv;
}

}  // namespace tessera::launcher
