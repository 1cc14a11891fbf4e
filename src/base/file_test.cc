#include "tessera/base/file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <future>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/base/crc32c.h"

using ::testing::HasSubstr;

namespace tessera {
namespace {

class FileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto scratch = ScratchDir::Open("", "tessera_file_test");
    ASSERT_TRUE(scratch.ok()) << scratch.status();
    scratch_ = std::move(*scratch);
    dir_ = scratch_.path();
  }
  ScratchDir scratch_;
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
  EXPECT_THAT(missing.status().message(), HasSubstr(dir_ + "/nope"));
  EXPECT_FALSE(MappedFile::Open(dir_).ok());  // A directory is not a regular file.
  auto bad = OutputFile::Create(dir_ + "/no/such/dir/x");
  EXPECT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("cannot create"));
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

TEST_F(FileTest, ScratchDirRemovesOnlyWhatItCreated) {
  std::string temp_path;
  {
    auto temp = ScratchDir::Open("", "tessera_scratch");
    ASSERT_TRUE(temp.ok());
    temp_path = temp->path();
    EXPECT_TRUE(temp->removed_on_exit());
    ASSERT_TRUE(WriteFileAtomic(temp_path + "/f", "x").ok());
    ScratchDir moved = std::move(*temp);  // Ownership moves; removed once.
    EXPECT_EQ(moved.path(), temp_path);
  }
  EXPECT_FALSE(PathExists(temp_path));
  {
    auto kept = ScratchDir::Open("", "tessera_scratch", /*keep=*/true);
    ASSERT_TRUE(kept.ok());
    temp_path = kept->path();
  }
  EXPECT_TRUE(PathExists(temp_path));
  ASSERT_TRUE(RemoveAll(temp_path).ok());
  {
    auto named = ScratchDir::Open(dir_ + "/named/deep", "unused");
    ASSERT_TRUE(named.ok());
    EXPECT_FALSE(named->removed_on_exit());
  }
  EXPECT_TRUE(IsDirectory(dir_ + "/named/deep"));
}

TEST_F(FileTest, WriteFileDurablyReplacesTheFileAndLeavesNoTemporary) {
  const std::string path = dir_ + "/manifest.json";
  ASSERT_TRUE(WriteFileDurably(path, "old").ok());
  ASSERT_TRUE(WriteFileDurably(path, "new contents").ok());
  EXPECT_EQ(*ReadFileToString(path), "new contents");
  EXPECT_FALSE(PathExists(path + ".tmp"));
  Status missing = WriteFileDurably(dir_ + "/no/such/folder/f", "x");
  EXPECT_FALSE(missing.ok());
  EXPECT_THAT(missing.message(), HasSubstr("no/such/folder")) << missing;
  EXPECT_FALSE(SyncPath(dir_ + "/absent").ok());
  EXPECT_TRUE(SyncPath(dir_).ok());
  EXPECT_TRUE(SyncPath(path).ok());
  auto out = OutputFile::Create(dir_ + "/synced");
  ASSERT_TRUE(out.ok());
  ASSERT_TRUE(out->Append("abc", 3).ok());
  EXPECT_TRUE(out->Sync().ok());
  EXPECT_TRUE(out->Close().ok());
}

// A FIFO in a file's place is refused at once by every reader (an open
// without O_NONBLOCK would wait for a writer forever).
TEST_F(FileTest, AFifoIsRefusedWithoutWaitingForAWriter) {
  const std::string fifo = dir_ + "/manifest.json";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::vector<std::pair<const char*, std::function<Status()>>> readers = {
      {"MappedFile::Open", [&] { return MappedFile::Open(fifo).status(); }},
      {"ReadFileToString", [&] { return ReadFileToString(fifo).status(); }}};
  for (const auto& [name, read] : readers) {
    auto result = std::async(std::launch::async, read);
    if (result.wait_for(std::chrono::seconds(5)) != std::future_status::ready) {
      ADD_FAILURE() << name << " waits for a writer of the FIFO";
      // Unblocks the reader (a writer appears), so that the test ends.
      const int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
      result.wait();
      if (fd >= 0) ::close(fd);
    }
    const Status st = result.get();
    EXPECT_FALSE(st.ok()) << name;
    EXPECT_THAT(st.message(), HasSubstr("is not a regular file")) << name << ": " << st;
  }
}

TEST_F(FileTest, ReadsWholeFilesAndRefusesFilesAboveALimit) {
  const std::string path = dir_ + "/f";
  ASSERT_TRUE(WriteFileAtomic(path, "0123456789").ok());
  EXPECT_EQ(*ReadFileToString(path, 10), "0123456789");
  // A (sparse) file far above the limit is refused before it is read.
  ASSERT_EQ(::truncate(path.c_str(), int64_t{1} << 30), 0);
  const Status st = ReadFileToString(path, 1 << 20).status();
  EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition) << st;
  EXPECT_THAT(st.message(), HasSubstr("has 1073741824 bytes, more than the 1048576 allowed"));
  ASSERT_EQ(::truncate(path.c_str(), 0), 0);
  EXPECT_EQ(*ReadFileToString(path), "");
}

// Pieces of a file with pread: a file that shrinks meanwhile is an error
// naming it, never SIGBUS.
TEST_F(FileTest, InputFileReadsPiecesAndFindsAFileThatShrank) {
  const std::string path = dir_ + "/pieces";
  ASSERT_TRUE(WriteFileAtomic(path, "0123456789").ok());
  StatusOr<InputFile> file = InputFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(file->size(), 10u);
  char piece[4];
  ASSERT_TRUE(file->ReadAt(3, piece, 4).ok());
  EXPECT_EQ(std::string(piece, 4), "3456");
  InputFile moved = std::move(*file);
  ASSERT_EQ(::truncate(path.c_str(), 5), 0);
  const Status st = moved.ReadAt(3, piece, 4);
  EXPECT_EQ(st.code(), absl::StatusCode::kDataLoss) << st;
  EXPECT_THAT(st.message(), HasSubstr(path + " shrank while it was read (5 of 10 bytes)"));
  EXPECT_FALSE(InputFile::Open(dir_).ok());  // A folder is no regular file.
}

TEST(Crc32cTest, MatchesTheStandardCheckValueAndExtendsInPieces) {
  EXPECT_EQ(Crc32c("123456789", 9), 0xE3069283u);
  EXPECT_EQ(Crc32c("", 0), 0u);
  std::string data(1000, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 7 + 3);
  const uint32_t whole = Crc32c(data.data(), data.size());
  for (size_t cut : {0, 1, 7, 8, 9, 500, 999, 1000}) {
    uint32_t crc = Crc32cExtend(0, data.data(), cut);
    EXPECT_EQ(Crc32cExtend(crc, data.data() + cut, data.size() - cut), whole) << cut;
  }
  data[123] ^= 1;
  EXPECT_NE(Crc32c(data.data(), data.size()), whole);
}

}  // namespace
}  // namespace tessera
