// SPDX-License-Identifier: Apache-2.0
// The training compiler's IR (docs/training.md "The training compiler"): a graph of tensors
// and nodes that the passes extend in pipeline order:
//   import_onnx   (import.h)     ONNX -> forward nodes (Phase::Forward)
//   append_backward (autodiff.h) + the loss (Phase::Loss) and the gradients (Phase::Backward)
//   append_update (optimizer.h)  + the optimizer's state and update nodes (Phase::Update)
//   place         (placement.h)  every tensor's home in device memory, each node's VMEM chunks
//   schedule      (schedule.h)   the order the nodes run in, per program (step, forward)
//   emit          (emit.h)       the programs, through the kernels (kernels.h) and ProgramBuilder
// Every tensor is a matrix in the kernels' layout (layout.h): activations have the batch as
// rows (batch x features), a weight is inputs x outputs, a bias is one row.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tpu::train::compiler {

enum class TensorKind {
  Input,      // the batch (placed by the host every step)
  Labels,     // int32 labels, N per row (placed by the host every step)
  Activation, // computed by a forward node
  Weight,     // a trainable parameter (an ONNX initializer), fp32 master copy
  Gradient,   // d(loss)/d(tensor)
  OptState,   // momentum / Adam moments of one parameter (zeros at init)
  AdamState,  // Adam's four rows (beta1^t, beta2^t, the step's two factors)
  Constant,   // written once at init (the softmax pad row)
  Loss,       // one row: the batch's mean loss in every lane
};

enum class Op {
  // forward
  Dense,          // in: X, W[, b]  out: Y = X.W + b
  Relu,           // in: X          out: Y
  Add,            // in: A, B       out: A + B (same shape; a residual join)
  // loss
  SoftmaxCe,      // in: logits, labels, pad row  out: dlogits, loss
  // backward
  DenseGradX,     // in: dY, W      out: dX = dY.W^T
  DenseGradW,     // in: X, dY      out: dW = X^T.dY
  BiasGrad,       // in: dY         out: db (column sums)
  ReluGrad,       // in: X, dY      out: dX
  AddGrad,        // in: g1, g2     out: g1 + g2 (gradients of a tensor read more than once)
  // update
  SgdUpdate,      // in/out: W; in: dW[, velocity in/out]
  AdamBegin,      // in/out: Adam state rows
  AdamUpdate,     // in/out: W, m, v; in: dW, Adam state
};

enum class Phase { Forward, Loss, Backward, Update };

struct Tensor {
  std::string name;
  TensorKind kind = TensorKind::Activation;
  uint32_t rows = 0, cols = 0;  // the matrix; a bias / a row is rows = 1
  bool row_vector = false;      // one VMEM row per column block (pitch 1): biases
};

struct Node {
  Op op = Op::Dense;
  std::string name;     // the ONNX node it comes from (or what it is: "loss", "adam")
  std::string onnx_op;  // "Gemm", "MatMul", "Relu", ... ("" for compiler-made nodes)
  Phase phase = Phase::Forward;
  int layer = -1;  // the forward node it belongs to (LayerCycles), -1: none (loss)
  std::vector<int> in, out;  // tensor ids
};

// A trainable parameter: the ONNX initializer it was read from and how its values map onto
// the tensor.
struct Param {
  std::string initializer;
  std::vector<int64_t> dims;  // the initializer's ONNX shape
  bool transposed = false;    // ONNX holds W^T (Gemm transB = 1: [outputs, inputs])
  int tensor = -1, grad = -1;
  std::vector<int> state;  // optimizer state tensors (velocity; or m, v)
  std::vector<float> initial;  // the initializer's values, in ONNX order
};

struct Graph {
  std::vector<Tensor> tensors;
  std::vector<Node> nodes;
  std::vector<Param> params;
  uint32_t batch = 0;
  uint32_t input_c = 0, input_h = 0, input_w = 0;
  uint32_t classes = 0;
  int input = -1, logits = -1;               // set by import_onnx
  int labels = -1, loss = -1, pad_row = -1;  // set by append_backward
  int adam_state = -1;                       // set by append_update (Adam)

  int add_tensor(Tensor t);
  int add_node(Node n);
  // The nodes reading tensor t, in node order.
  std::vector<int> readers(int t) const;
  // One line per node ("fwd Dense fc1 [Gemm] x(4x6), fc1.W(6x5), fc1.b(1x5) -> fc1(4x5)"),
  // what the pass tests compare.
  std::string dump() const;
};

const char* op_name(Op op);
const char* phase_name(Phase p);

}  // namespace tpu::train::compiler
