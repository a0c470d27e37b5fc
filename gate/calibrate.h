#pragma once
// `lenscheck calibrate`: the derived gate measured as a classifier. False alarms: the fault-free
// runtime judged on a sweep of random models with trained statistics and on every fixture given.
// Detection: graded faults of size delta injected into the runtime, end to end, per fixture.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "synth/fixture.h"
#include "common/sentences.h"
#include "gate/tolerances.h"
#include "gate/candidate.h"
#include "gate/verify.h"
#include "model/arithmetic.h"
#include "model/checkpoint.h"
#include "model/tokenizer.h"

namespace lenscheck {

// One random model of the false-alarm sweep: its shape, statistics and input are drawn from a seed.
struct SweepModel {
  uint64_t seed = 0;
  BertConfig config;
  WeightStatistics statistics;
  Encoding input;
};
// Layers 1-12, width up to 768 (heads 1-12 of dimension 16, 32 or 64), intermediate 4x width,
// weight spread 0.02-0.08, LayerNorm gains spread 0.02-0.3 with 0-3 outlier dimensions of gain 1-20,
// sentences of 1-126 content tokens.
SweepModel sweep_model(uint64_t seed);

// The graded faults, each of size delta, on the last layer where one layer is named (there fp32's own
// error has grown the most, so a fault is hardest to see end to end).
enum class GradedFault {
  weight_scaled,     // the last layer's W_V times (1 + delta)
  bias_shifted,      // the last layer's FFN output bias plus delta * rms(bias), signs alternating
  layer_norm_eps,    // every LayerNorm's eps plus delta
  probs_scaled,      // the last layer's head 0 attention probabilities times (1 + delta)
};
std::string fault_name(GradedFault fault);
const std::vector<GradedFault>& graded_faults();

struct CalibrationOptions {
  Candidate candidate = runtime_candidate();
  size_t models = 200;
  uint64_t seed = 1;
  std::vector<std::filesystem::path> fixtures;  // checkpoint directories
  std::filesystem::path sentences_file;         // the sentences every fixture is judged on
  std::vector<double> deltas = {1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7};
  unsigned threads = 1;
};

// Error ratios seen for one tensor family, over models (or sentences) and layers.
struct FamilyRatios {
  Ratios ratios;       // the global verdict's
  size_t floored = 0;  // tensors whose benchmark error was below the floor
  Ratios local;        // the local verdict's, where the trace held the op's inputs
  size_t local_floored = 0;
};

struct SweepResult {
  SweepModel model;
  bool pass = false;
  std::string failure;  // the first failing tensor and why
  double worst_bound_used = 0;
  std::string worst_at;
};

struct FixtureResult {
  std::string name, dir, sha256;
  size_t sentences = 0, failed_sentences = 0;
  std::map<std::string, FamilyRatios> families;
  // Detection: per fault, whether the gate killed it at each delta (options.deltas order), and the
  // bound used on the sentence that killed it (or the largest one when it survived). A fault the
  // candidate cannot be given (a runtime fault, to another implementation) is absent.
  std::map<std::string, std::vector<std::pair<bool, double>>> detection;
  double seconds = 0;
};

struct CalibrationResult {
  std::string version, backend, tolerances_file;
  CalibrationOptions options;
  std::vector<SweepResult> sweep;
  std::map<std::string, FamilyRatios> sweep_families;
  std::vector<FixtureResult> fixtures;
  double sweep_seconds = 0;
  size_t false_alarms() const;
  // The smallest delta at which the fault and every larger one were killed; 0 when the largest
  // survived.
  static double threshold(const std::vector<double>& deltas, const std::vector<std::pair<bool, double>>& killed);
};

CalibrationResult calibrate(const Tolerances& tolerances, const CalibrationOptions& options,
                            const std::function<void(const std::string&)>& progress);

}  // namespace lenscheck
