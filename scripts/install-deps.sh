#!/bin/sh
# Installs the Debian 12 packages tessera needs to build and test, and nothing
# else. Idempotent and non-interactive: packages already present are skipped,
# and apt is not touched at all when everything is there.
#
#   scripts/install-deps.sh           build + test dependencies
#   scripts/install-deps.sh --bench   also python3-numpy (shared/tools/gen_graph.py)
#   scripts/install-deps.sh --dev     the same (clang-format is now always installed)
set -eu

# clang, libclang-rt-14-dev (libFuzzer and the sanitizer runtimes; only a
# Recommends of clang): the fuzz targets in fuzz/ (scripts/build.sh, CTest).
#
# libopenmpi-dev, openmpi-bin, libptscotch-dev: distributed partitioning
# (`tessera mpi-partition`, src/dist_partition): MPI and PT-Scotch's own API
# with 64-bit indices (its ParMETIS wrapper, libscotchparmetis-dev, is not
# used; cmake/TesseraMpi.cmake says why).
#
# clang-format, python3-pyflakes: the test command checks the formatting
# (scripts/format.sh --check) and lints the Python (pyflakes) before building.
#
# python3-networkx: `Graph.metagraph()` returns a networkx graph, as DGL's
# (DGL itself requires networkx).
#
# libopenblas0-openmp: libtorch-dev pulls in the reference BLAS (netlib
# libblas3), whose GEMM made a GraphSAGE step on CiteSeer 94 ms; OpenBLAS
# (OpenMP build, the same libgomp as LibTorch) takes over libblas.so.3
# through Debian's alternatives and makes it 6.4 ms. No code change.

packages="g++ cmake ninja-build ccache pkg-config
  libabsl-dev libspdlog-dev libfmt-dev nlohmann-json3-dev libcli11-dev
  zlib1g-dev libmetis-dev
  libzmq3-dev cppzmq-dev libprotobuf-dev protobuf-compiler
  libtorch-dev libopenblas0-openmp libgloo-dev iproute2 openssh-client openssh-server
  libopenmpi-dev openmpi-bin libptscotch-dev
  libgtest-dev libgmock-dev clang libclang-rt-14-dev
  python3-dev python3-torch pybind11-dev python3-numpy python3-pytest
  python3-networkx clang-format python3-pyflakes"
for arg in "$@"; do
  case "$arg" in
    --bench) packages="$packages python3-numpy" ;;
    --dev) ;;
    *) echo "install-deps.sh: unknown option '$arg' (expected --bench or --dev)" >&2; exit 2 ;;
  esac
done

missing=""
for p in $packages; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing="$missing $p"
  fi
done
if [ -z "$missing" ]; then
  echo "install-deps.sh: all packages present"
  exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
  as_root=""
elif command -v sudo >/dev/null 2>&1; then
  as_root="sudo"
else
  echo "install-deps.sh: missing packages:$missing; run as root to install them" >&2
  exit 1
fi
echo "install-deps.sh: installing$missing"
export DEBIAN_FRONTEND=noninteractive
$as_root apt-get update -q
# shellcheck disable=SC2086
$as_root apt-get install -y -q --no-install-recommends $missing
