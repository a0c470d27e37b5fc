#include "oracle/oracle.h"

#include <torch/torch.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <optional>

#include "model/quantize.h"
#include "model/seeded_rng.h"

namespace lenscheck::oracle {

namespace F = torch::nn::functional;

namespace {

using LT = LayerTensor;

torch::Tensor to_torch(const Param& p, torch::Dtype dtype) {
  auto t = torch::from_blob(const_cast<float*>(p.values.data()), p.shape, torch::kFloat32);
  return t.to(dtype, /*non_blocking=*/false, /*copy=*/true);  // the oracle owns these weights, fp32 too
}

Tensor to_trace(const torch::Tensor& t) {
  const auto c = t.detach().to(torch::kFloat64).contiguous();
  Tensor out(c.sizes().vec());
  std::copy_n(c.data_ptr<double>(), out.numel(), out.values.begin());
  return out;
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

struct TorchLayer {
  torch::Tensor wq, bq, wk, bk, wv, bv, wo, bo, ln1_g, ln1_b, wi, bi, wo2, bo2, ln2_g, ln2_b;
};

// The spacing of `f` at x, element by element, as round_to (model/arithmetic.h) takes it: 2^(e - digits
// + 1), with e = frexp's exponent - 1 clamped at the smallest normal one. `exponent` is frexp's, less 1.
torch::Tensor spacing(const torch::Tensor& exponent, const FloatFormat& f) {
  return torch::exp2(torch::clamp_min(exponent, f.min_exponent) - (f.digits - 1));
}

// x (fp64) rounded to `f`, element by element, as round_to rounds a double.
torch::Tensor rounded(const torch::Tensor& x, const FloatFormat& f) {
  // binary32 is a dtype: the conversion is IEEE's one rounding, subnormals and overflow included.
  if (f.digits == kBinary32.digits && f.min_exponent == kBinary32.min_exponent)
    return x.to(torch::kFloat32).to(torch::kFloat64);
  const auto ulp = spacing(std::get<1>(torch::frexp(x)).to(torch::kFloat64) - 1, f);
  const auto y = torch::round(x / ulp) * ulp;  // round: ties to even
  return torch::where(y.abs() > f.largest, x.sign() * std::numeric_limits<double>::infinity(), y);
}

// x, a tensor of `f`'s values, moved one step of `f` where `up` (else down), as step_in does.
torch::Tensor stepped(const torch::Tensor& x, const FloatFormat& f, const torch::Tensor& up) {
  const auto [mantissa, frexp_exponent] = torch::frexp(x);
  const auto exponent = frexp_exponent.to(torch::kFloat64) - 1;
  auto ulp = torch::where(x == 0, torch::full_like(x, std::ldexp(1.0, f.min_exponent - (f.digits - 1))),
                          spacing(exponent, f));
  // Below a power of two the spacing is half the one above it.
  const auto towards_zero = (x > 0) != up;
  ulp = torch::where(towards_zero & (mantissa.abs() == 0.5) & (exponent > f.min_exponent) & (x != 0), ulp / 2, ulp);
  const auto y = torch::where(up, x + ulp, x - ulp);
  return torch::where(y.abs() > f.largest, y.sign() * std::numeric_limits<double>::infinity(), y);
}

// One direction per element of a tensor shaped `like`, up (true) or down, drawn from `rng` in order.
torch::Tensor random_directions(SeededRng& rng, const torch::Tensor& like) {
  auto up = torch::empty(like.sizes(), torch::kBool);
  bool* u = up.data_ptr<bool>();
  for (int64_t i = 0; i < up.numel(); ++i) u[i] = rng.next() & 1;
  return up;
}

// A linear layer as the simulated arithmetic stores it: W [out, in] in the format, or for int8 the
// quantized integers and per-channel scales of model/quantize.h.
struct SimulatedLinear {
  torch::Tensor w, b;        // w: the format's values (int8: unused)
  torch::Tensor q, scales;   // int8: integers [out, in] and scales [out], fp64 holding exact values
};

struct SimulatedLayer {
  SimulatedLinear query, key, value, attention_out, intermediate, output;
  torch::Tensor lens_wo;  // W_O as f(x) reads it: the format's values (int8: the fp32 weight, unquantized)
  torch::Tensor ln1_g, ln1_b, ln2_g, ln2_b;
};

}  // namespace

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

namespace {

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

std::string oracle_name(Precision precision) { return precision == Precision::fp64 ? "fp64" : "fp32"; }

}  // namespace

Oracle::Oracle() : impl_(std::make_unique<Impl>()) {}

Oracle::Oracle(const BertConfig& config, const BertWeights& w, Precision precision, uint64_t rounding_probe)
    : impl_(std::make_unique<Impl>()) {
  impl_->rounding_probe = rounding_probe;
  translating_torch_errors(oracle_name(precision), "load the weights", [&] { load(config, w, precision); });
}

Oracle Oracle::computing_in(const BertConfig& config, const BertWeights& w, Arithmetic arithmetic,
                            uint64_t rounding_probe) {
  if (arithmetic == Arithmetic::fp32) return Oracle(config, w, Precision::fp32, rounding_probe);
  return simulating(config, w, arithmetic, rounding_probe);
}

Oracle Oracle::recomputing_in(const BertConfig& config, const BertWeights& w, Arithmetic arithmetic) {
  return simulating(config, w, arithmetic, 0);
}

Oracle Oracle::simulating(const BertConfig& config, const BertWeights& w, Arithmetic arithmetic, uint64_t rounding_probe) {
  Oracle o;
  o.impl_->rounding_probe = rounding_probe;
  translating_torch_errors(arithmetic_name(arithmetic) + " (simulated in fp64)", "load the weights",
                           [&] { o.load_simulated(config, w, arithmetic); });
  return o;
}

Oracle::LocalReferences Oracle::recompute_locally(const Trace& candidate, int probes) const {
  if (!impl_->simulated) throw std::logic_error("recompute_locally runs on an oracle made by recomputing_in");
  Encoding enc;
  enc.ids = candidate.input_ids;
  enc.tokens = candidate.tokens;
  enc.word_ids = candidate.word_ids;
  return translating_torch_errors(arithmetic_name(*impl_->simulated) + " (simulated in fp64)",
                                  "recompute the candidate's ops", [&] {
    LocalReferences r;
    Trace unstored;
    const Local exact{&candidate, false, nullptr}, fp32{&candidate, true, &unstored};
    r.exact = run_simulated(enc, &exact);
    r.fp32 = run_simulated(enc, &fp32);
    // Each op's last fp32 operation moved one fp32 step, up or down as the seed draws, then rounded as
    // the op and the store round it: no op reads a probe-stepped value, so the probes need no forward
    // of their own.
    const FloatFormat stored = impl_->scheme.stored, ops = impl_->scheme.ops;
    for (int seed = 1; seed <= probes; ++seed) {
      SeededRng rng{uint64_t(seed)};
      Trace& probe = r.probes.emplace_back(r.fp32);
      probe.producer += fmt::format(", results moved one fp32 step (seed {})", seed);
      for (auto& [name, tensor] : probe.tensors) {
        const Tensor& x = *unstored.find(name);
        for (size_t i = 0; i < x.values.size(); ++i)
          tensor.values[i] =
              round_to(stored, round_to(ops, step_in(kBinary32, round_to(kBinary32, x.values[i]), rng.next() & 1)));
      }
    }
    return r;
  });
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
  auto linear = [&](const Param& weight, const Param& bias) {
    SimulatedLinear l;
    l.b = stored(bias, values);
    if (!m.scheme.quantized_linear) {
      l.w = stored(weight, weights);
      return l;
    }
    const QuantizedWeight qw = quantize_per_channel(weight);
    l.q = torch::tensor(std::vector<int64_t>(qw.values.begin(), qw.values.end()), torch::kInt64)
              .view({qw.out, qw.in}).to(torch::kFloat64);
    if (m.rounding_probe) {  // one quantization step, inwards at the range's ends
      const double limit = kInt8WeightLimit;
      l.q = torch::where(draws(l.q), l.q + 1, l.q - 1);
      l.q = torch::where(l.q > limit, torch::full_like(l.q, limit - 1), l.q);
      l.q = torch::where(l.q < -limit, torch::full_like(l.q, 1 - limit), l.q);
    }
    l.scales = torch::tensor(std::vector<double>(qw.scales.begin(), qw.scales.end()), torch::kFloat64);
    return l;
  };
  // The word table's entries, the first values stored, are rounded and stepped as `stored` does, when read.
  m.word_table = &w.word_embeddings;
  m.word_value = [f = values, probe = m.rounding_probe](float value, uint64_t index) {
    return stored_in(f, value, probe, probe && probe_up(probe, index));
  };
  rng.skip(w.word_embeddings.values.size());
  m.position = stored(w.position_embeddings, values);
  m.token_type = stored(w.token_type_embeddings, values);
  m.ln_g = stored(w.embeddings_ln_g, values);
  m.ln_b = stored(w.embeddings_ln_b, values);
  for (const LayerWeights& L : w.layers) {
    SimulatedLayer s;
    s.query = linear(L.query_w, L.query_b);
    s.key = linear(L.key_w, L.key_b);
    s.value = linear(L.value_w, L.value_b);
    s.attention_out = linear(L.attention_out_w, L.attention_out_b);
    s.lens_wo = m.scheme.quantized_linear ? stored(L.attention_out_w, kBinary32) : s.attention_out.w;
    s.ln1_g = stored(L.attention_ln_g, values);
    s.ln1_b = stored(L.attention_ln_b, values);
    s.intermediate = linear(L.intermediate_w, L.intermediate_b);
    s.output = linear(L.output_w, L.output_b);
    s.ln2_g = stored(L.output_ln_g, values);
    s.ln2_b = stored(L.output_ln_b, values);
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

Trace Oracle::forward(const Encoding& enc, Record record) const {
  const std::string name = impl_->simulated ? arithmetic_name(*impl_->simulated) + " (simulated in fp64)"
                                            : oracle_name(impl_->dtype == torch::kFloat64 ? Precision::fp64 : Precision::fp32);
  return translating_torch_errors(name, "run the forward pass", [&] {
                                    if (!impl_->simulated) return run(enc, record);
                                    if (record != Record::everything)
                                      throw std::invalid_argument("a simulated arithmetic records every tensor");
                                    return run_simulated(enc, nullptr);
                                  });
}

namespace {

// Kobayashi et al. 2021's residual lens (runtime/kernels.h residual_lenses), term by term: for a block of
// query rows i at a time, terms [rows, T, D] = Σ_h α_hij f_h(x_j); z_ij = terms + δ_ij x_i (x the layer's
// input), its LayerNorm'd form γ ⊙ (z − mean z) / sqrt(var y_i + ε) with y the real pre-LayerNorm state,
// and the mixing ratios of the three from Σ_{j≠i} of each term, summed here rather than read off y.
class ResidualLensBlocks {
 public:
  ResidualLensBlocks(const torch::Tensor& x, const torch::Tensor& y, const torch::Tensor& gain, double eps)
      : x_(x), gain_(gain), scale_(torch::rsqrt(y.var(-1, false) + eps)) {}

  void add(const torch::Tensor& terms, int64_t first_row) {
    const int64_t rows = terms.size(0);
    const auto at = torch::arange(rows, torch::kInt64), own = at + first_row;
    const auto self = terms.index({at, own});  // [rows, D]: Σ_h α_hii f_h(x_i)
    const auto z_self = self + x_.index({own});
    auto z = terms.clone();
    z.index_put_({at, own}, z_self);
    auto norm = [](const torch::Tensor& t) { return torch::linalg::vector_norm(t, 2, {-1}, false, {}); };
    auto centred = [&](const torch::Tensor& t) { return norm(gain_ * (t - t.mean(-1, true))); };
    residual_norm_.push_back(norm(z));
    layernorm_norm_.push_back(centred(z) * scale_.slice(0, first_row, first_row + rows).unsqueeze(1));
    const auto rest = terms.sum(1) - self;  // Σ_{j≠i}
    const auto r = norm(rest), rc = centred(rest);
    // a / (a + b), 0 where both are 0 (nothing carried, so nothing mixed in).
    auto share = [](const torch::Tensor& a, const torch::Tensor& b) {
      return torch::where(a + b > 0, a / (a + b), torch::zeros_like(a));
    };
    ratio_attention_.push_back(share(r, norm(self)));
    ratio_residual_.push_back(share(r, norm(z_self)));
    ratio_layernorm_.push_back(share(rc, centred(z_self)));  // the scale is common to both and cancels
  }
  // The five tensors, each with its name in the trace.
  std::vector<std::pair<LayerTensor, torch::Tensor>> results() const {
    return {{LayerTensor::lens_residual_norm, torch::cat(residual_norm_)},
            {LayerTensor::lens_residual_layernorm_norm, torch::cat(layernorm_norm_)},
            {LayerTensor::mixing_ratio_attention, torch::cat(ratio_attention_)},
            {LayerTensor::mixing_ratio_residual, torch::cat(ratio_residual_)},
            {LayerTensor::mixing_ratio_residual_layernorm, torch::cat(ratio_layernorm_)}};
  }

 private:
  torch::Tensor x_, gain_, scale_;
  std::vector<torch::Tensor> residual_norm_, layernorm_norm_, ratio_attention_, ratio_residual_, ratio_layernorm_;
};

// Layer `layer`'s lenses from its probabilities alpha [H, T, T], values v [H, T, Dh], input x and
// pre-LayerNorm state: Kobayashi et al. 2020's, with f(x) = v W_O[h] (the head's slice of the output
// dense weight, no b_O), and where `record` keeps them 2021's residual ones.
void add_lenses(Trace& trace, int layer, Record record, const torch::Tensor& alpha, const torch::Tensor& v,
                const TorchLayer& L, const torch::Tensor& x, const torch::Tensor& pre_norm, double eps) {
  auto name = [layer](LayerTensor t) { return trace_name(layer, t); };
  const bool everything = record == Record::everything;
  const int64_t H = v.size(0), T = v.size(1), Dh = v.size(2), D = H * Dh;
  const auto value_norm = torch::linalg::vector_norm(v, 2, {-1}, false, {});  // [H, T]
  trace.add(name(LT::value_norm), to_trace(value_norm));
  const auto wo_heads = L.wo.view({D, H, Dh}).permute({1, 2, 0});  // [H, Dh, D]
  const auto fx = torch::bmm(v, wo_heads);                        // [H, T, D]
  const auto transformed_norm = torch::linalg::vector_norm(fx, 2, {-1}, false, {});  // [H, T]
  trace.add(name(LT::transformed_norm), to_trace(transformed_norm));
  trace.add(name(LT::lens_value_norm), to_trace(alpha * value_norm.unsqueeze(1)));
  trace.add(name(LT::lens_transformed_norm), to_trace(alpha * transformed_norm.unsqueeze(1)));
  if (!keeps_residual_lens(record)) return;
  // ||sum_h alpha_h[i, j] f_h(x_j)|| for a block of query rows at a time: the whole
  // [T, T, D] would take 512 MiB at T = 512 in fp64; blocks keep it to about 32 MiB.
  const int64_t block = std::max<int64_t>(1, (int64_t{1} << 22) / (T * D));
  std::vector<torch::Tensor> summed;
  ResidualLensBlocks residual(x, pre_norm, L.ln1_g, eps);
  for (int64_t i = 0; i < T; i += block) {
    const auto terms = torch::einsum("hij,hjd->ijd", {alpha.slice(1, i, std::min(T, i + block)), fx});
    if (everything) summed.push_back(torch::linalg::vector_norm(terms, 2, {-1}, false, {}));
    residual.add(terms, i);
  }
  if (everything) trace.add(name(LT::lens_summed_transformed_norm), to_trace(torch::cat(summed)));
  // Record::instrument_residual keeps AttnResLn-N and the mixing ratios; AttnRes-N is the whole trace's.
  for (const auto& [tensor, values] : residual.results())
    if (everything || tensor != LT::lens_residual_norm) trace.add(name(tensor), to_trace(values));
}

}  // namespace

Trace Oracle::run(const Encoding& enc, Record record) const {
  torch::NoGradGuard no_grad;
  const Impl& m = *impl_;
  const int64_t T = static_cast<int64_t>(enc.ids.size()), D = m.config.hidden_size,
                H = m.config.num_attention_heads, Dh = D / H;
  const bool everything = record == Record::everything, lenses = keeps_lenses(record);

  Trace trace;
  trace.precision = m.dtype == torch::kFloat64 ? "fp64" : "fp32";
  trace.producer = "oracle " + trace.precision;
  trace.input_ids = enc.ids;
  trace.tokens = enc.tokens;
  trace.word_ids = enc.word_ids;

  auto x = m.word_rows(enc.ids) + m.position.slice(0, 0, T) + m.token_type[0];
  // The rounding probe moves every LayerNorm output one float step, up or down at random: rounding-sized
  // noise in every row, which breaks the exact ties a collapsed model's identical rows have in fp64
  // and in libtorch alike, and which a runtime that rounds elsewhere does not keep.
  std::optional<at::Generator> probe;
  if (m.rounding_probe) probe = at::make_generator<at::CPUGeneratorImpl>(m.rounding_probe);
  auto norm = [&](const torch::Tensor& v, const torch::Tensor& g, const torch::Tensor& b) {
    const torch::Tensor y = m.layer_norm(v, g, b);
    if (!probe) return y;
    const auto up = torch::randint(0, 2, y.sizes(), *probe, torch::TensorOptions().dtype(torch::kBool));
    const double inf = std::numeric_limits<double>::infinity();
    return torch::nextafter(y, torch::where(up, torch::full_like(y, inf), torch::full_like(y, -inf)));
  };
  x = norm(x, m.ln_g, m.ln_b);
  if (everything) trace.add(kEmbeddingsOutput, to_trace(x));

  for (size_t l = 0; l < m.layers.size(); ++l) {
    auto name = [l](LayerTensor t) { return trace_name(int(l), t); };
    const TorchLayer& L = m.layers[l];
    auto per_head = [&](const torch::Tensor& t) { return t.view({T, H, Dh}).transpose(0, 1); };
    const auto v = lenses ? per_head(F::linear(x, L.wv, L.bv)) : torch::Tensor();  // [H, T, Dh]
    if (everything) {
      const auto q = per_head(F::linear(x, L.wq, L.bq));
      const auto k = per_head(F::linear(x, L.wk, L.bk));
      trace.add(name(LT::query), to_trace(q));
      trace.add(name(LT::key), to_trace(k));
      trace.add(name(LT::value), to_trace(v));
      const auto scores = torch::matmul(q, k.transpose(1, 2)) / std::sqrt(static_cast<double>(Dh));
      trace.add(name(LT::scores), to_trace(scores));
      trace.add(name(LT::context),
                to_trace(torch::matmul(torch::softmax(scores, -1), v).transpose(0, 1).reshape({T, D})));
    }

    // The attention block itself, probabilities and output projection, is PyTorch's own
    // multi_head_attention_forward: the trace's probs and output come from it, independently of
    // the explicit scores/context above, so the runtime is held to both.
    const auto seq = x.unsqueeze(1);  // [T, batch 1, D]
    auto [attended, probs] = F::multi_head_attention_forward(
        seq, seq, seq,
        F::MultiheadAttentionForwardFuncOptions(D, H, torch::Tensor(), torch::cat({L.bq, L.bk, L.bv}),
                                                torch::Tensor(), torch::Tensor(), false, 0.0, L.wo,
                                                L.bo)
            .training(false)
            .need_weights(lenses)
            .average_attn_weights(false)
            .use_separate_proj_weight(true)
            .q_proj_weight(L.wq)
            .k_proj_weight(L.wk)
            .v_proj_weight(L.wv));
    const auto pre_norm = attended.squeeze(1) + x;
    if (everything) trace.add(name(LT::attention_pre_norm), to_trace(pre_norm));
    const auto attention = norm(pre_norm, L.ln1_g, L.ln1_b);
    if (lenses) {
      const auto alpha = probs.squeeze(0);  // [H, T, T]
      trace.add(name(LT::probs), to_trace(alpha));
      if (everything) trace.add(name(LT::attention_output), to_trace(attention));
      add_lenses(trace, int(l), record, alpha, v, L, x, pre_norm, m.config.layer_norm_eps);
    }

    const auto inter = m.activation(F::linear(attention, L.wi, L.bi));
    if (everything) trace.add(name(LT::intermediate), to_trace(inter));
    x = norm(F::linear(inter, L.wo2, L.bo2) + attention, L.ln2_g, L.ln2_b);
    if (everything || (record == Record::output && l + 1 == m.layers.size())) trace.add(name(LT::output), to_trace(x));
  }
  return trace;
}

// One forward pass of run() in a simulated scheme, every op explicit so that its output can be rounded
// where the scheme rounds: each op computed in fp64 (or, for the local verdict's benchmark, fp32) from
// inputs as the scheme holds them, its output rounded to the scheme's op format, and the values the
// scheme stores rounded to that; the rounding rules are member functions. Globally (local == nullptr)
// every op reads this pass's own values; locally (Oracle::Local) every op reads the candidate's inputs
// from local->feed, and an op whose inputs the feed lacks is left out.
class Oracle::SimulatedPass {
 public:
  using Value = std::optional<torch::Tensor>;

  SimulatedPass(const Impl& m, const Encoding& enc, const Local* local)
      : m_(m), s_(m.scheme), local_(local), enc_(enc), T_(int64_t(enc.ids.size())), D_(m.config.hidden_size),
        H_(m.config.num_attention_heads), Dh_(D_ / H_), fp32_ops_(local && local->fp32_ops),
        round_inputs_(s_.product_inputs.digits < s_.ops.digits) {
    const Arithmetic arithmetic = *m.simulated;
    // Every value is one of the format's, which binary32 holds exactly: the trace declares the format.
    trace_.precision = arithmetic_name(arithmetic);
    trace_.producer = fmt::format("oracle {} (simulated in fp64{})", arithmetic_name(arithmetic),
                                  local ? local->fp32_ops ? ", each op from the candidate's inputs, in fp32"
                                                          : ", each op from the candidate's inputs"
                                        : "");
    trace_.input_ids = enc.ids;
    trace_.tokens = enc.tokens;
    trace_.word_ids = enc.word_ids;
    if (m.rounding_probe) probe_.emplace(m.rounding_probe ^ 0x6c6e6f757470ULL);  // apart from the weights' draws
  }

  Trace run() && {
    torch::NoGradGuard no_grad;
    // As BertEmbeddings adds them: word + token type, then + position.
    Value x = finish_norm(kEmbeddingsOutput,
                          op(arith(op(arith(m_.word_rows(enc_.ids)) + arith(m_.token_type[0]))) +
                             arith(m_.position.slice(0, 0, T_))),
                          m_.ln_g, m_.ln_b);
    std::string x_name = kEmbeddingsOutput;
    for (size_t l = 0; l < m_.simulated_layers.size(); ++l) {
      x = layer(int(l), input(x_name, x, {T_, D_}, true));
      x_name = trace_name(int(l), LT::output);
    }
    return std::move(trace_);
  }

 private:
  const Impl& m_;
  const Scheme& s_;
  const Local* local_;
  const Encoding& enc_;
  const int64_t T_, D_, H_, Dh_;
  const bool fp32_ops_;
  // Every operand is already a value of the op or stored format: only a coarser product input rounds it.
  const bool round_inputs_;
  std::optional<SeededRng> probe_;
  Trace trace_;

  torch::Tensor arith(const torch::Tensor& x) const { return fp32_ops_ ? x.to(torch::kFloat32) : x; }
  static torch::Tensor back(const torch::Tensor& x) { return x.to(torch::kFloat64); }
  torch::Tensor op(const torch::Tensor& x) const { return rounded(back(x), s_.ops); }
  torch::Tensor keep(const torch::Tensor& x) const { return rounded(x, s_.stored); }
  torch::Tensor product_input(const torch::Tensor& x) const {
    return round_inputs_ ? rounded(x, s_.product_inputs) : x;
  }
  // An op's last operation before its output is rounded (`_raw`), and the op with it rounded.
  torch::Tensor product_raw(const torch::Tensor& a, const torch::Tensor& b) const {
    return torch::matmul(arith(product_input(a)), arith(product_input(b)));
  }
  torch::Tensor product(const torch::Tensor& a, const torch::Tensor& b) const { return op(product_raw(a, b)); }
  // DynamicQuantizeLinear, as ONNX Runtime computes it in fp32: the tensor's range widened to hold 0,
  // mapped onto uint8; returns the integers less the zero point, and the scale.
  static std::pair<torch::Tensor, double> quantized(const torch::Tensor& x) {
    auto f32 = [](const torch::Tensor& t) { return rounded(t, kBinary32); };
    const double lo = std::min(0.0, x.min().item<double>()), hi = std::max(0.0, x.max().item<double>());
    const double scale = rounded(torch::tensor((double(float(hi - lo))) / 255.0), kBinary32).item<double>();
    if (scale == 0) return std::pair{torch::zeros_like(x), 0.0};
    const double zero_point = std::clamp(double(std::nearbyint(float(-lo / scale))), 0.0, 255.0);
    const auto q = torch::clamp(torch::round(f32(x / scale)) + zero_point, 0, 255);
    return std::pair{q - zero_point, scale};
  }
  torch::Tensor linear_raw(const torch::Tensor& x, const SimulatedLinear& l) const {
    if (!s_.quantized_linear) return arith(product(x, l.w.t())) + arith(l.b);
    // MatMulInteger's exact integer sums, cast to fp32, times x_scale · w_scale (fp32), plus the bias.
    const auto [xq, x_scale] = quantized(x);
    const auto sums = rounded(torch::matmul(xq, l.q.t()), kBinary32);
    return arith(op(arith(sums) * arith(rounded(x_scale * l.scales, kBinary32)))) + arith(l.b);
  }
  torch::Tensor linear(const torch::Tensor& x, const SimulatedLinear& l) const { return op(linear_raw(x, l)); }
  // A constant of the graph (the attention scale, GELU's), stored as the weights are.
  torch::Tensor constant(double c) const { return keep(torch::tensor(c, torch::kFloat64)); }
  // The activation's last operation. Between casts, GELU is the graph's chain of fp32 ops (Div, Erf or
  // Tanh, Add, Mul, Mul, as torch.onnx writes it) on its constants as stored: √2 in fp16 is 1.4140625.
  torch::Tensor activation(const torch::Tensor& x) const {
    if (!s_.fp32_between_casts || m_.config.activation() == Activation::relu) return m_.activation(arith(x));
    const auto a = arith(x);
    torch::Tensor inner;
    if (m_.config.activation() == Activation::gelu_erf) {
      inner = op(torch::erf(arith(op(a / arith(constant(1.4142135623730951))))));
    } else {
      const auto cube = op(arith(op(a * a)) * a);
      const auto t = op(a + arith(op(arith(cube) * arith(constant(0.044715)))));
      inner = op(torch::tanh(arith(op(arith(t) * arith(constant(0.7978845608028654))))));
    }
    return arith(op(a * arith(op(arith(inner) + arith(constant(1.0)))))) * arith(constant(0.5));
  }

  // An op's result, from its last operation `raw`: rounded to the op format, recorded as stored, and
  // passed on as the scheme keeps it (`kept_in_stored_format`: rounded to the stored format, as every
  // value is where the scheme has no fp32 between casts). The local probes step `raw`, which
  // `local->unstored` receives, one fp32 step before it is rounded.
  torch::Tensor finish(const std::string& name, const torch::Tensor& raw, bool kept_in_stored_format) {
    const auto y = op(raw);
    trace_.add(name, to_trace(keep(y)));
    if (local_ && local_->unstored) local_->unstored->add(name, to_trace(back(raw)));
    return !s_.fp32_between_casts || kept_in_stored_format ? keep(y) : y;
  }
  // A LayerNorm, which reads its input as stored (ONNX Runtime's float16 kernel reads fp16) and whose
  // output is stored, the global rounding probe moving it one step of the stored format.
  torch::Tensor finish_norm(const std::string& name, const torch::Tensor& v, const torch::Tensor& g,
                            const torch::Tensor& b) {
    const auto raw = m_.layer_norm(arith(keep(v)), arith(g), arith(b));
    auto y = keep(op(raw));
    if (probe_) y = stepped(y, s_.stored, random_directions(*probe_, y));
    trace_.add(name, to_trace(y));
    if (local_ && local_->unstored) local_->unstored->add(name, to_trace(back(raw)));
    return y;
  }

  // An op's input: globally this forward's own value. Locally the candidate's (none when its trace
  // lacks it, holds it in another shape, or holds NaN or Inf), except where the scheme passes the value on
  // in fp32 while the trace holds it rounded: there the op reads what this recomputation computed from
  // the candidate's stored values, so that the local op runs from one stored value to the next, as the
  // candidate does between its casts.
  Value input(const std::string& name, const Value& own, std::vector<int64_t> shape, bool kept_in_stored_format) const {
    if (!local_ || (s_.fp32_between_casts && !kept_in_stored_format)) return own;
    const Tensor* t = local_->feed->find(name);
    if (!t || t->shape != shape) return std::nullopt;
    for (double v : t->values)
      if (!std::isfinite(v)) return std::nullopt;
    return torch::from_blob(const_cast<double*>(t->values.data()), shape, torch::kFloat64).clone();
  }
  static bool all(std::initializer_list<const Value*> values) {
    for (const Value* v : values)
      if (!*v) return false;
    return true;
  }
  torch::Tensor per_head(const torch::Tensor& t) const { return t.view({T_, H_, Dh_}).transpose(0, 1); }

  // One layer from its input xi (none where the candidate lacks it): the attention block, the lenses,
  // the FFN; returns the layer's output, none where an op's inputs are missing.
  Value layer(int l, const Value& xi) {
    auto name = [l](LayerTensor t) { return trace_name(l, t); };
    const SimulatedLayer& L = m_.simulated_layers[size_t(l)];
    const int64_t T = T_, D = D_, H = H_, Dh = Dh_;
    Value q, k, v;
    if (xi) {
      q = finish(name(LT::query), per_head(linear_raw(*xi, L.query)), true);
      k = finish(name(LT::key), per_head(linear_raw(*xi, L.key)), true);
      v = finish(name(LT::value), per_head(linear_raw(*xi, L.value)), true);
    }
    const Value qi = input(name(LT::query), q, {H, T, Dh}, true), ki = input(name(LT::key), k, {H, T, Dh}, true),
                vi = input(name(LT::value), v, {H, T, Dh}, true);
    Value scores, alpha, context, attention;
    if (all({&qi, &ki}))
      scores = finish(name(LT::scores),
                      arith(product(*qi, ki->transpose(1, 2))) / arith(constant(std::sqrt(double(Dh)))), false);
    const Value si = input(name(LT::scores), scores, {H, T, T}, false);
    if (si) alpha = finish(name(LT::probs), torch::softmax(arith(*si), -1), false);
    const Value ai = input(name(LT::probs), alpha, {H, T, T}, false);
    if (all({&ai, &vi}))
      context = finish(name(LT::context), product_raw(*ai, *vi).transpose(0, 1).reshape({T, D}), true);
    const Value ci = input(name(LT::context), context, {T, D}, true);
    Value pre_norm;  // y, the attention block's state before its LayerNorm
    if (all({&ci, &xi})) {
      const auto raw = arith(linear(*ci, L.attention_out)) + arith(*xi);
      pre_norm = finish(name(LT::attention_pre_norm), raw, false);
      attention = finish_norm(name(LT::attention_output), op(raw), L.ln1_g, L.ln1_b);
    }
    if (vi) lenses(l, L, *vi, ai, xi, input(name(LT::attention_pre_norm), pre_norm, {T, D}, false));

    const Value attention_i = input(name(LT::attention_output), attention, {T, D}, true);
    Value inter;
    if (attention_i) inter = finish(name(LT::intermediate), activation(linear(*attention_i, L.intermediate)), false);
    const Value inter_i = input(name(LT::intermediate), inter, {T, m_.config.intermediate_size}, false);
    if (!all({&inter_i, &attention_i})) return std::nullopt;
    return finish_norm(name(LT::output), op(arith(linear(*inter_i, L.output)) + arith(*attention_i)), L.ln2_g,
                       L.ln2_b);
  }

  // Kobayashi et al. 2020's norms and lenses of layer l, from its values vi and probabilities ai, and
  // 2021's residual lens, from these, the layer's input xi and its pre-LayerNorm state.
  void lenses(int l, const SimulatedLayer& L, const torch::Tensor& vi, const Value& ai, const Value& xi,
              const Value& pre_norm) {
    auto name = [l](LayerTensor t) { return trace_name(l, t); };
    const int64_t T = T_, D = D_, H = H_, Dh = Dh_;
    const Value value_norm =
        finish(name(LT::value_norm), torch::linalg::vector_norm(arith(vi), 2, {-1}, false, {}), false);
    const auto fx = product(vi, L.lens_wo.view({D, H, Dh}).permute({1, 2, 0}));  // [H, T, D]
    const Value transformed_norm =
        finish(name(LT::transformed_norm), torch::linalg::vector_norm(arith(fx), 2, {-1}, false, {}), false);
    const Value value_norm_i = input(name(LT::value_norm), value_norm, {H, T}, false),
                transformed_norm_i = input(name(LT::transformed_norm), transformed_norm, {H, T}, false);
    if (all({&ai, &value_norm_i}))
      finish(name(LT::lens_value_norm), arith(*ai) * arith(value_norm_i->unsqueeze(1)), false);
    if (all({&ai, &transformed_norm_i}))
      finish(name(LT::lens_transformed_norm), arith(*ai) * arith(transformed_norm_i->unsqueeze(1)), false);
    if (!ai) return;
    const int64_t block = std::max<int64_t>(1, (int64_t{1} << 22) / (T * D));  // as run() blocks it
    std::vector<torch::Tensor> summed;
    const auto fx_in = arith(product_input(fx));
    std::optional<ResidualLensBlocks> residual;
    if (all({&xi, &pre_norm}))
      residual.emplace(arith(*xi), arith(*pre_norm), arith(L.ln1_g), m_.config.layer_norm_eps);
    for (int64_t i = 0; i < T; i += block) {
      const auto terms = arith(op(
          torch::einsum("hij,hjd->ijd", {arith(product_input(ai->slice(1, i, std::min(T, i + block)))), fx_in})));
      summed.push_back(back(torch::linalg::vector_norm(terms, 2, {-1}, false, {})));
      if (residual) residual->add(terms, i);
    }
    finish(name(LT::lens_summed_transformed_norm), torch::cat(summed), false);
    if (residual)
      for (const auto& [tensor, values] : residual->results()) finish(name(tensor), back(values), false);
  }
};

Trace Oracle::run_simulated(const Encoding& enc, const Local* local) const {
  return SimulatedPass(*impl_, enc, local).run();
}

std::string Oracle::backend() {
  // at::show_config() lists the BLAS libtorch was built against; Debian's build dispatches to the
  // libblas.so.3 alternative, which the set-up points at OpenBLAS.
  std::string blas = "unknown BLAS";
  if (std::FILE* f = std::fopen("/proc/self/maps", "r")) {
    char line[4096];
    while (std::fgets(line, sizeof line, f)) {
      std::string s(line);
      if (s.find("libblas.so") != std::string::npos || s.find("libopenblas") != std::string::npos) {
        blas = s.find("openblas") != std::string::npos ? "OpenBLAS" : "reference BLAS";
        if (blas == "OpenBLAS") break;
      }
    }
    std::fclose(f);
  }
  return fmt::format("libtorch {}.{}.{} on {}, {} thread(s)", TORCH_VERSION_MAJOR,
                     TORCH_VERSION_MINOR, TORCH_VERSION_PATCH, blas, at::get_num_threads());
}

void Oracle::set_threads(int threads) { at::set_num_threads(threads); }

}  // namespace lenscheck::oracle
