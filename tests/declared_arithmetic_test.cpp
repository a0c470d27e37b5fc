// Precision as a contract: the derived rule's benchmark computes in the arithmetic the candidate
// declares (oracle::Oracle::computing_in), so a trace of one precision passes as itself and fails as
// another, and a trace that declares more precision than it has fails.
#include <gtest/gtest.h>

#include <cmath>

#include "gate/verify.h"
#include "model/arithmetic.h"
#include "model/error.h"
#include "model/trace_io.h"
#include "oracle/oracle.h"
#include "runtime/encoder.h"
#include "tests/test_support.h"

using namespace lenscheck;

namespace {

const Checkpoint& bert_mini() {
  static const Checkpoint ck = load_checkpoint(test::bert_mini());
  return ck;
}
const Tolerances& tolerances() {
  static const Tolerances t = load_tolerances(test::source_dir() / "fixtures/tolerances.yaml");
  return t;
}
Encoding sentence(const std::string& text) {
  return encode_sentence(BertTokenizer(bert_mini().vocab, bert_mini().tokenizer), {"s", text, 0}, 512, "test");
}
const Encoding& nurse() {
  static const Encoding e = sentence("The nurse handed the doctor the scissors.");
  return e;
}

// How many values of the trace `format` does not hold.
size_t outside(const Trace& t, const FloatFormat& format) {
  size_t n = 0;
  for (const auto& [name, tensor] : t.tensors)
    for (double x : tensor.values) n += round_to(format, x) != x;
  return n;
}

}  // namespace

TEST(DeclaredArithmetic, TheSimulatedOracleStoresEveryValueInItsFormat) {
  const Trace fp64 = oracle::Oracle(bert_mini().config, bert_mini().weights, oracle::Precision::fp64).forward(nurse());
  for (auto [arithmetic, format] : {std::pair{Arithmetic::fp16, kBinary16}, std::pair{Arithmetic::bf16, kBfloat16},
                                    std::pair{Arithmetic::tf32, kBinary32}, std::pair{Arithmetic::int8, kBinary32}}) {
    const Trace t = oracle::Oracle::computing_in(bert_mini().config, bert_mini().weights, arithmetic).forward(nurse());
    EXPECT_EQ(t.precision, arithmetic_name(arithmetic));
    EXPECT_EQ(t.tensors.size(), fp64.tensors.size());
    EXPECT_EQ(outside(t, format), 0u) << arithmetic_name(arithmetic);
    if (arithmetic == Arithmetic::tf32 || arithmetic == Arithmetic::int8) {  // their values between ops are fp32's
      EXPECT_GT(outside(t, kBinary16), 0u) << arithmetic_name(arithmetic);
    }
    // Close to the truth, and not it: the format's rounding error, and no more.
    const Tensor& a = *t.find("layer.3.output"), &b = *fp64.find("layer.3.output");
    double largest = 0;
    for (size_t i = 0; i < a.values.size(); ++i) largest = std::max(largest, std::fabs(a.values[i] - b.values[i]));
    EXPECT_GT(largest, 0) << arithmetic_name(arithmetic);
    EXPECT_LT(largest, 0.5) << arithmetic_name(arithmetic);
  }
}

TEST(DeclaredArithmetic, ARoundingProbeMovesTheStoredValuesOneStepOfTheFormat) {
  const auto& ck = bert_mini();
  const Trace plain = oracle::Oracle::computing_in(ck.config, ck.weights, Arithmetic::fp16).forward(nurse());
  const Trace probed = oracle::Oracle::computing_in(ck.config, ck.weights, Arithmetic::fp16, 1).forward(nurse());
  const Tensor& a = *plain.find("embeddings.output"), &b = *probed.find("embeddings.output");
  size_t moved = 0;
  double square_difference = 0, square = 0;
  for (size_t i = 0; i < a.values.size(); ++i) {
    moved += a.values[i] != b.values[i];
    square_difference += (a.values[i] - b.values[i]) * (a.values[i] - b.values[i]);
    square += a.values[i] * a.values[i];
  }
  EXPECT_GT(moved, a.values.size() / 2);
  // One step of every weight and of the LayerNorm output: a few of fp16's unit roundoff 2^-11, relative.
  const double relative = std::sqrt(square_difference / square);
  EXPECT_GT(relative, std::ldexp(1, -13));
  EXPECT_LT(relative, std::ldexp(1, -8));
}

TEST(DeclaredArithmetic, AnFp16TracePassesAsFp16AndFailsAsFp32) {
  const auto& ck = bert_mini();
  const auto dir = test::temp_dir("fp16_trace");
  Trace fp16 = oracle::Oracle::computing_in(ck.config, ck.weights, Arithmetic::fp16).forward(nurse());
  save_trace(dir / "fp16.safetensors", fp16);
  const VerifyResult as_declared = verify_reference(ck, dir / "fp16.safetensors", tolerances(), {});
  EXPECT_EQ(as_declared.gate.arithmetic, Arithmetic::fp16);
  EXPECT_TRUE(as_declared.pass());
  const VerifyResult as_fp32 =
      verify_reference(ck, dir / "fp16.safetensors", tolerances(), {.arithmetic = Arithmetic::fp32});
  EXPECT_FALSE(as_fp32.pass());
  // A trace that declares fp32 but computed in fp16 fails all the same.
  fp16.precision = "fp32";
  save_trace(dir / "lying.safetensors", fp16);
  EXPECT_FALSE(verify_reference(ck, dir / "lying.safetensors", tolerances(), {}).pass());
}

// Every weight and every LayerNorm output one fp16 step off (a rounding probe): within fp16's accumulated
// error end to end, so the global verdict passes it, but not the checkpoint's model computed as fp16
// computes it, which each op recomputed from the trace's own inputs shows from the first op on.
TEST(DeclaredArithmetic, AnFp16ModelOneStepOffPassesGloballyAndFailsLocallyAtItsFirstOp) {
  const auto& ck = bert_mini();
  const Trace moved = oracle::Oracle::computing_in(ck.config, ck.weights, Arithmetic::fp16, 99).forward(nurse());
  const Judge judge(ck, tolerances(), Rule::derived, Arithmetic::fp16);
  const TraceComparison c = judge.judge(moved, judge.references(nurse()));
  EXPECT_FALSE(c.pass());
  for (const TensorComparison& t : c.tensors) EXPECT_LE(t.derived->ratio, t.tolerance.k) << t.name;
  ASSERT_NE(c.first_local_failure(), nullptr);
  EXPECT_EQ(c.first_local_failure()->name, "embeddings.output");
}

// A candidate is held to the scheme it declares both ways: the fp32 runtime is within bf16's and int8's
// accumulated error end to end, and does not compute their ops. At bf16 what shows it is exact: its values
// are not bf16's (its error is within k of the spread another order of summation gives bf16).
TEST(DeclaredArithmetic, TheFp32RuntimeFailsLocallyWhereAnotherSchemeIsDeclared) {
  const auto& ck = bert_mini();
  const Trace runtime = runtime::Encoder(ck.config, ck.weights).forward(nurse());
  for (Arithmetic a : {Arithmetic::bf16, Arithmetic::int8}) {
    const Judge judge(ck, tolerances(), Rule::derived, a);
    const TraceComparison c = judge.judge(runtime, judge.references(nurse()));
    for (const TensorComparison& t : c.tensors) EXPECT_LE(t.derived->ratio, t.tolerance.k) << arithmetic_name(a) << " " << t.name;
    ASSERT_NE(c.first_local_failure(), nullptr) << arithmetic_name(a);
    if (a == Arithmetic::int8) {
      EXPECT_EQ(c.first_local_failure()->name, "layer.0.attention.query");  // the first quantized op
    } else {
      EXPECT_EQ(c.first_local_failure()->name, "embeddings.output");
      EXPECT_GT(c.first_local_failure()->off_format, c.first_local_failure()->elements / 2);
    }
  }
}

TEST(DeclaredArithmetic, TracesThatDeclareDifferentOrUnknownPrecisionsAreBadInput) {
  const auto& ck = bert_mini();
  const auto dir = test::temp_dir("mixed_precisions");
  Trace t = runtime::Encoder(ck.config, ck.weights).forward(nurse());
  save_trace(dir / "a.safetensors", t);
  t.precision = "fp16";
  save_trace(dir / "b.safetensors", t);
  try {
    verify_reference(ck, dir, tolerances(), {});
    FAIL() << "mixed precisions judged";
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), dir / "b.safetensors");
    EXPECT_NE(e.problem().find("declares fp16"), std::string::npos) << e.what();
  }
  t.precision = "fp8";
  save_trace(dir / "b.safetensors", t);
  try {
    verify_reference(ck, dir, tolerances(), {});
    FAIL() << "fp8 judged";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("precision \"fp8\" is not a scheme lenscheck knows"), std::string::npos) << e.what();
  }
}

TEST(DeclaredArithmetic, TheAbsoluteRuleIsFp32s) {
  EXPECT_THROW(Judge(bert_mini(), tolerances(), Rule::absolute, Arithmetic::fp16), InputError);
}

// int8's sums as ONNX Runtime's AVX2 kernel makes them (Int8Sums::int16_pairs_saturated), by a scalar model of
// that kernel: each pair of neighbouring products of the raw uint8 activations and int8 weights saturated to int16,
// the pairs summed in int32, the zero points' terms taken off. The oracle's first linear layer (the query, from
// embeddings.output) must equal it bit for bit under both sums, with full-range weights (|q| up to 127,
// quantize_dynamic's default), where the model saturates some pair; a reduced-range weight (|q| <= 64:
// 2 · 255 · 64 < 32767) never leaves int16, so there every value is the exact sums'.
TEST(DeclaredArithmetic, Int8PairSumsAreAScalarModelOfMlasBitForBit) {
  const Checkpoint& ck = bert_mini();
  auto trace = [&](std::shared_ptr<const QuantizedParams> quantized, Int8Sums sums) {
    return oracle::Oracle::computing_in(ck.config, ck.weights, Arithmetic::int8, 0, quantized, sums).forward(nurse());
  };
  auto full_range = std::make_shared<QuantizedParams>();
  for_each_param(ck.config, ck.weights, [&](const std::string& name, const Param& p) {
    if (p.shape.size() == 2 && !name.starts_with("embeddings."))
      full_range->weights.emplace(name, quantize_per_tensor(p, kWeightOnlyInt8Limit));
  });
  const QuantizedWeight& w = full_range->weights.at("encoder.layer.0.attention.self.query.weight");
  const Param& bias = ck.weights.layers.at(0).query_b;
  const int64_t H = ck.config.num_attention_heads, Dh = ck.config.head_dim();
  // The query as MLAS computes it, from the trace's own embeddings.output: DynamicQuantizeLinear in fp32 (as the
  // oracle's), the integer sums, × (x_scale · w_scale) and + bias in fp32.
  auto scalar_query = [&](const Trace& t, Int8Sums sums, int& saturated_pairs) {
    const Tensor& x = *t.find(kEmbeddingsOutput);
    const int64_t T = x.shape[0], K = x.shape[1];
    double lo = 0, hi = 0;
    for (double v : x.values) lo = std::min(lo, v), hi = std::max(hi, v);
    const float x_scale = float(float(hi - lo) / 255.0);
    const int x_zero = int(std::clamp(double(std::nearbyint(float(-lo / x_scale))), 0.0, 255.0));
    Tensor q({H, T, Dh});
    saturated_pairs = 0;
    for (int64_t token = 0; token < T; ++token) {
      std::vector<int32_t> a(size_t(K + 1), 0);  // raw uint8, one zero past an odd K
      for (int64_t k = 0; k < K; ++k)
        a[size_t(k)] = int32_t(std::clamp(double(std::nearbyint(float(x.values[size_t(token * K + k)] / x_scale))) + x_zero,
                                          0.0, 255.0));
      for (int64_t n = 0; n < w.out; ++n) {
        const int32_t* b = &w.values[size_t(n * w.in)];
        int32_t total = 0, a_sum = 0, b_sum = 0;
        for (int64_t k = 0; k < K; k += 2) {
          const int32_t pair = a[size_t(k)] * b[k] + (k + 1 < K ? a[size_t(k + 1)] * b[k + 1] : 0);
          const int32_t kept = sums == Int8Sums::exact ? pair : std::clamp(pair, -32768, 32767);
          saturated_pairs += kept != pair;
          total += kept;
        }
        for (int64_t k = 0; k < K; ++k) a_sum += a[size_t(k)], b_sum += b[k] - w.zero_points[size_t(n)];
        // Σ (a − za)(b − zb) = Σ a·b − zb·Σa − za·Σ(b − zb)
        const int32_t integer = total - w.zero_points[size_t(n)] * a_sum - x_zero * b_sum;
        const float scaled = float(integer) * float(double(x_scale) * double(w.scales[size_t(n)]));
        q.values[size_t(((n / Dh) * T + token) * Dh + n % Dh)] = double(scaled + float(bias.values[size_t(n)]));
      }
    }
    return q;
  };
  for (Int8Sums sums : {Int8Sums::exact, Int8Sums::int16_pairs_saturated}) {
    const Trace t = trace(full_range, sums);
    int saturated_pairs = 0;
    const Tensor expected = scalar_query(t, sums, saturated_pairs);
    EXPECT_EQ(t.find(trace_name(0, LayerTensor::query))->values, expected.values) << int(sums);
    if (sums == Int8Sums::int16_pairs_saturated) {
      EXPECT_GT(saturated_pairs, 0);
    }
  }
  EXPECT_NE(trace(full_range, Int8Sums::exact).find(trace_name(0, LayerTensor::query))->values,
            trace(full_range, Int8Sums::int16_pairs_saturated).find(trace_name(0, LayerTensor::query))->values);
  const Trace reduced_exact = trace(nullptr, Int8Sums::exact), reduced = trace(nullptr, Int8Sums::int16_pairs_saturated);
  for (const auto& [name, tensor] : reduced_exact.tensors) EXPECT_EQ(tensor.values, reduced.find(name)->values) << name;
}

// int8 with static quantization (a graph's fixed scales: QuantizedParams::activations), by a scalar model of ONNX
// Runtime's QLinearMatMul (quantize_linear_matmul.cc, MLAS's QuantizeLinear and requantization): the input
// quantized as x / scale in fp32 rounded half to even plus its zero point, the exact integer sums, the product
// requantized at the multiplier fp32(fp32(x_scale · w_scale) / y_scale), rounded half to even, and dequantized,
// then + bias in fp32. The oracle's query equals it bit for bit; with the scales gone (per-run
// DynamicQuantizeLinear, no requantization) it does not.
TEST(DeclaredArithmetic, StaticInt8IsAScalarModelOfQLinearMatMulBitForBit) {
  const Checkpoint& ck = bert_mini();
  const std::string weight = "encoder.layer.0.attention.self.query.weight";
  auto quantized = std::make_shared<QuantizedParams>();
  for_each_param(ck.config, ck.weights, [&](const std::string& name, const Param& p) {
    if (p.shape.size() == 2 && !name.starts_with("embeddings."))
      quantized->weights.emplace(name, quantize_per_tensor(p, kWeightOnlyInt8Limit));
  });
  const Trace dynamic =
      oracle::Oracle::computing_in(ck.config, ck.weights, Arithmetic::int8, 0, quantized).forward(nurse());
  // Fixed scales as calibration finds them, from the dynamic pass's own ranges, with zero points of both types.
  const Tensor& x = *dynamic.find(kEmbeddingsOutput);
  const Tensor& product = *dynamic.find(trace_name(0, LayerTensor::query));
  auto range = [](const Tensor& t) {
    double lo = 0, hi = 0;
    for (double v : t.values) lo = std::min(lo, v), hi = std::max(hi, v);
    return std::pair{lo, hi};
  };
  const auto [x_lo, x_hi] = range(x);
  const auto [y_lo, y_hi] = range(product);
  const QuantizedActivation x_read{.scale = float((x_hi - x_lo) / 255), .zero_point = 100, .lowest = 0, .highest = 255};
  const QuantizedActivation y_read{.scale = float((y_hi - y_lo) / 255), .zero_point = -3, .lowest = -128, .highest = 127};
  quantized->activations[input_of(weight)] = x_read;
  quantized->activations[product_of(weight)] = y_read;
  const Trace t = oracle::Oracle::computing_in(ck.config, ck.weights, Arithmetic::int8, 0, quantized).forward(nurse());

  const QuantizedWeight& w = quantized->weights.at(weight);
  const Param& bias = ck.weights.layers.at(0).query_b;
  const Tensor& xt = *t.find(kEmbeddingsOutput);
  const int64_t T = xt.shape[0], K = xt.shape[1], H = ck.config.num_attention_heads, Dh = ck.config.head_dim();
  auto quantize = [](float v, const QuantizedActivation& a) {
    return std::clamp(int32_t(std::nearbyint(v / a.scale)) + a.zero_point, a.lowest, a.highest);
  };
  Tensor expected({H, T, Dh});
  for (int64_t token = 0; token < T; ++token)
    for (int64_t n = 0; n < w.out; ++n) {
      int32_t sum = 0;
      for (int64_t k = 0; k < K; ++k)
        sum += (quantize(float(xt.values[size_t(token * K + k)]), x_read) - x_read.zero_point) *
               (w.values[size_t(n * w.in + k)] - w.zero_points[size_t(n)]);
      const float multiplier = (x_read.scale * w.scales[size_t(n)]) / y_read.scale;
      const int32_t y = std::clamp(int32_t(std::nearbyint(float(sum) * multiplier)) + y_read.zero_point, y_read.lowest,
                                   y_read.highest);
      const float dequantized = float(y - y_read.zero_point) * y_read.scale;
      expected.values[size_t(((n / Dh) * T + token) * Dh + n % Dh)] = double(dequantized + float(bias.values[size_t(n)]));
    }
  EXPECT_EQ(t.find(trace_name(0, LayerTensor::query))->values, expected.values);
  EXPECT_NE(dynamic.find(trace_name(0, LayerTensor::query))->values, expected.values);
}
