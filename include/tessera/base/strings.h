// File: include/tessera/base/strings.h
//
// String helpers built on std and fmt. (Debian 12's Abseil has its own
// absl::string_view that does not mix with std::string_view, so tessera does
// not use absl/strings.)
#ifndef TESSERA_INCLUDE_TESSERA_BASE_STRINGS_H_
#define TESSERA_INCLUDE_TESSERA_BASE_STRINGS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "absl/strings/string_view.h"
#include "fmt/format.h"
#include "fmt/ranges.h"

namespace tessera {
namespace strings_internal {

inline void Append(std::string* out, std::string_view piece) { out->append(piece); }
inline void Append(std::string* out, const char* piece) { out->append(piece); }
inline void Append(std::string* out, const std::string& piece) { out->append(piece); }
inline void Append(std::string* out, absl::string_view piece) {
  out->append(piece.data(), piece.size());
}
inline void Append(std::string* out, char c) { out->push_back(c); }
template <typename T, typename = std::enable_if_t<std::is_arithmetic_v<T>>>
void Append(std::string* out, T value) {
  fmt::format_to(std::back_inserter(*out), "{}", value);
}

}  // namespace strings_internal

// Concatenates strings, string views, characters and numbers.
template <typename... Args>
std::string StrCat(const Args&... args) {
  std::string out;
  (strings_internal::Append(&out, args), ...);
  return out;
}

// "a, b, c" for any range whose elements fmt can print.
template <typename Range>
std::string StrJoin(const Range& range, std::string_view separator) {
  return fmt::format("{}", fmt::join(range, separator));
}

std::string_view StripWhitespace(std::string_view text);
std::vector<std::string_view> SplitString(std::string_view text, char separator);
// Whole-field number parsers (surrounding whitespace allowed); false on junk,
// overflow or an empty field.
bool ParseInt64(std::string_view text, int64_t* value);
bool ParseFloat(std::string_view text, float* value);

}  // namespace tessera

#endif  // TESSERA_INCLUDE_TESSERA_BASE_STRINGS_H_
