// File: src/base/resource.cc
#include "tessera/base/resource.h"

#include <malloc.h>
#include <sys/resource.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <limits>
#include <sstream>

#include "fmt/format.h"

namespace tessera {
namespace {

// The first line of `path` without surrounding whitespace; empty if unreadable.
std::string FirstLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  size_t begin = line.find_first_not_of(" \t\r");
  if (begin == std::string::npos) return "";
  return line.substr(begin, line.find_last_not_of(" \t\r") + 1 - begin);
}

bool ParseBytes(const std::string& text, int64_t* value) {
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, *value);
  return ec == std::errc() && ptr == end && *value >= 0;
}

// MemAvailable + SwapFree of `meminfo`, in bytes; -1 if neither is there.
int64_t MeminfoAvailable(const std::string& meminfo) {
  std::ifstream in(meminfo);
  std::string line;
  int64_t total = 0;
  bool found = false;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string key;
    int64_t kib = 0;
    if (!(fields >> key >> kib) || kib < 0) continue;
    if (key == "MemAvailable:" || key == "SwapFree:") {
      total += std::min(kib, std::numeric_limits<int64_t>::max() / 1024 / 4);
      found = true;
    }
  }
  return found ? total * 1024 : -1;
}

// The smallest memory.max - memory.current over this process's cgroup v2
// and its ancestors (those that set a limit); INT64_MAX if none does.
int64_t CgroupAvailable(const MemoryFiles& files) {
  std::ifstream in(files.self_cgroup);
  std::string line, path;
  bool found = false;
  while (std::getline(in, line)) {
    if (line.rfind("0::", 0) == 0) {
      path = line.substr(3);
      found = true;
      break;
    }
  }
  int64_t available = std::numeric_limits<int64_t>::max();
  if (!found || path.empty() || path[0] != '/') return available;
  while (true) {
    std::string dir = files.cgroup_root + (path == "/" ? "" : path);
    int64_t max = 0, current = 0;
    if (ParseBytes(FirstLine(dir + "/memory.max"), &max) &&
        ParseBytes(FirstLine(dir + "/memory.current"), &current)) {
      available = std::min(available, std::max<int64_t>(max - current, 0));
    }
    if (path == "/") break;
    size_t slash = path.find_last_of('/');
    path = slash == 0 ? "/" : path.substr(0, slash);
  }
  return available;
}

}  // namespace

int64_t AvailableMemoryBytes(const MemoryFiles& files) {
  int64_t meminfo = MeminfoAvailable(files.meminfo);
  int64_t cgroup = CgroupAvailable(files);
  return meminfo < 0 ? cgroup : std::min(meminfo, cgroup);
}

int64_t PeakRssBytes() {
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<int64_t>(usage.ru_maxrss) * 1024;  // Linux reports KiB.
}

std::string FormatBytes(int64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  if (unit == 0) return fmt::format("{} B", bytes);
  return fmt::format("{:.2f} {}", value, units[unit]);
}

void RetainFreedMemory() {
  // 32 MiB is glibc's largest mmap threshold on 64-bit; setting it also turns
  // off the dynamic threshold.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  mallopt(M_TOP_PAD, 64 << 20);
}

int64_t RaiseDescriptorLimit() {
  struct rlimit limit {};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return -1;
  if (limit.rlim_cur < limit.rlim_max) {
    struct rlimit raised = limit;
    raised.rlim_cur = limit.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) limit = raised;
  }
  return limit.rlim_cur == RLIM_INFINITY ? INT64_MAX : static_cast<int64_t>(limit.rlim_cur);
}

}  // namespace tessera
