// `lenscheck inspect`: what a checkpoint holds as loaded, and the statistics a user checks it by.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "inspect/inspect.h"
#include "tests/test_support.h"

using namespace lenscheck;

namespace {

Param param(std::vector<float> values) {
  return {.shape = {static_cast<int64_t>(values.size())}, .values = std::move(values)};
}

}  // namespace

TEST(Inspect, ParameterStatisticsAreThePopulationsMeanSpreadAndLargestMagnitude) {
  const ParamStats s = param_stats("encoder.layer.0.output.dense.bias", param({1, -3, 2, 4}));
  EXPECT_EQ(s.count, 4u);
  EXPECT_EQ(s.shape, (std::vector<int64_t>{4}));
  EXPECT_DOUBLE_EQ(s.mean, 1);
  EXPECT_DOUBLE_EQ(s.sd, std::sqrt((0 + 16 + 1 + 9) / 4.0));
  EXPECT_DOUBLE_EQ(s.max_abs, 4);
  EXPECT_TRUE(s.gain_outliers.empty());
}

TEST(Inspect, AGainFarOutsideTheRobustSpreadIsAnOutlierAndATailIsNot) {
  // Median 1.025, MAD 0.075: the bound is 6 × 1.4826 × 0.075 ≈ 0.667 from the median.
  const std::string gain = "encoder.layer.1.attention.output.LayerNorm.weight";
  const ParamStats far = param_stats(gain, param({0.9f, 1.0f, 1.1f, 0.95f, 1.05f, 1.8f}));
  ASSERT_EQ(far.gain_outliers.size(), 1u);
  EXPECT_EQ(far.gain_outliers[0].dim, 5u);
  EXPECT_FLOAT_EQ(static_cast<float>(far.gain_outliers[0].gain), 1.8f);
  EXPECT_TRUE(param_stats(gain, param({0.9f, 1.0f, 1.1f, 0.95f, 1.05f, 1.6f})).gain_outliers.empty());
  // Only LayerNorm gains are searched: the same values as a bias have none.
  EXPECT_TRUE(param_stats("encoder.layer.1.attention.output.LayerNorm.bias",
                          param({0.9f, 1.0f, 1.1f, 0.95f, 1.05f, 1.8f})).gain_outliers.empty());
}

TEST(Inspect, GainsAsInitialisedReportEveryGainThatMoved) {
  // All ones but two: the MAD is 0, so any gain off the median is reported.
  const ParamStats s = param_stats("embeddings.LayerNorm.weight", param({1, 1, 1, 1.01f, 1, 1, 5, 1}));
  ASSERT_EQ(s.gain_outliers.size(), 2u);
  EXPECT_EQ(s.gain_outliers[0].dim, 3u);
  EXPECT_EQ(s.gain_outliers[1].dim, 6u);
}

TEST(Inspect, TheCliReportsWhatTheLoaderConvertedAndIgnored) {
  const auto dir = test::temp_dir("inspect");
  const auto json_file = dir / "inspect.json";
  const test::CommandResult r = test::run_cli("inspect --model " + test::quoted(test::fixture("tiny-prefixed")) +
                                              " --json " + test::quoted(json_file));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("37 tensors stored as F64, converted to the working precision F32"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("ignored: 4 tensor(s)\n  bert.embeddings.position_ids\n"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("[CLS] 101 [SEP] 102"), std::string::npos) << r.output;

  const nlohmann::json j = nlohmann::json::parse(test::read_file(json_file));
  EXPECT_EQ(j["prefix"], "bert.");
  EXPECT_EQ(j["stored_dtypes"], nlohmann::json({{"F64", 37}}));
  EXPECT_EQ(j["ignored"].size(), 4u);
  EXPECT_EQ(j["vocabulary"]["size"], 30522);
  EXPECT_EQ(j["vocabulary"]["special_ids"]["[MASK]"], 103);
  EXPECT_EQ(j["config"]["hidden_size"], 32);
  // Every parameter of the config's shape, counted once: embeddings, then per layer Q, K, V, O with
  // biases, two LayerNorms, the feed-forward pair.
  const int64_t D = 32, I = 64, per_layer = 4 * (D * D + D) + 2 * 2 * D + (I * D + I) + (D * I + D);
  EXPECT_EQ(j["parameters"], (30522 + 64 + 2) * D + 2 * D + 2 * per_layer);
  ASSERT_EQ(j["tensors"].size(), 37u);
  const Checkpoint ck = load_checkpoint(test::fixture("tiny-prefixed"));
  const ParamStats gain = param_stats("embeddings.LayerNorm.weight", ck.weights.embeddings_ln_g);
  EXPECT_EQ(j["tensors"][3]["name"], "embeddings.LayerNorm.weight");
  EXPECT_DOUBLE_EQ(j["tensors"][3]["sd"].get<double>(), gain.sd);
  EXPECT_EQ(j["tensors"][3]["gain_outliers"], nlohmann::json::array());
}

TEST(Inspect, AMissingCheckpointIsBadInputNamingIt) {
  const auto missing = test::temp_dir("missing") / "no-such-model";
  const test::CommandResult r = test::run_cli("inspect --model " + test::quoted(missing));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find(missing.string() + ": not a checkpoint directory"), std::string::npos) << r.output;
}

TEST(Inspect, ShowsTheFolderVocabularyAndEachTokenizerSettingWithItsFile) {
  const auto minilm = std::filesystem::path(LENSCHECK_BERT_VOCAB).parent_path();
  const auto json_file = test::temp_dir("inspect") / "inspect.json";
  const test::CommandResult r =
      test::run_cli("inspect --model " + test::quoted(minilm) + " --json " + test::quoted(json_file));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string st_config = (minilm / "sentence_bert_config.json").string();
  const std::string hf_config = (minilm / "tokenizer_config.json").string();
  const std::vector<std::string> lines = {
      "found as modules.json: the Transformer module is the folder itself (path \"\")\n",
      "vocabulary: 30522 tokens from " + (minilm / "tokenizer.json").string() + ";",
      "  lower case: yes (do_lower_case in " + hf_config + ")\n",
      "  strip accents: yes, as lower case (strip_accents in " + hf_config + ")\n",
      "  lower-case the whole text first (sentence-transformers): no (do_lower_case in " + st_config + ")\n",
      "  max tokens a sentence, [CLS] and [SEP] included: 256 (max_seq_length in " + st_config + ")\n",
      "vocab.txt holds the same tokens with the same ids\n"};
  for (const std::string& line : lines) EXPECT_NE(r.output.find(line), std::string::npos) << line << "\n" << r.output;

  const nlohmann::json j = nlohmann::json::parse(test::read_file(json_file));
  EXPECT_EQ(j["vocabulary"]["file"], (minilm / "tokenizer.json").string());
  EXPECT_EQ(j["tokenizer"]["strip_accents"],
            nlohmann::json({{"value", nullptr}, {"applied", true}, {"from", "strip_accents in " + hf_config}}));
  EXPECT_EQ(j["tokenizer"]["max_tokens"]["value"], 256);
  EXPECT_EQ(j["tokenizer"]["max_tokens"]["from"], "max_seq_length in " + st_config);
}
