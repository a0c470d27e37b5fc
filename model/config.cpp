#include "model/config.h"

#include <fmt/format.h>

#include <fstream>
#include <tuple>
#include <nlohmann/json.hpp>

#include "model/error.h"

namespace lenscheck {

namespace {

// Sizes beyond these are not a BERT we can hold; refusing them guards every allocation downstream.
constexpr long kMaxDimension = 1 << 16;
constexpr long kMaxVocab = 1 << 22;
constexpr long kMaxLayers = 256;

int read_int(const nlohmann::json& j, const char* key, long max, const std::filesystem::path& file) {
  if (!j.contains(key)) throw InputError(file, fmt::format("missing key \"{}\"", key));
  const auto& v = j.at(key);
  if (!v.is_number_integer()) throw InputError(file, fmt::format("\"{}\" must be an integer", key));
  long value = v.get<long>();
  if (value < 1 || value > max)
    throw InputError(file, fmt::format("\"{}\" = {} is outside 1..{}", key, value, max));
  return static_cast<int>(value);
}

}  // namespace

Activation BertConfig::activation() const {
  if (hidden_act == "gelu") return Activation::gelu_erf;
  if (hidden_act == "gelu_new" || hidden_act == "gelu_pytorch_tanh") return Activation::gelu_tanh;
  if (hidden_act == "relu") return Activation::relu;
  throw std::invalid_argument("unknown hidden_act " + hidden_act);
}

void validate_config(const BertConfig& c, const std::filesystem::path& file) {
  // The sizes read_int bounds, checked again for a config made otherwise (read from an ONNX graph).
  for (const auto& [key, value, max] : {std::tuple{"hidden_size", c.hidden_size, kMaxDimension},
                                        {"num_hidden_layers", c.num_hidden_layers, kMaxLayers},
                                        {"num_attention_heads", c.num_attention_heads, kMaxDimension},
                                        {"intermediate_size", c.intermediate_size, kMaxDimension * 4},
                                        {"max_position_embeddings", c.max_position_embeddings, kMaxDimension},
                                        {"type_vocab_size", c.type_vocab_size, kMaxDimension},
                                        {"vocab_size", c.vocab_size, kMaxVocab}})
    if (value < 1 || value > max)
      throw InputError(file, fmt::format("\"{}\" = {} is outside 1..{}", key, value, max));
  if (c.hidden_size % c.num_attention_heads != 0)
    throw InputError(file, fmt::format("hidden_size {} is not divisible by num_attention_heads {}",
                                       c.hidden_size, c.num_attention_heads));
  if (c.hidden_act != "gelu" && c.hidden_act != "gelu_new" && c.hidden_act != "gelu_pytorch_tanh" &&
      c.hidden_act != "relu")
    throw InputError(file, fmt::format("unknown hidden_act \"{}\" (known: gelu, gelu_new, "
                                       "gelu_pytorch_tanh, relu)", c.hidden_act));
  if (!(c.layer_norm_eps > 0 && c.layer_norm_eps < 1))
    throw InputError(file, fmt::format("layer_norm_eps {} is outside (0, 1)", c.layer_norm_eps));
  // Largest single weight: the word embeddings, or the FFN matrices.
  const double largest = std::max(double(c.vocab_size) * c.hidden_size,
                                  double(c.intermediate_size) * c.hidden_size);
  if (largest > 4e9)
    throw InputError(file, fmt::format("a weight of {:.3g} elements is too large to load", largest));
}

BertConfig load_config(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) throw InputError(file, "cannot open config.json");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {  // parse_error, and out_of_range for a number like 1e400
    throw InputError(file, fmt::format("not valid JSON: {}", e.what()));
  }
  if (!j.is_object()) throw InputError(file, "config must be a JSON object");
  if (j.contains("model_type") && j["model_type"] != "bert")
    throw InputError(file, fmt::format("model_type {} is not \"bert\"", j["model_type"].dump()));

  BertConfig c;
  c.hidden_size = read_int(j, "hidden_size", kMaxDimension, file);
  c.num_hidden_layers = read_int(j, "num_hidden_layers", kMaxLayers, file);
  c.num_attention_heads = read_int(j, "num_attention_heads", kMaxDimension, file);
  c.intermediate_size = read_int(j, "intermediate_size", kMaxDimension * 4, file);
  c.max_position_embeddings = read_int(j, "max_position_embeddings", kMaxDimension, file);
  c.type_vocab_size = read_int(j, "type_vocab_size", kMaxDimension, file);
  c.vocab_size = read_int(j, "vocab_size", kMaxVocab, file);
  if (!j.contains("hidden_act") || !j["hidden_act"].is_string())
    throw InputError(file, "missing string key \"hidden_act\"");
  c.hidden_act = j["hidden_act"].get<std::string>();
  if (!j.contains("layer_norm_eps") || !j["layer_norm_eps"].is_number())
    throw InputError(file, "missing number key \"layer_norm_eps\"");
  c.layer_norm_eps = j["layer_norm_eps"].get<double>();
  validate_config(c, file);
  return c;
}

std::string config_to_json(const BertConfig& c) {
  nlohmann::ordered_json j;
  j["architectures"] = {"BertForMaskedLM"};
  j["model_type"] = "bert";
  j["hidden_size"] = c.hidden_size;
  j["num_hidden_layers"] = c.num_hidden_layers;
  j["num_attention_heads"] = c.num_attention_heads;
  j["intermediate_size"] = c.intermediate_size;
  j["hidden_act"] = c.hidden_act;
  j["hidden_dropout_prob"] = 0.1;
  j["attention_probs_dropout_prob"] = 0.1;
  j["layer_norm_eps"] = c.layer_norm_eps;
  j["max_position_embeddings"] = c.max_position_embeddings;
  j["type_vocab_size"] = c.type_vocab_size;
  j["vocab_size"] = c.vocab_size;
  j["initializer_range"] = 0.02;
  j["pad_token_id"] = 0;
  j["position_embedding_type"] = "absolute";
  return j.dump(2) + "\n";
}

}  // namespace lenscheck
