#!/bin/sh
# The installed C++ package works out of tree: `cmake --install --component
# devel` into a temporary prefix, no installed header includes a src/ header,
# the GraphSAGE example builds there with find_package(tessera) and
# tessera::tessera, and trains Cora standalone.
#   run.sh BUILD_DIR SOURCE_DIR
set -eu
build=$1
src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT INT TERM
cmake --install "$build" --prefix "$work/prefix" --component devel >/dev/null
if grep -rn '#include "src/' "$work/prefix/include"; then
  echo "FAIL: installed headers include src/ headers" >&2
  exit 1
fi
test -f "$work/prefix/lib/cmake/tessera/tesseraConfig.cmake"
mkdir -p "$work/app/examples/graphsage"
cp "$src/tests/install/CMakeLists.txt" "$work/app/"
cp "$src/examples/common.h" "$work/app/examples/"
cp "$src/examples/graphsage/train_dist.cpp" "$work/app/examples/graphsage/"
cmake -S "$work/app" -B "$work/app/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$work/prefix" >"$work/configure.log" 2>&1 || {
  cat "$work/configure.log" >&2
  exit 1
}
cmake --build "$work/app/build"
"$build/bin/tessera" --log-level warn partition --input "$src/testdata/cora" \
  --graph-name cora --num-parts 1 --out "$work/parts"
"$work/app/build/train_dist" --graph-name cora --part-config "$work/parts/cora.json" \
  --num-epochs 2 --log-every 0 >"$work/train.log" 2>&1 || {
  cat "$work/train.log" >&2
  exit 1
}
grep "done: test accuracy" "$work/train.log"
echo "out-of-tree build against the installed package: ok"
