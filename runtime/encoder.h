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
  // The same model with other stages, on one thread: a mutant of `lenscheck mutate`, which shares the
  // shipped encoder's packed weights instead of packing them again.
  Encoder(const Encoder& shipped, Stages stages);

  // One sentence; Record::output skips the norms and lenses too.
  Trace forward(const Encoding& encoding, Record record = Record::everything) const;

  // Adds the lens tensors the trace lacks, from its own attention.value and attention.probs (and, for the
  // residual lens, each layer's input and attention.pre_norm), by the same code as the forward's: for a
  // candidate that computes no lens (a shipped ONNX graph, ONNX Runtime's residual lens). std::invalid_argument
  // where a layer's value or probs is missing or of another size.
  void derive_lenses(Trace& trace) const;

  const BertConfig& config() const { return config_; }

 private:
  BertConfig config_;
  const BertWeights& weights_;
  Stages stages_;
  std::shared_ptr<const std::vector<PackedLayer>> packed_;  // linear weights packed once, for the hot loops
  std::unique_ptr<Workers> workers_;
};

}  // namespace lenscheck::runtime
