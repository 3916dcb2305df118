# SPDX-License-Identifier: Apache-2.0
# `cmake --install <build> [--prefix P]`: the driver libraries and headers, the rtl backend and
# simulator of every N in TPU_SIM_N_LIST, tpusim, the firmware, and a CMake package
# (find_package(tpu_rtl), see cmake/tpu_rtlConfig.cmake.in and examples/external).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(TPU_INSTALL_INCLUDEDIR ${CMAKE_INSTALL_INCLUDEDIR}/tpu_rtl)
set(TPU_INSTALL_LIBDIR ${CMAKE_INSTALL_LIBDIR})
set(TPU_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/tpu_rtl)

install(TARGETS tpu_driver ARCHIVE DESTINATION ${TPU_INSTALL_LIBDIR})
foreach(n IN LISTS TPU_SIM_N_LIST)
  if(TARGET tpu_sim_n${n})
    install(TARGETS tpu_sim_n${n} tpu_device_rtl_n${n} ARCHIVE DESTINATION ${TPU_INSTALL_LIBDIR})
  endif()
endforeach()
install(FILES
  driver/arith.h driver/assembler.h driver/device.h driver/device_model.h driver/device_rtl.h
  driver/golden_model.h driver/host_image.h driver/host_memory.h driver/isa.h driver/program.h
  driver/tiled_ops.h
  DESTINATION ${TPU_INSTALL_INCLUDEDIR})
if(TARGET tpusim)
  install(TARGETS tpusim RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
install(FILES ${TPU_FIRMWARE_SOURCES} DESTINATION ${CMAKE_INSTALL_DATADIR}/tpu_rtl/firmware)
install(DIRECTORY ${TPU_FIRMWARE_DIR}/ DESTINATION ${CMAKE_INSTALL_DATADIR}/tpu_rtl/firmware
        FILES_MATCHING PATTERN "*.bin")

configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/tpu_rtlConfig.cmake.in
  ${CMAKE_BINARY_DIR}/cmake/tpu_rtlConfig.cmake
  INSTALL_DESTINATION ${TPU_INSTALL_CMAKEDIR}
  PATH_VARS TPU_INSTALL_INCLUDEDIR TPU_INSTALL_LIBDIR)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/cmake/tpu_rtlConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_BINARY_DIR}/cmake/tpu_rtlConfig.cmake
              ${CMAKE_BINARY_DIR}/cmake/tpu_rtlConfigVersion.cmake
        DESTINATION ${TPU_INSTALL_CMAKEDIR})
