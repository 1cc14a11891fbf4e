# tessera_cc_library(NAME name SRCS ... DEPS ...)
#   One static library per module. Sources include each other as "src/<module>/<file>.h".
function(tessera_cc_library)
  cmake_parse_arguments(ARG "" "NAME" "SRCS;DEPS" ${ARGN})
  add_library(${ARG_NAME} STATIC ${ARG_SRCS})
  # In the tree: "src/..." and "tessera/..." (include/); installed: only
  # <prefix>/include, which holds tessera/ (the public headers).
  target_include_directories(${ARG_NAME} PUBLIC
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}> $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
    $<INSTALL_INTERFACE:include>)
  target_link_libraries(${ARG_NAME} PUBLIC ${ARG_DEPS})
  set_property(GLOBAL APPEND PROPERTY TESSERA_LIBRARIES ${ARG_NAME})
endfunction()

# tessera_cc_test(NAME name SRCS ... DEPS ... LABEL unit|integration|slow [TIMEOUT s])
#   A GoogleTest binary; each test case becomes a CTest test carrying LABEL.
function(tessera_cc_test)
  if(NOT TESSERA_BUILD_TESTS)
    return()
  endif()
  cmake_parse_arguments(ARG "" "NAME;LABEL;TIMEOUT" "SRCS;DEPS" ${ARGN})
  if(NOT ARG_LABEL)
    set(ARG_LABEL unit)
  endif()
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  add_executable(${ARG_NAME} ${ARG_SRCS})
  target_link_libraries(${ARG_NAME} PRIVATE ${ARG_DEPS} GTest::gmock GTest::gtest_main)
  target_compile_definitions(${ARG_NAME} PRIVATE
    TESSERA_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
    TESSERA_BINARY_DIR="${CMAKE_BINARY_DIR}")
  gtest_discover_tests(${ARG_NAME}
    DISCOVERY_TIMEOUT 60
    PROPERTIES LABELS ${ARG_LABEL} TIMEOUT ${ARG_TIMEOUT})
endfunction()

# tessera_reuse_torch_pch(target)
#   Compiles `target` with tessera_dist's precompiled LibTorch headers. The
#   libraries are position-independent (they are also linked into the Python
#   extension), so the header was compiled with -fPIC; an executable must use
#   -fPIC too (not -fPIE), or GCC ignores the header (-Winvalid-pch) and every
#   LibTorch translation unit compiles from scratch.
function(tessera_reuse_torch_pch target)
  if(NOT TARGET ${target})
    return()  # A test target when TESSERA_BUILD_TESTS is OFF.
  endif()
  target_precompile_headers(${target} REUSE_FROM tessera_dist)
  get_target_property(_type ${target} TYPE)
  if(_type STREQUAL "EXECUTABLE")
    set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE OFF)
    target_compile_options(${target} PRIVATE -fPIC)
  endif()
endfunction()
