// SPDX-License-Identifier: Apache-2.0
// The frontend's entry points (onnx_import.h): the file's bytes parsed as an ONNX model, then
// imported by the Importer (frontend/importer.h).
#include "onnx_import.h"

#include <onnx/onnx_pb.h>

#include <fstream>
#include <sstream>

#include "frontend/importer.h"

namespace tpu::cnn {

Network import_onnx_bytes(const std::string& bytes, const std::string& name) {
  if (bytes.empty()) throw Error(name + ": empty file, not an ONNX model");
  onnx::ModelProto model;
  if (!model.ParseFromString(bytes))
    throw Error(name + ": cannot parse as an ONNX model (truncated or corrupt protobuf, " +
                std::to_string(bytes.size()) + " bytes)");
  return frontend::Importer(model, name).run();
}

Network load_onnx(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(path + ": cannot open the file");
  std::ostringstream s;
  s << f.rdbuf();
  if (!f.good() && !f.eof()) throw Error(path + ": read error");
  return import_onnx_bytes(s.str(), path);
}

}  // namespace tpu::cnn
