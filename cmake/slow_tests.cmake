# SPDX-License-Identifier: Apache-2.0
# Plain `ctest` must be safe to type: the tests labelled `slow` (synthesis, the 25,000-program
# random shards, whole test sets, the CNN zoo: minutes to hours each) are left out of every
# ctest run unless TPU_SLOW_TESTS=1 is set (`TPU_SLOW_TESTS=1 ctest -L slow`). ctest reads
# CTestCustom.cmake only in the directory it runs in, so every directory of the build gets
# one (cmake/CTestCustom.cmake.in: it asks ctest for the slow tests and ignores them).
function(tpu_write_ctest_custom dir)
  get_property(TPU_CTEST_DIR DIRECTORY ${dir} PROPERTY BINARY_DIR)
  configure_file(${PROJECT_SOURCE_DIR}/cmake/CTestCustom.cmake.in
                 ${TPU_CTEST_DIR}/CTestCustom.cmake @ONLY)
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(subdir IN LISTS subdirs)
    tpu_write_ctest_custom(${subdir})
  endforeach()
endfunction()
tpu_write_ctest_custom(${PROJECT_SOURCE_DIR})
