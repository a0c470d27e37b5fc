// load_config on arbitrary bytes; a config it accepts must survive config_to_json and back unchanged.
#include "fuzz/memory_file.h"
#include "model/config.h"
#include "model/error.h"

using namespace lenscheck;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static fuzz::MemoryFile file;
  BertConfig c;
  try {
    c = load_config(file.write(data, size));
  } catch (const InputError&) {
    return 0;
  }
  c.activation();  // throws (and so crashes) on an activation that validate_config let through
  fuzz::require(c.head_dim() * c.num_attention_heads == c.hidden_size);
  const std::string json = config_to_json(c);
  const BertConfig again = load_config(file.write(reinterpret_cast<const uint8_t*>(json.data()), json.size()));
  fuzz::require(again.hidden_size == c.hidden_size && again.num_hidden_layers == c.num_hidden_layers &&
                again.num_attention_heads == c.num_attention_heads &&
                again.intermediate_size == c.intermediate_size && again.hidden_act == c.hidden_act &&
                again.layer_norm_eps == c.layer_norm_eps &&
                again.max_position_embeddings == c.max_position_embeddings &&
                again.type_vocab_size == c.type_vocab_size && again.vocab_size == c.vocab_size);
  return 0;
}
