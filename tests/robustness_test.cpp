// Bad input never crashes and never passes. Each loader's error is checked exactly (the file, the
// line, the problem) in process, on a copy of a real checkpoint with one file broken; and for each
// kind of input one case goes through the CLI as a user would meet it: exit code 2, the message, no
// crash, and no report, JSON or JUnit file written. (The CLI turns every InputError into exit code 2 at
// one place, so one case per kind proves the path; each CLI start costs a second of libtorch loading.)
// The loaders' unit tests (safetensors_test, checkpoint_test, tokenizer_test, compare_test) cover the
// same parsers on hand-made bytes; the cases here are the ones they leave out.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>

#include "gate/verify.h"
#include "model/error.h"
#include "model/safetensors.h"
#include "runtime/encoder.h"
#include "tests/test_support.h"

using namespace lenscheck;
namespace fs = std::filesystem;

namespace {

using test::quoted;
fs::path tolerances_file() { return test::source_dir() / "fixtures/tolerances.yaml"; }
const Tolerances& tolerances() {
  static const Tolerances t = load_tolerances(tolerances_file());
  return t;
}
const Checkpoint& tiny() {
  static const Checkpoint ck = load_checkpoint(test::fixture("tiny-prefixed"));
  return ck;
}

// A copy of the small checkpoint (2 layers, hidden 32, max_position_embeddings 64, F64 weights).
fs::path tiny_copy() {
  const fs::path dir = test::temp_dir("model");
  for (const char* f : {"config.json", "vocab.txt", "model.safetensors"})
    fs::copy_file(test::fixture("tiny-prefixed") / f, dir / f);
  return dir;
}

// A valid one-sentence input for the tiny checkpoint.
// `run` must throw an InputError for exactly `file` and `problem`.
template <class F>
void expect_input_error(F run, const fs::path& file, const std::string& problem) {
  try {
    run();
    ADD_FAILURE() << "no InputError; expected " << file << ": " << problem;
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), file) << e.what();
    EXPECT_EQ(e.problem(), problem) << e.what();
  }
}

void expect_bad_model(const fs::path& dir, const fs::path& file, const std::string& problem) {
  expect_input_error([&] { load_checkpoint(dir); }, file, problem);
}

// What `verify` does with a sentences file before it runs anything: load it, tokenise every sentence.
void expect_bad_sentences(const std::string& yaml, const std::string& problem) {
  SCOPED_TRACE(yaml.substr(0, 200));
  const fs::path file = test::temp_dir("bad") / "sentences.yaml";
  test::write_file(file, yaml);
  expect_input_error([&] { verify(tiny(), runtime_candidate(), load_sentences(file), file, tolerances(), {}); }, file,
                     problem);
}

void expect_bad_tolerances(const std::string& yaml, const std::string& problem) {
  SCOPED_TRACE(yaml);
  const fs::path file = test::temp_dir("bad") / "tolerances.yaml";
  test::write_file(file, yaml);
  expect_input_error([&] { load_tolerances(file); }, file, problem);
}

void expect_bad_reference(const fs::path& trace, const std::string& problem) {
  expect_input_error([&] { verify_reference(tiny(), trace, tolerances(), {}); }, trace, problem);
}

// Runs the CLI with report, JSON and JUnit paths added; expects exit code 2, `error: FILE: PROBLEM`,
// and none of the three files written.
void expect_cli_bad_input(const std::string& args, const fs::path& file, const std::string& problem) {
  const fs::path out = test::temp_dir("reports");
  const fs::path report = out / "verify.md", json = out / "verify.json", junit = out / "verify.xml";
  const test::CommandResult r = test::run_cli(args + " --report " + quoted(report) + " --json " +
                                              quoted(json) + " --junit " + quoted(junit));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("error: " + file.string() + ": " + problem + "\n"), std::string::npos)
      << "expected: " << file.string() << ": " << problem << "\ngot: " << r.output;
  for (const fs::path& p : {report, json, junit}) EXPECT_FALSE(fs::exists(p)) << p << " was written";
}

std::string verify_args(const fs::path& model, const fs::path& sentences, const fs::path& tolerances) {
  return "verify --model " + quoted(model) + " --sentences " + quoted(sentences) + " --tolerances " +
         quoted(tolerances);
}

// The raw parts of a safetensors file, to break them one at a time.
struct RawSafetensors {
  uint64_t header_len = 0;
  nlohmann::ordered_json header;
  std::string data;

  static RawSafetensors read(const fs::path& file) {
    const std::string bytes = test::read_file(file);
    RawSafetensors raw;
    std::memcpy(&raw.header_len, bytes.data(), 8);
    raw.header = nlohmann::ordered_json::parse(bytes.substr(8, raw.header_len));
    raw.data = bytes.substr(8 + raw.header_len);
    return raw;
  }
  // Writes the header, space-padded to 8 bytes, and the data as they are.
  void write(const fs::path& file) const {
    std::string text = header.dump();
    text.append((8 - text.size() % 8) % 8, ' ');
    const uint64_t n = text.size();
    test::write_file(file, std::string(reinterpret_cast<const char*>(&n), 8) + text + data);
  }
  // Byte offset, in the data section, of element `index` of an F64 tensor.
  size_t f64_offset(const std::string& name, size_t index) const {
    return header.at(name).at("data_offsets").at(0).get<size_t>() + 8 * index;
  }
};

const std::string kKeyWeight = "bert.encoder.layer.0.attention.self.key.weight";

// ---------------------------------------------------------------- model.safetensors

// The tensor that ends in the last `lost` bytes of the data section: the last in data order.
std::string tensor_ending_in_last_bytes(const RawSafetensors& raw, uint64_t lost) {
  std::string last;
  for (const auto& [name, entry] : raw.header.items())
    if (name != "__metadata__" && entry["data_offsets"][1].get<uint64_t>() > raw.data.size() - lost) {
      EXPECT_TRUE(last.empty()) << "two tensors end in the last " << lost << " bytes";
      last = name;
    }
  return last;
}

TEST(BadModel, TruncatedFileNamesTheTensorThatNoLongerFits) {
  const fs::path dir = tiny_copy(), model = dir / "model.safetensors";
  const RawSafetensors raw = RawSafetensors::read(model);
  fs::resize_file(model, fs::file_size(model) - 4);  // a download cut short
  const std::string last = tensor_ending_in_last_bytes(raw, 4);
  ASSERT_FALSE(last.empty());
  expect_bad_model(dir, model, "tensor '" + last + "': data_offsets end " + std::to_string(raw.data.size()) +
                                   " is beyond the data section of " + std::to_string(raw.data.size() - 4) +
                                   " bytes");
}

TEST(BadModel, FileCutInsideTheHeader) {
  const fs::path dir = tiny_copy(), model = dir / "model.safetensors";
  const RawSafetensors raw = RawSafetensors::read(model);
  fs::resize_file(model, 100);
  expect_bad_model(dir, model, "header length " + std::to_string(raw.header_len) +
                                   " is larger than the file (100 bytes)");
  fs::resize_file(model, 5);
  expect_bad_model(dir, model, "file is shorter than 8 bytes (5 bytes)");
}

TEST(BadModel, HeaderLengthThatLies) {
  const fs::path dir = tiny_copy(), model = dir / "model.safetensors";
  std::string bytes = test::read_file(model);
  const uint64_t lie = 1;  // the header is "{", and the rest of the JSON becomes data
  std::memcpy(bytes.data(), &lie, 8);
  test::write_file(model, bytes);
  expect_bad_model(dir, model, "header is not valid JSON: [json.exception.parse_error.101] parse error at "
                               "line 1, column 2: syntax error while parsing object key - unexpected end of "
                               "input; expected string literal");
}

TEST(BadModel, DtypeThatLiesAboutTheByteSpan) {
  const fs::path dir = tiny_copy(), model = dir / "model.safetensors";
  RawSafetensors raw = RawSafetensors::read(model);
  raw.header["bert.embeddings.LayerNorm.bias"]["dtype"] = "F32";  // the bytes are 32 F64 values
  raw.write(model);
  expect_bad_model(dir, model, "tensor 'bert.embeddings.LayerNorm.bias': shape [32] of F32 needs 128 "
                               "bytes but data_offsets span 256");
}

TEST(BadModel, UnknownDtype) {
  const fs::path dir = tiny_copy(), model = dir / "model.safetensors";
  RawSafetensors raw = RawSafetensors::read(model);
  raw.header["bert.embeddings.LayerNorm.bias"]["dtype"] = "F8_E4M3";
  raw.write(model);
  expect_bad_model(dir, model, "tensor 'bert.embeddings.LayerNorm.bias': unknown dtype 'F8_E4M3'");
}

TEST(BadModel, RenamedTensorIsMissing) {
  const fs::path dir = tiny_copy(), model = dir / "model.safetensors";
  RawSafetensors raw = RawSafetensors::read(model);
  nlohmann::ordered_json renamed;
  for (const auto& [name, entry] : raw.header.items())
    renamed[name == "bert.encoder.layer.1.output.dense.bias" ? "bert.encoder.layer.1.output.dense.b" : name] =
        entry;
  raw.header = renamed;
  raw.write(model);
  expect_bad_model(dir, model, "missing tensor bert.encoder.layer.1.output.dense.bias");
}

TEST(BadModel, MetadataValueThatIsNotAString) {
  const fs::path dir = tiny_copy(), model = dir / "model.safetensors";
  RawSafetensors raw = RawSafetensors::read(model);
  raw.header["__metadata__"] = {{"format", "pt"}, {"step", 1000}};
  raw.write(model);
  expect_bad_model(dir, model, "__metadata__ value of 'step' is not a string");
}

TEST(BadModel, NanOrInfInAWeightNamesTheTensorAndTheIndex) {
  struct Case {
    double value;
    std::string shown;
  };
  // 1e300 is finite in the file but not in the working precision: it is Inf once it is a float.
  for (const Case& c : {Case{std::numeric_limits<double>::quiet_NaN(), "nan"},
                        Case{-std::numeric_limits<double>::infinity(), "-inf"}, Case{1e300, "inf"}}) {
    SCOPED_TRACE(c.shown);
    const fs::path dir = tiny_copy(), model = dir / "model.safetensors";
    RawSafetensors raw = RawSafetensors::read(model);
    std::memcpy(raw.data.data() + raw.f64_offset(kKeyWeight, 37), &c.value, 8);
    raw.write(model);
    expect_bad_model(dir, model, "tensor " + kKeyWeight + " holds a non-finite value (" + c.shown +
                                     ") at flat index 37");
  }
}

TEST(BadModelCli, TruncatedModelFailsVerifyWithoutReports) {
  const fs::path dir = tiny_copy(), model = dir / "model.safetensors";
  const RawSafetensors raw = RawSafetensors::read(model);
  fs::resize_file(model, fs::file_size(model) - 4);
  expect_cli_bad_input(verify_args(dir, test::one_sentence_file(), tolerances_file()), model,
                       "tensor '" + tensor_ending_in_last_bytes(raw, 4) + "': data_offsets end " +
                           std::to_string(raw.data.size()) + " is beyond the data section of " +
                           std::to_string(raw.data.size() - 4) + " bytes");
}

TEST(BadModelCli, NanWeightFailsTraceWithoutATrace) {
  const fs::path dir = tiny_copy(), model = dir / "model.safetensors";
  RawSafetensors raw = RawSafetensors::read(model);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::memcpy(raw.data.data() + raw.f64_offset(kKeyWeight, 0), &nan, 8);
  raw.write(model);
  const fs::path out = test::temp_dir("trace") / "trace.safetensors";
  const test::CommandResult r =
      test::run_cli("trace --model " + quoted(dir) + " --text 'hello world' --out " + quoted(out));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("error: " + model.string() + ": tensor " + kKeyWeight +
                          " holds a non-finite value (nan) at flat index 0\n"),
            std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(out));
}

// ---------------------------------------------------------------- config.json

// A copy of the tiny checkpoint whose config.json has `from` replaced by `to`.
fs::path with_config(const std::string& from, const std::string& to) {
  const fs::path dir = tiny_copy(), config = dir / "config.json";
  std::string text = test::read_file(config);
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  test::write_file(config, text);
  return dir;
}

void expect_bad_config(const std::string& from, const std::string& to, const std::string& problem) {
  SCOPED_TRACE(to);
  const fs::path dir = with_config(from, to);
  expect_bad_model(dir, dir / "config.json", problem);
}

// Each size within its bound, their product not: 2^16 x 2^18 floats would be 64 GiB.
const std::string kSizes = "\"hidden_size\": 32,\n  \"num_hidden_layers\": 2,\n  \"num_attention_heads\": 4,\n"
                           "  \"intermediate_size\": 64";
const std::string kAbsurdSizes = "\"hidden_size\": 65536,\n  \"num_hidden_layers\": 2,\n"
                                 "  \"num_attention_heads\": 4,\n  \"intermediate_size\": 262144";

TEST(BadConfig, AbsurdSizesAreRefusedBeforeAnyAllocation) {
  expect_bad_config("\"num_hidden_layers\": 2", "\"num_hidden_layers\": 100000",
                    "\"num_hidden_layers\" = 100000 is outside 1..256");
  expect_bad_config("\"hidden_size\": 32", "\"hidden_size\": 4294967328",
                    "\"hidden_size\" = 4294967328 is outside 1..65536");
  expect_bad_config("\"num_attention_heads\": 4", "\"num_attention_heads\": 0",
                    "\"num_attention_heads\" = 0 is outside 1..65536");
  expect_bad_config("\"max_position_embeddings\": 64", "\"max_position_embeddings\": -64",
                    "\"max_position_embeddings\" = -64 is outside 1..65536");
  expect_bad_config(kSizes, kAbsurdSizes, "a weight of 1.72e+10 elements is too large to load");
  expect_bad_config("\"vocab_size\": 30522", "\"vocab_size\": 3.0522e4", "\"vocab_size\" must be an integer");
  // Found by fuzz_config: nlohmann reports a number beyond double as out_of_range, not parse_error.
  expect_bad_config("\"layer_norm_eps\": 1e-12", "\"layer_norm_eps\": 1e400",
                    "not valid JSON: [json.exception.out_of_range.406] number overflow parsing '1e400'");
}

TEST(BadConfig, InconsistentOrUnknownValues) {
  expect_bad_config("\"num_attention_heads\": 4", "\"num_attention_heads\": 5",
                    "hidden_size 32 is not divisible by num_attention_heads 5");
  expect_bad_config("\"hidden_act\": \"gelu\"", "\"hidden_act\": \"silu\"",
                    "unknown hidden_act \"silu\" (known: gelu, gelu_new, gelu_pytorch_tanh, relu)");
  expect_bad_config("\"layer_norm_eps\": 1e-12", "\"layer_norm_eps\": \"1e-12\"",
                    "missing number key \"layer_norm_eps\"");
  expect_bad_config("\"model_type\": \"bert\"", "\"model_type\": \"roberta\"",
                    "model_type \"roberta\" is not \"bert\"");
  expect_bad_config("\"intermediate_size\": 64,", "", "missing key \"intermediate_size\"");
}

TEST(BadConfig, SizesThatDisagreeWithTheWeights) {
  const fs::path dir = with_config("\"intermediate_size\": 64", "\"intermediate_size\": 128");
  expect_bad_model(dir, dir / "model.safetensors",
                   "tensor bert.encoder.layer.0.intermediate.dense.weight has shape [64, 32], config.json "
                   "implies [128, 32]");
}

TEST(BadConfigCli, AbsurdSizesFailVerifyWithoutReports) {
  const fs::path dir = with_config(kSizes, kAbsurdSizes);
  expect_cli_bad_input(verify_args(dir, test::one_sentence_file(), tolerances_file()), dir / "config.json",
                       "a weight of 1.72e+10 elements is too large to load");
}

// ---------------------------------------------------------------- vocab.txt

// A copy of the tiny checkpoint whose vocab.txt has line `line` (1-based) replaced; it keeps its size.
fs::path with_vocab_line(size_t line, const std::string& token) {
  const fs::path dir = tiny_copy(), vocab = dir / "vocab.txt";
  std::string text = test::read_file(vocab);
  size_t begin = 0;
  for (size_t l = 1; l < line; ++l) begin = text.find('\n', begin) + 1;
  text.replace(begin, text.find('\n', begin) - begin, token);
  test::write_file(vocab, text);
  return dir;
}

void expect_bad_vocab(size_t line, const std::string& token, const std::string& problem) {
  SCOPED_TRACE(problem);
  const fs::path dir = with_vocab_line(line, token);
  expect_bad_model(dir, dir / "vocab.txt", problem);
}

TEST(BadVocab, DuplicateMissingSpecialAndNonUtf8) {
  // Line 7593 holds "hello" (id 7592).
  expect_bad_vocab(20001, "hello", "duplicate token \"hello\" on lines 7593 and 20001");
  expect_bad_vocab(102, "[CLX]", "missing special tokens: [CLS]");
  expect_bad_vocab(101, "[unk]", "missing special tokens: [UNK]");
  expect_bad_vocab(2001, "caf\xC3", "line 2001: invalid UTF-8");
  expect_bad_vocab(2002, "\xFF\xFE", "line 2002: invalid UTF-8");
}

TEST(BadVocabCli, DuplicateTokenFailsVerifyWithoutReports) {
  const fs::path dir = with_vocab_line(20001, "hello");
  expect_cli_bad_input(verify_args(dir, test::one_sentence_file(), tolerances_file()), dir / "vocab.txt",
                       "duplicate token \"hello\" on lines 7593 and 20001");
}

// ---------------------------------------------------------------- sentences YAML

std::string words(int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += i ? " a" : "a";
  return s;
}

TEST(BadSentences, WrongTypes) {
  expect_bad_sentences("sentences: 5\n", "line 1: sentences must be a list");
  expect_bad_sentences("sentences:\n  - hello\n", "line 2: a sentence must be a mapping");
  expect_bad_sentences("sentences:\n  - id: a\n    text: [1, 2]\n", "line 3: text must be a string");
  expect_bad_sentences("sentences:\n  - id: {x: 1}\n    text: hello\n", "line 2: id must be a string");
  expect_bad_sentences("sentences:\n  - id: a\n    text: ~\n", "line 3: text must be a string");
  expect_bad_sentences("- id: a\n  text: hello\n", "line 1: the sentences file must be a mapping");
}

TEST(BadSentences, UnknownRepeatedOrNonStringKeys) {
  expect_bad_sentences("sentence:\n  - id: a\n    text: hello\n",
                       "line 1: unknown key \"sentence\" (expected: sentences)");
  expect_bad_sentences("sentences:\n  - id: a\n    text: hello\n    lang: en\n",
                       "line 4: unknown key \"lang\" (expected: id, text)");
  expect_bad_sentences("sentences:\n  - id: a\n    id: b\n    text: hello\n", "line 3: duplicate key \"id\"");
  expect_bad_sentences("sentences:\n  - [id]: a\n    text: hello\n", "line 2: a key must be a plain string");
}

TEST(BadSentences, EmptyMissingOrDuplicateSentences) {
  expect_bad_sentences("sentences:\n  - id: a\n    text: \"\"\n", "line 2: sentence \"a\": empty sentence");
  expect_bad_sentences("sentences:\n  - id: a\n    text: \" \\t \"\n", "line 2: sentence \"a\": empty sentence");
  expect_bad_sentences("sentences: []\n", "line 1: no sentences");
  expect_bad_sentences("sentences:\n  - id: a\n", "line 2: missing key \"text\"");
  expect_bad_sentences("sentences:\n  - {id: a, text: hi}\n  - {id: a, text: ho}\n",
                       "line 3: duplicate sentence id \"a\"");
  expect_bad_sentences("", "empty YAML document");
  expect_bad_sentences("# only a comment\n", "empty YAML document");
}

TEST(BadSentences, SentenceLongerThanMaxPositionEmbeddingsIsNeverTruncated) {
  // 63 words and [CLS] [SEP] are 65 tokens; the tiny checkpoint has 64 positions.
  expect_bad_sentences("sentences:\n  - id: a\n    text: ok\n  - id: long\n    text: " + words(63) + "\n",
                       "line 4: sentence \"long\": sentence has 65 tokens, more than "
                       "max_position_embeddings 64");
  // The limit itself is allowed.
  const BertTokenizer tokenizer(tiny().vocab, tiny().tokenizer);
  EXPECT_EQ(encode_sentence(tokenizer, {"edge", words(62), 1}, 64, "s.yaml").ids.size(), 64u);
}

TEST(BadSentences, InvalidUtf8IsNamedWithItsByte) {
  expect_bad_sentences("sentences:\n  - id: a\n    text: \"caf\xE9 au lait\"\n",
                       "line 2: sentence \"a\": invalid UTF-8 at byte 3");
}

TEST(BadSentences, MalformedOrTooDeeplyNested) {
  expect_bad_sentences("sentences:\n  - id: a\n   text: hello\n", "line 3: malformed YAML: end of sequence not found");
  expect_bad_sentences("sentences: " + std::string(10000, '[') + std::string(10000, ']') + "\n",
                       "line 1: malformed YAML: nested 500 levels deep, too deep to read");
}

TEST(BadSentences, ACorpusThatIsEmptyMissingOrHoldsAnOverLongLine) {
  const fs::path dir = test::temp_dir("corpus");
  test::write_file(dir / "blank.txt", "\n  \n\t\n");
  expect_input_error([&] { SentenceStream{dir / "blank.txt"}; }, dir / "blank.txt", "no sentences");
  expect_input_error([&] { SentenceStream{dir / "none.txt"}; }, dir / "none.txt", "cannot be opened");
  // Line 3 after a blank line: the id and the line number are the file's own.
  test::write_file(dir / "long.txt", "ok\n\n" + words(63) + "\n");
  SentenceStream stream(dir / "long.txt");
  EXPECT_EQ(stream.total(), 2u);
  const std::vector<Sentence> batch = stream.next(10);
  ASSERT_EQ(batch.size(), 2u);
  EXPECT_EQ(batch[1].id, "line-3");
  const BertTokenizer tokenizer(tiny().vocab, tiny().tokenizer);
  expect_input_error([&] { encode_sentence(tokenizer, batch[1], 64, dir / "long.txt"); }, dir / "long.txt",
                     "line 3: sentence \"line-3\": sentence has 65 tokens, more than max_position_embeddings 64");
  EXPECT_TRUE(stream.next(10).empty());
}

TEST(BadSentences, MissingFile) {
  const fs::path missing = test::temp_dir("none") / "sentences.yaml";
  expect_input_error([&] { load_sentences(missing); }, missing, "no such file");
}

TEST(BadSentencesCli, NonStringKeyFailsVerifyWithoutReports) {
  // This one used to escape as a YAML::TypedBadConversion and abort the CLI.
  const fs::path file = test::temp_dir("bad") / "sentences.yaml";
  test::write_file(file, "sentences:\n  - [id]: a\n    text: hello\n");
  expect_cli_bad_input(verify_args(test::fixture("tiny-prefixed"), file, tolerances_file()), file,
                       "line 2: a key must be a plain string");
}

TEST(BadSentencesCli, TraceTextTooLongOrEmptyWritesNoTrace) {
  const fs::path out = test::temp_dir("trace") / "trace.safetensors";
  for (const auto& [text, problem] :
       {std::pair{words(63), "sentence \"text\": sentence has 65 tokens, more than max_position_embeddings 64"},
        std::pair{std::string(" "), "sentence \"text\": empty sentence"}}) {
    const test::CommandResult r = test::run_cli("trace --model " + quoted(test::fixture("tiny-prefixed")) +
                                                " --text '" + text + "' --out " + quoted(out));
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find(std::string("error: --text: ") + problem + "\n"), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(out));
  }
}

// ---------------------------------------------------------------- tolerances YAML

const std::string kDerived = "derived:\n  floor: 1\n  rules:\n    - {pattern: \"*\", k: 4}\n";

TEST(BadTolerances, MalformedWrongTypesAndUnknownKeys) {
  expect_bad_tolerances("absolute:\n  - {pattern: \"*\", atol: [1], rtol: 1}\n" + kDerived,
                        "line 2: atol must be a number");
  expect_bad_tolerances("absolute:\n  - {pattern: [a], atol: 1, rtol: 1}\n" + kDerived,
                        "line 2: pattern must be a string");
  expect_bad_tolerances("absolute:\n  - {pattern: \"*\", atol: 1e-3x, rtol: 1}\n" + kDerived,
                        "line 2: atol must be a finite number, got \"1e-3x\"");
  expect_bad_tolerances("absolute:\n  - {pattern: \"*\", atol: .inf, rtol: 1}\n" + kDerived,
                        "line 2: atol must be a finite number, got \".inf\"");
  expect_bad_tolerances("absolut:\n  - {pattern: \"*\", atol: 1, rtol: 1}\n" + kDerived,
                        "line 1: unknown key \"absolut\" (expected: derived, absolute)");
  expect_bad_tolerances("absolute:\n  - {pattern: \"*\", atol: 1, rtol: 1, {x: 1}: 2}\n" + kDerived,
                        "line 2: a key must be a plain string");
  expect_bad_tolerances("absolute: []\n" + kDerived, "line 1: absolute has no rules");
  expect_bad_tolerances("absolute:\n  - {pattern: \"\", atol: 1, rtol: 1}\n" + kDerived,
                        "line 2: pattern must not be empty");
  expect_bad_tolerances("absolute:\n  - {pattern: \"*\", atol: 1, rtol: 1}\n" + kDerived + kDerived,
                        "line 7: duplicate key \"derived\"");
  expect_bad_tolerances("absolute:\n  - {pattern: \"*\", atol: 1, rtol: 1}\nderived:\n  floor: 1\n  rules: []\n",
                        "line 5: derived rules has no rules");
  expect_bad_tolerances("absolute:\n  - {pattern: \"*\", atol: 1, rtol: 1}\nderived:\n  floor: 1\n  rules:\n"
                        "    - {pattern: \"*\", k: 0}\n", "line 6: k must be positive");
}

TEST(OracleOutOfMemory, AnOracleThatDoesNotFitIsBadInputNamingWhatFailedNotACrash) {
#ifdef __SANITIZE_ADDRESS__
  GTEST_SKIP() << "AddressSanitizer reserves terabytes of address space: no address-space limit leaves it room";
#endif
  // BERT-base's shape under an address-space limit: the fp32 and fp64 oracles need some 1.3 GB beside
  // the checkpoint; where the limit bites depends on libtorch's own mappings, so several are tried. One
  // sentence: the weights are what take the memory (a sentence's activations are a few MB).
  for (const char* limit : {"2000000000", "3000000000", "4000000000"}) {
    const test::CommandResult r =
        test::run_cli("verify --model " + quoted(test::fixture("bert-base-shape")) + " --tolerances " +
                          quoted(test::source_dir() / "fixtures/tolerances.yaml") + " --sentences " +
                          quoted(test::one_sentence_file()),
                      std::string("prlimit --as=") + limit + " ");
    if (r.exit_code == 0) continue;  // it fitted: a machine whose libtorch maps less
    EXPECT_EQ(r.exit_code, 2) << limit << ": " << r.output;
    EXPECT_NE(r.output.find("error: "), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("terminate called"), std::string::npos) << r.output;
    EXPECT_TRUE(r.output.find("oracle could not") != std::string::npos ||
                r.output.find("out of memory") != std::string::npos ||
                r.output.find("Cannot allocate memory") != std::string::npos) << r.output;
  }
}

TEST(BadTolerancesCli, NonStringKeyFailsVerifyWithoutReports) {
  // This one used to escape as a YAML::TypedBadConversion and abort the CLI.
  const fs::path file = test::temp_dir("bad") / "tolerances.yaml";
  test::write_file(file, "absolute:\n  - {pattern: \"*\", atol: 1, rtol: 1, {x: 1}: 2}\n" + kDerived);
  expect_cli_bad_input(verify_args(test::fixture("tiny-prefixed"), test::one_sentence_file(), file), file,
                       "line 2: a key must be a plain string");
}

// ---------------------------------------------------------------- reference traces

std::vector<double> ids_of(size_t n) {
  std::vector<double> ids(n, 2000);
  ids.front() = 101;
  ids.back() = 102;
  return ids;
}

fs::path reference_trace(size_t tokens, const std::map<std::string, std::string>& metadata) {
  const fs::path file = test::temp_dir("reference") / "trace.safetensors";
  write_safetensors(file, {{"input_ids", DType::I64, {static_cast<int64_t>(tokens)}, ids_of(tokens)}},
                    metadata);
  return file;
}

TEST(BadReference, EmptyOrInconsistentInputIds) {
  const fs::path dir = test::temp_dir("ref");
  write_safetensors(dir / "empty.safetensors", {{"input_ids", DType::I64, {0}, {}}}, {});
  expect_bad_reference(dir / "empty.safetensors", "input_ids is empty");
  expect_bad_reference(reference_trace(3, {{"word_ids", "[-1, 0]"}}),
                       "__metadata__ word_ids and input_ids differ in length");
  expect_bad_reference(reference_trace(3, {{"word_ids", "[-1, 0.5, -1]"}}),
                       "__metadata__ word_ids holds 0.5, not -1 or a word index");
  expect_bad_reference(reference_trace(3, {{"word_ids", "[-1, 1e30, -1]"}}),
                       "__metadata__ word_ids holds 1e+30, not -1 or a word index");
  expect_bad_reference(reference_trace(3, {{"tokens", "[\"[CLS]\"]"}}),
                       "__metadata__ tokens and input_ids differ in length");
}

TEST(BadReference, MoreTokensThanPositions) {
  expect_bad_reference(reference_trace(65, {}), "input_ids has 65 tokens, more than max_position_embeddings 64");
}

TEST(BadReferenceCli, EmptyOrTooLongInputIdsFailVerifyWithoutReports) {
  // Both used to escape from the runtime as std::invalid_argument and abort the CLI.
  const fs::path empty = test::temp_dir("ref") / "empty.safetensors";
  write_safetensors(empty, {{"input_ids", DType::I64, {0}, {}}}, {});
  const std::string model = "verify --model " + quoted(test::fixture("tiny-prefixed")) + " --tolerances " +
                            quoted(tolerances_file()) + " --reference ";
  expect_cli_bad_input(model + quoted(empty), empty, "input_ids is empty");
  const fs::path long_trace = reference_trace(65, {});
  expect_cli_bad_input(model + quoted(long_trace), long_trace,
                       "input_ids has 65 tokens, more than max_position_embeddings 64");
}

// ---------------------------------------------------------------- determinism

// Every value of every tensor, bit for bit.
void expect_bit_identical(const Trace& a, const Trace& b) {
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  for (size_t i = 0; i < a.tensors.size(); ++i) {
    const auto& [name, x] = a.tensors[i];
    const auto& [other, y] = b.tensors[i];
    ASSERT_EQ(name, other);
    ASSERT_EQ(x.shape, y.shape) << name;
    ASSERT_EQ(x.values.size(), y.values.size()) << name;
    size_t differing = 0;
    for (size_t k = 0; k < x.values.size(); ++k)
      differing += std::bit_cast<uint64_t>(x.values[k]) != std::bit_cast<uint64_t>(y.values[k]);
    EXPECT_EQ(differing, 0u) << name;
  }
}

TEST(Determinism, RuntimeTraceIsBitIdenticalAcrossRunsAndEncoders) {
  const Checkpoint ck = load_checkpoint(test::bert_mini());
  const BertTokenizer tokenizer(ck.vocab, ck.tokenizer);
  const Encoding nurse = tokenizer.encode("The nurse handed the doctor the scissors.", 512);
  const Encoding other = tokenizer.encode("A completely different sentence, of other length!", 512);

  const runtime::Encoder encoder(ck.config, ck.weights);
  const Trace first = encoder.forward(nurse);
  ASSERT_FALSE(first.tensors.empty());
  encoder.forward(other);  // no state carries over from one sentence to the next
  expect_bit_identical(first, encoder.forward(nurse));
  expect_bit_identical(first, runtime::Encoder(ck.config, ck.weights).forward(nurse));
}

}  // namespace
