// Checkpoint folders as Hugging Face and sentence-transformers ship them: modules.json,
// sentence_bert_config.json, tokenizer_config.json, tokenizer.json beside or instead of vocab.txt. The
// expected tokens of the settings cases are HF's: tokenizers 0.23.3, all-MiniLM-L6-v2's tokenizer.json
// with its BertNormalizer rebuilt as BertTokenizerFast.__init__ rebuilds it from tokenizer_config.json.
#include <gtest/gtest.h>

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "common/sentences.h"
#include "model/checkpoint.h"
#include "model/error.h"
#include "model/tokenizer_files.h"
#include "tests/test_support.h"

using namespace lenscheck;
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

const fs::path& minilm() {
  static const fs::path dir = fs::path(LENSCHECK_BERT_VOCAB).parent_path();
  return dir;
}
fs::path minilm_tokenizer_json() { return minilm() / "tokenizer.json"; }

// A folder holding links to bert-mini's `files` (its config.json, vocab.txt, model.safetensors).
fs::path bert_mini_files(const fs::path& dir, std::initializer_list<const char*> files) {
  fs::create_directories(dir);
  for (const char* f : files) fs::create_symlink(test::bert_mini() / f, dir / f);
  return dir;
}

// bert-mini's config and weights with all-MiniLM-L6-v2's tokenizer.json, written as `edit` leaves it.
fs::path with_tokenizer_json(const std::function<void(json&)>& edit, bool with_vocab_txt = false) {
  const fs::path dir = test::temp_dir("tokenizer-json");
  bert_mini_files(dir, {"config.json", "model.safetensors"});
  if (with_vocab_txt) fs::create_symlink(test::bert_mini() / "vocab.txt", dir / "vocab.txt");
  json j = json::parse(test::read_file(minilm_tokenizer_json()));
  edit(j);
  test::write_file(dir / "tokenizer.json", j.dump());
  return dir;
}

void expect_input_error(const fs::path& folder, const fs::path& file, const std::string& fragment) {
  try {
    load_checkpoint(folder);
    ADD_FAILURE() << "no InputError; expected " << file << ": ..." << fragment;
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), file) << e.what();
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

// fixtures/sentences.yaml and the first 300 lines of Emma with words on them.
const std::vector<Sentence>& texts() {
  static const std::vector<Sentence> all = [] {
    std::vector<Sentence> s = load_sentences(test::source_dir() / "fixtures/sentences.yaml");
    SentenceStream emma(test::source_dir() / ".deps/texts/austen/emma.txt");
    for (Sentence& line : emma.next(300)) s.push_back(std::move(line));
    return s;
  }();
  return all;
}

// Every text of texts() tokenised by `a` and `b`: the same tokens, ids and words.
void expect_same_encodings(const BertTokenizer& a, const BertTokenizer& b) {
  ASSERT_GT(texts().size(), 300u);
  for (const Sentence& s : texts()) {
    const Encoding x = a.encode(s.text, SIZE_MAX), y = b.encode(s.text, SIZE_MAX);
    ASSERT_EQ(x.ids, y.ids) << s.id << ": " << s.text;
    ASSERT_EQ(x.tokens, y.tokens) << s.id;
    ASSERT_EQ(x.word_ids, y.word_ids) << s.id;
  }
}

std::vector<std::string> tokens_of(const Checkpoint& ck, const std::string& text) {
  return BertTokenizer(ck.vocab, ck.tokenizer).encode(text, SIZE_MAX).tokens;
}

const std::string kMixed = "The Café in Zürich served 中文 tea.";

}  // namespace

// ---------------------------------------------------------------- sentence-transformers layout

TEST(SentenceTransformersFolder, LoadsTheTransformerModuleFolderThatModulesJsonNames) {
  const fs::path root = test::temp_dir("st");
  const fs::path module = bert_mini_files(root / "0_Transformer", {"config.json", "vocab.txt", "model.safetensors"});
  test::write_file(root / "modules.json",
                   R"([{"idx": 0, "path": "0_Transformer", "type": "sentence_transformers.models.Transformer"},
                       {"idx": 1, "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}])");
  test::write_file(module / "sentence_bert_config.json", R"({"max_seq_length": 12, "do_lower_case": false})");
  const Checkpoint ck = load_checkpoint(root);
  const Checkpoint original = load_checkpoint(test::bert_mini());
  EXPECT_EQ(ck.dir, module);
  EXPECT_NE(ck.dir_from.find("\"0_Transformer\""), std::string::npos) << ck.dir_from;
  EXPECT_EQ(ck.model_sha256, original.model_sha256);
  EXPECT_EQ(ck.vocab.tokens(), original.vocab.tokens());
  EXPECT_EQ(ck.vocab_file, module / "vocab.txt");
  EXPECT_EQ(ck.tokenizer.max_tokens.value, 12u);
  EXPECT_EQ(ck.tokenizer.max_tokens.from, "max_seq_length in " + (module / "sentence_bert_config.json").string());
  EXPECT_FALSE(ck.tokenizer.lower_whole_text.value);

  // Twelve tokens pass; thirteen are an error naming the sentence, the limit and its file.
  const BertTokenizer tokenizer(ck.vocab, ck.tokenizer);
  EXPECT_EQ(tokenizer.encode("a b c d e f g h i j", 512).ids.size(), 12u);
  try {
    encode_sentence(tokenizer, {"long", "a b c d e f g h i j k", 4}, 512, "sentences.yaml");
    ADD_FAILURE() << "no InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), "sentences.yaml");
    EXPECT_EQ(e.problem(), "line 4: sentence \"long\": sentence has 13 tokens, more than 12 (max_seq_length in " +
                               (module / "sentence_bert_config.json").string() + ")");
  }
}

TEST(SentenceTransformersFolder, AnOverLongSentenceIsExitTwoInTheCli) {
  const fs::path root = bert_mini_files(test::temp_dir("st"), {"config.json", "vocab.txt", "model.safetensors"});
  test::write_file(root / "modules.json", R"([{"path": "", "type": "sentence_transformers.models.Transformer"}])");
  test::write_file(root / "sentence_bert_config.json", R"({"max_seq_length": 5})");
  const fs::path out = test::temp_dir("out") / "trace.safetensors";
  const std::string args = "trace --model " + test::quoted(root) + " --out " + test::quoted(out) + " --text ";
  EXPECT_EQ(test::run_cli(args + "'one two three'").exit_code, 0);
  const test::CommandResult r = test::run_cli(args + "'one two three four'");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("sentence has 6 tokens, more than 5 (max_seq_length in " +
                          (root / "sentence_bert_config.json").string() + ")"),
            std::string::npos)
      << r.output;
}

TEST(SentenceTransformersFolder, DoLowerCaseLowersTheWholeTextAsStrLowerDoes) {
  const fs::path root = bert_mini_files(test::temp_dir("st"), {"config.json", "vocab.txt", "model.safetensors"});
  test::write_file(root / "modules.json", R"([{"path": "", "type": "sentence_transformers.models.Transformer"}])");
  test::write_file(root / "tokenizer_config.json", R"({"do_lower_case": false})");
  test::write_file(root / "sentence_bert_config.json", R"({"do_lower_case": true})");
  const Checkpoint ck = load_checkpoint(root);
  EXPECT_EQ(ck.dir, root);
  EXPECT_TRUE(ck.tokenizer.lower_whole_text.value);
  EXPECT_FALSE(ck.tokenizer.lower_case.value);
  // str.lower() on the whole word ends it in a final sigma; the tokenizer's per-character lower-casing
  // would not (HF: ο ##δ ##ος against ο ##δ ##ο ##σ).
  EXPECT_EQ(tokens_of(ck, "ΟΔΟΣ"), (std::vector<std::string>{"[CLS]", "ο", "##δ", "##ος", "[SEP]"}));
  EXPECT_EQ(tokens_of(load_checkpoint(test::bert_mini()), "ΟΔΟΣ"),
            (std::vector<std::string>{"[CLS]", "ο", "##δ", "##ο", "##σ", "[SEP]"}));
  // Lower-cased before the special tokens are cut out: a literal [SEP] is ordinary text by then.
  EXPECT_EQ(tokens_of(ck, "A[SEP]"), (std::vector<std::string>{"[CLS]", "a", "[", "sep", "]", "[SEP]"}));
}

TEST(SentenceTransformersFolder, ModulesJsonThatNamesNoUsableTransformerIsBadInput) {
  const fs::path root = bert_mini_files(test::temp_dir("st"), {"config.json", "vocab.txt", "model.safetensors"});
  test::write_file(root / "modules.json", R"([{"path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}])");
  expect_input_error(root, root / "modules.json",
                     "names 0 sentence_transformers.models.Transformer modules, not one "
                     "(types: sentence_transformers.models.Pooling)");
  test::write_file(root / "modules.json",
                   R"([{"path": "0_BERT", "type": "sentence_transformers.models.Transformer"}])");
  expect_input_error(root, root / "modules.json", "the Transformer module's path \"0_BERT\" is not a folder");
}

// ---------------------------------------------------------------- tokenizer_config.json

TEST(TokenizerConfig, EachSettingTokenizesAsHuggingFaceDoes) {
  const fs::path dir = bert_mini_files(test::temp_dir("config"), {"config.json", "vocab.txt", "model.safetensors"});
  const auto tokens_with = [&](const std::string& config) {
    test::write_file(dir / "tokenizer_config.json", config);
    return tokens_of(load_checkpoint(dir), kMixed);
  };
  using Tokens = std::vector<std::string>;
  EXPECT_EQ(tokens_with("{}"),
            (Tokens{"[CLS]", "the", "cafe", "in", "zurich", "served", "中", "文", "tea", ".", "[SEP]"}));
  EXPECT_EQ(tokens_with(R"({"do_lower_case": false})"),
            (Tokens{"[CLS]", "[UNK]", "[UNK]", "in", "[UNK]", "served", "中", "文", "tea", ".", "[SEP]"}));
  EXPECT_EQ(tokens_with(R"({"strip_accents": false})"),
            (Tokens{"[CLS]", "the", "[UNK]", "in", "[UNK]", "served", "中", "文", "tea", ".", "[SEP]"}));
  EXPECT_EQ(tokens_with(R"({"tokenize_chinese_chars": false})"),
            (Tokens{"[CLS]", "the", "cafe", "in", "zurich", "served", "中", "##文", "tea", ".", "[SEP]"}));
}

TEST(TokenizerConfig, ASmallerModelMaxLengthCapsTokensAndHfsNoLimitDoesNot) {
  const fs::path dir = bert_mini_files(test::temp_dir("config"), {"config.json", "vocab.txt", "model.safetensors"});
  test::write_file(dir / "tokenizer_config.json", R"({"model_max_length": 64})");
  EXPECT_EQ(load_checkpoint(dir).tokenizer.max_tokens.value, 64u);
  EXPECT_EQ(load_checkpoint(dir).tokenizer.max_tokens.from,
            "model_max_length in " + (dir / "tokenizer_config.json").string());
  // HF writes "no limit" as int(1e30).
  test::write_file(dir / "tokenizer_config.json", R"({"model_max_length": 1000000000000000019884624838656})");
  const Checkpoint ck = load_checkpoint(dir);
  EXPECT_EQ(ck.tokenizer.max_tokens.value, static_cast<size_t>(ck.config.max_position_embeddings));
  EXPECT_EQ(ck.tokenizer.max_tokens.from, "max_position_embeddings in " + (dir / "config.json").string());
}

TEST(TokenizerConfig, WhatLenscheckWouldTokenizeDifferentlyIsBadInputNamingTheFile) {
  const fs::path dir = bert_mini_files(test::temp_dir("config"), {"config.json", "vocab.txt", "model.safetensors"});
  const fs::path file = dir / "tokenizer_config.json";
  test::write_file(file, R"({"tokenizer_class": "RobertaTokenizer"})");
  expect_input_error(dir, file, "tokenizer_class \"RobertaTokenizer\" is not BertTokenizer");
  test::write_file(file, R"({"cls_token": {"content": "<s>"}})");
  expect_input_error(dir, file, "cls_token {\"content\":\"<s>\"} is not \"[CLS]\"");
  test::write_file(file, R"({"do_lower_case": "yes"})");
  expect_input_error(dir, file, "\"do_lower_case\" must be true or false");
  test::write_file(file, R"({"model_max_length": 0})");
  expect_input_error(dir, file, "\"model_max_length\" = 0 is not a whole number of at least 1");
}

// ---------------------------------------------------------------- tokenizer.json

TEST(TokenizerJsonFolder, WithoutVocabTxtTokenizesAsVocabTxtDoes) {
  const fs::path dir = with_tokenizer_json([](json&) {});
  const Checkpoint ck = load_checkpoint(dir);
  const Checkpoint original = load_checkpoint(test::bert_mini());
  EXPECT_EQ(ck.vocab_file, dir / "tokenizer.json");
  EXPECT_EQ(ck.vocab.tokens(), original.vocab.tokens());
  EXPECT_EQ(ck.tokenizer.max_input_chars_per_word.value, 100u);
  expect_same_encodings(BertTokenizer(ck.vocab, ck.tokenizer), BertTokenizer(original.vocab, original.tokenizer));
}

TEST(TokenizerJsonFolder, BesideVocabTxtItIsUsedAndMustAgree) {
  const fs::path agreeing = with_tokenizer_json([](json&) {}, true);
  const Checkpoint ck = load_checkpoint(agreeing);
  EXPECT_EQ(ck.vocab_file, agreeing / "tokenizer.json");
  ASSERT_FALSE(ck.notes.empty());
  EXPECT_NE(ck.notes[0].find("vocab.txt holds the same tokens with the same ids"), std::string::npos) << ck.notes[0];

  // "hello" (7592) and "world" (2088) swap ids: the same tokens, not the same ids.
  const fs::path swapped = with_tokenizer_json([](json& j) {
    j["model"]["vocab"]["hello"] = 2088;
    j["model"]["vocab"]["world"] = 7592;
  }, true);
  expect_input_error(swapped, swapped / "vocab.txt",
                     "disagrees with tokenizer.json: id 2088 is \"world\" here, \"hello\" there");
}

TEST(TokenizerJsonFolder, TheNormalizerYieldsToTokenizerConfigAsInBertTokenizerFast) {
  const fs::path dir = with_tokenizer_json([](json& j) { j["normalizer"]["lowercase"] = false; });
  // No tokenizer_config.json: BertTokenizerFast's default do_lower_case (true) overrides the normalizer.
  const Checkpoint ck = load_checkpoint(dir);
  EXPECT_TRUE(ck.tokenizer.lower_case.value);
  EXPECT_EQ(ck.tokenizer.lower_case.from, "BertTokenizerFast's default");
  ASSERT_EQ(ck.notes.size(), 1u);
  EXPECT_NE(ck.notes[0].find("the normalizer's lowercase false is overridden by BertTokenizerFast's default true"),
            std::string::npos)
      << ck.notes[0];
  test::write_file(dir / "tokenizer_config.json", R"({"do_lower_case": false})");
  EXPECT_FALSE(load_checkpoint(dir).tokenizer.lower_case.value);
  EXPECT_TRUE(load_checkpoint(dir).notes.empty());
}

TEST(TokenizerJsonFolder, ATokenizerOfAnotherKindIsBadInputNamingTheKind) {
  const auto refused = [](const std::function<void(json&)>& edit, const std::string& fragment) {
    SCOPED_TRACE(fragment);
    const fs::path dir = with_tokenizer_json(edit);
    expect_input_error(dir, dir / "tokenizer.json", fragment);
  };
  refused([](json& j) { j["model"] = {{"type", "BPE"}, {"vocab", {{"a", 0}}}, {"merges", json::array()}}; },
          "model BPE is not WordPiece");
  refused([](json& j) { j["model"]["type"] = "Unigram"; }, "model Unigram is not WordPiece");
  refused([](json& j) { j["normalizer"] = {{"type", "Sequence"}, {"normalizers", json::array()}}; },
          "normalizer Sequence is not BertNormalizer");
  refused([](json& j) { j["normalizer"]["clean_text"] = false; }, "clean_text false");
  refused([](json& j) { j["pre_tokenizer"] = {{"type", "Whitespace"}}; },
          "pre_tokenizer Whitespace is not BertPreTokenizer");
  refused([](json& j) { j["post_processor"] = {{"type", "RobertaProcessing"}}; },
          "post_processor RobertaProcessing does not wrap a sentence in [CLS] … [SEP] with ids 101 and 102");
  refused([](json& j) { j["post_processor"] = nullptr; }, "post_processor null does not wrap");
  refused([](json& j) { j["post_processor"]["single"].erase(0); }, "post_processor TemplateProcessing does not wrap");
  const auto bert_processing = [](int cls_id) {
    return json{{"type", "BertProcessing"}, {"sep", {"[SEP]", 102}}, {"cls", {"[CLS]", cls_id}}};
  };
  refused([&](json& j) { j["post_processor"] = bert_processing(7); }, "post_processor BertProcessing does not wrap");
  refused([](json& j) { j["model"]["continuing_subword_prefix"] = "@@"; },
          "continuing_subword_prefix \"@@\" is not \"##\"");
  refused([](json& j) { j["added_tokens"].push_back({{"id", 30522}, {"content", "<new>"}}); },
          "added token \"<new>\" (id 30522) is not one of [PAD] [UNK] [CLS] [SEP] [MASK]");
  refused([](json& j) { j["model"]["vocab"]["hello"] = 2088; }, "model.vocab: id 2088 is both");

  // BertProcessing of the same ids is BERT's wrapping too.
  const fs::path bert = with_tokenizer_json([&](json& j) { j["post_processor"] = bert_processing(101); });
  EXPECT_EQ(load_checkpoint(bert).vocab_file, bert / "tokenizer.json");
}

// ---------------------------------------------------------------- malformed files, other models

TEST(CheckpointFolderFiles, MalformedJsonIsBadInputNamingTheFile) {
  for (const char* name : {"tokenizer.json", "tokenizer_config.json", "sentence_bert_config.json", "modules.json"}) {
    SCOPED_TRACE(name);
    const fs::path dir = bert_mini_files(test::temp_dir(name), {"config.json", "vocab.txt", "model.safetensors"});
    test::write_file(dir / name, "{\"truncated\": [1, 2");
    expect_input_error(dir, dir / name, "not valid JSON");
  }
}

TEST(CheckpointFolderFiles, AModelTypeOtherThanBertIsExitTwoNamingConfigJson) {
  const fs::path dir = test::temp_dir("roberta");
  bert_mini_files(dir, {"vocab.txt", "model.safetensors"});
  json config = json::parse(test::read_file(test::bert_mini() / "config.json"));
  config["model_type"] = "roberta";
  test::write_file(dir / "config.json", config.dump());
  expect_input_error(dir, dir / "config.json", "model_type \"roberta\" is not \"bert\"");
  const test::CommandResult r = test::run_cli("inspect --model " + test::quoted(dir));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find((dir / "config.json").string() + ": model_type \"roberta\" is not \"bert\""),
            std::string::npos)
      << r.output;
}

TEST(CheckpointFolderFiles, NoVocabularyAtAllIsBadInput) {
  const fs::path dir = bert_mini_files(test::temp_dir("none"), {"config.json", "model.safetensors"});
  expect_input_error(dir, dir / "vocab.txt", "missing, and no tokenizer.json beside it");
}

// ---------------------------------------------------------------- real checkpoints

// all-MiniLM-L6-v2 as it ships, and every other real checkpoint scripts/install-deps.sh unpacks beside it
// (.deps/models/): each loads and tokenizes as all-MiniLM-L6-v2 does (the fine-tunes of it keep its
// tokenizer).
TEST(RealCheckpoints, LoadAsTheyShipAndTokenizeAlike) {
  const Checkpoint reference = load_checkpoint(minilm());
  EXPECT_EQ(reference.dir_from, "modules.json: the Transformer module is the folder itself (path \"\")");
  EXPECT_EQ(reference.vocab_file, minilm() / "tokenizer.json");
  EXPECT_EQ(reference.tokenizer.max_tokens.value, 256u);
  EXPECT_EQ(reference.tokenizer.max_tokens.from,
            "max_seq_length in " + (minilm() / "sentence_bert_config.json").string());
  EXPECT_TRUE(reference.tokenizer.lower_case.value);
  EXPECT_FALSE(reference.tokenizer.lower_whole_text.value);
  const BertTokenizer reference_tokenizer(reference.vocab, reference.tokenizer);
  expect_same_encodings(reference_tokenizer, BertTokenizer(reference.vocab));

  size_t others = 0;
  for (const fs::directory_entry& folder : fs::directory_iterator(minilm().parent_path())) {
    if (folder.path() == minilm()) continue;
    SCOPED_TRACE(folder.path().string());
    ++others;
    const Checkpoint ck = load_checkpoint(folder.path());
    EXPECT_EQ(ck.vocab.tokens(), reference.vocab.tokens());
    expect_same_encodings(BertTokenizer(ck.vocab, ck.tokenizer), reference_tokenizer);
  }
  EXPECT_GE(others, 1u) << "install-deps.sh unpacks sre-embedding-model beside all-MiniLM-L6-v2";
}
