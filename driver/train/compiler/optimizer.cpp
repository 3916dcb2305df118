// SPDX-License-Identifier: Apache-2.0
#include "compiler/optimizer.h"

#include <cmath>
#include <stdexcept>

namespace tpu::train::compiler {

namespace {

void check_options(const TrainOptions& o) {
  auto req = [](bool ok, const char* what) {
    if (!ok) throw std::invalid_argument(std::string("append_update: ") + what);
  };
  req(std::isfinite(o.lr) && o.lr > 0.0f, "the learning rate must be > 0 and finite");
  req(o.momentum >= 0.0f && o.momentum < 1.0f, "momentum must be in [0, 1)");
  req(std::isfinite(o.weight_decay) && o.weight_decay >= 0.0f,
      "weight decay must be >= 0 and finite");
  if (o.optimizer == Optimizer::Adam) {
    req(o.beta1 >= 0.0f && o.beta1 < 1.0f && o.beta2 >= 0.0f && o.beta2 < 1.0f,
        "Adam's betas must be in [0, 1)");
    req(std::isfinite(o.eps) && o.eps > 0.0f, "Adam's epsilon must be > 0 and finite");
    req(o.momentum == 0.0f, "momentum is an SGD option (Adam has beta1)");
  }
}

// The forward node reading parameter tensor p (its layer).
int layer_of(const Graph& g, int p) {
  for (const Node& n : g.nodes)
    if (n.phase == Phase::Forward)
      for (int in : n.in)
        if (in == p) return n.layer;
  return -1;
}

}  // namespace

void append_update(Graph& g, const TrainOptions& o) {
  check_options(o);
  if (g.loss < 0)
    throw std::invalid_argument("append_update: the graph has no loss (run append_backward)");
  const bool adam = o.optimizer == Optimizer::Adam;
  if (adam) {
    g.adam_state = g.add_tensor(Tensor{"adam state", TensorKind::AdamState, 4, 1, false});
    g.add_node(
        make_node(Op::AdamBegin, "adam", "", Phase::Update, -1, {g.adam_state}, {g.adam_state}));
  }
  for (size_t i = 0; i < g.params.size(); ++i) {
    Param& p = g.params[i];
    if (p.grad < 0)
      throw std::invalid_argument("append_update: parameter '" + p.initializer +
                                  "' has no gradient");
    const Tensor pt = g.tensors[static_cast<size_t>(p.tensor)];
    auto state = [&](const char* what) {
      const int id = g.add_tensor(Tensor{std::string(what) + "(" + p.initializer + ")",
                                         TensorKind::OptState, pt.rows, pt.cols, pt.row_vector});
      p.state.push_back(id);
      return id;
    };
    const int layer = layer_of(g, p.tensor);
    const std::string name = g.nodes[static_cast<size_t>(layer)].name;
    const std::string op = g.nodes[static_cast<size_t>(layer)].onnx_op;
    if (adam) {
      const int m = state("m"), v = state("v");
      g.add_node(make_node(Op::AdamUpdate, name, op, Phase::Update, layer,
                           {p.tensor, p.grad, m, v, g.adam_state}, {p.tensor, m, v}));
    } else if (o.momentum != 0.0f) {
      const int vel = state("velocity");
      g.add_node(make_node(Op::SgdUpdate, name, op, Phase::Update, layer, {p.tensor, p.grad, vel},
                           {p.tensor, vel}));
    } else {
      g.add_node(
          make_node(Op::SgdUpdate, name, op, Phase::Update, layer, {p.tensor, p.grad}, {p.tensor}));
    }
  }
}

}  // namespace tpu::train::compiler
