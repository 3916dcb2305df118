// SPDX-License-Identifier: Apache-2.0
// The extension module tpu_rtl._chip_n<N> (TPU_PY_MODULE): the chip Verilated with MXU size N
// and the model backend. Use it through the tpu_rtl package (python/tpu_rtl/__init__.py).
#include "bind.h"

#define TPU_PY_STR2(x) #x
#define TPU_PY_STR(x) TPU_PY_STR2(x)

PYBIND11_MODULE(TPU_PY_MODULE, m) {
  m.doc() = "tpu-rtl chip with N = " TPU_PY_STR(TPU_PY_N) " (use the tpu_rtl package)";
  tpu_py::register_errors(m);
  tpu_py::bind_device(m);
  tpu_py::bind_model(m);
#ifdef TPU_PY_TRAIN
  tpu_py::bind_train(m);
#endif
}
