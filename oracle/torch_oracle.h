#pragma once
// What oracle/*.cpp share, libtorch's types among them: the oracle's weights as it holds them
// (Oracle::Impl), the conversion to a trace, the rounding probes' draws, the lenses, and how torch's
// errors reach the harness. Private to oracle/: only oracle/*.cpp include it, so that torch stays out of
// oracle.h and of every room above (scripts/check-layering.cmake fails the build otherwise).
#include <torch/torch.h>

#include <fmt/format.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "model/seeded_rng.h"
#include "oracle/oracle.h"

namespace lenscheck::oracle {

namespace F = torch::nn::functional;

using LT = LayerTensor;

struct TorchLayer {
  torch::Tensor wq, bq, wk, bk, wv, bv, wo, bo, ln1_g, ln1_b, wi, bi, wo2, bo2, ln2_g, ln2_b;
};

// A linear layer as the simulated arithmetic stores it: W [out, in] in the format (w8a32: dequantized), or for int8 the
// quantized integers and per-channel scales of model/quantize.h.
struct SimulatedLinear {
  torch::Tensor w, b;        // w: the format's values (int8: unused)
  torch::Tensor q, scales;   // int8: integers [out, in] and scales [out], fp64 holding exact values
  torch::Tensor zero_points;  // int8: the integers' zero points [out] (q holds the integers less them)
  bool signed_integers = true;  // int8: int8 integers (uint8 otherwise)
  // int8: the input's and the product's quantization (before the bias), where a graph quantizes them statically
  // (model/quantize.h; the input otherwise by DynamicQuantizeLinear, per run).
  std::optional<QuantizedActivation> input, product;
};

struct SimulatedLayer {
  SimulatedLinear query, key, value, attention_out, intermediate, output;
  torch::Tensor lens_wo;  // W_O as f(x) reads it: the format's values (int8, w8a32: the fp32 weight, unquantized)
  torch::Tensor ln1_g, ln1_b, ln2_g, ln2_b;
  // int8: the values a graph quantizes statically (QuantizedParams::activations) apart from its linear layers':
  // the attention's operands and products, each residual sum's block input. None: fp32, as the scheme has them.
  struct Reads {
    std::optional<QuantizedActivation> query, key, scores_product, probs, value, context_product, attention_residual,
        ffn_residual;
  } reads;
};

struct Oracle::SumMagnitudes {
  std::vector<torch::Tensor> of_each_sum;
};

struct Oracle::Impl {
  BertConfig config;
  torch::Dtype dtype;
  uint64_t rounding_probe = 0;  // 0: none
  // The word embedding table is borrowed, not held converted: it is most of a small model's parameters
  // (7.8 M of bert-mini's 11 M) and a sentence reads a few dozen of its rows. word_value gives one entry
  // as the oracle holds its weights (converted, rounded, probe-stepped) from the table's value and its
  // index, which is also the number of its probe's draw.
  const Param* word_table = nullptr;
  std::function<double(float value, uint64_t index)> word_value;
  torch::Tensor position, token_type, ln_g, ln_b;
  std::vector<TorchLayer> layers;
  // Simulated arithmetic (computing_in, recomputing_in): where the scheme rounds, and to what.
  std::optional<Arithmetic> simulated;
  Scheme scheme = scheme_of(Arithmetic::fp32);
  std::vector<SimulatedLayer> simulated_layers;
  std::shared_ptr<const QuantizedParams> quantized;  // a graph's quantized weights, which word_value reads
  Int8Sums int8_sums = Int8Sums::exact;               // how int8's linear layers sum (SimulatedPass::linear_raw)
  // A graph's static quantization requantizes some product (LocalReferences::requantized_other_way).
  bool requantizes_products() const {
    return std::any_of(simulated_layers.begin(), simulated_layers.end(), [](const SimulatedLayer& l) {
      return l.reads.scores_product || l.reads.context_product || l.query.product || l.key.product ||
             l.value.product || l.attention_out.product || l.intermediate.product || l.output.product;
    });
  }

  torch::Tensor layer_norm(const torch::Tensor& x, const torch::Tensor& g,
                           const torch::Tensor& b) const {
    return F::layer_norm(x, F::LayerNormFuncOptions({config.hidden_size})
                                .weight(g).bias(b).eps(config.layer_norm_eps));
  }

  // The rows of the word embedding table that `ids` name, in the oracle's dtype.
  torch::Tensor word_rows(const std::vector<int64_t>& ids) const {
    const int64_t D = config.hidden_size, rows = word_table->shape[0];
    auto out = torch::empty({int64_t(ids.size()), D}, torch::kFloat64);
    double* o = out.data_ptr<double>();
    for (const int64_t id : ids) {
      if (id < 0 || id >= rows)
        throw std::out_of_range(fmt::format("input id {} is outside the word embedding table's {} rows", id, rows));
      for (int64_t i = id * D; i < (id + 1) * D; ++i) *o++ = word_value(word_table->values[size_t(i)], uint64_t(i));
    }
    return out.to(dtype);
  }

  torch::Tensor activation(const torch::Tensor& x) const {
    switch (config.activation()) {
      case Activation::gelu_erf: return F::gelu(x, F::GELUFuncOptions().approximate("none"));
      case Activation::gelu_tanh: return F::gelu(x, F::GELUFuncOptions().approximate("tanh"));
      case Activation::relu: return F::relu(x);
    }
    throw std::logic_error("activation");
  }
};

// A libtorch tensor as a trace holds it, in fp64 (forward.cpp).
Tensor to_trace(const torch::Tensor& t);

// A rounding probe's directions for the elements of a tensor, up or down (load.cpp).
torch::Tensor random_directions(SeededRng& rng, const torch::Tensor& like);

// libtorch reports a failed allocation as c10::Error or std::bad_alloc; the harness reads neither.
template <class F>
auto translating_torch_errors(const std::string& oracle, const char* doing, F&& f) {
  try {
    return f();
  } catch (const std::exception& e) {
    std::string what = e.what();
    what = what.substr(0, what.find('\n'));  // c10::Error appends a backtrace
    throw OracleError(fmt::format("the {} oracle could not {}: {}", oracle, doing, what));
  }
}

inline std::string oracle_name(Precision precision) { return precision == Precision::fp64 ? "fp64" : "fp32"; }

// Kobayashi et al. 2021's residual lens (runtime/kernels.h residual_lenses), term by term: for a block of
// query rows i at a time, terms [rows, T, D] = Σ_h α_hij f_h(x_j); z_ij = terms + δ_ij x_i (x the layer's
// input), its LayerNorm'd form γ ⊙ (z − mean z) / sqrt(var y_i + ε) with y the real pre-LayerNorm state,
// and the mixing ratios of the three from Σ_{j≠i} of each term, summed here rather than read off y.
class ResidualLensBlocks {
 public:
  ResidualLensBlocks(const torch::Tensor& x, const torch::Tensor& y, const torch::Tensor& gain, double eps);
  void add(const torch::Tensor& terms, int64_t first_row);
  // The five tensors, each with its name in the trace.
  std::vector<std::pair<LayerTensor, torch::Tensor>> results() const;

 private:
  torch::Tensor x_, gain_, scale_;
  std::vector<torch::Tensor> residual_norm_, layernorm_norm_, ratio_attention_, ratio_residual_, ratio_layernorm_;
};

// Layer `layer`'s lenses in libtorch's forward, added to `trace` (lenses.cpp).
void add_lenses(Trace& trace, int layer, Record record, const torch::Tensor& alpha, const torch::Tensor& v,
                const TorchLayer& L, const torch::Tensor& x, const torch::Tensor& pre_norm, double eps);

}  // namespace lenscheck::oracle
