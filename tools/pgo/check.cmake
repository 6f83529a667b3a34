# The test Pgo.EveryProfiledSourceWasTrained (tests/CMakeLists.txt):
#   cmake -DLIST=<build>/tools/pgo/objects.cmake -P check.cmake
# Every PROFILE source's object of orrery_envs has its counts beside it. A
# failed training run only warns and the build goes on without a profile
# (train.cmake), so this is where the suite says so.

include(${LIST}) # USE_OBJECTS, PROFILED
set(found 0)
foreach(obj ${USE_OBJECTS})
  string(REGEX REPLACE "\\.o(bj)?$" ".gcda" gcda ${obj})
  if(EXISTS ${gcda})
    file(SIZE ${gcda} size)
    if(size GREATER 0)
      math(EXPR found "${found} + 1")
    endif()
  endif()
endforeach()
if(NOT found EQUAL PROFILED)
  message(FATAL_ERROR "ORRERY_PGO: ${found} of orrery_envs' objects have training counts, expected ${PROFILED} "
                      "(one per PROFILE source); see the build log's ORRERY_PGO warning")
endif()
message(STATUS "ORRERY_PGO: all ${PROFILED} profiled sources have training counts")
