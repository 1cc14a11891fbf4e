// File: src/base/process_test.cc
#include "src/base/process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <string>

#include "gtest/gtest.h"
#include "src/base/test_util.h"
#include "tessera/base/time.h"

namespace tessera {
namespace {

TEST(ProcessTest, ExitCodesSignalsAndStop) {
  auto ok = Process::Spawn({.argv = {"/bin/sh", "-c", "exit 3"}});
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok->Wait(Deadline::InSeconds(10)), 3);
  auto env =
      Process::Spawn({.argv = {"/bin/sh", "-c", "test \"$FOO\" = bar"}, .env = {{"FOO", "bar"}}});
  EXPECT_EQ(*env->Wait(Deadline::InSeconds(10)), 0);
  auto missing = Process::Spawn({.argv = {"/nonexistent/program"}});
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);

  auto sleeper = Process::Spawn({.argv = {"/bin/sleep", "60"}, .grace_seconds = 1});
  ASSERT_TRUE(sleeper.ok());
  EXPECT_EQ(sleeper->Wait(Deadline::InSeconds(0.1)).status().code(),
            absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(sleeper->Stop(), -SIGTERM);
  // A process that ignores SIGTERM is killed after the grace period.
  testing::TempDir dir;
  auto stubborn = Process::Spawn({.argv = {"/bin/sh", "-c", "trap '' TERM; echo armed; sleep 60"},
                                  .log_path = dir / "log",
                                  .grace_seconds = 0.3});
  ASSERT_TRUE(stubborn.ok());
  Deadline armed = Deadline::InSeconds(10);  // Wait until the trap is set.
  while (testing::ReadAll(dir / "log").empty() && !armed.Expired()) usleep(1000);
  Stopwatch watch;
  EXPECT_EQ(stubborn->Stop(), -SIGKILL);
  EXPECT_LT(watch.Seconds(), 10);
}

// Whether process `pid` is gone (or a zombie nobody reaps yet).
bool Gone(pid_t pid) {
  std::string stat = testing::ReadAll("/proc/" + std::to_string(pid) + "/stat");
  size_t paren = stat.rfind(')');
  return stat.empty() || (paren != std::string::npos && stat.substr(paren + 2, 1) == "Z");
}

TEST(ProcessTest, GroupLeftoversCwdStdinAndPeakRss) {
  testing::TempDir dir;
  // What the child leaves running in its group dies with it.
  auto parent = Process::Spawn(
      {.argv = {"/bin/sh", "-c", "sleep 60 & echo $! > left; exit 0"}, .cwd = dir.path()});
  ASSERT_TRUE(parent.ok()) << parent.status();
  EXPECT_EQ(*parent->Wait(Deadline::InSeconds(10)), 0);
  EXPECT_GT(parent->peak_rss_bytes(), 0);
  const pid_t left = std::stoi(testing::ReadAll(dir / "left"));
  Deadline deadline = Deadline::InSeconds(10);
  while (!Gone(left) && !deadline.Expired()) usleep(1000);
  EXPECT_TRUE(Gone(left)) << "pid " << left << " outlived its group leader";
  // A directory that does not exist is an error naming it.
  auto lost = Process::Spawn({.argv = {"/bin/true"}, .cwd = dir / "missing"});
  ASSERT_FALSE(lost.ok());
  EXPECT_THAT(lost.status().message(), HasSubstr("missing")) << lost.status();
  // The program is looked up in the PATH the child gets.
  ASSERT_EQ(mkdir((dir / "bin").c_str(), 0755), 0);
  testing::WriteAll(dir / "bin/mytool", "#!/bin/sh\nexit 5\n");
  ASSERT_EQ(chmod((dir / "bin/mytool").c_str(), 0755), 0);
  auto found = Process::Spawn({.argv = {"mytool"}, .env = {{"PATH", dir / "bin"}}});
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ(*found->Wait(Deadline::InSeconds(10)), 5);
  EXPECT_EQ(Process::Spawn({.argv = {"mytool"}}).status().code(), absl::StatusCode::kNotFound);
  // stdin_null: a reader sees end of file at once.
  auto reader = Process::Spawn(
      {.argv = {"/bin/sh", "-c", "cat > got"}, .stdin_null = true, .cwd = dir.path()});
  ASSERT_TRUE(reader.ok());
  EXPECT_EQ(*reader->Wait(Deadline::InSeconds(10)), 0);
  EXPECT_EQ(testing::ReadAll(dir / "got"), "");
}

TEST(ProcessTest, WaitInForegroundStopsOnLinkEof) {
  auto quick = Process::Spawn({.argv = {"/bin/sh", "-c", "exit 4"}});
  ASSERT_TRUE(quick.ok());
  bool stopped = true;
  EXPECT_EQ(WaitInForeground(*quick, -1, &stopped), 4);
  EXPECT_FALSE(stopped);

  int link[2];
  ASSERT_EQ(pipe2(link, O_CLOEXEC), 0);  // The child must not hold the link open.
  auto sleeper = Process::Spawn({.argv = {"/bin/sleep", "60"}, .grace_seconds = 5});
  ASSERT_TRUE(sleeper.ok());
  ASSERT_EQ(write(link[1], "x", 1), 1);  // Data on the link is not a stop.
  close(link[1]);                        // Its end is.
  Stopwatch watch;
  EXPECT_EQ(WaitInForeground(*sleeper, link[0], &stopped), 128 + SIGTERM);
  EXPECT_TRUE(stopped);
  EXPECT_LT(watch.Seconds(), 5);
  close(link[0]);
}

TEST(ProcessTest, FindProgramLooksInPath) {
  EXPECT_TRUE(FindProgram("sh").ok());
  EXPECT_EQ(FindProgram("no-such-program-here").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(*FindProgram("./relative/tool"), "./relative/tool");
}

// Memory the parent and a forked child both see.
struct Shared {
  Shared() {
    void* p = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    EXPECT_NE(p, MAP_FAILED);
    words = static_cast<std::atomic<int64_t>*>(p);
  }
  ~Shared() { munmap(words, 4096); }
  std::atomic<int64_t>* words;
};

TEST(ProcessTest, ForkRunsABodyAndReturnsItsExitCode) {
  Shared shared;
  int64_t local = 7;
  auto child = Process::Fork(
      [&] {
        local = 100;  // The child's copy: the parent's stays 7.
        shared.words[0] = 41 + 1;
        return 9;
      },
      "writer", 1);
  ASSERT_TRUE(child.ok()) << child.status();
  EXPECT_EQ(*child->Wait(Deadline::InSeconds(10)), 9);
  EXPECT_EQ(shared.words[0], 42);
  EXPECT_EQ(local, 7);
  EXPECT_GT(child->peak_rss_bytes(), 0);
  EXPECT_EQ(child->name(), "writer");

  // A crash in the body is the child's alone.
  auto crash = Process::Fork([] { return raise(SIGSEGV) + 1; }, "crash", 1);
  ASSERT_TRUE(crash.ok());
  EXPECT_EQ(*crash->Wait(Deadline::InSeconds(10)), -SIGSEGV);
}

TEST(ProcessTest, AForkedChildStartsWithDefaultSignalsAndStops) {
  // The parent ignores and blocks SIGTERM; the child does neither.
  struct sigaction ignore {
  }, old{};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGTERM, &ignore, &old);
  sigset_t term, old_mask;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &term, &old_mask);
  Shared shared;
  auto child = Process::Fork(
      [&] {
        shared.words[0] = 1;
        for (;;) pause();
        return 0;
      },
      "sleeper", 10);
  pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  sigaction(SIGTERM, &old, nullptr);
  ASSERT_TRUE(child.ok());
  Deadline started = Deadline::InSeconds(10);
  while (shared.words[0] == 0 && !started.Expired()) usleep(1000);
  EXPECT_EQ(child->Wait(Deadline::InSeconds(0.1)).status().code(),
            absl::StatusCode::kDeadlineExceeded);
  Stopwatch watch;
  EXPECT_EQ(child->Stop(), -SIGTERM);  // Not the SIGKILL that follows the 10 s grace.
  EXPECT_LT(watch.Seconds(), 5);
}

TEST(ProcessTest, AForkedChildDiesWithItsParent) {
  Shared shared;
  // The middle process forks a grandchild that would sleep forever, then dies
  // at once, without running any destructor.
  auto middle = Process::Fork(
      [&] {
        auto grandchild = Process::Fork(
            [] {
              for (;;) pause();
              return 0;
            },
            "grandchild", 1);
        shared.words[0] = grandchild.ok() ? grandchild->pid() : -1;
        _exit(0);
        return 0;
      },
      "middle", 1);
  ASSERT_TRUE(middle.ok());
  EXPECT_EQ(*middle->Wait(Deadline::InSeconds(10)), 0);
  const pid_t orphan = static_cast<pid_t>(shared.words[0]);
  ASSERT_GT(orphan, 0);
  Deadline deadline = Deadline::InSeconds(10);
  while (!Gone(orphan) && !deadline.Expired()) usleep(1000);
  EXPECT_TRUE(Gone(orphan)) << "pid " << orphan << " outlived its parent";
}

}  // namespace
}  // namespace tessera
