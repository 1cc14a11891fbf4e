# Distributed partitioning (src/dist_partition): MPI (Debian: libopenmpi-dev,
# openmpi-bin) and PT-Scotch's own API with 64-bit indices (libptscotch-dev's
# scotch-int64 header and libraries). Its ParMETIS-compatible wrapper
# (libscotchparmetis-dev) is not used: it ignores multi-constraint weights
# and imbalance, and SCOTCH_dgraphPart took the assign step on 600k nodes /
# 15M edges from 69 s to 19 s.
#
# The scotch-int64 libraries are linked statically: their shared forms carry
# the same sonames as Debian's default 32-bit ones (libptscotch-7.0.so...),
# and the loader would resolve the transitive ones to the 32-bit build.
find_package(MPI REQUIRED COMPONENTS CXX)
find_program(TESSERA_MPIRUN NAMES mpirun mpiexec HINTS ${MPIEXEC_EXECUTABLE} REQUIRED)
set(TESSERA_SCOTCH_INT64_DIR "/usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/scotch-int64"
  CACHE PATH "Folder of PT-Scotch's 64-bit-index static libraries")
find_path(PTSCOTCH_INCLUDE_DIR scotch-int64/ptscotch.h REQUIRED)
set(_ptscotch_libraries)
foreach(_lib ptscotch scotch ptscotcherr)
  find_library(PTSCOTCH_${_lib}_LIBRARY NAMES lib${_lib}.a
    HINTS ${TESSERA_SCOTCH_INT64_DIR} NO_DEFAULT_PATH REQUIRED)
  list(APPEND _ptscotch_libraries ${PTSCOTCH_${_lib}_LIBRARY})
endforeach()
add_library(tessera_ptscotch INTERFACE)
target_include_directories(tessera_ptscotch SYSTEM INTERFACE ${PTSCOTCH_INCLUDE_DIR})
target_link_libraries(tessera_ptscotch INTERFACE ${_ptscotch_libraries} MPI::MPI_CXX ZLIB::ZLIB m)
# The C API only (Open MPI's mpi.h would pull in its deprecated C++ bindings).
target_compile_definitions(tessera_ptscotch INTERFACE OMPI_SKIP_MPICXX MPICH_SKIP_MPICXX)

# How the tests start ranks: on this machine, over TCP loopback, more ranks
# than cores allowed, as root too (CI containers); the environment the tests
# run mpirun with is TESSERA_MPI_TEST_ENV.
set(TESSERA_MPIRUN_TEST_ARGS --oversubscribe --mca btl self,tcp --mca btl_tcp_if_include lo
  --mca oob_tcp_if_include lo)
set(TESSERA_MPI_TEST_ENV OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  OMPI_MCA_btl_vader_single_copy_mechanism=none)

# tessera_mpi_test(NAME name COMMAND binary args... RANKS 1 2 4 LABEL label [TIMEOUT s])
#   One CTest test per rank count: mpirun -np <ranks> <binary> <args>.
function(tessera_mpi_test)
  if(NOT TESSERA_BUILD_TESTS)
    return()
  endif()
  cmake_parse_arguments(ARG "" "NAME;LABEL;TIMEOUT" "COMMAND;RANKS" ${ARGN})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  foreach(_ranks ${ARG_RANKS})
    add_test(NAME ${ARG_NAME}_np${_ranks}
      COMMAND ${TESSERA_MPIRUN} -np ${_ranks} ${TESSERA_MPIRUN_TEST_ARGS} ${ARG_COMMAND})
    set_tests_properties(${ARG_NAME}_np${_ranks} PROPERTIES LABELS ${ARG_LABEL}
      TIMEOUT ${ARG_TIMEOUT} ENVIRONMENT "${TESSERA_MPI_TEST_ENV}")
  endforeach()
endfunction()
