// File: src/graph/text_reader.h
//
// Line-by-line reading of text files that may be gzip-compressed (detected by
// content, not by name), with line numbers for error messages, plus the
// field splitting the CSV readers share. A truncated or corrupt gzip stream is
// an error naming the file, never silently shortened data.
#ifndef TESSERA_SRC_GRAPH_TEXT_READER_H_
#define TESSERA_SRC_GRAPH_TEXT_READER_H_

#include <zlib.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/base/status.h"

namespace tessera {

class TextReader {
 public:
  static StatusOr<std::unique_ptr<TextReader>> Open(const std::string& path);
  ~TextReader();
  TextReader(const TextReader&) = delete;
  TextReader& operator=(const TextReader&) = delete;

  // Sets *line to the next line without its "\n" or "\r\n" (valid until the
  // next call). Returns false at the end of the file.
  StatusOr<bool> NextLine(std::string_view* line);
  const std::string& path() const { return path_; }
  // "<path>:<line>: <message>" as an InvalidArgument error.
  Status LineError(std::string_view message) const;

 private:
  TextReader(gzFile file, std::string path);
  Status Fill();

  gzFile file_;
  std::string path_;
  std::vector<char> buffer_;
  size_t begin_ = 0;  // Unconsumed data is buffer_[begin_, end_).
  size_t end_ = 0;
  bool eof_ = false;
  int64_t line_number_ = 0;
};

// Splits a line on commas, tabs or runs of spaces.
void SplitFields(std::string_view line, std::vector<std::string_view>* fields);

}  // namespace tessera

#endif  // TESSERA_SRC_GRAPH_TEXT_READER_H_
