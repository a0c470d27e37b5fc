// Traces saved as safetensors and read back, by us or from another implementation.
#include <gtest/gtest.h>

#include <cstring>

#include "model/error.h"
#include "model/safetensors.h"
#include "model/trace_io.h"
#include "tests/test_support.h"

using namespace lenscheck;

namespace {

Vocab small_vocab() {
  return Vocab::from_tokens({"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "doctor"}, "test-vocab");
}

Trace sample_trace(const std::string& precision) {
  Trace t;
  t.producer = "test " + precision;
  t.precision = precision;
  t.input_ids = {2, 5, 6, 3};
  t.tokens = {"[CLS]", "the", "doctor", "[SEP]"};
  t.word_ids = {-1, 0, 1, -1};
  Tensor a({2, 4});
  for (size_t i = 0; i < a.numel(); ++i) {
    const double v = 0.1 * static_cast<double>(i) - 0.37;
    a.values[i] = precision == "fp64" ? v : static_cast<double>(static_cast<float>(v));
  }
  t.add("embeddings.output", a);
  Tensor b({1, 4, 4});
  b.values[3] = -0.0;
  b.values[7] = 1e-40;  // subnormal in fp32
  t.add("layer.0.attention.probs", b);
  return t;
}

bool bit_identical(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

}  // namespace

TEST(TraceIo, RoundTripIsBitIdenticalInBothPrecisions) {
  for (const std::string precision : {"fp32", "fp64"}) {
    const auto file = test::temp_dir(precision) / "trace.safetensors";
    Trace original = sample_trace(precision);
    if (precision == "fp32") original.tensors[1].second.values[7] = static_cast<float>(1e-40);
    save_trace(file, original);
    const Trace back = load_trace(file, small_vocab());
    EXPECT_EQ(back.producer, original.producer);
    EXPECT_EQ(back.precision, precision);
    EXPECT_EQ(back.input_ids, original.input_ids);
    EXPECT_EQ(back.tokens, original.tokens);
    EXPECT_EQ(back.word_ids, original.word_ids);
    ASSERT_EQ(back.tensors.size(), original.tensors.size());
    for (size_t i = 0; i < back.tensors.size(); ++i) {
      EXPECT_EQ(back.tensors[i].first, original.tensors[i].first);  // forward order kept
      EXPECT_EQ(back.tensors[i].second.shape, original.tensors[i].second.shape);
      for (size_t k = 0; k < back.tensors[i].second.numel(); ++k)
        EXPECT_TRUE(bit_identical(back.tensors[i].second.values[k], original.tensors[i].second.values[k]))
            << back.tensors[i].first << "[" << k << "]";
    }
  }
}

TEST(TraceIo, ForeignTraceNeedsOnlyInputIdsAndTensors) {
  // What a Python script would write: no lenscheck metadata, ids as [1, T].
  const auto file = test::temp_dir("foreign") / "python.safetensors";
  write_safetensors(file, {{"input_ids", DType::I64, {1, 3}, {2, 6, 3}},
                           {"embeddings.output", DType::F32, {3, 2}, {1, 2, 3, 4, 5, 6}}}, {});
  const Trace t = load_trace(file, small_vocab());
  EXPECT_EQ(t.tokens, (std::vector<std::string>{"[CLS]", "doctor", "[SEP]"}));
  EXPECT_EQ(t.producer, "python.safetensors");
  ASSERT_NE(t.find("embeddings.output"), nullptr);
  EXPECT_EQ(t.find("embeddings.output")->values[5], 6.0);
}

TEST(TraceIo, MissingOrInvalidInputIdsIsAnInputError) {
  const auto dir = test::temp_dir("bad");
  write_safetensors(dir / "no-ids.safetensors", {{"x", DType::F32, {1}, {1}}}, {});
  EXPECT_THROW(load_trace(dir / "no-ids.safetensors", small_vocab()), InputError);
  write_safetensors(dir / "big-id.safetensors", {{"input_ids", DType::I64, {2}, {2, 700}}}, {});
  try {
    load_trace(dir / "big-id.safetensors", small_vocab());
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("input_ids holds 700, outside the vocabulary"), std::string::npos);
  }
}
