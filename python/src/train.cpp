// SPDX-License-Identifier: Apache-2.0
// tpu_rtl._chip_n<N>.fit / keras_example: training through driver/train/io/fit.h, the loop of
// `tpusim train` (docs/training.md), on the golden model with the training configuration or on
// a training Device (the rtl training chip tpu_rtl._chip_train_n<N>, whose steps can also be
// rerun on the golden model and compared bit for bit, as `tpusim train --backend rtl` does). The
// NumPy images and labels become a TrainSet; the result is the history and the trained ONNX.
#include <cstring>
#include <memory>

#include "bind.h"
#include "device_model.h"
#include "fit.h"
#include "model_io.h"
#include "trainer.h"

namespace tpu_py {

namespace {

namespace tt = tpu::train;

// float32 images [n, C, H, W] (uint8: / 255) and int labels [n] as a TrainSet for `chw`.
tt::TrainSet train_set(const py::array& x, const py::array& y, const std::array<uint32_t, 3>& chw,
                       const std::string& what) {
  tt::TrainSet s;
  s.name = what;
  s.chw = chw;
  const size_t per = s.image_size();
  if (x.ndim() != 4 || size_t(x.shape(1)) != chw[0] || size_t(x.shape(2)) != chw[1] ||
      size_t(x.shape(3)) != chw[2])
    throw std::invalid_argument(what + ": expected images of shape (n, " + std::to_string(chw[0]) +
                                ", " + std::to_string(chw[1]) + ", " + std::to_string(chw[2]) +
                                ") for the model, got " + std::to_string(x.ndim()) + " dimensions");
  s.count = uint32_t(x.shape(0));
  if (py::isinstance<py::array_t<uint8_t>>(x)) {
    s.pixels8 = array_bytes(x, what.c_str());
  } else if (py::isinstance<py::array_t<float>>(x)) {
    const auto c = py::array_t<float, py::array::c_style>::ensure(x);
    s.pixels.assign(c.data(), c.data() + size_t(s.count) * per);
  } else {
    throw std::invalid_argument(what + ": expected float32 or uint8 images, got dtype " +
                                std::string(py::str(x.dtype())));
  }
  const auto l = py::array_t<int64_t, py::array::c_style | py::array::forcecast>::ensure(y);
  if (!l || l.ndim() != 1 || size_t(l.shape(0)) != s.count)
    throw std::invalid_argument(what + ": expected one integer label per image (" +
                                std::to_string(s.count) + ")");
  for (py::ssize_t i = 0; i < l.shape(0); ++i) {
    const int64_t v = l.at(i);
    if (v < 0 || v > INT32_MAX)
      throw std::invalid_argument(what + ": label " + std::to_string(v) + " of image " +
                                  std::to_string(i) + " is negative or too large");
    s.labels.push_back(int32_t(v));
  }
  return s;
}

py::dict history(const tt::FitResult& r, const std::string& trained, bool estimated) {
  py::dict h;
  h["losses"] = r.losses;
  py::list loss, acc;
  for (const auto& e : r.epochs) {
    loss.append(e.loss);
    acc.append(e.test_accuracy ? py::cast(*e.test_accuracy) : py::none());
  }
  h["loss"] = loss;
  h["test_accuracy"] = acc;
  h["initial_test_accuracy"] =
      r.initial_test_accuracy ? py::cast(*r.initial_test_accuracy) : py::none();
  h["steps_per_epoch"] = r.steps_per_epoch;
  h["step_cycles"] = r.step_cycles;
  h["cycles_total"] = r.cycles_total;
  h["cycles_estimated"] = estimated;
  h["diverged"] = r.diverged;
  h["divergence"] = r.divergence;
  h["matches_golden"] = r.matches_golden ? py::cast(*r.matches_golden) : py::none();
  h["golden_mismatch"] = r.golden_mismatch
                             ? py::cast("step " + std::to_string(r.golden_mismatch->step) + ": " +
                                        r.golden_mismatch->what)
                             : py::none();
  h["wall_seconds"] = r.wall_seconds;
  h["model"] = py::bytes(trained);
  return h;
}

// The compiled step for `dev`, and with `golden_check` the same on a golden model of its
// parameters, run in lockstep and compared bit for bit (as `tpusim train --backend rtl`).
struct Compiled {
  std::unique_ptr<tt::Trainer> t, golden;
  std::unique_ptr<tpu::ModelDevice> golden_dev;
};

Compiled compile(const std::string& bytes, const tt::TrainOptions& o, const tpu::ChipParams& p,
                 bool golden_check) {
  Compiled c;
  c.t = std::make_unique<tt::Trainer>(bytes, o, p);
  if (golden_check) {
    c.golden_dev = std::make_unique<tpu::ModelDevice>(p);
    c.golden = std::make_unique<tt::Trainer>(bytes, o, p);
  }
  return c;
}

// device: None (the golden model of ChipParams::training(n)) or an open training Device of
// this module (the rtl training chip, or a model Device), locked for the whole fit.
py::dict fit(const py::bytes& model, const py::array& x, const py::array& y,
             const py::object& test_x, const py::object& test_y, uint32_t n, uint32_t epochs,
             uint32_t steps_per_epoch, uint32_t batch, const std::string& optimizer, float lr,
             float momentum, float weight_decay, const py::object& shuffle, uint32_t test_images,
             const py::object& device, bool golden_check) {
  const std::string bytes = model;
  tt::TrainOptions o;
  if (optimizer != "sgd" && optimizer != "adam")
    throw std::invalid_argument("optimizer: '" + optimizer + "' is not sgd or adam");
  o.optimizer = optimizer == "sgd" ? tt::Optimizer::Sgd : tt::Optimizer::Adam;
  o.lr = lr;
  o.momentum = momentum;
  o.weight_decay = weight_decay;
  o.batch = batch;
  PyDevice* pd = device.is_none() ? nullptr : &device.cast<PyDevice&>();
  std::unique_ptr<tpu::ModelDevice> own;
  std::unique_lock<std::mutex> lock;
  tpu::Device* dev = nullptr;
  if (pd) {
    dev = &pd->device(lock);
    golden_check = golden_check && dev->backend() == "rtl";
  } else {
    own = std::make_unique<tpu::ModelDevice>(tpu::ChipParams::training(n));
    dev = own.get();
    golden_check = false;  // the model backend is the golden model
  }
  if (!dev->params().has_vmem())
    throw tpu::DeviceError("fit: this " + std::string(dev->backend()) +
                           " Device is the int8 chip (no VMEM); training needs the training chip "
                           "(tpu_rtl.Device(backend, n, training=True))");
  Compiled c;
  {
    py::gil_scoped_release nogil;
    c = compile(bytes, o, dev->params(), golden_check);
  }
  tt::Trainer& t = *c.t;
  const tt::TrainSet train = train_set(x, y, t.input_chw(), "x");
  tt::check_set(train, t.classes(), t.input_chw(), "");
  tt::TrainSet test;
  const bool testing = !test_x.is_none();
  if (testing) {
    test = train_set(test_x.cast<py::array>(), test_y.cast<py::array>(), t.input_chw(),
                     "validation_data");
    tt::check_set(test, t.classes(), t.input_chw(), "");
  }
  tt::FitOptions fo;
  fo.epochs = epochs;
  fo.steps_per_epoch = steps_per_epoch;
  if (!shuffle.is_none()) fo.shuffle_seed = shuffle.cast<uint64_t>();
  fo.test_images = testing ? std::min(test_images, test.count) : 0;
  tt::FitResult r;
  std::string trained;
  {
    py::gil_scoped_release nogil;
    r = tt::fit(t, *dev, train, testing ? &test : nullptr, fo, batch, {}, c.golden.get(),
                c.golden_dev.get());
    if (!r.diverged) trained = tt::trained_onnx(bytes, t.weights(*dev));
  }
  return history(r, trained, dev->backend() == "model");
}

}  // namespace

void bind_train(py::module_& m) {
  m.def("fit", &fit);
  m.def("keras_example", [](uint64_t seed) { return py::bytes(tt::keras_example_onnx(seed)); });
  m.def("mlp_example", [](uint32_t hidden, uint64_t seed) {
    return py::bytes(tt::mlp_example_onnx(hidden, seed));
  });
}

}  // namespace tpu_py
