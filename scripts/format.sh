#!/bin/sh
# Applies clang-format to every C++ file (--check: only report differences).
set -eu
cd "$(dirname "$0")/.."
files=$(git ls-files '*.h' '*.cc' '*.cpp')
if [ "${1:-}" = "--check" ]; then
  exec clang-format --dry-run --Werror $files
fi
exec clang-format -i $files
