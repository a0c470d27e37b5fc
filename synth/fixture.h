#pragma once
// `lenscheck make-fixture`: deterministic BERT checkpoints in the real Hugging Face layout.
#include <cstdint>
#include <filesystem>
#include <string>

#include "model/checkpoint.h"

namespace lenscheck {

// The spread of a generated checkpoint's parameters, each drawn N(mean, sd).
struct WeightStatistics {
  double weight_sd = 0.02;   // linear weights and embeddings (mean 0)
  double bias_sd = 0.02;     // linear biases (mean 0)
  double gain_sd = 0.02;     // LayerNorm gains (mean 1)
  double ln_bias_sd = 0.02;  // LayerNorm biases (mean 0)
  int outlier_dims = 0;      // LayerNorm dimensions whose gain is outlier_gain (plant_outlier_dimensions)
  double outlier_gain = 1;
};

// BERT's initialiser, N(0, 0.02) (Devlin et al. 2019; HF's initializer_range). Unlike a fresh BERT,
// biases and LayerNorm parameters are drawn too (as in a trained model), so a fault that drops one is
// visible.
WeightStatistics init_statistics();
// Statistics of trained BERT checkpoints; fixture.cpp says where each figure comes from.
WeightStatistics trained_statistics();

BertWeights generated_weights(const BertConfig& config, uint64_t seed, const WeightStatistics& statistics);

struct FixtureOptions {
  std::filesystem::path out;
  std::filesystem::path vocab;  // a WordPiece vocab.txt (BERT uncased), copied into the checkpoint
  uint64_t seed = 1;
  bool tiny = false;      // 2 layers, hidden 32: a second, small checkpoint for loader tests
  bool bert_base = false; // BERT-base's shape: 12 layers, hidden 768, 12 heads, intermediate 3072
  bool trained = false;   // trained_statistics() instead of init_statistics()
  bool prefixed = false;  // BertForMaskedLM naming: "bert." prefix, plus pooler and cls.* heads
  bool float64 = false;   // store weights as F64 instead of F32
  bool planted_sink = false;  // constructed weights with a known sink (synth/planted.h)
  bool saturated_sink = false;  // the same construction with saturated sink heads (SinkHeads::saturated)
  bool saturated_peaks = false;  // the same construction with saturated content peaks (SinkHeads::peaked)
};

// BERT-mini's shape (4 layers, hidden 256, 4 heads, intermediate 1024), BERT-base's, or the tiny one.
BertConfig fixture_config(const FixtureOptions& options, int vocab_size);

// --tiny with --bert-base is an InputError, raised before anything is read.
void make_fixture(const FixtureOptions& options);

}  // namespace lenscheck
