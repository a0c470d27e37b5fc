#include "runtime/stages.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "model/error.h"

namespace lenscheck::runtime {

namespace {

float score_scale(const Pass& p) { return 1.0f / std::sqrt(static_cast<float>(p.Dh)); }

Stages shipped() {
  Stages s;
  s.embed = [](const Pass& p, const std::vector<int64_t>& ids, float* x) {
    const float* type0 = p.weights.token_type_embeddings.values.data();
    for (size_t tok = 0; tok < p.T; ++tok) {
      const float* word = p.weights.word_embeddings.values.data() + static_cast<size_t>(ids[tok]) * p.D;
      const float* pos = p.weights.position_embeddings.values.data() + tok * p.D;
      for (size_t k = 0; k < p.D; ++k) x[tok * p.D + k] = word[k] + pos[k] + type0[k];
    }
  };
  s.layer_norm = [](const Pass& p, float* x, const Param& gain, const Param& bias) {
    runtime::layer_norm(x, p.T, p.D, gain.values.data(), bias.values.data(),
                        static_cast<float>(p.config.layer_norm_eps), p.workers);
  };
  s.project = [](const Pass& p, const LayerOf& l, const float* x, float* q, float* k, float* v) {
    linear(x, p.T, l.packed.query, l.w.query_b.values.data(), q, p.workers);
    linear(x, p.T, l.packed.key, l.w.key_b.values.data(), k, p.workers);
    linear(x, p.T, l.packed.value, l.w.value_b.values.data(), v, p.workers);
  };
  s.attend = [](const Pass& p, const LayerOf&, const float* q, const float* k, const float* v, float* probs,
                float* raw_scores, float* context) {
    attention(q, k, v, p.T, p.H, p.Dh, score_scale(p), probs, raw_scores, context, p.workers);
  };
  s.residual = [](const Pass& p, const LayerOf&, float* attention, const float* x) {
    for (size_t e = 0; e < p.T * p.D; ++e) attention[e] += x[e];
  };
  s.transform_values = [](const Pass& p, const LayerOf& l, const float* v, float* fx) {
    head_transform(v, p.T, p.H, p.Dh, l.packed.attention_out, nullptr, fx, p.workers);
  };
  s.value_norms = [](const Pass& p, const LayerOf&, const float* v, float* value_norm) {
    for (size_t h = 0; h < p.H; ++h)
      for (size_t tok = 0; tok < p.T; ++tok) value_norm[h * p.T + tok] = l2_norm(v + tok * p.D + h * p.Dh, p.Dh);
  };
  s.residual_lenses = [](const Pass& p, const LayerOf& l, const float* probs, const float* fx, const float* x,
                         const float* y, const ResidualLenses& out) {
    try {
      residual_lenses(probs, fx, x, y, l.w.attention_ln_g.values.data(), p.config.layer_norm_eps, p.H, p.T, p.D, out);
    } catch (const NonFiniteError& e) {
      throw NonFiniteError(fmt::format("layer {}, {}", l.index, e.what()));
    }
  };
  s.activate = [](const Pass& p, float* intermediate) {
    const size_t n = p.T * p.I;
    switch (p.config.activation()) {
      case Activation::gelu_erf: gelu_erf(intermediate, n, p.workers); break;
      case Activation::gelu_tanh: gelu_tanh(intermediate, n, p.workers); break;
      case Activation::relu: relu(intermediate, n); break;
    }
  };
  s.ffn_output = [](const Pass& p, const LayerOf& l, const float* intermediate, float* out) {
    linear(intermediate, p.T, l.packed.output, l.w.output_b.values.data(), out, p.workers);
  };
  return s;
}

}  // namespace

const Stages& shipped_stages() {
  static const Stages stages = shipped();
  return stages;
}

decltype(Stages::attend) attend_with(Softmax softmax) {
  return [softmax](const Pass& p, const LayerOf& l, const float* q, const float* k, const float* v, float* probs,
                   float* raw_scores, float* context) {
    std::vector<float> own;  // a plain forward keeps no probabilities; this one needs them in turn
    if (!probs) own.resize(p.H * p.T * p.T), probs = own.data();
    attention_scores(q, k, p.T, p.H, p.Dh, score_scale(p), probs, p.workers);
    if (raw_scores) std::copy_n(probs, p.H * p.T * p.T, raw_scores);
    softmax(p, l, probs);
    runtime::attend(probs, v, p.T, p.H, p.Dh, context, p.workers);
  };
}

}  // namespace lenscheck::runtime
