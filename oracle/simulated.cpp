// The simulated schemes' forward (Oracle::SimulatedPass, Oracle::run_simulated): every op computed in
// fp64, or fp32, its output rounded where the scheme rounds (rounded, stepped); each op reading this
// pass's own values, or locally a candidate's.
#include "oracle/oracle.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <set>
#include <tuple>

#include "model/seeded_rng.h"
#include "oracle/torch_oracle.h"

namespace lenscheck::oracle {

namespace {

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

}  // namespace

// One forward pass of run() in a simulated scheme, every op explicit so that its output can be rounded
// where the scheme rounds: each op computed in fp64 (or, for the local verdict's benchmark, fp32) from
// inputs as the scheme holds them, its output rounded to the scheme's op format, and the values the
// scheme stores rounded to that; the rounding rules are member functions. Globally (local == nullptr)
// every op reads this pass's own values; locally (Oracle::Local) every op reads the candidate's inputs
// from local->feed, and where the feed lacks one, this pass's own value, recomputed from the last ones it
// holds (a span, TraceSpan); a local probe moves each op's sums and results by a rounding (probed_sum,
// finish).
class Oracle::SimulatedPass {
 public:
  SimulatedPass(const Impl& m, const Encoding& enc, const Local* local)
      : m_(m), s_(m.scheme), local_(local), enc_(enc), T_(int64_t(enc.ids.size())), D_(m.config.hidden_size),
        H_(m.config.num_attention_heads), Dh_(D_ / H_), fp32_ops_(local && local->fp32_ops),
        fused_graph_(local && local->as_fused_graph),
        one_attention_kernel_(local && local->attention_in_one_kernel),
        requantized_other_way_(local && local->requantized_other_way),
        round_inputs_(s_.product_inputs.digits < s_.ops.digits) {
    const Arithmetic arithmetic = *m.simulated;
    // Every value is one of the format's, which binary32 holds exactly: the trace declares the format.
    trace_.precision = arithmetic_name(arithmetic);
    trace_.producer = fmt::format("oracle {} (simulated in fp64{}{})", arithmetic_name(arithmetic),
                                  local ? local->fp32_ops ? ", each op from the candidate's inputs, in fp32"
                                                          : ", each op from the candidate's inputs"
                                        : "",
                                  local && local->probe
                                      ? fmt::format(", its sums and results moved by a rounding (seed {})", local->probe)
                                      : "");
    trace_.input_ids = enc.ids;
    trace_.tokens = enc.tokens;
    trace_.word_ids = enc.word_ids;
    if (m.rounding_probe) probe_.emplace(m.rounding_probe ^ 0x6c6e6f757470ULL);  // apart from the weights' draws
    if (local && local->probe) {
      result_probe_.emplace(local->probe);
      sum_probe_.emplace(local->probe ^ 0x73756d73ULL);  // apart from the results' draws
    }
  }

  // The trace; locally, into `spans`, each tensor whose recomputation ran through tensors the candidate
  // lacks (Oracle::LocalReferences::spans).
  Trace run(std::map<std::string, TraceSpan>* spans) && {
    torch::NoGradGuard no_grad;
    // As BertEmbeddings adds them: word + token type, then + position: from the input ids alone.
    auto x = finish_norm(kEmbeddingsOutput, {},
                         op(arith(op(arith(m_.word_rows(enc_.ids)) + arith(m_.token_type[0]))) +
                            arith(m_.position.slice(0, 0, T_))),
                         m_.ln_g, m_.ln_b);
    std::string x_name = kEmbeddingsOutput;
    for (size_t l = 0; l < m_.simulated_layers.size(); ++l) {
      x = layer(int(l), x_name, input(x_name, x, {T_, D_}, true));
      x_name = trace_name(int(l), LT::output);
    }
    if (spans)
      for (const auto& [name, reach] : reach_)
        if (!reach.through.empty())
          (*spans)[name] = TraceSpan{in_forward_order(reach.from), in_forward_order(reach.through)};
    return std::move(trace_);
  }

 private:
  const Impl& m_;
  const Scheme& s_;
  const Local* local_;
  const Encoding& enc_;
  const int64_t T_, D_, H_, Dh_;
  const bool fp32_ops_;
  const bool fused_graph_;  // Oracle::LocalReferences::fused
  const bool one_attention_kernel_;  // Oracle::LocalReferences::attention_in_one_kernel
  const bool requantized_other_way_;  // Oracle::LocalReferences::requantized_other_way
  // Every operand is already a value of the op or stored format: only a coarser product input rounds it.
  const bool round_inputs_;
  std::optional<SeededRng> probe_;
  // A local probe's draws: which way each result (finish) and each sum of terms (probed_sum) moves.
  std::optional<SeededRng> result_probe_, sum_probe_;
  size_t next_sum_ = 0;  // the index of the next probed sum in Local::magnitudes
  Trace trace_;
  // Locally, what a value ran from (the candidate's tensors) and through (tensors it lacks, recomputed):
  // of each recorded tensor, its op's inputs' joined; of each input as an op read it (`input`).
  struct Reach {
    std::set<std::string> from, through;
  };
  std::map<std::string, Reach> reach_, read_;

  std::vector<std::string> in_forward_order(const std::set<std::string>& names) const {
    std::vector<std::string> ordered;
    for (const auto& [name, tensor] : trace_.tensors)
      if (names.count(name)) ordered.push_back(name);
    return ordered;
  }
  // Records `name`'s reach: the join of its op's `inputs`' as read.
  void reached(const std::string& name, const std::vector<std::string>& inputs) {
    Reach& r = reach_[name];
    for (const std::string& input : inputs) {
      const Reach& read = read_.at(input);
      r.from.insert(read.from.begin(), read.from.end());
      r.through.insert(read.through.begin(), read.through.end());
    }
  }

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
  // Σ|terms| of each sum of the product a · b: |a| · |b|, its inputs as the product reads them.
  torch::Tensor magnitude(const torch::Tensor& a, const torch::Tensor& b) const {
    return torch::matmul(arith(product_input(a)).abs(), arith(product_input(b)).abs());
  }
  // A linear layer's sums as fp32 computes them (x·Wᵀ + b). Whatever the order of
  // summation, its error is at most γ_n · Σ|terms| (Higham, Accuracy and Stability of Numerical
  // Algorithms, 2nd ed., 2002, §3.1; γ_n = nu / (1 − nu), u = 2^-24: every scheme accumulates its products
  // in fp32): a rounding at the scale of the terms, not of the sum. Where the terms cancel that is many
  // steps of the sum, which one step of the result (finish) under-states, and the fp32 recomputation's
  // own order of summation may err far less than the candidate's. A local probe moves the sum by
  // u · Σ|terms| (`magnitude`, computed by the first probe, kept for the others), up or down as it draws,
  // wherever that exceeds one fp32 step of the sum: one sample of the rounding, not its worst case.
  torch::Tensor probed_sum(const torch::Tensor& raw, const std::function<torch::Tensor()>& magnitude) {
    if (!sum_probe_) return raw;
    const auto sum = back(raw);
    std::vector<torch::Tensor>& kept = local_->magnitudes->of_each_sum;
    if (next_sum_ == kept.size()) kept.push_back(back(magnitude()));
    const auto bound = std::ldexp(1.0, -24) * kept[next_sum_++];
    const auto step = spacing(std::get<1>(torch::frexp(sum)).to(torch::kFloat64) - 1, kBinary32);
    const auto move = torch::where(bound > step, bound, torch::zeros_like(bound));
    return arith(torch::where(random_directions(*sum_probe_, sum), sum + move, sum - move));
  }
  // DynamicQuantizeLinear, as ONNX Runtime computes it in fp32: the tensor's range widened to hold 0,
  // mapped onto uint8; returns the integers less the zero point, the scale and the zero point.
  static std::tuple<torch::Tensor, double, double> quantized(const torch::Tensor& x) {
    auto f32 = [](const torch::Tensor& t) { return rounded(t, kBinary32); };
    const double lo = std::min(0.0, x.min().item<double>()), hi = std::max(0.0, x.max().item<double>());
    const double scale = rounded(torch::tensor((double(float(hi - lo))) / 255.0), kBinary32).item<double>();
    if (scale == 0) return std::tuple{torch::zeros_like(x), 0.0, 0.0};
    const double zero_point = std::clamp(double(std::nearbyint(float(-lo / scale))), 0.0, 255.0);
    const auto q = torch::clamp(torch::round(f32(x / scale)) + zero_point, 0, 255);
    return std::tuple{q - zero_point, scale, zero_point};
  }
  // QuantizeLinear at a graph's fixed scale and zero point (static quantization), as ONNX Runtime computes it:
  // x / scale in fp32, rounded half to even, plus the zero point, clamped to the integer type's range; returns
  // the integers less the zero point.
  static torch::Tensor quantized(const torch::Tensor& x, const QuantizedActivation& a) {
    const auto q = torch::round(rounded(x / double(a.scale), kBinary32)) + a.zero_point;
    return torch::clamp(q, a.lowest, a.highest) - a.zero_point;
  }
  // QLinearMatMul's output integers as ONNX Runtime computes them from the integer sums (fp32): times the
  // multiplier x_scale · w_scale / y_scale (fp32), rounded half to even, plus y's zero point, clamped to its
  // type's range (quantize_linear_matmul.cc; MLAS's requantization). DequantizeLinear reads them back.
  static torch::Tensor requantized_integers(const torch::Tensor& sums, const torch::Tensor& product_scale,
                                            const QuantizedActivation& y) {
    const auto multiplier = rounded(product_scale / double(y.scale), kBinary32);
    return torch::clamp(torch::round(rounded(sums * multiplier, kBinary32)) + y.zero_point, y.lowest, y.highest);
  }
  static torch::Tensor dequantized(const torch::Tensor& q, const QuantizedActivation& a) {
    return rounded((q - a.zero_point) * double(a.scale), kBinary32);
  }
  // A product the graph requantizes, from its integer sums and the operands' scales (fp32), as ONNX Runtime's
  // QLinearMatMul computes it (requantized_integers); in LocalReferences::requantized_other_way, each product
  // within √n · u · Σ|terms| of a rounding boundary (n: `terms`; Σ|terms|: `magnitude`) on the boundary's other
  // side.
  torch::Tensor requantized_product(const torch::Tensor& sums, const torch::Tensor& scale, const QuantizedActivation& y,
                                    const std::function<torch::Tensor()>& magnitude, int64_t terms) const {
    const auto integers = requantized_integers(sums, scale, y);
    if (!requantized_other_way_) return dequantized(integers, y);
    // The two integers either side of the boundary nearest the product (in steps of y, exactly), the one
    // QLinearMatMul's rounded multiplier did not give taken where the product is within reach of it.
    const auto at = back(sums) * back(scale) / double(y.scale);
    const auto below = torch::floor(at) + y.zero_point;
    const auto reach = std::sqrt(double(terms)) * std::ldexp(1.0, -24) * back(magnitude()) / double(y.scale);
    const auto other = torch::where(integers == below, below + 1, below).clamp(y.lowest, y.highest);
    return dequantized(torch::where((at - (torch::floor(at) + 0.5)).abs() < reach, other, integers), y);
  }
  // QuantizeLinear then DequantizeLinear: (q − zero point) · scale, one fp32 rounding; x where the graph leaves
  // the operand unquantized.
  static torch::Tensor as_quantized(const torch::Tensor& x, const std::optional<QuantizedActivation>& a) {
    return a ? rounded(quantized(x, *a) * double(a->scale), kBinary32) : x;
  }
  // MatMulInteger's sums Σ (a − a's zero point)(b − b's zero point) of uint8 activations `xq` (less their zero
  // point) and the layer's integers, as the candidate's kernel sums them (model/arithmetic.h, Int8Sums): exact,
  // or with each pair of neighbouring raw products saturated to int16, as ONNX Runtime's AVX2 u8·s8 kernel
  // sums them before it takes the zero points' terms off. All in fp64, exact: every partial sum < 2^53.
  // `x_lowest`: the activations' integer type's least value, 0 for uint8; int8 activations reach the u8·s8
  // kernel moved by 128, their zero point with them (ONNX Runtime's QDQS8ToU8Transformer on x86).
  torch::Tensor integer_sums(const torch::Tensor& xq, double x_zero_point, double x_lowest,
                             const SimulatedLinear& l) const {
    const auto exact = torch::matmul(xq, l.q.t());
    // uint8 weights: MLAS's u8·u8 kernel widens both to int16 before it multiplies (vpmaddwd), exact.
    if (m_.int8_sums == Int8Sums::exact || !l.signed_integers) return exact;
    const auto a = xq + x_zero_point - x_lowest, b = l.q + l.zero_points.unsqueeze(1);  // the raw uint8 and int8
    constexpr double kInt16Max = 32767, kInt16Min = -32768;
    const double a_max = a.max().item<double>();
    const int64_t K = a.size(1);
    const auto padded = [&](const torch::Tensor& t) { return K % 2 ? F::pad(t, F::PadFuncOptions({0, 1})) : t; };
    const auto a_pairs = padded(a), b_pairs = padded(b);
    const auto a_even = a_pairs.slice(1, 0, K + 1, 2), a_odd = a_pairs.slice(1, 1, K + 1, 2);
    const auto b_even = b_pairs.slice(1, 0, K + 1, 2), b_odd = b_pairs.slice(1, 1, K + 1, 2);
    // The pairs (output n, pair p) that can leave int16 for some activation: few, the weights near the range's
    // ends (none where every weight is reduced-range, |q| <= 64).
    const auto may_saturate = ((b_even.abs() + b_odd.abs()) * a_max > kInt16Max).nonzero();
    if (may_saturate.size(0) == 0) return exact;
    const auto n = may_saturate.select(1, 0), pair = may_saturate.select(1, 1);
    const auto sums = a_even.index_select(1, pair) * b_even.index({n, pair}) +
                      a_odd.index_select(1, pair) * b_odd.index({n, pair});  // [rows, pairs that can]
    return exact.index_add(1, n, sums.clamp(kInt16Min, kInt16Max) - sums);
  }
  // `own_node`: in ONNX Runtime's fused graph the layer's MatMul feeds a SkipLayerNormalization (attention
  // output, FFN output), whose float16 kernel reads the product stored; the FFN input's feeds BiasGelu in
  // fp32 (measured: rounding it there put trained-mini's intermediate at 19.6x, unrounded 1.0x).
  torch::Tensor linear_raw(const torch::Tensor& x, const SimulatedLinear& l, bool own_node = false) {
    if (!s_.quantized_linear) {
      const auto p = product(x, l.w.t());
      return probed_sum(arith(fused_graph_ && own_node ? keep(p) : p) + arith(l.b),
                        [&] { return magnitude(x, l.w.t()) + arith(l.b).abs(); });
    }
    // MatMulInteger's integer sums (integer_sums) of the input quantized per run (DynamicQuantizeLinear) or at the
    // graph's fixed scale, cast to fp32, times x_scale · w_scale (fp32); where the graph requantizes the product
    // (QLinearMatMul), rounded to its integers and dequantized (requantized); plus the bias.
    const auto [xq, x_scale, x_zero_point] =
        l.input ? std::tuple{quantized(x, *l.input), double(l.input->scale), double(l.input->zero_point)} : quantized(x);
    const auto sums = rounded(integer_sums(xq, x_zero_point, l.input ? l.input->lowest : 0, l), kBinary32);
    const auto product_scale = rounded(x_scale * l.scales, kBinary32);
    const auto terms = [&] { return torch::matmul(xq.abs(), l.q.abs().t()) * product_scale; };
    const auto scaled = l.product ? requantized_product(sums, product_scale, *l.product, terms, xq.size(1))
                                  : arith(op(arith(sums) * arith(product_scale)));
    return probed_sum(scaled + arith(l.b), [&] { return scaled.abs() + arith(l.b).abs(); });
  }
  torch::Tensor linear(const torch::Tensor& x, const SimulatedLinear& l) { return op(linear_raw(x, l, true)); }
  // An attention product a · b (per head), or, where a graph quantizes both operands statically, their integers'
  // exact sums (uint8 · uint8: MLAS widens both to int16, exact) times the operands' scales in fp32, or
  // requantized where it quantizes the product too (QLinearMatMul). `raw`: not rounded (one attention kernel).
  torch::Tensor attention_product(const torch::Tensor& a, const std::optional<QuantizedActivation>& qa,
                                  const torch::Tensor& b, const std::optional<QuantizedActivation>& qb,
                                  const std::optional<QuantizedActivation>& product_read, bool raw = false) {
    if (!qa || !qb) {
      const auto aq = as_quantized(a, qa), bq = as_quantized(b, qb);
      return as_quantized(raw ? product_raw(aq, bq) : product(aq, bq), product_read);
    }
    const auto ia = quantized(a, *qa), ib = quantized(b, *qb);
    const auto sums = rounded(torch::matmul(ia, ib), kBinary32);
    const auto scale = rounded(torch::tensor(double(qa->scale) * double(qb->scale), torch::kFloat64), kBinary32);
    return product_read ? requantized_product(sums, scale, *product_read,
                                              [&] { return torch::matmul(ia.abs(), ib.abs()) * scale; }, ia.size(-1))
                        : op(arith(sums) * arith(scale));
  }
  // A constant of the graph (the attention scale, GELU's), stored as the weights are; a fused op's own.
  torch::Tensor constant(double c) const {
    const auto t = torch::tensor(c, torch::kFloat64);
    return fused_graph_ ? op(t) : keep(t);
  }
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

  // `raw` moved one fp32 step, up or down as a local probe draws.
  torch::Tensor one_step_off(const torch::Tensor& raw) {
    const auto r = rounded(back(raw), kBinary32);
    return stepped(r, kBinary32, random_directions(*result_probe_, r));
  }
  // An op's result, from its last operation `raw`: rounded to the op format, recorded as stored, and
  // passed on as the scheme keeps it (`kept_in_stored_format`: rounded to the stored format, as every
  // value is where the scheme has no fp32 between casts). A local probe records `raw` moved one fp32 step
  // before it is rounded, and passes on the result unmoved: no op reads another's moved result.
  // `inputs`: the names of the op's inputs, as `input` read them.
  torch::Tensor finish(const std::string& name, const std::vector<std::string>& inputs, const torch::Tensor& raw,
                       bool kept_in_stored_format) {
    reached(name, inputs);
    const auto y = op(raw);
    trace_.add(name, to_trace(keep(result_probe_ ? op(one_step_off(raw)) : y)));
    return !s_.fp32_between_casts || kept_in_stored_format ? keep(y) : y;
  }
  // The scores or the probabilities: an op's result as `finish` rounds it, or, inside one attention kernel,
  // not rounded at all (Oracle::LocalReferences::attention_in_one_kernel).
  torch::Tensor inside_attention(bool one_kernel, const std::string& name, const std::vector<std::string>& inputs,
                                 const torch::Tensor& raw) {
    if (!one_kernel) return finish(name, inputs, raw, false);
    reached(name, inputs);
    trace_.add(name, to_trace(back(raw)));
    return back(raw);
  }
  // A LayerNorm, which reads its input as stored (ONNX Runtime's float16 kernel reads fp16) and whose
  // output is stored, the global rounding probe moving it one step of the stored format.
  torch::Tensor finish_norm(const std::string& name, const std::vector<std::string>& inputs, const torch::Tensor& v,
                            const torch::Tensor& g, const torch::Tensor& b) {
    reached(name, inputs);
    const auto raw = m_.layer_norm(arith(fused_graph_ ? v : keep(v)), arith(g), arith(b));
    auto y = keep(op(raw));
    if (probe_) y = stepped(y, s_.stored, random_directions(*probe_, y));
    trace_.add(name, to_trace(result_probe_ ? keep(op(one_step_off(raw))) : y));
    return y;
  }

  // An op's input: globally this forward's own value. Locally the candidate's, except where the scheme
  // passes the value on in fp32 while the trace holds it rounded: there the op reads what this
  // recomputation computed from the candidate's stored values, so that the local op runs from one stored
  // value to the next, as the candidate does between its casts. Where the candidate lacks it, holds it in
  // another shape, or holds NaN or Inf, the op reads this pass's own value too: the recomputation runs on
  // from the last tensors the candidate holds, through this one (its span).
  torch::Tensor input(const std::string& name, const torch::Tensor& own, std::vector<int64_t> shape,
                      bool kept_in_stored_format) {
    const Tensor* t = local_ ? local_->feed->find(name) : nullptr;
    const bool held = t && t->shape == shape &&
                      std::all_of(t->values.begin(), t->values.end(), [](double v) { return std::isfinite(v); });
    if (held && !(s_.fp32_between_casts && !kept_in_stored_format)) {
      read_[name] = Reach{{name}, {}};
      return torch::from_blob(const_cast<double*>(t->values.data()), shape, torch::kFloat64).clone();
    }
    Reach read = reach_.at(name);
    if (local_ && !held) read.through.insert(name);
    read_[name] = std::move(read);
    return own;
  }
  torch::Tensor per_head(const torch::Tensor& t) const { return t.view({T_, H_, Dh_}).transpose(0, 1); }

  // One layer from its input xi, named x_name: the attention block, the lenses, the FFN; returns the
  // layer's output.
  torch::Tensor layer(int l, const std::string& x_name, const torch::Tensor& xi) {
    auto name = [l](LayerTensor t) { return trace_name(l, t); };
    const SimulatedLayer& L = m_.simulated_layers[size_t(l)];
    const int64_t T = T_, D = D_, H = H_, Dh = Dh_;
    const SimulatedLayer::Reads& R = L.reads;
    // Inside a fused Attention the heads' Q, K and V are fp32, not stored.
    const auto q = finish(name(LT::query), {x_name}, per_head(linear_raw(xi, L.query)), !fused_graph_);
    const auto k = finish(name(LT::key), {x_name}, per_head(linear_raw(xi, L.key)), !fused_graph_);
    const auto v = finish(name(LT::value), {x_name}, per_head(linear_raw(xi, L.value)), !fused_graph_);
    const auto qi = input(name(LT::query), q, {H, T, Dh}, !fused_graph_),
               ki = input(name(LT::key), k, {H, T, Dh}, !fused_graph_),
               vi = input(name(LT::value), v, {H, T, Dh}, !fused_graph_);
    // One kernel from Q, K and V to the context, in the layers whose probabilities the candidate lacks.
    const bool one_kernel = one_attention_kernel_ && !local_->feed->find(name(LT::probs));
    const auto kt = ki.transpose(1, 2);
    const auto scores = inside_attention(
        one_kernel, name(LT::scores), {name(LT::query), name(LT::key)},
        one_kernel ? attention_product(qi, R.query, kt, R.key, R.scores_product, true) / std::sqrt(double(Dh))
                   : arith(attention_product(qi, R.query, kt, R.key, R.scores_product)) /
                         arith(constant(std::sqrt(double(Dh)))));
    const auto si = input(name(LT::scores), scores, {H, T, T}, false);
    const auto alpha =
        inside_attention(one_kernel, name(LT::probs), {name(LT::scores)}, torch::softmax(arith(si), -1));
    const auto ai = input(name(LT::probs), alpha, {H, T, T}, false);
    const auto context = finish(name(LT::context), {name(LT::probs), name(LT::value)},
                                attention_product(ai, R.probs, vi, R.value, R.context_product, true)
                                    .transpose(0, 1)
                                    .reshape({T, D}),
                                true);
    const auto ci = input(name(LT::context), context, {T, D}, true);
    // y, the attention block's state before its LayerNorm
    const auto raw = arith(linear(ci, L.attention_out)) + arith(as_quantized(xi, R.attention_residual));
    const auto pre_norm = finish(name(LT::attention_pre_norm), {name(LT::context), x_name}, raw, false);
    const auto attention =
        finish_norm(name(LT::attention_output), {name(LT::context), x_name}, op(raw), L.ln1_g, L.ln1_b);
    lenses(l, L, x_name, vi, ai, xi, input(name(LT::attention_pre_norm), pre_norm, {T, D}, false));

    const auto attention_i = input(name(LT::attention_output), attention, {T, D}, true);
    const auto inter = finish(name(LT::intermediate), {name(LT::attention_output)},
                              activation(op(linear_raw(attention_i, L.intermediate, false))), false);
    const auto inter_i = input(name(LT::intermediate), inter, {T, m_.config.intermediate_size}, false);
    return finish_norm(name(LT::output), {name(LT::intermediate), name(LT::attention_output)},
                       op(arith(linear(inter_i, L.output)) + arith(as_quantized(attention_i, R.ffn_residual))),
                       L.ln2_g, L.ln2_b);
  }

  // Kobayashi et al. 2020's norms and lenses of layer l, from its values vi and probabilities ai, and
  // 2021's residual lens, from these, the layer's input xi (named x_name) and its pre-LayerNorm state.
  void lenses(int l, const SimulatedLayer& L, const std::string& x_name, const torch::Tensor& vi,
              const torch::Tensor& ai, const torch::Tensor& xi, const torch::Tensor& pre_norm) {
    auto name = [l](LayerTensor t) { return trace_name(l, t); };
    const int64_t T = T_, D = D_, H = H_, Dh = Dh_;
    const auto value_norm = finish(name(LT::value_norm), {name(LT::value)},
                                   torch::linalg::vector_norm(arith(vi), 2, {-1}, false, {}), false);
    const auto fx = product(vi, L.lens_wo.view({D, H, Dh}).permute({1, 2, 0}));  // [H, T, D]
    const auto transformed_norm = finish(name(LT::transformed_norm), {name(LT::value)},
                                         torch::linalg::vector_norm(arith(fx), 2, {-1}, false, {}), false);
    const auto value_norm_i = input(name(LT::value_norm), value_norm, {H, T}, false),
               transformed_norm_i = input(name(LT::transformed_norm), transformed_norm, {H, T}, false);
    finish(name(LT::lens_value_norm), {name(LT::probs), name(LT::value_norm)},
           arith(ai) * arith(value_norm_i.unsqueeze(1)), false);
    finish(name(LT::lens_transformed_norm), {name(LT::probs), name(LT::transformed_norm)},
           arith(ai) * arith(transformed_norm_i.unsqueeze(1)), false);
    const int64_t block = std::max<int64_t>(1, (int64_t{1} << 22) / (T * D));  // as run() blocks it
    std::vector<torch::Tensor> summed;
    const auto fx_in = arith(product_input(fx));
    ResidualLensBlocks residual(arith(xi), arith(pre_norm), arith(L.ln1_g), m_.config.layer_norm_eps);
    for (int64_t i = 0; i < T; i += block) {
      const auto alpha = arith(product_input(ai.slice(1, i, std::min(T, i + block))));
      const auto terms = arith(op(torch::einsum("hij,hjd->ijd", {alpha, fx_in})));
      summed.push_back(back(torch::linalg::vector_norm(terms, 2, {-1}, false, {})));
      residual.add(terms, i);
    }
    finish(name(LT::lens_summed_transformed_norm), {name(LT::probs), name(LT::value)}, torch::cat(summed), false);
    for (const auto& [tensor, values] : residual.results())
      finish(name(tensor), {name(LT::probs), name(LT::value), x_name, name(LT::attention_pre_norm)}, back(values),
             false);
  }
};

Trace Oracle::run_simulated(const Encoding& enc, const Local* local, std::map<std::string, TraceSpan>* spans) const {
  return SimulatedPass(*impl_, enc, local).run(spans);
}

}  // namespace lenscheck::oracle
