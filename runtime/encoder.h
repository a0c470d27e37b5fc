#pragma once
// The hand-written BERT encoder that ships: plain fp32 C++, no libtorch, no BLAS.
#include <memory>
#include <vector>

#include "model/checkpoint.h"
#include "model/tokenizer.h"
#include "model/trace.h"
#include "runtime/faults.h"
#include "runtime/kernels.h"

namespace lenscheck::runtime {

class Encoder {
 public:
  // `fault` is for `lenscheck mutate` and `calibrate` only: the shipped runtime is Fault::none.
  // `threads` share each forward's kernels (heads, row blocks, panels of a product); the trace
  // is the same bits for every count.
  Encoder(const BertConfig& config, const BertWeights& weights, Injected fault = {}, unsigned threads = 1);

  // One sentence; Record::output skips the norms and lenses too.
  Trace forward(const Encoding& encoding, Record record = Record::everything) const;

  const BertConfig& config() const { return config_; }

 private:
  struct Layer {
    PackedWeight query, key, value, attention_out, intermediate, output;
    const LayerWeights* w;
  };
  BertConfig config_;
  const BertWeights& weights_;
  Fault fault_;
  float fault_delta_;
  Param unit_gamma_;  // for Fault::layer_norm_without_gamma
  std::vector<Layer> layers_;  // linear weights packed once, for the hot loops
  std::unique_ptr<Workers> workers_;
};

}  // namespace lenscheck::runtime
