# SPDX-License-Identifier: Apache-2.0
# Install the build into WORK_DIR/prefix, build examples/external against it, run it.
set(prefix ${WORK_DIR}/prefix)
set(ext ${WORK_DIR}/external-build)
file(REMOVE_RECURSE ${prefix} ${ext})
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message("$ ${ARGN}\n${out}${err}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc})")
  endif()
endfunction()
run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/examples/external -B ${ext} -DCMAKE_PREFIX_PATH=${prefix}
    -DCMAKE_BUILD_TYPE=Release)
run(${CMAKE_COMMAND} --build ${ext})
run(${ext}/hello_matmul rtl)
