# SPDX-License-Identifier: Apache-2.0
# `cmake --install` into WORK_DIR/prefix gives a working tpu-rtl without the source tree:
#   - bin/tpusim and bin/tpusim_n<N> for every other N of N_LIST; `sweep --n <N>` runs them
#   - the bundled models in share/tpu_rtl/models, and tpusim run-cnn uses them from there
#   - firmware/*.s with host memory images: the installed tpusim runs mlp.s on its image and
#     writes exactly the expected image
#   - the CNN library (lib/libtpu_cnn.a, include/tpu_rtl/cnn) when HAVE_CNN
#   - bin/tpusim_train_n<N> for every N of TRAIN_N_LIST; the installed `tpusim train --backend
#     rtl` starts it and trains one step bit-exact with the golden model (when Fashion-MNIST is
#     installed); bin/tpusim_dw_n16 when HAVE_DW, and it runs the installed MobileNet bit-exact
#   - no empty folder (e.g. CMakeFiles) anywhere in the prefix
#   - share/tpu_rtl/examples/external, configured against the prefix, builds hello_matmul and
#     cnn_classify, and both run on the rtl chip and match their references.
# Arguments: BUILD_DIR, WORK_DIR, N_LIST (comma-separated, first = default chip), HAVE_CNN,
# TRAIN_N_LIST (comma-separated, may be empty), HAVE_DW.
string(REPLACE "," ";" N_LIST "${N_LIST}")
string(REPLACE "," ";" TRAIN_N_LIST "${TRAIN_N_LIST}")
set(fashion_dir /usr/share/datasets/fashion-mnist)
set(prefix ${WORK_DIR}/prefix)
set(ext ${WORK_DIR}/external-build)
set(run_dir ${WORK_DIR}/run)
file(REMOVE_RECURSE ${prefix} ${ext} ${run_dir})
file(MAKE_DIRECTORY ${run_dir})
function(run)
  execute_process(COMMAND ${ARGN} WORKING_DIRECTORY ${run_dir} RESULT_VARIABLE rc
                  OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message("$ ${ARGN}\n${out}${err}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc})")
  endif()
  set(last_output "${out}" PARENT_SCOPE)
endfunction()
function(expect_file path)
  if(NOT EXISTS ${prefix}/${path})
    message(FATAL_ERROR "not installed: ${prefix}/${path}")
  endif()
endfunction()
function(expect_contains literal text what)
  string(FIND "${text}" "${literal}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${what}: expected the text '${literal}'")
  endif()
endfunction()
function(expect_match regex text what)
  if(NOT text MATCHES "${regex}")
    message(FATAL_ERROR "${what}: expected a match of '${regex}'")
  endif()
endfunction()

run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
set(data share/tpu_rtl)

# Every chip size the tools call.
list(GET N_LIST 0 default_n)
expect_file(bin/tpusim)
foreach(n IN LISTS N_LIST)
  if(NOT n STREQUAL default_n)
    expect_file(bin/tpusim_n${n})
  endif()
  expect_file(lib/libtpu_device_rtl_n${n}.a)
  foreach(p matmul_tile dense_relu mlp)
    expect_file(${data}/firmware/${p}.n${n}.mem)
    expect_file(${data}/firmware/${p}.n${n}.expected.mem)
  endforeach()
endforeach()
foreach(n IN LISTS TRAIN_N_LIST)
  expect_file(bin/tpusim_train_n${n})
endforeach()
if(HAVE_DW)
  expect_file(bin/tpusim_dw_n16)
endif()
expect_file(${data}/models/fashion_cnn.onnx)
expect_file(${data}/examples/external/CMakeLists.txt)
if(HAVE_CNN)
  expect_file(lib/libtpu_cnn.a)
  expect_file(include/tpu_rtl/cnn/runner.h)
endif()

# No empty folder anywhere (an install(DIRECTORY) copies the build's empty CMakeFiles).
file(GLOB_RECURSE entries LIST_DIRECTORIES true ${prefix}/*)
foreach(e IN LISTS entries)
  if(IS_DIRECTORY ${e})
    file(GLOB contents ${e}/*)
    if(NOT contents)
      message(FATAL_ERROR "empty folder in the install: ${e}")
    endif()
  endif()
  if(e MATCHES "/CMakeFiles(/|$)")
    message(FATAL_ERROR "build folder in the install: ${e}")
  endif()
endforeach()

# The installed tpusim runs a firmware program on its installed host image, bit-exact.
run(${prefix}/bin/tpusim run ${prefix}/${data}/firmware/mlp.s
    --hostmem-in ${prefix}/${data}/firmware/mlp.n${default_n}.mem --hostmem-out out.mem)
file(READ ${run_dir}/out.mem got)
file(READ ${prefix}/${data}/firmware/mlp.n${default_n}.expected.mem want)
if(NOT got STREQUAL want)
  message(FATAL_ERROR "mlp.s: out.mem differs from mlp.n${default_n}.expected.mem")
endif()

if(HAVE_CNN)
  # run-cnn's default model is the installed one, not the source tree's.
  run(${prefix}/bin/tpusim run-cnn --images 2 --batch 2 --calibration 2 --json)
  expect_contains("\"model\": \"${prefix}/${data}/models/fashion_cnn.onnx\"" "${last_output}"
                  "run-cnn --json of the installed tpusim: the bundled model from the prefix")
  # sweep starts the installed tpusim_n<N> of every other N.
  foreach(n IN LISTS N_LIST)
    if(NOT n STREQUAL default_n)
      run(${prefix}/bin/tpusim sweep --n ${n} --images 2 --batch 2 --calibration 2 --jobs 1
          --out sweep_n${n})
      file(READ ${run_dir}/sweep_n${n}/sweep.csv csv)
      expect_match("\n${n}," "${csv}" "sweep --n ${n}: a row for N = ${n} in sweep.csv")
    endif()
  endforeach()
endif()

# The installed tpusim trains on the rtl training chip: it starts the installed
# tpusim_train_n<N> next to itself (tools/tpusim/cmd_train.cpp).
list(FIND TRAIN_N_LIST ${default_n} default_is_train)  # script mode: no IN_LIST (CMP0057)
if(NOT default_is_train EQUAL -1 AND EXISTS ${fashion_dir})
  run(${prefix}/bin/tpusim train --backend rtl --epochs 1 --steps-per-epoch 1 --batch 16
      --test-images 0 --json)
  expect_match("\"matches_golden\": true" "${last_output}"
               "tpusim train --backend rtl of the installed tpusim")
endif()
if(HAVE_CNN AND HAVE_DW)
  run(${prefix}/bin/tpusim_dw_n16 run-cnn --model ${prefix}/${data}/models/mobilenet.onnx
      --images 2 --batch 2 --calibration 2 --json --no-profile)
  expect_match("\"matches_golden\": true" "${last_output}"
               "tpusim_dw_n16 run-cnn of the installed MobileNet")
endif()

# An outside project from the installed examples.
run(${CMAKE_COMMAND} -S ${prefix}/${data}/examples/external -B ${ext}
    -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=Release)
run(${CMAKE_COMMAND} --build ${ext})
run(${ext}/hello_matmul rtl)
expect_match("100 x 70 x 40 on rtl \\(N = ${default_n}\\): matches C\\+\\+" "${last_output}"
             "hello_matmul built against the install")
if(HAVE_CNN)
  run(${ext}/cnn_classify ${prefix}/${data}/models/fashion_cnn.onnx rtl 2)
  expect_match("2 images of [^ ]+ on rtl \\(N = ${default_n}\\): logits match" "${last_output}"
               "cnn_classify built against the install")
endif()
message("install test: passed")
