#pragma once
// The hand-written BERT encoder that ships: plain fp32 C++, no libtorch, no BLAS.
#include <memory>
#include <string>
#include <vector>

#include "model/checkpoint.h"
#include "model/tokenizer.h"
#include "model/trace.h"
#include "runtime/kernels.h"
#include "runtime/stages.h"

namespace lenscheck::runtime {

// The tensors derive_lenses derives `name` from: a layer's lens tensors from its attention.value and
// attention.probs, its residual lens (is_residual_lens) also from the layer's input (embeddings.output or the
// previous layer's output) and attention.pre_norm. Empty for any other tensor, which it never derives.
std::vector<std::string> lens_inputs(const std::string& name);

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

  // Adds the lens tensors the trace lacks, by the same code as the forward's, in every layer where the trace
  // holds what they are derived from (lens_inputs): for a candidate that computes no lens (a shipped ONNX
  // graph, ONNX Runtime's residual lens, a trace written before the residual lens). Returns their names.
  // std::invalid_argument where a layer's value or probs is of another size.
  std::vector<std::string> derive_lenses(Trace& trace) const;

  const BertConfig& config() const { return config_; }

 private:
  BertConfig config_;
  const BertWeights& weights_;
  Stages stages_;
  std::shared_ptr<const std::vector<PackedLayer>> packed_;  // linear weights packed once, for the hot loops
  std::unique_ptr<Workers> workers_;
};

}  // namespace lenscheck::runtime
