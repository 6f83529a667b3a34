# The training run of ORRERY_PGO (tools/pgo/CMakeLists.txt), as a CMake script:
#   cmake -DCLI=<orrery_pgo_cli> -DLIST=<objects.cmake> -DSTAMP=<file> -P train.cmake
# Steps the profiled envs on one CPU thread with the instrumented CLI, then
# copies each instrumented object's counts beside the matching orrery_envs object.

foreach(var CLI LIST STAMP)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "train.cmake: -D${var}=... is required")
  endif()
endforeach()
include(${LIST}) # GEN_OBJECTS, USE_OBJECTS: the two targets' objects, source by source
list(LENGTH GEN_OBJECTS n_gen)
list(LENGTH USE_OBJECTS n_use)
if(NOT n_gen EQUAL n_use OR n_gen EQUAL 0)
  message(FATAL_ERROR "train.cmake: ${n_gen} instrumented objects against ${n_use} in orrery_envs; "
                      "the two targets must list the same sources")
endif()

# Counts add up across runs of the same binary: start from none.
foreach(obj ${GEN_OBJECTS})
  string(REGEX REPLACE "\\.o(bj)?$" ".gcda" gcda ${obj})
  file(REMOVE ${gcda})
endforeach()

# What the users run of the profiled envs: each default game at a few hundred
# worlds, the physics scenes the benchmarks measure, the gpu_hideseek variant.
set(runs
    "tag --worlds 256 --steps 100"
    "hide_and_seek --worlds 256 --steps 100"
    "hide_and_seek --worlds 64 --steps 100 --opt min_boxes=6"
    "hide_and_seek --worlds 64 --steps 50 --opt variant=gpu_hideseek"
    "physics_scenes --worlds 64 --steps 100 --opt scene=crowd"
    "physics_scenes --worlds 64 --steps 100")
foreach(run ${runs})
  separate_arguments(args UNIX_COMMAND "bench ${run} --device cpu --threads 1")
  execute_process(COMMAND ${CLI} ${args} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    # The build goes on without a profile, so the tests that show the fault still build.
    message(WARNING "ORRERY_PGO: the training run `orrery_pgo_cli bench ${run} --device cpu --threads 1` "
                    "failed (${rc}); the envs compile without a profile this time:\n${out}")
    set(failed TRUE)
    break()
  endif()
endforeach()

foreach(gen use IN ZIP_LISTS GEN_OBJECTS USE_OBJECTS)
  string(REGEX REPLACE "\\.o(bj)?$" ".gcda" gen_gcda ${gen})
  string(REGEX REPLACE "\\.o(bj)?$" ".gcda" use_gcda ${use})
  if(EXISTS ${gen_gcda} AND NOT failed)
    get_filename_component(dir ${use_gcda} DIRECTORY)
    file(MAKE_DIRECTORY ${dir})
    file(COPY_FILE ${gen_gcda} ${use_gcda})
  else()
    file(REMOVE ${use_gcda}) # no counts: that object compiles as without a profile
  endif()
endforeach()
file(TOUCH ${STAMP})
