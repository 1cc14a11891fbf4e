#include "src/base/file.h"

#include <unistd.h>

#include <cstring>

#include "gtest/gtest.h"

namespace tessera {
namespace {

class FileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/tessera_file_test_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { ASSERT_TRUE(RemoveAll(dir_).ok()); }
  std::string dir_;
};

TEST_F(FileTest, WriteAtomicThenMapAndRead) {
  std::string path = dir_ + "/a.txt";
  ASSERT_TRUE(WriteFileAtomic(path, "hello").ok());
  EXPECT_FALSE(PathExists(path + ".tmp"));
  auto mapped = MappedFile::Open(path);
  ASSERT_TRUE(mapped.ok()) << mapped.status();
  ASSERT_EQ(mapped->size(), 5u);
  EXPECT_EQ(std::memcmp(mapped->data(), "hello", 5), 0);
  EXPECT_EQ(*ReadFileToString(path), "hello");
  EXPECT_EQ(*FileSize(path), 5);
}

TEST_F(FileTest, OutputFileAppendAndWriteAt) {
  std::string path = dir_ + "/b.bin";
  auto out = OutputFile::Create(path);
  ASSERT_TRUE(out.ok());
  ASSERT_TRUE(out->Append("abcdef", 6).ok());
  ASSERT_TRUE(out->WriteAt(2, "XY", 2).ok());
  ASSERT_TRUE(out->Append("g", 1).ok());
  ASSERT_TRUE(out->Close().ok());
  EXPECT_EQ(*ReadFileToString(path), "abXYefg");
}

TEST_F(FileTest, ErrorsNameThePath) {
  auto missing = MappedFile::Open(dir_ + "/nope");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find(dir_ + "/nope"), std::string::npos);
  EXPECT_FALSE(MappedFile::Open(dir_).ok());  // A directory is not a regular file.
  auto bad = OutputFile::Create(dir_ + "/no/such/dir/x");
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("cannot create"), std::string::npos);
}

TEST_F(FileTest, MakeDirsAndSizes) {
  ASSERT_TRUE(MakeDirs(dir_ + "/x/y/z").ok());
  ASSERT_TRUE(MakeDirs(dir_ + "/x/y/z").ok());  // Idempotent.
  EXPECT_TRUE(IsDirectory(dir_ + "/x/y/z"));
  ASSERT_TRUE(WriteFileAtomic(dir_ + "/x/y/f", std::string(100, 'a')).ok());
  ASSERT_TRUE(WriteFileAtomic(dir_ + "/x/y/z/g", std::string(23, 'b')).ok());
  EXPECT_EQ(DirectorySize(dir_ + "/x"), 123);
  ASSERT_TRUE(WriteFileAtomic(dir_ + "/file", "x").ok());
  EXPECT_FALSE(MakeDirs(dir_ + "/file").ok());
}

TEST_F(FileTest, EmptyFileMapsToNull) {
  ASSERT_TRUE(WriteFileAtomic(dir_ + "/empty", "").ok());
  auto mapped = MappedFile::Open(dir_ + "/empty");
  ASSERT_TRUE(mapped.ok());
  EXPECT_EQ(mapped->size(), 0u);
  EXPECT_EQ(mapped->data(), nullptr);
}

}  // namespace
}  // namespace tessera
