#!/bin/sh
# Runs the libFuzzer targets of fuzz/ (built by scripts/build.sh into
# <build>/fuzz when clang++ is installed) and reports executions and crashes.
#
#   scripts/fuzz.sh [seconds] [target...]
#       Each target (default: all) for `seconds` (default 300), one after the
#       other, on a persistent corpus in $FUZZ_DIR/<target>/corpus (default
#       FUZZ_DIR=/tmp/tessera-fuzz) started from the seeds in
#       fuzz/corpus/<target>; crashing inputs go to $FUZZ_DIR/<target>/.
#       FUZZ_JOBS=N runs N targets at a time.
#   scripts/fuzz.sh --test seconds target
#       What CTest runs: first brings the target up to date (see below), then
#       runs it on a temporary copy of its seeds (removed afterwards); exit 0
#       if nothing was found, 1 on any crash, leak, UB report or timeout, or
#       when the target cannot be built; 77 (skipped) only when clang++ is
#       not installed.
#
# FUZZ_BIN_DIR: where the targets are (default build/fuzz/bin).
# FUZZ_BUILD_DIR (--test): the fuzz build tree (default: the parent of
#   FUZZ_BIN_DIR). `cmake --build FUZZ_BUILD_DIR --target fuzz_<target>`
#   runs before the target, so a binary older than the sources is never run
#   (a no-op when it is up to date). It runs under `flock TESSERA_BUILD_LOCK`
#   (default /tmp/tessera-build.lock, the lock everyone building this
#   checkout takes), so the fuzz tests that `ctest -j` starts together, and
#   anyone else's build, never run ninja in the same tree at once.
#
# Limits: -timeout=60 per input (ASan on a loaded 2-core CI machine makes a
# normal input take seconds; a real hang still exceeds it) and
# -rss_limit_mb=4096 (also ASan's per-malloc limit; 2 fuzzers at a time fit
# in a 24 GB machine with room for the rest of the suite).
# Targets: wire npy text_readers partition_config ip_config.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
bin_dir="${FUZZ_BIN_DIR:-$root/build/fuzz/bin}"
all_targets="wire npy text_readers partition_config ip_config"

# run_target NAME SECONDS WORK: fuzzes NAME with corpus WORK/corpus, scratch
# files in WORK/tmp and findings in WORK/; prints a summary line; returns the
# fuzzer's exit status.
run_target() {
  name=$1 seconds=$2 work=$3
  mkdir -p "$work/corpus" "$work/tmp"
  set +e
  # The seeds are a second, read-only corpus folder: new inputs go to the
  # first. -error_exitcode=1: libFuzzer's default (77) means "skipped" to CTest.
  TMPDIR="$work/tmp" "$bin_dir/fuzz_$name" "$work/corpus" "$root/fuzz/corpus/$name" \
    -max_total_time="$seconds" -timeout=60 -rss_limit_mb=4096 -error_exitcode=1 \
    -timeout_exitcode=1 -print_final_stats=1 -artifact_prefix="$work/" >"$work/log" 2>&1
  rc=$?
  set -e
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log" | tail -n 1)
  findings=$(find "$work" -maxdepth 1 -type f \( -name 'crash-*' -o -name 'leak-*' \
    -o -name 'timeout-*' -o -name 'oom-*' \) | wc -l)
  echo "fuzz_$name: ${runs:-?} executions in ${seconds} s, corpus $(ls "$work/corpus" | wc -l)" \
    "inputs, $findings finding(s), exit $rc"
  return $rc
}

if [ "${1:-}" = "--test" ]; then
  [ $# -eq 3 ] || { echo "usage: $0 --test seconds target" >&2; exit 2; }
  seconds=$2 name=$3
  if ! command -v clang++ >/dev/null 2>&1; then
    echo "fuzz.sh: clang++ is not installed: fuzz_$name cannot be built (skipped)"
    exit 77
  fi
  build_dir="${FUZZ_BUILD_DIR:-$(dirname "$bin_dir")}"
  if [ ! -f "$build_dir/CMakeCache.txt" ]; then
    echo "fuzz.sh: $build_dir is not configured: run scripts/build.sh --tests" \
      "(it sets up the fuzz build when clang++ is installed)"
    exit 1
  fi
  build_log="$build_dir/fuzz_$name.build.log"
  if command -v flock >/dev/null 2>&1; then
    set -- flock "${TESSERA_BUILD_LOCK:-/tmp/tessera-build.lock}"
  else
    set --
  fi
  if ! "$@" cmake --build "$build_dir" --target "fuzz_$name" >"$build_log" 2>&1; then
    echo "fuzz.sh: building fuzz_$name failed ($build_log):"
    tail -n 40 "$build_log"
    exit 1
  fi
  if [ ! -x "$bin_dir/fuzz_$name" ]; then
    echo "fuzz.sh: $bin_dir/fuzz_$name is missing after building it in $build_dir"
    exit 1
  fi
  work=$(mktemp -d "${TMPDIR:-/tmp}/tessera-fuzz-$name-XXXXXX")
  trap 'rm -rf "$work"' EXIT
  if run_target "$name" "$seconds" "$work"; then
    exit 0
  fi
  echo "--- libFuzzer output (last 60 lines) ---"
  tail -n 60 "$work/log"
  exit 1
fi

seconds=300
case "${1:-}" in
  ''|*[!0-9]*) ;;
  *) seconds=$1; shift ;;
esac
targets="${*:-$all_targets}"
fuzz_dir="${FUZZ_DIR:-/tmp/tessera-fuzz}"
jobs="${FUZZ_JOBS:-1}"
for t in $targets; do
  [ -x "$bin_dir/fuzz_$t" ] || { echo "fuzz.sh: $bin_dir/fuzz_$t not built" >&2; exit 2; }
done
# Batches of $jobs targets at a time; each batch is waited for as a whole.
status=0
pids=""
n=0
for t in $targets; do
  (run_target "$t" "$seconds" "$fuzz_dir/$t" || { echo "  log and findings: $fuzz_dir/$t"; exit 1; }) &
  pids="$pids $!"
  n=$((n + 1))
  if [ "$n" -ge "$jobs" ]; then
    for p in $pids; do wait "$p" || status=1; done
    pids=""
    n=0
  fi
done
for p in $pids; do wait "$p" || status=1; done
exit $status
