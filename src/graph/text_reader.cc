#include "src/graph/text_reader.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "tessera/base/file.h"
#include "tessera/base/strings.h"

namespace tessera {
namespace {
// The buffer starts small (many inputs are tiny: OGB split files, configs)
// and doubles before every read up to kChunk, the read size for large files.
constexpr size_t kFirstChunk = 32 << 10;
constexpr size_t kChunk = 4 << 20;
}  // namespace

StatusOr<std::unique_ptr<TextReader>> TextReader::Open(const std::string& path) {
  // Opened as every input is (a FIFO or device is refused, never waited on),
  // then handed to zlib.
  ASSIGN_OR_RETURN(InputFile input, InputFile::Open(path));
  const int fd = input.Release();
  errno = 0;
  gzFile file = gzdopen(fd, "rb");
  if (file == nullptr) {
    const int err = errno != 0 ? errno : ENOMEM;
    ::close(fd);
    return ErrnoError(StrCat("cannot open ", path), err);
  }
  gzbuffer(file, 1 << 20);
  return std::unique_ptr<TextReader>(new TextReader(file, path));
}

TextReader::TextReader(gzFile file, std::string path) : file_(file), path_(std::move(path)) {
  buffer_.resize(kFirstChunk);
}

TextReader::~TextReader() { gzclose(file_); }

Status TextReader::Fill() {
  // Move the unconsumed tail to the front, grow if one line fills the buffer.
  size_t tail = end_ - begin_;
  if (begin_ > 0) std::memmove(buffer_.data(), buffer_.data() + begin_, tail);
  begin_ = 0;
  end_ = tail;
  if (end_ == buffer_.size() || buffer_.size() < kChunk) buffer_.resize(buffer_.size() * 2);
  int n = gzread(file_, buffer_.data() + end_, static_cast<unsigned>(buffer_.size() - end_));
  int errnum = 0;
  const char* msg = gzerror(file_, &errnum);
  if (n < 0 || (errnum != Z_OK && errnum != Z_STREAM_END)) {
    return absl::DataLossError(StrCat(path_, ": corrupt or truncated gzip data after line ",
                                      line_number_, " (", msg ? msg : "zlib error", ")"));
  }
  if (n == 0) eof_ = true;
  end_ += static_cast<size_t>(n);
  return absl::OkStatus();
}

StatusOr<bool> TextReader::NextLine(std::string_view* line) {
  while (true) {
    const char* start = buffer_.data() + begin_;
    const void* nl = std::memchr(start, '\n', end_ - begin_);
    if (nl != nullptr) {
      size_t len = static_cast<const char*>(nl) - start;
      begin_ += len + 1;
      if (len > 0 && start[len - 1] == '\r') --len;
      *line = std::string_view(start, len);
      ++line_number_;
      return true;
    }
    if (eof_) {
      if (begin_ == end_) return false;
      size_t len = end_ - begin_;  // Last line without a newline.
      begin_ = end_;
      if (len > 0 && start[len - 1] == '\r') --len;
      *line = std::string_view(start, len);
      ++line_number_;
      return true;
    }
    RETURN_IF_ERROR(Fill());
  }
}

Status TextReader::LineError(std::string_view message) const {
  return absl::InvalidArgumentError(StrCat(path_, ":", line_number_, ": ", message));
}

void SplitFields(std::string_view line, std::vector<std::string_view>* fields) {
  fields->clear();
  size_t i = 0;
  const size_t n = line.size();
  bool comma = line.find_first_of(",\t") != std::string_view::npos;
  while (i <= n) {
    if (!comma) {
      while (i < n && line[i] == ' ') ++i;
      if (i == n) break;
    }
    size_t j = i;
    while (j < n && line[j] != ',' && line[j] != '\t' && (comma || line[j] != ' ')) ++j;
    fields->push_back(line.substr(i, j - i));
    i = j + 1;
  }
}

}  // namespace tessera
