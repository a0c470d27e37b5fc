#pragma once
// ONNX export of a loaded checkpoint: BertModel's graph as exporters of Hugging Face models lay it out
// (inputs input_ids, attention_mask, token_type_ids [batch_size, sequence_length], int64; output
// last_hidden_state), written with the ONNX library's protobuf schema and validated by its checker.
// No torch.
#include <filesystem>
#include <string>

#include "model/checkpoint.h"

namespace lenscheck::onnx_export {

// ONNX 1.12 (Debian bookworm's libonnx-dev) knows opsets up to 17; 17 is the first with
// LayerNormalization, which torch.onnx emits for nn.LayerNorm from opset 17 on.
inline constexpr int kOpset = 17;

enum class Variant {
  fp32,
  fp16,  // every weight, constant and activation in float16; LayerNormalization keeps its default
         // stash_type (statistics in float32), as the ONNX spec defines it
  int8,  // the linear layers dynamically quantized as onnxruntime.quantization.quantize_dynamic writes
         // them: DynamicQuantizeLinear on the activation (uint8, per tensor), MatMulInteger with int8
         // weights (symmetric, per output channel, reduced range [-64, 64]), then Cast and Mul by the
         // product of the scales, then the bias in float32
};
Variant parse_variant(const std::string& name);  // "fp32", "fp16", "int8"; InputError otherwise
std::string variant_name(Variant variant);

struct ExportOptions {
  Variant variant = Variant::fp32;
  bool trace = false;  // every tensor of trace_schema() as a graph output under its canonical name
};

struct ExportSummary {
  size_t nodes = 0, initializers = 0, outputs = 0;
  uint64_t bytes = 0;
};

// Writes `out` (an InputError names it if it cannot be written). The graph passes onnx::checker.
ExportSummary export_onnx(const Checkpoint& checkpoint, const ExportOptions& options, const std::filesystem::path& out);

}  // namespace lenscheck::onnx_export
