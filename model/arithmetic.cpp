#include "model/arithmetic.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "model/error.h"

namespace lenscheck {

const std::vector<Arithmetic>& arithmetics() {
  static const std::vector<Arithmetic> all = {Arithmetic::fp32, Arithmetic::tf32, Arithmetic::bf16,
                                              Arithmetic::fp16, Arithmetic::fp16_ort_cpu, Arithmetic::fp16_ort_fused,
                                              Arithmetic::int8, Arithmetic::w8a32};
  return all;
}

std::string arithmetic_name(Arithmetic a) {
  switch (a) {
    case Arithmetic::fp32: return "fp32";
    case Arithmetic::tf32: return "tf32";
    case Arithmetic::bf16: return "bf16";
    case Arithmetic::fp16: return "fp16";
    case Arithmetic::fp16_ort_cpu: return "fp16-ort-cpu";
    case Arithmetic::fp16_ort_fused: return "fp16-ort-fused";
    case Arithmetic::int8: return "int8";
    case Arithmetic::w8a32: return "w8a32";
  }
  return "?";
}

namespace {

std::string known_schemes() {
  std::vector<std::string> names;
  for (Arithmetic a : arithmetics()) names.push_back(arithmetic_name(a));
  return fmt::format("{}", fmt::join(names, ", "));
}

}  // namespace

Arithmetic parse_arithmetic(const std::string& name, const std::string& where) {
  for (Arithmetic a : arithmetics())
    if (name == arithmetic_name(a)) return a;
  throw InputError(where, fmt::format("\"{}\" is not a scheme lenscheck knows ({})", name, known_schemes()));
}

Arithmetic declared_in_trace(const std::string& precision, const std::string& where, std::optional<std::string>& note) {
  note.reset();
  if (precision.empty() || precision == "fp64") return Arithmetic::fp32;
  // "fp16" is a scheme and a format: say which scheme, since ONNX Runtime's CPU provider rounds otherwise.
  if (precision == "fp16")
    note = "precision \"fp16\" is the scheme fp16, every op rounded to fp16; an fp16 graph on ONNX Runtime's CPU "
           "provider computes as fp16-ort-cpu (give --precision fp16-ort-cpu)";
  for (Arithmetic a : arithmetics())
    if (precision == arithmetic_name(a)) return a;
  // Format names that other tools write, each to the scheme that rounds as that format does.
  static const std::vector<std::pair<std::vector<std::string>, Arithmetic>> formats = {
      {{"float32", "float", "f32", "float64", "f64", "double"}, Arithmetic::fp32},
      {{"float16", "half", "f16", "fp16-gpu"}, Arithmetic::fp16},
      {{"bfloat16", "bf16-gpu"}, Arithmetic::bf16},
      {{"tensorfloat32", "tf32-gpu"}, Arithmetic::tf32},
      {{"q8", "qint8", "quint8", "int8-dynamic", "uint8"}, Arithmetic::int8},
      {{"int8-weight-only", "weight-only-int8", "w8"}, Arithmetic::w8a32},
  };
  for (const auto& [names, a] : formats)
    for (const std::string& n : names)
      if (precision == n) {
        note = fmt::format("precision \"{}\" names no scheme; judged as {}, the scheme whose rounding is nearest",
                           precision, arithmetic_name(a));
        return a;
      }
  throw InputError(where, fmt::format("precision \"{}\" is not a scheme lenscheck knows ({})", precision, known_schemes()));
}

Scheme scheme_of(Arithmetic a) {
  switch (a) {
    case Arithmetic::fp32: return {kBinary32, kBinary32, kBinary32, false, false, false, false};
    case Arithmetic::tf32: return {kBinary32, kBinary32, kTensorFloat32, false, false, false, false};
    case Arithmetic::bf16: return {kBfloat16, kBfloat16, kBfloat16, false, false, false, false};
    case Arithmetic::fp16: return {kBinary16, kBinary16, kBinary16, false, false, false, false};
    case Arithmetic::fp16_ort_cpu: return {kBinary16, kBinary32, kBinary32, false, true, false, false};
    case Arithmetic::fp16_ort_fused: return {kBinary16, kBinary32, kBinary32, false, true, false, true};
    case Arithmetic::int8: return {kBinary32, kBinary32, kBinary32, true, false, false, false};
    case Arithmetic::w8a32: return {kBinary32, kBinary32, kBinary32, false, false, true, false};
  }
  throw std::logic_error("unknown arithmetic");
}

std::optional<Arithmetic> other_rounding(Arithmetic a) {
  if (a == Arithmetic::fp16) return Arithmetic::fp16_ort_cpu;
  if (a == Arithmetic::fp16_ort_cpu || a == Arithmetic::fp16_ort_fused) return Arithmetic::fp16;
  return std::nullopt;
}

double relative_spacing(const FloatFormat& f) { return std::ldexp(1.0, 1 - f.digits); }

namespace {

// The bit-level forms below are the hot path of simulated arithmetic (every weight and op output of a
// simulated forward pass goes through them); frexp/ldexp/nearbyint cost several times more.
uint64_t bits_of(double x) {
  uint64_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}
double from_bits(uint64_t b) {
  double x;
  std::memcpy(&x, &b, sizeof x);
  return x;
}
constexpr uint64_t kFraction = (uint64_t(1) << 52) - 1;
// x's exponent e in x = m · 2^e, 1 <= |m| < 2; x finite and non-zero.
int exponent_of(double x) {
  const int field = int((bits_of(x) >> 52) & 0x7ff);
  return field ? field - 1023 : std::ilogb(x);  // a subnormal double: never a format's value, but exact
}
double power_of_two(int k) { return k >= -1022 ? from_bits(uint64_t(k + 1023) << 52) : std::ldexp(1.0, k); }

// The spacing of `format` at x: 2^(e - digits + 1), with e clamped at the smallest normal exponent.
double spacing(const FloatFormat& f, double x) {
  const int e = x == 0 ? f.min_exponent : std::max(exponent_of(x), f.min_exponent);
  return power_of_two(e - (f.digits - 1));
}

}  // namespace

double round_to(const FloatFormat& f, double x) {
  if (!std::isfinite(x) || x == 0) return x;
  double y;
  if (exponent_of(x) >= f.min_exponent) {
    // A normal value of the format: drop the low 53 - digits bits of the fraction, adding half of the
    // last kept bit less one, plus that bit (ties to even); a carry runs into the exponent as it should.
    const int dropped = 53 - f.digits;
    const uint64_t b = bits_of(x);
    const uint64_t rounded = b + ((uint64_t(1) << (dropped - 1)) - 1) + ((b >> dropped) & 1);
    y = from_bits(rounded & ~((uint64_t(1) << dropped) - 1));
  } else {
    const double ulp = spacing(f, x);
    y = std::nearbyint(x / ulp) * ulp;  // x / ulp is exact: ulp is a power of two
  }
  return std::fabs(y) > f.largest ? std::copysign(std::numeric_limits<double>::infinity(), x) : y;
}

double step_in(const FloatFormat& f, double x, bool up) {
  if (!std::isfinite(x)) return x;
  // Below a power of two the spacing is half the one above it: step down from one at the finer spacing.
  double ulp = spacing(f, x);
  if ((x > 0) != up && x != 0 && (bits_of(x) & kFraction) == 0 && exponent_of(x) > f.min_exponent) ulp /= 2;
  const double y = x + (up ? ulp : -ulp);
  return std::fabs(y) > f.largest ? std::copysign(std::numeric_limits<double>::infinity(), y) : y;
}

}  // namespace lenscheck
