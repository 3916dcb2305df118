# SPDX-License-Identifier: Apache-2.0
# The pod of Verilated RTL chips (sim/pod_rtl.h, docs/pod.md "The RTL pod"), included by
# sim/CMakeLists.txt. tpu_add_pod_rtl(<target> N VMEM_ROWS LINKS WIDTH UB_ROWS ACC_ROWS) builds
# a static library with tpu_core Verilated as plain C++ (class Vtpu_pod_core: no SystemC, so it
# links next to the simulator's chip and several instances live in one process) at that N,
# VmemRows, IciLinks, IciWidth, UbRows and AccRows. One per binary (the class names are the
# same in every build).
function(tpu_add_pod_rtl target n vmem_rows links width ub_rows acc_rows)
  add_library(${target} STATIC ${TPU_SIM_DIR}/pod_rtl.cpp)
  target_include_directories(${target} PUBLIC ${TPU_SIM_DIR})
  target_link_libraries(${target} PUBLIC tpu_driver)
  target_compile_definitions(${target} PRIVATE TPU_POD_N=${n} TPU_POD_VMEM_ROWS=${vmem_rows}
                             TPU_POD_LINKS=${links} TPU_POD_WIDTH=${width}
                             TPU_POD_UB_ROWS=${ub_rows} TPU_POD_ACC_ROWS=${acc_rows})
  # A coverage build (scripts/coverage.sh) measures the pod's chips too: each chip's points
  # are summed into one data file per process (pod_rtl.cpp, PodCoverage).
  set(cov_args "")
  if(TPU_COVERAGE)
    set(cov_args --coverage-line --coverage-toggle)
    target_compile_definitions(${target} PRIVATE TPU_POD_COVERAGE=1)
  endif()
  tpu_verilate(${target}
    PREFIX Vtpu_pod_core
    TOP_MODULE tpu_core
    SOURCES ${TPU_RTL_WAIVERS} ${TPU_RTL_SOURCES}
    VERILATOR_ARGS -GN=${n} -GUbRows=${ub_rows} -GAccRows=${acc_rows} -GVmemRows=${vmem_rows}
                   -GIciLinks=${links} -GIciWidth=${width} ${TPU_RTL_VERILATOR_ARGS} -Wno-fatal -O3
                   ${cov_args}
    OPT_FAST ${TPU_SIM_OPT_FAST_FLAGS}  # no PGO profile for this model
  )
endfunction()

# tpu_pod_rtl_n4: N = 4, VmemRows = 32768 (512 KiB per chip, as the training chip), 4 links
# (ring or 2-D torus), IciWidth = 128 (16 bytes per cycle and direction: one beat per VMEM
# row), UbRows 1024, AccRows 256 (the pod's link programs use VMEM). tpusim links it
# (`tpusim allreduce --backend rtl`), tests/pod use it, and tpusim_train_n4 (`train --chips P
# --backend rtl`). tpu_pod_rtl_n16: the training pod at N = 16 (the Keras example's 10 classes
# need N >= 10): tpu_core as the training chip tpusim_train_n16 has it (VmemRows 32768, UbRows
# 8192, AccRows 2048: ChipParams::pod(16, 4)) with 4 links of 128 bits (4 beats per VMEM row),
# for `tpusim train --chips P --backend rtl` (tpusim_train_n16).
option(TPU_POD_RTL "Build the RTL pods' libraries tpu_pod_rtl_n4 / _n16 (--backend rtl pods)" ON)
if(TPU_POD_RTL)
  tpu_add_pod_rtl(tpu_pod_rtl_n4 4 32768 4 128 1024 256)
  if("16" IN_LIST TPU_SIM_TRAIN_N_LIST)
    tpu_add_pod_rtl(tpu_pod_rtl_n16 16 32768 4 128 8192 2048)
  endif()
endif()

# tpu_pod_train_rtl_n<N>: the RTL pod as a PodTrainer's pod, checked against the golden pod
# (sim/pod_train_rtl.h; `tpusim_train_n<N> train --chips P --backend rtl`,
# tests/pod/pod_train_rtl_test.cpp).
foreach(n 4 16)
  if(TARGET tpu_pod_rtl_n${n} AND TARGET tpu_trainer)
    add_library(tpu_pod_train_rtl_n${n} STATIC ${TPU_SIM_DIR}/pod_train_rtl.cpp)
    target_include_directories(tpu_pod_train_rtl_n${n} PUBLIC ${TPU_SIM_DIR})
    target_link_libraries(tpu_pod_train_rtl_n${n} PUBLIC tpu_pod_rtl_n${n} tpu_trainer)
  endif()
endforeach()

# tpu_pod_mpi: the distributed RTL pod's MPI transport (sim/pod_mpi.h), when MPI is found; tpusim
# links it for `mpirun -np K tpusim allreduce --backend rtl`, tests/pod's label mpi uses it.
find_package(MPI COMPONENTS C QUIET)
if(TARGET tpu_pod_rtl_n4 AND MPI_C_FOUND)
  add_library(tpu_pod_mpi STATIC ${TPU_SIM_DIR}/pod_mpi.cpp)
  target_include_directories(tpu_pod_mpi PUBLIC ${TPU_SIM_DIR})
  target_link_libraries(tpu_pod_mpi PUBLIC MPI::MPI_C)
endif()
