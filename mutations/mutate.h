#pragma once
// `lenscheck mutate`: every case of the catalogue, its verdict, and the mutation score.
#include <filesystem>
#include <string>
#include <vector>

#include "mutations/mutation.h"

namespace lenscheck::mutation {

struct CaseResult {
  const Case* mutation = nullptr;
  Equivalence equivalence;  // evaluated on this model (ordinary for a case without a condition)
  Outcome outcome;
  double seconds = 0;
  bool ok() const;             // as the case expects on this model
  // holds, FAILS; killed, SURVIVED; equivalent, KILLED though equivalent here; borderline: killed/survived
  std::string status() const;
};

struct MutateResult {
  std::string version, model_dir, model_sha256, tolerances_file, sentences_file, oracle_backend;
  size_t sentences = 0;
  double setup_seconds = 0, total_seconds = 0;  // setup: model load and the oracle traces, once
  std::vector<CaseResult> cases;
  size_t killed() const;          // ordinary mutants killed
  size_t non_equivalent() const;  // ordinary mutants: the score's denominator
  size_t with(Equivalence::Verdict verdict) const;  // implementation mutants of that verdict
  bool pass() const;
};

struct MutateInputs {
  const Checkpoint& checkpoint;
  const std::vector<Sentence>& sentences;
  std::filesystem::path sentences_file;
  const Tolerances& tolerances;
  const StudyPlan& plan;
  const Checkpoint& plan_checkpoint;
  std::string only;  // run just this case when non-empty
  unsigned threads = 1;  // sentences, then cases, in parallel; results do not depend on it
};

// The catalogue, metric cases first, each kind by name.
std::vector<const Case*> sorted_catalogue();
MutateResult run_mutations(const MutateInputs& inputs);
// One report over every model mutate ran on: a table of their scores, then a section per model.
void write_mutate_markdown(const std::vector<MutateResult>& results, const std::filesystem::path& file);
void write_mutate_json(const std::vector<MutateResult>& results, const std::filesystem::path& file);

}  // namespace lenscheck::mutation
