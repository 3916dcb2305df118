// SPDX-License-Identifier: Apache-2.0
// tpu_rtl._chip_n<N>.Model: an ONNX model imported and quantized once (driver/cnn onnx_import.h,
// quantize.h), evaluated on a Device with driver/cnn/evaluate.h, the code behind
// `tpusim run-cnn`: the figures come back as that command's JSON (Evaluation::to_json) plus
// the per-image logits.
#include <mutex>

#include "bind.h"
#include "evaluate.h"
#include "onnx_import.h"
#include "quantize.h"
#include "runner.h"

namespace tpu_py {

namespace {

namespace cnn = tpu::cnn;

// Images of a 4-D (or 3-D: one channel) array as model inputs (NCHW float32 per image).
// uint8 pixels are divided by 255 (the input contract, runner.h pixels_to_float).
std::vector<std::vector<float>> float_images(const py::array& x, const cnn::Shape3& shape,
                                             const char* what) {
  const int64_t per = shape.size();
  if (x.ndim() < 2 || x.shape(0) < 1 || x.size() != x.shape(0) * per)
    throw std::invalid_argument(std::string(what) + ": expected images of " + shape.str() +
                                " (an array of shape (n, " + std::to_string(shape.c) + ", " +
                                std::to_string(shape.h) + ", " + std::to_string(shape.w) +
                                ")), got " + std::to_string(x.size()) + " values in " +
                                std::to_string(x.ndim()) + " dimensions");
  std::vector<std::vector<float>> out;
  const auto n = x.shape(0);
  if (py::isinstance<py::array_t<uint8_t>>(x)) {
    const auto* p = static_cast<const uint8_t*>(x.data());
    for (py::ssize_t i = 0; i < n; ++i) out.push_back(cnn::pixels_to_float(p + i * per, per));
  } else if (py::isinstance<py::array_t<float>>(x)) {
    const auto* p = static_cast<const float*>(x.data());
    for (py::ssize_t i = 0; i < n; ++i) out.emplace_back(p + i * per, p + (i + 1) * per);
  } else {
    throw std::invalid_argument(std::string(what) +
                                ": expected uint8 pixels or float32 values, "
                                "got dtype " +
                                std::string(py::str(x.dtype())));
  }
  return out;
}

class PyModel {
 public:
  PyModel(const py::object& source, bool is_path, const std::string& name,
          const py::object& calibration) {
    if (is_path) {
      const std::string path = source.cast<std::string>();
      py::gil_scoped_release nogil;
      net_ = cnn::load_onnx(path);
    } else {
      const std::string bytes = source.cast<py::bytes>();
      py::gil_scoped_release nogil;
      net_ = cnn::import_onnx_bytes(bytes, name);
    }
    name_ = name;
    if (cnn::fully_quantized(net_)) {
      q_ = cnn::quantize_model(net_, {});
      how_ = "quantized in the model file";
      return;
    }
    if (calibration.is_none())
      throw std::invalid_argument(name +
                                  ": the model is float, so it needs calibration images "
                                  "(calibration=array of images like the inputs)");
    const auto cal = float_images(calibration.cast<py::array>(), net_.input, "calibration");
    {
      py::gil_scoped_release nogil;
      q_ = cnn::quantize_model(net_, cal);
    }
    how_ = "post-training int8, " + std::to_string(cal.size()) + " calibration images";
  }

  // Returns (run-cnn JSON, logits [n, classes] int32, float_predicted [n], matches [n]).
  py::tuple evaluate(PyDevice& device, const py::array& x, const py::object& labels, uint32_t batch,
                     bool profile, uint64_t max_cycles, int64_t mem_latency,
                     int64_t mem_bandwidth) {
    cnn::EvalOptions o;
    o.batch = batch;
    o.profile = profile;
    o.max_cycles = max_cycles;
    const cnn::Shape3& in = net_.input;
    std::vector<int> lab;
    if (!labels.is_none()) lab = labels.cast<std::vector<int>>();
    const bool gray_pixels = py::isinstance<py::array_t<uint8_t>>(x) && in.c == 1;
    cnn::ImageSet pixels;
    cnn::FloatImageSet floats;
    if (gray_pixels) {  // the path of run-cnn on Fashion-MNIST (ImageSet, quantize_pixels)
      if (x.ndim() < 2 || x.shape(0) < 1 || x.size() != x.shape(0) * in.size())
        throw std::invalid_argument("x: expected images of " + in.str() + ", got " +
                                    std::to_string(x.size()) + " values in " +
                                    std::to_string(x.ndim()) + " dimensions");
      pixels.count = static_cast<int>(x.shape(0));
      pixels.rows = in.h;
      pixels.cols = in.w;
      pixels.pixels = array_bytes(x, "x");
      for (int l : lab) pixels.labels.push_back(static_cast<uint8_t>(l));
    } else {
      floats.shape = in;
      floats.images = float_images(x, in, "x");
      floats.labels = lab;
    }
    const int count = gray_pixels ? pixels.count : floats.count();
    if (!lab.empty() && lab.size() != size_t(count))
      throw std::invalid_argument("labels: " + std::to_string(lab.size()) + " labels for " +
                                  std::to_string(count) + " images");
    for (int l : lab)
      if (l < 0 || l >= q_.classes() || l > 255)
        throw std::invalid_argument("labels: " + std::to_string(l) + " is not a class (0.." +
                                    std::to_string(q_.classes() - 1) + ")");
    o.count = count;
    cnn::Evaluation e;
    {
      py::gil_scoped_release nogil;
      std::unique_lock<std::mutex> lock;
      tpu::Device& dev = device.device(lock);
      // ChipRunner leaves its host buffers registered: release them, so that every run starts
      // from an empty arena (same addresses, hence the same cycles as a fresh run-cnn).
      struct Release {
        tpu::Device& d;
        ~Release() { d.release_all(); }
      } release{dev};
      dev.release_all();
      e = gray_pixels ? cnn::evaluate(dev, net_, q_, pixels, o)
                      : cnn::evaluate(dev, net_, q_, floats, o);
    }
    e.model = name_;
    e.quantization = how_;
    e.mem_latency_cycles = mem_latency;
    e.mem_bytes_per_cycle = mem_bandwidth;
    const auto classes = static_cast<py::ssize_t>(q_.classes());
    py::array_t<int32_t> logits({static_cast<py::ssize_t>(count), classes});
    py::array_t<int32_t> fpred(count);
    py::array_t<bool> matches(count);
    for (int i = 0; i < count; ++i) {
      const auto& r = e.results[size_t(i)];
      std::copy(r.logits.begin(), r.logits.end(), logits.mutable_data(i, 0));
      fpred.mutable_at(i) = r.float_predicted;
      matches.mutable_at(i) = r.matches_reference;
    }
    return py::make_tuple(e.to_json(true), logits, fpred, matches);
  }

  py::dict info() const {
    py::dict d;
    d["name"] = name_;
    d["input_shape"] = py::make_tuple(net_.input.c, net_.input.h, net_.input.w);
    d["classes"] = q_.classes();
    d["quantization"] = how_;
    d["output_scale"] = double(q_.output_q().scale);
    d["output_zero_point"] = q_.output_q().zero_point;
    py::list layers;
    for (const auto& l : q_.layers) {
      py::dict ld;
      ld["name"] = l.name;
      ld["op"] = l.op;
      ld["input"] = l.in.str();
      ld["output"] = l.out.str();
      ld["macs"] = l.macs();
      layers.append(ld);
    }
    d["layers"] = layers;
    return d;
  }

 private:
  std::string name_, how_;
  cnn::Network net_;
  cnn::QuantNetwork q_;
};

}  // namespace

void bind_model(py::module_& m) {
  py::class_<PyModel>(m, "Model", py::module_local())
      .def(py::init<const py::object&, bool, const std::string&, const py::object&>(),
           py::arg("source"), py::arg("is_path"), py::arg("name"), py::arg("calibration"))
      .def("evaluate", &PyModel::evaluate)
      .def("info", &PyModel::info);
}

}  // namespace tpu_py
