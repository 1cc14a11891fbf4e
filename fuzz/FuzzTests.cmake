# Included by the main (g++) build: one CTest test per fuzz target, running
# the clang-built target (<build>/fuzz/bin/fuzz_<name>, made by
# scripts/build.sh) for TESSERA_FUZZ_SECONDS on a temporary copy of its seed
# corpus. Skipped (not failed) when that binary was not built.
find_program(TESSERA_CLANGXX clang++)
set(TESSERA_FUZZ_SECONDS 30 CACHE STRING "Seconds each fuzz target runs in the test suite")
if(TESSERA_CLANGXX)
  foreach(name wire npy text_readers partition_config ip_config)
    add_test(NAME fuzz_${name}
      COMMAND ${PROJECT_SOURCE_DIR}/scripts/fuzz.sh --test ${TESSERA_FUZZ_SECONDS} ${name})
    set_tests_properties(fuzz_${name} PROPERTIES
      LABELS "slow;fuzz" TIMEOUT 180 SKIP_RETURN_CODE 77
      ENVIRONMENT "FUZZ_BIN_DIR=${CMAKE_BINARY_DIR}/fuzz/bin")
  endforeach()
endif()
