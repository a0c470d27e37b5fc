#pragma once
// `--candidate transformers[:eager|:sdpa]`: Hugging Face transformers' own BertModel (PyTorch, CPU) on the
// checkpoint, run by transformers/hf-adapter.py in a Python subprocess (common/python_adapter.h), every
// trace tensor it computes (forward hooks, output_attentions, its softmax's input) judged, the lens tensors derived from its
// own value and probabilities as for onnx:PATH, what its attention path hides listed as not judged.
#include <filesystem>
#include <optional>
#include <string>

#include "gate/candidate.h"
#include "model/arithmetic.h"

namespace lenscheck::transformers {

enum class Attention { eager, sdpa };  // transformers' attn_implementation

// One op's output times 1 + delta (a forward hook in the adapter): an op fault the weights do not show,
// for the tests that the gate catches one. The op is a linear layer, or a layer's self-attention (under
// SDPA one kernel from Q, K and V to the context: a span the gate judges whole).
struct OpFault {
  std::string module;  // BertModel's module name, e.g. encoder.layer.1.attention.self.value
  double delta = 0;
};

struct CandidateSpec {
  Attention attention = Attention::eager;
  std::string torch_dtype = "fp32";  // fp32, fp16 or bf16: the dtype the model is loaded in
  unsigned threads = 1;              // torch.set_num_threads
  std::filesystem::path adapter;     // empty: the checkout's transformers/hf-adapter.py
  std::filesystem::path python_env;  // whose bin/python3 imports torch and transformers; empty: .deps/transformers
  // The checkpoint folder transformers loads; empty: the one judged. Another (a copy with a weight
  // changed) is judged against the judged one's truth.
  std::filesystem::path weights;
  std::optional<OpFault> fault;
  // Bounds in seconds: start-up (torch and transformers imported, the model loaded), then each sentence.
  double startup_seconds = 120, sentence_seconds = 60;
};

// "transformers" (eager), "transformers:eager", "transformers:sdpa"; an InputError naming --candidate otherwise.
Attention parse_candidate(const std::string& candidate);
// "fp32", "fp16", "bf16"; an InputError naming --torch-dtype otherwise.
std::string parse_torch_dtype(const std::string& dtype);
// "encoder.layer.1.attention.self.value:1e-3"; an InputError naming --fault-op otherwise.
OpFault parse_op_fault(const std::string& text);
// What a dtype declares to the gate: fp32, bf16, fp16 (model/arithmetic.h): every op's output rounded to it.
Arithmetic declared_arithmetic(const std::string& torch_dtype);

Candidate candidate(const CandidateSpec& spec);

}  // namespace lenscheck::transformers
