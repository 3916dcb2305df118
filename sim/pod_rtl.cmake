# SPDX-License-Identifier: Apache-2.0
# The pod of Verilated RTL chips (sim/pod_rtl.h, docs/pod.md "The RTL pod"), included by
# sim/CMakeLists.txt. tpu_add_pod_rtl(<target> N VMEM_ROWS LINKS WIDTH) builds a static library
# with tpu_core Verilated as plain C++ (class Vtpu_pod_core: no SystemC, so it links next to
# the simulator's chip and several instances live in one process) at that N, VmemRows,
# IciLinks and IciWidth (UbRows 1024, AccRows 256: the pod's programs use VMEM and the links).
function(tpu_add_pod_rtl target n vmem_rows links width)
  add_library(${target} STATIC ${TPU_SIM_DIR}/pod_rtl.cpp)
  target_include_directories(${target} PUBLIC ${TPU_SIM_DIR})
  target_link_libraries(${target} PUBLIC tpu_driver)
  target_compile_definitions(${target} PRIVATE TPU_POD_N=${n} TPU_POD_VMEM_ROWS=${vmem_rows}
                             TPU_POD_LINKS=${links} TPU_POD_WIDTH=${width} TPU_POD_UB_ROWS=1024
                             TPU_POD_ACC_ROWS=256)
  tpu_verilate(${target}
    PREFIX Vtpu_pod_core
    TOP_MODULE tpu_core
    SOURCES ${TPU_RTL_WAIVERS} ${TPU_RTL_SOURCES}
    VERILATOR_ARGS -GN=${n} -GUbRows=1024 -GAccRows=256 -GVmemRows=${vmem_rows}
                   -GIciLinks=${links} -GIciWidth=${width} ${TPU_RTL_VERILATOR_ARGS} -Wno-fatal -O3
    OPT_FAST ${TPU_SIM_OPT_FAST_FLAGS}  # no PGO profile for this model
  )
endfunction()

# tpu_pod_rtl_n4: N = 4, VmemRows = 32768 (512 KiB per chip, as the training chip), 4 links
# (ring or 2-D torus), IciWidth = 128 (16 bytes per cycle and direction: one beat per VMEM
# row). tpusim links it (`tpusim allreduce --backend rtl`), tests/pod use it.
option(TPU_POD_RTL "Build the RTL pod's library tpu_pod_rtl_n4 (tpusim allreduce --backend rtl)" ON)
if(TPU_POD_RTL)
  tpu_add_pod_rtl(tpu_pod_rtl_n4 4 32768 4 128)
endif()
