// The display verdict (gate/display.h): what the instrument shows, the candidate's against the truth's,
// row by row, with rows the declared arithmetic cannot decide kept apart from wrong ones.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>

#include "audit/study_plan.h"
#include "gate/verify.h"
#include "instrument/display_spec.h"
#include "model/error.h"
#include "model/trace_io.h"
#include "runtime/encoder.h"
#include "runtime/lens.h"
#include "tests/test_support.h"

using namespace lenscheck;

namespace {

const Checkpoint& bert_mini() {
  static const Checkpoint ck = load_checkpoint(test::bert_mini());
  return ck;
}
const Tolerances& tolerances() {
  static const Tolerances t = load_tolerances(test::source_dir() / "fixtures/tolerances.yaml");
  return t;
}
const Instrument& instrument() {
  static const Instrument i =
      instrument_of(load_study_plan(test::source_dir() / "fixtures/studies/norm-weighted-attention.yaml"));
  return i;
}
// The residual lens's study: attention, ‖α·f(x)‖ and AttnResLn-N, one row per layer under the last.
const Instrument& residual_instrument() {
  static const Instrument i =
      instrument_of(load_study_plan(test::source_dir() / "fixtures/studies/residual-layernorm-sink.yaml"));
  return i;
}
const Encoding& nurse() {
  static const Encoding e = encode_sentence(BertTokenizer(bert_mini().vocab, bert_mini().tokenizer),
                                            {"s", "The nurse handed the doctor the scissors.", 0}, 512, "test");
  return e;
}

}  // namespace

TEST(Display, TheRuntimeShowsWhatTheTruthShowsOnEveryRow) {
  const std::vector<Sentence> sentences = load_sentences(test::sentences_file());
  for (const Instrument* in : {&instrument(), &residual_instrument()}) {
    SCOPED_TRACE(in->plan_file.string());
    const VerifyResult r = verify(bert_mini(), runtime_candidate(), sentences, test::sentences_file(), tolerances(),
                                  {.instrument = in});
    ASSERT_TRUE(r.display);
    const BertTokenizer tokenizer(bert_mini().vocab, bert_mini().tokenizer);
    size_t expected = 0;
    for (const Sentence& s : sentences) expected += encode_sentence(tokenizer, s, 512, "test").words.size();
    EXPECT_EQ(r.display->rows, expected * in->lenses.size());
    EXPECT_EQ(r.display->wrong(), 0u);
    EXPECT_LT(r.display->undecidable(), r.display->rows / 20) << "fp32's own error decides nearly every row";
    EXPECT_TRUE(r.pass());
  }
}

// A residual-lens row moved to [CLS] in one layer is wrong under that lens alone, named by its layer.
TEST(Display, ARowMovedUnderTheResidualLensIsWrongUnderThatLens) {
  const auto& ck = bert_mini();
  const Encoding& enc = nurse();
  Trace t = runtime::Encoder(ck.config, ck.weights).forward(enc);
  const size_t T = enc.ids.size(), query = 2;  // word 1, "nurse"
  for (int l = 0; l < ck.config.num_hidden_layers; ++l) {
    Tensor& w = *t.find(lens_tensor(Lens::residual_layernorm, l));
    for (size_t j = 0; j < T; ++j) w.values[query * T + j] = j == 0 ? 1.0 : 0.0;
  }
  const auto dir = test::temp_dir("residual_sinking_row");
  save_trace(dir / "t.safetensors", t);
  const VerifyResult r =
      verify_reference(ck, dir / "t.safetensors", tolerances(), {.instrument = &residual_instrument()});
  ASSERT_TRUE(r.display);
  EXPECT_FALSE(r.display->pass());
  size_t wrong = 0, heads = 0;
  for (const DisplayRow& row : r.display->flagged)
    if (row.wrong()) {
      ++wrong;
      EXPECT_EQ(row.lens, Lens::residual_layernorm);
      EXPECT_EQ(row.word, "nurse");
      for (const DisplayItem& i : row.items)  // a layer opened, not a head
        if (i.what == "head") {
          ++heads;
          EXPECT_TRUE(i.candidate.ends_with(".*") && i.truth.ends_with(".*")) << i.candidate;
        }
    }
  EXPECT_EQ(wrong, 1u);
  EXPECT_EQ(heads, 1u);  // the moved row has no content peak: the rule opens layer 0, the truth another
}

TEST(Display, ARowThatSinksWhereTheTruthDoesNotIsWrongUnderEveryLens) {
  const auto& ck = bert_mini();
  const Encoding& enc = nurse();
  Trace t = runtime::Encoder(ck.config, ck.weights).forward(enc);
  // Word 1 ("nurse", token 2) sends every head's whole row to [CLS], in every lens tensor.
  const size_t T = enc.ids.size(), query = 2;
  for (int l = 0; l < ck.config.num_hidden_layers; ++l)
    for (Lens lens : {Lens::attention, Lens::value_norm, Lens::transformed_norm}) {
      Tensor& w = *t.find(lens_tensor(lens, l));
      for (int h = 0; h < ck.config.num_attention_heads; ++h)
        for (size_t j = 0; j < T; ++j) w.values[(size_t(h) * T + query) * T + j] = j == 0 ? 1.0 : 0.0;
    }
  const auto dir = test::temp_dir("sinking_row");
  save_trace(dir / "t.safetensors", t);
  const VerifyResult r = verify_reference(ck, dir / "t.safetensors", tolerances(), {.instrument = &instrument()});
  ASSERT_TRUE(r.display);
  EXPECT_FALSE(r.display->pass());
  EXPECT_FALSE(r.pass());
  std::vector<Lens> wrong_lenses;
  for (const DisplayRow& row : r.display->flagged) {
    if (!row.wrong()) continue;
    EXPECT_EQ(row.at, 1) << row.word;
    EXPECT_EQ(row.word, "nurse");
    wrong_lenses.push_back(row.lens);
    const bool names_the_sink = std::any_of(row.items.begin(), row.items.end(), [](const DisplayItem& i) {
      return i.differs && (i.what == "sink share" || i.what == "head");
    });
    EXPECT_TRUE(names_the_sink) << lens_name(row.lens);
  }
  EXPECT_EQ(wrong_lenses.size(), instrument().lenses.size());
  // The headline counts them as rows that print differently, beyond what fp32 explains.
  const size_t wrong = r.display->wrong();
  EXPECT_EQ(r.display->differing(), wrong);
  EXPECT_NE(r.display->headline("fp32").find(fmt::format("{} of {} rows print differently from fp64: 0 within fp32's "
                                                         "error, {} beyond it", wrong, r.display->rows, wrong)),
            std::string::npos) << r.display->headline("fp32");
}

TEST(Display, ACoarserDeclaredArithmeticLeavesMoreRowsUndecidableAndNoneWrong) {
  const std::vector<Sentence> sentences = load_sentences(test::sentences_file());
  const VerifyResult fp32 = verify(bert_mini(), runtime_candidate(), sentences, test::sentences_file(), tolerances(), {.instrument = &instrument()});
  const VerifyResult int8 = verify(bert_mini(), runtime_candidate(), sentences, test::sentences_file(), tolerances(),
                                             {.arithmetic = Arithmetic::int8, .instrument = &instrument()});
  ASSERT_TRUE(fp32.display && int8.display);
  EXPECT_EQ(int8.display->wrong(), 0u);  // the fp32 runtime errs far less than int8 may
  EXPECT_EQ(int8.display->differing(), int8.display->explained());
  EXPECT_GT(int8.display->undecidable(), 5 * std::max<size_t>(1, fp32.display->undecidable()));
  for (const DisplayRow& row : int8.display->flagged)
    for (const DisplayItem& i : row.items) {
      EXPECT_FALSE(i.decidable);
      EXPECT_LE(i.margin, i.error) << row.sentence << " " << row.word << " " << i.what;
    }
}

// One rule at a threshold for the flag and the audit's count (rows_with_sink_above): strictly above it,
// so a row sinking exactly half its weight is neither flagged nor counted.
TEST(Display, AFlagIsRaisedAboveItsThresholdNotAtIt) {
  const DisplaySpec spec{2, 3, {0.5, 0.9}};
  WordRow at_half;
  at_half.cls = 0.25;
  at_half.sep = 0.25;
  at_half.content = {0.3, 0.2};
  ASSERT_EQ(at_half.sink_share(), 0.5);
  EXPECT_EQ(printed_row(at_half, 0, spec).flags, (std::vector<bool>{false, false}));
  WordRow above_half = at_half;
  above_half.cls = 0.26;
  above_half.content = {0.29, 0.2};
  EXPECT_EQ(printed_row(above_half, 0, spec).flags, (std::vector<bool>{true, false}));
}

TEST(Display, APlanWithoutADisplayFileOrWithABadOneIsBadInput) {
  const auto dir = test::temp_dir("display_plans");
  test::write_file(dir / "plan.yaml",
                   test::read_file(test::source_dir() / "fixtures/studies/norm-weighted-attention.yaml"));
  const test::CommandResult r = test::run_cli("verify --model " + test::quoted(test::bert_mini()) + " --sentences " +
                                              test::quoted(test::sentences_file()) + " --plan " +
                                              test::quoted(dir / "plan.yaml"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("plan.display.yaml: no such file: the display verdict on study plan"), std::string::npos)
      << r.output;
  for (const auto& [text, problem] : std::vector<std::pair<std::string, std::string>>{
           {"decimals: 9\ntop_targets: 3\nsink_flags: [0.5]\n", "decimals must be 0 to 6"},
           {"decimals: 2\ntop_targets: 3\nsink_flags: [0.9, 0.5]\n", "sink_flags must ascend"},
           {"decimals: 2\nsink_flags: [0.5]\n", "top_targets"},
           {"decimals: 2\ntop_targets: 3\nsink_flags: [1.5]\n", "strictly between 0 and 1"},
           {"decimals: 2\ntop_targets: 3\nsink_flags: [0.5]\nhead_rule: min_sink\n", "head_rule"}}) {
    test::write_file(dir / "plan.display.yaml", text);
    try {
      instrument_of(load_study_plan(dir / "plan.yaml"));
      ADD_FAILURE() << text;
    } catch (const InputError& e) {
      EXPECT_EQ(e.file(), dir / "plan.display.yaml");
      EXPECT_NE(std::string(e.what()).find(problem), std::string::npos) << e.what();
    }
  }
}

TEST(Display, ANonFiniteWeightMakesItsRowWrongAndTheReportsStillGetWritten) {
  const auto& ck = bert_mini();
  const Encoding& enc = nurse();
  Trace t = runtime::Encoder(ck.config, ck.weights).forward(enc);
  t.find("layer.2.lens.value_norm")->values[3 * enc.ids.size() + 4] = std::nan("");  // head 0, token 3 → token 4
  const auto dir = test::temp_dir("nan_row");
  save_trace(dir / "t.safetensors", t);
  const VerifyResult r = verify_reference(ck, dir / "t.safetensors", tolerances(), {.instrument = &instrument()});
  ASSERT_TRUE(r.display);
  ASSERT_EQ(r.display->wrong(), 1u);
  EXPECT_EQ(r.display->flagged.front().at, 2);  // token 3 is "handed", word 2
  EXPECT_EQ(r.display->flagged.front().lens, Lens::value_norm);
  EXPECT_FALSE(r.pass());
}

TEST(Display, ATraceWithoutWordIdsOrPrecisionGetsTheTensorVerdictAsFp32) {
  const auto& ck = bert_mini();
  const Encoding& enc = nurse();
  Trace t = runtime::Encoder(ck.config, ck.weights).forward(enc);
  t.word_ids.clear();
  t.precision.clear();
  const auto dir = test::temp_dir("bare_trace");
  save_trace(dir / "t.safetensors", t);
  const VerifyResult r = verify_reference(ck, dir / "t.safetensors", tolerances(), {.instrument = &instrument()});
  EXPECT_FALSE(r.display);
  EXPECT_EQ(r.gate.arithmetic, Arithmetic::fp32);
  EXPECT_TRUE(r.pass());
  EXPECT_TRUE(std::any_of(r.notes.begin(), r.notes.end(),
                          [](const std::string& n) { return n.find("no display verdict") != std::string::npos; }));
}
