#include "model/arithmetic.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "model/error.h"

namespace lenscheck {

std::string arithmetic_name(Arithmetic a) {
  switch (a) {
    case Arithmetic::fp32: return "fp32";
    case Arithmetic::tf32: return "tf32";
    case Arithmetic::bf16: return "bf16";
    case Arithmetic::fp16: return "fp16";
    case Arithmetic::int8: return "int8";
  }
  return "?";
}

Arithmetic parse_arithmetic(const std::string& name, const std::string& where) {
  for (Arithmetic a : {Arithmetic::fp32, Arithmetic::tf32, Arithmetic::bf16, Arithmetic::fp16, Arithmetic::int8})
    if (name == arithmetic_name(a)) return a;
  throw InputError(where, fmt::format("\"{}\" is not a precision lenscheck knows (fp32, tf32, bf16, fp16, int8)", name));
}

namespace {

// The spacing of `format` at x: 2^(e - digits + 1), with e clamped at the smallest normal exponent.
double spacing(const FloatFormat& f, double x) {
  if (x == 0) return std::ldexp(1.0, f.min_exponent - (f.digits - 1));  // the smallest subnormal
  int e = 0;
  std::frexp(x, &e);  // x = m · 2^e with 0.5 <= |m| < 1, so the exponent of 1 <= m < 2 is e - 1
  return std::ldexp(1.0, std::max(e - 1, f.min_exponent) - (f.digits - 1));
}

}  // namespace

double round_to(const FloatFormat& f, double x) {
  if (!std::isfinite(x) || x == 0) return x;
  const double ulp = spacing(f, x);
  const double y = std::nearbyint(x / ulp) * ulp;  // x / ulp is exact: ulp is a power of two
  return std::fabs(y) > f.largest ? std::copysign(std::numeric_limits<double>::infinity(), x) : y;
}

double step_in(const FloatFormat& f, double x, bool up) {
  if (!std::isfinite(x)) return x;
  // Below a power of two the spacing is half the one above it: step down from one at the finer spacing.
  double ulp = spacing(f, x);
  if ((x > 0) != up && x != 0 && std::fabs(x) == std::ldexp(1.0, std::ilogb(x)) &&
      std::ilogb(x) > f.min_exponent)
    ulp /= 2;
  const double y = x + (up ? ulp : -ulp);
  return std::fabs(y) > f.largest ? std::copysign(std::numeric_limits<double>::infinity(), y) : y;
}

}  // namespace lenscheck
