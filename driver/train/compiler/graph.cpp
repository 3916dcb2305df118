// SPDX-License-Identifier: Apache-2.0
#include "compiler/graph.h"

#include <sstream>

namespace tpu::train::compiler {

Node make_node(Op op, std::string name, std::string onnx_op, Phase phase, int layer,
               std::vector<int> in, std::vector<int> out) {
  Node n;
  n.op = op;
  n.name = std::move(name);
  n.onnx_op = std::move(onnx_op);
  n.phase = phase;
  n.layer = layer;
  n.in = std::move(in);
  n.out = std::move(out);
  return n;
}

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

namespace {

// Visits every (ONNX index, kernel index) pair of parameter p.
template <typename F>
void for_each_value(const Graph& g, const Param& p, F f) {
  const Tensor& t = g.tensors[static_cast<size_t>(p.tensor)];
  if (t.row_vector || p.dims.size() != 2) {  // a bias: the same order
    for (size_t i = 0; i < p.initial.size(); ++i) f(i, i);
    return;
  }
  const auto in = static_cast<uint32_t>(p.dims[p.transposed ? 1 : 0]);
  const auto out = static_cast<uint32_t>(p.dims[p.transposed ? 0 : 1]);
  for (uint32_t i = 0; i < in; ++i) {
    const uint32_t row = p.row_map.empty() ? i : p.row_map[i];
    for (uint32_t o = 0; o < out; ++o) {
      f(p.transposed ? size_t{o} * in + i : size_t{i} * out + o, size_t{row} * t.cols + o);
    }
  }
}

}  // namespace

std::vector<float> kernel_values(const Graph& g, const Param& p, const std::vector<float>& onnx) {
  if (p.conv) return conv_weight_values(*p.conv, g.chip_n, onnx);
  const Tensor& t = g.tensors[static_cast<size_t>(p.tensor)];
  std::vector<float> k(size_t{t.rows} * t.cols, 0.0f);
  for_each_value(g, p, [&](size_t o, size_t kk) { k[kk] = onnx[o]; });
  return k;
}

std::vector<float> onnx_values(const Graph& g, const Param& p, const std::vector<float>& kernel) {
  if (p.conv) return conv_weight_oihw(*p.conv, g.chip_n, kernel);
  std::vector<float> o(p.initial.size(), 0.0f);
  for_each_value(g, p, [&](size_t oi, size_t kk) { o[oi] = kernel[kk]; });
  return o;
}

const char* op_name(Op op) {
  switch (op) {
    case Op::Dense:
      return "Dense";
    case Op::Relu:
      return "Relu";
    case Op::Add:
      return "Add";
    case Op::Conv:
      return "Conv";
    case Op::ConvPool:
      return "ConvPool";
    case Op::ConvPoolGrad:
      return "ConvPoolGrad";
    case Op::ConvPad:
      return "ConvPad";
    case Op::MaxPool:
      return "MaxPool";
    case Op::AvgPool:
      return "AvgPool";
    case Op::GlobalAvgPool:
      return "GlobalAvgPool";
    case Op::ConvGradW:
      return "ConvGradW";
    case Op::ConvGradX:
      return "ConvGradX";
    case Op::MaxPoolGrad:
      return "MaxPoolGrad";
    case Op::AvgPoolGrad:
      return "AvgPoolGrad";
    case Op::GlobalAvgPoolGrad:
      return "GlobalAvgPoolGrad";
    case Op::SoftmaxCe:
      return "SoftmaxCe";
    case Op::DenseGradX:
      return "DenseGradX";
    case Op::DenseGradW:
      return "DenseGradW";
    case Op::BiasGrad:
      return "BiasGrad";
    case Op::ReluGrad:
      return "ReluGrad";
    case Op::AddGrad:
      return "AddGrad";
    case Op::SgdUpdate:
      return "SgdUpdate";
    case Op::AdamBegin:
      return "AdamBegin";
    case Op::AdamUpdate:
      return "AdamUpdate";
    case Op::DenseUpdate:
      return "DenseUpdate";
    case Op::AllReduce:
      return "AllReduce";
  }
  return "?";
}

const char* phase_name(Phase p) {
  switch (p) {
    case Phase::Forward:
      return "fwd";
    case Phase::Loss:
      return "loss";
    case Phase::Backward:
      return "bwd";
    case Phase::Update:
      return "upd";
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
