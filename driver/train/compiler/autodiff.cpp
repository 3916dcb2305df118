// SPDX-License-Identifier: Apache-2.0
#include "compiler/autodiff.h"

#include <map>
#include <stdexcept>

namespace tpu::train::compiler {

namespace {

class Autodiff {
 public:
  explicit Autodiff(Graph& g) : g_(g) {}
  void run();

 private:
  const Tensor& t(int id) const { return g_.tensors[static_cast<size_t>(id)]; }
  // A new gradient contribution for tensor x (its readers' gradients are summed later).
  int contribution(int x);
  // The gradient of x: its only contribution, or their sum (AddGrad nodes of `layer`).
  int total(int x, int layer);
  void backward(const Node& n);
  int add(Op op, const Node& fwd, std::vector<int> in, std::vector<int> out);
  // The gradient tensor of parameter tensor p (made on first use).
  int param_grad(int p);
  void conv_backward(const Node& n, int dy);

  Graph& g_;
  std::map<int, std::vector<int>> grads_;  // tensor -> its gradient contributions, in order
};

int Autodiff::contribution(int x) {
  if (t(x).view_of >= 0) {  // a flattened image: the gradient of the image, seen as the view
    const int base = contribution(t(x).view_of);
    Tensor v = t(x);
    v.name = "d(" + t(x).name + ")";
    v.kind = TensorKind::Gradient;
    v.view_of = base;
    return g_.add_tensor(v);
  }
  std::vector<int>& c = grads_[x];
  const std::string name =
      "d(" + t(x).name + ")" + (c.empty() ? "" : "#" + std::to_string(c.size() + 1));
  const int id =
      g_.add_tensor(Tensor{name, TensorKind::Gradient, t(x).rows, t(x).cols, t(x).row_vector});
  c.push_back(id);
  return id;
}

int Autodiff::total(int x, int layer) {
  auto it = grads_.find(x);
  if (it == grads_.end()) return -1;
  const std::vector<int> c = it->second;
  int sum = c[0];
  for (size_t i = 1; i < c.size(); ++i) {
    const std::string name = "d(" + t(x).name + ")+" + std::to_string(i + 1);
    const int s = g_.add_tensor(Tensor{name, TensorKind::Gradient, t(x).rows, t(x).cols, false});
    g_.add_node(make_node(Op::AddGrad, "sum d(" + t(x).name + ")", "", Phase::Backward, layer,
                          {sum, c[i]}, {s}));
    sum = s;
  }
  return sum;
}

int Autodiff::add(Op op, const Node& fwd, std::vector<int> in, std::vector<int> out) {
  return g_.add_node(make_node(op, fwd.name, fwd.onnx_op, Phase::Backward, fwd.layer, std::move(in),
                               std::move(out)));
}

int Autodiff::param_grad(int tensor) {
  for (Param& p : g_.params) {
    if (p.tensor != tensor) continue;
    if (p.grad < 0) {
      p.grad = g_.add_tensor(Tensor{"d(" + p.initializer + ")", TensorKind::Gradient,
                                    t(p.tensor).rows, t(p.tensor).cols, t(p.tensor).row_vector});
    }
    return p.grad;
  }
  throw std::logic_error("internal: append_backward: tensor '" + t(tensor).name +
                         "' is not a parameter");
}

void Autodiff::conv_backward(const Node& n, int dy) {
  const int x = n.in[0], w = n.in[1];
  g_.nodes[static_cast<size_t>(add(Op::ConvGradW, n, {x, dy}, {param_grad(w)}))].conv = n.conv;
  if (n.in.size() > 2) add(Op::BiasGrad, n, {dy}, {param_grad(n.in[2])});
  if (x == g_.input) return;
  for (const Node& pad : g_.nodes) {  // dX goes to the image the ConvPad read
    if (pad.op == Op::ConvPad && pad.out[0] == x) {
      const int id = add(Op::ConvGradX, n, {dy, w}, {contribution(pad.in[0])});
      g_.nodes[static_cast<size_t>(id)].conv = n.conv;
      return;
    }
  }
  // No ConvPad: an unpadded conv reads the image itself.
  g_.nodes[static_cast<size_t>(add(Op::ConvGradX, n, {dy, w}, {contribution(x)}))].conv = n.conv;
}

void Autodiff::backward(const Node& n) {
  if (n.op == Op::ConvPad) return;  // its gradient is the Conv's dX (conv_backward)
  const int dy = total(n.out[0], n.layer);
  if (dy < 0) {
    throw std::invalid_argument("append_backward: node '" + n.name + "' (" + n.onnx_op +
                                "): its output does not reach the loss");
  }
  const int x = n.in[0];
  const bool dx_needed = x != g_.input;
  switch (n.op) {
    case Op::Dense: {
      const int w = n.in[1];
      add(Op::DenseGradW, n, {x, dy}, {param_grad(w)});
      if (n.in.size() > 2) add(Op::BiasGrad, n, {dy}, {param_grad(n.in[2])});
      if (dx_needed) add(Op::DenseGradX, n, {dy, w}, {contribution(x)});
      break;
    }
    case Op::Add:  // both inputs get dY itself
      for (int in : n.in)
        if (in != g_.input) grads_[in].push_back(dy);
      break;
    case Op::Relu:
      if (dx_needed) add(Op::ReluGrad, n, {x, dy}, {contribution(x)});
      break;
    case Op::Conv:
      conv_backward(n, dy);
      break;
    case Op::MaxPool:
    case Op::AvgPool:
    case Op::GlobalAvgPool: {
      if (!dx_needed) break;
      const Op op = n.op == Op::MaxPool   ? Op::MaxPoolGrad
                    : n.op == Op::AvgPool ? Op::AvgPoolGrad
                                          : Op::GlobalAvgPoolGrad;
      std::vector<int> in =
          n.op == Op::MaxPool ? std::vector<int>{n.out[1], dy} : std::vector<int>{dy};
      const int id = add(op, n, std::move(in), {contribution(x)});
      g_.nodes[static_cast<size_t>(id)].pool = n.pool;
      break;
    }
    default:
      throw std::invalid_argument(std::string("append_backward: node '") + n.name +
                                  "': no gradient for " + op_name(n.op));
  }
}

void Autodiff::run() {
  if (g_.loss >= 0) throw std::invalid_argument("append_backward: the graph has a loss already");
  const Tensor& lg = t(g_.logits);
  g_.labels = g_.add_tensor(Tensor{"labels", TensorKind::Labels, g_.batch, 1, false});
  g_.pad_row = g_.add_tensor(Tensor{"softmax pad row", TensorKind::Constant, 1, lg.cols, true});
  g_.loss = g_.add_tensor(Tensor{"loss", TensorKind::Loss, 1, 1, true});
  const size_t forward = g_.nodes.size();
  const int dlogits = contribution(g_.logits);
  g_.add_node(make_node(Op::SoftmaxCe, "loss", "", Phase::Loss, -1,
                        {g_.logits, g_.labels, g_.pad_row}, {dlogits, g_.loss}));
  for (size_t i = forward; i-- > 0;) backward(Node(g_.nodes[i]));
}

}  // namespace

void append_backward(Graph& g) { Autodiff(g).run(); }

}  // namespace tpu::train::compiler
