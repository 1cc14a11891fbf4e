// File: src/graph/array_test_util.h
//
// Test-only helpers over arrays: their values as vectors, a .npy file's
// values, and a gzip file of text.
#ifndef TESSERA_SRC_GRAPH_ARRAY_TEST_UTIL_H_
#define TESSERA_SRC_GRAPH_ARRAY_TEST_UTIL_H_

#include <zlib.h>

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "src/graph/npy.h"
#include "tessera/graph/array.h"

namespace tessera::testing {

template <typename T>
std::vector<T> Values(const Array& array) {
  auto span = array.span<T>();
  return std::vector<T>(span.begin(), span.end());
}

// The values of a .npy file of T (none, and a test failure, if unreadable).
template <typename T = int64_t>
std::vector<T> NpyValues(const std::string& path) {
  auto array = ReadNpy(path);
  EXPECT_TRUE(array.ok()) << array.status();
  return array.ok() ? Values<T>(*array) : std::vector<T>();
}

inline void WriteGz(const std::string& path, const std::string& text) {
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr) << path;
  ASSERT_EQ(gzwrite(f, text.data(), static_cast<unsigned>(text.size())),
            static_cast<int>(text.size()));
  gzclose(f);
}

}  // namespace tessera::testing

#endif  // TESSERA_SRC_GRAPH_ARRAY_TEST_UTIL_H_
