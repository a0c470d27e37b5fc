#pragma once
// What the gate judges: an implementation that computes a checkpoint's traces, under the scheme it
// declares. verify and calibrate take any candidate: lenscheck's runtime (runtime_candidate), ONNX
// Runtime on lenscheck's export (onnx/candidate.h), traces another implementation wrote
// (reference_traces).
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/sentences.h"
#include "model/arithmetic.h"
#include "model/checkpoint.h"
#include "model/quantize.h"
#include "model/trace.h"
#include "runtime/stages.h"

namespace lenscheck {

// A tensor a candidate cannot give, and why ("inside com.microsoft.Attention", "not found in the graph"):
// the gate leaves it out and the reports list it, where a tensor missing unannounced fails. The last
// layer's output is never one: a candidate that cannot give it has nothing to be judged by.
struct Unreachable {
  std::string tensor, why;
};

// One run of a candidate: a trace per input, how the reports name what ran ("runtime fp32",
// "onnxruntime 1.30.0 fp32 (CPU, …)"), and what they should note of it (versions, timings).
struct CandidateRun {
  std::vector<Trace> traces;
  std::string label;
  std::vector<std::string> notes;
  std::vector<Unreachable> unreachable;  // the same for every input
  // Tensors the candidate does not compute, derived from its own by lenscheck's lens code
  // (runtime::Encoder::derive_lenses) and judged as its: the same for every input.
  std::vector<std::string> derived;
  // Where the candidate's weights are not the checkpoint's (a graph exported from another one): each
  // differing parameter, and no trace: the verdict fails before any sentence runs.
  std::vector<std::string> weights_differ;
  // The weights as the candidate holds them quantized (a graph's int8 or uint8 integers, scales and zero
  // points, any rule), which its scheme's benchmark computes with in place of the scheme's own rule.
  std::shared_ptr<const QuantizedParams> quantized;
  Int8Sums int8_sums = Int8Sums::exact;  // how its kernel sums int8 products, as it says (model/arithmetic.h)
};

struct Candidate {
  std::string name = "runtime";              // as the command line names it
  Arithmetic arithmetic = Arithmetic::fp32;  // the scheme it declares: its benchmark computes in it
  bool replaceable_stages = false;           // runtime::Stages reach it (weight and config faults reach all)
  // Its traces of `checkpoint` on every input, `threads` inputs at a time; `stages`, where not null,
  // replace the shipped ones (a fault; only for a candidate with replaceable_stages).
  std::function<CandidateRun(const Checkpoint& checkpoint, const std::vector<Encoding>& inputs,
                             const runtime::Stages* stages, unsigned threads)>
      run;
};

// lenscheck's runtime, fp32, its stages replaceable.
Candidate runtime_candidate();

// Traces another implementation wrote, as a candidate that brings its own inputs: one trace file, or a
// directory whose *.safetensors are taken in name order, one sentence each, on its input ids. It
// declares what the traces' "precision" metadata says, all alike (fp64 counts as fp32), unless
// `declared` says it for them. A trace is judged on what it holds: the lens tensors it lacks are derived
// where it holds their inputs, as for onnx:PATH (runtime::lens_inputs), and the other tensors it lacks are
// unreachable (the local verdict judges spans through them), but the last layer's output, which fails as
// missing; `require_all`: none derived or unreachable, each missing tensor fails. Bad input (no trace, a
// trace too long for the model, precisions that differ, traces that hold different tensors) is an
// InputError naming the file.
struct ReferenceTraces {
  Candidate candidate;
  std::vector<Sentence> sentences;  // named by their files
  std::vector<Encoding> inputs;     // each trace's input ids, tokens and word ids
  std::vector<std::string> notes;   // what loading them found (a precision read loosely)
  std::optional<std::filesystem::path> without_words;  // the first trace without word ids: no display verdict
};
ReferenceTraces reference_traces(const Checkpoint& checkpoint, const std::filesystem::path& reference,
                                 std::optional<Arithmetic> declared, bool require_all = false);

}  // namespace lenscheck
