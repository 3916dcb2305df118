// SPDX-License-Identifier: Apache-2.0
// The training compiler's IR (docs/training.md "The training compiler"): a graph of tensors
// and nodes that the passes extend in pipeline order:
//   import_onnx   (import.h)     ONNX -> forward nodes (Phase::Forward)
//   append_backward (autodiff.h) + the loss (Phase::Loss) and the gradients (Phase::Backward)
//   insert_gradient_allreduce (allreduce.h)  on a pod only: + the AllReduce of every gradient
//   append_update (optimizer.h)  + the optimizer's state and update nodes (Phase::Update)
//   fuse_conv_pool (fuse.h)      Conv -> MaxPool [-> Relu] and their gradients as two nodes
//   fuse_dense_update (fuse.h)   a Dense's DenseGradW and the update of its weight as one node
//   place         (placement.h)  every tensor's home in device memory, each node's VMEM chunks
//   schedule      (schedule.h)   the order the nodes run in, per program (step, forward)
//   emit          (emit.h)       the programs, through the kernels (kernels.h) and ProgramBuilder
// Every tensor is a matrix in the kernels' layout (layout.h): activations have the batch as
// rows (batch x features), or are images in the image layout (kernels.h: rows (y, x, b),
// channels in lanes); a weight is inputs x outputs (a Conv's weight_rows x cout), a bias one
// row. The IR is built for one chip's N (image and conv-input shapes depend on it).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kernels.h"
#include "pod.h"

namespace tpu::train::compiler {

enum class TensorKind {
  Input,       // the batch (placed by the host every step)
  Labels,      // int32 labels, N per row (placed by the host every step)
  Activation,  // computed by a forward node
  Weight,      // a trainable parameter (an ONNX initializer), fp32 master copy
  Gradient,    // d(loss)/d(tensor)
  OptState,    // momentum / Adam moments of one parameter (zeros at init)
  AdamState,   // Adam's four rows (beta1^t, beta2^t, the step's two factors)
  Constant,    // written once at init (the softmax pad row)
  Loss,        // one row: the batch's mean loss in every lane
};

enum class Op {
  // forward
  Dense,          // in: X, W[, b]  out: Y = X.W + b
  Relu,           // in: X          out: Y
  Add,            // in: A, B       out: A + B (same shape; a residual join)
  Conv,           // in: X (conv input), W[, b]  out: Y (image)
  ConvPad,        // in: image      out: the conv input with its zero border (cin > 1)
  MaxPool,        // in: X          out: Y, argmax (int32 tap per output)
  AvgPool,        // in: X          out: Y
  GlobalAvgPool,  // in: X          out: Y (batch x channels)
  // made by fuse_conv_pool (fuse.h): a Conv, the MaxPool after it and an optional ReLU after
  // that, band by band: the conv output never exists whole; the bias is added after pooling
  ConvPool,  // in: X (conv input), W[, b]  out: Y (pooled [+ relu]), argmax
  // loss
  SoftmaxCe,  // in: logits, labels, pad row  out: dlogits, loss
  // backward
  DenseGradX,         // in: dY, W      out: dX = dY.W^T
  DenseGradW,         // in: X, dY      out: dW = X^T.dY
  BiasGrad,           // in: dY         out: db (column sums)
  ReluGrad,           // in: X, dY      out: dX
  AddGrad,            // in: g1, g2     out: g1 + g2 (gradients of a tensor read more than once)
  ConvGradW,          // in: X (conv input), dY  out: dW
  ConvGradX,          // in: dY, W      out: dX (the image the ConvPad read)
  MaxPoolGrad,        // in: argmax, dY out: dX
  AvgPoolGrad,        // in: dY         out: dX
  GlobalAvgPoolGrad,  // in: dY     out: dX
  ConvPoolGrad,       // in: X, argmax, Y, dY  out: dW[, db] (ConvPool's weights, band by band)
  // update
  SgdUpdate,   // in/out: W; in: dW[, velocity in/out]
  AdamBegin,   // in/out: Adam state rows
  AdamUpdate,  // in/out: W, m, v; in: dW, Adam state
  // made by fuse_dense_update (fuse.h): a Dense weight's gradient and its update, chunk by
  // chunk of K (dW never leaves VMEM)
  DenseUpdate,  // in: X, dY, then the update's inputs but dW (W, m, v, state | W[, velocity])
  // made by insert_gradient_allreduce (allreduce.h, data-parallel training on a pod): the sum
  // of a tensor over the pod's chips, in place, through the inter-chip links
  AllReduce,  // in/out: the tensor (a parameter's gradient, the loss)
};

enum class Phase { Forward, Loss, Backward, Update };

struct Tensor {
  std::string name;
  TensorKind kind = TensorKind::Activation;
  uint32_t rows = 0, cols = 0;  // the matrix; a bias / a row is rows = 1
  bool row_vector = false;      // one VMEM row per column block (pitch 1): biases
  // A view of another tensor's memory (a flattened image: rows = batch, pitch = batch): it has
  // no home of its own.
  int view_of = -1;
};

struct Node {
  Op op = Op::Dense;
  std::string name;     // the ONNX node it comes from (or what it is: "loss", "adam")
  std::string onnx_op;  // "Gemm", "MatMul", "Relu", ... ("" for compiler-made nodes)
  Phase phase = Phase::Forward;
  int layer = -1;            // the forward node it belongs to (LayerCycles), -1: none (loss)
  std::vector<int> in, out;  // tensor ids
  ConvGeom conv;             // Conv, ConvPad, ConvGradW, ConvGradX
  PoolGeom pool;             // the pools and their gradients (GlobalAvgPool: kh = h, kw = w)
  bool relu = false;         // ConvPool, ConvPoolGrad: a ReLU after the pool is part of the node
};

Node make_node(Op op, std::string name, std::string onnx_op, Phase phase, int layer,
               std::vector<int> in, std::vector<int> out);

// A trainable parameter: the ONNX initializer it was read from and how its values map onto
// the tensor.
struct Param {
  std::string initializer;
  std::vector<int64_t> dims;  // the initializer's ONNX shape
  bool transposed = false;    // ONNX holds W^T (Gemm transB = 1: [outputs, inputs])
  // A Dense weight's row (input) for each ONNX input index, when the Dense reads a flattened
  // image whose features are not in ONNX's order; empty: the same order.
  std::vector<uint32_t> row_map;
  std::optional<ConvGeom> conv;  // a Conv's weight: OIHW <-> conv_weight_values
  int tensor = -1, grad = -1;
  std::vector<int> state;      // optimizer state tensors (velocity; or m, v)
  std::vector<float> initial;  // the initializer's values, in ONNX order
};

struct Graph {
  std::vector<Tensor> tensors;
  std::vector<Node> nodes;
  std::vector<Param> params;
  uint32_t batch = 0;
  uint32_t input_c = 0, input_h = 0, input_w = 0;
  uint32_t classes = 0;
  uint32_t chip_n = 0;                       // the chip's N the graph is built for
  std::optional<ConvGeom> input_conv;        // the input is this Conv's input (with its border)
  int input = -1, logits = -1;               // set by import_onnx
  int labels = -1, loss = -1, pad_row = -1;  // set by append_backward
  int adam_state = -1;                       // set by append_update (Adam)
  // Data-parallel training (allreduce.h): the loss is the mean over loss_batch examples (the
  // pod's global batch; 0: batch); the pod the AllReduce nodes run on, and the chip emit()
  // emits them for.
  uint32_t loss_batch = 0;
  PodTopology pod = PodTopology::ring(1);
  uint32_t pod_chip = 0;

  int add_tensor(Tensor t);
  int add_node(Node n);
  // The nodes reading tensor t, in node order.
  std::vector<int> readers(int t) const;
  // One line per node ("fwd Dense fc1 [Gemm] x(4x6), fc1.W(6x5), fc1.b(1x5) -> fc1(4x5)"),
  // what the pass tests compare.
  std::string dump() const;
};

// A parameter's values in its tensor's layout (rows x cols, row-major, as layout.h's pack
// takes them) from ONNX's, and back.
std::vector<float> kernel_values(const Graph& g, const Param& p, const std::vector<float>& onnx);
std::vector<float> onnx_values(const Graph& g, const Param& p, const std::vector<float>& kernel);

const char* op_name(Op op);
const char* phase_name(Phase p);

}  // namespace tpu::train::compiler
