// File: src/base/test_util.h
//
// Helpers for tests only: a temporary folder removed on destruction, the path
// of the bundled test datasets, file tampering helpers, and log capture.
#ifndef TESSERA_SRC_BASE_TEST_UTIL_H_
#define TESSERA_SRC_BASE_TEST_UTIL_H_

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <sstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "spdlog/sinks/ostream_sink.h"
#include "spdlog/spdlog.h"
#include "tessera/base/file.h"

namespace tessera {
// The matchers tests check messages with (EXPECT_THAT(message, HasSubstr(...))).
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::ThrowsMessage;
}  // namespace tessera

namespace tessera::testing {

// A fresh folder under /tmp, removed (with its contents) by the destructor.
class TempDir {
 public:
  TempDir() {
    auto dir = ScratchDir::Open("", "tessera_test");
    EXPECT_TRUE(dir.ok()) << dir.status();
    if (dir.ok()) dir_ = std::move(*dir);
  }
  const std::string& path() const { return dir_.path(); }
  std::string operator/(const std::string& name) const { return dir_.path() + "/" + name; }

 private:
  ScratchDir dir_;
};

#ifdef TESSERA_SOURCE_DIR
// testdata/ of the source tree (Cora and CiteSeer in the OGB layout).
inline std::string TestDataDir() { return std::string(TESSERA_SOURCE_DIR) + "/testdata"; }
#endif
#ifdef TESSERA_BINARY_DIR
inline std::string TesseraBinary() { return std::string(TESSERA_BINARY_DIR) + "/bin/tessera"; }
#endif

inline std::string ReadAll(const std::string& path) {
  auto text = ReadFileToString(path);
  EXPECT_TRUE(text.ok()) << text.status();
  return text.ok() ? *text : std::string();
}

inline void WriteAll(const std::string& path, const std::string& contents) {
  ASSERT_TRUE(WriteFileAtomic(path, contents).ok()) << path;
}

// Captures what spdlog's default logger prints while alive, one message per
// line ("%v", or `pattern`). spdlog's default logger must not be replaced
// while another thread logs: create this before, and destroy it after,
// every thread that may log.
class CapturedLog {
 public:
  explicit CapturedLog(const std::string& pattern = "%v") : previous_(spdlog::default_logger()) {
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(stream_);
    sink->set_pattern(pattern);
    spdlog::set_default_logger(std::make_shared<spdlog::logger>("captured", sink));
  }
  ~CapturedLog() { spdlog::set_default_logger(previous_); }
  CapturedLog(const CapturedLog&) = delete;
  CapturedLog& operator=(const CapturedLog&) = delete;

  std::string text() const { return stream_.str(); }
  // Lines that start with `prefix` (all lines when empty).
  int CountLines(const std::string& prefix = "") const {
    std::istringstream lines(stream_.str());
    int n = 0;
    for (std::string line; std::getline(lines, line);) n += line.rfind(prefix, 0) == 0;
    return n;
  }

 private:
  std::shared_ptr<spdlog::logger> previous_;
  std::ostringstream stream_;
};

// Every regular file below `dir`: path relative to `dir` -> contents (for
// byte-for-byte comparisons of outputs).
inline std::map<std::string, std::string> ReadTree(const std::string& dir) {
  std::map<std::string, std::string> files;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    files[std::filesystem::relative(entry.path(), dir).string()] = ReadAll(entry.path().string());
  }
  return files;
}

// Runs `command` with /bin/sh: its exit code (-1 if it did not exit) and
// what it wrote to stdout and stderr.
struct ShellRun {
  int exit_code = -1;
  std::string output;
};
inline ShellRun RunShell(const std::string& command) {
  ShellRun run;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return run;
  std::array<char, 4096> buffer;
  size_t n;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0) {
    run.output.append(buffer.data(), n);
  }
  const int status = ::pclose(pipe);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return run;
}

// `tessera <args>` with /bin/sh, after `prefix` there (such as
// "ulimit -v 2000000;").
inline ShellRun RunTessera(const std::string& args, const std::string& prefix = "") {
  return RunShell(prefix + TesseraBinary() + " " + args);
}

}  // namespace tessera::testing

#endif  // TESSERA_SRC_BASE_TEST_UTIL_H_
