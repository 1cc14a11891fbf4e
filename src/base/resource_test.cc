#include "tessera/base/resource.h"

#include <limits>

#include "gtest/gtest.h"
#include "src/base/test_util.h"

namespace tessera {
namespace {

using testing::TempDir;
using testing::WriteAll;

constexpr int64_t kMiB = int64_t{1} << 20;

// A fake /proc and cgroup v2 tree: meminfo with `available_kib` +
// `swap_kib`, and this process in the cgroup `path`.
MemoryFiles FakeFiles(const TempDir& dir, int64_t available_kib, int64_t swap_kib,
                      const std::string& path) {
  MemoryFiles files;
  files.meminfo = dir / "meminfo";
  files.self_cgroup = dir / "cgroup";
  files.cgroup_root = dir / "sys";
  WriteAll(files.meminfo, "MemTotal:       24684084 kB\nMemFree:  1000 kB\nMemAvailable:   " +
                              std::to_string(available_kib) + " kB\nSwapTotal: 0 kB\nSwapFree: " +
                              std::to_string(swap_kib) + " kB\n");
  WriteAll(files.self_cgroup, "1:cpu:/other\n0::" + path + "\n");
  EXPECT_TRUE(MakeDirs(files.cgroup_root + path).ok());
  return files;
}

void SetLimit(const std::string& dir, const std::string& max, int64_t current) {
  WriteAll(dir + "/memory.max", max + "\n");
  WriteAll(dir + "/memory.current", std::to_string(current) + "\n");
}

TEST(AvailableMemoryBytes, MemAvailablePlusSwapFreeWithoutACgroupLimit) {
  TempDir dir;
  MemoryFiles files = FakeFiles(dir, 3 * 1024, 1024, "/a/b");
  EXPECT_EQ(AvailableMemoryBytes(files), 4 * kMiB);
  SetLimit(files.cgroup_root + "/a/b", "max", 100 * kMiB);  // "max": no limit.
  EXPECT_EQ(AvailableMemoryBytes(files), 4 * kMiB);
}

TEST(AvailableMemoryBytes, TheTightestCgroupLimitOfTheProcessOrAnAncestorWins) {
  TempDir dir;
  MemoryFiles files = FakeFiles(dir, 1024 * 1024, 0, "/a/b");  // 1 GiB free.
  SetLimit(files.cgroup_root + "/a/b", "max", 5 * kMiB);
  SetLimit(files.cgroup_root + "/a", std::to_string(300 * kMiB), 100 * kMiB);
  EXPECT_EQ(AvailableMemoryBytes(files), 200 * kMiB);
  SetLimit(files.cgroup_root + "/a/b", std::to_string(60 * kMiB), 10 * kMiB);
  EXPECT_EQ(AvailableMemoryBytes(files), 50 * kMiB);
  SetLimit(files.cgroup_root + "/a/b", std::to_string(60 * kMiB), 70 * kMiB);  // Over: none.
  EXPECT_EQ(AvailableMemoryBytes(files), 0);
}

// In a container the cgroup namespace shows the container's cgroup as "/".
TEST(AvailableMemoryBytes, TheRootOfACgroupNamespaceCounts) {
  TempDir dir;
  MemoryFiles files = FakeFiles(dir, 1024 * 1024, 0, "/");
  SetLimit(files.cgroup_root, std::to_string(64 * kMiB), 16 * kMiB);
  EXPECT_EQ(AvailableMemoryBytes(files), 48 * kMiB);
}

TEST(AvailableMemoryBytes, UnreadableFilesMeanNoKnownLimit) {
  TempDir dir;
  MemoryFiles files;
  files.meminfo = dir / "missing";
  files.self_cgroup = dir / "missing";
  files.cgroup_root = dir / "missing";
  EXPECT_EQ(AvailableMemoryBytes(files), std::numeric_limits<int64_t>::max());
  // A cgroup v1 only system: no "0::" line.
  WriteAll(dir / "cgroup", "4:memory:/x\n");
  files.self_cgroup = dir / "cgroup";
  EXPECT_EQ(AvailableMemoryBytes(files), std::numeric_limits<int64_t>::max());
}

TEST(AvailableMemoryBytes, ThisMachineHasSome) {
  int64_t available = AvailableMemoryBytes();
  EXPECT_GT(available, 0);
  EXPECT_LT(available, std::numeric_limits<int64_t>::max());  // Linux has /proc/meminfo.
}

}  // namespace
}  // namespace tessera
