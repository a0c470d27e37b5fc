#include "gate/verify.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <regex>

#include "common/parallel.h"
#include "common/report_file.h"
#include "model/error.h"
#include "model/trace_io.h"
#include "oracle/oracle.h"
#include "runtime/lens.h"

namespace lenscheck {

std::string family_of(const std::string& name) {
  static const std::regex layer_index(R"(^layer\.\d+\.)");
  return std::regex_replace(name, layer_index, "layer.*.");
}

std::string rule_name(Rule rule) { return rule == Rule::derived ? "derived" : "absolute"; }

std::string benchmark_label(Arithmetic a) {
  return a == Arithmetic::fp32 ? "libtorch fp32" : fmt::format("libtorch {} (simulated in fp64)", arithmetic_name(a));
}

double Ratios::max() const { return values.empty() ? 0.0 : *std::max_element(values.begin(), values.end()); }

double Ratios::median() const {
  if (values.empty()) return 0;
  std::vector<double> sorted = values;
  std::sort(sorted.begin(), sorted.end());
  const size_t n = sorted.size();
  return n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
}

double Ratios::quantile(double q) const {
  if (values.empty()) return 0;
  std::vector<double> sorted = values;
  std::sort(sorted.begin(), sorted.end());
  return sorted[std::min(sorted.size() - 1, static_cast<size_t>(q * double(sorted.size())))];
}

bool ComparisonSummary::pass() const {
  if (tensors.empty()) return false;
  for (const TensorSummary& t : tensors)
    if (!t.pass()) return false;
  return true;
}

bool VerifyResult::pass() const {
  if (!weights_differ.empty() || sentences.empty() || !gate.pass() || (display && !display->pass())) return false;
  for (const SentenceVerdict& s : sentences)
    if (!s.gate.pass()) return false;
  return true;
}

namespace {

void merge(TensorSummary& into, const TensorComparison& c, const std::string& sentence_id,
           const std::string& shown_name) {
  if (into.tolerance.pattern.empty()) into.tolerance = c.tolerance;
  if (!c.problem.empty()) {
    if (into.problem.empty()) into.problem = fmt::format("{}: {}", sentence_id, c.problem);
    ++into.failed;
    return;
  }
  ++into.compared;
  if (!c.pass) ++into.failed;
  into.max_abs = std::max(into.max_abs, c.max_abs);
  into.max_rel = std::max(into.max_rel, c.max_rel);
  into.max_ulp = std::max(into.max_ulp, c.max_ulp);
  if (c.derived) {
    into.ratios.values.push_back(c.derived->ratio);
    into.candidate_error = std::max(into.candidate_error, c.derived->candidate_error);
    into.benchmark_error = std::max(into.benchmark_error, c.derived->benchmark_error);
  }
  if (c.local) into.local.values.push_back(c.local->ratio);
  if (c.bound_used >= into.bound_used || into.worst.empty()) {
    into.bound_used = c.bound_used;
    into.worst = fmt::format("{} {}{}", sentence_id, shown_name, c.worst_label);
  }
}

std::vector<std::string> schema_names(const BertConfig& config) {
  std::vector<std::string> names;
  for (const TensorSpec& s : trace_schema(config, 1)) names.push_back(s.name);
  return names;
}

VerifyResult header(const Checkpoint& ck, const std::filesystem::path& sentences_file, const Tolerances& tolerances,
                    Rule rule) {
  VerifyResult r;
  r.version = build_version();
  r.backend = oracle::Oracle::backend();
  r.model_dir = ck.dir.string();
  r.weights_file = ck.weights_file.filename().string();
  r.model_sha256 = ck.model_sha256;
  r.sentences_file = sentences_file.string();
  r.tolerances_file = tolerances.file.string();
  r.notes = ck.notes;
  for (const std::string& w : check_coverage(tolerances, schema_names(ck.config))) r.notes.push_back(w);
  r.notes.push_back(rule == Rule::derived
                        ? fmt::format("rule: derived (k per tensor family, floor {:g} FLT_EPSILON)", tolerances.floor)
                        : "rule: absolute (atol, rtol against the fp32 oracle), as asked by --absolute");
  return r;
}

// The absolute rule's bounds are fp32's.
void check_rule(Rule rule, Arithmetic arithmetic) {
  if (rule == Rule::absolute && arithmetic != Arithmetic::fp32)
    throw InputError("--absolute", fmt::format("the absolute rule's bounds are fp32's; a candidate that declares "
                                               "{} is judged by the derived rule", arithmetic_name(arithmetic)));
}

}  // namespace

struct Judge::Oracles {
  oracle::Oracle fp32;
  std::vector<oracle::Oracle> perturbed;
  std::optional<oracle::Oracle> fp64;
  std::optional<oracle::Oracle> local;  // the declared scheme, each op from the candidate's inputs
  std::optional<oracle::Oracle> other_rounding;
};

Judge::Judge(const Checkpoint& ck, const Tolerances& tolerances, Rule rule, Arithmetic arithmetic,
             std::shared_ptr<const QuantizedParams> quantized, Int8Sums int8_sums)
    : checkpoint_(ck), tolerances_(tolerances), rule_(rule), arithmetic_(arithmetic) {
  check_rule(rule, arithmetic);
  try {
    oracles_ = std::make_unique<Oracles>(Oracles{
        oracle::Oracle::computing_in(ck.config, ck.weights, arithmetic, 0, quantized, int8_sums), {}, {}, {}, {}});
    if (rule == Rule::derived) {
      for (int seed = 1; seed <= kRoundingProbes; ++seed)
        oracles_->perturbed.push_back(
            oracle::Oracle::computing_in(ck.config, ck.weights, arithmetic, uint64_t(seed), quantized, int8_sums));
      oracles_->fp64.emplace(ck.config, ck.weights, oracle::Precision::fp64);
      oracles_->local.emplace(oracle::Oracle::recomputing_in(ck.config, ck.weights, arithmetic, quantized, int8_sums));
      if (const auto other = other_rounding(arithmetic))
        oracles_->other_rounding.emplace(
            oracle::Oracle::computing_in(ck.config, ck.weights, *other, 0, quantized, int8_sums));
    }
  } catch (const oracle::OracleError& e) {
    throw InputError(ck.dir, e.what());
  }
}

Judge::~Judge() = default;

Judge::References Judge::references(const Encoding& encoding, bool display) const {
  try {
    References r{oracles_->fp32.forward(encoding), {}, {}, {}};
    for (const oracle::Oracle& o : oracles_->perturbed) {
      r.perturbed.push_back(o.forward(encoding));
      r.perturbed.back().producer = fmt::format("{} (weights and LayerNorm outputs moved one step, seed {})",
                                                r.perturbed.back().producer, r.perturbed.size());
    }
    if (oracles_->fp64) r.truth = oracles_->fp64->forward(encoding);
    if (display && oracles_->other_rounding) r.other_rounding = oracles_->other_rounding->forward(encoding);
    return r;
  } catch (const oracle::OracleError& e) {
    throw InputError(checkpoint_.dir, e.what());
  }
}

std::vector<const Trace*> Judge::References::benchmarks() const {
  std::vector<const Trace*> all = {&benchmark};
  for (const Trace& p : perturbed) all.push_back(&p);
  return all;
}

std::vector<const Trace*> Judge::References::display_benchmarks() const {
  std::vector<const Trace*> all = benchmarks();
  if (other_rounding) all.push_back(&*other_rounding);
  return all;
}

TraceComparison Judge::judge(const Trace& candidate, const References& refs,
                             const std::set<std::string>& unreachable) const {
  if (rule_ == Rule::absolute)
    return compare_traces(candidate, refs.benchmark, tolerances_.absolute, checkpoint_.config, unreachable);
  TraceComparison c =
      compare_derived(candidate, refs.benchmarks(), *refs.truth, tolerances_, checkpoint_.config, unreachable);
  if (!c.problem.empty()) return c;
  try {
    const oracle::Oracle::LocalReferences local = oracles_->local->recompute_locally(candidate, kRoundingProbes);
    std::vector<const Trace*> spread = {&local.fp32};
    for (const Trace& p : local.probes) spread.push_back(&p);
    if (local.fused) spread.push_back(&*local.fused);
    if (local.requantized_other_way) spread.push_back(&*local.requantized_other_way);
    if (local.attention_in_one_kernel) spread.push_back(&*local.attention_in_one_kernel);
    judge_locally(c, candidate, local.exact, spread, tolerances_, scheme_of(arithmetic_), local.spans);
  } catch (const oracle::OracleError& e) {
    throw InputError(checkpoint_.dir, e.what());
  }
  return c;
}

ComparisonSummary summarise(const std::vector<std::pair<std::string, const TraceComparison*>>& runs, Rule rule,
                            Arithmetic arithmetic, std::string candidate, std::string reference) {
  ComparisonSummary s;
  s.rule = rule;
  s.arithmetic = arithmetic;
  s.candidate = std::move(candidate);
  s.reference = std::move(reference);
  std::map<std::string, size_t> tensor_at, family_at;
  for (const auto& [id, comparison] : runs) {
    if (!comparison->problem.empty()) {
      TensorSummary whole;
      whole.name = "(whole trace)";
      whole.problem = fmt::format("{}: {}", id, comparison->problem);
      whole.failed = 1;
      s.tensors.push_back(whole);
      continue;
    }
    for (const TensorComparison& c : comparison->tensors) {
      auto add = [&](std::vector<TensorSummary>& list, std::map<std::string, size_t>& at,
                     const std::string& key) {
        auto [it, fresh] = at.try_emplace(key, list.size());
        if (fresh) {
          list.emplace_back();
          list.back().name = key;
        }
        merge(list[it->second], c, id, c.name);
      };
      add(s.tensors, tensor_at, c.name);
      add(s.families, family_at, family_of(c.name));
    }
  }
  return s;
}

namespace {

ComparisonSummary summarise_verdicts(const std::vector<SentenceVerdict>& verdicts, const Judge& judge,
                                     std::string candidate) {
  std::vector<std::pair<std::string, const TraceComparison*>> runs;
  for (const SentenceVerdict& v : verdicts) runs.emplace_back(v.sentence.id, &v.gate);
  return summarise(runs, judge.rule(), judge.arithmetic(), std::move(candidate),
                   judge.rule() == Rule::derived ? "oracle fp64" : "oracle fp32");
}

// One sentence judged: the tensor gate, and the display verdict's rows where the options ask for one.
void judge_sentence(const Judge& judge, const VerifyOptions& options, const BertConfig& config, SentenceVerdict& v,
                    const Trace& candidate, const Encoding& encoding, const std::set<std::string>& unreachable) {
  const bool display = options.instrument && judge.rule() == Rule::derived;
  const Judge::References refs = judge.references(encoding, display);
  v.gate = judge.judge(candidate, refs, unreachable);
  if (!display) return;
  v.display = compare_display(*options.instrument, v.sentence.id, candidate, *refs.truth, refs.display_benchmarks(),
                              config.num_hidden_layers, config.num_attention_heads, v.display_rows);
}

// The summary over sentences, and the display verdict where one was asked for.
void conclude(VerifyResult& r, const Judge& judge, const VerifyOptions& options, std::string candidate) {
  r.gate = summarise_verdicts(r.sentences, judge, std::move(candidate));
  if (!options.instrument) return;
  if (judge.rule() != Rule::derived) {
    r.notes.push_back("no display verdict under the absolute rule: it compares with the fp64 truth");
    return;
  }
  std::vector<std::vector<DisplayRow>> rows;
  size_t compared = 0;
  for (SentenceVerdict& v : r.sentences) {
    rows.push_back(v.display);
    compared += v.display_rows;
  }
  r.display = display_verdict(*options.instrument, std::move(rows), compared);
}

// A candidate's traces are held until they are judged: runs of at most this many sentences bound what a
// long sentence file holds at once (one BERT-base trace of 128 tokens is some 170 MB).
constexpr size_t kSentencesPerRun = 16;

// The one body of verify and verify_reference: the candidate run on `inputs` a part at a time, each
// part judged before the next. `r` holds the header and any notes so far.
// The tensors a candidate's run declares unreachable, checked: names of the schema, never the last layer's
// output, and what they leave the display verdict.
std::set<std::string> unreachable_of(const CandidateRun& run, const Candidate& candidate, const BertConfig& config,
                                     VerifyOptions& options, VerifyResult& r) {
  const std::vector<std::string> schema = schema_names(config);
  const std::string last = trace_name(config.num_hidden_layers - 1, LayerTensor::output);
  std::set<std::string> names;
  for (const Unreachable& u : run.unreachable) {
    if (std::find(schema.begin(), schema.end(), u.tensor) == schema.end())
      throw std::logic_error(fmt::format("{} declares {} unreachable, which is no tensor of the trace schema",
                                         candidate.name, u.tensor));
    if (u.tensor == last)
      throw InputError(candidate.name,
                       fmt::format("{} is unreachable ({}): there is nothing to judge the candidate by", last, u.why));
    names.insert(u.tensor);
  }
  if (!options.instrument || names.empty()) return names;
  for (int l = 0; l < config.num_hidden_layers; ++l)
    for (Lens lens : options.instrument->lenses)
      if (names.count(lens_tensor(lens, l))) {
        r.notes.push_back(fmt::format("no display verdict: the instrument shows {}, which the candidate cannot give",
                                      lens_tensor(lens, l)));
        options.instrument = nullptr;
        return names;
      }
  return names;
}

VerifyResult judge_candidate(VerifyResult r, const Checkpoint& ck, const Candidate& candidate,
                             const std::vector<Sentence>& sentences, const std::vector<Encoding>& inputs,
                             const Tolerances& tolerances, VerifyOptions options) {
  const Arithmetic arithmetic = options.arithmetic.value_or(candidate.arithmetic);
  check_rule(options.rule, arithmetic);  // at once, before the candidate runs
  std::optional<Judge> judge;  // made when the first run says what it holds (its own quantized weights)
  r.sentences.resize(sentences.size());
  std::string label = candidate.name;
  std::set<std::string> unreachable;
  for (size_t first = 0; first < inputs.size(); first += kSentencesPerRun) {
    const std::vector<Encoding> part(inputs.begin() + first,
                                     inputs.begin() + std::min(inputs.size(), first + kSentencesPerRun));
    const CandidateRun run = candidate.run(ck, part, nullptr, options.threads);
    if (!judge) judge.emplace(ck, tolerances, options.rule, arithmetic, run.quantized, run.int8_sums);
    if (!run.weights_differ.empty()) {  // not the checkpoint's model: nothing to judge it on
      r.notes.insert(r.notes.end(), run.notes.begin(), run.notes.end());
      r.weights_differ = run.weights_differ;
      r.sentences.clear();
      conclude(r, *judge, {.rule = options.rule}, run.label);
      return r;
    }
    if (run.traces.size() != part.size())
      throw InputError(candidate.name, fmt::format("{} traces for {} sentences", run.traces.size(), part.size()));
    if (first == 0) {  // what ran, as its first run says
      label = run.label;
      r.notes.insert(r.notes.end(), run.notes.begin(), run.notes.end());
      r.unreachable = run.unreachable;
      r.derived = run.derived;
      unreachable = unreachable_of(run, candidate, ck.config, options, r);
    }
    parallel_for(part.size(), options.threads, [&](size_t i) {
      SentenceVerdict& v = r.sentences[first + i];
      v.sentence = sentences[first + i];
      v.tokens = part[i].tokens;
      judge_sentence(*judge, options, ck.config, v, run.traces[i], part[i], unreachable);
    });
    if (options.progress) options.progress(first + part.size(), inputs.size());
  }
  if (!judge) judge.emplace(ck, tolerances, options.rule, arithmetic);
  conclude(r, *judge, options, label);
  return r;
}

}  // namespace

VerifyResult verify(const Checkpoint& ck, const Candidate& candidate, const std::vector<Sentence>& sentences,
                    const std::filesystem::path& sentences_file, const Tolerances& tolerances,
                    const VerifyOptions& options) {
  const BertTokenizer tokenizer(ck.vocab, ck.tokenizer);
  const size_t max_tokens = static_cast<size_t>(ck.config.max_position_embeddings);
  std::vector<Encoding> encodings;  // all sentences are checked before any is run
  for (const Sentence& s : sentences) encodings.push_back(encode_sentence(tokenizer, s, max_tokens, sentences_file));
  return judge_candidate(header(ck, sentences_file, tolerances, options.rule), ck, candidate, sentences, encodings,
                         tolerances, options);
}

VerifyResult verify_reference(const Checkpoint& ck, const std::filesystem::path& reference,
                              const Tolerances& tolerances, const VerifyOptions& options) {
  VerifyResult r = header(ck, reference, tolerances, options.rule);
  const ReferenceTraces traces = reference_traces(ck, reference, options.arithmetic, options.require_all);
  r.notes.insert(r.notes.end(), traces.notes.begin(), traces.notes.end());
  VerifyOptions judged = options;  // the display verdict reads the words
  if (traces.without_words && judged.instrument) {
    judged.instrument = nullptr;
    r.notes.push_back(
        fmt::format("no display verdict: {} has no word_ids in its __metadata__", traces.without_words->string()));
  }
  return judge_candidate(std::move(r), ck, traces.candidate, traces.sentences, traces.inputs, tolerances, judged);
}

}  // namespace lenscheck
