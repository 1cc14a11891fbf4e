// File: src/launcher/ip_config.cc
#include "src/launcher/ip_config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <random>
#include <set>

#include "fmt/format.h"
#include "tessera/base/file.h"
#include "tessera/base/strings.h"

namespace tessera::launcher {

std::vector<std::string> IpConfig::ServerEndpoints(int servers_per_machine) const {
  std::vector<std::string> out;
  for (const MachineAddress& m : machines) {
    for (int i = 0; i < servers_per_machine; ++i) {
      out.push_back(fmt::format("tcp://{}:{}", m.ip, m.port + i));
    }
  }
  return out;
}

std::string IpConfig::ToText() const {
  std::string text;
  for (const MachineAddress& m : machines) text += fmt::format("{} {}\n", m.ip, m.port);
  return text;
}

StatusOr<IpConfig> ParseIpConfig(const std::string& text, const std::string& origin) {
  IpConfig config;
  int line_no = 0;
  for (std::string_view raw : SplitString(text, '\n')) {
    ++line_no;
    std::string line(StripWhitespace(raw));
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> fields;
    for (std::string_view f : SplitString(line, ' ')) {
      std::string t(StripWhitespace(f));
      if (!t.empty()) fields.push_back(t);
    }
    if (fields.size() > 2) {
      return absl::InvalidArgumentError(
          fmt::format("{}:{}: expected 'IP [port]', got '{}'", origin, line_no, line));
    }
    MachineAddress m;
    m.ip = fields[0];
    in_addr addr;
    if (inet_pton(AF_INET, m.ip.c_str(), &addr) != 1) {
      return absl::InvalidArgumentError(
          fmt::format("{}:{}: '{}' is not an IPv4 address", origin, line_no, m.ip));
    }
    if (fields.size() == 2) {
      int64_t port = 0;
      if (!ParseInt64(fields[1], &port) || port < 1 || port > 65535) {
        return absl::InvalidArgumentError(
            fmt::format("{}:{}: '{}' is not a port (1-65535)", origin, line_no, fields[1]));
      }
      m.port = static_cast<int>(port);
    }
    config.machines.push_back(m);
  }
  if (config.machines.empty()) {
    return absl::InvalidArgumentError(fmt::format("{}: no machines listed", origin));
  }
  return config;
}

StatusOr<IpConfig> ReadIpConfig(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  return ParseIpConfig(text, path);
}

StatusOr<IpConfig> SelectMachines(const IpConfig& config, std::string_view selection) {
  if (selection.empty()) return config;
  IpConfig out;
  std::set<int64_t> seen;
  for (std::string_view field : SplitString(selection, ',')) {
    int64_t i = 0;
    if (!ParseInt64(StripWhitespace(field), &i) || i < 0 || i >= config.num_machines() ||
        !seen.insert(i).second) {
      return absl::InvalidArgumentError(
          fmt::format("machine selection '{}': '{}' is not a distinct line index below {}",
                      selection, field, config.num_machines()));
    }
    out.machines.push_back(config.machines[static_cast<size_t>(i)]);
  }
  return out;
}

Status CheckNoPortClash(const IpConfig& config, int servers_per_machine) {
  std::set<std::pair<std::string, int>> used;
  for (int m = 0; m < config.num_machines(); ++m) {
    const MachineAddress& a = config.machines[m];
    if (a.port + servers_per_machine - 1 > 65535) {
      return absl::InvalidArgumentError(
          fmt::format("machine {} ({}:{}): {} servers need ports up to {}", m, a.ip, a.port,
                      servers_per_machine, a.port + servers_per_machine - 1));
    }
    for (int i = 0; i < servers_per_machine; ++i) {
      if (!used.insert({a.ip, a.port + i}).second) {
        return absl::InvalidArgumentError(fmt::format(
            "machine {} ({}:{}): port {} is also used by another machine's server; with {} "
            "servers per machine, machines sharing an IP need ports at least {} apart",
            m, a.ip, a.port, a.port + i, servers_per_machine, servers_per_machine));
      }
    }
  }
  return absl::OkStatus();
}

namespace {

// Binds ip:port (port 0 = any); returns the fd and sets *bound.
int BindTcp(const std::string& ip, int port, int* bound) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, ip.c_str(), &addr.sin_addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  *bound = ntohs(addr.sin_port);
  return fd;
}

}  // namespace

std::pair<int, int> EphemeralPortRange() {
  std::ifstream in("/proc/sys/net/ipv4/ip_local_port_range");
  int low = 0, high = 0;
  if (in >> low >> high && 0 < low && low <= high && high <= 65535) return {low, high};
  return {32768, 60999};  // Linux's default.
}

StatusOr<int> ProbeFreePortRange(const std::string& ip, int count) {
  if (count < 1 || count > 1000) {
    return absl::InvalidArgumentError(fmt::format("cannot probe {} consecutive ports", count));
  }
  // Below the ephemeral range, so that no outgoing connection or bind to
  // port 0 (of this job or any other process) takes a port between the
  // probe and the bind of the process it is meant for; random, so that
  // concurrent probes rarely pick the same one.
  const int top = EphemeralPortRange().first;
  const int bottom = std::max(10000, top - 20000);
  std::mt19937 rng(std::random_device{}());
  for (int attempt = 0; attempt < 200 && top - bottom >= count; ++attempt) {
    const int base =
        std::uniform_int_distribution<int>(bottom, top - count)(rng);  // base + count <= top.
    std::vector<int> fds;
    for (int i = 0; i < count; ++i) {
      int got = 0;
      const int fd = BindTcp(ip, base + i, &got);
      if (fd < 0) break;
      fds.push_back(fd);
    }
    const bool ok = static_cast<int>(fds.size()) == count;
    for (int fd : fds) close(fd);
    if (ok) return base;
  }
  // A machine whose ephemeral range leaves no room below it: any free ports.
  for (int attempt = 0; attempt < 50; ++attempt) {
    int base = 0;
    int fd = BindTcp(ip, 0, &base);
    if (fd < 0) return ErrnoError(fmt::format("bind a TCP socket on {}", ip), errno);
    std::vector<int> fds = {fd};
    bool ok = base + count - 1 <= 65535;
    for (int i = 1; ok && i < count; ++i) {
      int got = 0;
      int f = BindTcp(ip, base + i, &got);
      if (f < 0)
        ok = false;
      else
        fds.push_back(f);
    }
    for (int f : fds) close(f);
    if (ok) return base;
  }
  return absl::UnavailableError(fmt::format("found no {} consecutive free ports on {}", count, ip));
}

}  // namespace tessera::launcher
