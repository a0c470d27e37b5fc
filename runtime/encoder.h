#pragma once
// The hand-written BERT encoder that ships: plain fp32 C++, no libtorch, no BLAS.
#include <memory>
#include <vector>

#include "model/checkpoint.h"
#include "model/tokenizer.h"
#include "model/trace.h"
#include "runtime/kernels.h"
#include "runtime/stages.h"

namespace lenscheck::runtime {

class Encoder {
 public:
  // `threads` share each forward's kernels (heads, row blocks, panels of a product); the trace is
  // the same bits for every count. `stages` other than the shipped ones are for `lenscheck mutate`
  // and `calibrate` only.
  Encoder(const BertConfig& config, const BertWeights& weights, unsigned threads = 1,
          Stages stages = shipped_stages());

  // One sentence; Record::output skips the norms and lenses too.
  Trace forward(const Encoding& encoding, Record record = Record::everything) const;

  const BertConfig& config() const { return config_; }

 private:
  BertConfig config_;
  const BertWeights& weights_;
  Stages stages_;
  std::vector<PackedLayer> packed_;  // linear weights packed once, for the hot loops
  std::unique_ptr<Workers> workers_;
};

}  // namespace lenscheck::runtime
