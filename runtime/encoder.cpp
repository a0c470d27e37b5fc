#include "runtime/encoder.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <utility>

#include "runtime/kernels.h"

namespace lenscheck::runtime {

namespace {

using LT = LayerTensor;

// A torch Linear weight [out, in], packed as the [in, out] operand of linear().
PackedWeight packed(const Param& p) {
  const size_t out = static_cast<size_t>(p.shape[0]), in = static_cast<size_t>(p.shape[1]);
  std::vector<float> t(in * out);
  for (size_t o = 0; o < out; ++o)
    for (size_t i = 0; i < in; ++i) t[i * out + o] = p.values[o * in + i];
  return pack_weight(t.data(), in, out);
}

// Copies float buffers into the trace under their names, as the record mode asks.
class Recorder {
 public:
  // missing_only: adds a tensor only where the trace lacks it (Encoder::derive_lenses).
  enum Fill { every, missing_only };
  Recorder(Trace& trace, Record mode, Fill fill = every) : trace_(trace), mode_(mode), fill_(fill) {}
  Record mode() const { return mode_; }
  // A tensor of the full trace only.
  void operator()(std::string name, std::vector<int64_t> shape, const float* data) {
    if (mode_ == Record::everything) add(std::move(name), std::move(shape), data);
  }
  // A tensor the instrument shows.
  void shown(std::string name, std::vector<int64_t> shape, const float* data) {
    if (keeps_lenses(mode_)) add(std::move(name), std::move(shape), data);
  }
  // Whether a tensor of the full trace would be kept: the record mode keeps it and, filling what is
  // missing, the trace lacks it (what a graph outputs need not be computed again).
  bool wants(const std::string& name) const {
    return mode_ == Record::everything && !(fill_ == missing_only && trace_.find(name));
  }
  // The last layer's output.
  void last(std::string name, std::vector<int64_t> shape, const float* data) {
    if (mode_ == Record::everything || mode_ == Record::output) add(std::move(name), std::move(shape), data);
  }

 private:
  void add(std::string name, std::vector<int64_t> shape, const float* data) {
    if (fill_ == missing_only && trace_.find(name)) return;
    Tensor t;
    size_t n = 1;
    for (int64_t d : shape) n *= static_cast<size_t>(d);
    t.shape = std::move(shape);
    t.values.assign(data, data + n);
    trace_.add(std::move(name), std::move(t));
  }

  Trace& trace_;
  Record mode_;
  Fill fill_;
};

// The buffers of a forward, kept by each thread from call to call: every element is written before
// it is read, so none is cleared, and after the first forward of a length none pages in fresh
// memory (zeroing and faulting in 16 MiB took 2-3 % of a T = 512 forward).
enum class Buffer { x, q, k, v, heads, scores, probs, context, attention, pre_norm, inter, out, fx, value_norm, transformed_norm, lens, residual_lens, count };
float* scratch(Buffer which, size_t floats) {
  thread_local std::vector<float> kept[static_cast<size_t>(Buffer::count)];
  std::vector<float>& b = kept[static_cast<size_t>(which)];
  if (b.size() < floats) b.resize(floats);
  return b.data();
}

// Kobayashi et al. 2020: ||v|| and ||f(x)|| of v [T, H*Dh], then the lenses weight the layer's
// probs [H, T, T] by them; the head-summed lens only where the whole trace is kept. Kobayashi et al. 2021's
// residual lens from the layer's input x and pre-LayerNorm state y (where not null): Record::instrument_residual
// keeps its LayerNorm'd norms and the mixing ratios, the whole trace AttnRes-N too.
void record_lenses(const Stages& stages, const Pass& pass, const LayerOf& layer, const float* v, const float* probs,
                   const float* x, const float* y, Recorder& rec) {
  const size_t T = pass.T, D = pass.D, H = pass.H;
  const int64_t t = static_cast<int64_t>(T), h = static_cast<int64_t>(H);
  auto name = [&](LayerTensor tensor) { return trace_name(int(layer.index), tensor); };
  float *fx = scratch(Buffer::fx, H * T * D), *value_norm = scratch(Buffer::value_norm, H * T),
        *transformed_norm = scratch(Buffer::transformed_norm, H * T), *lens = scratch(Buffer::lens, H * T * T);
  stages.transform_values(pass, layer, v, fx);
  stages.value_norms(pass, layer, v, value_norm);
  for (size_t e = 0; e < H * T; ++e) transformed_norm[e] = l2_norm(fx + e * D, D);
  rec.shown(name(LT::value_norm), {h, t}, value_norm);
  rec.shown(name(LT::transformed_norm), {h, t}, transformed_norm);
  weight_by_key(probs, value_norm, H, T, lens);
  rec.shown(name(LT::lens_value_norm), {h, t, t}, lens);
  weight_by_key(probs, transformed_norm, H, T, lens);
  rec.shown(name(LT::lens_transformed_norm), {h, t, t}, lens);
  if (rec.wants(name(LT::lens_summed_transformed_norm))) {  // O(T² H D), as much as the residual lens
    summed_transformed_norm(probs, fx, H, T, D, lens);
    rec(name(LT::lens_summed_transformed_norm), {t, t}, lens);
  }
  if (x && y) {
    float* r = scratch(Buffer::residual_lens, 2 * T * T + 3 * T);
    const ResidualLenses out{r, r + T * T, r + 2 * T * T, r + 2 * T * T + T, r + 2 * T * T + 2 * T};
    stages.residual_lenses(pass, layer, probs, fx, x, y, out);
    rec(name(LT::lens_residual_norm), {t, t}, out.residual_norm);
    rec.shown(name(LT::lens_residual_layernorm_norm), {t, t}, out.residual_layernorm_norm);
    rec.shown(name(LT::mixing_ratio_attention), {t}, out.ratio_attention);
    rec.shown(name(LT::mixing_ratio_residual), {t}, out.ratio_residual);
    rec.shown(name(LT::mixing_ratio_residual_layernorm), {t}, out.ratio_residual_layernorm);
  }
}

}  // namespace

Encoder::Encoder(const BertConfig& config, const BertWeights& weights, unsigned threads, Stages stages)
    : config_(config), weights_(weights), stages_(std::move(stages)),
      workers_(std::make_unique<Workers>(std::max(1u, threads))) {
  auto layers = std::make_shared<std::vector<PackedLayer>>();
  for (const LayerWeights& w : weights.layers)
    layers->push_back({packed(w.query_w), packed(w.key_w), packed(w.value_w), packed(w.attention_out_w),
                       packed(w.intermediate_w), packed(w.output_w)});
  packed_ = std::move(layers);
}

Encoder::Encoder(const Encoder& shipped, Stages stages)
    : config_(shipped.config_), weights_(shipped.weights_), stages_(std::move(stages)), packed_(shipped.packed_),
      workers_(std::make_unique<Workers>(1u)) {}

Trace Encoder::forward(const Encoding& enc, Record record) const {
  const size_t T = enc.ids.size(), D = static_cast<size_t>(config_.hidden_size),
               H = static_cast<size_t>(config_.num_attention_heads);
  const Pass pass{T, D, H, D / H, static_cast<size_t>(config_.intermediate_size), config_, weights_, *workers_};
  const int64_t t = static_cast<int64_t>(T), h = static_cast<int64_t>(H), dh = static_cast<int64_t>(pass.Dh),
                d = static_cast<int64_t>(D), i_ = static_cast<int64_t>(pass.I);
  if (T == 0 || T > static_cast<size_t>(config_.max_position_embeddings))
    throw std::invalid_argument("sequence length outside 1..max_position_embeddings");
  for (int64_t id : enc.ids)
    if (id < 0 || id >= config_.vocab_size) throw std::out_of_range("token id");

  Trace trace;
  trace.producer = "runtime fp32";
  trace.precision = "fp32";
  trace.input_ids = enc.ids;
  trace.tokens = enc.tokens;
  trace.word_ids = enc.word_ids;
  Recorder rec(trace, record);

  float* x = scratch(Buffer::x, T * D);
  stages_.embed(pass, enc.ids, x);
  stages_.layer_norm(pass, x, weights_.embeddings_ln_g, weights_.embeddings_ln_b);
  rec(kEmbeddingsOutput, {t, d}, x);

  float *q = scratch(Buffer::q, T * D), *k = scratch(Buffer::k, T * D), *v = scratch(Buffer::v, T * D),
        *context = scratch(Buffer::context, T * D), *attention = scratch(Buffer::attention, T * D),
        *inter = scratch(Buffer::inter, T * pass.I), *out = scratch(Buffer::out, T * D);
  // What only the trace or the lenses read, taken only when the record mode keeps it.
  const bool everything = rec.mode() == Record::everything, lenses = keeps_lenses(rec.mode());
  float* heads = everything ? scratch(Buffer::heads, T * D) : nullptr;
  float* scores = everything ? scratch(Buffer::scores, H * T * T) : nullptr;
  float* probs = lenses ? scratch(Buffer::probs, H * T * T) : nullptr;
  for (size_t l = 0; l < packed_->size(); ++l) {
    auto name = [l](LayerTensor t) { return trace_name(int(l), t); };
    const LayerWeights& w = weights_.layers[l];
    const LayerOf layer{l, packed_->size(), w, (*packed_)[l]};

    stages_.project(pass, layer, x, q, k, v);
    // [T, H*Dh] -> [H, T, Dh] for the trace: the per-head layout both implementations share.
    for (const auto& [tensor, src] : {std::pair{LT::query, q}, std::pair{LT::key, k}, std::pair{LT::value, v}}) {
      if (!everything) break;
      for (size_t hh = 0; hh < H; ++hh)
        for (size_t tok = 0; tok < T; ++tok)
          for (size_t e = 0; e < pass.Dh; ++e)
            heads[(hh * T + tok) * pass.Dh + e] = src[tok * D + hh * pass.Dh + e];
      rec(name(tensor), {h, t, dh}, heads);
    }

    stages_.attend(pass, layer, q, k, v, probs, scores, context);
    rec(name(LT::scores), {h, t, t}, scores);
    rec.shown(name(LT::probs), {h, t, t}, probs);
    rec(name(LT::context), {t, d}, context);

    linear(context, T, layer.packed.attention_out, w.attention_out_b.values.data(), attention, pass.workers);
    stages_.residual(pass, layer, attention, x);
    float* pre_norm = keeps_residual_lens(rec.mode()) ? scratch(Buffer::pre_norm, T * D) : nullptr;  // y, for the residual lens
    if (pre_norm) std::copy_n(attention, T * D, pre_norm);
    rec(name(LT::attention_pre_norm), {t, d}, attention);
    stages_.layer_norm(pass, attention, w.attention_ln_g, w.attention_ln_b);
    rec(name(LT::attention_output), {t, d}, attention);

    if (lenses) record_lenses(stages_, pass, layer, v, probs, x, pre_norm, rec);  // a plain forward computes no lens

    linear(attention, T, layer.packed.intermediate, w.intermediate_b.values.data(), inter, pass.workers);
    stages_.activate(pass, inter);
    rec(name(LT::intermediate), {t, i_}, inter);
    stages_.ffn_output(pass, layer, inter, out);
    for (size_t e = 0; e < T * D; ++e) out[e] += attention[e];
    stages_.layer_norm(pass, out, w.output_ln_g, w.output_ln_b);
    if (l + 1 == packed_->size())
      rec.last(name(LT::output), {t, d}, out);
    else
      rec(name(LT::output), {t, d}, out);
    std::swap(x, out);
  }
  return trace;
}

std::vector<std::string> lens_inputs(const std::string& name) {
  int l = -1;
  if (std::sscanf(name.c_str(), "layer.%d.", &l) != 1 || l < 0) return {};
  for (LT lens : {LT::value_norm, LT::transformed_norm, LT::lens_value_norm, LT::lens_transformed_norm,
                  LT::lens_summed_transformed_norm, LT::lens_residual_norm, LT::lens_residual_layernorm_norm,
                  LT::mixing_ratio_attention, LT::mixing_ratio_residual, LT::mixing_ratio_residual_layernorm}) {
    if (name != trace_name(l, lens)) continue;
    std::vector<std::string> from = {trace_name(l, LT::value), trace_name(l, LT::probs)};
    if (is_residual_lens(name)) {
      from.push_back(l == 0 ? kEmbeddingsOutput : trace_name(l - 1, LT::output));
      from.push_back(trace_name(l, LT::attention_pre_norm));
    }
    return from;
  }
  return {};
}

std::vector<std::string> Encoder::derive_lenses(Trace& trace) const {
  const size_t held = trace.tensors.size();  // what is added comes after
  const size_t T = trace.input_ids.size(), D = static_cast<size_t>(config_.hidden_size),
               H = static_cast<size_t>(config_.num_attention_heads);
  const Pass pass{T, D, H, D / H, static_cast<size_t>(config_.intermediate_size), config_, weights_, *workers_};
  Recorder rec(trace, Record::everything, Recorder::missing_only);
  std::vector<float> v(T * D), probs(H * T * T), x(T * D), y(T * D);
  // A [T, D] tensor of the trace as floats, if it is there.
  auto floats = [&](const std::string& name, std::vector<float>& to) {
    const Tensor* t = trace.find(name);
    if (!t || t->values.size() != T * D) return false;
    std::copy(t->values.begin(), t->values.end(), to.begin());
    return true;
  };
  for (size_t l = 0; l < packed_->size(); ++l) {
    const Tensor* value = trace.find(trace_name(int(l), LT::value));
    const Tensor* p = trace.find(trace_name(int(l), LT::probs));
    if (!value || !p) continue;  // nothing of this layer's lenses can be derived (lens_inputs)
    if (value->values.size() != T * D || p->values.size() != H * T * T)
      throw std::invalid_argument(fmt::format("layer {}'s attention.value and attention.probs are not of {} tokens",
                                              l, T));
    // [H, T, Dh] -> [T, H*Dh], the layout of the forward's v.
    for (size_t hh = 0; hh < H; ++hh)
      for (size_t tok = 0; tok < T; ++tok)
        for (size_t e = 0; e < pass.Dh; ++e)
          v[tok * D + hh * pass.Dh + e] = static_cast<float>(value->values[(hh * T + tok) * pass.Dh + e]);
    std::copy(p->values.begin(), p->values.end(), probs.begin());
    // The residual lens also needs the layer's input and its pre-LayerNorm state.
    const LayerOf layer{l, packed_->size(), weights_.layers[l], (*packed_)[l]};
    const bool residual = floats(l == 0 ? kEmbeddingsOutput : trace_name(int(l) - 1, LT::output), x) &&
                          floats(trace_name(int(l), LT::attention_pre_norm), y);
    record_lenses(stages_, pass, layer, v.data(), probs.data(), residual ? x.data() : nullptr,
                  residual ? y.data() : nullptr, rec);
  }
  std::vector<std::string> derived;
  for (size_t i = held; i < trace.tensors.size(); ++i) derived.push_back(trace.tensors[i].first);
  return derived;
}

}  // namespace lenscheck::runtime
