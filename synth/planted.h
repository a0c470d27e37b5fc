#pragma once
// `lenscheck make-fixture --planted-sink`: a BERT whose answer is known. Weights are constructed, not
// trained, so that every head sends a chosen attention to [CLS]/[SEP] and the special tokens carry a
// chosen value norm relative to content tokens; planted_answer() derives what each lens must show.
//
// The construction: every token's embedding is a ±1 vector balanced in each half of the hidden
// dimensions (mean 0, variance 1, so LayerNorm leaves it unchanged); [CLS] and [SEP] share
// s = (+1 … +1, −1 … −1), which every content vector is orthogonal to. Each layer maps its input to
// itself: the attention and FFN outputs are multiples of the all-ones vector, which the following
// LayerNorm removes. Per head (layer l, head h) the first three dimensions of the head carry
//   scores   a_ij = σ·[j special] + γ·(p·x_i/√D)(r·x_j/√D)
//   values   v_j = ρ·e0 for [CLS]/[SEP],  e1 + μ·(m·x_j/D)·e2 for content tokens
//   f(x_j)   = (κ·v_j)·1 through W_O, so ‖f(x_j)‖ = √D·|κ·v_j|
// with p, r, m balanced ±1 vectors of their own. b_O is a multiple of 1 too, and non-zero, so that
// including it in f(x) would show.
//
// Two sets of heads: the planted ones (sinks of σ = 0 … 6, value ratios about 0.6, as on a small
// trained BERT) and saturated ones, as trained BERTs also have (Clark et al. 2019: heads that put
// nearly all of a row on [SEP]; Kobayashi et al. 2020: sinks whose ‖v‖ is near zero): σ up to 120, so
// that scores pass fp32's exp range (88.7) and content attention rounds to exactly 0 in fp32, and
// value ratios from 0 (layer 0, head 0: the sink carries nothing, its norm-weighted rows no weight at
// all) to 0.1 beside a soft head per layer.
//
// A third set saturates content peaks instead (issue #46: a head rule decidable where heads saturate):
// most heads put no extra score on the sink (σ = 0) and content gains γ of 12 to 200, so each row
// goes one-hot to a content word, its score gaps past fp32's exp range in several heads at once, and
// the content peaks of many heads print 1.00 together; each layer's heads 0 and 1 or 2 and 3 are
// twins (the same weights), whose rows tie exactly.
#include <cstdint>
#include <vector>

#include "model/checkpoint.h"

namespace lenscheck {

struct PlantedHead {
  double sink_logit;         // σ: extra score of [CLS] and [SEP]
  double content_gain;       // γ: how sharply content tokens attend to each other
  double value_ratio;        // ρ: ‖v‖ of [CLS]/[SEP] over ‖v‖ of a content token with m·x = 0
  double transformed_ratio;  // the same ratio for ‖f(x)‖
  int twin = -1;             // a head of the same layer whose weights this one copies; -1: its own
};

enum class SinkHeads { planted, saturated, peaked };

class PlantedSink {
 public:
  PlantedSink(const BertConfig& config, uint64_t seed, SinkHeads heads = SinkHeads::planted);  // seeded directions

  const BertConfig& config() const { return config_; }
  const PlantedHead& head(int layer, int h) const { return heads_[size_t(layer)][size_t(h)]; }
  BertWeights weights(int cls_id, int sep_id) const;

  // What the lenses must show for one head on `ids`, derived from the construction alone.
  struct Answer {
    std::vector<double> attention;         // α [T, T]
    std::vector<double> value_norm;        // ‖v_j‖ [T]
    std::vector<double> transformed_norm;  // ‖f(x_j)‖ [T]
  };
  Answer answer(const std::vector<int64_t>& ids, int cls_id, int sep_id, int layer, int h) const;

 private:
  std::vector<int8_t> embedding(int64_t token, int cls_id, int sep_id) const;  // the ±1 vector
  std::vector<int8_t> direction(int layer, int h, int which) const;            // p, r, m
  BertConfig config_;
  uint64_t seed_;
  std::vector<std::vector<PlantedHead>> heads_;
};

BertConfig planted_config(int vocab_size);  // BERT-mini's shape

}  // namespace lenscheck
