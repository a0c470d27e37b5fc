#pragma once
// The reference: the same encoder written with libtorch's own ops and modules, in fp32 or fp64.
// torch headers stay in oracle/*.cpp; this header is torch-free.
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

#include "model/checkpoint.h"
#include "model/tokenizer.h"
#include "model/trace.h"

namespace lenscheck::oracle {

enum class Precision { fp32, fp64 };

// libtorch could not run the model (out of memory, above all): what it said, and in which precision.
class OracleError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Oracle {
 public:
  // `rounding_probe` non-zero: every LayerNorm output moved one float step, up or down as that seed
  // draws (the derived gate's sensitivity probe, gate/verify.h); 0: the model as it is.
  Oracle(const BertConfig& config, const BertWeights& weights, Precision precision, uint64_t rounding_probe = 0);
  ~Oracle();
  Oracle(Oracle&&) noexcept;

  // Record::everything: every tensor of trace_schema(); Record::output: a plain libtorch forward.
  Trace forward(const Encoding& encoding, Record record = Record::everything) const;

  // Which BLAS libtorch runs on and its thread count, for reports ("OpenBLAS 0.3.21, 1 thread").
  static std::string backend();
  static void set_threads(int threads);

 private:
  void load(const BertConfig& config, const BertWeights& weights, Precision precision);
  Trace run(const Encoding& encoding, Record record) const;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace lenscheck::oracle
