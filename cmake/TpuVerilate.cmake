# SPDX-License-Identifier: Apache-2.0
# tpu_verilate(<target> PREFIX <prefix> SOURCES <files...> ...): Verilator's verilate() (same
# arguments), made safe for an existing build directory.
#
# verilate() runs Verilator at configure time to learn the list of C++ files it generates, and
# at build time again when an RTL source changes. If that change alters the list (a module
# Verilator now emits as its own class, a function split into a new file), the build that
# notices it still compiles the old list: the link fails with undefined Vtop_* symbols until
# CMake reruns. Here CMake reruns whenever an RTL source changes (CMAKE_CONFIGURE_DEPENDS), and
# if a source is newer than the file list verilate() read last time, that list is dropped so
# verilate() runs Verilator again at configure time and the build compiles the new list.
# (tests/build/verilate_rebuild_test.cmake changes the file list under an existing build.)
function(tpu_verilate target)
  cmake_parse_arguments(TV "" "PREFIX;DIRECTORY" "SOURCES" ${ARGN})
  if(NOT TV_PREFIX)
    message(FATAL_ERROR "tpu_verilate(${target}): PREFIX is required (the Verilated class name)")
  endif()
  set(sources "")
  foreach(src IN LISTS TV_SOURCES)
    get_filename_component(src "${src}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    list(APPEND sources "${src}")
  endforeach()
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${sources})
  get_target_property(bindir ${target} BINARY_DIR)
  get_target_property(name ${target} NAME)
  set(vdir "${bindir}/CMakeFiles/${name}.dir/${TV_PREFIX}.dir")  # as verilate() computes it
  if(TV_DIRECTORY)
    set(vdir "${TV_DIRECTORY}")
  endif()
  set(list_file "${vdir}/${TV_PREFIX}_copy.cmake")
  if(EXISTS "${list_file}")
    foreach(src IN LISTS sources)
      if("${src}" IS_NEWER_THAN "${list_file}")
        file(REMOVE "${list_file}")
        break()
      endif()
    endforeach()
  endif()
  verilate(${target} ${ARGN})
endfunction()
