// File: src/launcher/ip_config.h
//
// ip_config, as in DGL: one line per machine, "IP [port]" (default port
// 30050); machine i serves partition i, and its S servers listen on ports
// port, port+1, ..., port+S-1. Several machines may share one IP with
// distinct ports (how tests and single-host runs work). Blank lines and
// lines starting with '#' are ignored.
#ifndef TESSERA_SRC_LAUNCHER_IP_CONFIG_H_
#define TESSERA_SRC_LAUNCHER_IP_CONFIG_H_

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tessera/base/status.h"

namespace tessera::launcher {

inline constexpr int kDefaultPort = 30050;

struct MachineAddress {
  std::string ip;
  int port = kDefaultPort;
};

struct IpConfig {
  std::vector<MachineAddress> machines;

  int num_machines() const { return static_cast<int>(machines.size()); }
  // "tcp://ip:port" of every server, in server-id order (machine * S + i).
  std::vector<std::string> ServerEndpoints(int servers_per_machine) const;
  std::string ToText() const;
};

// Parses the text of an ip_config; errors name `origin` and the line.
StatusOr<IpConfig> ParseIpConfig(const std::string& text, const std::string& origin);
StatusOr<IpConfig> ReadIpConfig(const std::string& path);
// The machines a job runs on when ip_config lists spares: `selection` is
// "i,j,..." (indices of lines, distinct, in partition order); empty: all.
// Errors name the selection and the config's size.
StatusOr<IpConfig> SelectMachines(const IpConfig& config, std::string_view selection);
// Checks that no two servers of the config share an ip:port.
Status CheckNoPortClash(const IpConfig& config, int servers_per_machine);

// A base port p on `ip` such that p .. p+count-1 can all be bound now,
// below the kernel's ephemeral range when there is room (no connection or
// bind to port 0 can then take one of them before it is bound).
StatusOr<int> ProbeFreePortRange(const std::string& ip, int count);
// The kernel's ephemeral ports (ip_local_port_range), [first, second].
std::pair<int, int> EphemeralPortRange();

}  // namespace tessera::launcher

#endif  // TESSERA_SRC_LAUNCHER_IP_CONFIG_H_
