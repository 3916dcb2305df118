# SPDX-License-Identifier: Apache-2.0
# `tpusim allreduce --backend rtl` in one process and under `mpirun -np NP` (the distributed pod,
# docs/pod.md "The distributed pod"): both must succeed and report the same cycles and link
# beats for every size, correct and matching the golden pod (tests/pod/CMakeLists.txt, label mpi).
#   TPUSIM   the tpusim binary;  MPIRUN  mpirun and its options, separated by '|'
#   NP       ranks;  ARGS  the allreduce options, separated by '|'
string(REPLACE "|" ";" args "${ARGS}")
string(REPLACE "|" ";" mpirun "${MPIRUN}")
execute_process(COMMAND ${TPUSIM} allreduce ${args} --json RESULT_VARIABLE rc1 OUTPUT_VARIABLE one
                ERROR_VARIABLE err1 TIMEOUT 300)
execute_process(COMMAND ${mpirun} -np ${NP} ${TPUSIM} allreduce ${args} --json RESULT_VARIABLE rc2
                OUTPUT_VARIABLE dist ERROR_VARIABLE err2 TIMEOUT 300)
message("one process (exit ${rc1}):\n${one}${err1}\nmpirun -np ${NP} (exit ${rc2}):\n${dist}${err2}")
if(NOT rc1 EQUAL 0 OR NOT rc2 EQUAL 0)
  message(FATAL_ERROR "expected both runs to exit 0")
endif()
string(JSON ranks GET "${dist}" ranks)
if(NOT ranks EQUAL NP)
  message(FATAL_ERROR "the mpirun run reports ranks = ${ranks}, expected ${NP}")
endif()
foreach(key correct matches_golden)
  string(JSON v GET "${dist}" ${key})
  if(NOT v)
    message(FATAL_ERROR "mpirun run: ${key} = ${v}")
  endif()
endforeach()
string(JSON n LENGTH "${one}" results)
string(JSON n2 LENGTH "${dist}" results)
if(NOT n EQUAL n2 OR n EQUAL 0)
  message(FATAL_ERROR "results: ${n} sizes in one process, ${n2} under mpirun")
endif()
math(EXPR last "${n} - 1")
foreach(i RANGE ${last})
  foreach(key bytes cycles link_beats correct matches_golden)
    string(JSON a GET "${one}" results ${i} ${key})
    string(JSON b GET "${dist}" results ${i} ${key})
    if(NOT "${a}" STREQUAL "${b}")
      message(FATAL_ERROR "size ${i}: ${key} ${a} in one process, ${b} over ${NP} ranks")
    endif()
  endforeach()
endforeach()
message("identical: ${n} sizes")
