// Loading and the rounding probes: the constructors, computing_in, recomputing_in and simulating; the
// weights as libtorch's fp32 or fp64 holds them (Oracle::load) or a simulated scheme stores them
// (Oracle::load_simulated), each value moved one step of its format under a rounding probe.
#include "oracle/oracle.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <tuple>

#include "model/quantize.h"
#include "model/seeded_rng.h"
#include "oracle/torch_oracle.h"

namespace lenscheck::oracle {

namespace {

torch::Tensor to_torch(const Param& p, torch::Dtype dtype) {
  auto t = torch::from_blob(const_cast<float*>(p.values.data()), p.shape, torch::kFloat32);
  return t.to(dtype, /*non_blocking=*/false, /*copy=*/true);  // the oracle owns these weights, fp32 too
}

// Which way a rounding probe of `seed` moves the stored value number `index` (one draw per value): up
// where that draw is odd.
bool probe_up(uint64_t seed, uint64_t index) {
  SeededRng draw(seed);
  draw.skip(index);
  return draw.next() & 1;
}

// A parameter as a probe of Oracle::load moves it: one float step, up or down.
float probe_step(float value, bool up) {
  const float inf = std::numeric_limits<float>::infinity();
  return std::nextafter(value, up ? inf : -inf);
}

// A parameter as load_simulated stores it in `f`: rounded to f where f is coarser than the checkpoint's
// fp32, then, under a probe, moved one step of f, up or down.
double stored_in(const FloatFormat& f, float value, bool probe, bool up) {
  const double v = f.digits < kBinary32.digits ? round_to(f, value) : value;
  return probe ? step_in(f, v, up) : v;
}

// fp64 values rounded to the nearest fp32, held in fp64.
torch::Tensor rounded_to_fp32(const torch::Tensor& x) { return x.to(torch::kFloat32).to(torch::kFloat64); }

}  // namespace

// One direction per element of a tensor shaped `like`, up (true) or down, drawn from `rng` in order.
torch::Tensor random_directions(SeededRng& rng, const torch::Tensor& like) {
  auto up = torch::empty(like.sizes(), torch::kBool);
  bool* u = up.data_ptr<bool>();
  for (int64_t i = 0; i < up.numel(); ++i) u[i] = rng.next() & 1;
  return up;
}

Oracle::Oracle() : impl_(std::make_unique<Impl>()) {}

Oracle::Oracle(const BertConfig& config, const BertWeights& w, Precision precision, uint64_t rounding_probe)
    : impl_(std::make_unique<Impl>()) {
  impl_->rounding_probe = rounding_probe;
  translating_torch_errors(oracle_name(precision), "load the weights", [&] { load(config, w, precision); });
}

Oracle Oracle::computing_in(const BertConfig& config, const BertWeights& w, Arithmetic arithmetic,
                            uint64_t rounding_probe, std::shared_ptr<const QuantizedParams> quantized,
                            Int8Sums int8_sums) {
  if (arithmetic == Arithmetic::fp32) return Oracle(config, w, Precision::fp32, rounding_probe);
  return simulating(config, w, arithmetic, rounding_probe, std::move(quantized), int8_sums);
}

Oracle Oracle::recomputing_in(const BertConfig& config, const BertWeights& w, Arithmetic arithmetic,
                              std::shared_ptr<const QuantizedParams> quantized, Int8Sums int8_sums) {
  return simulating(config, w, arithmetic, 0, std::move(quantized), int8_sums);
}

Oracle Oracle::simulating(const BertConfig& config, const BertWeights& w, Arithmetic arithmetic, uint64_t rounding_probe,
                          std::shared_ptr<const QuantizedParams> quantized, Int8Sums int8_sums) {
  Oracle o;
  o.impl_->rounding_probe = rounding_probe;
  o.impl_->quantized = std::move(quantized);
  o.impl_->int8_sums = int8_sums;
  translating_torch_errors(arithmetic_name(arithmetic) + " (simulated in fp64)", "load the weights",
                           [&] { o.load_simulated(config, w, arithmetic); });
  return o;
}

void Oracle::load_simulated(const BertConfig& config, const BertWeights& w, Arithmetic arithmetic) {
  Impl& m = *impl_;
  m.config = config;
  m.dtype = torch::kFloat64;
  m.simulated = arithmetic;
  m.scheme = scheme_of(arithmetic);
  const FloatFormat values = m.scheme.stored;
  // Weights as the products read them: tf32's inputs, the stored format otherwise.
  const FloatFormat weights = m.scheme.product_inputs.digits < values.digits ? m.scheme.product_inputs : values;
  // One draw per stored value, in the order they are stored below: the probe's direction for each.
  SeededRng rng(m.rounding_probe);
  auto draws = [&](const torch::Tensor& like) { return random_directions(rng, like); };
  // Element by element (round_to and step_in, which rounded and stepped follow): a BERT-base layer is
  // millions of values, too many for a dozen whole-layer temporaries per oracle.
  auto stored = [&](const Param& p, const FloatFormat& f) {
    auto x = torch::empty(p.shape, torch::kFloat64);
    double* out = x.data_ptr<double>();
    for (size_t i = 0; i < p.values.size(); ++i)
      out[i] = stored_in(f, p.values[i], m.rounding_probe, m.rounding_probe && (rng.next() & 1));
    return x;
  };
  // A parameter as the graph's quantizer holds it, where it does (Oracle::computing_in's `quantized`). Only
  // the int8 schemes have a rule for the graph's to replace: the others compute on the checkpoint's weights.
  // Given a graph's, the rule applies to nothing: what the graph leaves unquantized is stored as it is.
  const bool by_graph = m.quantized && (m.scheme.quantized_linear || m.scheme.weight_only_int8);
  std::map<const Param*, std::string> names;
  if (by_graph) for_each_param(config, w, [&](const std::string& name, const Param& p) { names[&p] = name; });
  // A value the graph quantizes statically, by its key (QuantizedParams::activations): int8's alone.
  auto activation = [&](const std::string& key) -> std::optional<QuantizedActivation> {
    if (!by_graph || !m.scheme.quantized_linear) return std::nullopt;
    const auto it = m.quantized->activations.find(key);
    return it == m.quantized->activations.end() ? std::nullopt : std::optional(it->second);
  };
  auto held = [&](const Param& p) -> const QuantizedWeight* {
    if (!by_graph) return nullptr;
    const auto it = m.quantized->weights.find(names.at(&p));
    return it == m.quantized->weights.end() ? nullptr : &it->second;
  };
  // A weight quantized per output channel, as the graph holds it or else in [-limit, limit] by
  // model/quantize.h's rule: its integers less their zero points [out, in], scales [out] and zero points
  // [out] and whether they are signed, the integers moved one quantization step under a probe (inwards at
  // the range's ends).
  auto quantized = [&](const Param& weight, int limit) {
    QuantizedWeight by_rule;
    const QuantizedWeight& qw = held(weight) ? *held(weight) : (by_rule = quantize_per_channel(weight, limit));
    auto q = torch::tensor(std::vector<int64_t>(qw.values.begin(), qw.values.end()), torch::kInt64)
                 .view({qw.out, qw.in}).to(torch::kFloat64);
    if (m.rounding_probe) {
      q = torch::where(draws(q), q + 1, q - 1);
      q = torch::where(q > qw.highest, torch::full_like(q, qw.highest - 1), q);
      q = torch::where(q < qw.lowest, torch::full_like(q, qw.lowest + 1), q);
    }
    const auto zero = torch::tensor(std::vector<int64_t>(qw.zero_points.begin(), qw.zero_points.end()), torch::kInt64)
                          .to(torch::kFloat64);
    return std::tuple{q - zero.unsqueeze(1),
                      torch::tensor(std::vector<double>(qw.scales.begin(), qw.scales.end()), torch::kFloat64), zero,
                      qw.lowest < 0};  // int8 (signed) where its range reaches below 0, else uint8
  };
  // w8a32's weights, or any table the graph quantizes, as Cast · scale or DequantizeLinear makes them:
  // (q − zero point) · scale rounded to fp32.
  auto dequantized = [&](const Param& weight) {
    const auto held = quantized(weight, kWeightOnlyInt8Limit);
    return rounded_to_fp32(std::get<0>(held) * std::get<1>(held).unsqueeze(1));
  };
  auto linear = [&](const Param& weight, const Param& bias) {
    SimulatedLinear l;
    l.b = stored(bias, values);
    if (m.scheme.weight_only_int8) {
      l.w = dequantized(weight);
    } else if (m.scheme.quantized_linear) {
      std::tie(l.q, l.scales, l.zero_points, l.signed_integers) = quantized(weight, kInt8WeightLimit);
      if (by_graph) {
        l.input = activation(input_of(names.at(&weight)));
        l.product = activation(product_of(names.at(&weight)));
      }
    } else {
      l.w = stored(weight, weights);
    }
    return l;
  };
  // The word table's entries, the first values stored, are rounded and stepped as `stored` does, when read;
  // the graph's quantized ones dequantized as `dequantized` does; w8a32's are quantized per token as
  // `dequantized` does, each row's scale kept.
  m.word_table = &w.word_embeddings;
  if (const QuantizedWeight* table = held(w.word_embeddings)) {
    m.word_value = [table, D = w.word_embeddings.shape.at(1), probe = m.rounding_probe](float, uint64_t index) {
      const size_t row = size_t(index / uint64_t(D));
      int32_t q = table->values[size_t(index)];
      if (probe) {  // one quantization step, inwards at the range's ends, as `quantized` moves them
        q += probe_up(probe, index) ? 1 : -1;
        q = q > table->highest ? table->highest - 1 : q < table->lowest ? table->lowest + 1 : q;
      }
      return double(float(q - table->zero_points[row]) * table->scales[row]);  // one fp32 rounding
    };
  } else if (m.scheme.weight_only_int8 && !by_graph) {
    const QuantizedWeight rows = quantize_per_channel(w.word_embeddings, kWeightOnlyInt8Limit);
    m.word_value = [scales = rows.scales, D = w.word_embeddings.shape.at(1), probe = m.rounding_probe](
                       float value, uint64_t index) {
      const float scale = scales[index / uint64_t(D)];
      const float limit = kWeightOnlyInt8Limit;
      float q = std::clamp(std::nearbyint(value / scale), -limit, limit);
      if (probe) {  // one quantization step, inwards at the range's ends, as `quantized` moves them
        q += probe_up(probe, index) ? 1.f : -1.f;
        q = q > limit ? limit - 1 : q < -limit ? 1 - limit : q;
      }
      return double(q * scale);  // one fp32 rounding, as the graph's Mul
    };
  } else {
    m.word_value = [f = values, probe = m.rounding_probe](float value, uint64_t index) {
      return stored_in(f, value, probe, probe && probe_up(probe, index));
    };
  }
  rng.skip(w.word_embeddings.values.size());
  m.position = (m.scheme.weight_only_int8 && !by_graph) || held(w.position_embeddings)
                   ? dequantized(w.position_embeddings)
                   : stored(w.position_embeddings, values);
  m.token_type = held(w.token_type_embeddings) ? dequantized(w.token_type_embeddings)
                                               : stored(w.token_type_embeddings, values);
  m.ln_g = stored(w.embeddings_ln_g, values);
  m.ln_b = stored(w.embeddings_ln_b, values);
  for (const LayerWeights& L : w.layers) {
    SimulatedLayer s;
    s.query = linear(L.query_w, L.query_b);
    s.key = linear(L.key_w, L.key_b);
    s.value = linear(L.value_w, L.value_b);
    s.attention_out = linear(L.attention_out_w, L.attention_out_b);
    s.lens_wo = m.scheme.quantized_linear || m.scheme.weight_only_int8 ? stored(L.attention_out_w, kBinary32)
                                                                      : s.attention_out.w;
    s.ln1_g = stored(L.attention_ln_g, values);
    s.ln1_b = stored(L.attention_ln_b, values);
    s.intermediate = linear(L.intermediate_w, L.intermediate_b);
    s.output = linear(L.output_w, L.output_b);
    s.ln2_g = stored(L.output_ln_g, values);
    s.ln2_b = stored(L.output_ln_b, values);
    const int l = int(m.simulated_layers.size());
    const auto of = [&, l](LT t) { return activation(trace_name(l, t)); };
    s.reads = SimulatedLayer::Reads{
        .query = of(LT::query),
        .key = of(LT::key),
        .scores_product = activation(product_of(trace_name(l, LT::scores))),
        .probs = of(LT::probs),
        .value = of(LT::value),
        .context_product = activation(product_of(trace_name(l, LT::context))),
        .attention_residual = activation(input_of(trace_name(l, LT::attention_pre_norm))),
        .ffn_residual = activation(input_of(trace_name(l, LT::output)))};
    m.simulated_layers.push_back(std::move(s));
  }
}

void Oracle::load(const BertConfig& config, const BertWeights& w, Precision precision) {
  Impl& m = *impl_;
  m.config = config;
  m.dtype = precision == Precision::fp64 ? torch::kFloat64 : torch::kFloat32;
  // A rounding probe moves every parameter one float step, up or down as its draw says: one draw per
  // value, in for_each_param's order (model/checkpoint.h), the word table's first.
  m.word_table = &w.word_embeddings;
  m.word_value = [probe = m.rounding_probe](float value, uint64_t index) {
    return double(probe ? probe_step(value, probe_up(probe, index)) : value);
  };
  SeededRng rng(m.rounding_probe);
  rng.skip(w.word_embeddings.values.size());
  auto t = [&](const Param& p) {
    if (!m.rounding_probe) return to_torch(p, m.dtype);
    Param moved = p;
    for (float& v : moved.values) v = probe_step(v, rng.next() & 1);
    return to_torch(moved, m.dtype);
  };
  m.position = t(w.position_embeddings);
  m.token_type = t(w.token_type_embeddings);
  m.ln_g = t(w.embeddings_ln_g);
  m.ln_b = t(w.embeddings_ln_b);
  for (const LayerWeights& L : w.layers) {
    m.layers.push_back({t(L.query_w), t(L.query_b), t(L.key_w), t(L.key_b), t(L.value_w),
                        t(L.value_b), t(L.attention_out_w), t(L.attention_out_b),
                        t(L.attention_ln_g), t(L.attention_ln_b), t(L.intermediate_w),
                        t(L.intermediate_b), t(L.output_w), t(L.output_b), t(L.output_ln_g),
                        t(L.output_ln_b)});
  }
}

Oracle::~Oracle() = default;
Oracle::Oracle(Oracle&&) noexcept = default;

}  // namespace lenscheck::oracle
