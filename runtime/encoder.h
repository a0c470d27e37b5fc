#pragma once
// The hand-written BERT encoder that ships: plain fp32 C++, no libtorch, no BLAS.
#include <vector>

#include "model/checkpoint.h"
#include "model/tokenizer.h"
#include "model/trace.h"
#include "runtime/faults.h"

namespace lenscheck::runtime {

class Encoder {
 public:
  // `fault` is for `lenscheck mutate` only: the shipped runtime is Fault::none.
  Encoder(const BertConfig& config, const BertWeights& weights, Fault fault = Fault::none);

  // One sentence; with `record` the trace holds every tensor of trace_schema(), else only the tokens.
  Trace forward(const Encoding& encoding, bool record = true) const;

  const BertConfig& config() const { return config_; }

 private:
  struct Layer {
    std::vector<float> query_wt, key_wt, value_wt, attention_out_wt, intermediate_wt, output_wt;
    const LayerWeights* w;
  };
  BertConfig config_;
  const BertWeights& weights_;
  Fault fault_;
  Param unit_gamma_;  // for Fault::layer_norm_without_gamma
  std::vector<Layer> layers_;  // linear weights transposed to [in, out] once, for the hot loops
};

}  // namespace lenscheck::runtime
