#include "harness/verify.h"

#include <fmt/format.h>

#include <map>
#include <regex>

#include "harness/parallel.h"
#include "model/error.h"
#include "model/trace_io.h"
#include "oracle/oracle.h"
#include "runtime/encoder.h"

namespace lenscheck {

std::string build_version() { return LENSCHECK_BUILD_VERSION; }

bool ComparisonSummary::pass() const {
  if (tensors.empty()) return false;
  for (const TensorSummary& t : tensors)
    if (!t.pass()) return false;
  return true;
}

bool VerifyResult::pass() const {
  if (sentences.empty() || !agreement.pass()) return false;
  for (const SentenceVerdict& s : sentences)
    if (!s.agreement.pass()) return false;
  if (runtime_truth && !runtime_truth->pass()) return false;
  if (oracle_truth && !oracle_truth->pass()) return false;
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
  if (c.worst_ratio >= into.worst_ratio || into.worst.empty()) {
    into.worst_ratio = c.worst_ratio;
    into.worst = fmt::format("{} {}{}", sentence_id, shown_name, c.worst_label);
  }
}

std::vector<std::string> schema_names(const BertConfig& config) {
  std::vector<std::string> names;
  for (const TensorSpec& s : trace_schema(config, 1)) names.push_back(s.name);
  return names;
}

std::string family_of(const std::string& name) {
  static const std::regex layer_index(R"(^layer\.\d+\.)");
  return std::regex_replace(name, layer_index, "layer.*.");
}

}  // namespace

ComparisonSummary summarise(const std::vector<std::pair<std::string, const TraceComparison*>>& runs,
                            std::string candidate, std::string reference) {
  ComparisonSummary s;
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

VerifyResult verify_sentences(const Checkpoint& ck, const std::vector<Sentence>& sentences,
                              const std::filesystem::path& sentences_file,
                              const Tolerances& tolerances, const VerifyOptions& options) {
  VerifyResult r;
  r.version = build_version();
  r.backend = oracle::Oracle::backend();
  r.model_dir = ck.dir.string();
  r.model_sha256 = ck.model_sha256;
  r.sentences_file = sentences_file.string();
  r.tolerances_file = tolerances.file.string();
  r.notes = ck.notes;
  for (const std::string& w : check_coverage(tolerances, schema_names(ck.config))) r.notes.push_back(w);

  const BertTokenizer tokenizer(ck.vocab);
  const runtime::Encoder encoder(ck.config, ck.weights);
  const oracle::Oracle oracle32(ck.config, ck.weights, oracle::Precision::fp32);
  std::optional<oracle::Oracle> oracle64;
  if (options.truth) oracle64.emplace(ck.config, ck.weights, oracle::Precision::fp64);

  const size_t max_tokens = static_cast<size_t>(ck.config.max_position_embeddings);
  std::vector<Encoding> encodings;  // all sentences are checked before any is run
  for (const Sentence& s : sentences)
    encodings.push_back(encode_sentence(tokenizer, s, max_tokens, sentences_file));

  r.sentences.resize(sentences.size());
  parallel_for(sentences.size(), options.threads, [&](size_t i) {
    const Trace candidate = encoder.forward(encodings[i]);
    const Trace reference = oracle32.forward(encodings[i]);
    SentenceVerdict& v = r.sentences[i];
    v.sentence = sentences[i];
    v.tokens = encodings[i].tokens;
    v.agreement = compare_traces(candidate, reference, tolerances.agreement, ck.config);
    if (oracle64) {
      const Trace truth = oracle64->forward(encodings[i]);
      v.runtime_truth = compare_traces(candidate, truth, tolerances.truth, ck.config);
      v.oracle_truth = compare_traces(reference, truth, tolerances.truth, ck.config);
    }
  });

  auto collect = [&](auto member) {
    std::vector<std::pair<std::string, const TraceComparison*>> runs;
    for (const SentenceVerdict& v : r.sentences) {
      const auto& c = v.*member;
      if constexpr (std::is_same_v<std::decay_t<decltype(c)>, TraceComparison>)
        runs.emplace_back(v.sentence.id, &c);
      else
        runs.emplace_back(v.sentence.id, &*c);
    }
    return runs;
  };
  r.agreement = summarise(collect(&SentenceVerdict::agreement), "runtime fp32", "oracle fp32");
  if (options.truth) {
    r.runtime_truth = summarise(collect(&SentenceVerdict::runtime_truth), "runtime fp32", "oracle fp64");
    r.oracle_truth = summarise(collect(&SentenceVerdict::oracle_truth), "oracle fp32", "oracle fp64");
  }
  return r;
}

VerifyResult verify_reference(const Checkpoint& ck, const std::filesystem::path& reference_file,
                              const Tolerances& tolerances) {
  VerifyResult r;
  r.version = build_version();
  r.backend = "not used";
  r.model_dir = ck.dir.string();
  r.model_sha256 = ck.model_sha256;
  r.sentences_file = reference_file.string();
  r.tolerances_file = tolerances.file.string();
  r.notes = ck.notes;
  for (const std::string& w : check_coverage(tolerances, schema_names(ck.config))) r.notes.push_back(w);

  const Trace reference = load_trace(reference_file, ck.vocab);
  if (reference.input_ids.size() > size_t(ck.config.max_position_embeddings))
    throw InputError(reference_file, fmt::format("input_ids has {} tokens, more than max_position_embeddings {}",
                                                 reference.input_ids.size(), ck.config.max_position_embeddings));
  Encoding enc;
  enc.ids = reference.input_ids;
  enc.tokens = reference.tokens;
  enc.word_ids = reference.word_ids;
  const runtime::Encoder encoder(ck.config, ck.weights);
  const Trace candidate = encoder.forward(enc);
  Sentence s{reference_file.filename().string(), "(input ids of the reference trace)", 0};
  r.sentences.push_back({s, reference.tokens,
                         compare_traces(candidate, reference, tolerances.agreement, ck.config), {}, {}});
  r.agreement = summarise({{s.id, &r.sentences.back().agreement}}, candidate.producer,
                          reference.producer);
  return r;
}

}  // namespace lenscheck
