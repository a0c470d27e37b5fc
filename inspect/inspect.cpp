#include "inspect/inspect.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "common/report_file.h"

namespace lenscheck {

namespace {

constexpr double kOutlierSds = 6;
constexpr double kSdPerMad = 1.4826;  // a Gaussian's sd is 1.4826 times its median absolute deviation

bool is_layer_norm_gain(const std::string& name) {
  const std::string suffix = "LayerNorm.weight";
  return name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

double median_of(std::vector<float> values) {
  const size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid), values.end());
  if (values.size() % 2 == 1) return values[mid];
  const float below = *std::max_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid));
  return (static_cast<double>(below) + values[mid]) / 2;
}

size_t parameter_count(const std::vector<ParamStats>& stats) {
  size_t n = 0;
  for (const ParamStats& p : stats) n += p.count;
  return n;
}

// The special tokens by name, with their ids in this vocabulary.
std::vector<std::pair<const char*, int>> special_ids(const Vocab& v) {
  return {{"[PAD]", v.pad_id()}, {"[UNK]", v.unk_id()}, {"[CLS]", v.cls_id()}, {"[SEP]", v.sep_id()},
          {"[MASK]", v.mask_id()}};
}

std::string yes_no(bool b) { return b ? "yes" : "no"; }

// What the tokenizer applies, each setting with the file it came from.
std::string tokenizer_text(const TokenizerSettings& t) {
  const auto line = [](const char* what, const std::string& value, const std::string& from) {
    return fmt::format("  {}: {} ({})\n", what, value, from);
  };
  std::string s = "tokenizer:\n";
  s += line("lower case", yes_no(t.lower_case.value), t.lower_case.from);
  s += line("strip accents",
            t.strip_accents.value ? yes_no(*t.strip_accents.value) : yes_no(t.strips_accents()) + ", as lower case",
            t.strip_accents.from);
  s += line("split Chinese characters", yes_no(t.split_chinese_chars.value), t.split_chinese_chars.from);
  s += line("lower-case the whole text first (sentence-transformers)", yes_no(t.lower_whole_text.value),
            t.lower_whole_text.from);
  s += line("max characters a word", std::to_string(t.max_input_chars_per_word.value), t.max_input_chars_per_word.from);
  s += line("max tokens a sentence, [CLS] and [SEP] included", std::to_string(t.max_tokens.value), t.max_tokens.from);
  return s;
}

template <class T>
nlohmann::ordered_json setting_json(const Setting<T>& s) {
  return {{"value", s.value}, {"from", s.from}};
}

}  // namespace

ParamStats param_stats(const std::string& name, const Param& param) {
  ParamStats s{.name = name, .shape = param.shape, .count = param.values.size()};
  if (param.values.empty()) return s;
  double sum = 0;
  for (float v : param.values) {
    sum += v;
    s.max_abs = std::max(s.max_abs, std::abs(static_cast<double>(v)));
  }
  s.mean = sum / static_cast<double>(s.count);
  double squares = 0;
  for (float v : param.values) squares += (v - s.mean) * (v - s.mean);
  s.sd = std::sqrt(squares / static_cast<double>(s.count));
  if (is_layer_norm_gain(name)) {
    const double median = median_of(param.values);
    std::vector<float> deviations;
    for (float v : param.values) deviations.push_back(static_cast<float>(std::abs(v - median)));
    // With a MAD of 0 (gains mostly equal, as initialised) every gain off the median is reported.
    const double threshold = kOutlierSds * kSdPerMad * median_of(deviations);
    for (size_t i = 0; i < param.values.size(); ++i)
      if (std::abs(param.values[i] - median) > threshold) s.gain_outliers.push_back({i, param.values[i]});
  }
  return s;
}

std::vector<ParamStats> parameter_stats(const Checkpoint& ck) {
  std::vector<ParamStats> stats;
  for_each_param(ck.config, ck.weights,
                 [&](const std::string& name, const Param& p) { stats.push_back(param_stats(name, p)); });
  return stats;
}

std::string inspection_text(const Checkpoint& ck, const std::vector<ParamStats>& stats) {
  const BertConfig& c = ck.config;
  std::string s = fmt::format("checkpoint {}\n  found as {}\n  weights: {} (SHA-256 {})\n", ck.dir.string(),
                              ck.dir_from, ck.weights_file.filename().string(), ck.model_sha256);
  s += fmt::format("config: {} layers, hidden {}, {} heads of {}, intermediate {}, {}, LayerNorm eps {:g}, "
                   "{} positions, {} token types, vocab {}\n",
                   c.num_hidden_layers, c.hidden_size, c.num_attention_heads, c.head_dim(), c.intermediate_size,
                   c.hidden_act, c.layer_norm_eps, c.max_position_embeddings, c.type_vocab_size, c.vocab_size);
  s += fmt::format("parameters: {} in {} tensors, names {}\n", parameter_count(stats), stats.size(),
                   ck.prefix.empty() ? "without a prefix" : "under \"" + ck.prefix + "\"");
  for (const auto& [dtype, n] : ck.stored_dtypes)
    s += fmt::format("  {} tensors stored as {}{}\n", n, dtype,
                     dtype == "F32" ? "" : ", converted to the working precision F32");
  s += fmt::format("ignored: {}\n", ck.ignored.empty() ? "nothing" : fmt::format("{} tensor(s)", ck.ignored.size()));
  for (const std::string& name : ck.ignored) s += fmt::format("  {}\n", name);
  s += fmt::format("vocabulary: {} tokens from {};", ck.vocab.size(), ck.vocab_file.string());
  for (const auto& [token, id] : special_ids(ck.vocab)) s += fmt::format(" {} {}", token, id);
  s += '\n';
  s += tokenizer_text(ck.tokenizer);
  s += fmt::format("notes: {}\n", ck.notes.empty() ? "none" : "");
  for (const std::string& note : ck.notes) s += fmt::format("  {}\n", note);
  s += fmt::format("LayerNorm gain outliers (more than {:g} robust sd, {} × MAD, from the parameter's median "
                   "gain):", kOutlierSds, kSdPerMad);
  size_t outliers = 0;
  for (const ParamStats& p : stats)
    for (const GainOutlier& o : p.gain_outliers) {
      s += fmt::format("\n  {} dim {}: {:.4g}", p.name, o.dim, o.gain);
      ++outliers;
    }
  s += outliers == 0 ? " none\n" : "\n";
  s += fmt::format("{:<48} {:>12} {:>11} {:>10} {:>10}\n", "parameter", "shape", "mean", "sd", "max |x|");
  for (const ParamStats& p : stats)
    s += fmt::format("{:<48} {:>12} {:>11.3e} {:>10.3e} {:>10.3e}\n", p.name,
                     fmt::format("{}", fmt::join(p.shape, "×")), p.mean, p.sd, p.max_abs);
  return s;
}

void write_inspection_json(const Checkpoint& ck, const std::vector<ParamStats>& stats,
                           const std::filesystem::path& file) {
  const BertConfig& c = ck.config;
  nlohmann::ordered_json j;
  j["dir"] = ck.dir.string();
  j["dir_from"] = ck.dir_from;
  j["weights_file"] = ck.weights_file.filename().string();
  j["model_sha256"] = ck.model_sha256;
  j["config"] = {{"num_hidden_layers", c.num_hidden_layers}, {"hidden_size", c.hidden_size},
                 {"num_attention_heads", c.num_attention_heads}, {"intermediate_size", c.intermediate_size},
                 {"hidden_act", c.hidden_act}, {"layer_norm_eps", c.layer_norm_eps},
                 {"max_position_embeddings", c.max_position_embeddings}, {"type_vocab_size", c.type_vocab_size},
                 {"vocab_size", c.vocab_size}};
  j["parameters"] = parameter_count(stats);
  j["prefix"] = ck.prefix;
  j["stored_dtypes"] = ck.stored_dtypes;
  j["ignored"] = ck.ignored;
  j["vocabulary"]["size"] = ck.vocab.size();
  j["vocabulary"]["file"] = ck.vocab_file.string();
  for (const auto& [token, id] : special_ids(ck.vocab)) j["vocabulary"]["special_ids"][token] = id;
  const TokenizerSettings& t = ck.tokenizer;
  j["tokenizer"] = {{"lower_case", setting_json(t.lower_case)},
                    {"strip_accents", {{"value", t.strip_accents.value ? nlohmann::ordered_json(*t.strip_accents.value)
                                                                       : nlohmann::ordered_json()},
                                       {"applied", t.strips_accents()}, {"from", t.strip_accents.from}}},
                    {"split_chinese_chars", setting_json(t.split_chinese_chars)},
                    {"lower_whole_text", setting_json(t.lower_whole_text)},
                    {"max_input_chars_per_word", setting_json(t.max_input_chars_per_word)},
                    {"max_tokens", setting_json(t.max_tokens)}};
  j["notes"] = ck.notes;
  j["gain_outlier_rule"] = {{"robust_sds", kOutlierSds}, {"sd_per_mad", kSdPerMad}};
  j["tensors"] = nlohmann::ordered_json::array();
  for (const ParamStats& p : stats) {
    nlohmann::ordered_json t = {{"name", p.name}, {"shape", p.shape}, {"mean", p.mean}, {"sd", p.sd},
                                {"max_abs", p.max_abs}};
    if (is_layer_norm_gain(p.name)) {
      t["gain_outliers"] = nlohmann::ordered_json::array();
      for (const GainOutlier& o : p.gain_outliers) t["gain_outliers"].push_back({{"dim", o.dim}, {"gain", o.gain}});
    }
    j["tensors"].push_back(t);
  }
  write_text_file(file, j.dump(1) + "\n");
}

}  // namespace lenscheck
