# The x86-64 instruction-set level of Orrery's host code (the CPU backend, the
# envs, the physics), as GCC's and Clang's -march psABI names.
#
# ORRERY_HOST_ARCH:
#   auto (default)  the highest of x86-64-v3 (AVX2, BMI2; FMA kept off) and x86-64-v2
#                   (SSE4.2, POPCNT) that the building machine runs: for a build
#                   that runs where it was built (pip install ., tools/main.sh).
#   x86-64-v2, x86-64-v3, ...  that level: for binaries made for other machines
#                   (tools/build_wheel.sh names x86-64-v2).
#   "" (empty)      the compiler's default (x86-64: SSE2).
# Every level gives the same bits: the level comes with -mno-fma, so no fused
# multiply-add can reach the float code (-ffp-contract=off alone does not do it
# at x86-64-v3: GCC 12's vectoriser turned the quaternion product into
# vfmaddsub231ps, and the CPU's pinned hashes of hide_and_seek and the crowd
# changed), and no other instruction a level adds rounds differently (the
# pinned hashes pass at v2 and at v3 without FMA; tests/CMakeLists.txt's
# HostCpu.NoFusedMultiplyAdd checks the CLI's machine code). On the 2-core
# development machine hide_and_seek's CPU step ran +2.5 to +3.8 % at v2 and
# +6.4 to +7.6 % at v3 against SSE2 (docs/perf-notes.md row 110).
# On aarch64 nothing is set here: FMA is in its base set, with no -mno-fma, and
# -ffp-contract=off keeps GCC 12 from fusing there (HostCpu.NoFusedMultiplyAddOnArm
# cross-compiles the float-heavy units and counts; see tests/check_no_fma_arm.sh).
# A build at a level refuses to start on a CPU below it, with a message
# (engine/host_cpu.cpp), rather than stopping on an illegal instruction.
# Sets ORRERY_HOST_ARCH_LEVEL to the level used ("" for none) and
# ORRERY_HOST_FLOAT_OPTIONS to -mno-fma on x86-64 at any level, which the plugin
# SDK hands on to out-of-tree envs (envs/CMakeLists.txt) beside the float options.

set(ORRERY_HOST_ARCH "auto" CACHE STRING
    "x86-64 level of the host code: auto (the building machine's, v2 or v3), a -march level name, or empty for the compiler's default")
set(ORRERY_HOST_ARCH_LEVEL "")
set(ORRERY_HOST_FLOAT_OPTIONS "")
if(NOT CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$"
   OR NOT CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
  return()
endif()
set(ORRERY_HOST_FLOAT_OPTIONS -mno-fma)
add_compile_options($<$<COMPILE_LANGUAGE:C,CXX>:-mno-fma>)

set(_level "${ORRERY_HOST_ARCH}")
if(_level STREQUAL "auto")
  set(_level "")
  if(NOT CMAKE_CROSSCOMPILING)
    try_run(_run _built ${CMAKE_BINARY_DIR}/host_arch_probe
            SOURCES ${CMAKE_CURRENT_LIST_DIR}/host_arch_probe.c
            RUN_OUTPUT_VARIABLE _found)
    string(STRIP "${_found}" _found)
    if(_built AND _run EQUAL 0 AND _found MATCHES "^[23]$")
      set(_level "x86-64-v${_found}")
    endif()
  endif()
endif()
if(_level STREQUAL "")
  message(STATUS "Orrery host code: the compiler's default instruction set")
  return()
endif()

include(CheckCXXCompilerFlag)
string(MAKE_C_IDENTIFIER "ORRERY_MARCH_${_level}" _flag_var)
check_cxx_compiler_flag("-march=${_level}" ${_flag_var})
if(NOT ${_flag_var})
  if(ORRERY_HOST_ARCH STREQUAL "auto")
    message(STATUS "Orrery host code: ${CMAKE_CXX_COMPILER} has no -march=${_level}; the compiler's default")
    return()
  endif()
  message(FATAL_ERROR "ORRERY_HOST_ARCH=${ORRERY_HOST_ARCH}: ${CMAKE_CXX_COMPILER} does not take -march=${_level}")
endif()
add_compile_options($<$<COMPILE_LANGUAGE:C,CXX>:-march=${_level}>)
set(ORRERY_HOST_ARCH_LEVEL "${_level}")
message(STATUS "Orrery host code: -march=${_level} -mno-fma (ORRERY_HOST_ARCH=${ORRERY_HOST_ARCH})")
