// The record modes of model/trace.h: a forward that keeps less computes the kept tensors the same
// way, so each is bit for bit the full trace's own, in the runtime and in the oracle.
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <string>
#include <vector>

#include "model/checkpoint.h"
#include "model/tokenizer.h"
#include "oracle/oracle.h"
#include "runtime/encoder.h"
#include "tests/test_support.h"

using namespace lenscheck;

namespace {

const Checkpoint& bert_mini() {
  static const Checkpoint ck = load_checkpoint(test::bert_mini());
  return ck;
}

Encoding nurse() {
  return BertTokenizer(bert_mini().vocab, bert_mini().tokenizer).encode("The nurse handed the doctor the scissors.", 512);
}

std::vector<std::string> instrument_names(int layers, Record record) {
  std::vector<std::string> names;
  for (int l = 0; l < layers; ++l) {
    for (const char* t : {"attention.probs", "value_norm", "transformed_norm", "lens.value_norm", "lens.transformed_norm"})
      names.push_back("layer." + std::to_string(l) + "." + t);
    if (record != Record::instrument_residual) continue;
    for (const char* t : {"lens.residual_layernorm_norm", "mixing_ratio.attention", "mixing_ratio.residual",
                          "mixing_ratio.residual_layernorm"})
      names.push_back("layer." + std::to_string(l) + "." + t);
  }
  return names;
}

std::vector<std::string> names_of(const Trace& t) {
  std::vector<std::string> names;
  for (const auto& [name, tensor] : t.tensors) names.push_back(name);
  return names;
}

// Every tensor of `part` is the full trace's tensor of that name, bit for bit.
void expect_bits_of_full(const Trace& part, const Trace& full) {
  for (const auto& [name, tensor] : part.tensors) {
    const Tensor* whole = full.find(name);
    ASSERT_NE(whole, nullptr) << name;
    ASSERT_EQ(tensor.shape, whole->shape) << name;
    size_t differing = 0;
    for (size_t k = 0; k < tensor.values.size(); ++k)
      differing += std::bit_cast<uint64_t>(tensor.values[k]) != std::bit_cast<uint64_t>(whole->values[k]);
    EXPECT_EQ(differing, 0u) << name;
  }
}

}  // namespace

TEST(RecordModes, TheRuntimeKeepsWhatTheInstrumentShowsBitForBit) {
  const runtime::Encoder encoder(bert_mini().config, bert_mini().weights);
  const Trace full = encoder.forward(nurse());
  for (Record record : {Record::instrument, Record::instrument_residual}) {
    const Trace shown = encoder.forward(nurse(), record);
    EXPECT_EQ(names_of(shown), instrument_names(bert_mini().config.num_hidden_layers, record));
    expect_bits_of_full(shown, full);
    EXPECT_EQ(shown.tokens, full.tokens);
  }
}

TEST(RecordModes, TheRuntimesPlainForwardKeepsTheLastOutputBitForBit) {
  const runtime::Encoder encoder(bert_mini().config, bert_mini().weights);
  const Trace plain = encoder.forward(nurse(), Record::output);
  EXPECT_EQ(names_of(plain), std::vector<std::string>{"layer.3.output"});
  expect_bits_of_full(plain, encoder.forward(nurse()));
}

TEST(RecordModes, TheOracleKeepsTheSameSubsetsBitForBit) {
  const oracle::Oracle oracle(bert_mini().config, bert_mini().weights, oracle::Precision::fp32);
  const Trace full = oracle.forward(nurse());
  for (Record record : {Record::instrument, Record::instrument_residual}) {
    const Trace shown = oracle.forward(nurse(), record);
    EXPECT_EQ(names_of(shown), instrument_names(bert_mini().config.num_hidden_layers, record));
    expect_bits_of_full(shown, full);
  }
  const Trace plain = oracle.forward(nurse(), Record::output);
  EXPECT_EQ(names_of(plain), std::vector<std::string>{"layer.3.output"});
  expect_bits_of_full(plain, full);
}
