# SPDX-License-Identifier: Apache-2.0
cmake_minimum_required(VERSION 3.16)  # IN_LIST
# Plain `ctest` in BUILD_DIR, `ctest -L rtl` and `ctest -L slow` list no test labelled slow;
# with TPU_SLOW_TESTS=1, `ctest -L slow` lists them (at least one: synthesis or the long random
# shards are always defined).
function(listed out_var)
  execute_process(COMMAND ${ARGN} WORKING_DIRECTORY ${BUILD_DIR} RESULT_VARIABLE rc
                  OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0 AND NOT out MATCHES "Total Tests: 0")
    message(FATAL_ERROR "${ARGN}: exit ${rc}\n${out}${err}")
  endif()
  string(REGEX MATCHALL "Test +#[0-9]+: [^\n]*" lines "${out}")
  set(names "")
  foreach(l IN LISTS lines)
    string(REGEX REPLACE "^Test +#[0-9]+: " "" name "${l}")
    list(APPEND names "${name}")
  endforeach()
  set(${out_var} "${names}" PARENT_SCOPE)
endfunction()

listed(slow ${CMAKE_COMMAND} -E env TPU_SLOW_TESTS=1 ${CTEST} -N -L "^slow$")
list(LENGTH slow n_slow)
if(n_slow EQUAL 0)
  message(FATAL_ERROR "TPU_SLOW_TESTS=1 ctest -N -L slow lists no test")
endif()
foreach(selection "" "-L;rtl" "-L;^slow$" "-R;random_long|synth|cnn_full")
  listed(picked ${CMAKE_COMMAND} -E env --unset=TPU_SLOW_TESTS ${CTEST} -N ${selection})
  foreach(name IN LISTS slow)
    if(name IN_LIST picked)
      message(FATAL_ERROR "ctest -N ${selection} selects the slow test ${name}")
    endif()
  endforeach()
  list(LENGTH picked n)
  message("ctest -N ${selection}: ${n} tests, none of the ${n_slow} slow ones")
endforeach()
