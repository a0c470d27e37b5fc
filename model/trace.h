#pragma once
// A trace: every named intermediate tensor of one forward pass, in forward order, plus the tokens.
// The canonical names and their dimensions are the contract between the oracle and the runtime.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "model/config.h"

namespace lenscheck {

struct Tensor {
  std::vector<int64_t> shape;
  std::vector<double> values;  // row-major; doubles hold fp32 and fp64 traces alike, exactly

  Tensor() = default;
  explicit Tensor(std::vector<int64_t> shape_);
  size_t numel() const { return values.size(); }
};

// What each axis of a trace tensor indexes; used to name a worst element as `[h1, the → scissors]`.
enum class Axis { head, query, key, token, feature };

struct TensorSpec {
  std::string name;
  std::vector<Axis> axes;
  std::vector<int64_t> shape;
};

// The names of a trace's tensors, written once: trace_schema lists them, and the runtime, the oracle
// and the ONNX export name what they record with these.
inline constexpr const char* kEmbeddingsOutput = "embeddings.output";
// Per layer, in forward order.
enum class LayerTensor {
  query, key, value,  // [H, T, Dh]
  scores, probs,      // [H, T, T]
  context,            // [T, D], the heads concatenated
  attention_pre_norm, // [T, D], the output projection plus the residual, before LayerNorm: y
  attention_output,   // [T, D], after the residual and LayerNorm
  value_norm, transformed_norm,                                          // [H, T]: ‖v‖, ‖f(x)‖
  lens_value_norm, lens_transformed_norm, lens_summed_transformed_norm,  // [H, T, T], [T, T]
  // Kobayashi et al. 2021 (residual_lens.h): ‖z_ij‖ and its LayerNorm'd norm [T, T]; mixing ratios [T].
  lens_residual_norm, lens_residual_layernorm_norm,
  mixing_ratio_attention, mixing_ratio_residual, mixing_ratio_residual_layernorm,
  intermediate,       // [T, I], after the activation
  output,             // [T, D]
};
// "layer.2.attention.probs"
std::string trace_name(int layer, LayerTensor tensor);

// A tensor of the residual lens (lens.residual_*, mixing_ratio.*): ONNX graphs do not compute it, and
// lenscheck derives it from their trace (runtime::Encoder::derive_lenses).
bool is_residual_lens(const std::string& name);

// Every tensor a complete trace holds for `tokens` tokens, in forward order.
std::vector<TensorSpec> trace_schema(const BertConfig& config, int64_t tokens);

// What a forward pass keeps in its trace, besides the tokens.
enum class Record {
  everything,  // every tensor of trace_schema()
  instrument,  // what the instrument shows of the 2020 lenses, and an audit of them reads: per layer attention.probs,
               // value_norm, transformed_norm, lens.value_norm and lens.transformed_norm
  instrument_residual,  // that, and lens.residual_layernorm_norm with the three mixing ratios (Kobayashi et
                        // al. 2021), at 3-5× the instrument's cost (README, bench/forward_bench)
  output,      // the last layer's output alone: a plain forward, as a library's user runs one
};
inline bool keeps_lenses(Record r) { return r != Record::output; }
inline bool keeps_residual_lens(Record r) { return r == Record::everything || r == Record::instrument_residual; }

struct Trace {
  std::string producer;   // e.g. "runtime fp32", "oracle fp64"
  std::string precision;  // what the values were computed in: "fp64", or an arithmetic of model/arithmetic.h
  std::vector<int64_t> input_ids;
  std::vector<std::string> tokens;
  std::vector<int> word_ids;  // word index of every token, -1 for [CLS]/[SEP]
  std::vector<std::pair<std::string, Tensor>> tensors;

  void add(std::string name, Tensor tensor);
  const Tensor* find(std::string_view name) const;
  Tensor* find(std::string_view name);
};

// A tensor recomputed from a trace's tensors through ones the trace lacks (the local verdict's span,
// oracle::Oracle::LocalReferences): the last tensors it holds before, and those it lacks, in forward order.
// `from` empty: from the input ids.
struct TraceSpan {
  std::vector<std::string> from, through;
};

}  // namespace lenscheck
