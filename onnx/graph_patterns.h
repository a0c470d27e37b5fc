#pragma once
// The patterns `onnx:PATH` finds a BERT's linear layers and LayerNorms by (shipped_graph.h), in every form the
// common exporters write: torch.onnx at opsets 11 to 17 from nn.LayerNorm, F.layer_norm or hand-written code,
// TensorFlow-ONNX, ONNX Runtime's fusions. As ONNX Runtime's transformers/fusion_*.py do, each form is one
// small recogniser in a table, tried in turn; a constant is found through Identity, Cast and Transpose, and
// an int8 one through its dequantization (a table of forms too).
// The FFN's activation needs none to be located: it is whatever lies between the FFN's two linear layers
// (linear_before), so erf and tanh GELU, written out or not, are the same to it; ops_back_to_linear lists its
// ops where a graph read with no checkpoint must say which it is.
#include <onnx/onnx_pb.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace lenscheck::onnx_export {

// How a graph makes floats of an int8 (or uint8) constant q: (q − zero_point) · scale, one scale (and zero
// point) per index along `axis` of q, or one for all of it (axis −1).
struct Dequantization {
  const onnx::TensorProto* scale = nullptr;
  const onnx::TensorProto* zero_point = nullptr;  // none: symmetric
  int64_t axis = -1;
  std::string by;  // the form: "Cast · scale", "DequantizeLinear", "Gather · DequantizeLinear", "MatMulInteger"
};

// The graph as an index: who makes each value, who reads it, which values are constants.
class GraphIndex {
 public:
  explicit GraphIndex(const onnx::GraphProto& g);
  const onnx::NodeProto* producer(const std::string& value) const;
  const onnx::NodeProto* made_by(const std::string& value, const std::string& op) const;
  std::vector<const onnx::NodeProto*> readers(const std::string& value, const std::string& op) const;
  std::vector<const onnx::NodeProto*> nodes(const std::string& op) const;
  bool constant(const std::string& value) const;
  // A constant as stored: an initializer or a Constant node's tensor, reached through Identity, Cast to float
  // (of a float16 one its values are float16's, as the weight check expects), for a matrix Transpose, and
  // for an int8 one the dequantization the graph applies to it (Cast · scale, DequantizeLinear).
  // `transposed`: an odd number of Transposes lies between.
  struct Stored {
    const onnx::TensorProto* tensor = nullptr;
    bool transposed = false;
    std::optional<Dequantization> dequantized;
  };
  Stored stored(const std::string& value) const;
  // A constant reached with no Transpose between.
  const onnx::TensorProto* initializer(const std::string& value) const;
  // Every int8 constant the graph dequantizes to floats (by a form `stored` follows, or after its Gather), and how.
  std::vector<std::pair<const onnx::TensorProto*, Dequantization>> dequantized() const;

 private:
  const onnx::GraphProto& g_;
  std::map<std::string, int> producer_;
  std::map<std::string, const onnx::TensorProto*> constants_;
};

// An integer table's dequantization where a quantizer puts it after the Gather that reads the table
// (DequantizeLinear(Gather(q, ids), scale[, zero_point]), one scale for the table: quantize_dynamic's form).
std::optional<Dequantization> dequantized_after_gather(const GraphIndex& graph, const onnx::NodeProto& gather);

// An integer attribute of a node, or `otherwise` where it has none.
int64_t int_attribute(const onnx::NodeProto& n, const std::string& name, int64_t otherwise = 0);
// A float attribute of a node, or `otherwise` where it has none.
double float_attribute(const onnx::NodeProto& n, const std::string& name, double otherwise);
// A string attribute of a node, or "" where it has none.
std::string string_attribute(const onnx::NodeProto& n, const std::string& name);

// A tensor's values: float and float16 as floats, int64 and int32 as integers (empty for other types).
std::vector<double> floats_of(const onnx::TensorProto& t);
std::vector<int64_t> int64s_of(const onnx::TensorProto& t);

// A linear layer: its input x, weight (float, float16 or int8), how an int8 weight is dequantized, its bias,
// and whether the graph holds the weight as MatMul's W[in, out] (not nn.Linear's [out, in] behind a
// Transpose, or Gemm's with transB). Where one weight and bias hold `packed` layers side by side (ONNX
// Runtime's Attention packs Q, K and V into W[in, 3·out]), `first_channel` is this layer's first output
// channel in them.
struct Linear {
  std::string input;
  const onnx::TensorProto* weight = nullptr;
  std::optional<Dequantization> dequantized = std::nullopt;
  const onnx::TensorProto* bias = nullptr;
  bool in_out = true;
  int64_t packed = 1, first_channel = 0;
  const onnx::NodeProto* product = nullptr;  // the node that multiplies (MatMul, Gemm, Attention, …)
};

// The linear layer whose output (after its bias) is `value`, if one of the forms is there.
std::optional<Linear> linear_behind(const GraphIndex& graph, const std::string& value);

// The value up to 12 producers back from `value` (through non-constant inputs, never behind `from`) that a
// linear layer with a weight of `in` × `out` makes: the FFN's first layer, behind its activation
// (torch.onnx's erf and tanh GELU, F.gelu's or written out, put it 2 producers back; 12 leaves room for
// longer activations). `from`, the FFN's input, keeps the walk in its layer: an op the patterns do not
// expect between the linear layer and its activation leaves it unlocated rather than located in the
// layer before.
std::optional<Linear> linear_before(const GraphIndex& graph, const std::string& value, const std::string& from,
                                    int64_t in, int64_t out);

// A LayerNorm: its input (empty where the graph computes none apart: ONNX Runtime's EmbedLayerNormalization),
// output, gain γ and bias β, its ε (the op's attribute or default, or the constant a decomposed form adds to
// the variance; NaN where that is no scalar constant), and the linear layer whose output the residual adds
// into its input, where one does (each encoder layer's attention output and FFN output).
struct Norm {
  std::string input{}, output{};
  const onnx::TensorProto* gain = nullptr;
  const onnx::TensorProto* bias = nullptr;
  std::optional<double> epsilon{};
  std::optional<Linear> after{};
};

// The nodes on the paths from `value` back to the linear layers that feed it (MatMul, Gemm, FusedMatMul,
// MatMulInteger, not included), at most 12 producers back and never behind `from`, each once: between the
// FFN's two linear layers, its activation (Erf, Tanh, BiasGelu, FastGelu, Gelu, Relu, …).
std::vector<const onnx::NodeProto*> ops_back_to_linear(const GraphIndex& graph, const std::string& value,
                                                       const std::string& from);

// Every LayerNorm in graph order (of the node each recogniser anchors at).
std::vector<Norm> norms_of(const GraphIndex& graph, const onnx::GraphProto& g);

// ONNX Runtime's SkipLayerNormalization computes its input, the residual sum, only as an optional fourth
// output: names it where the graph does not, so that the sum is a value a copy can output.
void name_skip_sums(onnx::GraphProto& g);

}  // namespace lenscheck::onnx_export
