#pragma once
// config.json of a Hugging Face BERT checkpoint: the keys the encoder needs, validated.
#include <filesystem>
#include <string>

namespace lenscheck {

enum class Activation { gelu_erf, gelu_tanh, relu };

struct BertConfig {
  int hidden_size = 0;
  int num_hidden_layers = 0;
  int num_attention_heads = 0;
  int intermediate_size = 0;
  std::string hidden_act;
  double layer_norm_eps = 0;
  int max_position_embeddings = 0;
  int type_vocab_size = 0;
  int vocab_size = 0;

  int head_dim() const { return hidden_size / num_attention_heads; }
  Activation activation() const;
};

BertConfig load_config(const std::filesystem::path& file);
std::string config_to_json(const BertConfig& config);  // as HF writes it, for generated fixtures
// Throws InputError(file, ...) when the sizes are inconsistent or absurd.
void validate_config(const BertConfig& config, const std::filesystem::path& file);

}  // namespace lenscheck
