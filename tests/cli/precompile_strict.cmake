# Issue 12, acceptance 4: `precompile` with a layer's codegen options fills
# exactly what that layer loads. Precompile into a fresh cache with OPTIONS,
# then `moejit run` with RUN_OPTIONS under MOEJIT_NO_JIT=1 (a miss is an
# error): exit 0 only if run found every kernel it needed.
#   cmake -DMOEJIT=... -DDIR=... -DOPTIONS="--input-bf16" -DRUN_OPTIONS="--input-bf16" -P precompile_strict.cmake
foreach(var MOEJIT DIR)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "precompile_strict.cmake: -D${var}=... is required")
  endif()
endforeach()
separate_arguments(options UNIX_COMMAND "${OPTIONS}")
separate_arguments(run_options UNIX_COMMAND "${RUN_OPTIONS}")
file(REMOVE_RECURSE ${DIR})
execute_process(COMMAND ${CMAKE_COMMAND} -E env MOEJIT_CACHE_DIR=${DIR}
                        ${MOEJIT} precompile --model glm5.2 --ranks 1 --batches 8 --targets sm_90a ${options}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "precompile ${OPTIONS} failed (${rc}):\n${out}\n${err}")
endif()
message(STATUS "precompile ${OPTIONS}:\n${out}")
# Without a GPU, run compiles (here: must find) what a layer on the h200 profile loads.
execute_process(COMMAND ${CMAKE_COMMAND} -E env MOEJIT_CACHE_DIR=${DIR} MOEJIT_NO_JIT=1 MOEJIT_FORCE_NO_DRIVER=1
                        ${MOEJIT} run --model glm5.2 --batch 8 --seed 1 ${run_options}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message(STATUS "MOEJIT_NO_JIT=1 moejit run ${RUN_OPTIONS}: exit ${rc}\n${out}\n${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the strict run needed a kernel the precompile did not build")
endif()
