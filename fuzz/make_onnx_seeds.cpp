// SPDX-License-Identifier: Apache-2.0
// Writes the seed corpus of fuzz_onnx_loader: small ONNX models of the shapes the loader
// accepts (dense, conv + pool + dense, QDQ) and a few it must refuse. Run once:
//   build-fuzz/make_onnx_seeds fuzz/corpus/onnx_loader
#include <onnx/onnx_pb.h>

#include <fstream>
#include <string>
#include <vector>

namespace {

onnx::TensorProto tensor(const std::string& name, std::vector<int64_t> dims, float start) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::FLOAT);
  int64_t n = 1;
  for (int64_t d : dims) {
    t.add_dims(d);
    n *= d;
  }
  for (int64_t i = 0; i < n; ++i) t.add_float_data(start + 0.01f * float(i % 17) - 0.05f);
  return t;
}

void io(onnx::ValueInfoProto* v, const std::string& name, std::vector<int64_t> dims) {
  v->set_name(name);
  auto* tt = v->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) tt->mutable_shape()->add_dim()->set_dim_value(d);
}

onnx::NodeProto* node(onnx::GraphProto* g, const std::string& op, std::vector<std::string> in,
                      std::vector<std::string> out) {
  auto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(op + "_" + out[0]);
  for (auto& s : in) n->add_input(s);
  for (auto& s : out) n->add_output(s);
  return n;
}

void ints(onnx::NodeProto* n, const std::string& name, std::vector<int64_t> v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}

onnx::ModelProto model() {
  onnx::ModelProto m;
  m.set_ir_version(7);
  m.add_opset_import()->set_version(13);
  m.mutable_graph()->set_name("seed");
  return m;
}

void save(const onnx::ModelProto& m, const std::string& path) {
  std::ofstream f(path, std::ios::binary);
  m.SerializeToOstream(&f);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : ".";
  {  // dense: Gemm + Relu + Gemm
    auto m = model();
    auto* g = m.mutable_graph();
    io(g->add_input(), "x", {1, 8});
    *g->add_initializer() = tensor("w1", {8, 4}, 0.1f);
    *g->add_initializer() = tensor("b1", {4}, 0.0f);
    *g->add_initializer() = tensor("w2", {4, 3}, -0.1f);
    node(g, "Gemm", {"x", "w1", "b1"}, {"h"});
    node(g, "Relu", {"h"}, {"r"});
    node(g, "MatMul", {"r", "w2"}, {"y"});
    io(g->add_output(), "y", {1, 3});
    save(m, dir + "/dense.onnx");
  }
  {  // conv: Conv + Relu + MaxPool + Flatten + Gemm
    auto m = model();
    auto* g = m.mutable_graph();
    io(g->add_input(), "x", {1, 1, 6, 6});
    *g->add_initializer() = tensor("k", {2, 1, 3, 3}, 0.2f);
    *g->add_initializer() = tensor("kb", {2}, 0.0f);
    *g->add_initializer() = tensor("w", {8, 2}, 0.05f);
    auto* c = node(g, "Conv", {"x", "k", "kb"}, {"c"});
    ints(c, "kernel_shape", {3, 3});
    node(g, "Relu", {"c"}, {"r"});
    auto* p = node(g, "MaxPool", {"r"}, {"p"});
    ints(p, "kernel_shape", {2, 2});
    ints(p, "strides", {2, 2});
    node(g, "Flatten", {"p"}, {"f"});
    node(g, "Gemm", {"f", "w"}, {"y"});
    io(g->add_output(), "y", {1, 2});
    save(m, dir + "/conv.onnx");
  }
  {  // refused: an unsupported op
    auto m = model();
    auto* g = m.mutable_graph();
    io(g->add_input(), "x", {1, 4});
    node(g, "Softmax", {"x"}, {"y"});
    io(g->add_output(), "y", {1, 4});
    save(m, dir + "/softmax.onnx");
  }
  {  // empty model
    save(model(), dir + "/empty.onnx");
  }
  return 0;
}
