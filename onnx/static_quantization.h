#pragma once
// Static quantization seen through (shipped_graph.h): a graph whose activations are quantized at fixed scales
// rewritten as the float graph it stands for, so that graph_patterns.h finds its BERT as in any other, with
// what was quantized where kept aside for the int8 scheme's benchmark (model/quantize.h, QuantizedActivation).
// Each form is one recogniser, tried in turn at each node, as graph_patterns.h's are:
//   QDQ (onnxruntime.quantization's default format): QuantizeLinear(x) → DequantizeLinear, the pair read as x
//   by every op that reads its output;
//   QOperator: QuantizeLinear(x) → QLinearMatMul(·, W_q or another quantized operand) → DequantizeLinear, read as
//   MatMul(x, DequantizeLinear(W_q)) whose product is requantized.
// A quantized activation no form recognises (QLinearAdd, a QuantizeLinear whose integers an op other than
// DequantizeLinear or QLinearMatMul reads, a scale per channel) is named in `unmodelled`.
#include <onnx/onnx_pb.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "model/quantize.h"

namespace lenscheck::onnx_export {

struct QuantizedReads {
  // (the reading node's index in the rewritten graph, its input) → the quantization of what it reads there.
  std::map<std::pair<int, int>, QuantizedActivation> inputs;
  // The rewritten MatMul's index → the requantization of its product (a QLinearMatMul's output).
  std::map<int, QuantizedActivation> products;
  // "QLinearAdd node /layer.0/Add_quant", "QuantizeLinear of x read by Gather node …": what no form recognises.
  std::vector<std::string> unmodelled;
  bool any() const { return !inputs.empty() || !products.empty() || !unmodelled.empty(); }
};

// Whether `g` has an op that quantizes activations or computes on their integers (QuantizeLinear, QLinearMatMul,
// QLinearAdd, …): what see_through_static_quantization reads or names.
bool quantizes_activations(const onnx::GraphProto& g);

// Rewrites `g` as the float graph its statically quantized activations stand for; returns what was quantized
// where. A graph with none is left as it is (and `any()` is false).
QuantizedReads see_through_static_quantization(onnx::GraphProto& g);

}  // namespace lenscheck::onnx_export
