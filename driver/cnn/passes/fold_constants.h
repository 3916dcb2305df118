// SPDX-License-Identifier: Apache-2.0
// Constant folding, the pass before conversion: frontend::Graph -> frontend::Graph. Every node
// that reads only constants is evaluated by its op's `fold` entry in the converter table
// (frontend/op_table.h) and leaves the graph; its output joins the constants for the nodes
// after it (Constant nodes, DequantizeLinear of integer weights, shape arithmetic ...). Tested
// on hand-built graphs (tests/cnn/passes_test.cpp).
#pragma once

#include "frontend/graph.h"

namespace tpu::cnn::passes {

// Folds, in node order, every node of the default (or com.microsoft) domain with an output whose
// inputs are all constants (a Constant node has none). Leaves alone the nodes that read a data
// tensor, or a tensor no earlier node defines, those of other domains, those whose output an
// earlier node reads (so that node finds it undefined, as the file says) and those fold_node
// refuses (and so what reads their outputs): the importer reports or folds each where it stands,
// in node order, as it converts. The frontend runs it before converting, and again on the nodes
// left when a converter has made a constant (Shape of a data tensor).
frontend::Graph fold_constants(frontend::Graph g);
// Node n (every input a constant in g.consts) evaluated by its `fold` entry; throws Error naming
// the node when its op has none ("is not supported (on constants)") or the folder refuses the
// constants.
frontend::Const fold_node(const frontend::Graph& g, const onnx::NodeProto& n);

// The folders: the converter table's `fold` entries. Each reads node n's inputs from g.consts
// (all present) and returns its output.
frontend::Const fold_constant(const frontend::Graph& g, const onnx::NodeProto& n);  // Constant
frontend::Const fold_copy(const frontend::Graph& g, const onnx::NodeProto& n);  // Identity, Cast
frontend::Const fold_dequantize(const frontend::Graph& g,
                                const onnx::NodeProto& n);  // DequantizeLinear
frontend::Const fold_gather(const frontend::Graph& g, const onnx::NodeProto& n);   // Gather (1-D)
frontend::Const fold_squeeze(const frontend::Graph& g, const onnx::NodeProto& n);  // (Un)squeeze
frontend::Const fold_concat(const frontend::Graph& g, const onnx::NodeProto& n);   // Concat

}  // namespace tpu::cnn::passes
