// SPDX-License-Identifier: Apache-2.0
// export_trained_onnx (declared in driver/train/trainer.h): the original model with its trained
// initializers, every other part of the file as it was.
#include <onnx/onnx_pb.h>

#include <filesystem>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "model_io.h"
#include "output_file.h"
#include "trainer.h"

namespace tpu::train {

namespace {

onnx::ModelProto parse_original(const std::string& original_model) {
  std::error_code ec;
  // A path (an existing regular file) or the serialized ModelProto, as Trainer's constructor.
  const bool is_file = original_model.size() < 4096 &&
                       original_model.find('\0') == std::string::npos &&
                       std::filesystem::is_regular_file(original_model, ec);
  const std::string bytes = is_file ? read_model_file(original_model, "") : original_model;
  onnx::ModelProto m;
  if (!m.ParseFromString(bytes))
    throw std::invalid_argument(
        std::string("export_trained_onnx: ") +
        (is_file ? original_model + " is not an ONNX model" : "the original model does not parse"));
  return m;
}

void replace_values(onnx::TensorProto& t, const std::vector<float>& v) {
  if (t.data_type() != onnx::TensorProto::FLOAT)
    throw std::invalid_argument("export_trained_onnx: initializer " + t.name() +
                                " is not float (data type " + std::to_string(t.data_type()) +
                                "); only float weights are trained");
  uint64_t elements = 1;
  for (int64_t d : t.dims()) elements *= uint64_t(d);
  if (elements != v.size())
    throw std::invalid_argument("export_trained_onnx: initializer " + t.name() + " holds " +
                                std::to_string(elements) + " values, the trained weights " +
                                std::to_string(v.size()));
  t.clear_float_data();
  t.clear_external_data();
  t.clear_data_location();
  // raw_data is little-endian fp32, as the host stores floats.
  t.set_raw_data(std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float)));
}

}  // namespace

std::string trained_onnx(const std::string& original_model,
                         const std::map<std::string, std::vector<float>>& weights) {
  onnx::ModelProto m = parse_original(original_model);
  std::map<std::string, onnx::TensorProto*> inits;
  for (auto& t : *m.mutable_graph()->mutable_initializer()) inits[t.name()] = &t;
  for (const auto& [name, values] : weights) {
    const auto it = inits.find(name);
    if (it == inits.end())
      throw std::invalid_argument("export_trained_onnx: trained weight " + name +
                                  " is not an initializer of the original model");
    replace_values(*it->second, values);
  }
  std::string bytes;
  if (!m.SerializeToString(&bytes))
    throw std::runtime_error("export_trained_onnx: cannot serialize the trained model");
  return bytes;
}

void export_trained_onnx(const std::string& original_model,
                         const std::map<std::string, std::vector<float>>& weights,
                         const std::string& out_path) {
  const std::string bytes = trained_onnx(original_model, weights);
  tpu::OutputFile out(out_path, "--output");
  out.write(bytes);
  out.commit();
}

}  // namespace tpu::train
