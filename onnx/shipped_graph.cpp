#include "onnx/shipped_graph.h"

#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <fstream>
#include <map>
#include <optional>
#include <set>

#include "model/error.h"
#include "model/quantize.h"
#include "model/safetensors.h"
#include "model/sha256.h"
#include "model/tokenizer_files.h"
#include "model/trace.h"
#include "onnx/graph_patterns.h"
#include "onnx/static_quantization.h"
#include "runtime/encoder.h"

namespace lenscheck::onnx_export {

namespace {

using LT = LayerTensor;

onnx::ModelProto read_model(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw InputError(file, "cannot be read");
  onnx::ModelProto model;
  if (!model.ParseFromIstream(&in) || !model.has_graph() || model.graph().node_size() == 0)
    throw InputError(file, "not an ONNX model (no graph could be parsed from it)");
  for (const onnx::TensorProto& t : model.graph().initializer())
    if (t.data_location() == onnx::TensorProto::EXTERNAL)
      throw InputError(file, fmt::format("initializer {} is stored in an external file, which is not read", t.name()));
  return model;
}

// The int8 weights' rule as the graph's dequantizations show it: symmetric or not, per channel or per
// tensor, the range of their values.
struct WeightRule {
  size_t weights = 0;
  bool symmetric = true, per_channel = true;
  int lowest = 0, highest = 0;
  std::set<std::string> forms;
};

// The integers of an int8 or uint8 tensor, from raw_data or int32_data.
std::vector<int> integers_of(const onnx::TensorProto& t) {
  std::vector<int> v;
  const bool is_signed = t.data_type() == onnx::TensorProto::INT8;
  if (t.raw_data().empty()) v.assign(t.int32_data().begin(), t.int32_data().end());
  for (const char c : t.raw_data()) v.push_back(is_signed ? int(static_cast<int8_t>(c)) : int(static_cast<uint8_t>(c)));
  return v;
}

WeightRule weight_rule(const GraphIndex& graph) {
  WeightRule r;
  for (const auto& [q, d] : graph.dequantized()) {
    ++r.weights;
    r.forms.insert(d.by);
    if (d.zero_point)
      for (int z : integers_of(*d.zero_point)) r.symmetric = r.symmetric && z == 0;
    r.symmetric = r.symmetric && q->data_type() == onnx::TensorProto::INT8;
    r.per_channel = r.per_channel && d.axis >= 0;
    for (int v : integers_of(*q)) {
      r.lowest = std::min(r.lowest, v);
      r.highest = std::max(r.highest, v);
    }
  }
  return r;
}

// A graph as the patterns read it: statically quantized activations seen through (static_quantization.h), what
// was quantized where kept. InputError naming the file where a quantized activation is of no form the int8 scheme
// models.
// `original` must outlive it; a graph that quantizes no activation is not copied.
struct SeenGraph {
  const onnx::GraphProto& g() const { return rewritten ? *rewritten : *original; }
  const onnx::GraphProto* original;
  std::optional<onnx::GraphProto> rewritten;
  QuantizedReads reads;
};

SeenGraph seen_through(const onnx::GraphProto& g, const std::filesystem::path& file) {
  SeenGraph seen{&g, std::nullopt, {}};
  if (!quantizes_activations(g)) return seen;
  seen.reads = see_through_static_quantization(seen.rewritten.emplace(g));
  if (!seen.reads.unmodelled.empty())
    throw InputError(file, fmt::format("its activations are quantized where lenscheck's int8 scheme does not model "
                                       "it (it models fixed-scale QuantizeLinear → DequantizeLinear pairs and "
                                       "QLinearMatMul on the matrix products' operands): {}",
                                       fmt::join(seen.reads.unmodelled, "; ")));
  return seen;
}

// What the graph computes in, as its tensors and ops say: int8 where a linear layer is quantized
// (quantize_dynamic's form, or static quantization's fixed scales on its activations), w8a32 where its weights
// are int8 dequantized in the graph (Cast · scale, DequantizeLinear) and every op is fp32, fp16 where the
// initializers are float16, fp32 otherwise. Either int8 scheme computes with the graph's own integers (and
// fixed scales), whatever rule quantized them (FoundGraph::quantized).
// `weights_from_graph`: the truth's weights are the graph's own, dequantized as it does (graph_checkpoint), so
// weight-only int8 is fp32 arithmetic on them.
std::pair<Arithmetic, std::string> implied_arithmetic(const SeenGraph& seen, bool weights_from_graph) {
  const onnx::GraphProto& g = seen.g();
  if (seen.reads.any())
    return {Arithmetic::int8,
            fmt::format("its activations are quantized at fixed scales (static quantization: {} operands read through "
                        "QuantizeLinear{})",
                        seen.reads.inputs.size(),
                        seen.reads.products.empty()
                            ? ""
                            : fmt::format(", {} products requantized by QLinearMatMul", seen.reads.products.size()))};
  for (const onnx::NodeProto& n : g.node())
    if (n.op_type() == "MatMulInteger" || n.op_type() == "DynamicQuantizeLinear")
      return {Arithmetic::int8, fmt::format("its linear layers are quantized ({} nodes)", n.op_type())};
  const GraphIndex graph(g);
  if (const WeightRule r = weight_rule(graph); r.weights) {
    const std::string rule = fmt::format("{} int8 constants dequantized by {}: {}, {}, values in [{}, {}]", r.weights,
                                         fmt::join(r.forms, " and "), r.symmetric ? "symmetric" : "with a zero point",
                                         r.per_channel ? "per channel" : "per tensor", r.lowest, r.highest);
    if (weights_from_graph)
      return {Arithmetic::fp32, "its weights are " + rule + ", read dequantized as the truth's; every op fp32"};
    return {Arithmetic::w8a32, "its weights are " + rule + ", every op fp32"};
  }
  for (const onnx::TensorProto& t : g.initializer())
    if (t.data_type() == onnx::TensorProto::FLOAT16) {
      for (const onnx::NodeProto& n : g.node())
        if (n.domain() == "com.microsoft" &&
            (n.op_type() == "Attention" || n.op_type() == "SkipLayerNormalization" ||
             n.op_type() == "EmbedLayerNormalization"))
          return {Arithmetic::fp16_ort_fused,
                  fmt::format("its initializers are float16 and ONNX Runtime's optimizer fused it ({} nodes)",
                              n.op_type())};
      return {Arithmetic::fp16_ort_cpu, "its initializers are float16"};
    }
  return {Arithmetic::fp32, "its initializers are float32 and no layer is quantized"};
}

// An initializer's values as floats: float32, float16, or int8 dequantized as the graph does it, in fp32
// ((q − zero point) · scale, one rounding); with each value's quantization step (its channel's scale).
struct GraphValues {
  std::vector<double> values, scales;  // scales: one per channel (none: not quantized)
  std::vector<int> integers, zero_points;  // int8: q, and one zero point per channel (none: 0)
  size_t inner = 1;  // values per index of the quantization axis, and after it
  size_t channel(size_t at) const { return scales.size() <= 1 ? 0 : (at / inner) % scales.size(); }
  double step(size_t at) const { return scales.empty() ? 0.0 : scales[channel(at)]; }
};

GraphValues values_of(const onnx::TensorProto& t, const std::optional<Dequantization>& d) {
  GraphValues g;
  if (!d) {
    g.values = floats_of(t);
    return g;
  }
  g.scales = floats_of(*d->scale);
  if (d->zero_point) g.zero_points = integers_of(*d->zero_point);
  for (int64_t a = d->axis + 1; d->axis >= 0 && a < t.dims_size(); ++a) g.inner *= size_t(t.dims(int(a)));
  g.integers = integers_of(t);
  if (g.scales.empty()) return g;
  g.values.reserve(g.integers.size());
  for (size_t i = 0; i < g.integers.size(); ++i) {
    const size_t c = g.channel(i);
    const int zero = g.zero_points.empty() ? 0 : g.zero_points[c % g.zero_points.size()];
    g.values.push_back(float(double(g.integers[i] - zero) * g.scales[c]));
  }
  return g;
}

// A located weight: the tensor, how the graph dequantizes it, whether the graph holds W[in, out] of the
// checkpoint's W[out, in], and, where the tensor holds `packed` parameters side by side (Q, K and V),
// this one's first output channel in it.
struct GraphWeight {
  const onnx::TensorProto* tensor = nullptr;
  std::optional<Dequantization> dequantized = std::nullopt;
  bool transposed = false;
  int64_t packed = 1, first_channel = 0;
};

// Where a parameter of `shape` lies in its graph tensor of `values` values: its output channels among the
// tensor's (a matrix's [in, out] or [out, in] axis, a vector's elements), from `first` where several
// parameters are packed side by side. None where the tensor's size is not the parameter's (times `packed`).
struct Placement {
  size_t out = 1, in = 1, channels = 0, first = 0;
  bool matrix = false, transposed = false;
  size_t at(size_t o, size_t i) const {
    return !matrix ? first + i : transposed ? i * channels + first + o : (first + o) * in + i;
  }
  std::string where(size_t o, size_t i) const {
    return matrix ? fmt::format("[{}, {}]", o, i) : fmt::format("[{}]", i);
  }
};

std::optional<Placement> placement(const std::vector<int64_t>& shape, const GraphWeight& w, size_t values) {
  Placement p{.first = size_t(w.first_channel), .matrix = shape.size() == 2, .transposed = w.transposed};
  size_t count = 1;
  for (int64_t d : shape) {
    if (d < 1) return std::nullopt;
    count *= size_t(d);
  }
  p.out = p.matrix ? size_t(shape[0]) : 1;
  p.in = count / p.out;
  p.channels = !p.matrix                                                            ? values
               : w.tensor->dims_size() == 2 && w.tensor->dims(w.transposed ? 1 : 0) > 0 ? size_t(w.tensor->dims(w.transposed ? 1 : 0))
                                                                                  : 0;
  const size_t own = p.matrix ? p.out : p.in;  // this parameter's channels
  if (p.channels == 0 || p.channels != size_t(w.packed) * own || values != p.channels * (p.matrix ? p.in : 1) ||
      p.first + own > p.channels)
    return std::nullopt;
  return p;
}

// One parameter of the checkpoint against the graph's: equal in fp32, equal once rounded to the
// nearest float16, or within half a quantization step of its channel (a quantizer rounds each weight
// to the nearest multiple of its channel's scale). Returns the problem, or nothing.
std::optional<std::string> differs(const std::string& name, const Param& p, const GraphWeight& w) {
  const GraphValues g = values_of(*w.tensor, w.dequantized);
  const std::optional<Placement> place = placement(p.shape, w, g.values.size());
  if (!place)
    return fmt::format("{} has {} values in the graph{}, {} in the checkpoint", name, g.values.size(),
                       w.first_channel ? fmt::format(" (from channel {})", w.first_channel) : "", p.values.size());
  const size_t out = place->out, in = place->in;
  double worst = 0;
  size_t worst_o = 0, worst_i = 0;
  bool wrong = false;
  for (size_t o = 0; o < out; ++o)
    for (size_t i = 0; i < in; ++i) {
      const size_t at = place->at(o, i);
      const double want = p.values[o * in + i], got = g.values[at];
      const bool half = w.tensor->data_type() == onnx::TensorProto::FLOAT16;
      double expected = half ? double(static_cast<_Float16>(float(want))) : want;
      // onnxruntime.transformers' float16 conversion raises a nonzero weight under float16's smallest
      // subnormal, 2^-24, to it rather than rounding it to 0 or 2^-24 (float16.py, min_positive_val).
      if (half && want != 0 && std::abs(want) < 0x1p-24 && got == std::copysign(0x1p-24, want)) expected = got;
      // int8: half a step s of the channel, plus the fp32 rounding of w / s before it is rounded to an
      // integer (|w| · 2^-24) and of the product q · s the graph dequantizes to (|q · s| · 2^-24, and
      // |q · s| <= |w| + s / 2).
      const double step = g.step(at);
      const double slack = w.dequantized ? 0.5 * step * (1 + 0x1p-24) + std::abs(want) * 0x1p-23 : 0.0;
      const double d = std::abs(got - expected);
      if (!(d <= slack)) wrong = true;  // NaN never matches
      if (!std::isnan(worst) && !(d <= worst)) {  // the first NaN is the worst
        worst = d;
        worst_o = o;
        worst_i = i;
      }
    }
  if (wrong)
    return fmt::format("{} differs from the checkpoint's: max |Δ| {:.3g} (at {})", name, worst,
                       place->where(worst_o, worst_i));
  return std::nullopt;
}

// A matrix the graph holds quantized, as the checkpoint lays it out: its integers, and the scale and zero point
// of each output channel. None where the graph's scales run along another axis (no scale per output channel).
std::optional<QuantizedWeight> quantized_weight(const Param& p, const GraphWeight& w) {
  const GraphValues g = values_of(*w.tensor, w.dequantized);
  const std::optional<Placement> place = placement(p.shape, w, g.values.size());
  const int64_t output_axis = w.transposed ? 1 : 0;  // W[in, out]'s axis 1, W[out, in]'s and a table's axis 0
  if (!place || p.shape.size() != 2 || (w.dequantized->axis >= 0 && w.dequantized->axis != output_axis))
    return std::nullopt;
  const bool is_signed = w.tensor->data_type() == onnx::TensorProto::INT8;
  QuantizedWeight q;
  q.out = p.shape[0];
  q.in = p.shape[1];
  q.lowest = is_signed ? -128 : 0;  // the integer type's range: the quantizer's own may be narrower
  q.highest = is_signed ? 127 : 255;
  q.values.resize(p.values.size());
  for (size_t o = 0; o < place->out; ++o) {
    const size_t first = place->at(o, 0), channel = g.channel(first);
    q.scales.push_back(float(g.scales[channel]));
    q.zero_points.push_back(g.zero_points.empty() ? 0 : g.zero_points[channel % g.zero_points.size()]);
    for (size_t i = 0; i < place->in; ++i) q.values[o * place->in + i] = g.integers[place->at(o, i)];
  }
  return q;
}

int64_t perm_attribute(const onnx::NodeProto& n, size_t at) {
  for (const onnx::AttributeProto& a : n.attribute())
    if (a.name() == "perm" && a.ints_size() > int(at)) return a.ints(int(at));
  return -1;
}

// The Reshape that splits a linear layer's output into heads, behind the Transpose that makes `value`.
const onnx::NodeProto* split_behind(const GraphIndex& graph, const std::string& value) {
  const onnx::NodeProto* t = graph.made_by(value, "Transpose");
  return t ? graph.made_by(t->input(0), "Reshape") : nullptr;
}

// x, where `value` is x · c or c · x with c a constant.
std::optional<std::string> scaled_operand(const GraphIndex& graph, const std::string& value) {
  const onnx::NodeProto* mul = graph.made_by(value, "Mul");
  for (int i = 0; mul && i < 2; ++i)
    if (graph.constant(mul->input(1 - i))) return mul->input(i);
  return std::nullopt;
}

// The keys split into heads, [B, H, T, Dh] (a Transpose of the Reshape that splits their linear layer's
// output), up to 4 Reshapes and Transposes behind `value`: torch's decomposed scaled_dot_product_attention
// transposes them for the product as Reshape → Transpose → Reshape.
std::optional<std::string> heads_behind(const GraphIndex& graph, std::string value) {
  for (int steps = 0; steps < 4; ++steps) {
    const onnx::NodeProto* n = graph.producer(value);
    if (!n || (n->op_type() != "Reshape" && n->op_type() != "Transpose")) return std::nullopt;
    if (n->op_type() == "Transpose" && perm_attribute(*n, 1) == 2 && perm_attribute(*n, 2) == 1 &&
        perm_attribute(*n, 3) == 3 && split_behind(graph, value))
      return value;
    value = n->input(0);
  }
  return std::nullopt;
}

// One layer's attention, anchored at its Softmax: what of it the pattern shows. `values`: trace tensor →
// graph value; `split`: query, key, value → the [B, T, H, Dh] Reshape of its linear layer's output, where the
// graph holds the key only transposed for the scores' product (ONNX Runtime folds its two Transposes).
struct AttentionFound {
  std::map<LT, std::string> values, split;
  // Where static quantization may quantize the attention (QuantizedParams::activations): query, key, probs and
  // value as its products read them (the product, its input), the scores' and the context's products.
  std::map<LT, std::pair<const onnx::NodeProto*, int>> operands;
  std::map<LT, std::string> products;
};

AttentionFound attention_of(const GraphIndex& graph, const onnx::NodeProto& softmax) {
  AttentionFound found;
  const std::string probs = softmax.output(0);
  found.values[LT::probs] = probs;
  // The probabilities the values' product reads: Softmax's, or torch's decomposed scaled_dot_product_attention's
  // guard of fully masked rows, Where(IsNaN(p), 0, p), which leaves every finite p as it is.
  std::string weights = probs;
  for (const onnx::NodeProto* is_nan : graph.readers(probs, "IsNaN"))
    for (const onnx::NodeProto* where : graph.readers(is_nan->output(0), "Where"))
      if (where->input(0) == is_nan->output(0) && where->input(2) == probs && graph.constant(where->input(1)))
        weights = where->output(0);
  for (const onnx::NodeProto* mm : graph.readers(weights, "MatMul")) {
    if (mm->input(0) != weights) continue;
    found.values[LT::value] = mm->input(1);
    found.operands[LT::probs] = {mm, 0};
    found.operands[LT::value] = {mm, 1};
    found.products[LT::context] = mm->output(0);
    for (const onnx::NodeProto* t : graph.readers(mm->output(0), "Transpose"))
      for (const onnx::NodeProto* r : graph.readers(t->output(0), "Reshape")) found.values[LT::context] = r->output(0);
  }
  // Q·Kᵀ scaled: Div or Mul of a MatMul, or ONNX Runtime's FusedMatMul with the scale as its alpha, in the
  // layouts its attention fusion writes (A as it is, B as it is or transposed; no batch axes moved): in any
  // other the query is not the [B, H, T, Dh] input, so the scores are left unrecognised.
  auto product_behind = [&](const std::string& scaled) -> const onnx::NodeProto* {
    if (const onnx::NodeProto* fused = graph.made_by(scaled, "FusedMatMul"))
      return int_attribute(*fused, "transA") || int_attribute(*fused, "transBatchA") ||
                     int_attribute(*fused, "transBatchB")
                 ? nullptr
                 : fused;
    for (const char* op : {"Div", "Mul"})
      if (const onnx::NodeProto* scale = graph.made_by(scaled, op))
        for (const std::string& in : scale->input())
          if (const onnx::NodeProto* mm = graph.made_by(in, "MatMul")) return mm;
    // torch's scaled_dot_product_attention as the dynamo exporter decomposes it: MatMul(q · √s, kᵀ · √s).
    if (const onnx::NodeProto* mm = graph.made_by(scaled, "MatMul"))
      if (scaled_operand(graph, mm->input(0)) && scaled_operand(graph, mm->input(1))) return mm;
    return nullptr;
  };
  // Softmax(scores + mask), or Softmax(scores) where the graph has no mask.
  std::string scores = softmax.input(0);
  const onnx::NodeProto* qk = product_behind(scores);
  if (const onnx::NodeProto* add = graph.made_by(scores, "Add"))
    for (const std::string& in : add->input())
      if (!qk && (qk = product_behind(in))) scores = in;
  const bool key_transposed = qk && qk->op_type() == "FusedMatMul" && int_attribute(*qk, "transB") == 1;
  if (!qk) return found;
  found.values[LT::scores] = scores;
  // The scores' operands, unscaled where they are scaled before the product.
  const bool operands_scaled = qk->output(0) == scores && qk->op_type() == "MatMul";
  const std::string query = operands_scaled ? *scaled_operand(graph, qk->input(0)) : qk->input(0);
  const std::string keys = operands_scaled ? *scaled_operand(graph, qk->input(1)) : qk->input(1);
  found.values[LT::query] = query;
  if (!operands_scaled && qk->op_type() == "MatMul") {  // scaled operands would be quantized scaled
    found.operands[LT::query] = {qk, 0};
    found.operands[LT::key] = {qk, 1};
    found.products[LT::scores] = qk->output(0);
  }
  if (key_transposed) {
    found.values[LT::key] = keys;
  } else if (const onnx::NodeProto* kt = graph.made_by(keys, "Transpose")) {
    if (perm_attribute(*kt, 1) == 1 && perm_attribute(*kt, 2) == 3 && perm_attribute(*kt, 3) == 2)
      found.values[LT::key] = kt->input(0);
    else if (perm_attribute(*kt, 1) == 2 && perm_attribute(*kt, 2) == 3 && perm_attribute(*kt, 3) == 1)
      if (const onnx::NodeProto* r = graph.made_by(kt->input(0), "Reshape")) found.split[LT::key] = r->output(0);
  } else if (const std::optional<std::string> k = heads_behind(graph, keys)) {
    found.values[LT::key] = *k;
  }
  for (LT t : {LT::query, LT::key, LT::value})
    if (found.values.count(t))
      if (const onnx::NodeProto* r = split_behind(graph, found.values[t])) found.split[t] = r->output(0);
  return found;
}

// The constant `reader` reads at its input `at`, where the patterns may read it as an embedding table: a float,
// float16 or dequantized int8 matrix of `hidden` columns with at least one row (not an int64 index buffer of
// that width), dequantized before the read or, by a Gather, after it (dequantized_after_gather).
std::optional<GraphIndex::Stored> embedding_table(const GraphIndex& graph, const onnx::NodeProto& reader, int at,
                                                  int64_t hidden) {
  if (reader.input_size() <= at) return std::nullopt;
  GraphIndex::Stored t = graph.stored(reader.input(at));
  if (t.tensor && !t.dequantized && at == 0) t.dequantized = dequantized_after_gather(graph, reader);
  const bool floats = t.tensor && (t.dequantized || t.tensor->data_type() == onnx::TensorProto::FLOAT ||
                                   t.tensor->data_type() == onnx::TensorProto::FLOAT16);
  if (floats && !t.transposed && t.tensor->dims_size() == 2 && t.tensor->dims(0) > 0 && t.tensor->dims(1) == hidden)
    return t;
  return std::nullopt;
}

// What the patterns found: trace name → graph value, and for query, key and value the Reshape that splits
// their linear layer's output into heads.
struct Found {
  std::map<std::string, std::string> values, split;
  // Where static quantization may quantize (QuantizedParams::activations' keys): what an op reads at one of its
  // inputs (the attention's operands, each residual sum's block input), and values every reader reads
  // quantized (the attention's products); the linear layers' inputs and products are the located params'.
  std::map<std::pair<const onnx::NodeProto*, int>, std::string> quantizable_reads;
  std::map<std::string, std::string> quantizable_values;
};

// A parameter as the patterns locate it: its Hugging Face name, where the graph holds it (no tensor: not
// located), and whether it is a linear layer's weight (which both int8 schemes quantize).
struct LocatedParam {
  std::string name;
  GraphWeight weight;
  bool linear_weight = false;
  const onnx::NodeProto* product = nullptr;  // a linear weight's: the node that multiplies by it
};

// Every parameter of a BERT of `config`, in for_each_param's order, where the graph's patterns locate it;
// where the FFN's second linear layer is found, its input is the activation's output: the layer's
// intermediate, added to `found`. `fused`: each layer's com.microsoft.Attention op, where the graph has one
// per layer.
std::vector<LocatedParam> locate_params(const GraphIndex& graph, const BertConfig& config,
                                        const std::vector<Norm>& norms,
                                        const std::vector<const onnx::NodeProto*>& fused, Found& found) {
  std::vector<LocatedParam> located;
  auto linear = [&](const std::string& prefix, const std::optional<Linear>& lin) {
    const int64_t packed = lin ? lin->packed : 1, first = lin ? lin->first_channel : 0;
    located.push_back({prefix + ".weight",
                       lin ? GraphWeight{lin->weight, lin->dequantized, lin->in_out, packed, first} : GraphWeight{},
                       true, lin ? lin->product : nullptr});
    located.push_back(
        {prefix + ".bias", {.tensor = lin ? lin->bias : nullptr, .packed = packed, .first_channel = first}, false});
  };
  // The embedding tables, by the shapes of what reads them: Gather and Slice's first input, ONNX Runtime's
  // EmbedLayerNormalization's three tables.
  std::map<int64_t, GraphWeight> tables;  // rows → table
  auto table_read = [&](const onnx::NodeProto& reader, int at) {
    if (const std::optional<GraphIndex::Stored> t = embedding_table(graph, reader, at, config.hidden_size))
      tables[t->tensor->dims(0)] = {t->tensor, t->dequantized};
  };
  for (const char* op : {"Gather", "Slice"})
    for (const onnx::NodeProto* n : graph.nodes(op)) table_read(*n, 0);
  for (const onnx::NodeProto* n : graph.nodes("EmbedLayerNormalization"))
    for (int i = 2; i < 5; ++i) table_read(*n, i);
  auto table = [&](int64_t rows) { return tables.count(rows) ? tables[rows] : GraphWeight{}; };
  located.push_back({"embeddings.word_embeddings.weight", table(config.vocab_size), false});
  located.push_back({"embeddings.position_embeddings.weight", table(config.max_position_embeddings), false});
  located.push_back({"embeddings.token_type_embeddings.weight", table(config.type_vocab_size), false});
  auto norm = [&](const std::string& prefix, size_t at) {
    located.push_back({prefix + ".weight", {at < norms.size() ? norms[at].gain : nullptr}, false});
    located.push_back({prefix + ".bias", {at < norms.size() ? norms[at].bias : nullptr}, false});
  };
  norm("embeddings.LayerNorm", 0);
  auto linear_into = [&](size_t at) { return at < norms.size() ? norms[at].after : std::nullopt; };
  for (int l = 0; l < config.num_hidden_layers; ++l) {
    const std::string hf = fmt::format("encoder.layer.{}.", l);
    // Q, K, V: the linear layer behind the Reshape that splits its output into heads, or a third of an
    // Attention op's packed weight and bias (Q, K, V in that order); not located where its qkv_hidden_sizes
    // splits them otherwise.
    auto projection = [&](LT tensor) -> std::optional<Linear> {
      if (!fused.empty()) {
        const onnx::NodeProto& a = *fused[size_t(l)];
        for (const onnx::AttributeProto& sizes : a.attribute())
          if (sizes.name() == "qkv_hidden_sizes")
            for (int64_t size : sizes.ints())
              if (size != config.hidden_size) return std::nullopt;
        const int64_t which = tensor == LT::query ? 0 : tensor == LT::key ? 1 : 2;
        const GraphIndex::Stored w = graph.stored(a.input(1));
        return Linear{.input = a.input(0), .weight = w.tensor, .dequantized = w.dequantized,
                      .bias = a.input_size() > 2 ? graph.initializer(a.input(2)) : nullptr, .in_out = !w.transposed,
                      .packed = 3, .first_channel = which * config.hidden_size};
      }
      const auto it = found.split.find(trace_name(l, tensor));
      const onnx::NodeProto* r = it == found.split.end() ? nullptr : graph.made_by(it->second, "Reshape");
      return r ? linear_behind(graph, r->input(0)) : std::nullopt;
    };
    linear(hf + "attention.self.query", projection(LT::query));
    linear(hf + "attention.self.key", projection(LT::key));
    linear(hf + "attention.self.value", projection(LT::value));
    linear(hf + "attention.output.dense", linear_into(size_t(1 + 2 * l)));
    norm(hf + "attention.output.LayerNorm", size_t(1 + 2 * l));
    const std::optional<Linear> second = linear_into(size_t(2 + 2 * l));
    const std::optional<Linear> first =
        second && size_t(1 + 2 * l) < norms.size()
            ? linear_before(graph, second->input, norms[size_t(1 + 2 * l)].output, config.hidden_size,
                            config.intermediate_size)
            : std::nullopt;
    if (second && first) found.values.emplace(trace_name(l, LT::intermediate), second->input);
    linear(hf + "intermediate.dense", first);
    linear(hf + "output.dense", second);
    norm(hf + "output.LayerNorm", size_t(2 + 2 * l));
  }
  return located;
}

// The rules a quantizer may have applied to a graph's linear weights, tried in turn: symmetric int8 per output
// channel or per tensor, in quantize_dynamic's reduced range [-64, 64] or the full [-127, 127]
// (get_qmin_qmax_for_qType; `export-onnx --variant int8` and w8a32 are two of them, model/quantize.h).
struct WeightQuantizer {
  const char* name;
  QuantizedWeight (*quantize)(const Param&, int);
  int limit;
};
constexpr WeightQuantizer kWeightQuantizers[] = {
    {"symmetric per output channel in [-64, 64]", quantize_per_channel, kInt8WeightLimit},
    {"symmetric per output channel in [-127, 127]", quantize_per_channel, kWeightOnlyInt8Limit},
    {"symmetric per tensor in [-127, 127]", quantize_per_tensor, kWeightOnlyInt8Limit},
    {"symmetric per tensor in [-64, 64]", quantize_per_tensor, kInt8WeightLimit},
};

bool is_table(const std::string& param) { return param.starts_with("embeddings."); }

// The rule that makes every linear weight in `quantized` from the checkpoint's, bit for bit (integers, scales,
// zero points 0), or none (also where `quantized` holds no linear weight).
const WeightQuantizer* weights_rule(const QuantizedParams& quantized,
                                    const std::map<std::string, const Param*>& params) {
  const auto& weights = quantized.weights;
  if (std::all_of(weights.begin(), weights.end(), [](const auto& held) { return is_table(held.first); }))
    return nullptr;
  for (const WeightQuantizer& rule : kWeightQuantizers) {
    const bool makes_all = std::all_of(weights.begin(), weights.end(), [&](const auto& held) {
      if (is_table(held.first)) return true;
      const QuantizedWeight q = rule.quantize(*params.at(held.first), rule.limit);
      return q.values == held.second.values && q.scales == held.second.scales &&
             q.zero_points == held.second.zero_points;
    });
    if (makes_all) return &rule;
  }
  return nullptr;
}

// What static quantization quantizes (QuantizedReads), as the int8 scheme computes it, by its key
// (QuantizedParams::activations): each located linear layer's input as it reads it and its product, the
// attention's operands and products, each residual sum's read of its block's input. A product (a value of
// `quantizable_values`) is quantized for every op that reads it. Anything else quantized is a scheme problem: the
// scheme's benchmark would compute it otherwise.
void attribute_static_reads(const QuantizedReads& reads, const onnx::GraphProto& seen,
                            const std::vector<LocatedParam>& located, const Found& found, QuantizedParams& quantized,
                            FoundGraph& f) {
  std::map<std::pair<const onnx::NodeProto*, int>, std::string> key_of_read = found.quantizable_reads;
  std::map<std::string, std::string> key_of_value = found.quantizable_values;
  for (const LocatedParam& p : located)
    if (p.linear_weight && p.product) {
      key_of_read[{p.product, 0}] = input_of(p.name);
      key_of_value[p.product->output(0)] = product_of(p.name);
    }
  const auto keep = [&](const std::string& key, const QuantizedActivation& a, const std::string& what) {
    const auto [it, first] = quantized.activations.emplace(key, a);
    if (!first && (it->second.scale != a.scale || it->second.zero_point != a.zero_point))
      f.scheme_problems.push_back(fmt::format("{} is quantized with two scales or zero points", what));
  };
  std::map<std::string, std::set<const onnx::NodeProto*>> product_readers;  // quantized reads of a product
  for (const auto& [at, a] : reads.inputs) {
    const onnx::NodeProto* reader = &seen.node(at.first);
    const std::string& value = reader->input(at.second);
    if (const auto read = key_of_read.find({reader, at.second}); read != key_of_read.end()) {
      keep(read->second, a, value);
    } else if (const auto product = key_of_value.find(value); product != key_of_value.end()) {
      keep(product->second, a, value);
      product_readers[value].insert(reader);
    } else {
      f.scheme_problems.push_back(fmt::format("{} node {} reads {} quantized, which the int8 scheme quantizes nowhere "
                                              "(it models a linear layer's input and product, the attention's operands "
                                              "and products, a residual sum's block input)",
                                              reader->op_type(), reader->name(), value));
    }
  }
  for (const auto& [at, a] : reads.products) {
    const std::string& value = seen.node(at).output(0);
    if (const auto product = key_of_value.find(value); product != key_of_value.end())
      keep(product->second, a, value);
    else
      f.scheme_problems.push_back(fmt::format("{} node {} requantizes its product, and is no linear layer or attention "
                                              "product the patterns locate",
                                              seen.node(at).op_type(), seen.node(at).name()));
  }
  for (const onnx::NodeProto& n : seen.node())
    for (const std::string& in : n.input())
      if (const auto readers = product_readers.find(in); readers != product_readers.end() && !readers->second.count(&n))
        f.scheme_problems.push_back(fmt::format("{} is read quantized by some ops and unquantized by {} node {}", in,
                                                n.op_type(), n.name()));
  // Where the graph fixes scales, a linear layer whose input it leaves in floats multiplies by its weight
  // dequantized, where int8 would quantize the input per run (DynamicQuantizeLinear is MatMulInteger's form).
  if (!reads.any()) return;
  for (const LocatedParam& p : located)
    if (p.linear_weight && p.product && p.product->op_type() != "MatMulInteger" &&
        !quantized.activations.count(input_of(p.name)))
      f.scheme_problems.push_back(fmt::format("{}'s layer reads its input unquantized in a graph that quantizes "
                                              "others at fixed scales",
                                              p.name));
}

// Every located parameter against the checkpoint's (differs), and what the graph holds quantized, which the
// int8 schemes compute with (FoundGraph::quantized): they quantize every linear layer's weight, along its output
// channels (a weight the patterns do not locate gets the rule the located ones follow: weights_rule), and,
// where the graph's quantization is static, the activations `reads` holds (attribute_static_reads).
// `own_weights`: the checkpoint's weights were read from this graph, so the values are not compared (they are
// the graph's), only the scheme.
void check_weights(const std::vector<LocatedParam>& located, const SeenGraph& seen, const Found& found,
                   const BertConfig& config, const BertWeights& w, bool own_weights, FoundGraph& f) {
  const bool int8_scheme = f.implied == Arithmetic::w8a32 || f.implied == Arithmetic::int8;
  std::map<std::string, const Param*> params;
  for_each_param(config, w, [&](const std::string& name, const Param& p) { params[name] = &p; });
  auto quantized = std::make_shared<QuantizedParams>();
  for (const LocatedParam& p : located) {
    const GraphWeight& gw = p.weight;
    if (!gw.tensor) {
      f.weights_not_found.push_back(p.name);
      continue;
    }
    ++f.weights_checked;
    if (int8_scheme && p.linear_weight && !gw.dequantized)
      f.scheme_problems.push_back(fmt::format("{} is not quantized", p.name));
    if (gw.dequantized) ++f.weights_dequantized;
    if (int8_scheme && gw.dequantized) {
      if (params.at(p.name)->shape.size() != 2)
        f.scheme_problems.push_back(fmt::format("{} is int8: the int8 schemes quantize matrices only", p.name));
      else if (std::optional<QuantizedWeight> q = quantized_weight(*params.at(p.name), gw))
        quantized->weights.emplace(p.name, std::move(*q));
      else if (gw.dequantized->axis >= 0 && gw.dequantized->axis != (gw.transposed ? 1 : 0))
        f.scheme_problems.push_back(fmt::format("{} is scaled along axis {}, not its output channels", p.name,
                                                gw.dequantized->axis));
      // else its tensor does not hold its shape: `differs` says so (a graph read as its own checkpoint holds
      // every shape it names)
    }
    if (own_weights) continue;
    if (const std::optional<std::string> problem = differs(p.name, *params.at(p.name), gw))
      f.weight_problems.push_back(*problem);
  }
  if (int8_scheme) attribute_static_reads(seen.reads, seen.g(), located, found, *quantized, f);
  if (!int8_scheme || quantized->weights.empty()) return;
  // The rule that makes every located linear weight, where one does (weights_rule): its range bounds the
  // probes (not the integer type's: a probe that moved a reduced-range 64 to 65 could saturate int8's pair sums,
  // model/arithmetic.h, where the graph never does), and it quantizes a linear weight the patterns do not
  // locate (a node inside its layer hides it), which has no integers from the graph; with no such rule, that is
  // bad input. Without one (a graph read as its own checkpoint), symmetric integers are bounded by the largest
  // |q| the graph's linear weights hold: a quantizer maps each scale's largest magnitude to its range's end.
  const WeightQuantizer* rule = own_weights ? nullptr : weights_rule(*quantized, params);
  const auto symmetric = [](const QuantizedWeight& q) {
    return q.lowest < 0 && std::all_of(q.zero_points.begin(), q.zero_points.end(), [](int32_t z) { return z == 0; });
  };
  int32_t limit = rule ? rule->limit : 0;
  if (!rule)
    for (const auto& [name, q] : quantized->weights)
      if (!is_table(name) && symmetric(q))
        for (int32_t v : q.values) limit = std::max(limit, std::abs(v));
  if (rule) f.linear_rule = rule->name;
  for (auto& [name, q] : quantized->weights)
    if (!is_table(name) && symmetric(q) && limit > 0) {
      q.lowest = -limit;
      q.highest = limit;
    }
  for (const LocatedParam& p : located)
    if (p.linear_weight && !p.weight.tensor) {
      if (rule) {
        quantized->weights.emplace(p.name, rule->quantize(*params.at(p.name), rule->limit));
        ++f.weights_by_rule;
      } else
        f.scheme_problems.push_back(fmt::format("{} is not located (a node inside its layer?), and the graph's "
                                                "located weights follow no rule lenscheck knows to quantize it by",
                                                p.name));
    }
  f.quantized = std::move(quantized);
}

// A graph's BERT as its patterns show it, before any checkpoint is read: each layer's attention (trace values
// anchored at its Softmax, or its com.microsoft.Attention op), the LayerNorms (the embeddings' and each layer's
// two), and why what is not recognised is not.
struct Structure {
  Found found;
  std::vector<Norm> norms;                    // none where they are not all recognised
  std::vector<const onnx::NodeProto*> fused;  // each layer's com.microsoft.Attention, or none
  std::string attention_why, norms_why;
  // The graph's ops of another domain than ONNX's that no pattern knows ("com.microsoft.MultiHeadAttention ×4"):
  // a fused op that may hold what is not found.
  std::string unknown_ops;
};

// The ops of other domains than ONNX's that the patterns do not recognise, with their counts.
std::string unknown_ops_of(const onnx::GraphProto& g) {
  static const std::set<std::string> known = {"Attention",      "SkipLayerNormalization", "EmbedLayerNormalization",
                                              "BiasGelu",       "FastGelu",               "FusedMatMul"};
  std::map<std::string, int> unknown;
  for (const onnx::NodeProto& n : g.node())
    if (!n.domain().empty() && n.domain() != "ai.onnx" && !(n.domain() == "com.microsoft" && known.count(n.op_type())))
      ++unknown[n.domain() + "." + n.op_type()];
  std::vector<std::string> listed;
  for (const auto& [op, count] : unknown) listed.push_back(fmt::format("{} ×{}", op, count));
  return fmt::format("{}", fmt::join(listed, ", "));
}

// The structure of a graph of `layers` layers. InputError naming the file where no BERT is recognised, or
// where the graph's Softmax nodes and LayerNorms show another number of layers.
Structure structure_of(const GraphIndex& graph, const onnx::GraphProto& g, int layers,
                       const std::filesystem::path& file) {
  const int L = layers;
  Structure s;
  Found& found = s.found;
  s.unknown_ops = unknown_ops_of(g);
  const std::vector<const onnx::NodeProto*> softmaxes = graph.nodes("Softmax");
  // ONNX Runtime's com.microsoft.Attention (ONNX's own Attention, opset 23, takes Q, K and V apart).
  std::vector<const onnx::NodeProto*> attention_ops = graph.nodes("Attention");
  std::erase_if(attention_ops, [](const onnx::NodeProto* n) { return n->domain() != "com.microsoft"; });
  if (attention_ops.size() == size_t(L)) {
    s.attention_why = fmt::format("inside {}.Attention (ONNX Runtime's fused attention), which hides the queries, "
                                  "keys, values, scores and probabilities",
                                  attention_ops.front()->domain());
    s.fused = attention_ops;
    for (int l = 0; l < L; ++l) found.values[trace_name(l, LT::context)] = attention_ops[size_t(l)]->output(0);
  } else if (!attention_ops.empty())
    s.attention_why = fmt::format("{} {}.Attention ops for {} layers: the attention is not recognised",
                                  attention_ops.size(), attention_ops.front()->domain(), L);
  else if (softmaxes.size() != size_t(L))
    s.attention_why = fmt::format("{} Softmax nodes for {} layers: the attention is not recognised", softmaxes.size(), L);
  else
    for (int l = 0; l < L; ++l) {
      const AttentionFound a = attention_of(graph, *softmaxes[size_t(l)]);
      for (const auto& [tensor, value] : a.values) found.values[trace_name(l, tensor)] = value;
      for (const auto& [tensor, split] : a.split) found.split[trace_name(l, tensor)] = split;
      for (const auto& [tensor, read] : a.operands) found.quantizable_reads[read] = trace_name(l, tensor);
      for (const auto& [tensor, value] : a.products)
        found.quantizable_values[value] = product_of(trace_name(l, tensor));
    }

  const std::vector<Norm> norms = norms_of(graph, g);
  if (softmaxes.empty() && attention_ops.empty() && norms.empty())
    throw InputError(file, fmt::format("no BERT encoder is recognised in the graph: it has no Softmax (nor "
                                       "com.microsoft.Attention) for an attention and no LayerNorm (LayerNormalization, "
                                       "or (x − mean) / σ · γ + β in any form graph_patterns.h knows){}",
                                       s.unknown_ops.empty() ? "" : "; ops the patterns do not know: " + s.unknown_ops));
  if (attention_ops.empty() && softmaxes.size() != size_t(L) && norms.size() == 1 + 2 * softmaxes.size())
    throw InputError(file, fmt::format("the graph has {} layers (Softmax nodes, with the LayerNorms they imply); the "
                                       "checkpoint has {}",
                                       softmaxes.size(), L));
  if (norms.size() != size_t(1 + 2 * L)) {
    s.norms_why = fmt::format("{} LayerNorms (LayerNormalization nodes or their decomposition) for the embeddings' "
                              "and {} layers' two: not recognised",
                              norms.size(), L);
    return s;
  }
  s.norms = norms;
  found.values[kEmbeddingsOutput] = norms[0].output;
  for (int l = 0; l < L; ++l) {
    if (!norms[size_t(1 + 2 * l)].input.empty())
      found.values.emplace(trace_name(l, LT::attention_pre_norm), norms[size_t(1 + 2 * l)].input);
    found.values.emplace(trace_name(l, LT::attention_output), norms[size_t(1 + 2 * l)].output);
    found.values.emplace(trace_name(l, LT::output), norms[size_t(2 + 2 * l)].output);
    // Each residual sum (the Add into the block's LayerNorm) where it reads the block's input: the operand that
    // is not its linear layer's output.
    for (size_t block : {size_t(1 + 2 * l), size_t(2 + 2 * l)})
      if (const onnx::NodeProto* sum = graph.made_by(norms[block].input, "Add"); sum && sum->input_size() == 2)
        for (int i = 0; i < 2; ++i)
          if (linear_behind(graph, sum->input(1 - i)))
            found.quantizable_reads[{sum, i}] =
                input_of(trace_name(l, block % 2 ? LT::attention_pre_norm : LT::output));
  }
  return s;
}

// The graph input `value` is, through the ops that retype or reshape indices (ONNX Runtime's fusion casts
// input_ids to int32), or "" where it is computed.
std::string graph_input_behind(const GraphIndex& graph, std::string value) {
  static const std::set<std::string> passing = {"Cast", "Identity", "Unsqueeze", "Squeeze", "Reshape", "Flatten"};
  for (int steps = 0; steps < 6; ++steps) {
    const onnx::NodeProto* n = graph.producer(value);
    if (!n) return graph.constant(value) ? "" : value;
    if (!passing.count(n->op_type())) return "";
    value = n->input(0);
  }
  return "";
}

// The one integer a value holds where it is a constant (an initializer or Constant, reached through Identity,
// or one behind Unsqueeze or Squeeze: torch.onnx builds a Reshape's shape by Concat of such pieces).
std::optional<int64_t> constant_integer(const GraphIndex& graph, std::string value) {
  for (int steps = 0; steps < 4; ++steps) {
    if (const onnx::TensorProto* t = graph.initializer(value)) {
      const std::vector<int64_t> v = int64s_of(*t);
      return v.size() == 1 ? std::optional(v[0]) : std::nullopt;
    }
    const onnx::NodeProto* n = graph.producer(value);
    if (!n || (n->op_type() != "Unsqueeze" && n->op_type() != "Squeeze")) return std::nullopt;
    value = n->input(0);
  }
  return std::nullopt;
}

// The number of heads of a graph of hidden size `hidden`, and where it was read: com.microsoft.Attention's
// num_heads, or the shape [batch, tokens, heads, head size] of the Reshape that splits layer 0's queries
// into heads (its heads, or its head size dividing the hidden size), a constant or a Concat of pieces.
std::pair<int64_t, std::string> heads_of(const GraphIndex& graph, const Structure& s, int64_t hidden) {
  if (!s.fused.empty())
    return {int_attribute(*s.fused.front(), "num_heads"), fmt::format("num_heads of {}", s.fused.front()->op_type())};
  const auto split = s.found.split.find(trace_name(0, LT::query));
  const onnx::NodeProto* reshape = split == s.found.split.end() ? nullptr : graph.made_by(split->second, "Reshape");
  if (!reshape) return {0, "no Reshape splits layer 0's queries into heads"};
  std::vector<std::optional<int64_t>> dims;
  if (reshape->input_size() < 2) return {0, fmt::format("the Reshape {} has no shape input", reshape->name())};
  if (const onnx::TensorProto* shape = graph.initializer(reshape->input(1)))
    for (int64_t d : int64s_of(*shape)) dims.emplace_back(d);
  else if (const onnx::NodeProto* concat = graph.made_by(reshape->input(1), "Concat"))
    for (const std::string& piece : concat->input()) dims.push_back(constant_integer(graph, piece));
  if (dims.size() == 4 && dims[2] && *dims[2] > 0)
    return {*dims[2], fmt::format("the Reshape {} that splits the queries into heads", reshape->name())};
  if (dims.size() == 4 && dims[3] && *dims[3] > 0 && hidden % *dims[3] == 0)
    return {hidden / *dims[3], fmt::format("the head size {} of the Reshape {} that splits the queries into heads",
                                           *dims[3], reshape->name())};
  return {0, fmt::format("the Reshape {} that splits the queries into heads has no constant heads or head size",
                         reshape->name())};
}

// HF's hidden_act for the activation between the FFN's linear layers, by the ops that compute it (`ops`,
// each with its `approximate` attribute, which only ONNX's and ONNX Runtime's Gelu have).
std::optional<std::string> activation_of(const std::vector<std::pair<std::string, std::string>>& ops) {
  static const std::map<std::string, std::string> kActivations = {
      {"Erf", "gelu"},        // torch.onnx's exact GELU, 0.5 x (1 + erf(x / √2))
      {"BiasGelu", "gelu"},   // ONNX Runtime's fusion of it
      {"Gelu", "gelu"},       // opset 20's and ONNX Runtime's op, exact unless approximate="tanh"
      {"Tanh", "gelu_new"},   // the tanh approximation written out
      {"FastGelu", "gelu_new"},
      {"Relu", "relu"}};
  std::set<std::string> acts;
  for (const auto& [op, approximate] : ops)
    if (kActivations.count(op)) acts.insert(op == "Gelu" && approximate == "tanh" ? "gelu_new" : kActivations.at(op));
  return acts.size() == 1 ? std::optional(*acts.begin()) : std::nullopt;
}

// Why a trace tensor was not found, from what the search for its pattern said, naming the fused ops the
// patterns do not know that may hold it.
std::string why_not_found(const std::string& name, const Structure& s) {
  const std::string why = [&]() -> std::string {
    const bool attention = name.find(".attention.") != std::string::npos && !name.ends_with(".attention.output");
    if (attention && !s.attention_why.empty()) return s.attention_why;
    if (is_residual_lens(name))
      return "a residual-lens tensor, derived from the candidate's attention.value, attention.probs, "
             "attention.pre_norm and each layer's input, which are not all found";
    if (!runtime::lens_inputs(name).empty())
      return "a lens tensor, derived from the candidate's attention.value and attention.probs, which are not found";
    if (!s.norms_why.empty() && (name == kEmbeddingsOutput || name.ends_with(".output"))) return s.norms_why;
    if (name.ends_with(".intermediate")) return "the FFN's two linear layers, between which it lies, are not recognised";
    return "not recognised in the graph";
  }();
  return s.unknown_ops.empty() ? why : fmt::format("{} (ops the patterns do not know: {})", why, s.unknown_ops);
}

// What a statically quantized graph quantizes, by kind (QuantizedParams::activations' keys).
std::string static_quantization_note(const std::map<std::string, QuantizedActivation>& activations,
                                     const std::string& precision) {
  size_t inputs = 0, products = 0, residuals = 0, operands = 0;
  for (const auto& [key, a] : activations) {
    if (key.ends_with(" (product)")) ++products;
    else if (key.ends_with(" (input)")) ++(key.starts_with("encoder.") ? inputs : residuals);
    else ++operands;
  }
  return fmt::format("activations: {} values quantized at the graph's fixed scales and zero points (static "
                     "quantization: {} linear layers' inputs, {} products, {} attention operands, {} residual sums' "
                     "block inputs), which {} computes with in place of DynamicQuantizeLinear's per-run scales",
                     activations.size(), inputs, products, operands, residuals, precision);
}

// A BertModel's interface: input_ids in, last_hidden_state out with the checkpoint's hidden size.
void check_interface(const onnx::GraphProto& g, const std::filesystem::path& file, int64_t hidden_size) {
  const auto has = [](const auto& values, const std::string& name) {
    return std::any_of(values.begin(), values.end(), [&](const onnx::ValueInfoProto& v) { return v.name() == name; });
  };
  if (!has(g.input(), "input_ids")) throw InputError(file, "the graph has no input named input_ids");
  if (!has(g.output(), "last_hidden_state")) {
    std::vector<std::string> names;
    for (const onnx::ValueInfoProto& v : g.output()) names.push_back(v.name());
    throw InputError(file, fmt::format("the graph has no output named last_hidden_state (its outputs: {})",
                                       fmt::join(names, ", ")));
  }
  for (const onnx::ValueInfoProto& v : g.output())
    if (v.name() == "last_hidden_state") {
      const auto& shape = v.type().tensor_type().shape();
      if (shape.dim_size() == 3 && shape.dim(2).has_dim_value() && shape.dim(2).dim_value() != hidden_size)
        throw InputError(file, fmt::format("last_hidden_state has {} features; the checkpoint's hidden size is {}",
                                           shape.dim(2).dim_value(), hidden_size));
    }
}

}  // namespace

FoundGraph prepare_shipped_graph(const std::filesystem::path& file, const Checkpoint& ck,
                                 const std::filesystem::path& copy, bool weights_from_graph) {
  const BertConfig& config = ck.config;
  onnx::ModelProto model = read_model(file);
  onnx::GraphProto& g = *model.mutable_graph();
  name_skip_sums(g);
  FoundGraph f;
  f.nodes = size_t(g.node_size());
  f.initializers = size_t(g.initializer_size());
  const SeenGraph seen = seen_through(g, file);
  std::tie(f.implied, f.implied_by) = implied_arithmetic(seen, weights_from_graph);

  check_interface(g, file, config.hidden_size);
  f.dequantize_linear = std::any_of(g.node().begin(), g.node().end(),
                                    [](const onnx::NodeProto& n) { return n.op_type() == "DequantizeLinear"; });

  const int L = config.num_hidden_layers;
  const GraphIndex graph(seen.g());
  Structure structure = structure_of(graph, seen.g(), L, file);
  Found& found = structure.found;
  found.values[trace_name(L - 1, LT::output)] = "last_hidden_state";
  for (int l = 0; l < int(structure.fused.size()); ++l)
    if (const int64_t heads = int_attribute(*structure.fused[size_t(l)], "num_heads");
        heads != config.num_attention_heads)
      throw InputError(file, fmt::format("the graph's Attention op {} splits layer {} into {} heads; the checkpoint "
                                         "has {}",
                                         structure.fused[size_t(l)]->name(), l, heads, config.num_attention_heads));

  check_weights(locate_params(graph, config, structure.norms, structure.fused, found), seen,
                found, config, ck.weights,
                weights_from_graph, f);
  f.weights_from_graph = weights_from_graph;
  if (!f.scheme_problems.empty())
    throw InputError(file, fmt::format("it is quantized otherwise than {}, the scheme it implies, computes (every "
                                       "linear layer's weight, with one scale per output channel or one for all{}): {}",
                                       arithmetic_name(f.implied),
                                       f.implied == Arithmetic::int8
                                           ? "; activations per run, or at fixed scales where they are a linear "
                                             "layer's input or product, the attention's operands and products, or a "
                                             "residual sum's block input"
                                           : "",
                                       fmt::join(f.scheme_problems, "; ")));

  // The lens tensors are derived where the graph gives what they are derived from (runtime::lens_inputs): a
  // layer's value and probs, for its residual lens also its attention.pre_norm and input.
  auto derivable = [&](const std::string& name) {
    const std::vector<std::string> from = runtime::lens_inputs(name);
    return !from.empty() && std::all_of(from.begin(), from.end(), [&](const std::string& input) {
      return found.values.count(input) > 0 || found.split.count(input) > 0;
    });
  };

  // Each found value becomes an output under its trace name; last_hidden_state stays what it is. A key
  // the graph holds only transposed is its heads' split, transposed to [B, H, T, Dh].
  auto add_output = [&](const std::string& op, const std::string& value, const std::string& name) -> onnx::NodeProto& {
    onnx::NodeProto& n = *g.add_node();
    n.set_op_type(op);
    n.set_name("lenscheck_" + name);
    n.add_input(value);
    n.add_output(name);
    g.add_output()->set_name(name);
    return n;
  };
  for (const TensorSpec& spec : trace_schema(config, 1)) {
    if (const auto it = found.values.find(spec.name); it != found.values.end()) {
      f.outputs.emplace_back(it->second, spec.name);
      add_output("Identity", it->second, spec.name);
    } else if (const auto split = found.split.find(spec.name); split != found.split.end()) {
      f.outputs.emplace_back(split->second, spec.name);
      onnx::AttributeProto& perm = *add_output("Transpose", split->second, spec.name).add_attribute();
      perm.set_name("perm");
      perm.set_type(onnx::AttributeProto::INTS);
      for (int64_t axis : {0, 2, 1, 3}) perm.add_ints(axis);
    } else if (derivable(spec.name)) {
      f.lenses_derived = true;
    } else {
      f.unreachable.push_back({spec.name, why_not_found(spec.name, structure)});
    }
  }
  std::ofstream out(copy, std::ios::binary | std::ios::trunc);
  if (!out || !model.SerializeToOstream(&out) || !out.flush()) throw InputError(copy, "cannot write the ONNX model");
  return f;
}

Checkpoint graph_checkpoint(const std::filesystem::path& file, const std::filesystem::path& tokenizer) {
  const onnx::ModelProto model = read_model(file);
  const SeenGraph seen = seen_through(model.graph(), file);
  const onnx::GraphProto& g = seen.g();
  const Arithmetic arithmetic = implied_arithmetic(seen, true).first;
  const GraphIndex graph(g);
  std::vector<std::string> read;  // where each size came from, for the note
  auto unreadable = [&](const std::string& what, const std::string& why) {
    return InputError(file, fmt::format("read with no checkpoint, the graph does not give {}: {}", what, why));
  };
  // A size as the config holds it; validate_config refuses what is out of its range.
  auto as_int = [](int64_t size) { return int(std::clamp<int64_t>(size, -1, std::numeric_limits<int>::max())); };

  // The layers: one attention op (Softmax, or ONNX Runtime's Attention) and two LayerNorms each.
  std::vector<const onnx::NodeProto*> fused = graph.nodes("Attention");
  std::erase_if(fused, [](const onnx::NodeProto* n) { return n->domain() != "com.microsoft"; });
  const size_t attention = fused.empty() ? graph.nodes("Softmax").size() : fused.size();
  const std::vector<Norm> norms = norms_of(graph, g);
  if (attention == 0 || norms.size() != 1 + 2 * attention)
    throw unreadable("the number of layers", fmt::format("{} attention ops (Softmax or com.microsoft.Attention) and {} "
                                                         "LayerNorms, where a BERT of L layers has L and 1 + 2L",
                                                         attention, norms.size()));
  BertConfig c;
  c.num_hidden_layers = int(attention);
  read.push_back(fmt::format("{} layers ({} attention ops)", attention, fused.empty() ? "Softmax" : "Attention"));
  if (!norms[0].gain) throw unreadable("the hidden size", "the embeddings' LayerNorm has no constant gain");
  c.hidden_size = as_int(int64_t(floats_of(*norms[0].gain).size()));
  read.push_back(fmt::format("hidden size {} (the LayerNorms' gains)", c.hidden_size));

  Structure structure = structure_of(graph, g, c.num_hidden_layers, file);
  const auto [heads, heads_from] = heads_of(graph, structure, c.hidden_size);
  if (heads <= 0 || c.hidden_size % heads != 0) throw unreadable("the number of heads", heads_from);
  c.num_attention_heads = as_int(heads);
  read.push_back(fmt::format("{} heads ({})", heads, heads_from));

  const std::optional<Linear> ffn_out = norms[2].after;
  if (!ffn_out || !ffn_out->weight || ffn_out->weight->dims_size() != 2)
    throw unreadable("the FFN's width", "no linear layer is found before layer 0's output LayerNorm");
  c.intermediate_size = as_int(ffn_out->weight->dims(ffn_out->in_out ? 0 : 1));
  read.push_back(fmt::format("FFN width {} (layer 0's FFN output weight)", c.intermediate_size));
  std::vector<std::pair<std::string, std::string>> ops;  // op type, its approximate attribute
  std::vector<std::string> op_types;
  for (const onnx::NodeProto* n : ops_back_to_linear(graph, ffn_out->input, norms[1].output)) {
    ops.emplace_back(n->op_type(), string_attribute(*n, "approximate"));
    op_types.push_back(n->op_type() + (ops.back().second.empty() ? "" : "(" + ops.back().second + ")"));
  }
  std::sort(op_types.begin(), op_types.end());
  op_types.erase(std::unique(op_types.begin(), op_types.end()), op_types.end());
  const std::optional<std::string> act = activation_of(ops);
  if (!act)
    throw unreadable("the FFN's activation", fmt::format("the ops between its linear layers are {} (known: Erf, "
                                                         "BiasGelu, Gelu: gelu; Tanh, FastGelu, Gelu(tanh): gelu_new; "
                                                         "Relu: relu; exactly one of them)",
                                                         fmt::join(op_types, ", ")));
  c.hidden_act = *act;
  read.push_back(
      fmt::format("activation {} (between the FFN's linear layers: {})", c.hidden_act, fmt::join(op_types, ", ")));

  std::set<double> epsilons;
  for (size_t at = 0; at < norms.size(); ++at) {
    if (!norms[at].epsilon || std::isnan(*norms[at].epsilon))
      throw unreadable("one LayerNorm ε", fmt::format("LayerNorm {} (of {}, in graph order) adds no scalar constant ε",
                                                      at, norms.size()));
    epsilons.insert(*norms[at].epsilon);
  }
  if (epsilons.size() != 1)
    throw unreadable("one LayerNorm ε", fmt::format("its {} LayerNorms hold {}", norms.size(), fmt::join(epsilons, ", ")));
  c.layer_norm_eps = *epsilons.begin();
  read.push_back(fmt::format("LayerNorm ε {:.9g} (the graph's, every LayerNorm)", c.layer_norm_eps));

  // The embedding tables, told apart by the graph input that indexes them: ONNX Runtime's
  // EmbedLayerNormalization takes them in the order word, position, token type; a Gather of input_ids is the
  // word table, of token_type_ids the token type table, of position_ids the position table, as is a table of
  // which a Slice takes the first rows. Tables indexed by computed values (HF's buffers, where the graph has
  // no such input) are the position table and, where there is a second, the token type table: the one of
  // fewer rows (BERT's 2 token types against its hundreds of positions).
  std::map<std::string, const onnx::TensorProto*> tables;  // word, position, token type → table
  std::vector<const onnx::TensorProto*> computed;           // indexed by computed values
  auto table = [&](const onnx::NodeProto& reader, int at, const std::string& role) {
    const std::optional<GraphIndex::Stored> stored = embedding_table(graph, reader, at, c.hidden_size);
    if (!stored) return;
    const onnx::TensorProto* t = stored->tensor;
    if (role.empty()) {
      if (std::find(computed.begin(), computed.end(), t) == computed.end()) computed.push_back(t);
    } else if (tables.count(role) && tables[role] != t) {
      throw unreadable(fmt::format("the {} table", role), fmt::format("two tables of {} and {} rows",
                                                                     tables[role]->dims(0), t->dims(0)));
    } else {
      tables[role] = t;
    }
  };
  for (const onnx::NodeProto* n : graph.nodes("EmbedLayerNormalization"))
    for (const auto& [at, role] : {std::pair{2, "word"}, {3, "position"}, {4, "token type"}})
      table(*n, at, role);
  for (const onnx::NodeProto* n : graph.nodes("Gather")) {
    if (n->input_size() < 2) continue;
    const std::string input = graph_input_behind(graph, n->input(1));
    table(*n, 0, input == "input_ids"        ? "word"
                       : input == "token_type_ids" ? "token type"
                       : input == "position_ids"   ? "position"
                                                   : "");
  }
  for (const onnx::NodeProto* n : graph.nodes("Slice"))
    table(*n, 0, "position");
  std::erase_if(computed, [&](const onnx::TensorProto* t) {
    return std::any_of(tables.begin(), tables.end(), [&](const auto& role) { return role.second == t; });
  });
  std::sort(computed.begin(), computed.end(),
            [](const onnx::TensorProto* x, const onnx::TensorProto* y) { return x->dims(0) > y->dims(0); });
  for (const char* role : {"position", "token type"})
    if (!tables.count(role) && !computed.empty()) {
      tables[role] = computed.front();
      computed.erase(computed.begin());
    }
  for (const char* role : {"word", "position", "token type"})
    if (!tables.count(role))
      throw unreadable(fmt::format("the {} embedding table", role), "no Gather or Slice of one is recognised");
  // The parameters' tables are located by their rows (locate_params), which must tell them apart.
  if (tables["word"]->dims(0) == tables["position"]->dims(0) || tables["word"]->dims(0) == tables["token type"]->dims(0) ||
      tables["position"]->dims(0) == tables["token type"]->dims(0))
    throw unreadable("the embedding tables apart", fmt::format("two of them have the same rows (word {}, position "
                                                               "{}, token type {})",
                                                               tables["word"]->dims(0), tables["position"]->dims(0),
                                                               tables["token type"]->dims(0)));
  c.vocab_size = as_int(tables["word"]->dims(0));
  c.max_position_embeddings = as_int(tables["position"]->dims(0));
  c.type_vocab_size = as_int(tables["token type"]->dims(0));
  read.push_back(fmt::format("vocabulary {}, {} positions, {} token types (the embedding tables' rows)", c.vocab_size,
                             c.max_position_embeddings, c.type_vocab_size));
  validate_config(c, file);

  Checkpoint ck;
  ck.config = c;
  ck.dir = file.has_parent_path() ? file.parent_path() : std::filesystem::path(".");
  ck.dir_from = "no checkpoint: the graph's own weights";
  ck.weights_file = file;
  ck.model_sha256 = sha256_file(file);
  const std::vector<LocatedParam> located = locate_params(graph, c, structure.norms, structure.fused, structure.found);
  size_t dequantized = 0, half = 0;
  for_each_param(c, ck.weights, [&](const std::string& name, Param& param, const std::vector<int64_t>& shape) {
    const auto it = std::find_if(located.begin(), located.end(), [&](const LocatedParam& p) { return p.name == name; });
    if (it == located.end() || !it->weight.tensor)
      throw unreadable(name, "no pattern locates it: a layer in a form the patterns do not know, or a node inside it, "
                             "as a faulty copy has (with its checkpoint, --model, the graph is judged and the span "
                             "through that node named)");
    const GraphValues values = values_of(*it->weight.tensor, it->weight.dequantized);
    const std::optional<Placement> place = placement(shape, it->weight, values.values.size());
    if (!place)
      throw unreadable(name, fmt::format("its tensor of {} values does not hold its shape {}", values.values.size(),
                                         shape_string(shape)));
    param.shape = shape;
    param.values.resize(place->out * place->in);
    for (size_t o = 0; o < place->out; ++o)
      for (size_t i = 0; i < place->in; ++i) {
        const double v = values.values[place->at(o, i)];
        if (!std::isfinite(v))
          throw InputError(file, fmt::format("{} holds a non-finite value ({}) at {}", name, v, place->where(o, i)));
        param.values[o * place->in + i] = float(v);
      }
    dequantized += it->weight.dequantized ? 1 : 0;
    half += it->weight.tensor->data_type() == onnx::TensorProto::FLOAT16 ? 1 : 0;
    ++ck.stored_dtypes[it->weight.dequantized ? "I8 (dequantized)"
                       : it->weight.tensor->data_type() == onnx::TensorProto::FLOAT16 ? "F16"
                                                                                      : "F32"];
  });

  CheckpointTokenizer t = load_tokenizer(
      {.dir = tokenizer.empty()                       ? ck.dir
              : std::filesystem::is_directory(tokenizer) ? transformer_folder(tokenizer).dir
                                                         : tokenizer.parent_path(),
       .file = std::filesystem::is_directory(tokenizer) ? std::filesystem::path() : tokenizer,
       .sizes_from = file},
      c);
  ck.vocab = std::move(t.vocab);
  ck.vocab_file = std::move(t.vocab_file);
  ck.tokenizer = std::move(t.settings);
  ck.notes = std::move(t.notes);
  ck.notes.insert(ck.notes.begin(),
                  fmt::format("checkpoint: none; the weights read from the graph {}: {} parameters{}{}. The fp64 truth is "
                              "computed from them, so the gate judges the graph's arithmetic ({}), not how far its "
                              "weights are from the model they were made from",
                              file.string(), located.size(),
                              dequantized ? fmt::format(", {} of them int8 dequantized as the graph does it", dequantized)
                                          : "",
                              half ? fmt::format(", {} of them float16 widened", half) : "",
                              arithmetic_name(arithmetic)));
  ck.notes.insert(ck.notes.begin() + 1,
                  fmt::format("config: read from the graph: {}; tokenizer: {}", fmt::join(read, "; "),
                              ck.vocab_file.string()));
  return ck;
}

Candidate shipped_candidate(const std::filesystem::path& file, const onnxruntime::Options& ort,
                            bool weights_from_graph) {
  Candidate c;
  c.name = "onnx:" + file.string();
  std::string implied_by;
  const onnx::ModelProto model = read_model(file);
  std::tie(c.arithmetic, implied_by) = implied_arithmetic(seen_through(model.graph(), file), weights_from_graph);
  c.run = [file, ort, weights_from_graph, name = c.name, implied_by](const Checkpoint& ck,
                                                                     const std::vector<Encoding>& inputs,
                                                                     const runtime::Stages* stages, unsigned) {
    if (stages) throw std::logic_error("ONNX Runtime's stages cannot be replaced");
    const ScratchFolder scratch("the graph with its trace tensors as outputs");
    const std::filesystem::path copy = scratch.path() / file.filename();
    // The checkpoint must be the graph's own when the candidate says so: else its weights are not compared.
    if (weights_from_graph && ck.weights_file != file)
      throw std::logic_error(fmt::format("onnx:{} is judged against its own weights, not {}'s", file.string(),
                                         ck.weights_file.string()));
    const FoundGraph found = prepare_shipped_graph(file, ck, copy, weights_from_graph);
    const std::string precision = arithmetic_name(found.implied);
    CandidateRun r;
    r.label = fmt::format("onnxruntime on {} (CPU, {} intra-op thread{}, graph optimization {})",
                          file.filename().string(), ort.intra_op_threads, ort.intra_op_threads == 1 ? "" : "s",
                          ort.graph_optimization);
    r.notes.push_back(fmt::format("candidate: {}: {} nodes, {} initializers; it declares {}: {}", file.string(),
                                  found.nodes, found.initializers, precision, implied_by));
    if (found.weights_from_graph)
      r.notes.push_back(fmt::format("weights: the graph's own, {} parameters located by the patterns ({} int8), the "
                                    "checkpoint read from them: nothing to compare them with",
                                    found.weights_checked, found.weights_dequantized));
    else
      r.notes.push_back(fmt::format("weights: {} of the checkpoint's parameters located in the graph{}, {} of them equal "
                                    "to the checkpoint's (fp32 exactly, float16 rounded to nearest, int8 within half its "
                                    "channel's step){}{}",
                                    found.weights_checked,
                                    found.weights_dequantized
                                        ? fmt::format(" ({} of them int8, read as the graph dequantizes them)",
                                                      found.weights_dequantized)
                                        : "",
                                    found.weights_checked - found.weight_problems.size(),
                                    found.quantized
                                        ? fmt::format("; {} computes with the graph's own integers, scales and zero "
                                                      "points, not its own rule{}",
                                                      precision,
                                                      found.linear_rule.empty()
                                                          ? ""
                                                          : fmt::format(" (every linear weight is the checkpoint's "
                                                                        "quantized {}, bit for bit)",
                                                                        found.linear_rule))
                                        : "",
                                    found.weights_not_found.empty()
                                        ? ""
                                        : fmt::format("; not located: {}{}", fmt::join(found.weights_not_found, ", "),
                                                      found.weights_by_rule
                                                          ? fmt::format(" ({} linear weight{} among them quantized "
                                                                        "by that rule)",
                                                                        found.weights_by_rule,
                                                                        found.weights_by_rule == 1 ? "" : "s")
                                                          : "")));
    if (found.quantized && !found.quantized->activations.empty())
      r.notes.push_back(static_quantization_note(found.quantized->activations, precision));
    // Measured on ONNX Runtime 1.30: from the extended level its optimizer rewrites DequantizeLinear → MatMul
    // as com.microsoft.MatMulNBits (bits 8, accuracy_level 4), which quantizes the activations to int8.
    if (found.weights_dequantized && found.dequantize_linear && found.implied != Arithmetic::int8 &&
        !(ort.graph_optimization == "disabled" || ort.graph_optimization == "basic"))
      r.notes.push_back(fmt::format("ONNX Runtime's graph optimization {} fuses each DequantizeLinear → MatMul into "
                                    "com.microsoft.MatMulNBits, which quantizes the activations to int8: not the "
                                    "{} the graph declares (--ort-optimization basic runs it as written)",
                                    ort.graph_optimization, precision));
    r.weights_differ = found.weight_problems;
    r.quantized = found.quantized;
    if (!r.weights_differ.empty()) return r;  // another checkpoint's graph: no sentence runs
    onnxruntime::Run run = onnxruntime::run(copy, inputs, ort, name, precision, ck.vocab);
    r.traces = std::move(run.traces);
    r.int8_sums = run.int8_sums;
    if (found.implied == Arithmetic::int8) r.notes.push_back(onnxruntime::int8_sums_note(run.int8_sums));
    r.unreachable = found.unreachable;
    // The heads are a reshape, not a weight: a graph that splits the checkpoint's weights into another number
    // of heads passes the weight check and computes another model.
    for (const Trace& trace : r.traces)
      for (int l = 0; l < ck.config.num_hidden_layers; ++l)
        if (const Tensor* value = trace.find(trace_name(l, LayerTensor::value));
            value && !value->shape.empty() && value->shape[0] != ck.config.num_attention_heads)
          throw InputError(file, fmt::format("the graph splits layer {}'s attention into {} heads; the checkpoint has {}",
                                             l, value->shape[0], ck.config.num_attention_heads));
    if (found.lenses_derived) {
      const runtime::Encoder lens_code(ck.config, ck.weights);
      for (Trace& trace : r.traces) r.derived = lens_code.derive_lenses(trace);  // the same tensors for each
      r.notes.push_back(fmt::format("derived: the lens tensors (value_norm, transformed_norm, lens.*, mixing_ratio.*), "
                                    "which the graph does not compute, by lenscheck's runtime lens code in fp32 from "
                                    "the candidate's own attention.value and attention.probs (the residual lens also "
                                    "its attention.pre_norm and each layer's input) and the {} W_O and attention "
                                    "LayerNorm gain",
                                    found.weights_from_graph ? "graph's" : "checkpoint's"));
    }
    r.label = fmt::format("onnxruntime {}{}", run.version, r.label.substr(std::string("onnxruntime").size()));
    const size_t schema = trace_schema(ck.config, 1).size();
    r.notes.push_back(fmt::format("found in the graph: {} of {} trace tensors, each made an output of a copy; {} "
                                  "derived, {} not judged",
                                  found.outputs.size(), schema,
                                  schema - found.outputs.size() - found.unreachable.size(), found.unreachable.size()));
    return r;
  };
  return c;
}

}  // namespace lenscheck::onnx_export
