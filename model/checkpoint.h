#pragma once
// A Hugging Face BERT checkpoint directory: config.json, vocab.txt and/or tokenizer.json, and
// model.safetensors or, without it, pytorch_model.bin (torch.save's zip archive); or a
// sentence-transformers folder whose modules.json names the Transformer module's folder that holds them
// (model/tokenizer_files.h).
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "model/config.h"
#include "model/tokenizer.h"
#include "model/vocab.h"

namespace lenscheck {

struct Param {
  std::vector<int64_t> shape;
  std::vector<float> values;  // row-major, as stored; linear weights are [out, in] like torch.nn.Linear
};

struct LayerWeights {
  Param query_w, query_b, key_w, key_b, value_w, value_b;
  Param attention_out_w, attention_out_b, attention_ln_g, attention_ln_b;
  Param intermediate_w, intermediate_b, output_w, output_b, output_ln_g, output_ln_b;
};

struct BertWeights {
  Param word_embeddings, position_embeddings, token_type_embeddings, embeddings_ln_g, embeddings_ln_b;
  std::vector<LayerWeights> layers;
};

// Visits every parameter under its Hugging Face name (without the "bert." prefix) with the shape the
// config implies. The one table of names: the loader, the fixture writer and the mutants all use it.
void for_each_param(const BertConfig& config, BertWeights& weights,
                    const std::function<void(const std::string& name, Param& param,
                                             const std::vector<int64_t>& shape)>& visit);
// The same table, read only, on weights whose layers the config has already sized (a loaded checkpoint's).
void for_each_param(const BertConfig& config, const BertWeights& weights,
                    const std::function<void(const std::string& name, const Param& param)>& visit);

// Every parameter drawn, in for_each_param's order, as mean + sd * N(0, 1) from SeededRng(seed), with
// mean and sd chosen per parameter: the one way generated checkpoints get their weights.
struct Spread {
  double mean, sd;
};
BertWeights seeded_weights(const BertConfig& config, uint64_t seed,
                           const std::function<Spread(const std::string& name, const std::vector<int64_t>& shape)>& spread);

// Sets the gain of `dims` dimensions of every LayerNorm (embeddings' and each layer's two) to `gain`:
// the outlier dimensions of trained BERTs, high-magnitude LayerNorm parameters that sit in the same
// positions throughout the model (Kovaleva et al., "BERT Busters", Findings of ACL 2021). The
// dimensions are drawn from `seed`.
void plant_outlier_dimensions(const BertConfig& config, BertWeights& weights, int dims, double gain, uint64_t seed);

struct Checkpoint {
  std::filesystem::path dir;  // the folder holding config.json: the one given, or its Transformer module's
  std::string dir_from;       // how dir was found (modules.json or not), for `lenscheck inspect`
  BertConfig config;
  Vocab vocab;
  std::filesystem::path vocab_file;  // tokenizer.json or vocab.txt
  TokenizerSettings tokenizer;       // build every tokenizer of this checkpoint as BertTokenizer(vocab, tokenizer)
  BertWeights weights;
  std::filesystem::path weights_file;  // the file the weights came from: model.safetensors or pytorch_model.bin
  std::string model_sha256;            // of weights_file
  std::map<std::string, std::string> weights_metadata;  // model.safetensors' __metadata__; a torch archive has none
  std::vector<std::string> notes;      // what the loader ignored or converted, for the user to read
  // The same facts, for `lenscheck inspect`: the encoder's tensors by stored dtype (every one is read as
  // F32), the name prefix found ("bert." or none), and every tensor the encoder does not use.
  std::map<std::string, size_t> stored_dtypes;
  std::string prefix;
  std::vector<std::string> ignored;
};

// Throws InputError naming the file and the problem: missing files, tensors missing or of the wrong
// shape, NaN/Inf in a weight, a vocabulary whose size disagrees with config.json, a tokenizer lenscheck
// would not tokenize as Hugging Face does (model/tokenizer_files.h). Either weights file is read with
// the same checks.
Checkpoint load_checkpoint(const std::filesystem::path& folder);

}  // namespace lenscheck
