// Rounding to a declared arithmetic (model/arithmetic.h): IEEE 754's round to nearest, ties to even,
// subnormals and overflow, checked against values worked out by hand and against the hardware's own
// binary32 and binary16 conversions.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "model/arithmetic.h"
#include "model/error.h"
#include "model/seeded_rng.h"

using namespace lenscheck;

TEST(Arithmetic, RoundsToNearestWithTiesToEven) {
  EXPECT_EQ(round_to(kBinary16, 1 + std::ldexp(1, -11)), 1.0);                      // tie, even is 1
  EXPECT_EQ(round_to(kBinary16, 1 + 3 * std::ldexp(1, -11)), 1 + std::ldexp(1, -9));  // tie, even is up
  EXPECT_EQ(round_to(kBfloat16, 1 + std::ldexp(1, -8) + std::ldexp(1, -30)), 1 + std::ldexp(1, -7));
  EXPECT_EQ(round_to(kTensorFloat32, 3.14159265358979), 3.140625);  // 10 fraction bits
  EXPECT_EQ(round_to(kBinary16, -0.0), -0.0);
  EXPECT_TRUE(std::isnan(round_to(kBinary16, std::nan(""))));
}

TEST(Arithmetic, KeepsSubnormalsAndOverflowsToInfinity) {
  EXPECT_EQ(round_to(kBinary16, std::ldexp(1, -24)), std::ldexp(1, -24));  // the smallest subnormal
  EXPECT_EQ(round_to(kBinary16, std::ldexp(1, -25)), 0.0);                 // half of it: tie to even 0
  EXPECT_EQ(round_to(kBinary16, 3 * std::ldexp(1, -25)), std::ldexp(1, -23));
  EXPECT_EQ(round_to(kBinary16, 65519.0), 65504.0);
  EXPECT_EQ(round_to(kBinary16, 65520.0), std::numeric_limits<double>::infinity());  // the tie past the largest
  EXPECT_EQ(round_to(kBfloat16, -1e39), -std::numeric_limits<double>::infinity());
}

TEST(Arithmetic, AgreesWithTheHardwareConversions) {
  SeededRng rng(7);
  for (int i = 0; i < 200000; ++i) {
    const double x = std::ldexp(rng.uniform() * 2 - 1, int(rng.next() % 80) - 40);
    ASSERT_EQ(round_to(kBinary32, x), double(static_cast<float>(x))) << x;
    ASSERT_EQ(round_to(kBinary16, x), double(static_cast<_Float16>(x))) << x;
  }
}

TEST(Arithmetic, StepsToTheNeighbouringValue) {
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(step_in(kBinary16, 1.0, true), 1 + std::ldexp(1, -10));
  EXPECT_EQ(step_in(kBinary16, 1.0, false), 1 - std::ldexp(1, -11));  // below a power of two: the finer spacing
  EXPECT_EQ(step_in(kBinary16, -2.0, true), -2 + std::ldexp(1, -10));
  EXPECT_EQ(step_in(kBinary16, -2.0, false), -2 - std::ldexp(1, -9));
  EXPECT_EQ(step_in(kBinary16, 0.0, true), std::ldexp(1, -24));
  EXPECT_EQ(step_in(kBinary16, std::ldexp(1, -14), false), std::ldexp(1, -14) - std::ldexp(1, -24));
  EXPECT_EQ(step_in(kBinary16, 65504.0, true), inf);
  EXPECT_EQ(step_in(kBinary32, 1.0, true), double(std::nextafter(1.0f, 2.0f)));
  EXPECT_EQ(step_in(kBinary32, 1.0, false), double(std::nextafter(1.0f, 0.0f)));
}

TEST(Arithmetic, StepsAsTheHardwareStepsBinary32) {
  SeededRng rng(11);
  for (int i = 0; i < 200000; ++i) {
    const float x = static_cast<float>(std::ldexp(rng.uniform() * 2 - 1, int(rng.next() % 256) - 128));  // subnormals too
    const float inf = std::numeric_limits<float>::infinity();
    ASSERT_EQ(step_in(kBinary32, x, true), double(std::nextafter(x, inf))) << x;
    ASSERT_EQ(step_in(kBinary32, x, false), double(std::nextafter(x, -inf))) << x;
  }
}

TEST(Arithmetic, NamesTheKnownPrecisionsAndRefusesOthers) {
  EXPECT_EQ(parse_arithmetic("int8", "--precision"), Arithmetic::int8);
  EXPECT_EQ(parse_arithmetic("w8a32", "--precision"), Arithmetic::w8a32);
  try {
    parse_arithmetic("fp8", "--precision");
    FAIL() << "fp8 accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), "--precision");
    EXPECT_NE(std::string(e.what()).find("fp32, tf32, bf16, fp16, fp16-ort-cpu, fp16-ort-fused, int8, w8a32"), std::string::npos) << e.what();
  }
}
