#pragma once
// The arithmetic a candidate declares it runs in: a scheme, saying where values are rounded and to
// what. The derived gate's benchmark for a candidate is libtorch's computation in that scheme
// (oracle/oracle.h simulates the formats libtorch's CPU build has no kernels for), so a faster runtime
// is held to what its own format allows; the local verdict recomputes each op in the scheme from the
// candidate's own inputs.
#include <optional>
#include <string>
#include <vector>

namespace lenscheck {

enum class Arithmetic {
  fp32,          // IEEE binary32 throughout
  tf32,          // matrix products on inputs rounded to TensorFloat-32 (10 fraction bits, fp32's range); fp32 elsewhere
  bf16,          // every value bfloat16 (7 fraction bits, fp32's range), each op computed exactly then rounded
  fp16,          // every value IEEE binary16 (10 fraction bits, largest 65504), each op computed exactly then
                 // rounded: a GPU's pure-fp16 path
  fp16_ort_cpu,  // an fp16 graph on ONNX Runtime's CPU provider: fp16 weights and fp16 values where its
                 // float16 kernels keep them (Gather, Reshape, Transpose, LayerNormalization: the
                 // embeddings, every LayerNorm's input and output, the heads' Q, K, V and the context),
                 // every other op in fp32 between the casts it inserts, its outputs cast to fp16
  fp16_ort_fused,  // an fp16 graph fused by ONNX Runtime's transformer optimizer, on its CPU provider: as
                   // fp16_ort_cpu, or with its fused ops (Attention, SkipLayerNormalization,
                   // EmbedLayerNormalization, BiasGelu) computing in fp32 between the casts of their inputs
                   // and outputs (Q, K, V and the LayerNorms' inputs not stored, their constants fp32's) and
                   // the MatMuls into SkipLayerNormalization storing their products before the bias: the
                   // local verdict's spread holds both (Oracle::LocalReferences::fused)
  int8,          // ONNX Runtime's quantize_dynamic: linear layers as uint8 activations (per tensor,
                 // DynamicQuantizeLinear's scale and zero point in fp32, or a statically quantized graph's
                 // fixed ones, its products requantized: model/quantize.h) times int8 weights (per output
                 // channel, [-64, 64]; a graph's own integers where it brings them: model/quantize.h) with
                 // integer sums as the candidate's kernel makes them (Int8Sums), × (x_scale · w_scale) and + bias
                 // in fp32; fp32 elsewhere
  w8a32,         // weight-only int8: every linear layer's weight and the word and position embedding tables
                 // int8, symmetric per output channel (per token) in [-127, 127] (model/quantize.h), or a
                 // graph's own integers where it brings them (any rule; what it leaves fp32 stays fp32),
                 // dequantized to fp32 ((q − zero point) · scale, one rounding), as a graph's Cast · scale
                 // or DequantizeLinear does; all arithmetic fp32
};

// How an int8 scheme's kernel sums the products of uint8 activations and int8 weights (MatMulInteger): in
// int32, exactly; or as ONNX Runtime's MLAS kernel does on x86 without VNNI (AVX2's vpmaddubsw), each pair of
// neighbouring products (k = 2i, 2i + 1, the activations' raw uint8 with their zero point) summed in int16
// with saturation, then the pairs in int32 and the zero points' terms taken off exactly. A full-range int8
// weight (|q| up to 127) saturates there where 2 · 255 · |q| > 32767; quantize_dynamic's reduced range
// (|q| <= 64) never does, which is why it exists. Which one a run has is the candidate's to say: ONNX
// Runtime's adapter measures it (onnx/ort-adapter.py).
enum class Int8Sums { exact, int16_pairs_saturated };

// Every scheme, in the order the README lists them.
const std::vector<Arithmetic>& arithmetics();
// "fp32", "tf32", "bf16", "fp16", "fp16-ort-cpu", "fp16-ort-fused", "int8", "w8a32".
std::string arithmetic_name(Arithmetic arithmetic);
// The names above; an InputError naming `where` (a flag, a trace file) and the known names otherwise.
Arithmetic parse_arithmetic(const std::string& name, const std::string& where);

// What a trace's precision field declares. A scheme's name is that scheme ("fp16" with a note naming
// fp16-ort-cpu); "fp64" (or nothing) the model's own fp32. A format that names no scheme ("float16",
// "half", "bfloat16", "float32", "q8", …) gets the scheme whose rounding is nearest, and `note` says
// so. Anything else is an InputError naming `where` and the known schemes.
Arithmetic declared_in_trace(const std::string& precision, const std::string& where, std::optional<std::string>& note);

// A binary floating-point format: `digits` significand bits (the implicit one included), normal
// exponents down to `min_exponent` (x = m · 2^e, 1 <= m < 2), and the largest finite value.
struct FloatFormat {
  int digits;
  int min_exponent;
  double largest;
};
inline constexpr FloatFormat kBinary32{24, -126, 3.4028234663852886e38};
inline constexpr FloatFormat kTensorFloat32{11, -126, 3.4011621342146535e38};  // (2 - 2^-10) · 2^127
inline constexpr FloatFormat kBfloat16{8, -126, 3.3895313892515355e38};        // (2 - 2^-7) · 2^127
inline constexpr FloatFormat kBinary16{11, -14, 65504.0};

// Where a scheme rounds, and to what.
struct Scheme {
  FloatFormat stored;          // weights, trace tensors, and the values the scheme keeps between ops
  FloatFormat ops;             // every op's output
  FloatFormat product_inputs;  // what a matrix product reads its inputs as
  bool quantized_linear;       // linear layers as int8 (Arithmetic::int8)
  // Only the values ONNX Runtime's fp16 CPU kernels keep are `stored` between ops (embeddings, LayerNorm
  // inputs and outputs, Q, K, V, context); the rest flow on in fp32 and are rounded to `stored` only as
  // the graph's outputs (Arithmetic::fp16_ort_cpu).
  bool fp32_between_casts;
  // Weights int8 per output channel in [-127, 127], dequantized to fp32 before fp32 ops (Arithmetic::w8a32).
  bool weight_only_int8;
  bool fused_ops;  // ONNX Runtime's fused transformer ops may round elsewhere (Arithmetic::fp16_ort_fused)
};
Scheme scheme_of(Arithmetic arithmetic);
// The same graph rounded at the other set of op boundaries, where its format leaves a correct runtime
// that freedom: fp16 (every op's output rounded to binary16) and fp16-ort-cpu or fp16-ort-fused (chains
// kept in fp32 between casts) are the two ends of an fp16 graph's executions. None for the other schemes.
std::optional<Arithmetic> other_rounding(Arithmetic arithmetic);
// The spacing of `format` relative to a value's size: 2^(1 - digits) (FLT_EPSILON for binary32).
double relative_spacing(const FloatFormat& format);

// x rounded to the nearest value of `format`, ties to even, with subnormals and overflow to ±Inf as
// IEEE 754 rounds: one rounding from double (no double rounding through float). NaN stays NaN.
double round_to(const FloatFormat& format, double x);

// x moved one step of `format` (the format's spacing at x) towards +Inf (`up`) or -Inf; x must be a
// value of the format.
double step_in(const FloatFormat& format, double x, bool up);

}  // namespace lenscheck
