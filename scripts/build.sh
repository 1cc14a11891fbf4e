#!/bin/sh
# Configures (CMake + Ninja) and builds tessera into build/ (or $BUILD_DIR):
# by default what users and `tessera demo` need (the `tessera` command, the
# example trainers, the Python package); with --tests also every test
# binary and, when clang++ is installed, the fuzz targets (the README's
# test command and CI). Then installs the Python package `tessera` into Debian's python3
# site-packages (/usr/local/lib/python3.X/dist-packages), so that
# /usr/bin/python3 imports it without PYTHONPATH. Skipped with a message when
# that folder is not writable (run as root, or set INSTALL_PYTHON=0).
#   BUILD_TYPE=Release|RelWithDebInfo|Debug   (default RelWithDebInfo: -O3 -g1)
#   SANITIZE=1                                AddressSanitizer + UBSan
# With --tests and clang++ installed it also builds the libFuzzer targets of fuzz/
# into <build>/fuzz (clang++, ASan + UBSan; CTest runs them, label "fuzz");
# FUZZ=0 skips them.
set -eu
cd "$(dirname "$0")/.."
tests=0
for arg in "$@"; do
  case "$arg" in
    --tests) tests=1 ;;
    *) echo "build.sh: unknown option '$arg' (expected --tests)" >&2; exit 2 ;;
  esac
done
build_dir="${BUILD_DIR:-build}"
sanitize=OFF
[ "${SANITIZE:-0}" = "1" ] && sanitize=ON
cmake -S . -B "$build_dir" -G Ninja \
  -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" -DTESSERA_SANITIZE="$sanitize" >/dev/null
if [ "$tests" = "1" ]; then
  cmake --build "$build_dir"
else
  # The users' targets only (a first build in minutes; the tests are most
  # of the translation units).
  cmake --build "$build_dir" --target tessera graphsage_train_dist rgcn_train embedding_train \
    tessera_python
fi
if [ "$tests" = "1" ] && [ "${FUZZ:-1}" = "1" ] && command -v clang++ >/dev/null 2>&1; then
  cmake -S . -B "$build_dir/fuzz" -G Ninja -DCMAKE_CXX_COMPILER=clang++ \
    -DCMAKE_BUILD_TYPE=Debug -DTESSERA_FUZZ=ON >/dev/null
  cmake --build "$build_dir/fuzz"
fi
if [ "${INSTALL_PYTHON:-1}" = "1" ]; then
  site=$(sed -n 's/^TESSERA_PYTHON_SITE:[A-Z]*=//p' "$build_dir/CMakeCache.txt")
  if mkdir -p "$site" 2>/dev/null && [ -w "$site" ]; then
    cmake --install "$build_dir" --component python >/dev/null
    echo "build.sh: Python package installed in $site/tessera"
  else
    echo "build.sh: $site is not writable: Python package not installed (use PYTHONPATH=$build_dir/python)"
  fi
fi
