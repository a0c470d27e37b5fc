#pragma once
// `--candidate onnx:PATH`: a BERT graph as its user ships it, not lenscheck's traced export. Its trace
// tensors are found by the patterns they form, the way Polygraphy marks outputs but by name: each
// layer's Softmax anchors the attention (probs; its MatMul's other input the values; the Transpose and
// Reshape after it the context; before it the mask's Add, the scaled scores and their MatMul of the
// queries and transposed keys), the LayerNorms in graph order (each in any form graph_patterns.h
// recognises) are the embeddings' and every layer's two, and the input of the linear layer before a layer's last LayerNorm is its FFN's
// activation (the intermediate). The copy run in ONNX Runtime has each found tensor as an output under its trace
// name; the rest are declared unreachable, with why. The same patterns locate the checkpoint's parameters
// (each linear layer's weight and bias, the LayerNorms', the embedding tables), which are checked first: a
// graph of other weights is refused before any sentence runs, the first differing parameter named.
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "gate/candidate.h"
#include "model/arithmetic.h"
#include "model/checkpoint.h"
#include "model/quantize.h"
#include "onnx/onnxruntime.h"

namespace lenscheck::onnx_export {

struct FoundGraph {
  std::vector<std::pair<std::string, std::string>> outputs;  // graph value → trace name, last_hidden_state first
  std::vector<Unreachable> unreachable;
  // Some lens tensor's inputs found (runtime::lens_inputs): the lens tensors, which no shipped graph
  // computes, are derived from them by the runtime's lens code (runtime::Encoder::derive_lenses).
  bool lenses_derived = false;
  Arithmetic implied = Arithmetic::fp32;  // what its initializers and ops imply
  std::string implied_by;                 // why: "its initializers are float16", …
  bool dequantize_linear = false;         // it has DequantizeLinear nodes
  size_t nodes = 0, initializers = 0;
  // The checkpoint's parameters that the patterns locate in the graph, each against the graph's: equal in
  // fp32, equal to the checkpoint's rounded to float16, within half a quantization step in int8.
  size_t weights_checked = 0, weights_dequantized = 0;  // dequantized: int8 in the graph
  bool weights_from_graph = false;  // the checkpoint is the graph's own (graph_checkpoint): located, not compared
  // Under int8 or w8a32: linear weights the graph does not quantize, or not per output channel (InputError).
  std::vector<std::string> scheme_problems;
  // Under int8 or w8a32, what the graph holds quantized (integers, scales, zero points, any rule): the
  // scheme's benchmark computes with these in place of its own rule.
  std::shared_ptr<const QuantizedParams> quantized;
  // The rule that makes every located linear weight from the checkpoint's, bit for bit, where one does
  // ("symmetric per tensor in [-127, 127]"): it quantizes a linear weight the patterns do not locate.
  std::string linear_rule;
  size_t weights_by_rule = 0;  // linear weights not located, quantized by linear_rule
  std::vector<std::string> weight_problems;    // "encoder.layer.2.attention.self.query.weight differs …"
  std::vector<std::string> weights_not_found;  // parameters no pattern located
};

// Reads `model`, finds the tensors, checks the weights against the checkpoint's and writes the copy with
// the tensors as outputs to `copy`. InputError naming the file: not an ONNX model, no input_ids, no
// last_hidden_state, a hidden size other than the checkpoint's, no BERT recognised (no Softmax, Attention
// or LayerNorm), weights quantized as no scheme computes them. `weights_from_graph`: the checkpoint is the
// graph's own (graph_checkpoint), so its weights are located, not compared, and weight-only int8 is fp32.
FoundGraph prepare_shipped_graph(const std::filesystem::path& model, const Checkpoint& checkpoint,
                                 const std::filesystem::path& copy, bool weights_from_graph);

// A graph shipped with no checkpoint beside it, read as one: its config from its shapes and attributes (the
// LayerNorms' width and ε, the number of attention ops, the heads' split, the FFN's width and activation, the
// embedding tables' rows, each told apart by the graph input that indexes it), its weights from the
// initializers the patterns locate (float16 widened, int8 dequantized as the graph does it), the tokenizer
// from `tokenizer` (a folder as a checkpoint ships it, or one vocab.txt or tokenizer.json) or, where that is
// empty, from the graph's folder. `weights_file` is the graph, and the notes say what was read from where.
// InputError naming the graph: a size or parameter that cannot be read, a NaN in a weight; naming the
// tokenizer file: a tokenizer of another kind than BERT's WordPiece, a vocabulary of another size.
Checkpoint graph_checkpoint(const std::filesystem::path& model, const std::filesystem::path& tokenizer);

// The graph at `model` as a candidate, declaring what its tensors and ops imply (--precision overrides).
// The arithmetic is read when the candidate is made: an InputError there names the file.
// `weights_from_graph`: it is judged against its own weights (graph_checkpoint), and its weight-only int8
// declares fp32, the arithmetic on them.
Candidate shipped_candidate(const std::filesystem::path& model, const onnxruntime::Options& ort,
                            bool weights_from_graph = false);

}  // namespace lenscheck::onnx_export
