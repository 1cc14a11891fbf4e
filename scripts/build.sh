#!/bin/sh
# Configures (CMake + Ninja) and builds tessera into build/ (or $BUILD_DIR).
#   BUILD_TYPE=Release|RelWithDebInfo|Debug   (default RelWithDebInfo: -O3 -g)
#   SANITIZE=1                                AddressSanitizer + UBSan
set -eu
cd "$(dirname "$0")/.."
build_dir="${BUILD_DIR:-build}"
sanitize=OFF
[ "${SANITIZE:-0}" = "1" ] && sanitize=ON
cmake -S . -B "$build_dir" -G Ninja \
  -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" -DTESSERA_SANITIZE="$sanitize" >/dev/null
cmake --build "$build_dir"
