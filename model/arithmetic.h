#pragma once
// The arithmetic a candidate declares it runs in, and rounding to it. The derived gate's benchmark for
// a candidate is libtorch's computation in that arithmetic (oracle/oracle.h simulates the formats
// libtorch's CPU build has no kernels for), so a faster runtime is held to what its own format allows.
#include <string>

namespace lenscheck {

enum class Arithmetic {
  fp32,  // IEEE binary32 throughout
  tf32,  // matrix products on inputs rounded to TensorFloat-32 (10 fraction bits, fp32's range); fp32 elsewhere
  bf16,  // every value bfloat16 (7 fraction bits, fp32's range), each op computed exactly then rounded
  fp16,  // every value IEEE binary16 (10 fraction bits, largest 65504), each op computed exactly then rounded
  int8,  // ONNX Runtime's quantize_dynamic: linear layers as uint8 activations (per tensor) times int8
         // weights (per output channel, [-64, 64]) with exact integer sums; fp32 elsewhere
};

// "fp32", "tf32", "bf16", "fp16", "int8".
std::string arithmetic_name(Arithmetic arithmetic);
// The names above; an InputError naming `where` (a flag, a trace file) and the known names otherwise.
Arithmetic parse_arithmetic(const std::string& name, const std::string& where);

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

// x rounded to the nearest value of `format`, ties to even, with subnormals and overflow to ±Inf as
// IEEE 754 rounds: one rounding from double (no double rounding through float). NaN stays NaN.
double round_to(const FloatFormat& format, double x);

// x moved one step of `format` (the format's spacing at x) towards +Inf (`up`) or -Inf; x must be a
// value of the format.
double step_in(const FloatFormat& format, double x, bool up);

}  // namespace lenscheck
