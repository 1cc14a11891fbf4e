// File: tests/integration/attack_util.h
//
// What the attack tests use to watch a server process (/proc) and to speak
// to it as a hostile peer would: raw TCP, ZMTP greetings and frame headers.
#ifndef TESSERA_TESTS_INTEGRATION_ATTACK_UTIL_H_
#define TESSERA_TESTS_INTEGRATION_ATTACK_UTIL_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <utility>

#include "src/base/time.h"

namespace tessera::testing::attack {

inline int64_t ProcStatusKb(pid_t pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::stoll(line.substr(field.size() + 1));
  }
  return -1;
}
inline int64_t RssBytes(pid_t pid) { return ProcStatusKb(pid, "VmRSS") * 1024; }

inline int CountDescriptors(pid_t pid) {
  int n = 0;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    ++n;
  }
  return n;
}

// "Max open files" soft and hard limits of `pid`.
inline std::pair<std::string, std::string> DescriptorLimits(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/limits");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("Max open files", 0) != 0) continue;
    std::istringstream fields(line.substr(14));
    std::string soft, hard;
    fields >> soft >> hard;
    return {soft, hard};
  }
  return {};
}

// A TCP connection to 127.0.0.1:port (non-blocking connect when `wait` is
// false); -1 on failure.
inline int TcpConnect(int port, bool wait = true) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | (wait ? 0 : SOCK_NONBLOCK), 0);
  if (fd < 0) return -1;
  timeval timeout{5, 0};  // A server that stops reading cannot hang a test.
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 && errno != EINPROGRESS) {
    close(fd);
    return -1;
  }
  return fd;
}

// A ZMTP 3.0 greeting proposing `mechanism`, as a client.
inline std::string Greeting(const std::string& mechanism) {
  std::string g(64, '\0');
  g[0] = static_cast<char>(0xFF);
  g[9] = 0x7F;
  g[10] = 3;
  g.replace(12, mechanism.size(), mechanism);
  return g;
}

// Sends `data` until done or the peer closes; false if it closed.
inline bool SendAll(int fd, const std::string& data) {
  for (size_t done = 0; done < data.size();) {
    ssize_t n = send(fd, data.data() + done, data.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

inline int PortOf(const std::string& endpoint) {
  return std::stoi(endpoint.substr(endpoint.rfind(':') + 1));
}

// Waits until `done()` or `seconds` pass; returns done().
inline bool WaitFor(double seconds, const std::function<bool()>& done) {
  Deadline deadline = Deadline::InSeconds(seconds);
  while (!done() && !deadline.Expired()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return done();
}

}  // namespace tessera::testing::attack

#endif  // TESSERA_TESTS_INTEGRATION_ATTACK_UTIL_H_
