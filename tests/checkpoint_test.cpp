// Loading Hugging Face checkpoints as they are: config.json, vocab.txt, model.safetensors.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "model/checkpoint.h"
#include "model/error.h"
#include "model/safetensors.h"
#include "model/sha256.h"
#include "tests/test_support.h"

using namespace lenscheck;
namespace fs = std::filesystem;

namespace {

// A copy of the tiny prefixed checkpoint whose tensors `edit` may change before they are written.
fs::path edited_copy(const std::function<void(std::vector<OutputTensor>&)>& edit) {
  const fs::path dir = test::temp_dir("checkpoint");
  const fs::path src = test::fixture("tiny-prefixed");
  fs::copy_file(src / "config.json", dir / "config.json");
  fs::copy_file(src / "vocab.txt", dir / "vocab.txt");
  const SafetensorsFile st = SafetensorsFile::open(src / "model.safetensors");
  std::vector<OutputTensor> tensors;
  for (const TensorEntry& e : st.entries()) {
    const bool integer = e.dtype == DType::I64;
    std::vector<double> values;
    if (integer) {
      for (int64_t v : st.read_i64(e)) values.push_back(static_cast<double>(v));
    } else {
      values = st.read_f64(e);
    }
    tensors.push_back({e.name, integer ? DType::I64 : DType::F32, e.shape, values});
  }
  edit(tensors);
  write_safetensors(dir / "model.safetensors", tensors, {});
  return dir;
}

OutputTensor& named(std::vector<OutputTensor>& tensors, const std::string& name) {
  for (OutputTensor& t : tensors)
    if (t.name == name) return t;
  throw std::logic_error("no tensor " + name);
}

void expect_input_error(const fs::path& dir, const std::string& file, const std::string& fragment) {
  try {
    load_checkpoint(dir);
    FAIL() << "expected an InputError mentioning " << fragment;
  } catch (const InputError& e) {
    EXPECT_EQ(e.file().filename(), file) << e.what();
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

}  // namespace

TEST(Checkpoint, LoadsTheBundledBertMiniWithBareNames) {
  const Checkpoint ck = load_checkpoint(test::bert_mini());
  EXPECT_EQ(ck.config.hidden_size, 256);
  EXPECT_EQ(ck.config.num_hidden_layers, 4);
  EXPECT_EQ(ck.config.num_attention_heads, 4);
  EXPECT_EQ(ck.config.intermediate_size, 1024);
  EXPECT_EQ(ck.config.hidden_act, "gelu");
  EXPECT_DOUBLE_EQ(ck.config.layer_norm_eps, 1e-12);
  EXPECT_EQ(ck.vocab.size(), 30522u);
  ASSERT_EQ(ck.weights.layers.size(), 4u);
  EXPECT_EQ(ck.weights.word_embeddings.shape, (std::vector<int64_t>{30522, 256}));
  EXPECT_EQ(ck.weights.layers[3].intermediate_w.shape, (std::vector<int64_t>{1024, 256}));
  EXPECT_EQ(ck.weights.layers[3].output_w.shape, (std::vector<int64_t>{256, 1024}));
  EXPECT_TRUE(ck.notes.empty());
  EXPECT_EQ(ck.prefix, "");
  EXPECT_EQ(ck.stored_dtypes, (std::map<std::string, size_t>{{"F32", 5 + 4 * 16}}));
  EXPECT_TRUE(ck.ignored.empty());
  EXPECT_EQ(ck.model_sha256, sha256_file(test::bert_mini() / "model.safetensors"));
}

TEST(Checkpoint, AcceptsTheBertPrefixAndIgnoresHeadsWithANote) {
  const Checkpoint ck = load_checkpoint(test::fixture("tiny-prefixed"));
  EXPECT_EQ(ck.config.num_hidden_layers, 2);
  ASSERT_EQ(ck.notes.size(), 2u);
  EXPECT_NE(ck.notes[0].find("F64 weights converted"), std::string::npos) << ck.notes[0];
  EXPECT_NE(ck.notes[1].find("ignored 4 tensor(s)"), std::string::npos) << ck.notes[1];
  EXPECT_NE(ck.notes[1].find("bert.pooler.dense.weight"), std::string::npos) << ck.notes[1];
  EXPECT_EQ(ck.prefix, "bert.");
  EXPECT_EQ(ck.stored_dtypes, (std::map<std::string, size_t>{{"F64", 5 + 2 * 16}}));
  EXPECT_EQ(ck.ignored, (std::vector<std::string>{"bert.embeddings.position_ids", "bert.pooler.dense.weight",
                                                  "bert.pooler.dense.bias", "cls.predictions.bias"}));
}

TEST(Checkpoint, AcceptsLegacyGammaBetaLayerNormNames) {
  const fs::path dir = edited_copy([](std::vector<OutputTensor>& t) {
    named(t, "bert.embeddings.LayerNorm.weight").name = "bert.embeddings.LayerNorm.gamma";
    named(t, "bert.embeddings.LayerNorm.bias").name = "bert.embeddings.LayerNorm.beta";
  });
  const Checkpoint ck = load_checkpoint(dir);
  const Checkpoint original = load_checkpoint(test::fixture("tiny-prefixed"));
  EXPECT_EQ(ck.weights.embeddings_ln_g.values, original.weights.embeddings_ln_g.values);
}

TEST(Checkpoint, MissingTensorIsNamed) {
  const fs::path dir = edited_copy([](std::vector<OutputTensor>& t) {
    std::erase_if(t, [](const OutputTensor& x) { return x.name == "bert.encoder.layer.1.output.dense.bias"; });
  });
  expect_input_error(dir, "model.safetensors", "missing tensor bert.encoder.layer.1.output.dense.bias");
}

TEST(Checkpoint, WrongShapeIsNamedWithBothShapes) {
  const fs::path dir = edited_copy([](std::vector<OutputTensor>& t) {
    OutputTensor& q = named(t, "bert.encoder.layer.0.attention.self.query.bias");
    q.shape = {16};
    q.values.resize(16);
  });
  expect_input_error(dir, "model.safetensors",
                     "tensor bert.encoder.layer.0.attention.self.query.bias has shape [16], "
                     "config.json implies [32]");
}

TEST(Checkpoint, NanOrInfInAWeightIsNamed) {
  for (double bad : {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()}) {
    const fs::path dir = edited_copy([bad](std::vector<OutputTensor>& t) {
      named(t, "bert.encoder.layer.1.attention.self.value.weight").values[5] = bad;
    });
    expect_input_error(dir, "model.safetensors",
                       "tensor bert.encoder.layer.1.attention.self.value.weight holds a non-finite value");
  }
}

TEST(Checkpoint, IntegerWeightIsRejected) {
  const fs::path dir = edited_copy([](std::vector<OutputTensor>& t) {
    OutputTensor& b = named(t, "bert.embeddings.LayerNorm.bias");
    b.dtype = DType::I64;
    for (double& v : b.values) v = 0;
  });
  expect_input_error(dir, "model.safetensors", "has dtype I64");
}

TEST(Checkpoint, VocabSizeMustAgreeWithConfig) {
  const fs::path dir = edited_copy([](std::vector<OutputTensor>&) {});
  std::string vocab = test::read_file(dir / "vocab.txt");
  test::write_file(dir / "vocab.txt", vocab + "extra-token\n");
  expect_input_error(dir, "vocab.txt", "has 30523 tokens but config.json says vocab_size 30522");
}

TEST(Checkpoint, MissingDirectoryOrFileIsNamed) {
  expect_input_error("/nonexistent/checkpoint", "checkpoint", "not a checkpoint directory");
  const fs::path dir = edited_copy([](std::vector<OutputTensor>&) {});
  fs::remove(dir / "config.json");
  expect_input_error(dir, "config.json", "cannot open");
}

TEST(Config, RejectsMissingKeysBadSizesAndUnknownActivations) {
  const fs::path dir = test::temp_dir("config");
  const std::string good = test::read_file(test::fixture("tiny-prefixed") / "config.json");
  auto config_error = [&](const std::string& from, const std::string& to) -> std::string {
    std::string text = good;
    const size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    text.replace(at, from.size(), to);
    test::write_file(dir / "config.json", text);
    try {
      load_config(dir / "config.json");
    } catch (const InputError& e) {
      EXPECT_EQ(e.file(), dir / "config.json");
      return e.problem();
    }
    return "no error";
  };
  EXPECT_EQ(config_error("\"hidden_size\": 32", "\"hidden_size_x\": 32"), "missing key \"hidden_size\"");
  EXPECT_EQ(config_error("\"hidden_size\": 32", "\"hidden_size\": 30"),
            "hidden_size 30 is not divisible by num_attention_heads 4");
  EXPECT_EQ(config_error("\"hidden_act\": \"gelu\"", "\"hidden_act\": \"swish\""),
            "unknown hidden_act \"swish\" (known: gelu, gelu_new, gelu_pytorch_tanh, relu)");
  EXPECT_EQ(config_error("\"vocab_size\": 30522", "\"vocab_size\": 99999999999"),
            "\"vocab_size\" = 99999999999 is outside 1..4194304");
  EXPECT_EQ(config_error("\"hidden_size\": 32", "\"hidden_size\": \"32\""), "\"hidden_size\" must be an integer");
  EXPECT_EQ(config_error("\"layer_norm_eps\": 1e-12", "\"layer_norm_eps\": -1"),
            "layer_norm_eps -1 is outside (0, 1)");
  EXPECT_EQ(config_error(good, "[1, 2]"), "config must be a JSON object");
  EXPECT_NE(config_error("{", "{{").find("not valid JSON"), std::string::npos);
}

TEST(Sha256, MatchesTheStandardTestVector) {
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}
