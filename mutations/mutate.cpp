#include "mutations/mutate.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "common/parallel.h"
#include "gate/verify.h"
#include "common/report_file.h"
#include "oracle/oracle.h"
#include "runtime/encoder.h"

namespace lenscheck::mutation {

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

using Verdict = Equivalence::Verdict;

}  // namespace

bool CaseResult::ok() const {
  if (mutation->kind == Kind::metric) return outcome.caught;
  switch (equivalence.verdict) {
    case Verdict::ordinary: return outcome.caught;
    case Verdict::equivalent: return !outcome.caught;
    case Verdict::borderline: return true;
  }
  return false;
}

std::string CaseResult::status() const {
  if (mutation->kind == Kind::metric) return outcome.caught ? "holds" : "FAILS";
  switch (equivalence.verdict) {
    case Verdict::ordinary: return outcome.caught ? "killed" : "SURVIVED";
    case Verdict::equivalent: return outcome.caught ? "KILLED though equivalent here" : "equivalent";
    case Verdict::borderline: return outcome.caught ? "borderline: killed" : "borderline: survived";
  }
  return "?";
}

size_t MutateResult::with(Verdict verdict) const {
  return size_t(std::count_if(cases.begin(), cases.end(), [&](const CaseResult& r) {
    return r.mutation->kind == Kind::implementation && r.equivalence.verdict == verdict;
  }));
}

size_t MutateResult::killed() const {
  return size_t(std::count_if(cases.begin(), cases.end(), [](const CaseResult& r) {
    return r.mutation->kind == Kind::implementation && r.equivalence.verdict == Verdict::ordinary && r.outcome.caught;
  }));
}

size_t MutateResult::non_equivalent() const { return with(Verdict::ordinary); }

bool MutateResult::pass() const {
  return !cases.empty() && std::all_of(cases.begin(), cases.end(), [](const CaseResult& r) { return r.ok(); });
}

std::vector<const Case*> sorted_catalogue() {
  std::vector<const Case*> cases;
  for (const Case& c : catalogue()) cases.push_back(&c);
  std::sort(cases.begin(), cases.end(), [](const Case* a, const Case* b) {
    return std::pair(a->kind, a->name) < std::pair(b->kind, b->name);
  });
  return cases;
}

MutateResult run_mutations(const MutateInputs& in) {
  const auto start = std::chrono::steady_clock::now();
  MutateResult r;
  r.version = build_version();
  r.model_dir = in.checkpoint.dir.string();
  r.model_sha256 = in.checkpoint.model_sha256;
  r.tolerances_file = in.tolerances.file.string();
  r.sentences_file = in.sentences_file.string();
  r.oracle_backend = oracle::Oracle::backend();
  r.sentences = in.sentences.size();

  std::vector<const Case*> cases = sorted_catalogue();
  if (!in.only.empty()) {
    std::erase_if(cases, [&](const Case* c) { return c->name != in.only; });
    if (cases.empty()) throw std::invalid_argument("no mutation case named \"" + in.only + "\" (see --list)");
  }

  const BertTokenizer tokenizer(in.checkpoint.vocab, in.checkpoint.tokenizer);
  const Judge judge(in.checkpoint, in.tolerances, Rule::derived);
  const runtime::Encoder runtime(in.checkpoint.config, in.checkpoint.weights);
  std::vector<Encoding> encodings;  // every sentence checked before any is run
  for (const Sentence& s : in.sentences)
    encodings.push_back(encode_sentence(tokenizer, s, size_t(in.checkpoint.config.max_position_embeddings),
                                        in.sentences_file));
  std::vector<SentenceRun> runs(in.sentences.size());
  parallel_for(runs.size(), in.threads, [&](size_t i) {
    runs[i] = {in.sentences[i], encodings[i], judge.references(encodings[i]), runtime.forward(encodings[i])};
  });
  r.setup_seconds = seconds_since(start);

  const Context ctx{in.checkpoint, judge, runtime, runs, in.plan, in.plan_checkpoint};
  r.cases.resize(cases.size());
  parallel_for(cases.size(), in.threads, [&](size_t i) {
    const auto t0 = std::chrono::steady_clock::now();
    const Equivalence equivalence = cases[i]->equivalence ? cases[i]->equivalence(ctx) : Equivalence{};
    r.cases[i] = {cases[i], equivalence, cases[i]->run(ctx), 0};
    r.cases[i].seconds = seconds_since(t0);
  });
  r.total_seconds = seconds_since(start);
  return r;
}

namespace {

std::string score(const MutateResult& r) {
  return fmt::format("{} / {} = {:.0f} %", r.killed(), r.non_equivalent(),
                     r.non_equivalent() ? 100.0 * double(r.killed()) / double(r.non_equivalent()) : 0.0);
}

// The conditional verdicts of one model, by mutant: which way each condition went.
std::string conditions(const MutateResult& r) {
  std::vector<std::string> out;
  for (const CaseResult& c : r.cases)
    if (c.mutation->equivalence)
      out.push_back(fmt::format("`{}` {}", c.mutation->name, verdict_name(c.equivalence.verdict)));
  return fmt::format("{}", fmt::join(out, ", "));
}

std::string model_section(const MutateResult& r) {
  std::string s = fmt::format("## {} — {}\n\n", std::filesystem::path(r.model_dir).filename().string(),
                              r.pass() ? "PASS" : "FAIL");
  s += fmt::format("Mutation score: **{}** of ordinary implementation mutants killed; {} equivalent on this model, "
                   "{} borderline.\n\n",
                   score(r), r.with(Verdict::equivalent), r.with(Verdict::borderline));
  s += fmt::format("- model: `{}` (SHA-256 `{}`)\n- sentences: `{}` ({})\n- tolerances: `{}`\n"
                   "- oracle: {} — its fp32 and fp64 traces computed once per sentence and shared by every mutant; "
                   "the gate is the derived rule\n"
                   "- time: {:.2f} s in all, of which {:.2f} s set-up (oracle and runtime traces)\n\n",
                   r.model_dir, r.model_sha256, r.sentences_file, r.sentences, r.tolerances_file,
                   r.oracle_backend, r.total_seconds, r.setup_seconds);
  for (Kind kind : {Kind::metric, Kind::implementation}) {
    MarkdownTable table(kind == Kind::metric
                            ? std::vector<std::string>{"case", "claim", "result", "evidence", "time"}
                            : std::vector<std::string>{"mutant", "fault", "equivalence on this model", "result",
                                                       "caught by", "evidence", "time"});
    for (const CaseResult& c : r.cases) {
      if (c.mutation->kind != kind) continue;
      const std::string name = fmt::format("`{}`", c.mutation->name), seconds = fmt::format("{:.2f} s", c.seconds),
                        result = c.ok() ? c.status() : "**" + c.status() + "**";
      if (kind == Kind::metric)
        table.row({name, c.mutation->description, result, c.outcome.evidence, seconds});
      else
        table.row({name, c.mutation->description, c.mutation->equivalence ? c.equivalence.why : "never equivalent",
                   result, c.outcome.by.empty() ? "—" : "`" + c.outcome.by + "`", c.outcome.evidence, seconds});
    }
    s += (kind == Kind::metric ? "### Metric cases: the metric responds to v, and only to v\n\n"
                               : "### Implementation mutants: the gate must kill the ordinary ones\n\n") +
         table.markdown() + "\n";
  }
  return s;
}

}  // namespace

void write_mutate_markdown(const std::vector<MutateResult>& results, const std::filesystem::path& file) {
  const bool pass = std::all_of(results.begin(), results.end(), [](const MutateResult& r) { return r.pass(); });
  std::string s = fmt::format("# lenscheck mutate — {}\n\n", pass ? "PASS" : "FAIL");
  if (!results.empty()) s += fmt::format("- build: `{}`\n\n", results.front().version);
  MarkdownTable models({"model", "result", "mutation score", "metric cases holding", "equivalent here", "borderline",
                        "conditional verdicts"});
  for (const MutateResult& r : results) {
    const size_t metric = size_t(std::count_if(r.cases.begin(), r.cases.end(),
                                               [](const CaseResult& c) { return c.mutation->kind == Kind::metric; }));
    const size_t holding = size_t(std::count_if(r.cases.begin(), r.cases.end(), [](const CaseResult& c) {
      return c.mutation->kind == Kind::metric && c.ok();
    }));
    models.row({fmt::format("`{}`", std::filesystem::path(r.model_dir).filename().string()),
                r.pass() ? "PASS" : "**FAIL**", score(r), fmt::format("{} / {}", holding, metric),
                fmt::to_string(r.with(Verdict::equivalent)), fmt::to_string(r.with(Verdict::borderline)),
                conditions(r)});
  }
  s += models.markdown() + "\n";
  for (const MutateResult& r : results) s += model_section(r);
  write_text_file(file, s);
}

void write_mutate_json(const std::vector<MutateResult>& results, const std::filesystem::path& file) {
  nlohmann::ordered_json j;
  j["tool"] = "lenscheck mutate";
  j["pass"] = std::all_of(results.begin(), results.end(), [](const MutateResult& r) { return r.pass(); });
  j["models"] = nlohmann::ordered_json::array();
  for (const MutateResult& r : results) {
    nlohmann::ordered_json m;
    m["pass"] = r.pass();
    m["score"] = {{"killed", r.killed()}, {"non_equivalent", r.non_equivalent()},
                  {"equivalent", r.with(Verdict::equivalent)}, {"borderline", r.with(Verdict::borderline)}};
    m["build"] = r.version;
    m["model"] = {{"dir", r.model_dir}, {"sha256", r.model_sha256}};
    m["tolerances_file"] = r.tolerances_file;
    m["sentences_file"] = r.sentences_file;
    m["oracle_backend"] = r.oracle_backend;
    m["seconds"] = {{"total", r.total_seconds}, {"setup", r.setup_seconds}};
    for (const CaseResult& c : r.cases) {
      m["cases"].push_back({{"name", c.mutation->name}, {"kind", c.mutation->kind == Kind::metric ? "metric" : "implementation"},
                            {"description", c.mutation->description},
                            {"equivalence", {{"conditional", bool(c.mutation->equivalence)}, {"verdict", verdict_name(c.equivalence.verdict)},
                                             {"why", c.equivalence.why}}},
                            {"status", c.status()}, {"ok", c.ok()}, {"caught_by", c.outcome.by},
                            {"evidence", c.outcome.evidence}, {"seconds", c.seconds}});
    }
    j["models"].push_back(std::move(m));
  }
  write_text_file(file, j.dump(1) + "\n");
}

}  // namespace lenscheck::mutation
