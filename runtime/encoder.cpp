#include "runtime/encoder.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

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
  Recorder(Trace& trace, Record mode) : trace_(trace), mode_(mode) {}
  Record mode() const { return mode_; }
  // A tensor of the full trace only.
  void operator()(std::string name, std::vector<int64_t> shape, const float* data) {
    if (mode_ == Record::everything) add(std::move(name), std::move(shape), data);
  }
  // A tensor the instrument shows.
  void shown(std::string name, std::vector<int64_t> shape, const float* data) {
    if (mode_ != Record::output) add(std::move(name), std::move(shape), data);
  }
  // The last layer's output.
  void last(std::string name, std::vector<int64_t> shape, const float* data) {
    if (mode_ != Record::instrument) add(std::move(name), std::move(shape), data);
  }

 private:
  void add(std::string name, std::vector<int64_t> shape, const float* data) {
    Tensor t;
    size_t n = 1;
    for (int64_t d : shape) n *= static_cast<size_t>(d);
    t.shape = std::move(shape);
    t.values.assign(data, data + n);
    trace_.add(std::move(name), std::move(t));
  }

  Trace& trace_;
  Record mode_;
};

// The buffers of a forward, kept by each thread from call to call: every element is written before
// it is read, so none is cleared, and after the first forward of a length none pages in fresh
// memory (zeroing and faulting in 16 MiB took 2-3 % of a T = 512 forward).
enum class Buffer { x, q, k, v, heads, scores, probs, context, attention, inter, out, fx, value_norm, transformed_norm, lens, count };
float* scratch(Buffer which, size_t floats) {
  thread_local std::vector<float> kept[static_cast<size_t>(Buffer::count)];
  std::vector<float>& b = kept[static_cast<size_t>(which)];
  if (b.size() < floats) b.resize(floats);
  return b.data();
}

// Mutants only: the fault's own arithmetic, kept beside the seam rather than among the kernels.
void softmax_columns(float* scores, size_t H, size_t T) {
  for (size_t h = 0; h < H; ++h)
    for (size_t b = 0; b < T; ++b) {
      float* s = scores + h * T * T + b;
      float max = s[0];
      for (size_t a = 1; a < T; ++a) max = std::max(max, s[a * T]);
      float sum = 0;
      for (size_t a = 0; a < T; ++a) sum += (s[a * T] = std::exp(s[a * T] - max));
      for (size_t a = 0; a < T; ++a) s[a * T] /= sum;
    }
}

void normalise_rows(float* x, size_t rows, size_t cols) {
  for (size_t r = 0; r < rows; ++r) {
    float sum = 0;
    for (size_t c = 0; c < cols; ++c) sum += x[r * cols + c];
    for (size_t c = 0; c < cols; ++c) x[r * cols + c] /= sum;
  }
}

// w is the torch Linear weight [out, in].
void linear_half_accumulate(const float* x, size_t rows, size_t in, const float* w, const float* b, size_t out,
                            float* y) {
  for (size_t r = 0; r < rows; ++r)
    for (size_t o = 0; o < out; ++o) {
      _Float16 acc = static_cast<_Float16>(b[o]);
      for (size_t i = 0; i < in; ++i) acc = static_cast<_Float16>(float(acc) + x[r * in + i] * w[o * in + i]);
      y[r * out + o] = float(acc);
    }
}

}  // namespace

Encoder::Encoder(const BertConfig& config, const BertWeights& weights, Injected fault, unsigned threads)
    : config_(config), weights_(weights), fault_(fault.fault), fault_delta_(static_cast<float>(fault.delta)),
      workers_(std::make_unique<Workers>(std::max(1u, threads))) {
  unit_gamma_.values.assign(static_cast<size_t>(config.hidden_size), 1.0f);
  for (const LayerWeights& w : weights.layers)
    layers_.push_back({packed(w.query_w), packed(w.key_w), packed(w.value_w), packed(w.attention_out_w),
                       packed(w.intermediate_w), packed(w.output_w), &w});
}

Trace Encoder::forward(const Encoding& enc, Record record) const {
  const size_t T = enc.ids.size(), D = static_cast<size_t>(config_.hidden_size),
               H = static_cast<size_t>(config_.num_attention_heads), Dh = D / H,
               I = static_cast<size_t>(config_.intermediate_size);
  const int64_t t = static_cast<int64_t>(T), h = static_cast<int64_t>(H),
                dh = static_cast<int64_t>(Dh), d = static_cast<int64_t>(D),
                i_ = static_cast<int64_t>(I);
  const size_t first_position = fault_ == Fault::position_ids_shifted ? 1 : 0;
  if (T == 0 || T + first_position > static_cast<size_t>(config_.max_position_embeddings))
    throw std::invalid_argument("sequence length outside 1..max_position_embeddings");
  const float eps = fault_ == Fault::layer_norm_eps_1e5 ? 1e-5f : static_cast<float>(config_.layer_norm_eps);
  const Param& ones = unit_gamma_;
  auto gamma = [&](const Param& g) { return (fault_ == Fault::layer_norm_without_gamma ? ones : g).values.data(); };

  const Workers& workers = *workers_;
  Trace trace;
  trace.producer = "runtime fp32";
  trace.precision = "fp32";
  trace.input_ids = enc.ids;
  trace.tokens = enc.tokens;
  trace.word_ids = enc.word_ids;
  Recorder rec(trace, record);

  // Embeddings: word + position + token type 0, then LayerNorm.
  float* x = scratch(Buffer::x, T * D);
  const std::vector<float> no_type(D, 0.0f);
  const float* type0 = fault_ == Fault::token_type_dropped ? no_type.data()
                                                           : weights_.token_type_embeddings.values.data();
  for (size_t tok = 0; tok < T; ++tok) {
    const size_t id = static_cast<size_t>(enc.ids[tok]);
    if (id >= static_cast<size_t>(config_.vocab_size)) throw std::out_of_range("token id");
    const float* word = weights_.word_embeddings.values.data() + id * D;
    const float* pos = weights_.position_embeddings.values.data() + (tok + first_position) * D;
    for (size_t k = 0; k < D; ++k) x[tok * D + k] = word[k] + pos[k] + type0[k];
  }
  layer_norm(x, T, D, gamma(weights_.embeddings_ln_g),
             weights_.embeddings_ln_b.values.data(), eps, workers);
  rec(kEmbeddingsOutput, {t, d}, x);

  float *q = scratch(Buffer::q, T * D), *k = scratch(Buffer::k, T * D), *v = scratch(Buffer::v, T * D),
        *probs_kept = scratch(Buffer::probs, H * T * T), *context = scratch(Buffer::context, T * D),
        *attention = scratch(Buffer::attention, T * D), *inter = scratch(Buffer::inter, T * I),
        *out = scratch(Buffer::out, T * D);
  // What only the trace or the lenses read, taken only when the record mode keeps it.
  float* heads = rec.mode() == Record::everything ? scratch(Buffer::heads, T * D) : nullptr;
  float* scores = rec.mode() == Record::everything ? scratch(Buffer::scores, H * T * T) : nullptr;
  const bool lenses = rec.mode() != Record::output;
  float *fx = lenses ? scratch(Buffer::fx, H * T * D) : nullptr,
        *value_norm = lenses ? scratch(Buffer::value_norm, H * T) : nullptr,
        *transformed_norm = lenses ? scratch(Buffer::transformed_norm, H * T) : nullptr,
        *lens = lenses ? scratch(Buffer::lens, H * T * T) : nullptr;
  const float scale = fault_ == Fault::drop_score_scale ? 1.0f : 1.0f / std::sqrt(static_cast<float>(Dh));
  for (size_t l = 0; l < layers_.size(); ++l) {
    auto name = [l](LayerTensor t) { return trace_name(int(l), t); };
    const Layer& L = layers_[l];
    const LayerWeights& w = *L.w;

    linear(x, T, L.query, w.query_b.values.data(), q, workers);
    linear(x, T, L.key, w.key_b.values.data(), k, workers);
    linear(x, T, L.value, w.value_b.values.data(), v, workers);
    if (fault_ == Fault::key_as_value) std::copy_n(k, T * D, v);
    if (fault_ == Fault::head_slice_off_by_one)
      for (float* m : {q, k, v})
        for (size_t tok = 0; tok < T; ++tok) std::rotate(m + tok * D, m + tok * D + 1, m + tok * D + D);
    // [T, H*Dh] -> [H, T, Dh] for the trace: the per-head layout both implementations share.
    for (const auto& [tensor, src] : {std::pair{LT::query, q}, std::pair{LT::key, k}, std::pair{LT::value, v}}) {
      if (rec.mode() != Record::everything) break;
      for (size_t hh = 0; hh < H; ++hh)
        for (size_t tok = 0; tok < T; ++tok)
          for (size_t e = 0; e < Dh; ++e)
            heads[(hh * T + tok) * Dh + e] = src[tok * D + hh * Dh + e];
      rec(name(tensor), {h, t, dh}, heads);
    }

    // Faults that act between the scores and the context take the three kernels in turn; the
    // shipped forward takes them fused, a block of queries at a time.
    const bool fault_in_softmax = fault_ == Fault::softmax_over_queries || fault_ == Fault::softmax_without_max ||
                                  (fault_ == Fault::last_layer_probs_scaled && l + 1 == layers_.size());
    float* probs = rec.mode() == Record::output && !fault_in_softmax ? nullptr : probs_kept;
    if (!fault_in_softmax) {
      runtime::attention(q, k, v, T, H, Dh, scale, probs, scores, context, workers);  // the local `attention` is a buffer
      rec(name(LT::scores), {h, t, t}, scores);
    } else {
      attention_scores(q, k, T, H, Dh, scale, probs, workers);
      rec(name(LT::scores), {h, t, t}, probs);
      if (fault_ == Fault::softmax_over_queries) {
        softmax_columns(probs, H, T);
      } else if (fault_ == Fault::softmax_without_max) {
        for (size_t e = 0; e < H * T * T; ++e) probs[e] = std::exp(probs[e]);
        normalise_rows(probs, H * T, T);
      } else {
        softmax_rows(probs, H * T, T, workers);
        for (size_t e = 0; e < T * T; ++e) probs[e] *= 1.0f + fault_delta_;
      }
      attend(probs, v, T, H, Dh, context, workers);
    }
    if (probs) rec.shown(name(LT::probs), {h, t, t}, probs);
    rec(name(LT::context), {t, d}, context);

    linear(context, T, L.attention_out, w.attention_out_b.values.data(), attention, workers);
    if (!(fault_ == Fault::attention_residual_skipped && l == 1))
      for (size_t e = 0; e < T * D; ++e) attention[e] += x[e];
    layer_norm(attention, T, D, gamma(w.attention_ln_g),
               w.attention_ln_b.values.data(), eps, workers);
    rec(name(LT::attention_output), {t, d}, attention);

    if (lenses) {  // a plain forward computes no lens
      // Kobayashi et al. 2020: ||v|| and ||f(x)|| with f(x) = v W_O[h] (the head's rows of the
      // transposed output weight), b_O excluded; then the lenses weight attention by them.
      PackedWeight untransposed;  // Fault::transposed_output_slice reads W_O as if it were W_O^T
      if (fault_ == Fault::transposed_output_slice)
        untransposed = pack_weight(w.attention_out_w.values.data(), D, D);
      const PackedWeight& output_slices =
          fault_ == Fault::transposed_output_slice ? untransposed : L.attention_out;
      const float* f_bias = fault_ == Fault::transformed_norm_with_bias ? w.attention_out_b.values.data() : nullptr;
      head_transform(v, T, H, Dh, output_slices, f_bias, fx, workers);
      std::vector<float> unbiased(Dh);
      for (size_t hh = 0; hh < H; ++hh)
        for (size_t tok = 0; tok < T; ++tok) {
          const float* vh = v + tok * D + hh * Dh;
          value_norm[hh * T + tok] = l2_norm(vh, Dh);
          transformed_norm[hh * T + tok] = l2_norm(fx + (hh * T + tok) * D, D);
          switch (fault_) {
            case Fault::value_norm_without_bias:
              for (size_t e = 0; e < Dh; ++e) unbiased[e] = vh[e] - w.value_b.values[hh * Dh + e];
              value_norm[hh * T + tok] = l2_norm(unbiased.data(), Dh);
              break;
            case Fault::squared_value_norm: value_norm[hh * T + tok] *= value_norm[hh * T + tok]; break;
            case Fault::value_norm_over_all_heads: value_norm[hh * T + tok] = l2_norm(v + tok * D, D); break;
            default: break;
          }
        }
      rec.shown(name(LT::value_norm), {h, t}, value_norm);
      rec.shown(name(LT::transformed_norm), {h, t}, transformed_norm);
      weight_by_key(probs, value_norm, H, T, lens);
      rec.shown(name(LT::lens_value_norm), {h, t, t}, lens);
      weight_by_key(probs, transformed_norm, H, T, lens);
      rec.shown(name(LT::lens_transformed_norm), {h, t, t}, lens);
      if (rec.mode() == Record::everything) {
        summed_transformed_norm(probs, fx, H, T, D, lens);
        rec(name(LT::lens_summed_transformed_norm), {t, t}, lens);
      }
    }

    linear(attention, T, L.intermediate, w.intermediate_b.values.data(), inter, workers);
    switch (fault_ == Fault::gelu_tanh_approximation ? Activation::gelu_tanh : config_.activation()) {
      case Activation::gelu_erf: gelu_erf(inter, T * I, workers); break;
      case Activation::gelu_tanh: gelu_tanh(inter, T * I, workers); break;
      case Activation::relu: relu(inter, T * I); break;
    }
    rec(name(LT::intermediate), {t, i_}, inter);
    if (fault_ == Fault::half_precision_ffn_output)
      linear_half_accumulate(inter, T, I, w.output_w.values.data(), w.output_b.values.data(), D, out);
    else
      linear(inter, T, L.output, w.output_b.values.data(), out, workers);
    for (size_t e = 0; e < T * D; ++e) out[e] += attention[e];
    layer_norm(out, T, D, gamma(w.output_ln_g), w.output_ln_b.values.data(), eps, workers);
    if (l + 1 == layers_.size())
      rec.last(name(LT::output), {t, d}, out);
    else
      rec(name(LT::output), {t, d}, out);
    std::swap(x, out);
  }
  return trace;
}

}  // namespace lenscheck::runtime
