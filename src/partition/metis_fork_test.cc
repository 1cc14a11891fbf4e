// METIS without a process of its own: fork fails with ENOMEM under strict
// overcommit (vm.overcommit_memory=2) when the partitioner is too large to
// be copied. This binary's fork() fails so while g_fork_fails is set.
#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/base/test_util.h"
#include "src/partition/metis_adapter.h"
#include "tessera/graph/readers.h"

namespace {
std::atomic<bool> g_fork_fails{false};
}  // namespace

extern "C" pid_t fork() {
  if (g_fork_fails.load()) {
    errno = ENOMEM;
    return -1;
  }
  using Fork = pid_t (*)();
  static const auto real = reinterpret_cast<Fork>(dlsym(RTLD_NEXT, "fork"));
  return real();
}

namespace tessera {
namespace {

using ::testing::HasSubstr;

TEST(Metis, RunsInThisProcessWhenForkHasNoMemory) {
  auto g = ReadGraph(testing::TestDataDir() + "/cora");
  ASSERT_TRUE(g.ok()) << g.status();
  const MetisOptions options{.num_parts = 4, .seed = 7};
  auto forked = MetisPartition(*g, options);
  ASSERT_TRUE(forked.ok()) << forked.status();
  testing::CapturedLog log;
  g_fork_fails = true;
  auto here = MetisPartition(*g, options);
  g_fork_fails = false;
  ASSERT_TRUE(here.ok()) << here.status();
  EXPECT_EQ(*here, *forked);  // METIS is deterministic for a seed.
  EXPECT_THAT(log.text(), HasSubstr("METIS: cannot fork a process for METIS: Cannot allocate "
                                    "memory; running it in this process"));
  EXPECT_THAT(log.text(), HasSubstr("METIS: objective "));
}

}  // namespace
}  // namespace tessera
