#include "tessera/base/file.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <system_error>
#include <utility>

#include "tessera/base/strings.h"

namespace tessera {
namespace fs = std::filesystem;

void UniqueFd::reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

namespace {

// `path` opened for reading, with its size. O_NONBLOCK: opening a FIFO (or
// a device) never waits for a writer; such files are refused, and a regular
// file is read as usual (the flag changes nothing for it).
StatusOr<std::pair<UniqueFd, uint64_t>> OpenRegularFile(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (fd.get() < 0) return ErrnoError(StrCat("cannot open ", path), errno);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return ErrnoError(StrCat("cannot stat ", path), errno);
  if (!S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(StrCat(path, " is not a regular file"));
  }
  const int flags = ::fcntl(fd.get(), F_GETFL);
  if (flags >= 0) (void)::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK);  // Reads block as usual.
  return std::make_pair(std::move(fd), static_cast<uint64_t>(st.st_size));
}

}  // namespace

StatusOr<MappedFile> MappedFile::Open(const std::string& path) {
  ASSIGN_OR_RETURN(auto opened, OpenRegularFile(path));
  MappedFile file;
  file.path_ = path;
  file.size_ = static_cast<size_t>(opened.second);
  if (file.size_ > 0) {
    void* addr = ::mmap(nullptr, file.size_, PROT_READ, MAP_PRIVATE, opened.first.get(), 0);
    if (addr == MAP_FAILED) return ErrnoError(StrCat("cannot map ", path), errno);
    file.data_ = static_cast<const uint8_t*>(addr);
  }
  return file;
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      path_(std::move(other.path_)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    Release();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    path_ = std::move(other.path_);
  }
  return *this;
}

MappedFile::~MappedFile() { Release(); }

void MappedFile::Release() {
  if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
  data_ = nullptr;
  size_ = 0;
}

void MappedFile::DontNeed(size_t offset, size_t length) const {
  if (data_ == nullptr || offset >= size_) return;
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  size_t begin = (offset + page - 1) / page * page;  // Only whole pages inside the range.
  size_t end = std::min(size_, offset + length) / page * page;
  if (end > begin) ::madvise(const_cast<uint8_t*>(data_) + begin, end - begin, MADV_DONTNEED);
}

StatusOr<InputFile> InputFile::Open(const std::string& path) {
  ASSIGN_OR_RETURN(auto opened, OpenRegularFile(path));
  InputFile file;
  file.fd_ = std::move(opened.first);
  file.size_ = opened.second;
  file.path_ = path;
  return file;
}

Status InputFile::ReadAt(uint64_t offset, void* out, size_t size) const {
  auto* p = static_cast<uint8_t*>(out);
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::pread(fd_.get(), p + done, size - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError(StrCat("cannot read ", path_), errno);
    }
    if (n == 0) {
      return absl::DataLossError(StrCat(path_, " shrank while it was read (", offset + done, " of ",
                                        std::max<uint64_t>(size_, offset + size), " bytes)"));
    }
    done += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

StatusOr<OutputFile> OutputFile::Create(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (fd.get() < 0) return ErrnoError(StrCat("cannot create ", path), errno);
  OutputFile file;
  file.fd_ = std::move(fd);
  file.path_ = path;
  return file;
}

Status OutputFile::Append(const void* data, size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t n = ::write(fd_.get(), p, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError(StrCat("cannot write ", path_), errno);
    }
    p += n;
    size -= static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

Status OutputFile::Resize(uint64_t size) {
  if (::ftruncate(fd_.get(), static_cast<off_t>(size)) != 0) {
    return ErrnoError(StrCat("cannot resize ", path_), errno);
  }
  return absl::OkStatus();
}

Status OutputFile::Sync() const {
  if (::fsync(fd_.get()) != 0) return ErrnoError(StrCat("cannot flush ", path_, " to disk"), errno);
  return absl::OkStatus();
}

Status OutputFile::WriteAt(uint64_t offset, const void* data, size_t size) const {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t n = ::pwrite(fd_.get(), p, size, static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError(StrCat("cannot write ", path_), errno);
    }
    p += n;
    offset += static_cast<uint64_t>(n);
    size -= static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

Status OutputFile::Close() {
  if (fd_.get() < 0) return absl::OkStatus();
  int rc = ::close(fd_.release());
  if (rc != 0) return ErrnoError(StrCat("cannot close ", path_), errno);
  return absl::OkStatus();
}

StatusOr<ScratchDir> ScratchDir::Open(const std::string& path, const std::string& prefix,
                                      bool keep) {
  ScratchDir dir;
  if (!path.empty()) {
    RETURN_IF_ERROR(MakeDirs(path));
    dir.path_ = path;
    return dir;
  }
  const char* tmpdir = std::getenv("TMPDIR");
  std::string tmpl =
      StrCat(tmpdir != nullptr && *tmpdir != '\0' ? tmpdir : "/tmp", "/", prefix, "-XXXXXX");
  if (::mkdtemp(tmpl.data()) == nullptr) {
    return ErrnoError(StrCat("cannot create a temporary folder ", tmpl), errno);
  }
  dir.path_ = tmpl;
  dir.remove_ = !keep;
  return dir;
}

ScratchDir::ScratchDir(ScratchDir&& other) noexcept
    : path_(std::move(other.path_)), remove_(std::exchange(other.remove_, false)) {}

ScratchDir& ScratchDir::operator=(ScratchDir&& other) noexcept {
  if (this != &other) {
    if (remove_) RemoveAll(path_).IgnoreError();
    path_ = std::move(other.path_);
    remove_ = std::exchange(other.remove_, false);
  }
  return *this;
}

ScratchDir::~ScratchDir() {
  if (remove_) RemoveAll(path_).IgnoreError();
}

StatusOr<std::string> ReadFileToString(const std::string& path, uint64_t max_bytes) {
  // The descriptor is closed whatever happens (the allocation may throw).
  ASSIGN_OR_RETURN(InputFile file, InputFile::Open(path));
  if (file.size() > max_bytes) {
    return absl::FailedPreconditionError(
        StrCat(path, " has ", file.size(), " bytes, more than the ", max_bytes, " allowed"));
  }
  std::string text(static_cast<size_t>(file.size()), '\0');
  RETURN_IF_ERROR(file.ReadAt(0, reinterpret_cast<uint8_t*>(text.data()), text.size()));
  return text;
}

namespace {

Status WriteAndRename(const std::string& path, std::string_view contents, bool durable) {
  std::string tmp = path + ".tmp";
  ASSIGN_OR_RETURN(OutputFile out, OutputFile::Create(tmp));
  Status st = out.Append(contents.data(), contents.size());
  if (st.ok() && durable) st = out.Sync();
  if (st.ok()) st = out.Close();
  if (st.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) {
    st = ErrnoError(StrCat("cannot rename ", tmp, " to ", path), errno);
  }
  if (!st.ok()) ::unlink(tmp.c_str());
  if (st.ok() && durable) st = SyncPath(fs::path(path).parent_path().string());
  return st;
}

}  // namespace

Status WriteFileAtomic(const std::string& path, std::string_view contents) {
  return WriteAndRename(path, contents, /*durable=*/false);
}

Status WriteFileDurably(const std::string& path, std::string_view contents) {
  return WriteAndRename(path, contents, /*durable=*/true);
}

Status SyncPath(const std::string& path) {
  const std::string name = path.empty() ? "." : path;
  // O_NONBLOCK: a FIFO at `name` must not block the open (fsync then fails).
  UniqueFd fd(::open(name.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (fd.get() < 0) return ErrnoError(StrCat("cannot open ", name), errno);
  if (::fsync(fd.get()) != 0) return ErrnoError(StrCat("cannot flush ", name, " to disk"), errno);
  return absl::OkStatus();
}

Status MakeDirs(const std::string& path) {
  std::error_code ec;
  fs::create_directories(path, ec);
  if (ec) return ErrnoError(StrCat("cannot create directory ", path), ec.value());
  if (!fs::is_directory(path, ec)) {
    return absl::FailedPreconditionError(StrCat(path, " exists and is not a directory"));
  }
  return absl::OkStatus();
}

Status RemoveAll(const std::string& path) {
  std::error_code ec;
  fs::remove_all(path, ec);
  if (ec && ec.value() != ENOTDIR) return ErrnoError(StrCat("cannot remove ", path), ec.value());
  return absl::OkStatus();
}

bool PathExists(const std::string& path) {
  std::error_code ec;
  return fs::exists(path, ec);
}

bool IsDirectory(const std::string& path) {
  std::error_code ec;
  return fs::is_directory(path, ec);
}

StatusOr<int64_t> FileSize(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return ErrnoError(StrCat("cannot stat ", path), errno);
  return static_cast<int64_t>(st.st_size);
}

int64_t DirectorySize(const std::string& path) {
  int64_t total = 0;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(path, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_regular_file(ec)) total += static_cast<int64_t>(it->file_size(ec));
  }
  return total;
}

}  // namespace tessera
