#pragma once
// `lenscheck verify`: oracle and runtime on every sentence, compared tensor by tensor; the gate.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "harness/compare.h"
#include "harness/sentences.h"
#include "harness/tolerances.h"
#include "model/checkpoint.h"

namespace lenscheck {

// One tensor name over every sentence of a comparison.
struct TensorSummary {
  std::string name;
  Tolerance tolerance;
  size_t compared = 0;  // sentences where the tensor was compared
  size_t failed = 0;    // sentences where it failed
  double max_abs = 0, max_rel = 0, worst_ratio = 0;
  uint64_t max_ulp = 0;
  std::string worst;    // "sentence-id layer.2.attention.probs[h1, the@1 → scissors@7]"
  std::string problem;  // first problem seen, if any
  bool pass() const { return failed == 0 && compared > 0 && problem.empty(); }
};

struct ComparisonSummary {
  std::string candidate, reference;  // producers, e.g. "runtime fp32" vs "oracle fp32"
  std::vector<TensorSummary> tensors;  // forward order
  std::vector<TensorSummary> families; // the same, with layer indices collapsed to "layer.*."
  bool pass() const;
};

struct SentenceVerdict {
  Sentence sentence;
  std::vector<std::string> tokens;
  TraceComparison agreement;  // runtime vs oracle (or vs the reference trace)
  std::optional<TraceComparison> runtime_truth, oracle_truth;
};

struct VerifyResult {
  std::string version, backend, model_dir, model_sha256, sentences_file, tolerances_file;
  std::vector<std::string> notes;
  std::vector<SentenceVerdict> sentences;
  ComparisonSummary agreement;
  std::optional<ComparisonSummary> runtime_truth, oracle_truth;
  bool pass() const;
};

struct VerifyOptions {
  bool truth = false;  // also compare each fp32 implementation with the fp64 oracle
  unsigned threads = 1;  // sentences in parallel; results do not depend on it
};

VerifyResult verify_sentences(const Checkpoint& checkpoint, const std::vector<Sentence>& sentences,
                              const std::filesystem::path& sentences_file,
                              const Tolerances& tolerances, const VerifyOptions& options);

// Compares the runtime with a trace written by another implementation, on that trace's input ids.
VerifyResult verify_reference(const Checkpoint& checkpoint, const std::filesystem::path& reference,
                              const Tolerances& tolerances);

ComparisonSummary summarise(const std::vector<std::pair<std::string, const TraceComparison*>>& runs,
                            std::string candidate, std::string reference);

std::string build_version();

}  // namespace lenscheck
