// File: src/base/test_util.h
//
// Helpers for tests only: a temporary folder removed on destruction, the path
// of the bundled test datasets, and file tampering helpers.
#ifndef TESSERA_SRC_BASE_TEST_UTIL_H_
#define TESSERA_SRC_BASE_TEST_UTIL_H_

#include <string>

#include "gtest/gtest.h"
#include "src/base/file.h"

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

}  // namespace tessera::testing

#endif  // TESSERA_SRC_BASE_TEST_UTIL_H_
