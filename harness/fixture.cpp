#include "harness/fixture.h"

#include <fmt/format.h>

#include "harness/planted.h"
#include "harness/verify_report.h"
#include "model/safetensors.h"

namespace lenscheck {

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

BertConfig fixture_config(bool tiny, int vocab_size) {
  BertConfig c;
  c.hidden_size = tiny ? 32 : 256;
  c.num_hidden_layers = tiny ? 2 : 4;
  c.num_attention_heads = 4;
  c.intermediate_size = tiny ? 64 : 1024;
  c.hidden_act = "gelu";
  c.layer_norm_eps = 1e-12;
  c.max_position_embeddings = tiny ? 64 : 512;
  c.type_vocab_size = 2;
  c.vocab_size = vocab_size;
  return c;
}

BertWeights bert_init_weights(const BertConfig& config, uint64_t seed) {
  return seeded_weights(config, seed, [](const std::string& name, const std::vector<int64_t>&) {
    return Spread{ends_with(name, "LayerNorm.weight") ? 1.0 : 0.0, 0.02};
  });
}

void make_fixture(const FixtureOptions& o) {
  const std::vector<std::string> tokens = vocab_from_sentencepiece_marking(o.vocab_json);
  const Vocab vocab = Vocab::from_tokens(tokens, o.vocab_json);  // validates the conversion
  const int vocab_size = static_cast<int>(vocab.size());
  const BertConfig config = o.planted_sink ? planted_config(vocab_size) : fixture_config(o.tiny, vocab_size);
  BertWeights weights = o.planted_sink ? PlantedSink(config, o.seed).weights(vocab.cls_id(), vocab.sep_id())
                                       : bert_init_weights(config, o.seed);

  const std::string prefix = o.prefixed ? "bert." : "";
  const DType dtype = o.float64 ? DType::F64 : DType::F32;
  std::vector<OutputTensor> out;
  for_each_param(config, weights, [&](const std::string& name, Param& p, const std::vector<int64_t>&) {
    out.push_back({prefix + name, dtype, p.shape, std::vector<double>(p.values.begin(), p.values.end())});
  });
  if (o.prefixed) {
    // What a BertForMaskedLM checkpoint also holds and the encoder must ignore.
    const int64_t D = config.hidden_size;
    std::vector<double> positions;
    for (int i = 0; i < config.max_position_embeddings; ++i) positions.push_back(i);
    out.push_back({"bert.embeddings.position_ids", DType::I64, {1, config.max_position_embeddings}, positions});
    out.push_back({"bert.pooler.dense.weight", dtype, {D, D}, std::vector<double>(size_t(D * D), 0.01)});
    out.push_back({"bert.pooler.dense.bias", dtype, {D}, std::vector<double>(size_t(D), 0.0)});
    out.push_back({"cls.predictions.bias", dtype, {config.vocab_size},
                   std::vector<double>(size_t(config.vocab_size), 0.0)});
  }
  std::filesystem::create_directories(o.out);
  write_safetensors(o.out / "model.safetensors", out,
                    {{"format", "pt"},
                     {"generator", fmt::format("lenscheck make-fixture --seed {}{}", o.seed,
                                               o.planted_sink ? " --planted-sink" : "")}});
  write_text_file(o.out / "config.json", config_to_json(config));
  write_vocab(o.out / "vocab.txt", tokens);
}

}  // namespace lenscheck
