// SPDX-License-Identifier: Apache-2.0
// The frontend (driver/cnn/frontend/): the converter table is the one list of supported ops
// (docs/cnn.md's op table, supported_ops(), the dispatch), and constant folding evaluates the
// nodes that read only constants.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "cnn_test_util.h"
#include "frontend/op_table.h"
#include "onnx_export.h"
#include "onnx_import.h"

namespace {

using namespace tpu::cnn;
using cnn_test::error_of;

// The op names in the first column of docs/cnn.md's "| ONNX | on the chip |" table: words of
// two or more letters starting with a capital, outside parentheses and code spans.
std::set<std::string> docs_ops() {
  std::ifstream f(std::string(TPU_CNN_SOURCE_DIR) + "/docs/cnn.md");
  std::string line;
  bool in_table = false;
  std::set<std::string> ops;
  while (std::getline(f, line)) {
    if (line.rfind("| ONNX | on the chip |", 0) == 0) {
      in_table = true;
      continue;
    }
    if (!in_table) continue;
    if (line.rfind("|", 0) != 0) break;
    if (line.rfind("|---", 0) == 0) continue;
    std::string cell = line.substr(1, line.find('|', 1) - 1);
    cell = std::regex_replace(cell, std::regex("`[^`]*`"), "");
    for (std::string prev; prev != cell;)
      prev = cell, cell = std::regex_replace(cell, std::regex("\\([^()]*\\)"), "");
    const std::regex word("\\b[A-Z][A-Za-z]+\\b");
    for (auto it = std::sregex_iterator(cell.begin(), cell.end(), word);
         it != std::sregex_iterator(); ++it)
      ops.insert(it->str());
  }
  return ops;
}

TEST(OpTable, DocsTableListsExactlyTheConverterTable) {
  std::set<std::string> table;
  for (const auto& c : frontend::op_converters()) table.insert(std::string(c.op));
  const std::set<std::string> docs = docs_ops();
  ASSERT_FALSE(docs.empty()) << "docs/cnn.md: no \"| ONNX | on the chip |\" table";
  for (const auto& op : table)
    EXPECT_TRUE(docs.count(op)) << op << ": not in docs/cnn.md's op table";
  for (const auto& op : docs)
    EXPECT_TRUE(table.count(op)) << op << ": in docs/cnn.md but not in the converter table";
}

TEST(OpTable, SupportedOpsNamesEveryEntryOnce) {
  const std::string s = supported_ops();
  std::set<std::pair<std::string_view, std::string_view>> seen;
  for (const auto& c : frontend::op_converters()) {
    EXPECT_TRUE(seen.insert({c.domain, c.op}).second) << c.op << ": two entries";
    EXPECT_TRUE(c.convert || c.fold) << c.op << ": neither converted nor folded";
    EXPECT_NE(s.find(std::string(c.listed_as)), std::string::npos) << c.op;
    EXPECT_TRUE(std::regex_search(s, std::regex("\\b" + std::string(c.op) + "\\b"))) << c.op;
  }
  EXPECT_EQ(s.rfind("Conv (groups, depthwise, dilations), QLinearConv, ", 0), 0u) << s;
  const auto names = supported_op_names();
  EXPECT_EQ(names.size(), frontend::op_converters().size());
  EXPECT_NE(std::find(names.begin(), names.end(), "com.microsoft.QLinearAdd"), names.end());
}

TEST(OpTable, LookupIsByDomainAndOp) {
  ASSERT_NE(frontend::find_converter("", "Conv"), nullptr);
  EXPECT_TRUE(frontend::find_converter("", "Conv")->takes_pad);
  EXPECT_EQ(frontend::find_converter(frontend::kMicrosoftDomain, "Conv"), nullptr);
  EXPECT_NE(frontend::find_converter(frontend::kMicrosoftDomain, "QLinearAdd"), nullptr);
  EXPECT_EQ(frontend::find_converter("", "QLinearAdd"), nullptr);
  EXPECT_EQ(frontend::find_converter("", "Gather")->convert, nullptr);  // only on constants
  EXPECT_TRUE(frontend::find_converter("", "Constant")->source);
}

// An op of the default domain the table lacks, and one of com.microsoft's.
TEST(OpTable, OpsOutsideTheTableAreRefusedWithTheList) {
  for (const std::string domain : {"", "com.microsoft"}) {
    OnnxGraph g("t");
    g.input("x", {1, 2, 4, 4});
    g.node("Relu", {"x"}, {"r"}, {}, "relu");
    g.node("Erf", {"r"}, {"y"}, {}, "erf", domain);
    g.output("y");
    const std::string e = error_of([&] { import_onnx_bytes(g.serialize(), "t.onnx"); });
    const std::string want =
        domain.empty()
            ? "t.onnx: node 'erf' (Erf): is not supported. Supported ops: " + supported_ops()
            : "t.onnx: node 'erf' (Erf): operator com.microsoft.Erf is not supported. Supported "
              "ops: " +
                  supported_ops();
    EXPECT_EQ(e, want);
  }
}

TEST(OpTable, PadOnlyBeforeTheOpsThatTakeIt) {
  OnnxGraph g("t");
  g.input("x", {1, 2, 4, 4});
  g.init_int64("pads", {8}, {0, 0, 1, 1, 0, 0, 1, 1});
  g.node("Pad", {"x", "pads"}, {"p"}, {}, "pad");
  g.node("Relu", {"p"}, {"y"}, {}, "relu");
  g.output("y");
  EXPECT_NE(error_of([&] {
              import_onnx_bytes(g.serialize(), "t.onnx");
            }).find("a Pad is supported only before a Conv or an AveragePool"),
            std::string::npos);
}

// ---- constant folding through the importer (passes/fold_constants.cpp) ------------------------

// PyTorch's flatten: Shape -> Gather(0) -> Unsqueeze -> Concat(-1) -> Reshape, all on constants
// but the Shape.
TEST(ConstantFolding, ShapeGatherUnsqueezeConcatReshapeFlattens) {
  OnnxGraph g("t");
  g.input("x", {1, 2, 3, 3});
  g.node("Shape", {"x"}, {"s"}, {}, "shape");
  g.init_int64("zero", {}, {0});
  g.node("Gather", {"s", "zero"}, {"b"}, {OnnxAttr::Int("axis", 0)}, "gather");
  g.init_int64("axes", {1}, {0});
  g.node("Unsqueeze", {"b", "axes"}, {"b1"}, {}, "unsqueeze");
  g.init_int64("minus1", {1}, {-1});
  g.node("Concat", {"b1", "minus1"}, {"shape2"}, {OnnxAttr::Int("axis", 0)}, "concat");
  g.node("Cast", {"shape2"}, {"shape3"}, {OnnxAttr::Int("to", 7)}, "cast");
  g.node("Reshape", {"x", "shape3"}, {"f"}, {}, "reshape");
  g.init_float("w", {4, 18}, std::vector<float>(72, 0.5f));
  g.node("Gemm", {"f", "w"}, {"y"}, {OnnxAttr::Int("transB", 1)}, "fc");
  g.output("y");
  const Network net = import_onnx_bytes(g.serialize(), "t.onnx");
  ASSERT_EQ(net.layers.size(), 1u);
  EXPECT_EQ(net.layers[0].kind, LayerKind::Dense);
  EXPECT_EQ(net.layers[0].fan_in(), 18);
  EXPECT_EQ(net.layers[0].out, (Shape3{4, 1, 1}));
}

// DequantizeLinear of int8 weights folds into a constant that keeps its integers: the Conv
// gets them as given quantization (weight - zero point, per-channel scales).
TEST(ConstantFolding, DequantizeLinearKeepsTheIntegers) {
  OnnxGraph g("t");
  g.input("x", {1, 1, 4, 4});
  g.init_int8("wq", {2, 1, 1, 1}, {5, -7});
  g.init_float("ws", {2}, {0.5f, 0.25f});
  g.init_int8("wz", {2}, {1, -1});
  g.node("DequantizeLinear", {"wq", "ws", "wz"}, {"w"}, {OnnxAttr::Int("axis", 0)}, "dq");
  g.node("Conv", {"x", "w"}, {"y"}, {}, "conv");
  g.output("y");
  const Network net = import_onnx_bytes(g.serialize(), "t.onnx");
  ASSERT_EQ(net.layers.size(), 1u);
  EXPECT_EQ(net.layers[0].weight, (std::vector<float>{2.0f, -1.5f}));  // (5-1)*0.5, (-7+1)*0.25
}

TEST(ConstantFolding, ErrorsNameTheNode) {
  OnnxGraph g("t");
  g.input("x", {1, 1, 4, 4});
  g.init_int64("d", {3}, {1, 2, 3});
  g.init_int64("i", {1}, {5});
  g.node("Gather", {"d", "i"}, {"s"}, {}, "gather");
  g.node("Reshape", {"x", "s"}, {"y"}, {}, "reshape");
  g.output("y");
  EXPECT_EQ(error_of([&] { import_onnx_bytes(g.serialize(), "t.onnx"); }),
            "t.onnx: node 'gather' (Gather): index out of range");
  OnnxGraph h("t");
  h.input("x", {1, 1, 4, 4});
  h.init_float("a", {1}, {1.0f});
  h.node("Relu", {"a"}, {"s"}, {}, "relu_of_constant");
  h.node("Add", {"x", "s"}, {"y"}, {}, "add");
  h.output("y");
  EXPECT_EQ(
      error_of([&] { import_onnx_bytes(h.serialize(), "t.onnx"); }),
      "t.onnx: node 'relu_of_constant' (Relu): is not supported (on constants). Supported ops: " +
          supported_ops());
}

// Errors in node order: an earlier node's conversion error comes before a later node's folding
// error.
TEST(ConstantFolding, ErrorsInNodeOrder) {
  OnnxGraph g("t");
  g.input("x", {1, 1, 4, 4});
  g.init_int64("pads", {8}, {0, 0, 1, 1, 0, 0, 1, 1});
  g.node("Pad", {"x", "pads"}, {"p"}, {OnnxAttr::String("mode", "reflect")}, "pad");
  g.init_int64("d", {3}, {1, 2, 3});
  g.init_int64("i", {1}, {5});
  g.node("Gather", {"d", "i"}, {"s"}, {}, "gather");
  g.node("Reshape", {"p", "s"}, {"y"}, {}, "reshape");
  g.output("y");
  EXPECT_EQ(error_of([&] { import_onnx_bytes(g.serialize(), "t.onnx"); }),
            "t.onnx: node 'pad' (Pad): mode 'reflect': only constant padding");
}

// A node reading a constant that only a later node computes: undefined where it is read (the
// graph is not in topological order), though the later node folds.
TEST(ConstantFolding, ConstantsOfLaterNodesAreUndefinedBefore) {
  OnnxGraph g("t");
  g.input("x", {1, 1, 4, 4});
  g.init_float("a", {1}, {2.0f});
  g.node("Identity", {"later"}, {"s"}, {}, "early");
  g.node("Identity", {"a"}, {"later"}, {}, "late");
  g.node("Add", {"x", "s"}, {"y"}, {}, "add");
  g.output("y");
  EXPECT_EQ(error_of([&] { import_onnx_bytes(g.serialize(), "t.onnx"); }),
            "t.onnx: node 'early' (Identity): reads tensor 'later', which is not defined (no "
            "initializer, graph input or earlier node produces it)");
  OnnxGraph h("t");  // a Dropout ignores its ratio input: the Constant after it still folds
  h.input("x", {1, 1, 4, 4});
  h.node("Dropout", {"x", "ratio"}, {"d"}, {}, "dropout");
  h.node("Constant", {}, {"ratio"}, {OnnxAttr::Float("value_float", 0.5f)}, "ratio");
  h.node("Relu", {"d"}, {"y"}, {}, "relu");
  h.output("y");
  const Network net = import_onnx_bytes(h.serialize(), "t.onnx");
  ASSERT_EQ(net.layers.size(), 1u);
  EXPECT_EQ(net.layers[0].act, Activation::Relu);
}

}  // namespace
