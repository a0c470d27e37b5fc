#include "model/trace.h"

#include <fmt/format.h>

#include <stdexcept>

namespace lenscheck {

Tensor::Tensor(std::vector<int64_t> shape_) : shape(std::move(shape_)) {
  size_t n = 1;
  for (int64_t d : shape) n *= static_cast<size_t>(d);
  values.assign(n, 0.0);
}

std::vector<TensorSpec> trace_schema(const BertConfig& c, int64_t T) {
  const int64_t H = c.num_attention_heads, Dh = c.head_dim(), D = c.hidden_size,
                I = c.intermediate_size;
  using A = Axis;
  std::vector<TensorSpec> s;
  s.push_back({"embeddings.output", {A::token, A::feature}, {T, D}});
  for (int l = 0; l < c.num_hidden_layers; ++l) {
    const std::string p = fmt::format("layer.{}.", l);
    for (const char* qkv : {"query", "key", "value"})
      s.push_back({p + "attention." + qkv, {A::head, A::token, A::feature}, {H, T, Dh}});
    s.push_back({p + "attention.scores", {A::head, A::query, A::key}, {H, T, T}});
    s.push_back({p + "attention.probs", {A::head, A::query, A::key}, {H, T, T}});
    s.push_back({p + "attention.context", {A::token, A::feature}, {T, D}});
    s.push_back({p + "attention.output", {A::token, A::feature}, {T, D}});
    s.push_back({p + "value_norm", {A::head, A::token}, {H, T}});
    s.push_back({p + "transformed_norm", {A::head, A::token}, {H, T}});
    s.push_back({p + "lens.value_norm", {A::head, A::query, A::key}, {H, T, T}});
    s.push_back({p + "lens.transformed_norm", {A::head, A::query, A::key}, {H, T, T}});
    s.push_back({p + "lens.summed_transformed_norm", {A::query, A::key}, {T, T}});
    s.push_back({p + "intermediate", {A::token, A::feature}, {T, I}});
    s.push_back({p + "output", {A::token, A::feature}, {T, D}});
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
