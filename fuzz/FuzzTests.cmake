# Included by the main (g++) build: one CTest test per fuzz target, running
# the clang-built target (<build>/fuzz/bin/fuzz_<name>, configured by
# scripts/build.sh) for TESSERA_FUZZ_SECONDS on a temporary copy of its seed
# corpus. scripts/fuzz.sh --test first rebuilds the target under the build
# lock (a no-op when up to date), so a stale binary is never run, and fails
# when it cannot: a fuzz test is skipped only where clang++ is missing (then
# it is not even registered). TIMEOUT leaves room for that rebuild and for
# waiting on the lock while someone else builds.
find_program(TESSERA_CLANGXX clang++)
set(TESSERA_FUZZ_SECONDS 30 CACHE STRING "Seconds each fuzz target runs in the test suite")
if(TESSERA_CLANGXX)
  foreach(name wire npy text_readers partition_config ip_config)
    add_test(NAME fuzz_${name}
      COMMAND ${PROJECT_SOURCE_DIR}/scripts/fuzz.sh --test ${TESSERA_FUZZ_SECONDS} ${name})
    set_tests_properties(fuzz_${name} PROPERTIES
      LABELS "slow;fuzz" TIMEOUT 1200 SKIP_RETURN_CODE 77
      ENVIRONMENT "FUZZ_BIN_DIR=${CMAKE_BINARY_DIR}/fuzz/bin;FUZZ_BUILD_DIR=${CMAKE_BINARY_DIR}/fuzz")
  endforeach()
endif()
