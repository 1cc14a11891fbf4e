// File: fuzz/fuzz_util.h
//
// Helpers shared by the fuzz targets: a per-process scratch folder for
// readers that take paths, and silencing the library's logging.
#ifndef TESSERA_FUZZ_FUZZ_UTIL_H_
#define TESSERA_FUZZ_FUZZ_UTIL_H_

#include <stdlib.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "spdlog/spdlog.h"
#include "tessera/base/file.h"
#include "tessera/base/status.h"

namespace tessera::fuzz {

// Aborts the run (a finding) when a property of the code under test fails.
#define FUZZ_ASSERT(cond)                                                                 \
  do {                                                                                    \
    if (!(cond)) {                                                                        \
      std::fprintf(stderr, "%s:%d: FUZZ_ASSERT(%s) failed\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                       \
    }                                                                                     \
  } while (0)

// A folder "$TMPDIR/tessera-fuzz-XXXXXX" (/tmp without TMPDIR) that lives
// for the whole process and is removed at normal exit. scripts/fuzz.sh points
// TMPDIR at its own work folder, so a crash leaves nothing behind either.
inline const std::string& ScratchFolder() {
  static const std::string* folder = [] {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern =
        std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/tessera-fuzz-XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) {
      std::perror("mkdtemp");
      std::abort();
    }
    auto* path = new std::string(pattern);
    std::atexit([] { (void)RemoveAll(ScratchFolder()); });
    return path;
  }();
  return *folder;
}

// Writes `data` to `path` (created or truncated); aborts on I/O errors, which
// are the harness's problem, not a finding in the code under test.
inline void WriteFile(const std::string& path, std::string_view data) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr || std::fwrite(data.data(), 1, data.size(), f) != data.size() ||
      std::fclose(f) != 0) {
    std::perror(path.c_str());
    std::abort();
  }
}

inline void Quiet() { spdlog::set_level(spdlog::level::off); }

// With TESSERA_FUZZ_VERBOSE=1 (e.g. when replaying one input: fuzz_npy FILE),
// prints what the code under test answered.
inline void Report(const char* what, const Status& status) {
  static const bool verbose = [] {
    const char* v = std::getenv("TESSERA_FUZZ_VERBOSE");
    return v != nullptr && std::string_view(v) == "1";
  }();
  if (verbose) std::fprintf(stderr, "%s: %s\n", what, status.ToString().c_str());
}

inline std::string_view AsText(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

}  // namespace tessera::fuzz

#endif  // TESSERA_FUZZ_FUZZ_UTIL_H_
