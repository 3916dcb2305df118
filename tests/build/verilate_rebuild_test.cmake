# SPDX-License-Identifier: Apache-2.0
# An existing build directory keeps working after an RTL change that alters the list of files
# Verilator generates (cmake/TpuVerilate.cmake). Run with
#   cmake -DTPU_SOURCE_DIR=<repo> -DWORK=<scratch dir> -P verilate_rebuild_test.cmake
# Builds a one-module design, then adds a submodule that Verilator emits as its own class (new
# generated files) and builds the same directory once more: that build must succeed and the
# program must see the new logic.
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}/src")
file(WRITE "${WORK}/src/CMakeLists.txt" "cmake_minimum_required(VERSION 3.16)
project(vrebuild CXX)
set(CMAKE_CXX_STANDARD 17)
find_package(verilator REQUIRED HINTS \$ENV{VERILATOR_ROOT} /usr/share/verilator)
include(${TPU_SOURCE_DIR}/cmake/TpuVerilate.cmake)
add_executable(vrebuild main.cpp)
tpu_verilate(vrebuild PREFIX Vtop TOP_MODULE top SOURCES \${CMAKE_CURRENT_SOURCE_DIR}/top.sv)
")
file(WRITE "${WORK}/src/main.cpp" "#include <cstdio>
#include \"Vtop.h\"
#include \"verilated.h\"
int main() {
  Vtop t;
  for (int i = 0; i < 3; ++i) { t.clk = 0; t.eval(); t.clk = 1; t.eval(); }
  std::printf(\"q=%d\\\\n\", int(t.q));
  return 0;
}
")
file(WRITE "${WORK}/src/top.sv" "module top(input logic clk, output logic [7:0] q);
  always_ff @(posedge clk) q <= 8'd0;
endmodule
")

function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (exit ${rc}):\n${out}\n${err}")
  endif()
  set(run_out "${out}" PARENT_SCOPE)
endfunction()

run("configure" ${CMAKE_COMMAND} -S "${WORK}/src" -B "${WORK}/build")
run("first build" ${CMAKE_COMMAND} --build "${WORK}/build")
run("first program" "${WORK}/build/vrebuild")
if(NOT run_out MATCHES "q=0")
  message(FATAL_ERROR "first program: expected q=0, got: ${run_out}")
endif()

# Make sure the new source is seen as newer than everything generated from the old one.
execute_process(COMMAND ${CMAKE_COMMAND} -E sleep 1.1)
file(WRITE "${WORK}/src/top.sv" "module counter(input logic clk, output logic [7:0] q);
  /*verilator no_inline_module*/
  always_ff @(posedge clk) q <= q + 8'd1;
endmodule
module top(input logic clk, output logic [7:0] q);
  counter u(.clk(clk), .q(q));
endmodule
")
run("the build after the RTL change (no reconfigure, no clean)" ${CMAKE_COMMAND} --build "${WORK}/build")
file(GLOB new_class "${WORK}/build/CMakeFiles/vrebuild.dir/Vtop.dir/Vtop_counter*.cpp")
if(NOT new_class)
  message(FATAL_ERROR "Verilator did not generate a Vtop_counter class: the test no longer changes the file list")
endif()
run("second program" "${WORK}/build/vrebuild")
if(NOT run_out MATCHES "q=3")
  message(FATAL_ERROR "second program: expected q=3 (the counter after 3 clocks), got: ${run_out}")
endif()
message("ok: the existing build directory rebuilt after the generated file list changed")
