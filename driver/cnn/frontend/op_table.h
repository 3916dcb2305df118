// SPDX-License-Identifier: Apache-2.0
// The converter table: every ONNX op the frontend imports, with the function that converts it
// on data tensors and the one that evaluates it when all its inputs are constants. It is the
// one source of the supported ops: the importer dispatches through it, supported_ops()
// (messages) is generated from it, and a test (tests/cnn/frontend_test.cpp) checks the op table
// of docs/cnn.md against it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "frontend/graph.h"

namespace tpu::cnn::frontend {

class Importer;

// The domain of ONNX Runtime's contrib ops (QLinearAdd, ...); "" is the default (ai.onnx).
constexpr std::string_view kMicrosoftDomain = "com.microsoft";

struct OpConverter {
  std::string_view domain;  // "" (ai.onnx) or kMicrosoftDomain
  std::string_view op;
  // The node on data tensors (nullptr: only on constants).
  void (*convert)(Importer& im, const onnx::NodeProto& n) = nullptr;
  // The node's output when every input is a constant (nullptr: not folded): the constant
  // folding pass (passes/fold_constants.h) evaluates it.
  Const (*fold)(const Graph& g, const onnx::NodeProto& n) = nullptr;
  // Its item in supported_ops(); consecutive entries with the same item are listed once.
  std::string_view listed_as;
  // Reads no tensor (Constant): folded whatever its inputs.
  bool source = false;
  // Takes the zero padding of a Pad it reads as its own (Conv, AveragePool; Pad adds up).
  bool takes_pad = false;
};

// Every entry, in the order of supported_ops().
const std::vector<OpConverter>& op_converters();
// The entry of (domain, op); nullptr if there is none.
const OpConverter* find_converter(std::string_view domain, std::string_view op);

}  // namespace tpu::cnn::frontend
