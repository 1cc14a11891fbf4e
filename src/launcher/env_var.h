// File: src/launcher/env_var.h
//
// One environment variable that the launcher hands to a job process
// ("KEY=VALUE", from --extra-envs, over the supervisor's stdin, one per
// line). Keys are POSIX names ([A-Za-z_][A-Za-z0-9_]*); values may hold
// anything but a newline (it would start another variable on the
// supervisor's side) or a NUL (the C environment would cut the value there).
#ifndef TESSERA_SRC_LAUNCHER_ENV_VAR_H_
#define TESSERA_SRC_LAUNCHER_ENV_VAR_H_

#include <string>
#include <string_view>
#include <utility>

#include "tessera/base/status.h"
#include "tessera/base/strings.h"

namespace tessera::launcher {

// `text` with control characters shown as \n, \r, \t or \xNN, for messages.
inline std::string EscapeForMessage(std::string_view text) {
  std::string out;
  for (char ch : text) {
    const auto u = static_cast<unsigned char>(ch);
    if (ch == '\n') {
      out += "\\n";
    } else if (ch == '\r') {
      out += "\\r";
    } else if (ch == '\t') {
      out += "\\t";
    } else if (u < 0x20 || u == 0x7f) {
      out += StrCat("\\x", "0123456789abcdef"[u >> 4], "0123456789abcdef"[u & 0xf]);
    } else {
      out.push_back(ch);
    }
  }
  return out;
}

// OK, or why KEY=VALUE cannot be passed to a job process. Thread-safe.
inline Status CheckEnvVariable(std::string_view key, std::string_view value) {
  auto first = [](char ch) {
    return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || ch == '_';
  };
  bool valid_key = !key.empty() && first(key.front());
  for (char ch : key) valid_key &= first(ch) || (ch >= '0' && ch <= '9');
  if (!valid_key) {
    return absl::InvalidArgumentError(
        StrCat("'", EscapeForMessage(key),
               "' is not a variable name (letters, digits and '_', not starting with a digit)"));
  }
  // Values are not quoted back: they may be secrets.
  if (size_t at = value.find('\n'); at != std::string_view::npos) {
    return absl::InvalidArgumentError(
        StrCat("the value of ", key, " contains a newline (character ", at + 1,
               "), which would pass further variables to every process"));
  }
  if (size_t at = value.find('\0'); at != std::string_view::npos) {
    return absl::InvalidArgumentError(
        StrCat("the value of ", key, " contains a NUL character (character ", at + 1, ")"));
  }
  return absl::OkStatus();
}

// Splits and checks "KEY=VALUE" (the value may contain '='). Thread-safe.
inline StatusOr<std::pair<std::string, std::string>> ParseEnvAssignment(std::string_view text) {
  const size_t eq = text.find('=');
  if (eq == std::string_view::npos) {
    return absl::InvalidArgumentError(StrCat("'", EscapeForMessage(text), "' is not KEY=VALUE"));
  }
  std::string key(text.substr(0, eq)), value(text.substr(eq + 1));
  RETURN_IF_ERROR(CheckEnvVariable(key, value));
  return std::pair{std::move(key), std::move(value)};
}

}  // namespace tessera::launcher

#endif  // TESSERA_SRC_LAUNCHER_ENV_VAR_H_
