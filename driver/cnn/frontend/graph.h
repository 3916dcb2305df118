// SPDX-License-Identifier: Apache-2.0
// The frontend's graph: the ONNX nodes still to convert, in the file's order, and the constant
// tensors by name. The passes before conversion (passes/fold_constants.h) rewrite it; the
// importer (frontend/importer.h) converts what is left, node by node, into layers of the IR.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "frontend/onnx_tensor.h"

namespace onnx {
class NodeProto;
}  // namespace onnx

namespace tpu::cnn::frontend {

struct Graph {
  std::string name;                           // the model's file name (messages name it)
  std::vector<const onnx::NodeProto*> nodes;  // in order; owned by the onnx::ModelProto
  std::map<std::string, Const> consts;        // initializers, Constant nodes and folded values
};

// "<name>: node '<node name>' (<op>): <msg>", the form of every error about one node.
[[noreturn]] void fail_node(const std::string& graph, const onnx::NodeProto& n,
                            const std::string& msg);
// The node's name, or its first output's when it has none.
std::string node_name(const onnx::NodeProto& n);

}  // namespace tpu::cnn::frontend
