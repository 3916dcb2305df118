# Runs up to two commands and checks what they did (used by tests/cli/CMakeLists.txt):
#   CMD, CMD2         the commands, arguments separated by '|'; CMD2 runs only if CMD did
#   EXIT              expected exit code of CMD (default 0); CMD2 must exit 0
#   REGEX             regular expression the combined stdout + stderr of CMD must match
#   ONE_LINE_STDERR   if ON, stderr of CMD must be exactly one line
#   COMPARE           'a|b': afterwards files a and b must be identical
#   EXISTS            a file that must exist afterwards
# A command that runs longer than 120 s fails (never a hang).
if(NOT DEFINED EXIT)
  set(EXIT 0)
endif()
string(REPLACE "|" ";" cmd "${CMD}")
execute_process(COMMAND ${cmd} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err
                TIMEOUT 120)
message("exit code: ${rc}\n--- stdout:\n${out}--- stderr:\n${err}---")
if(NOT "${rc}" STREQUAL "${EXIT}")
  message(FATAL_ERROR "expected exit code ${EXIT}, got ${rc}")
endif()
if(DEFINED REGEX AND NOT "${out}${err}" MATCHES "${REGEX}")
  message(FATAL_ERROR "the output does not match: ${REGEX}")
endif()
if(ONE_LINE_STDERR)
  string(REGEX MATCHALL "\n" newlines "${err}")
  list(LENGTH newlines lines)
  if(NOT lines EQUAL 1)
    message(FATAL_ERROR "stderr should be one line, it has ${lines}")
  endif()
endif()
if(DEFINED CMD2)
  string(REPLACE "|" ";" cmd2 "${CMD2}")
  execute_process(COMMAND ${cmd2} RESULT_VARIABLE rc2 OUTPUT_VARIABLE out2 ERROR_VARIABLE err2
                  TIMEOUT 120)
  message("second command exit code: ${rc2}\n${out2}${err2}")
  if(NOT rc2 EQUAL 0)
    message(FATAL_ERROR "the second command failed")
  endif()
endif()
if(DEFINED COMPARE)
  string(REPLACE "|" ";" files "${COMPARE}")
  list(GET files 0 a)
  list(GET files 1 b)
  execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${a} ${b} RESULT_VARIABLE same)
  if(NOT same EQUAL 0)
    message(FATAL_ERROR "${a} and ${b} differ")
  endif()
endif()
if(DEFINED EXISTS AND NOT EXISTS "${EXISTS}")
  message(FATAL_ERROR "${EXISTS} was not written")
endif()
