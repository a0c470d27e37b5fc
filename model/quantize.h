#pragma once
// int8 weights. lenscheck's own rule: symmetric per row (a linear layer's output channel, an embedding table's
// token) with zero point 0, scale = max |row| / limit in fp32, each value w / scale rounded half to even.
// quantize_dynamic as `export-onnx --variant int8` writes it, for MatMulInteger, in the reduced range [-64, 64]
// (get_qmin_qmax_for_qType with reduce_range and symmetric int8); weight-only int8 (W8A32: dequantized by
// Cast · scale or DequantizeLinear, fp32 arithmetic) in the full [-127, 127]. One quantizer for the ONNX
// export and the oracle that simulates both. A graph another quantizer wrote (per tensor, with zero points,
// uint8, another range) brings its own integers (QuantizedParams), which the oracle then simulates instead.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "model/checkpoint.h"

namespace lenscheck {

inline constexpr int kInt8WeightLimit = 64;        // quantize_dynamic
inline constexpr int kWeightOnlyInt8Limit = 127;   // Arithmetic::w8a32

// An activation as static quantization holds it: QuantizeLinear's scale and zero point, fixed by calibration
// (per tensor), x ↦ clamp(round(x / scale) + zero_point, lowest, highest) with x / scale in fp32 rounded half to
// even, read back as DequantizeLinear's (q − zero_point) · scale; [lowest, highest] is its integer type's range
// (uint8 [0, 255], int8 [-128, 127]).
struct QuantizedActivation {
  float scale = 0;
  int32_t zero_point = 0, lowest = 0, highest = 0;
};

// A weight as its quantizer holds it: W[o, i] ≈ (values[o, i] − zero_points[o]) · scales[o], each value in
// [lowest, highest] (the integer type's range, or the quantizer's narrower one). A per-tensor rule repeats
// its one scale and zero point on every row.
struct QuantizedWeight {
  int64_t out = 0, in = 0;
  std::vector<int32_t> values;       // [out, in], as torch.nn.Linear stores W (an embedding table as it is)
  std::vector<float> scales;         // one per output channel
  std::vector<int32_t> zero_points;  // one per output channel
  int32_t lowest = 0, highest = 0;
};

// `w` is a linear layer's weight [out, in] or an embedding table [rows, hidden]; values in [-limit, limit].
QuantizedWeight quantize_per_channel(const Param& w, int limit);
// The same with one scale for the whole matrix (scale = max |w| / limit), repeated on every row: ONNX Runtime's
// quantize_dynamic with its defaults (per_channel False).
QuantizedWeight quantize_per_tensor(const Param& w, int limit);

// What a graph holds quantized: the weights, by the checkpoint's parameter names (for_each_param's), each in the
// checkpoint's layout, and the activations it quantizes statically, keyed as below (input_of, product_of): what
// a scheme's benchmark computes with in place of its own rule (and of DynamicQuantizeLinear's per-run scales).
struct QuantizedParams {
  std::map<std::string, QuantizedWeight> weights;
  std::map<std::string, QuantizedActivation> activations;
};

// QuantizedParams::activations' keys. What an op reads: `input_of` a linear weight's name (the layer's input x),
// layer.L.attention.query, key, probs and value (as the attention's products read them), `input_of`
// layer.L.attention.pre_norm and of layer.L.output (the block's input as its residual sum reads it). What an op
// makes, for every op that reads it: `product_of` a linear weight's name (x·W before the bias), of
// layer.L.attention.scores (Q·Kᵀ before its scale) and of layer.L.attention.context (probs·V before the heads
// are joined).
inline std::string input_of(const std::string& name) { return name + " (input)"; }
inline std::string product_of(const std::string& name) { return name + " (product)"; }

}  // namespace lenscheck
