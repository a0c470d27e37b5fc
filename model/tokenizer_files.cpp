#include "model/tokenizer_files.h"

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "model/error.h"

namespace lenscheck {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr std::array<const char*, 5> kBertSpecialTokens = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};

json read_json(const fs::path& file) {
  if (fs::is_directory(file)) throw InputError(file, "is a directory, not a file");
  std::ifstream in(file, std::ios::binary);
  if (!in) throw InputError(file, "cannot open for reading");
  try {
    return json::parse(in);
  } catch (const json::exception& e) {  // parse_error, and out_of_range for a number like 1e400
    throw InputError(file, fmt::format("not valid JSON: {}", e.what()));
  }
}

json read_json_object(const fs::path& file) {
  json j = read_json(file);
  if (!j.is_object()) throw InputError(file, "must be a JSON object");
  return j;
}

// `object[key]`, or null where `object` is no object or lacks the key: the files are checked field by
// field, and a missing or misplaced one is refused by the check, not by an exception of the parser's.
const json& field(const json& object, const char* key) {
  static const json null;
  if (!object.is_object()) return null;
  const auto it = object.find(key);
  return it == object.end() ? null : *it;
}

// `key` of `object` as a bool; `fallback` when it is absent.
bool bool_key(const json& object, const char* key, bool fallback, const fs::path& file) {
  if (!object.contains(key)) return fallback;
  if (!object[key].is_boolean()) throw InputError(file, fmt::format("\"{}\" must be true or false", key));
  return object[key].get<bool>();
}

// A count such as max_seq_length: a whole number of at least 1. HF writes "no limit" as 1e30, so a
// float is accepted when whole, and any value past size_t is no limit at all.
std::optional<size_t> count_key(const json& object, const char* key, const fs::path& file) {
  if (!object.contains(key) || object[key].is_null()) return std::nullopt;
  const json& v = object[key];
  const bool whole = v.is_number_unsigned() || (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>());
  if (!whole || v.get<double>() < 1)
    throw InputError(file, fmt::format("\"{}\" = {} is not a whole number of at least 1", key, v.dump()));
  if (v.is_number_unsigned()) return static_cast<size_t>(v.get<uint64_t>());
  return v.get<double>() >= 0x1p64 ? std::numeric_limits<size_t>::max() : static_cast<size_t>(v.get<double>());
}

// A special token as tokenizer_config.json writes it: a string, or an AddedToken object's "content".
std::string token_text(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (field(v, "content").is_string()) return field(v, "content").get<std::string>();
  return v.dump();
}

// A component's "type", or the component itself where it has none.
std::string type_of(const json& component) {
  const json& type = field(component, "type");
  return type.is_string() ? type.get<std::string>() : component.dump();
}

// ---------------------------------------------------------------- tokenizer.json

Vocab wordpiece_vocab(const json& vocab, const fs::path& file) {
  if (!vocab.is_object() || vocab.empty())
    throw InputError(file, "model.vocab must be a non-empty object of token: id");
  std::vector<std::string> tokens(vocab.size());
  std::vector<bool> taken(vocab.size());
  for (const auto& [token, id] : vocab.items()) {
    if (!id.is_number_unsigned() || id.get<uint64_t>() >= vocab.size())
      throw InputError(file, fmt::format("model.vocab: \"{}\" has id {}, not one of 0..{}", token, id.dump(),
                                         vocab.size() - 1));
    const size_t i = static_cast<size_t>(id.get<uint64_t>());
    if (taken[i])
      throw InputError(file, fmt::format("model.vocab: id {} is both \"{}\" and \"{}\"", i, tokens[i], token));
    // Vocab holds tokens as vocab.txt lines.
    if (token.find_first_of("\r\n") != std::string::npos)
      throw InputError(file, fmt::format("model.vocab: token of id {} contains a line break", i));
    taken[i] = true;
    tokens[i] = token;
  }
  return Vocab::from_tokens(std::move(tokens), file);
}

void check_wordpiece_model(const json& model, const fs::path& file) {
  if (type_of(model) != "WordPiece")
    throw InputError(file, fmt::format("model {} is not WordPiece: not a BERT tokenizer", type_of(model)));
  if (field(model, "unk_token") != "[UNK]")
    throw InputError(file, fmt::format("model.unk_token {} is not \"[UNK]\"", field(model, "unk_token").dump()));
  if (field(model, "continuing_subword_prefix") != "##")
    throw InputError(file, fmt::format("model.continuing_subword_prefix {} is not \"##\"",
                                       field(model, "continuing_subword_prefix").dump()));
}

void check_bert_normalizer(const json& normalizer, TokenizerJson& t, const fs::path& file) {
  if (type_of(normalizer) != "BertNormalizer")
    throw InputError(file, fmt::format("normalizer {} is not BertNormalizer", type_of(normalizer)));
  for (const char* key : {"clean_text", "handle_chinese_chars", "lowercase"})
    if (!field(normalizer, key).is_boolean())
      throw InputError(file, fmt::format("normalizer BertNormalizer: \"{}\" must be true or false", key));
  // HF's BertTokenizer always cleans: control characters dropped, whitespace made a space.
  if (!field(normalizer, "clean_text").get<bool>())
    throw InputError(file, "normalizer BertNormalizer with clean_text false: lenscheck always cleans the text");
  t.lowercase = field(normalizer, "lowercase").get<bool>();
  t.handle_chinese_chars = field(normalizer, "handle_chinese_chars").get<bool>();
  const json& strip = field(normalizer, "strip_accents");
  if (!strip.is_null() && !strip.is_boolean())
    throw InputError(file, "normalizer BertNormalizer: \"strip_accents\" must be true, false or null");
  if (strip.is_boolean()) t.strip_accents = strip.get<bool>();
}

// TemplateProcessing's single template, or BertProcessing, giving [CLS] sentence [SEP] with the
// vocabulary's ids.
void check_bert_post_processor(const json& post, const Vocab& vocab, const fs::path& file) {
  const std::string type = type_of(post);
  const auto special = [&](const json& entry, const char* token) {
    return entry == json::array({token, vocab.id(token)});
  };
  bool wraps = false;
  if (type == "BertProcessing") {
    wraps = special(field(post, "cls"), "[CLS]") && special(field(post, "sep"), "[SEP]");
  } else if (type == "TemplateProcessing") {
    const json& single = field(post, "single");
    const auto is_special = [&](const json& piece, const char* token) {
      const json& declared = field(field(post, "special_tokens"), token);
      return field(field(piece, "SpecialToken"), "id") == token && field(declared, "tokens") == json::array({token}) &&
             field(declared, "ids") == json::array({vocab.id(token)});
    };
    wraps = single.is_array() && single.size() == 3 && is_special(single[0], "[CLS]") &&
            field(field(single[1], "Sequence"), "id") == "A" && is_special(single[2], "[SEP]");
  }
  if (!wraps)
    throw InputError(file, fmt::format("post_processor {} does not wrap a sentence in [CLS] … [SEP] with ids {} and "
                                       "{}", type_of(post), vocab.cls_id(), vocab.sep_id()));
}

// Added tokens are cut out of the text before anything else; lenscheck cuts out BERT's five.
void check_added_tokens(const json& added, const Vocab& vocab, const fs::path& file) {
  if (!added.is_array()) throw InputError(file, "added_tokens must be an array");
  for (const json& a : added) {
    const json &content = field(a, "content"), &id = field(a, "id");
    bool known = false;
    for (const char* token : kBertSpecialTokens) known = known || (content == token && id == vocab.id(token));
    if (!known)
      throw InputError(file, fmt::format("added token {} (id {}) is not one of [PAD] [UNK] [CLS] [SEP] [MASK] with "
                                         "its vocabulary id", content.dump(), id.dump()));
  }
}

// ---------------------------------------------------------------- vocab.txt beside it, the settings

// Refuses vocab.txt where it differs from tokenizer.json's vocabulary, naming the first difference.
void check_vocabularies_agree(const Vocab& txt, const fs::path& txt_file, const Vocab& json_vocab) {
  const size_t common = std::min(txt.size(), json_vocab.size());
  for (size_t i = 0; i < common; ++i) {
    const int id = static_cast<int>(i);
    if (txt.token(id) != json_vocab.token(id))
      throw InputError(txt_file, fmt::format("disagrees with tokenizer.json: id {} is \"{}\" here, \"{}\" there", i,
                                             txt.token(id), json_vocab.token(id)));
  }
  if (txt.size() != json_vocab.size())
    throw InputError(txt_file, fmt::format("disagrees with tokenizer.json: {} tokens here, {} there (id {} is the "
                                           "first in only one)", txt.size(), json_vocab.size(), common));
}

// tokenizer_config.json's keys as BertTokenizerFast.__init__ takes them: absent keys keep its defaults,
// and they override tokenizer.json's normalizer where they differ.
void apply_tokenizer_config(const fs::path& file, TokenizerSettings& s) {
  const json j = read_json_object(file);
  if (j.contains("tokenizer_class") && !j["tokenizer_class"].is_null() && j["tokenizer_class"] != "BertTokenizer" &&
      j["tokenizer_class"] != "BertTokenizerFast")
    throw InputError(file, fmt::format("tokenizer_class {} is not BertTokenizer", j["tokenizer_class"].dump()));
  for (const auto& [key, token] : {std::pair{"unk_token", "[UNK]"}, {"sep_token", "[SEP]"}, {"pad_token", "[PAD]"},
                                   {"cls_token", "[CLS]"}, {"mask_token", "[MASK]"}})
    if (j.contains(key) && token_text(j[key]) != token)
      throw InputError(file, fmt::format("{} {} is not \"{}\"", key, j[key].dump(), token));
  const auto from = [&](const char* key) { return fmt::format("{} in {}", key, file.string()); };
  if (j.contains("do_lower_case")) s.lower_case = {bool_key(j, "do_lower_case", true, file), from("do_lower_case")};
  if (j.contains("tokenize_chinese_chars"))
    s.split_chinese_chars = {bool_key(j, "tokenize_chinese_chars", true, file), from("tokenize_chinese_chars")};
  if (j.contains("strip_accents")) {
    const json& v = j["strip_accents"];
    if (!v.is_null() && !v.is_boolean()) throw InputError(file, "\"strip_accents\" must be true, false or null");
    s.strip_accents = {v.is_null() ? std::nullopt : std::optional<bool>(v.get<bool>()), from("strip_accents")};
  }
  if (const auto n = count_key(j, "model_max_length", file); n && *n < s.max_tokens.value)
    s.max_tokens = {*n, from("model_max_length")};
}

// sentence-transformers' Transformer module: max_seq_length (it truncates there; lenscheck refuses) and
// do_lower_case (str.lower() on the whole text first).
void apply_sentence_bert_config(const fs::path& file, TokenizerSettings& s) {
  const json j = read_json_object(file);
  const auto from = [&](const char* key) { return fmt::format("{} in {}", key, file.string()); };
  s.lower_whole_text = {bool_key(j, "do_lower_case", false, file),
                        j.contains("do_lower_case") ? from("do_lower_case") : "sentence-transformers' default"};
  // On a tie this is the limit that sentence-transformers applies, so it is the one named.
  if (const auto n = count_key(j, "max_seq_length", file); n && *n <= s.max_tokens.value)
    s.max_tokens = {*n, from("max_seq_length")};
}

void note_overridden_normalizer(const TokenizerJson& t, const fs::path& file, CheckpointTokenizer& out) {
  const TokenizerSettings& s = out.settings;
  const auto yes_no = [](std::optional<bool> b) { return b ? (*b ? "true" : "false") : "null"; };
  if (t.lowercase != s.lower_case.value)
    out.notes.push_back(fmt::format("{}: the normalizer's lowercase {} is overridden by {} {}, as BertTokenizerFast "
                                    "does", file.string(), yes_no(t.lowercase), s.lower_case.from,
                                    yes_no(s.lower_case.value)));
  if (t.strip_accents != s.strip_accents.value)
    out.notes.push_back(fmt::format("{}: the normalizer's strip_accents {} is overridden by {} {}, as "
                                    "BertTokenizerFast does", file.string(), yes_no(t.strip_accents),
                                    s.strip_accents.from, yes_no(s.strip_accents.value)));
  if (t.handle_chinese_chars != s.split_chinese_chars.value)
    out.notes.push_back(fmt::format("{}: the normalizer's handle_chinese_chars {} is overridden by {} {}, as "
                                    "BertTokenizerFast does", file.string(), yes_no(t.handle_chinese_chars),
                                    s.split_chinese_chars.from, yes_no(s.split_chinese_chars.value)));
}

}  // namespace

TransformerFolder transformer_folder(const fs::path& folder) {
  const fs::path modules_file = folder / "modules.json";
  if (!fs::exists(modules_file)) return {folder, "the folder given (no modules.json)"};
  const json modules = read_json(modules_file);
  if (!modules.is_array()) throw InputError(modules_file, "must be a JSON array of modules");
  std::vector<std::string> types, transformers;
  for (const json& m : modules) {
    if (!field(m, "type").is_string() || !field(m, "path").is_string())
      throw InputError(modules_file, fmt::format("module {} has no string \"type\" and \"path\"", m.dump()));
    types.push_back(field(m, "type").get<std::string>());
    if (types.back() == "sentence_transformers.models.Transformer")
      transformers.push_back(field(m, "path").get<std::string>());
  }
  if (transformers.size() != 1)
    throw InputError(modules_file, fmt::format("names {} sentence_transformers.models.Transformer modules, not one "
                                               "(types: {})", transformers.size(), fmt::join(types, ", ")));
  const std::string& path = transformers[0];
  if (path.empty()) return {folder, "modules.json: the Transformer module is the folder itself (path \"\")"};
  const fs::path dir = folder / path;
  if (!fs::is_directory(dir))
    throw InputError(modules_file, fmt::format("the Transformer module's path \"{}\" is not a folder", path));
  return {dir, fmt::format("modules.json: the Transformer module's folder \"{}\"", path)};
}

TokenizerJson read_tokenizer_json(const fs::path& file) {
  const json j = read_json_object(file);
  TokenizerJson t;
  const json& model = field(j, "model");
  check_wordpiece_model(model, file);
  // The vocabulary first: the post-processor and the added tokens are checked against its ids.
  t.vocab = wordpiece_vocab(field(model, "vocab"), file);
  const json& max_chars = field(model, "max_input_chars_per_word");
  if (!max_chars.is_number_unsigned() || max_chars.get<uint64_t>() < 1)
    throw InputError(file, fmt::format("model.max_input_chars_per_word {} is not a whole number of at least 1",
                                       max_chars.dump()));
  t.max_input_chars_per_word = static_cast<size_t>(max_chars.get<uint64_t>());
  check_bert_normalizer(field(j, "normalizer"), t, file);
  if (type_of(field(j, "pre_tokenizer")) != "BertPreTokenizer")
    throw InputError(file, fmt::format("pre_tokenizer {} is not BertPreTokenizer", type_of(field(j, "pre_tokenizer"))));
  check_bert_post_processor(field(j, "post_processor"), t.vocab, file);
  // No added_tokens (or null) is none added.
  if (!field(j, "added_tokens").is_null()) check_added_tokens(field(j, "added_tokens"), t.vocab, file);
  return t;
}

CheckpointTokenizer load_tokenizer(const TokenizerSource& source, const BertConfig& config) {
  const fs::path& dir = source.dir;
  CheckpointTokenizer out;
  TokenizerSettings& s = out.settings;
  s.max_tokens = {static_cast<size_t>(config.max_position_embeddings),
                  fmt::format("max_position_embeddings in {}", source.sizes_from.string())};
  const bool named = !source.file.empty(), named_json = named && source.file.extension() == ".json";
  const fs::path txt_file = named ? (named_json ? fs::path() : source.file) : dir / "vocab.txt";
  const fs::path json_file = named ? (named_json ? source.file : fs::path()) : dir / "tokenizer.json";
  std::optional<TokenizerJson> tokenizer_json;
  if (!json_file.empty() && fs::exists(json_file)) {
    tokenizer_json = read_tokenizer_json(json_file);
    s.max_input_chars_per_word = {tokenizer_json->max_input_chars_per_word,
                                  fmt::format("model.max_input_chars_per_word in {}", json_file.string())};
  }
  if (fs::exists(dir / "tokenizer_config.json")) apply_tokenizer_config(dir / "tokenizer_config.json", s);
  if (fs::exists(dir / "sentence_bert_config.json")) apply_sentence_bert_config(dir / "sentence_bert_config.json", s);

  if (tokenizer_json) {
    if (!txt_file.empty() && fs::exists(txt_file)) {
      check_vocabularies_agree(Vocab::load(txt_file), txt_file, tokenizer_json->vocab);
      out.notes.push_back(fmt::format("vocabulary from {} (as HF's fast tokenizer); vocab.txt holds the same tokens "
                                      "with the same ids", json_file.filename().string()));
    }
    note_overridden_normalizer(*tokenizer_json, json_file, out);
    out.vocab = std::move(tokenizer_json->vocab);
    out.vocab_file = json_file;
  } else if (!txt_file.empty() && fs::exists(txt_file)) {
    out.vocab = Vocab::load(txt_file);
    out.vocab_file = txt_file;
  } else if (named) {
    throw InputError(source.file, "missing");
  } else {
    throw InputError(txt_file, "missing, and no tokenizer.json beside it");
  }
  if (static_cast<int>(out.vocab.size()) != config.vocab_size)
    throw InputError(out.vocab_file, fmt::format("has {} tokens but {} says vocab_size {}", out.vocab.size(),
                                                 source.sizes_from.filename().string(), config.vocab_size));
  return out;
}

}  // namespace lenscheck
