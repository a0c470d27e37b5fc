#include "onnx/static_quantization.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <set>

#include "onnx/graph_patterns.h"

namespace lenscheck::onnx_export {

namespace {

// The graph before the rewrite: who makes and who reads each value, which values are constants.
struct Nodes {
  explicit Nodes(const onnx::GraphProto& g) : g(g) {
    for (const onnx::TensorProto& t : g.initializer()) constants[t.name()] = &t;
    for (int i = 0; i < g.node_size(); ++i) {
      const onnx::NodeProto& n = g.node(i);
      for (const std::string& out : n.output()) producer[out] = i;
      for (const std::string& in : n.input()) readers[in].push_back(i);
      if (n.op_type() == "Constant")
        for (const onnx::AttributeProto& a : n.attribute())
          if (a.name() == "value") constants[n.output(0)] = &a.t();
    }
  }
  const onnx::NodeProto* made_by(const std::string& value, const char* op) const {
    const auto it = producer.find(value);
    return it != producer.end() && g.node(it->second).op_type() == op ? &g.node(it->second) : nullptr;
  }
  const onnx::TensorProto* constant(const std::string& value) const {
    const auto it = constants.find(value);
    return it == constants.end() ? nullptr : it->second;
  }
  const onnx::GraphProto& g;
  std::map<std::string, int> producer;
  std::map<std::string, std::vector<int>> readers;
  std::map<std::string, const onnx::TensorProto*> constants;
};

// The quantization node `n` names at its inputs scale_at (one fp32 scale) and scale_at + 1 (one zero point, whose
// type gives the range: uint8 where there is none, as ONNX's default); none where it is not one for the tensor.
std::optional<QuantizedActivation> per_tensor(const Nodes& nodes, const onnx::NodeProto& n, int scale_at) {
  const onnx::TensorProto* scale = n.input_size() > scale_at ? nodes.constant(n.input(scale_at)) : nullptr;
  const std::vector<double> scales = scale ? floats_of(*scale) : std::vector<double>{};
  if (scales.size() != 1 || !(scales[0] > 0) || scale->data_type() != onnx::TensorProto::FLOAT) return std::nullopt;
  QuantizedActivation a{.scale = float(scales[0]), .zero_point = 0, .lowest = 0, .highest = 255};
  const bool has_zero_point = n.input_size() > scale_at + 1 && !n.input(scale_at + 1).empty();
  if (!has_zero_point) return a;
  const onnx::TensorProto* zero = nodes.constant(n.input(scale_at + 1));
  if (!zero || (zero->dims_size() > 0 && zero->dims(0) != 1)) return std::nullopt;
  const std::string& raw = zero->raw_data();
  if (zero->data_type() == onnx::TensorProto::UINT8) {
    a.zero_point = raw.empty() ? (zero->int32_data_size() ? zero->int32_data(0) : 0) : int(uint8_t(raw[0]));
  } else if (zero->data_type() == onnx::TensorProto::INT8) {
    a.zero_point = raw.empty() ? (zero->int32_data_size() ? zero->int32_data(0) : 0) : int(int8_t(raw[0]));
    a.lowest = -128;
    a.highest = 127;
  } else {
    return std::nullopt;
  }
  return a;
}

bool same(const std::optional<QuantizedActivation>& a, const std::optional<QuantizedActivation>& b) {
  return a && b && a->scale == b->scale && a->zero_point == b->zero_point && a->lowest == b->lowest;
}

std::string node_name(const onnx::NodeProto& n) {
  return fmt::format("{} node {}", n.op_type(), n.name().empty() ? n.output(0) : n.name());
}

// The rewrite under way: which nodes go, what each quantized value is read as, the weights' new dequantizations.
struct Rewrite {
  std::set<int> dropped;
  std::map<std::string, std::pair<std::string, QuantizedActivation>> read_as;  // quantized value → (x, how)
  std::map<int, QuantizedActivation> products;                                // rewritten node → its output's
  std::map<int, std::vector<onnx::NodeProto>> before;                          // new nodes, before node i
  std::vector<std::string> unmodelled;
};

// QuantizeLinear of an activation (not a constant: a weight quantized in the graph is a weight's form).
const onnx::NodeProto* activation_quantized(const Nodes& nodes, const std::string& value) {
  const onnx::NodeProto* q = nodes.made_by(value, "QuantizeLinear");
  return q && !nodes.constant(q->input(0)) ? q : nullptr;
}

// One recogniser per form, at node i.
using Form = bool (*)(const Nodes&, int i, Rewrite&);

// QDQ: DequantizeLinear(QuantizeLinear(x, s, z), s, z) is x as the pair rounds it.
bool qdq_pair(const Nodes& nodes, int i, Rewrite& r) {
  const onnx::NodeProto& dq = nodes.g.node(i);
  if (dq.op_type() != "DequantizeLinear") return false;
  const onnx::NodeProto* q = activation_quantized(nodes, dq.input(0));
  if (!q) return false;
  const std::optional<QuantizedActivation> a = per_tensor(nodes, *q, 1);
  if (!same(a, per_tensor(nodes, dq, 1))) {
    r.unmodelled.push_back(fmt::format("{} of {} (not one scale and zero point for the tensor, or not the "
                                       "QuantizeLinear's)",
                                       node_name(dq), q->input(0)));
    return true;
  }
  r.read_as[dq.output(0)] = {q->input(0), *a};
  r.dropped.insert(i);
  return true;
}

// QOperator: QLinearMatMul(a_q, a_s, a_z, b_q, b_s, b_z, y_s, y_z) → DequantizeLinear(y, y_s, y_z), each operand
// an activation's QuantizeLinear or an int8 constant: MatMul(a, b) with its product requantized.
bool qlinear_matmul(const Nodes& nodes, int i, Rewrite& r) {
  const onnx::NodeProto& n = nodes.g.node(i);
  if (n.op_type() != "QLinearMatMul") return false;
  const auto unmodelled = [&](const std::string& why) {
    r.unmodelled.push_back(fmt::format("{} ({})", node_name(n), why));
    return true;
  };
  if (n.input_size() < 8) return unmodelled("fewer than its 8 inputs");
  const auto readers = nodes.readers.find(n.output(0));
  if (readers == nodes.readers.end() || readers->second.size() != 1 ||
      nodes.g.node(readers->second[0]).op_type() != "DequantizeLinear")
    return unmodelled("its output is read otherwise than by one DequantizeLinear");
  const int dq = readers->second[0];
  const std::optional<QuantizedActivation> product = per_tensor(nodes, n, 6);
  if (!same(product, per_tensor(nodes, nodes.g.node(dq), 1)))
    return unmodelled("its output's scale and zero point are not one for the tensor, or not its DequantizeLinear's");
  onnx::NodeProto mm;
  mm.set_op_type("MatMul");
  mm.set_name(n.name());
  for (int at : {0, 3}) {
    if (const onnx::NodeProto* q = activation_quantized(nodes, n.input(at))) {
      const std::optional<QuantizedActivation> a = per_tensor(nodes, *q, 1);
      if (!same(a, per_tensor(nodes, n, at + 1)))
        return unmodelled(fmt::format("operand {} is not quantized per tensor as its QuantizeLinear does", at));
      r.read_as[n.input(at)] = {q->input(0), *a};
      mm.add_input(n.input(at));
    } else if (nodes.constant(n.input(at))) {
      onnx::NodeProto& weight = r.before[i].emplace_back();
      weight.set_op_type("DequantizeLinear");
      weight.set_name("lenscheck_dequantized_" + n.input(at));
      for (int k = at; k < at + 3; ++k) weight.add_input(n.input(k));
      weight.add_output(weight.name());
      mm.add_input(weight.name());
    } else {
      return unmodelled(fmt::format("operand {} is neither an activation's QuantizeLinear nor a constant", at));
    }
  }
  mm.add_output(nodes.g.node(dq).output(0));
  r.products[i] = *product;
  r.before[i].push_back(std::move(mm));
  r.dropped.insert(i);
  r.dropped.insert(dq);
  return true;
}

constexpr Form kForms[] = {qdq_pair, qlinear_matmul};

// Ops that compute on quantized integers, which no form above reads back to floats.
bool integer_op(const onnx::NodeProto& n) {
  static const std::set<std::string> ops = {"QLinearAdd",     "QLinearMul",       "QLinearConv",  "QLinearSoftmax",
                                            "QLinearSigmoid", "QLinearLeakyRelu", "QAttention",   "QGemm",
                                            "QLinearConcat",  "QLinearGlobalAveragePool", "QLinearReduceMean",
                                            "QLinearWhere",   "QOrderedMatMul",   "QOrderedAttention"};
  return ops.count(n.op_type()) > 0;
}

}  // namespace

bool quantizes_activations(const onnx::GraphProto& g) {
  return std::any_of(g.node().begin(), g.node().end(), [](const onnx::NodeProto& n) {
    return n.op_type() == "QuantizeLinear" || n.op_type() == "QLinearMatMul" || integer_op(n);
  });
}

QuantizedReads see_through_static_quantization(onnx::GraphProto& g) {
  QuantizedReads reads;
  Rewrite r;
  {
    const Nodes nodes(g);
    for (int i = 0; i < g.node_size(); ++i) {
      if (integer_op(g.node(i))) r.unmodelled.push_back(node_name(g.node(i)));
      for (Form form : kForms)
        if (form(nodes, i, r)) break;
    }
    // A QuantizeLinear goes where every reader of its integers went (read back by a pair, or by a rewritten
    // QLinearMatMul); another reader computes on them, which nothing here models.
    for (int i = 0; i < g.node_size(); ++i) {
      const onnx::NodeProto& q = g.node(i);
      if (q.op_type() != "QuantizeLinear" || nodes.constant(q.input(0))) continue;
      const auto it = nodes.readers.find(q.output(0));
      bool all_gone = true;
      for (int reader : it == nodes.readers.end() ? std::vector<int>{} : it->second)
        if (!r.dropped.count(reader)) {
          all_gone = false;
          r.unmodelled.push_back(fmt::format("{} of {} read by {}", node_name(q), q.input(0),
                                             node_name(g.node(reader))));
        }
      if (all_gone) r.dropped.insert(i);
    }
  }
  reads.unmodelled = std::move(r.unmodelled);
  if (r.dropped.empty()) return reads;
  google::protobuf::RepeatedPtrField<onnx::NodeProto> kept;
  std::vector<std::pair<std::pair<int, int>, QuantizedActivation>> inputs;
  std::vector<std::pair<int, QuantizedActivation>> products;
  for (int i = 0; i < g.node_size(); ++i) {
    if (const auto it = r.before.find(i); it != r.before.end())
      for (onnx::NodeProto& n : it->second) {
        if (r.products.count(i) && n.op_type() == "MatMul") products.emplace_back(kept.size(), r.products.at(i));
        *kept.Add() = std::move(n);
      }
    if (!r.dropped.count(i)) *kept.Add() = g.node(i);
  }
  for (int i = 0; i < kept.size(); ++i)
    for (int j = 0; j < kept.Get(i).input_size(); ++j)
      if (const auto it = r.read_as.find(kept.Get(i).input(j)); it != r.read_as.end()) {
        inputs.emplace_back(std::pair{i, j}, it->second.second);
        kept.Mutable(i)->set_input(j, it->second.first);
      }
  g.mutable_node()->Swap(&kept);
  for (const auto& [at, a] : inputs) reads.inputs[at] = a;
  for (const auto& [at, a] : products) reads.products[at] = a;
  return reads;
}

}  // namespace lenscheck::onnx_export
