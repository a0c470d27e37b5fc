#pragma once
// `--candidate onnx:PATH`: a BERT graph as its user ships it, not lenscheck's traced export. Its trace
// tensors are found by the patterns they form, the way Polygraphy marks outputs but by name: each
// layer's Softmax anchors the attention (probs; its MatMul's other input the values; the Transpose and
// Reshape after it the context; before it the mask's Add, the scaled scores and their MatMul of the
// queries and transposed keys), and the LayerNormalization nodes in graph order are the embeddings'
// and every layer's two. The copy run in ONNX Runtime has each found tensor as an output under its trace
// name; the rest are declared unreachable, with why.
#include <filesystem>
#include <string>
#include <vector>

#include "gate/candidate.h"
#include "model/arithmetic.h"
#include "model/config.h"
#include "onnx/onnxruntime.h"

namespace lenscheck::onnx_export {

struct FoundGraph {
  std::vector<std::pair<std::string, std::string>> outputs;  // graph value → trace name, last_hidden_state first
  std::vector<Unreachable> unreachable;
  Arithmetic implied = Arithmetic::fp32;  // what its initializers and ops imply
  std::string implied_by;                 // "float16 initializers", "MatMulInteger", "float32 throughout"
  size_t nodes = 0, initializers = 0;
};

// Reads `model`, finds the tensors and writes the copy with them as outputs to `copy`. InputError naming
// the file: not an ONNX model, no input_ids, no last_hidden_state, a hidden size other than the config's.
FoundGraph prepare_shipped_graph(const std::filesystem::path& model, const BertConfig& config,
                                 const std::filesystem::path& copy);

// The graph at `model` as a candidate, declaring what its tensors and ops imply (--precision overrides).
// The arithmetic is read when the candidate is made: an InputError there names the file.
Candidate shipped_candidate(const std::filesystem::path& model, const onnxruntime::Options& ort);

}  // namespace lenscheck::onnx_export
