#include "model/checkpoint.h"

#include <algorithm>

#include <fmt/format.h>

#include <cmath>
#include <set>
#include <stdexcept>

#include "model/error.h"
#include "model/safetensors.h"
#include "model/seeded_rng.h"
#include "model/sha256.h"
#include "model/tokenizer_files.h"
#include "model/torch_archive.h"

namespace lenscheck {

void for_each_param(const BertConfig& c, BertWeights& w,
                    const std::function<void(const std::string&, Param&,
                                             const std::vector<int64_t>&)>& visit) {
  const int64_t D = c.hidden_size, I = c.intermediate_size;
  visit("embeddings.word_embeddings.weight", w.word_embeddings, {c.vocab_size, D});
  visit("embeddings.position_embeddings.weight", w.position_embeddings,
        {c.max_position_embeddings, D});
  visit("embeddings.token_type_embeddings.weight", w.token_type_embeddings, {c.type_vocab_size, D});
  visit("embeddings.LayerNorm.weight", w.embeddings_ln_g, {D});
  visit("embeddings.LayerNorm.bias", w.embeddings_ln_b, {D});
  w.layers.resize(static_cast<size_t>(c.num_hidden_layers));
  for (int l = 0; l < c.num_hidden_layers; ++l) {
    LayerWeights& L = w.layers[static_cast<size_t>(l)];
    const std::string p = fmt::format("encoder.layer.{}.", l);
    visit(p + "attention.self.query.weight", L.query_w, {D, D});
    visit(p + "attention.self.query.bias", L.query_b, {D});
    visit(p + "attention.self.key.weight", L.key_w, {D, D});
    visit(p + "attention.self.key.bias", L.key_b, {D});
    visit(p + "attention.self.value.weight", L.value_w, {D, D});
    visit(p + "attention.self.value.bias", L.value_b, {D});
    visit(p + "attention.output.dense.weight", L.attention_out_w, {D, D});
    visit(p + "attention.output.dense.bias", L.attention_out_b, {D});
    visit(p + "attention.output.LayerNorm.weight", L.attention_ln_g, {D});
    visit(p + "attention.output.LayerNorm.bias", L.attention_ln_b, {D});
    visit(p + "intermediate.dense.weight", L.intermediate_w, {I, D});
    visit(p + "intermediate.dense.bias", L.intermediate_b, {I});
    visit(p + "output.dense.weight", L.output_w, {D, I});
    visit(p + "output.dense.bias", L.output_b, {D});
    visit(p + "output.LayerNorm.weight", L.output_ln_g, {D});
    visit(p + "output.LayerNorm.bias", L.output_ln_b, {D});
  }
}

void for_each_param(const BertConfig& c, const BertWeights& w,
                    const std::function<void(const std::string&, const Param&)>& visit) {
  if (w.layers.size() != static_cast<size_t>(c.num_hidden_layers))
    throw std::logic_error(fmt::format("for_each_param: weights hold {} layers, the config {}", w.layers.size(),
                                       c.num_hidden_layers));
  // Sized layers make the table's only write (resizing them) a no-op, so the weights stay unchanged.
  for_each_param(c, const_cast<BertWeights&>(w),
                 [&](const std::string& name, Param& p, const std::vector<int64_t>&) { visit(name, p); });
}

BertWeights seeded_weights(const BertConfig& config, uint64_t seed,
                           const std::function<Spread(const std::string&, const std::vector<int64_t>&)>& spread) {
  SeededRng rng(seed);
  BertWeights w;
  for_each_param(config, w, [&](const std::string& name, Param& p, const std::vector<int64_t>& shape) {
    p.shape = shape;
    size_t n = 1;
    for (int64_t d : shape) n *= static_cast<size_t>(d);
    p.values.resize(n);
    const Spread s = spread(name, shape);
    for (float& v : p.values) v = static_cast<float>(s.mean + s.sd * rng.normal());
  });
  return w;
}

void plant_outlier_dimensions(const BertConfig& config, BertWeights& w, int dims, double gain, uint64_t seed) {
  const int hidden = config.hidden_size;
  if (dims < 0 || dims > hidden) throw std::invalid_argument("outlier dimensions outside 0..hidden_size");
  SeededRng rng(seed);
  std::vector<size_t> chosen;
  while (chosen.size() < size_t(dims)) {
    const size_t d = static_cast<size_t>(rng.next() % static_cast<uint64_t>(hidden));
    if (std::find(chosen.begin(), chosen.end(), d) == chosen.end()) chosen.push_back(d);
  }
  std::vector<Param*> gains = {&w.embeddings_ln_g};
  for (LayerWeights& L : w.layers) gains.insert(gains.end(), {&L.attention_ln_g, &L.output_ln_g});
  for (Param* g : gains)
    for (size_t d : chosen) g->values.at(d) = static_cast<float>(gain);
}

namespace {

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

// Checkpoints converted from TensorFlow name LayerNorm parameters gamma/beta; HF maps them too.
template <typename WeightsFile>
auto find_with_legacy_names(const WeightsFile& file, const std::string& name) -> decltype(file.find(name)) {
  if (auto e = file.find(name)) return e;
  for (auto [modern, legacy] : {std::pair{"LayerNorm.weight", "LayerNorm.gamma"},
                                std::pair{"LayerNorm.bias", "LayerNorm.beta"}}) {
    const std::string m = modern;
    if (name.size() > m.size() && name.compare(name.size() - m.size(), m.size(), m) == 0)
      return file.find(name.substr(0, name.size() - m.size()) + legacy);
  }
  return nullptr;
}

// The encoder's weights from either format's file into ck (below load_checkpoint).
template <typename WeightsFile>
void read_weights(const WeightsFile& file, Checkpoint& ck);

}  // namespace

Checkpoint load_checkpoint(const std::filesystem::path& folder) {
  if (!std::filesystem::is_directory(folder))
    throw InputError(folder, "not a checkpoint directory (expected config.json, vocab.txt or tokenizer.json, "
                             "model.safetensors or pytorch_model.bin)");
  Checkpoint ck;
  const TransformerFolder transformer = transformer_folder(folder);
  const std::filesystem::path& dir = ck.dir = transformer.dir;
  ck.dir_from = transformer.from;
  ck.config = load_config(dir / "config.json");
  CheckpointTokenizer tokenizer = load_tokenizer({.dir = dir, .sizes_from = dir / "config.json"}, ck.config);
  ck.vocab = std::move(tokenizer.vocab);
  ck.vocab_file = std::move(tokenizer.vocab_file);
  ck.tokenizer = std::move(tokenizer.settings);
  ck.notes = std::move(tokenizer.notes);
  // Hugging Face writes model.safetensors, and pytorch_model.bin where safetensors is not installed
  // (before transformers 4.35, its default): the safetensors file wins where both are.
  const auto safetensors = dir / "model.safetensors", torch_archive = dir / "pytorch_model.bin";
  if (std::filesystem::exists(safetensors) || !std::filesystem::exists(torch_archive)) {
    const SafetensorsFile file = SafetensorsFile::open(safetensors);
    read_weights(file, ck);
    ck.weights_metadata = file.metadata();
    ck.weights_file = safetensors;
  } else {
    read_weights(TorchArchive::open(torch_archive), ck);
    ck.weights_file = torch_archive;
  }
  ck.model_sha256 = sha256_file(ck.weights_file);
  return ck;
}

namespace {

// Both formats offer the same reading interface (entries with name, dtype and shape; find; read_f32), so
// both get the same checks.
template <typename WeightsFile>
void read_weights(const WeightsFile& file, Checkpoint& ck) {
  const std::filesystem::path& model_path = file.path();
  // BertForMaskedLM and friends save the encoder under "bert."; a bare BertModel does not.
  for (const auto& e : file.entries())
    if (starts_with(e.name, "bert.")) ck.prefix = "bert.";

  std::set<std::string> used;
  std::set<DType> converted;
  for_each_param(ck.config, ck.weights,
                 [&](const std::string& name, Param& param, const std::vector<int64_t>& shape) {
    const auto* e = find_with_legacy_names(file, ck.prefix + name);
    if (!e) throw InputError(model_path, fmt::format("missing tensor {}{}", ck.prefix, name));
    if (e->shape != shape)
      throw InputError(model_path, fmt::format("tensor {} has shape {}, config.json implies {}",
                                               e->name, shape_string(e->shape), shape_string(shape)));
    if (!is_floating(e->dtype))
      throw InputError(model_path, fmt::format("tensor {} has dtype {}; weights must be F32, F16, "
                                               "BF16 or F64", e->name, dtype_name(e->dtype)));
    if (e->dtype != DType::F32) converted.insert(e->dtype);
    ++ck.stored_dtypes[dtype_name(e->dtype)];
    param.shape = shape;
    param.values = file.read_f32(*e);
    for (size_t i = 0; i < param.values.size(); ++i)
      if (!std::isfinite(param.values[i]))
        throw InputError(model_path, fmt::format("tensor {} holds a non-finite value ({}) at flat "
                                                 "index {}", e->name, param.values[i], i));
    used.insert(e->name);
  });

  for (DType d : converted)
    ck.notes.push_back(fmt::format("{} weights converted to the working precision F32",
                                   dtype_name(d)));
  for (const auto& e : file.entries())
    if (!used.count(e.name)) ck.ignored.push_back(e.name);
  const std::vector<std::string>& ignored = ck.ignored;
  if (!ignored.empty())
    ck.notes.push_back(fmt::format("ignored {} tensor(s) the encoder does not use (heads, pooler, "
                                   "buffers): {}{}", ignored.size(),
                                   fmt::join(ignored.begin(),
                                             ignored.begin() + std::min<size_t>(ignored.size(), 4),
                                             ", "),
                                   ignored.size() > 4 ? ", ..." : ""));
}

}  // namespace

}  // namespace lenscheck
