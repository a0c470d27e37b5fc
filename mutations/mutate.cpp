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

bool equivalent(const Case& c) { return !c.equivalent_because.empty(); }

}  // namespace

bool CaseResult::ok() const {
  return equivalent(*mutation) ? !outcome.caught : outcome.caught;
}

std::string CaseResult::status() const {
  if (mutation->kind == Kind::metric) return outcome.caught ? "holds" : "FAILS";
  if (equivalent(*mutation)) return outcome.caught ? "KILLED though declared equivalent" : "equivalent";
  return outcome.caught ? "killed" : "SURVIVED";
}

size_t MutateResult::killed() const {
  return size_t(std::count_if(cases.begin(), cases.end(), [](const CaseResult& r) {
    return r.mutation->kind == Kind::implementation && !equivalent(*r.mutation) && r.outcome.caught;
  }));
}

size_t MutateResult::non_equivalent() const {
  return size_t(std::count_if(cases.begin(), cases.end(), [](const CaseResult& r) {
    return r.mutation->kind == Kind::implementation && !equivalent(*r.mutation);
  }));
}

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

  const BertTokenizer tokenizer(in.checkpoint.vocab);
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

  const Context ctx{in.checkpoint, judge, runs, in.plan, in.plan_checkpoint};
  r.cases.resize(cases.size());
  parallel_for(cases.size(), in.threads, [&](size_t i) {
    const auto t0 = std::chrono::steady_clock::now();
    r.cases[i] = {cases[i], cases[i]->run(ctx), 0};
    r.cases[i].seconds = seconds_since(t0);
  });
  r.total_seconds = seconds_since(start);
  return r;
}

void write_mutate_markdown(const MutateResult& r, const std::filesystem::path& file) {
  std::string s = fmt::format("# lenscheck mutate — {}\n\n", r.pass() ? "PASS" : "FAIL");
  s += fmt::format("Mutation score: **{} / {} = {:.0f} %** of non-equivalent implementation mutants killed.\n\n",
                   r.killed(), r.non_equivalent(), r.non_equivalent() ? 100.0 * double(r.killed()) / double(r.non_equivalent()) : 0.0);
  s += fmt::format("- build: `{}`\n- model: `{}` (SHA-256 `{}`)\n- sentences: `{}` ({})\n- tolerances: `{}`\n"
                   "- oracle: {} — its fp32 and fp64 traces computed once per sentence and shared by every mutant; "
                   "the gate is the derived rule\n"
                   "- time: {:.2f} s in all, of which {:.2f} s set-up (oracle and runtime traces)\n\n",
                   r.version, r.model_dir, r.model_sha256, r.sentences_file, r.sentences, r.tolerances_file,
                   r.oracle_backend, r.total_seconds, r.setup_seconds);
  for (Kind kind : {Kind::metric, Kind::implementation}) {
    s += kind == Kind::metric ? "## Metric cases: the metric responds to v, and only to v\n\n| case | claim | result | evidence | time |\n|---|---|---|---|---|\n"
                              : "## Implementation mutants: the gate must kill them\n\n| mutant | fault | result | caught by | evidence | time |\n|---|---|---|---|---|---|\n";
    for (const CaseResult& c : r.cases) {
      if (c.mutation->kind != kind) continue;
      std::string evidence = c.outcome.evidence;
      if (!c.mutation->equivalent_because.empty()) evidence += "<br>Declared equivalent: " + c.mutation->equivalent_because;
      if (kind == Kind::metric)
        s += fmt::format("| `{}` | {} | {} | {} | {:.2f} s |\n", c.mutation->name, c.mutation->description,
                         c.ok() ? c.status() : "**" + c.status() + "**", evidence, c.seconds);
      else
        s += fmt::format("| `{}` | {} | {} | {} | {} | {:.2f} s |\n", c.mutation->name, c.mutation->description,
                         c.ok() ? c.status() : "**" + c.status() + "**", c.outcome.by.empty() ? "—" : "`" + c.outcome.by + "`",
                         evidence, c.seconds);
    }
    s += "\n";
  }
  write_text_file(file, s);
}

void write_mutate_json(const MutateResult& r, const std::filesystem::path& file) {
  nlohmann::ordered_json j;
  j["tool"] = "lenscheck mutate";
  j["pass"] = r.pass();
  j["score"] = {{"killed", r.killed()}, {"non_equivalent", r.non_equivalent()}};
  j["build"] = r.version;
  j["model"] = {{"dir", r.model_dir}, {"sha256", r.model_sha256}};
  j["tolerances_file"] = r.tolerances_file;
  j["sentences_file"] = r.sentences_file;
  j["oracle_backend"] = r.oracle_backend;
  j["seconds"] = {{"total", r.total_seconds}, {"setup", r.setup_seconds}};
  for (const CaseResult& c : r.cases)
    j["cases"].push_back({{"name", c.mutation->name}, {"kind", c.mutation->kind == Kind::metric ? "metric" : "implementation"},
                          {"description", c.mutation->description}, {"equivalent_because", c.mutation->equivalent_because},
                          {"status", c.status()}, {"ok", c.ok()}, {"caught_by", c.outcome.by},
                          {"evidence", c.outcome.evidence}, {"seconds", c.seconds}});
  write_text_file(file, j.dump(1) + "\n");
}

}  // namespace lenscheck::mutation
