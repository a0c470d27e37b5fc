#include "model/trace.h"

#include <fmt/format.h>

#include <stdexcept>

namespace lenscheck {

Tensor::Tensor(std::vector<int64_t> shape_) : shape(std::move(shape_)) {
  size_t n = 1;
  for (int64_t d : shape) n *= static_cast<size_t>(d);
  values.assign(n, 0.0);
}

namespace {

// How long an axis is: in heads, tokens, or features (of a head, of the hidden state, of the FFN).
enum class Extent { heads, tokens, head_dim, hidden, intermediate };

struct LayerTensorSpec {
  LayerTensor tensor;
  const char* suffix;
  std::vector<Axis> axes;
  std::vector<Extent> extents;
};

// The per-layer tensors in forward order: the one place their names are spelled.
const std::vector<LayerTensorSpec>& layer_tensors() {
  using A = Axis;
  using E = Extent;
  using L = LayerTensor;
  static const std::vector<LayerTensorSpec> all = {
      {L::query, "attention.query", {A::head, A::token, A::feature}, {E::heads, E::tokens, E::head_dim}},
      {L::key, "attention.key", {A::head, A::token, A::feature}, {E::heads, E::tokens, E::head_dim}},
      {L::value, "attention.value", {A::head, A::token, A::feature}, {E::heads, E::tokens, E::head_dim}},
      {L::scores, "attention.scores", {A::head, A::query, A::key}, {E::heads, E::tokens, E::tokens}},
      {L::probs, "attention.probs", {A::head, A::query, A::key}, {E::heads, E::tokens, E::tokens}},
      {L::context, "attention.context", {A::token, A::feature}, {E::tokens, E::hidden}},
      {L::attention_pre_norm, "attention.pre_norm", {A::token, A::feature}, {E::tokens, E::hidden}},
      {L::attention_output, "attention.output", {A::token, A::feature}, {E::tokens, E::hidden}},
      {L::value_norm, "value_norm", {A::head, A::token}, {E::heads, E::tokens}},
      {L::transformed_norm, "transformed_norm", {A::head, A::token}, {E::heads, E::tokens}},
      {L::lens_value_norm, "lens.value_norm", {A::head, A::query, A::key}, {E::heads, E::tokens, E::tokens}},
      {L::lens_transformed_norm, "lens.transformed_norm", {A::head, A::query, A::key}, {E::heads, E::tokens, E::tokens}},
      {L::lens_summed_transformed_norm, "lens.summed_transformed_norm", {A::query, A::key}, {E::tokens, E::tokens}},
      {L::lens_residual_norm, "lens.residual_norm", {A::query, A::key}, {E::tokens, E::tokens}},
      {L::lens_residual_layernorm_norm, "lens.residual_layernorm_norm", {A::query, A::key}, {E::tokens, E::tokens}},
      {L::mixing_ratio_attention, "mixing_ratio.attention", {A::token}, {E::tokens}},
      {L::mixing_ratio_residual, "mixing_ratio.residual", {A::token}, {E::tokens}},
      {L::mixing_ratio_residual_layernorm, "mixing_ratio.residual_layernorm", {A::token}, {E::tokens}},
      {L::intermediate, "intermediate", {A::token, A::feature}, {E::tokens, E::intermediate}},
      {L::output, "output", {A::token, A::feature}, {E::tokens, E::hidden}},
  };
  return all;
}

}  // namespace

std::string trace_name(int layer, LayerTensor tensor) {
  for (const LayerTensorSpec& t : layer_tensors())
    if (t.tensor == tensor) return fmt::format("layer.{}.{}", layer, t.suffix);
  throw std::logic_error("a layer tensor without a name");
}

bool is_residual_lens(const std::string& name) {
  return name.find(".lens.residual") != std::string::npos || name.find(".mixing_ratio.") != std::string::npos;
}

std::vector<TensorSpec> trace_schema(const BertConfig& c, int64_t T) {
  auto length = [&](Extent e) -> int64_t {
    switch (e) {
      case Extent::heads: return c.num_attention_heads;
      case Extent::tokens: return T;
      case Extent::head_dim: return c.head_dim();
      case Extent::hidden: return c.hidden_size;
      case Extent::intermediate: return c.intermediate_size;
    }
    throw std::logic_error("an axis without a length");
  };
  std::vector<TensorSpec> s;
  s.push_back({kEmbeddingsOutput, {Axis::token, Axis::feature}, {T, c.hidden_size}});
  for (int l = 0; l < c.num_hidden_layers; ++l)
    for (const LayerTensorSpec& t : layer_tensors()) {
      std::vector<int64_t> shape;
      for (Extent e : t.extents) shape.push_back(length(e));
      s.push_back({trace_name(l, t.tensor), t.axes, shape});
    }
  return s;
}

void Trace::add(std::string name, Tensor tensor) {
  if (find(name)) throw std::logic_error("trace already holds " + name);
  tensors.emplace_back(std::move(name), std::move(tensor));
}

const Tensor* Trace::find(std::string_view name) const {
  for (const auto& [n, t] : tensors)
    if (n == name) return &t;
  return nullptr;
}

Tensor* Trace::find(std::string_view name) {
  return const_cast<Tensor*>(static_cast<const Trace&>(*this).find(name));
}

}  // namespace lenscheck
