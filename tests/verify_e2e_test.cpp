// End to end on the bundled checkpoint: the gate passes on the real runtime, fails on a perturbed
// trace and names the tensor, and turns bad input into exit code 2.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "audit/study_plan.h"
#include "common/report_file.h"
#include "gate/verify.h"
#include "gate/verify_report.h"
#include "model/error.h"
#include "model/trace_io.h"
#include "runtime/encoder.h"
#include "tests/test_support.h"

using namespace lenscheck;
namespace fs = std::filesystem;

namespace {

const Checkpoint& bert_mini() {
  static const Checkpoint ck = load_checkpoint(test::bert_mini());
  return ck;
}
using test::quoted;

// The runtime with its attention scores and probabilities taken out of every trace; `declared`: its runs
// say so, as a candidate that cannot reach them does.
Candidate runtime_without_attention(bool declared) {
  Candidate c = runtime_candidate();
  c.run = [run = c.run, declared](const Checkpoint& ck, const std::vector<Encoding>& inputs,
                                  const runtime::Stages* stages, unsigned threads) {
    CandidateRun r = run(ck, inputs, stages, threads);
    auto attention = [](const auto& named) {
      return named.first.ends_with(".attention.scores") || named.first.ends_with(".attention.probs");
    };
    for (Trace& t : r.traces) std::erase_if(t.tensors, attention);
    for (int l = 0; declared && l < ck.config.num_hidden_layers; ++l)
      for (LayerTensor t : {LayerTensor::scores, LayerTensor::probs})
        r.unreachable.push_back({trace_name(l, t), "taken out by the test"});
    return r;
  };
  return c;
}

}  // namespace

TEST(VerifyEndToEnd, TheRuntimePassesTheDerivedGateOnEveryTensorOfEverySentence) {
  const auto sentences_file = test::sentences_file();
  const Tolerances tol = load_tolerances(test::source_dir() / "fixtures/tolerances.yaml");
  const std::vector<Sentence> sentences = load_sentences(sentences_file);
  const VerifyResult r = verify(bert_mini(), runtime_candidate(), sentences, sentences_file, tol, {});
  EXPECT_TRUE(r.pass());
  EXPECT_EQ(r.gate.reference, "oracle fp64");
  ASSERT_EQ(r.sentences.size(), sentences.size());
  const size_t per_sentence = trace_schema(bert_mini().config, 1).size();
  for (const SentenceVerdict& v : r.sentences) {
    EXPECT_EQ(v.gate.tensors.size(), per_sentence) << v.sentence.id;
    for (const TensorComparison& t : v.gate.tensors) {
      EXPECT_GT(t.elements, 0u) << t.name;
      ASSERT_TRUE(t.derived) << t.name;
      EXPECT_GT(t.derived->benchmark_error, 0) << t.name;  // libtorch's fp32 is not the truth
    }
  }
  // The goals of the foundation issue, measured against the truth: probabilities within 2e-6, ||v||
  // within 1e-6 relative.
  for (const TensorSummary& f : r.gate.families) {
    if (f.name == "layer.*.attention.probs") {
      EXPECT_LE(f.max_abs, 2e-6);
    }
    if (f.name == "layer.*.value_norm") {
      EXPECT_LE(f.max_rel, 1e-6);
    }
  }
}

// A candidate that cannot give some tensors is judged on the others, and the reports name what it could not
// give; the tensors computed from those are judged locally as spans through them (and listed); a tensor
// missing unannounced still fails, and without the last layer's output there is no verdict.
TEST(VerifyEndToEnd, APartialTraceIsJudgedOnWhatItHoldsAndTheReportNamesWhatItCannotGive) {
  const fs::path dir = test::temp_dir("partial");
  const fs::path one = test::one_sentence_file();
  const std::vector<Sentence> sentences = load_sentences(one);
  const Tolerances tol = load_tolerances(test::source_dir() / "fixtures/tolerances.yaml");
  const Instrument instrument =
      instrument_of(load_study_plan(test::source_dir() / "fixtures/studies/norm-weighted-attention.yaml"));
  const int layers = bert_mini().config.num_hidden_layers;

  const VerifyResult partial =
      verify(bert_mini(), runtime_without_attention(true), sentences, one, tol, {.instrument = &instrument});
  EXPECT_TRUE(partial.pass());
  EXPECT_EQ(partial.unreachable.size(), size_t(2 * layers));
  EXPECT_EQ(partial.sentences[0].gate.tensors.size(), trace_schema(bert_mini().config, 1).size() - 2 * layers);
  for (const TensorSummary& f : partial.gate.families) EXPECT_EQ(f.name.find(".attention.probs"), std::string::npos);
  // The instrument shows the probabilities: no display verdict, and the reports say why.
  EXPECT_FALSE(partial.display);
  EXPECT_NE(std::find(partial.notes.begin(), partial.notes.end(),
                      "no display verdict: the instrument shows layer.0.attention.probs, which the candidate cannot give"),
            partial.notes.end());
  write_verify_markdown(partial, dir / "verify.md");
  EXPECT_NE(test::read_file(dir / "verify.md")
                .find(fmt::format("  - `layer.*.attention.probs` ({} layers): taken out by the test", layers)),
            std::string::npos)
      << test::read_file(dir / "verify.md");
  for (const TensorComparison& t : partial.sentences[0].gate.tensors) EXPECT_TRUE(t.local) << t.name;
  EXPECT_NE(test::read_file(dir / "verify.md")
                .find("| `span layer.0.attention.query + layer.0.attention.key + layer.0.attention.value → "
                      "layer.0.attention.context through layer.0.attention.scores, layer.0.attention.probs` |"),
            std::string::npos)
      << test::read_file(dir / "verify.md");

  const VerifyResult unannounced =
      verify(bert_mini(), runtime_without_attention(false), sentences, one, tol, {});
  EXPECT_FALSE(unannounced.pass());
  const auto probs = std::find_if(unannounced.gate.tensors.begin(), unannounced.gate.tensors.end(),
                                  [](const TensorSummary& t) { return t.name == "layer.0.attention.probs"; });
  ASSERT_NE(probs, unannounced.gate.tensors.end());
  EXPECT_NE(probs->problem.find("missing from the candidate trace"), std::string::npos) << probs->problem;

  Candidate without_output = runtime_candidate();
  without_output.run = [run = without_output.run](const Checkpoint& ck, const std::vector<Encoding>& inputs,
                                                  const runtime::Stages* stages, unsigned threads) {
    CandidateRun r = run(ck, inputs, stages, threads);
    r.unreachable.push_back({trace_name(ck.config.num_hidden_layers - 1, LayerTensor::output), "not in the graph"});
    return r;
  };
  EXPECT_THROW(verify(bert_mini(), without_output, sentences, one, tol, {}), InputError);
}

TEST(VerifyEndToEnd, TheAbsoluteRuleIsThereWhenAskedFor) {
  const auto sentences_file = test::sentences_file();
  const Tolerances tol = load_tolerances(test::source_dir() / "fixtures/tolerances.yaml");
  const VerifyResult r = verify(bert_mini(), runtime_candidate(), load_sentences(sentences_file), sentences_file, tol,
                                          {.rule = Rule::absolute});
  EXPECT_TRUE(r.pass());
  EXPECT_EQ(r.gate.reference, "oracle fp32");
  for (const TensorComparison& t : r.sentences.front().gate.tensors) EXPECT_FALSE(t.derived) << t.name;
}

TEST(VerifyEndToEnd, ACheckpointWithTrainedStatisticsPassesTheDerivedGateAndFailsTheAbsoluteOne) {
  // The false alarm the derived rule exists for: libtorch's own fp32 misses fp64 on trained-like
  // weights by more than the absolute tolerances allow, and so does a correct runtime.
  const Checkpoint ck = load_checkpoint(test::fixture("trained-mini"));
  const auto sentences_file = test::sentences_file();
  const auto sentences = load_sentences(sentences_file);
  const Tolerances tol = load_tolerances(test::source_dir() / "fixtures/tolerances.yaml");
  EXPECT_TRUE(verify(ck, runtime_candidate(), sentences, sentences_file, tol, {}).pass());
  EXPECT_FALSE(verify(ck, runtime_candidate(), sentences, sentences_file, tol, {.rule = Rule::absolute}).pass());
}

TEST(VerifyEndToEnd, ACheckpointWhoseAttentionSaturatesPassesTheDerivedGate) {
  // Scores up to 120, past fp32's exp range, and content attention that rounds to exactly 0 in fp32
  // where the fp64 truth keeps 1e-52: the gate must judge such rows as it judges soft ones.
  const Checkpoint ck = load_checkpoint(test::fixture("saturated-sink"));
  const auto sentences_file = test::sentences_file();
  const Tolerances tol = load_tolerances(test::source_dir() / "fixtures/tolerances.yaml");
  const VerifyResult r = verify(ck, runtime_candidate(), load_sentences(sentences_file), sentences_file, tol, {});
  EXPECT_TRUE(r.pass());
  for (const SentenceVerdict& v : r.sentences)
    for (const TensorComparison& t : v.gate.tensors) EXPECT_GT(t.elements, 0u) << t.name;
  // What makes it saturated, on the runtime's own trace of one sentence.
  const Encoding enc = BertTokenizer(ck.vocab, ck.tokenizer).encode("The nurse handed the doctor the scissors.", 512);
  const Trace trace = runtime::Encoder(ck.config, ck.weights).forward(enc);
  const Tensor& scores = *trace.find("layer.0.attention.scores");
  const Tensor& probs = *trace.find("layer.0.attention.probs");
  EXPECT_GT(*std::max_element(scores.values.begin(), scores.values.end()), 88.8);  // log(FLT_MAX) = 88.72
  EXPECT_GT(std::count(probs.values.begin(), probs.values.end(), 0.0), 0);
}

TEST(VerifyEndToEnd, ResultsDoNotDependOnTheThreadCount) {
  const auto sentences_file = test::sentences_file();
  const auto sentences = load_sentences(sentences_file);
  const Tolerances tol = load_tolerances(test::source_dir() / "fixtures/tolerances.yaml");
  const VerifyResult one = verify(bert_mini(), runtime_candidate(), sentences, sentences_file, tol, {.threads = 1});
  const VerifyResult two = verify(bert_mini(), runtime_candidate(), sentences, sentences_file, tol, {.threads = 2});
  ASSERT_EQ(one.sentences.size(), two.sentences.size());
  for (size_t s = 0; s < one.sentences.size(); ++s) {
    EXPECT_EQ(one.sentences[s].sentence.id, two.sentences[s].sentence.id);
    const auto& a = one.sentences[s].gate.tensors;
    const auto& b = two.sentences[s].gate.tensors;
    ASSERT_EQ(a.size(), b.size());
    for (size_t t = 0; t < a.size(); ++t) {
      EXPECT_EQ(a[t].max_abs, b[t].max_abs) << a[t].name;  // exact: the same bits were compared
      EXPECT_EQ(a[t].max_ulp, b[t].max_ulp) << a[t].name;
      EXPECT_EQ(a[t].worst, b[t].worst) << a[t].name;
      EXPECT_EQ(a[t].derived->ratio, b[t].derived->ratio) << a[t].name;
    }
  }
}

TEST(VerifyEndToEnd, APerturbedTraceFailsAndNamesTheTensor) {
  const auto dir = test::temp_dir("perturbed");
  const auto trace_file = dir / "oracle.safetensors";
  auto r = test::run_cli("trace --model " + quoted(test::bert_mini()) +
                         " --text 'The nurse handed the doctor the scissors.' --impl oracle --out " +
                         quoted(trace_file));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string tol = quoted(test::source_dir() / "fixtures/tolerances.yaml");

  // The fp32 oracle's own trace, read back from disk, is judged against the fp64 oracle like the runtime:
  // it is libtorch's error exactly, ratio 1.
  r = test::run_cli("verify --model " + quoted(test::bert_mini()) + " --tolerances " + tol +
                    " --reference " + quoted(trace_file));
  EXPECT_EQ(r.exit_code, 0) << r.output;

  // One attention probability moved by 1e-4: the gate fails there, not earlier, and says where. Locally
  // the ops that read it fail too: the trace's context and lenses were not computed from that probability.
  Trace t = load_trace(trace_file, bert_mini().vocab);
  Tensor* probs = t.find("layer.2.attention.probs");
  ASSERT_NE(probs, nullptr);
  const size_t T = t.tokens.size();
  probs->values[(1 * T + 2) * T + 7] += 1e-4;  // head 1, "nurse" → "scissors"
  const auto perturbed = dir / "perturbed.safetensors";
  save_trace(perturbed, t);
  const auto junit = dir / "verify.xml";
  r = test::run_cli("verify --model " + quoted(test::bert_mini()) + " --tolerances " + tol +
                    " --reference " + quoted(perturbed) + " --junit " + quoted(junit) + " --report " +
                    quoted(dir / "verify.md"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("first divergence at layer.2.attention.probs[h1, nurse@2 → scissors@7]"),
            std::string::npos) << r.output;
  const std::string xml = test::read_file(junit);
  // Every tensor computed from the probabilities but one: the attention mixing ratio, a share of two norms
  // of which one element moved, stays within its bound.
  const std::vector<std::string> failing = {"attention.probs",
                                            "attention.context",
                                            "lens.value_norm",
                                            "lens.transformed_norm",
                                            "lens.summed_transformed_norm",
                                            "lens.residual_norm",
                                            "lens.residual_layernorm_norm",
                                            "mixing_ratio.residual",
                                            "mixing_ratio.residual_layernorm"};
  EXPECT_NE(xml.find(fmt::format("failures=\"{}\"", failing.size())), std::string::npos) << xml;
  for (const std::string& name : failing)
    EXPECT_NE(xml.find("name=\"layer.2." + name + "\"><failure"), std::string::npos) << name << "\n" << xml;
  // The heat map beside the report shows the failing cells, and only them, past their bound.
  EXPECT_NE(test::read_file(dir / "verify.md").find("](verify.svg)"), std::string::npos);
  const std::string svg = test::read_file(dir / "verify.svg");
  const size_t cell = svg.find("<title>layer.2.attention.probs:");
  ASSERT_NE(cell, std::string::npos) << svg;
  EXPECT_NE(svg.rfind("fill=\"#7f0000\"", cell), std::string::npos);
  size_t past_bound = 0;
  for (size_t at = svg.find("fill=\"#7f0000\" stroke"); at != std::string::npos; at = svg.find("fill=\"#7f0000\" stroke", at + 1))
    ++past_bound;
  EXPECT_EQ(past_bound, failing.size()) << svg;
}

TEST(VerifyEndToEnd, BadInputExitsWithTwoAndNamesTheFile) {
  auto r = test::run_cli("verify --model /nonexistent/model");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("/nonexistent/model: not a checkpoint directory"), std::string::npos) << r.output;

  const auto dir = test::temp_dir("bad");
  std::string words = std::string(3000, 'a');  // one word of over 100 characters: one [UNK]
  for (int i = 0; i < 600; ++i) words += " b";
  test::write_file(dir / "sentences.yaml", "sentences:\n  - id: long\n    text: \"" + words + "\"\n");
  r = test::run_cli("verify --model " + quoted(test::bert_mini()) + " --tolerances " +
                    quoted(test::source_dir() / "fixtures/tolerances.yaml") + " --sentences " +
                    quoted(dir / "sentences.yaml"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("sentences.yaml: line 2: sentence \"long\": sentence has 603 tokens, more than "
                          "max_position_embeddings 512"), std::string::npos) << r.output;

  test::write_file(dir / "unknown.yaml", "sentences:\n  - id: a\n    txt: hello\n");
  r = test::run_cli("verify --model " + quoted(test::bert_mini()) + " --tolerances " +
                    quoted(test::source_dir() / "fixtures/tolerances.yaml") + " --sentences " +
                    quoted(dir / "unknown.yaml"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("unknown.yaml: line 3: unknown key \"txt\""), std::string::npos) << r.output;
}

// verify runs a candidate on at most 16 sentences at a time, so that a long sentence file never holds
// every trace at once; every sentence is still judged, in the file's order.
TEST(VerifyEndToEnd, ALongSentenceFileRunsInPartsAndIsJudgedWhole) {
  const auto sentences_file = test::sentences_file();
  std::vector<Sentence> sentences = load_sentences(sentences_file);
  for (size_t i = 0; sentences.size() < 20; ++i) {
    Sentence again = sentences[i];
    again.id += "-again";
    sentences.push_back(again);
  }
  const Tolerances tol = load_tolerances(test::source_dir() / "fixtures/tolerances.yaml");
  std::vector<size_t> runs;
  Candidate counted = runtime_candidate();
  counted.run = [&runs, runtime = runtime_candidate()](const Checkpoint& ck, const std::vector<Encoding>& inputs,
                                                       const runtime::Stages* stages, unsigned threads) {
    runs.push_back(inputs.size());
    return runtime.run(ck, inputs, stages, threads);
  };
  const Checkpoint tiny = load_checkpoint(test::fixture("tiny-prefixed"));  // 2 layers: the parts are the point
  const VerifyResult r = verify(tiny, counted, sentences, sentences_file, tol, {.threads = 2});
  EXPECT_EQ(runs, (std::vector<size_t>{16, 4}));
  ASSERT_EQ(r.sentences.size(), 20u);
  for (size_t i = 0; i < sentences.size(); ++i) {
    EXPECT_EQ(r.sentences[i].sentence.id, sentences[i].id);
    EXPECT_FALSE(r.sentences[i].gate.tensors.empty()) << sentences[i].id;
  }
  EXPECT_EQ(r.gate.candidate, "runtime fp32");
  EXPECT_TRUE(r.pass());
}

// `--sentences` also takes a corpus of one sentence per line, as make-corpus writes it and the audit reads it
// (ids line-N, blank lines skipped), and `--limit N` judges its first N. Past the first kSentencesInDetail,
// the reports give each passing sentence one line (JSON, JUnit) or a count (Markdown), so that a corpus's
// reports stay small.
TEST(VerifyEndToEnd, ACorpusIsJudgedUpToItsLimitAndItsReportsDetailOnlyItsFirstSentences) {
  const auto dir = test::temp_dir("corpus");
  std::string corpus;
  for (int line = 1; line <= 25; ++line)
    corpus += line == 3 ? "\n" : fmt::format("The nurse handed the doctor {} scissors.\n", line);
  test::write_file(dir / "corpus.txt", corpus);
  const std::string args = "verify --model " + quoted(test::fixture("tiny-prefixed")) + " --sentences " +
                           quoted(dir / "corpus.txt");
  const auto r = test::run_cli(args + " --limit 23 --report " + quoted(dir / "v.md") + " --json " +
                               quoted(dir / "v.json") + " --junit " + quoted(dir / "v.xml"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto sentences = nlohmann::json::parse(test::read_file(dir / "v.json")).at("sentences");
  ASSERT_EQ(sentences.size(), 23u);
  EXPECT_EQ(sentences[0].at("id"), "line-1");
  EXPECT_EQ(sentences[2].at("id"), "line-4");  // line 3 is blank
  EXPECT_EQ(sentences[22].at("id"), "line-24");
  for (size_t i = 0; i < sentences.size(); ++i) EXPECT_EQ(sentences[i].contains("gate"), i < kSentencesInDetail) << i;
  EXPECT_EQ(sentences[22].at("pass"), true);
  const std::string markdown = test::read_file(dir / "v.md");
  EXPECT_NE(markdown.find("(23 sentences)"), std::string::npos) << markdown;
  EXPECT_NE(markdown.find("… and 3 more sentences, each passing"), std::string::npos) << markdown;
  const std::string junit = test::read_file(dir / "v.xml");
  size_t suites = 0, whole_trace_cases = 0;
  for (size_t at = junit.find("<testsuite "); at != std::string::npos; at = junit.find("<testsuite ", at + 1)) ++suites;
  for (size_t at = junit.find("name=\"gate\""); at != std::string::npos; at = junit.find("name=\"gate\"", at + 1))
    ++whole_trace_cases;
  EXPECT_EQ(suites, 23u);
  EXPECT_EQ(whole_trace_cases, 3u);

  EXPECT_EQ(test::run_cli(args + " --limit 0").exit_code, 2);
  const auto with_reference = test::run_cli(args + " --limit 2 --reference " + quoted(dir));
  EXPECT_EQ(with_reference.exit_code, 2) << with_reference.output;
}

// A folder of reference traces is a candidate like any other, one sentence per file; two traces of one
// sentence (say, two builds of the same runtime) are each judged as their own file, in name order.
TEST(VerifyEndToEnd, ReferenceTracesOfOneSentenceAreEachJudgedAsTheirOwnFile) {
  const Encoding enc = BertTokenizer(bert_mini().vocab, bert_mini().tokenizer).encode("The nurse handed the doctor the scissors.", 512);
  const Trace good = runtime::Encoder(bert_mini().config, bert_mini().weights).forward(enc);
  Trace bad = good;
  for (double& x : bad.find("layer.2.attention.value")->values) x *= 1.01;
  const auto dir = test::temp_dir("same_sentence");
  save_trace(dir / "a-good.safetensors", good);
  save_trace(dir / "b-bad.safetensors", bad);
  save_trace(dir / "c-good.safetensors", good);
  const Tolerances tol = load_tolerances(test::source_dir() / "fixtures/tolerances.yaml");
  const VerifyResult r = verify_reference(bert_mini(), dir, tol, {});
  ASSERT_EQ(r.sentences.size(), 3u);
  EXPECT_EQ(r.sentences[0].sentence.id, "a-good.safetensors");
  EXPECT_TRUE(r.sentences[0].gate.pass());
  EXPECT_EQ(r.sentences[1].sentence.id, "b-bad.safetensors");
  ASSERT_FALSE(r.sentences[1].gate.pass());
  EXPECT_EQ(r.sentences[1].gate.first_divergence()->name, "layer.2.attention.value");
  EXPECT_TRUE(r.sentences[2].gate.pass());
  EXPECT_FALSE(r.pass());
}

// A trace written before the schema grew is judged on what it holds: the residual lens it lacks is derived
// from its own tensors where their inputs are there (as for onnx:PATH), a tensor it lacks is judged inside a
// span or listed as missing, and a fault in what it holds still fails. --require-all keeps the strict rule.
TEST(VerifyEndToEnd, ATraceOfAnOlderSchemaIsJudgedOnWhatItHolds) {
  const Encoding enc =
      BertTokenizer(bert_mini().vocab, bert_mini().tokenizer).encode("The nurse handed the doctor the scissors.", 512);
  const Trace full = runtime::Encoder(bert_mini().config, bert_mini().weights).forward(enc);
  const int layers = bert_mini().config.num_hidden_layers;
  const std::string last = trace_name(layers - 1, LayerTensor::output);
  const Tolerances tol = load_tolerances(test::source_dir() / "fixtures/tolerances.yaml");
  const auto dir = test::temp_dir("older_schema");
  auto without = [&](const std::string& file, const std::function<bool(const std::string&)>& dropped) {
    Trace t = full;
    std::erase_if(t.tensors, [&](const auto& named) { return dropped(named.first); });
    save_trace(dir / file, t);
    return t;
  };
  auto summary = [](const VerifyResult& r, const std::string& name) {
    const auto it = std::find_if(r.gate.tensors.begin(), r.gate.tensors.end(),
                                 [&](const TensorSummary& t) { return t.name == name; });
    return it == r.gate.tensors.end() ? nullptr : &*it;
  };

  // Without the residual lens: derived from the trace's own tensors, and judged.
  const Trace no_residual = without("no-residual.safetensors", is_residual_lens);
  VerifyResult r = verify_reference(bert_mini(), dir / "no-residual.safetensors", tol, {});
  EXPECT_TRUE(r.pass());
  EXPECT_EQ(r.derived.size(), size_t(5 * layers));
  EXPECT_TRUE(r.unreachable.empty());
  ASSERT_NE(summary(r, "layer.2.mixing_ratio.residual_layernorm"), nullptr);
  EXPECT_TRUE(summary(r, "layer.2.mixing_ratio.residual_layernorm")->pass());
  write_verify_json(r, dir / "derived.json");
  EXPECT_EQ(nlohmann::json::parse(test::read_file(dir / "derived.json"))["derived"][0], "layer.0.lens.residual_norm");
  write_verify_markdown(r, dir / "derived.md");
  EXPECT_NE(test::read_file(dir / "derived.md")
                .find(fmt::format("  - `layer.*.mixing_ratio.attention` ({} layers): derived\n", layers)),
            std::string::npos)
      << test::read_file(dir / "derived.md");
  write_verify_junit(r, dir / "derived.xml");
  EXPECT_NE(test::read_file(dir / "derived.xml")
                .find("<property name=\"derived\" value=\"layer.0.lens.residual_norm, layer.0.lens.residual_layernorm_norm"),
            std::string::npos)
      << test::read_file(dir / "derived.xml");

  // A fault in a tensor it holds fails there, first, and the residual lens derived from it fails too.
  Trace faulty = no_residual;
  for (double& x : faulty.find("layer.2.attention.value")->values) x *= 1.01;
  save_trace(dir / "faulty.safetensors", faulty);
  r = verify_reference(bert_mini(), dir / "faulty.safetensors", tol, {});
  ASSERT_FALSE(r.pass());
  EXPECT_EQ(r.sentences[0].gate.first_divergence()->name, "layer.2.attention.value");
  EXPECT_FALSE(summary(r, "layer.2.lens.residual_layernorm_norm")->pass());

  // The strict rule: every tensor the trace lacks fails, named.
  r = verify_reference(bert_mini(), dir / "no-residual.safetensors", tol, {.require_all = true});
  ASSERT_FALSE(r.pass());
  EXPECT_TRUE(r.derived.empty());
  for (int l = 0; l < layers; ++l)
    EXPECT_EQ(summary(r, trace_name(l, LayerTensor::mixing_ratio_attention))->problem,
              "no-residual.safetensors: missing from the candidate trace");

  // The traces: without attention.pre_norm either, the residual lens cannot be derived. The
  // pre-LayerNorm state is inside attention.output's op, judged locally from its context and input; the
  // reports say which tensors were judged, derived, spanned or missing.
  without("no-pre-norm.safetensors",
          [](const std::string& n) { return is_residual_lens(n) || n.ends_with(".attention.pre_norm"); });
  r = verify_reference(bert_mini(), dir / "no-pre-norm.safetensors", tol, {});
  EXPECT_TRUE(r.pass());
  EXPECT_TRUE(r.derived.empty());
  ASSERT_EQ(r.unreachable.size(), size_t(6 * layers));
  EXPECT_EQ(r.unreachable[1].tensor, "layer.0.lens.residual_norm");
  EXPECT_EQ(r.unreachable[1].why, "not in the trace, nor derivable without layer.*.attention.pre_norm");
  write_verify_markdown(r, dir / "verify.md");
  write_verify_json(r, dir / "verify.json");
  write_verify_junit(r, dir / "verify.xml");
  const std::string md = test::read_file(dir / "verify.md");
  EXPECT_NE(md.find(fmt::format("0 tensors derived by lenscheck from the candidate's own; not judged themselves, {} "
                                "tensors the candidate cannot give: 0 spanned",
                                6 * layers)),
            std::string::npos)
      << md;
  EXPECT_NE(md.find(fmt::format("  - `layer.*.attention.pre_norm` ({} layers): not in the trace; missing\n", layers)),
            std::string::npos)
      << md;
  EXPECT_NE(md.find(fmt::format("  - `layer.*.mixing_ratio.residual` ({} layers): not in the trace, nor derivable "
                                "without layer.*.attention.pre_norm; missing\n",
                                layers)),
            std::string::npos)
      << md;
  const auto json = nlohmann::json::parse(test::read_file(dir / "verify.json"));
  EXPECT_EQ(json["unreachable"][0]["tensor"], "layer.0.attention.pre_norm");
  EXPECT_EQ(json["unreachable"][0]["state"], "missing");
  const std::string xml = test::read_file(dir / "verify.xml");
  EXPECT_NE(xml.find("name=\"layer.0.attention.pre_norm\"><skipped message=\"not in the trace; missing\"/>"),
            std::string::npos)
      << xml;

  // Traces judged together hold the same tensors, or some would be judged on less than they hold.
  const auto mixed = test::temp_dir("older_schema_mixed");
  save_trace(mixed / "a-full.safetensors", full);
  save_trace(mixed / "b-no-residual.safetensors", no_residual);
  try {
    verify_reference(bert_mini(), mixed, tol, {});
    ADD_FAILURE() << "traces that lack different tensors were judged together";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("b-no-residual.safetensors: lacks other tensors of the schema than "
                                         "a-full.safetensors does"),
              std::string::npos)
        << e.what();
  }

  // Without the last layer's output there is nothing to judge the trace by: it fails.
  without("no-output.safetensors", [&](const std::string& n) { return is_residual_lens(n) || n == last; });
  r = verify_reference(bert_mini(), dir / "no-output.safetensors", tol, {});
  ASSERT_FALSE(r.pass());
  EXPECT_EQ(summary(r, last)->problem, "no-output.safetensors: missing from the candidate trace");
}

// A trace of nothing but the last layer's output, as a library's user writes one, is judged as one span from
// the input ids, and the report says so; a fault in it fails.
TEST(VerifyEndToEnd, ATraceOfTheOutputAloneIsJudgedAsOneSpan) {
  const Encoding enc =
      BertTokenizer(bert_mini().vocab, bert_mini().tokenizer).encode("The nurse handed the doctor the scissors.", 512);
  Trace output = runtime::Encoder(bert_mini().config, bert_mini().weights).forward(enc, Record::output);
  const int layers = bert_mini().config.num_hidden_layers;
  const std::string last = trace_name(layers - 1, LayerTensor::output);
  ASSERT_EQ(output.tensors.size(), 1u);
  const Tolerances tol = load_tolerances(test::source_dir() / "fixtures/tolerances.yaml");
  const auto dir = test::temp_dir("output_alone");
  save_trace(dir / "output.safetensors", output);
  const std::string args = "verify --model " + quoted(test::bert_mini()) + " --tolerances " +
                           quoted(test::source_dir() / "fixtures/tolerances.yaml") + " --reference ";
  auto r = test::run_cli(args + quoted(dir / "output.safetensors") + " --report " + quoted(dir / "verify.md") +
                         " --json " + quoted(dir / "verify.json"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("note: the traces hold no tensor of the schema but " + last + ": it is judged as one span"),
            std::string::npos)
      << r.output;
  const std::string md = test::read_file(dir / "verify.md");
  EXPECT_NE(md.find("| `span input_ids → " + last + " through embeddings.output, layer.0.attention.query"),
            std::string::npos)
      << md;
  // What the span runs through is spanned; a lens, which nothing held is computed from, is missing.
  std::map<std::string, std::string> state;
  const auto json = nlohmann::json::parse(test::read_file(dir / "verify.json"));
  for (const auto& u : json["unreachable"]) state[u["tensor"]] = u["state"];
  EXPECT_EQ(state.size(), trace_schema(bert_mini().config, 1).size() - 1);
  EXPECT_EQ(state["layer.0.attention.probs"], "spanned");
  EXPECT_EQ(state["layer.3.intermediate"], "spanned");
  EXPECT_EQ(state["layer.0.lens.value_norm"], "missing");

  const VerifyResult verdict = verify_reference(bert_mini(), dir / "output.safetensors", tol, {});
  ASSERT_EQ(verdict.sentences[0].gate.tensors.size(), 1u);
  const TensorComparison& judged = verdict.sentences[0].gate.tensors[0];
  ASSERT_TRUE(judged.local);
  EXPECT_TRUE(judged.span.from.empty());
  EXPECT_EQ(judged.span.through.front(), kEmbeddingsOutput);

  // The strict rule fails it, naming what it lacks.
  r = test::run_cli(args + quoted(dir / "output.safetensors") + " --require-all");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("layer.*.attention.pre_norm"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("FAIL output.safetensors: missing from the candidate trace"), std::string::npos) << r.output;

  for (double& x : output.find(last)->values) x *= 1.001;
  save_trace(dir / "faulty.safetensors", output);
  r = test::run_cli(args + quoted(dir / "faulty.safetensors"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("op to blame: span input_ids → " + last), std::string::npos) << r.output;
}

// Every report's tables are written by one helper: the header, its rule, a line per row.
TEST(Reports, AMarkdownTableIsItsHeaderItsRuleAndItsRowsAndRejectsARowOfAnotherWidth) {
  MarkdownTable table({"", "tensor", "result"});
  table.row({"1", "`layer.0.attention.probs`", "**FAIL**"});
  EXPECT_EQ(table.markdown(), "| | tensor | result |\n|---|---|---|\n| 1 | `layer.0.attention.probs` | **FAIL** |\n");
  EXPECT_THROW(table.row({"1", "too few"}), std::logic_error);
}
