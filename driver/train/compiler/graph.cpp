// SPDX-License-Identifier: Apache-2.0
#include "compiler/graph.h"

#include <sstream>

namespace tpu::train::compiler {

int Graph::add_tensor(Tensor t) {
  tensors.push_back(std::move(t));
  return static_cast<int>(tensors.size()) - 1;
}

int Graph::add_node(Node n) {
  nodes.push_back(std::move(n));
  return static_cast<int>(nodes.size()) - 1;
}

std::vector<int> Graph::readers(int t) const {
  std::vector<int> r;
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (int in : nodes[i].in) {
      if (in == t) {
        r.push_back(static_cast<int>(i));
        break;
      }
    }
  }
  return r;
}

const char* op_name(Op op) {
  switch (op) {
    case Op::Dense: return "Dense";
    case Op::Relu: return "Relu";
    case Op::Add: return "Add";
    case Op::SoftmaxCe: return "SoftmaxCe";
    case Op::DenseGradX: return "DenseGradX";
    case Op::DenseGradW: return "DenseGradW";
    case Op::BiasGrad: return "BiasGrad";
    case Op::ReluGrad: return "ReluGrad";
    case Op::AddGrad: return "AddGrad";
    case Op::SgdUpdate: return "SgdUpdate";
    case Op::AdamBegin: return "AdamBegin";
    case Op::AdamUpdate: return "AdamUpdate";
  }
  return "?";
}

const char* phase_name(Phase p) {
  switch (p) {
    case Phase::Forward: return "fwd";
    case Phase::Loss: return "loss";
    case Phase::Backward: return "bwd";
    case Phase::Update: return "upd";
  }
  return "?";
}

std::string Graph::dump() const {
  std::ostringstream s;
  auto list = [&](const std::vector<int>& ids) {
    for (size_t i = 0; i < ids.size(); ++i) {
      const Tensor& t = tensors[static_cast<size_t>(ids[i])];
      s << (i ? ", " : "") << t.name << "(" << t.rows << "x" << t.cols << ")";
    }
  };
  for (const Node& n : nodes) {
    s << phase_name(n.phase) << " " << op_name(n.op) << " " << n.name;
    if (!n.onnx_op.empty()) s << " [" << n.onnx_op << "]";
    s << " ";
    list(n.in);
    s << " -> ";
    list(n.out);
    s << "\n";
  }
  return s.str();
}

}  // namespace tpu::train::compiler
