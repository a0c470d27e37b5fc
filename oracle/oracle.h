#pragma once
// The reference: the same encoder written with libtorch's own ops and modules, in fp32 or fp64.
// torch headers stay in oracle/*.cpp; this header is torch-free.
#include <memory>
#include <string>

#include "model/checkpoint.h"
#include "model/tokenizer.h"
#include "model/trace.h"

namespace lenscheck::oracle {

enum class Precision { fp32, fp64 };

class Oracle {
 public:
  Oracle(const BertConfig& config, const BertWeights& weights, Precision precision);
  ~Oracle();
  Oracle(Oracle&&) noexcept;

  // Record::everything: every tensor of trace_schema(); Record::output: a plain libtorch forward.
  Trace forward(const Encoding& encoding, Record record = Record::everything) const;

  // Which BLAS libtorch runs on and its thread count, for reports ("OpenBLAS 0.3.21, 1 thread").
  static std::string backend();
  static void set_threads(int threads);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace lenscheck::oracle
