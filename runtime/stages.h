#pragma once
// The forward pass as named stages. Encoder::forward calls them in order and records the trace
// between them; the runtime that ships runs shipped_stages(). A mutation case (mutations/cases/) or a
// calibration fault replaces one stage with its own code, often wrapping the shipped one, so the
// forward pass itself has no fault branch.
#include <cstdint>
#include <functional>
#include <vector>

#include "model/checkpoint.h"
#include "runtime/kernels.h"

namespace lenscheck::runtime {

// What every stage of one forward may read: its sizes, the model and the threads.
struct Pass {
  size_t T, D, H, Dh, I;  // tokens, hidden size, heads, head size, intermediate size
  const BertConfig& config;
  const BertWeights& weights;
  const Workers& workers;
};

// A layer's linear weights, packed once as the operands of linear().
struct PackedLayer {
  PackedWeight query, key, value, attention_out, intermediate, output;
};

// One layer of the forward: its index among `count`, its weights and their packed copies.
struct LayerOf {
  size_t index, count;
  const LayerWeights& w;
  const PackedLayer& packed;
};

struct Stages {
  // x [T, D] = word + position + token type 0 embeddings of `ids` (checked in range), before their
  // LayerNorm.
  std::function<void(const Pass&, const std::vector<int64_t>& ids, float* x)> embed;
  // In place over [T, D] rows, with the LayerNorm's gain and bias (every LayerNorm of the model).
  std::function<void(const Pass&, float* x, const Param& gain, const Param& bias)> layer_norm;
  // q, k, v [T, H*Dh] of the layer's input x [T, D].
  std::function<void(const Pass&, const LayerOf&, const float* x, float* q, float* k, float* v)> project;
  // context [T, D] of q, k, v; probs [H, T, T] receives the probabilities and raw_scores the scores
  // before the softmax, each where not null.
  std::function<void(const Pass&, const LayerOf&, const float* q, const float* k, const float* v, float* probs,
                     float* raw_scores, float* context)>
      attend;
  // attention [T, D], the output projection of the context, += x: the block's residual.
  std::function<void(const Pass&, const LayerOf&, float* attention, const float* x)> residual;
  // fx [H, T, D]: each head's values v [T, H*Dh] through its slice of W_O, b_O excluded
  // (Kobayashi et al. 2020).
  std::function<void(const Pass&, const LayerOf&, const float* v, float* fx)> transform_values;
  // value_norm [H, T]: the norm of each head's slice of each token's v.
  std::function<void(const Pass&, const LayerOf&, const float* v, float* value_norm)> value_norms;
  // The residual lens of Kobayashi et al. 2021 (kernels.h residual_lenses) from the layer's probs [H, T, T],
  // fx [H, T, D], input x [T, D] and pre-LayerNorm state y [T, D].
  std::function<void(const Pass&, const LayerOf&, const float* probs, const float* fx, const float* x, const float* y,
                     const ResidualLenses& out)>
      residual_lenses;
  // In place over the FFN's intermediate [T, I]: the config's activation.
  std::function<void(const Pass&, float* intermediate)> activate;
  // out [T, D]: the FFN's output projection of the activated intermediate, before its residual.
  std::function<void(const Pass&, const LayerOf&, const float* intermediate, float* out)> ffn_output;
};

const Stages& shipped_stages();

// An attend stage that takes the scores, `softmax` in place over them ([H, T, T]) and the context in
// turn, where the shipped stage fuses the three: for faults in the softmax.
using Softmax = std::function<void(const Pass&, const LayerOf&, float* scores)>;
decltype(Stages::attend) attend_with(Softmax softmax);

}  // namespace lenscheck::runtime
