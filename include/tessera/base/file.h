// File: include/tessera/base/file.h
//
// Thin, Status-returning wrappers over POSIX files: a move-only read-only
// memory map, a move-only output file with checked writes, and whole-file
// helpers. Every error message names the path and the cause.
#ifndef TESSERA_INCLUDE_TESSERA_BASE_FILE_H_
#define TESSERA_INCLUDE_TESSERA_BASE_FILE_H_

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <utility>

#include "tessera/base/status.h"

namespace tessera {

// A read-only, private memory map of a whole file. Move-only owner: the map is
// released by the destructor. An empty file maps to data() == nullptr, size 0.
class MappedFile {
 public:
  static StatusOr<MappedFile> Open(const std::string& path);

  MappedFile() = default;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }
  // Tells the kernel these pages will not be needed again soon (drops them from
  // this process's resident set; the file is unchanged).
  void DontNeed(size_t offset, size_t length) const;

 private:
  void Release();
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  std::string path_;
};

// Owns a file descriptor: closes it when destroyed or replaced; move-only.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    reset(other.release());
    return *this;
  }
  ~UniqueFd() { reset(); }
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }
  // Closes the descriptor held, if any, and holds `fd`.
  void reset(int fd = -1);

 private:
  int fd_ = -1;
};

// A file opened for writing (created or truncated). Writes are unbuffered
// system calls; callers batch their data. Close() reports deferred errors
// (e.g. ENOSPC); the destructor closes silently.
class OutputFile {
 public:
  static StatusOr<OutputFile> Create(const std::string& path);

  // Appends `size` bytes at the current end.
  Status Append(const void* data, size_t size);
  // Writes `size` bytes at `offset` without moving the append position.
  // Thread-safe for disjoint ranges (pwrite).
  Status WriteAt(uint64_t offset, const void* data, size_t size) const;
  // Sets the file length (ftruncate).
  Status Resize(uint64_t size);
  // Flushes the file's data and size to the disk (fsync).
  Status Sync() const;
  Status Close();
  const std::string& path() const { return path_; }

 private:
  UniqueFd fd_;
  std::string path_;
};

// A working folder: either one the user named (created if needed, never
// removed) or, when `path` is empty, a new <prefix>-XXXXXX folder in $TMPDIR
// (default /tmp) that the destructor removes unless `keep`. Move-only owner.
class ScratchDir {
 public:
  static StatusOr<ScratchDir> Open(const std::string& path, const std::string& prefix,
                                   bool keep = false);
  ScratchDir() = default;
  ScratchDir(ScratchDir&& other) noexcept;
  ScratchDir& operator=(ScratchDir&& other) noexcept;
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  ~ScratchDir();

  const std::string& path() const { return path_; }
  // True if the destructor removes the folder.
  bool removed_on_exit() const { return remove_; }

 private:
  std::string path_;
  bool remove_ = false;
};

// Reading (MappedFile too) opens without blocking and refuses anything but a
// regular file: a FIFO or a device in a file's place is an error, not a hang.
//
// The whole of a regular file, read (not mapped: a file truncated or rewritten
// meanwhile gives an error or the bytes as read, never SIGBUS). A file larger
// than `max_bytes` is refused before it is read (FailedPrecondition).
StatusOr<std::string> ReadFileToString(const std::string& path,
                                       uint64_t max_bytes = std::numeric_limits<uint64_t>::max());
// A regular file open for reading in pieces, with pread: memory stays
// bounded however large the file, and a file truncated meanwhile gives an
// error, never SIGBUS. Move-only owner of the descriptor (closed by the
// destructor).
class InputFile {
 public:
  static StatusOr<InputFile> Open(const std::string& path);

  // The size when it was opened.
  uint64_t size() const { return size_; }
  const std::string& path() const { return path_; }
  // Reads exactly `size` bytes at `offset` into `out`; DataLoss ("shrank
  // while it was read") if the file ends first.
  Status ReadAt(uint64_t offset, void* out, size_t size) const;
  // Gives the descriptor up to the caller, who closes it (to read it
  // another way, as zlib's gzdopen does).
  int Release() { return fd_.release(); }

 private:
  UniqueFd fd_;
  uint64_t size_ = 0;
  std::string path_;
};
// Writes `contents` to "<path>.tmp" and renames it over `path`, so readers see
// either the old file or the complete new one.
Status WriteFileAtomic(const std::string& path, std::string_view contents);
// WriteFileAtomic that survives a power loss: the new file is fsynced before
// the rename, and its folder after it.
Status WriteFileDurably(const std::string& path, std::string_view contents);
// fsync of a file, or of a folder (which makes the names created or renamed
// in it durable).
Status SyncPath(const std::string& path);
// mkdir -p.
Status MakeDirs(const std::string& path);
// rm -rf; a missing path (or one below a file) is not an error.
Status RemoveAll(const std::string& path);
bool PathExists(const std::string& path);
bool IsDirectory(const std::string& path);
StatusOr<int64_t> FileSize(const std::string& path);
// Total size of the regular files below `path`.
int64_t DirectorySize(const std::string& path);

}  // namespace tessera

#endif  // TESSERA_INCLUDE_TESSERA_BASE_FILE_H_
