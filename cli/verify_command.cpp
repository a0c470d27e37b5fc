// lenscheck verify: a candidate (the runtime, ONNX Runtime, or reference traces) judged tensor by tensor
// against the fp64 truth, and what the instrument shows.
#include <fmt/format.h>

#include <algorithm>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "audit/study_plan.h"
#include "cli/commands.h"
#include "common/sentences.h"
#include "gate/verify.h"
#include "gate/verify_report.h"
#include "model/error.h"
#include "onnx/candidate.h"
#include "onnx/shipped_graph.h"
#include "transformers/candidate.h"

namespace lenscheck::cli {

namespace {

void print_summary(const ComparisonSummary& c) {
  fmt::print("{} vs {} ({} rule): {}\n", c.candidate, c.reference, rule_name(c.rule), c.pass() ? "PASS" : "FAIL");
  size_t width = 0;
  for (const TensorSummary& t : c.families) width = std::max(width, t.name.size());
  for (const TensorSummary& t : c.families) {
    const std::string measure =
        c.rule == Rule::derived
            ? fmt::format("{:5.2f}x {}'s error at most (median {:4.2f}x, k {:g}); local {}", t.ratios.max(),
                          benchmark_label(c.arithmetic), t.ratios.median(), t.tolerance.k,
                          t.local.values.empty() ? std::string("global only") : fmt::format("{:.2f}x", t.local.max()))
            : fmt::format("max abs {:.3e}  max rel {:.3e}  max ULP {:>6}", t.max_abs, t.max_rel, t.max_ulp);
    fmt::print("  {:<{}} {}  bound used {:5.1f} %  {}\n", t.name, width, measure, 100 * t.bound_used,
               t.pass() ? "pass" : "FAIL " + t.problem);
  }
}

struct VerifyOptionsText {
  std::string model_dir, vocab, sentences, tolerances, reference, report, json, junit;
  std::string candidate = "runtime", declared, plan, python_env, fault_op;
  bool absolute = false, require_all = false;
  size_t limit = 0;  // 0: every sentence
  onnx_export::CandidateSpec ort;
  transformers::CandidateSpec hf;
};

int report(const VerifyResult& r, const VerifyOptionsText& o) {
  for (const std::string& n : r.notes) fmt::print(stderr, "note: {}\n", n);
  for (size_t i = 0; i < std::min<size_t>(3, r.weights_differ.size()); ++i) fmt::print("weights: {}\n", r.weights_differ[i]);
  if (r.weights_differ.size() > 3) fmt::print("weights: … and {} more parameters differ\n", r.weights_differ.size() - 3);
  print_summary(r.gate);
  for (const SentenceVerdict& v : r.sentences)
    if (const TensorComparison* first = v.gate.first_divergence()) {
      fmt::print("sentence {}: first divergence at {}{} ({})\n", v.sentence.id, first->name, first->worst_label,
                 failure_text(*first, r.gate.arithmetic));
      if (const TensorComparison* blamed = v.gate.first_local_failure())
        fmt::print("sentence {}: op to blame: {} (the first tensor whose op, or span of ops, recomputed from the "
                   "candidate's own inputs, disagrees)\n", v.sentence.id, local_scope(*blamed));
    } else if (!v.gate.problem.empty())
      fmt::print("sentence {}: {}\n", v.sentence.id, v.gate.problem);
  if (r.display)
    fmt::print("display verdict: {}: {}\n", r.display->pass() ? "PASS" : "FAIL",
               r.display->headline(arithmetic_name(r.gate.arithmetic)));
  if (!o.report.empty()) write_verify_markdown(r, o.report);
  if (!o.json.empty()) write_verify_json(r, o.json);
  if (!o.junit.empty()) write_verify_junit(r, o.junit);
  for (const std::string& f : {o.report, o.json, o.junit})
    if (!f.empty()) fmt::print("wrote {}\n", f);
  fmt::print("verify: {}\n", r.pass() ? "PASS" : "FAIL");
  return r.pass() ? kPass : kFail;
}

}  // namespace

Command add_verify(CLI::App& app, const Shared& shared) {
  auto o = std::make_shared<VerifyOptionsText>();
  o->sentences = shared.data.sentences();
  o->tolerances = shared.data.tolerances();
  o->plan = shared.data.study_plan();
  auto* command = app.add_subcommand("verify", "run the runtime and libtorch in fp32 and fp64 on every sentence; "
                                              "judge every tensor of the runtime against the fp64 truth");
  auto* model = command->add_option("--model", o->model_dir, "Hugging Face BERT checkpoint directory; without it, "
                                                           "--candidate onnx:PATH reads the checkpoint from the "
                                                           "graph (config from its shapes, its own weights)");
  command->add_option("--vocab", o->vocab, "without --model, onnx:PATH: the tokenizer, a folder (vocab.txt, "
                                          "tokenizer.json, tokenizer_config.json) or one vocab.txt or tokenizer.json "
                                          "(default: the graph's folder)")
      ->excludes(model);
  command->add_option("--sentences", o->sentences, "sentences YAML, or a corpus of one sentence per line (.txt, as "
                                                  "make-corpus writes it; ids line-N, blank lines skipped)")
      ->capture_default_str();
  auto* limit = command->add_option("--limit", o->limit, "judge only the first N sentences of --sentences")
                    ->check(CLI::PositiveNumber);
  command->add_option("--tolerances", o->tolerances, "tolerances YAML")->capture_default_str();
  command->add_flag("--absolute", o->absolute, "the tolerances file's absolute rules (atol, rtol against the fp32 "
                                              "oracle) instead of the derived rule");
  auto* reference = command->add_option("--reference", o->reference, "judge this trace (safetensors), or every "
                                                                    "*.safetensors of this directory (one sentence "
                                                                    "each), instead of the runtime, on what it holds: "
                                                                    "lens tensors it lacks derived where their inputs "
                                                                    "are there, the rest listed and judged as spans")
                         ->excludes(limit);
  command->add_flag("--require-all", o->require_all, "--reference: every tensor of the trace schema must be in the "
                                                    "trace; none derived, each missing one fails")
      ->needs(reference);
  command->add_option("--plan", o->plan, "study plan whose head rule and lenses the display verdict follows, "
                                        "printed as the display file beside it says (PLAN.display.yaml: "
                                        "decimals, top targets, sink flags)")
      ->capture_default_str();
  command->add_option("--precision", o->declared, "the scheme the candidate declares (README, \"Schemes\"), in which "
                                                 "its benchmark computes and each op is recomputed: fp32, tf32, bf16, "
                                                 "fp16, fp16-ort-cpu, fp16-ort-fused, int8 or w8a32. Default: the candidate's own (the "
                                                 "runtime fp32, onnxruntime:fp16 fp16-ort-cpu, onnx:PATH what its graph "
                                                 "implies, a reference trace its precision)");
  command->add_option("--candidate", o->candidate, "runtime; onnxruntime[:fp16|:int8]: the checkpoint exported to "
                                                  "ONNX with every trace tensor and run in ONNX Runtime (CPU) on "
                                                  "every sentence; or onnx:PATH, a graph as shipped, its trace tensors "
                                                  "found by their patterns and judged, the rest listed as not judged; "
                                                  "transformers[:eager|:sdpa]: Hugging Face transformers' BertModel "
                                                  "(PyTorch, CPU) on the checkpoint, every trace tensor it gives judged")
      ->capture_default_str();
  command->add_option("--torch-dtype", o->hf.torch_dtype, "transformers: the dtype the model runs in (fp32, fp16, "
                                                         "bf16), which it declares as its scheme")
      ->capture_default_str();
  command->add_option("--torch-threads", o->hf.threads, "transformers: torch's intra-op threads")
      ->capture_default_str()->check(CLI::Range(1, 256));
  command->add_option("--candidate-model", o->hf.weights, "transformers: the checkpoint folder transformers loads "
                                                         "(default --model), judged against --model's truth");
  command->add_option("--fault-op", o->fault_op, "transformers: MODULE:DELTA, the output of one linear layer or "
                                                "of a layer's attention.self times 1 + DELTA (e.g. "
                                                "encoder.layer.1.attention.self.value:1e-3), an op fault the gate "
                                                "must catch");
  command->add_option("--ort-threads", o->ort.ort.intra_op_threads, "onnxruntime: intra-op threads")
      ->capture_default_str()->check(CLI::Range(1, 256));
  command->add_option("--ort-optimization", o->ort.ort.graph_optimization, "onnxruntime: graph optimization level")
      ->capture_default_str()->check(CLI::IsMember({"disabled", "basic", "extended", "layout", "all"}));
  command->add_option("--ort-timeout", o->ort.ort.sentence_seconds,
                     "onnxruntime: seconds one sentence may take (bert-base-shape takes under 0.1 s; "
                     "reports/bench.md)")->capture_default_str()->check(CLI::PositiveNumber);
  command->add_option("--python-env", o->python_env, kPythonEnvHelp);
  command->add_option("--report", o->report, "Markdown report path");
  command->add_option("--json", o->json, "JSON report path");
  command->add_option("--junit", o->junit, "JUnit XML path");

  return {command, [o, &shared, command] {
            const DataPaths& data = shared.data;
            const bool shipped_graph = o->candidate.rfind("onnx:", 0) == 0;
            if (o->model_dir.empty() && !shipped_graph)
              throw InputError("--model", fmt::format("is required, except with --candidate onnx:PATH (a graph, "
                                                      "whose weights are then its own), not {}",
                                                      o->candidate));
            if (!o->vocab.empty() && !shipped_graph)
              throw InputError("--vocab", "only a graph read without --model (--candidate onnx:PATH) takes it");
            const Checkpoint ck = o->model_dir.empty()
                                      ? onnx_export::graph_checkpoint(o->candidate.substr(5), o->vocab)
                                      : load_checkpoint(o->model_dir);
            const Tolerances tol = load_tolerances(data.checked(o->tolerances));
            // Read before any candidate runs: a missing or malformed display file is bad input, not a late
            // failure.
            const std::optional<Instrument> instrument =
                o->absolute ? std::nullopt : std::optional(instrument_of(load_study_plan(data.checked(o->plan))));
            VerifyOptions options{.rule = o->absolute ? Rule::absolute : Rule::derived,
                                  .threads = shared.threads,
                                  .require_all = o->require_all,
                                  .instrument = instrument ? &*instrument : nullptr};
            if (!o->declared.empty()) options.arithmetic = parse_arithmetic(o->declared, "--precision");
            // Progress on stderr, about every 5 % (and not at all for a short sentence file).
            size_t reported = 0;
            options.progress = [&reported](size_t judged, size_t total) {
              if (total >= 100 && (judged * 20 / total > reported || judged == total)) {
                reported = judged * 20 / total;
                fmt::print(stderr, "verify: {}/{} sentences judged\n", judged, total);
              }
            };
            if (!o->reference.empty()) return report(verify_reference(ck, o->reference, tol, options), *o);
            // The audit's reader: a sentences YAML whole, or a .txt corpus streamed up to the limit.
            SentenceStream stream(data.checked(o->sentences));
            const std::vector<Sentence> sentences = stream.next(o->limit ? o->limit : stream.total());
            Candidate candidate = runtime_candidate();
            const bool transformers_candidate = o->candidate.rfind("transformers", 0) == 0;
            for (const char* option : {"--torch-dtype", "--torch-threads", "--candidate-model", "--fault-op"})
              if (!transformers_candidate && command->count(option))
                throw InputError(option, fmt::format("only a transformers candidate takes it, not {}", o->candidate));
            if (transformers_candidate) {
              o->hf.attention = transformers::parse_candidate(o->candidate);
              o->hf.torch_dtype = transformers::parse_torch_dtype(o->hf.torch_dtype);
              if (!o->fault_op.empty()) o->hf.fault = transformers::parse_op_fault(o->fault_op);
              o->hf.adapter = data.hf_adapter();
              o->hf.python_env = data.transformers_env(o->python_env);
              return report(verify(ck, transformers::candidate(o->hf), sentences, o->sentences, tol, options), *o);
            }
            if (o->candidate != "runtime") {
              o->ort.ort.adapter = data.ort_adapter();
              o->ort.ort.python_env = data.python_env(o->python_env);
            }
            if (shipped_graph) {
              candidate = onnx_export::shipped_candidate(o->candidate.substr(5), o->ort.ort, o->model_dir.empty());
            } else if (o->candidate != "runtime") {
              o->ort.variant = onnx_export::parse_candidate(o->candidate);
              candidate = onnx_export::candidate(o->ort);
            }
            return report(verify(ck, candidate, sentences, o->sentences, tol, options), *o);
          }};
}

}  // namespace lenscheck::cli
