#pragma once
// Generators shared by the properties: random small BERT models and token sequences for the encoder
// properties, random attention and norm tensors for the lens-only ones. Every generated value has a
// showValue, so a shrunk counterexample reads as a config, a weight seed and token ids.
#include <rapidcheck.h>

#include <bit>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "model/checkpoint.h"
#include "model/tokenizer.h"
#include "model/trace.h"
#include "model/vocab.h"

namespace lenscheck {

// Found by RapidCheck through argument-dependent lookup when it prints a counterexample.
void showValue(const BertConfig& config, std::ostream& os);
void showValue(const Encoding& encoding, std::ostream& os);
void showValue(const Trace& trace, std::ostream& os);

namespace prop {

// CI runs each property with `cases` cases unless RC_PARAMS names max_success itself. RapidCheck
// reads RC_PARAMS once, when the first property runs, so amending it before main is enough.
bool default_max_success(int cases);
inline const bool kDefaultCases = default_max_success(200);

// Layers 1-max_layers (BERT-base's depth by default), heads 1-4, head dim 2-16 with hidden >= 8,
// vocab 8-64, intermediate 2-64, room for 1-24 content tokens (max_position_embeddings 3-32); shrinks
// towards one layer, one head.
rc::Gen<BertConfig> small_config(int max_layers = 12);

// How far a random model's statistics are from unit scale, towards a trained BERT's: linear weights
// `spread` times LeCun's 1/sqrt(in), so attention logits have a standard deviation of about spread²
// (soft rows at 1, nearly one-hot at 4); and LayerNorm outlier dimensions (plant_outlier_dimensions).
struct Statistics {
  double spread = 1;
  // W_Q and W_K times this too, so logits by its square: at 3 and spread 4 their standard deviation
  // is about 150, past fp32's exp range (88.7), with rows one-hot in fp32, as trained sinks have.
  double query_key_gain = 1;
  int outlier_dims = 0;
  double outlier_gain = 1;
};
void showValue(const Statistics& statistics, std::ostream& os);
// Spread 1-4, query/key gain 1, 2 or 3, 0-2 outlier dimensions of gain 1-20; shrinks towards unit
// scale without outliers.
rc::Gen<Statistics> trained_statistics();

// Weights drawn from `seed` (splitmix64, so a seed is the same model on every machine); at unit
// statistics a scale that keeps softmax away from both uniform and one-hot (generators.cpp says why).
BertWeights random_weights(const BertConfig& config, uint64_t seed, const Statistics& statistics = {});

// The vocabulary of a random model, in BERT's layout: [PAD] [UNK] [CLS] [SEP] [MASK], then
// word-initial pieces "aN" at odd ids and continuations "##aN" at even ids.
Vocab model_vocab(int vocab_size);

// [CLS] pieces... [SEP] as BertTokenizer::encode would emit them for `config`'s vocabulary: 1-24
// content tokens within max_position_embeddings, words of one or more subwords (a word-initial
// piece, then continuations), and [UNK] as a word of its own.
rc::Gen<Encoding> token_sequence(const BertConfig& config);

// Input of the lens-only properties: per layer, one attention tensor [H, T, T] (rows are softmax
// of small integer logits times logit_step, so shrinking goes towards uniform rows; at step 40 rows
// saturate) and per-key norms [H, T] (multiples of 1/4 in [0, 10], zeros included), over a sentence
// of words with the given subword counts.
struct LensCase {
  int layers = 1;
  int heads = 1;
  double logit_step = 0.5;
  std::vector<int> word_lengths;            // subwords of each word; T = 2 + their sum
  std::vector<std::vector<float>> probs;    // per layer, [H, T, T]
  std::vector<std::vector<float>> norms;    // per layer, [H, T]
  size_t tokens() const;
  // A trace holding the tokens and word ids ([CLS] and [SEP] at -1), and no tensors.
  Trace sentence() const;
};
void showValue(const LensCase& lens_case, std::ostream& os);

// `single_subword_words`: every word is one subword.
rc::Gen<LensCase> lens_case(int max_layers, bool single_subword_words = false);

// Valid UTF-8 built from fragments a tokenizer finds hard: ASCII letters, digits, punctuation and
// whitespace of several kinds, accented and decomposed letters, CJK, kana, emoji, controls, zero-width
// and replacement characters, and literal special tokens ("[SEP]", "[unused0]", "##").
rc::Gen<std::string> unicode_text(int max_fragments);

// Equal to the bit: a NaN equals only the same NaN, and -0 differs from +0.
template <class T>
bool same_bits(T a, T b) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8);
  using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
  return std::bit_cast<Bits>(a) == std::bit_cast<Bits>(b);
}
template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!same_bits(a[i], b[i])) return false;
  return true;
}

// A [H, T, T] or [T, T] tensor of a trace from a flat float buffer.
Tensor tensor_of(std::vector<int64_t> shape, const std::vector<float>& values);
// weight_by_key over a lens case's layer: the one lens computation of the runtime.
std::vector<float> weighted(const std::vector<float>& probs, const std::vector<float>& norms,
                            int heads, size_t tokens);

}  // namespace prop
}  // namespace lenscheck
