# SPDX-License-Identifier: Apache-2.0
# `cmake --install <build> [--prefix P]`: a working tpu-rtl in P, nothing from the source tree
# needed (tests/install checks it from the prefix):
#   bin/tpusim, bin/tpusim_n<N>      the CLI for every N of TPU_SIM_N_LIST (sweep starts them)
#   bin/tpusim_train_n<N>            the CLI on the training chip, every N of TPU_SIM_TRAIN_N_LIST
#                                    (tpusim train --backend rtl starts it)
#   bin/tpusim_dw_n16                the CLI on the depthwise chip (when it is built)
#   lib/                             tpu_driver, tpu_sim_n<N>, tpu_device_rtl_n<N>, tpu_cnn
#   include/tpu_rtl/, .../cnn/       the driver's and the CNN library's headers
#   share/tpu_rtl/models/            the bundled ONNX models (tpusim run-cnn finds them there,
#                                    relative to its own executable)
#   share/tpu_rtl/firmware/          firmware/*.s, their assembled .bin, and the host memory
#                                    images they read (*.in.mem)
#   share/tpu_rtl/examples/          hello_matmul.cpp, cnn_classify.cpp and external/, a CMake
#                                    project that builds them against this prefix
#   lib/cmake/tpu_rtl/               find_package(tpu_rtl) (cmake/tpu_rtlConfig.cmake.in)
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(TPU_INSTALL_INCLUDEDIR ${CMAKE_INSTALL_INCLUDEDIR}/tpu_rtl)
set(TPU_INSTALL_LIBDIR ${CMAKE_INSTALL_LIBDIR})
set(TPU_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/tpu_rtl)
set(TPU_INSTALL_DATADIR ${CMAKE_INSTALL_DATADIR}/tpu_rtl)

install(TARGETS tpu_driver ARCHIVE DESTINATION ${TPU_INSTALL_LIBDIR})
foreach(n IN LISTS TPU_SIM_N_LIST)
  if(TARGET tpu_sim_n${n})
    install(TARGETS tpu_sim_n${n} tpu_device_rtl_n${n} ARCHIVE DESTINATION ${TPU_INSTALL_LIBDIR})
  endif()
endforeach()
# Every header of tpu_driver (the public ones include the others, e.g. program.h fp_sequences.h).
file(GLOB TPU_DRIVER_HEADERS ${PROJECT_SOURCE_DIR}/driver/*.h)
install(FILES ${TPU_DRIVER_HEADERS} DESTINATION ${TPU_INSTALL_INCLUDEDIR})

# The CLI: tpusim (the default chip) and tpusim_n<N> for every other N.
foreach(n IN LISTS TPU_SIM_N_LIST)
  if(n STREQUAL TPU_DEFAULT_N)
    set(exe tpusim)
  else()
    set(exe tpusim_n${n})
  endif()
  if(TARGET ${exe})
    install(TARGETS ${exe} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  endif()
endforeach()

# The training chip's CLI, tpusim_train_n<N> (`tpusim train --backend rtl` and the rtl pods
# start it next to tpusim), and the depthwise chip's, tpusim_dw_n16 (docs/tpusim.md).
foreach(n IN LISTS TPU_SIM_TRAIN_N_LIST)
  if(TARGET tpusim_train_n${n})
    install(TARGETS tpusim_train_n${n} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  endif()
endforeach()
if(TARGET tpusim_dw_n16)
  install(TARGETS tpusim_dw_n16 RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()

# The CNN library (when it is built: driver/cnn/CMakeLists.txt needs libonnx-dev and others).
set(TPU_INSTALL_CNN OFF)
if(TARGET tpu_cnn)
  set(TPU_INSTALL_CNN ON)
  install(TARGETS tpu_cnn ARCHIVE DESTINATION ${TPU_INSTALL_LIBDIR})
  file(GLOB TPU_CNN_HEADERS ${PROJECT_SOURCE_DIR}/driver/cnn/*.h)
  install(FILES ${TPU_CNN_HEADERS} DESTINATION ${TPU_INSTALL_INCLUDEDIR}/cnn)
endif()

# Data: the bundled models, the firmware and its host images, the examples.
file(GLOB TPU_MODEL_FILES ${PROJECT_SOURCE_DIR}/models/*.onnx ${PROJECT_SOURCE_DIR}/models/*.json
     ${PROJECT_SOURCE_DIR}/models/README.md)
install(FILES ${TPU_MODEL_FILES} DESTINATION ${TPU_INSTALL_DATADIR}/models)
install(FILES ${TPU_FIRMWARE_SOURCES} ${TPU_FIRMWARE_BINARIES} ${TPU_FIRMWARE_HOST_IMAGES}
        DESTINATION ${TPU_INSTALL_DATADIR}/firmware)
install(FILES examples/hello_matmul.cpp examples/cnn_classify.cpp
        DESTINATION ${TPU_INSTALL_DATADIR}/examples)
install(FILES examples/external/CMakeLists.txt DESTINATION ${TPU_INSTALL_DATADIR}/examples/external)

configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/tpu_rtlConfig.cmake.in
  ${CMAKE_BINARY_DIR}/cmake/tpu_rtlConfig.cmake
  INSTALL_DESTINATION ${TPU_INSTALL_CMAKEDIR}
  PATH_VARS TPU_INSTALL_INCLUDEDIR TPU_INSTALL_LIBDIR TPU_INSTALL_DATADIR)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/cmake/tpu_rtlConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_BINARY_DIR}/cmake/tpu_rtlConfig.cmake
              ${CMAKE_BINARY_DIR}/cmake/tpu_rtlConfigVersion.cmake
        DESTINATION ${TPU_INSTALL_CMAKEDIR})
