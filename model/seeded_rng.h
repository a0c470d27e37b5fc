#pragma once
// splitmix64, and a normal variate as the Irwin–Hall sum of 12 uniforms: integer and fixed-order
// double arithmetic only, no libm, so a seed draws the same weights on every machine. Used by the
// fixture writer, the property generators and the oracle's rounding probes.
#include <cstdint>

namespace lenscheck {

class SeededRng {
 public:
  explicit SeededRng(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += kGolden);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Passes over n draws at once: the state is a counter, so the next draw is the one n + 1 calls of
  // next() would have made.
  void skip(uint64_t n) { state_ += n * kGolden; }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  double normal() {
    double s = 0;
    for (int i = 0; i < 12; ++i) s += uniform();
    return s - 6.0;
  }

 private:
  static constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ULL;
  uint64_t state_;
};

}  // namespace lenscheck
