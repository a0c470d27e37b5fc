#include "onnx/export.h"

#include <fmt/format.h>
#include <onnx/checker.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>

#include "common/report_file.h"
#include "gate/verify.h"
#include "model/error.h"
#include "model/quantize.h"
#include "model/trace.h"

namespace lenscheck::onnx_export {

Variant parse_variant(const std::string& name) {
  if (name == "fp32") return Variant::fp32;
  if (name == "fp16") return Variant::fp16;
  if (name == "int8") return Variant::int8;
  throw InputError("--variant", fmt::format("\"{}\" is not fp32, fp16 or int8", name));
}

std::string variant_name(Variant v) { return v == Variant::fp32 ? "fp32" : v == Variant::fp16 ? "fp16" : "int8"; }

namespace {

using LT = LayerTensor;

using onnx::AttributeProto;
using onnx::TensorProto;

// Appends nodes and initializers to one graph; every value it makes gets a fresh name unless the
// caller names it (the trace's tensors carry their canonical names).
class Builder {
 public:
  Builder(onnx::GraphProto& graph, Variant variant)
      : g_(graph), float_type_(variant == Variant::fp16 ? TensorProto::FLOAT16 : TensorProto::FLOAT) {}

  int float_type() const { return float_type_; }

  std::string fresh(const std::string& hint) { return fmt::format("/{}_{}", hint, counter_++); }

  onnx::NodeProto& node(const std::string& op, std::vector<std::string> inputs, const std::string& output) {
    onnx::NodeProto& n = *g_.add_node();
    n.set_op_type(op);
    n.set_name(fmt::format("{}_{}", op, counter_++));
    for (const std::string& i : inputs) n.add_input(i);
    n.add_output(output.empty() ? fresh(op) : output);
    return n;
  }
  // The common case: one output, freshly named.
  std::string op(const std::string& op_type, std::vector<std::string> inputs, const std::string& name = "") {
    return node(op_type, std::move(inputs), name).output(0);
  }

  // Floating initializers are stored in the graph's float type: exact for fp32, rounded to nearest
  // even for fp16.
  std::string floats(const std::string& name, const std::vector<int64_t>& shape, const std::vector<float>& values) {
    TensorProto& t = initializer(name, shape, float_type_);
    if (float_type_ == TensorProto::FLOAT) {
      t.set_raw_data(values.data(), values.size() * sizeof(float));
    } else {
      std::vector<uint16_t> halves(values.size());
      for (size_t i = 0; i < values.size(); ++i) {
        const _Float16 h = static_cast<_Float16>(values[i]);
        std::memcpy(&halves[i], &h, sizeof h);
      }
      t.set_raw_data(halves.data(), halves.size() * sizeof(uint16_t));
    }
    return name;
  }
  std::string fp32(const std::string& name, const std::vector<int64_t>& shape, const std::vector<float>& values) {
    initializer(name, shape, TensorProto::FLOAT).set_raw_data(values.data(), values.size() * sizeof(float));
    return name;
  }
  std::string int8s(const std::string& name, const std::vector<int64_t>& shape, const std::vector<int8_t>& values) {
    initializer(name, shape, TensorProto::INT8).set_raw_data(values.data(), values.size());
    return name;
  }
  std::string int64s(const std::vector<int64_t>& values) {
    const std::string name = fresh("const");
    initializer(name, {static_cast<int64_t>(values.size())}, TensorProto::INT64)
        .set_raw_data(values.data(), values.size() * sizeof(int64_t));
    return name;
  }
  std::string scalar(float value) { return floats(fresh("scalar"), {}, {value}); }

 private:
  TensorProto& initializer(const std::string& name, const std::vector<int64_t>& shape, int type) {
    TensorProto& t = *g_.add_initializer();
    t.set_name(name);
    for (int64_t d : shape) t.add_dims(d);
    t.set_data_type(type);
    return t;
  }
  onnx::GraphProto& g_;
  int float_type_;
  int counter_ = 0;
};

void attr(onnx::NodeProto& n, const std::string& name, int64_t value) {
  AttributeProto& a = *n.add_attribute();
  a.set_name(name);
  a.set_type(AttributeProto::INT);
  a.set_i(value);
}
void attr(onnx::NodeProto& n, const std::string& name, float value) {
  AttributeProto& a = *n.add_attribute();
  a.set_name(name);
  a.set_type(AttributeProto::FLOAT);
  a.set_f(value);
}
void attr(onnx::NodeProto& n, const std::string& name, const std::vector<int64_t>& values) {
  AttributeProto& a = *n.add_attribute();
  a.set_name(name);
  a.set_type(AttributeProto::INTS);
  for (int64_t v : values) a.add_ints(v);
}
void attr(onnx::NodeProto& n, const std::string& name, const std::string& value) {
  AttributeProto& a = *n.add_attribute();
  a.set_name(name);
  a.set_type(AttributeProto::STRING);
  a.set_s(value);
}

// torch.nn.Linear stores W as [out, in]; ONNX exporters write x · Wᵀ as MatMul with the transposed
// initializer [in, out].
std::vector<float> transposed(const Param& w) {
  const int64_t rows = w.shape.at(0), cols = w.shape.at(1);
  std::vector<float> t(w.values.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) t[size_t(c * rows + r)] = w.values[size_t(r * cols + c)];
  return t;
}

class BertGraph {
 public:
  BertGraph(onnx::GraphProto& graph, const Checkpoint& ck, const ExportOptions& options)
      : b_(graph, options.variant), ck_(ck), options_(options) {}

  // The linear layer x · Wᵀ + b, named `name` (a trace name, or empty).
  std::string linear(const std::string& x, const Param& w, const Param& bias, const std::string& prefix,
                     const std::string& name = "") {
    const std::string bias_name = b_.floats(prefix + ".bias", bias.shape, bias.values);
    if (options_.variant != Variant::int8) {
      const std::string wt = b_.floats(prefix + ".weight_t", {w.shape[1], w.shape[0]}, transposed(w));
      return b_.op("Add", {b_.op("MatMul", {x, wt}), bias_name}, name);
    }
    // quantize_dynamic's MatMulInteger form (model/quantize.h), B as [in, out].
    const QuantizedWeight qw = quantize_per_channel(w, kInt8WeightLimit);
    const int64_t out = qw.out, in = qw.in;
    std::vector<int8_t> q(qw.values.size());
    for (int64_t o = 0; o < out; ++o)
      for (int64_t i = 0; i < in; ++i) q[size_t(i * out + o)] = int8_t(qw.values[size_t(o * in + i)]);
    const std::vector<float>& scales = qw.scales;
    const std::string wq = b_.int8s(prefix + ".weight_quantized", {in, out}, q);
    const std::string wzp = b_.int8s(prefix + ".weight_zero_point", {out}, std::vector<int8_t>(size_t(out), 0));
    const std::string ws = b_.fp32(prefix + ".weight_scale", {out}, scales);
    const std::string xq = b_.fresh("x_quantized"), xs = b_.fresh("x_scale"), xzp = b_.fresh("x_zero_point");
    onnx::NodeProto& dq = b_.node("DynamicQuantizeLinear", {x}, xq);
    dq.add_output(xs);
    dq.add_output(xzp);
    onnx::NodeProto& cast = b_.node("Cast", {b_.op("MatMulInteger", {xq, wq, xzp, wzp})}, "");
    attr(cast, "to", int64_t{TensorProto::FLOAT});
    const std::string product = b_.op("Mul", {cast.output(0), b_.op("Mul", {xs, ws})});
    return b_.op("Add", {product, bias_name}, name);
  }

  std::string layer_norm(const std::string& x, const Param& g, const Param& beta, const std::string& prefix,
                         const std::string& name) {
    onnx::NodeProto& n = b_.node("LayerNormalization",
                                 {x, b_.floats(prefix + ".weight", g.shape, g.values),
                                  b_.floats(prefix + ".bias", beta.shape, beta.values)},
                                 name);
    attr(n, "axis", int64_t{-1});
    attr(n, "epsilon", static_cast<float>(ck_.config.layer_norm_eps));
    return n.output(0);
  }

  // As torch.onnx writes nn.functional.gelu: x · 0.5 · (1 + erf(x / √2)); tanh form likewise.
  std::string activation(const std::string& x, const std::string& name) {
    switch (ck_.config.activation()) {
      case Activation::relu: return b_.op("Relu", {x}, name);
      case Activation::gelu_erf: {
        const std::string erf = b_.op("Erf", {b_.op("Div", {x, b_.scalar(1.4142135623730951f)})});
        return b_.op("Mul", {b_.op("Mul", {x, b_.op("Add", {erf, b_.scalar(1.0f)})}), b_.scalar(0.5f)}, name);
      }
      case Activation::gelu_tanh: {
        const std::string cube = b_.op("Mul", {b_.op("Mul", {x, x}), x});
        const std::string inner = b_.op("Add", {x, b_.op("Mul", {cube, b_.scalar(0.044715f)})});
        const std::string t = b_.op("Tanh", {b_.op("Mul", {inner, b_.scalar(0.7978845608028654f)})});
        return b_.op("Mul", {b_.op("Mul", {x, b_.op("Add", {t, b_.scalar(1.0f)})}), b_.scalar(0.5f)}, name);
      }
    }
    throw std::logic_error("unknown activation");
  }

  std::string traced(const std::string& name) {
    if (!options_.trace) return "";
    traced_.push_back(name);
    return name;
  }
  std::string traced(int layer, LayerTensor tensor) { return traced(trace_name(layer, tensor)); }

  // [B, S, D] -> [B, H, S, Dh]
  std::string per_head(const std::string& x, const std::string& name) {
    const int64_t H = ck_.config.num_attention_heads, Dh = ck_.config.head_dim();
    onnx::NodeProto& t =
        b_.node("Transpose", {b_.op("Reshape", {x, b_.int64s({0, 0, H, Dh})})}, name);
    attr(t, "perm", std::vector<int64_t>{0, 2, 1, 3});
    return t.output(0);
  }

  std::string reduce_l2_last(const std::string& x, const std::string& name) {
    onnx::NodeProto& n = b_.node("ReduceL2", {x}, name);
    attr(n, "axes", std::vector<int64_t>{-1});
    attr(n, "keepdims", int64_t{0});
    return n.output(0);
  }

  std::string build() {
    const BertConfig& c = ck_.config;
    const BertWeights& w = ck_.weights;
    const int64_t D = c.hidden_size;

    const std::string word = b_.floats("embeddings.word_embeddings.weight", w.word_embeddings.shape,
                                       w.word_embeddings.values);
    const std::string types = b_.floats("embeddings.token_type_embeddings.weight", w.token_type_embeddings.shape,
                                        w.token_type_embeddings.values);
    const std::string positions = b_.floats("embeddings.position_embeddings.weight", w.position_embeddings.shape,
                                            w.position_embeddings.values);
    // position_ids = arange(sequence_length): the first S rows of the table.
    onnx::NodeProto& length = b_.node("Shape", {"input_ids"}, "");
    attr(length, "start", int64_t{1});
    attr(length, "end", int64_t{2});
    const std::string position_rows =
        b_.op("Slice", {positions, b_.int64s({0}), length.output(0), b_.int64s({0})});
    // As BertEmbeddings adds them: inputs_embeds + token_type_embeddings, then + position_embeddings.
    const std::string embedded =
        b_.op("Add", {b_.op("Add", {b_.op("Gather", {word, "input_ids"}), b_.op("Gather", {types, "token_type_ids"})}),
                      position_rows});
    std::string x = layer_norm(embedded, w.embeddings_ln_g, w.embeddings_ln_b, "embeddings.LayerNorm",
                               traced(kEmbeddingsOutput));

    // The extended mask of get_extended_attention_mask: (1 - mask) · finfo(dtype).min, [B, 1, 1, S].
    onnx::NodeProto& mask_cast = b_.node("Cast", {"attention_mask"}, "");
    attr(mask_cast, "to", int64_t{b_.float_type()});
    const float lowest = options_.variant == Variant::fp16 ? -65504.0f : std::numeric_limits<float>::lowest();
    const std::string mask = b_.op(
        "Unsqueeze", {b_.op("Mul", {b_.op("Sub", {b_.scalar(1.0f), mask_cast.output(0)}), b_.scalar(lowest)}),
                      b_.int64s({1, 2})});

    for (int l = 0; l < c.num_hidden_layers; ++l) {
      const LayerWeights& L = w.layers[size_t(l)];
      const std::string hf = fmt::format("encoder.layer.{}.", l);
      const std::string q = per_head(linear(x, L.query_w, L.query_b, hf + "attention.self.query"),
                                     traced(l, LT::query));
      const std::string k = per_head(linear(x, L.key_w, L.key_b, hf + "attention.self.key"),
                                     traced(l, LT::key));
      const std::string v = per_head(linear(x, L.value_w, L.value_b, hf + "attention.self.value"),
                                     traced(l, LT::value));
      onnx::NodeProto& kt = b_.node("Transpose", {k}, "");
      attr(kt, "perm", std::vector<int64_t>{0, 1, 3, 2});
      const std::string scores =
          b_.op("Div", {b_.op("MatMul", {q, kt.output(0)}), b_.scalar(std::sqrt(float(c.head_dim())))},
                traced(l, LT::scores));
      onnx::NodeProto& softmax = b_.node("Softmax", {b_.op("Add", {scores, mask})}, traced(l, LT::probs));
      attr(softmax, "axis", int64_t{-1});
      const std::string probs = softmax.output(0);
      onnx::NodeProto& merged = b_.node("Transpose", {b_.op("MatMul", {probs, v})}, "");
      attr(merged, "perm", std::vector<int64_t>{0, 2, 1, 3});
      const std::string context = b_.op("Reshape", {merged.output(0), b_.int64s({0, 0, D})},
                                        traced(l, LT::context));
      const std::string dense = linear(context, L.attention_out_w, L.attention_out_b, hf + "attention.output.dense");
      const std::string attention = layer_norm(b_.op("Add", {dense, x}, traced(l, LT::attention_pre_norm)),
                                               L.attention_ln_g, L.attention_ln_b,
                                               hf + "attention.output.LayerNorm", traced(l, LT::attention_output));
      if (options_.trace) lenses(l, hf, L, v, probs);
      const std::string inter = activation(linear(attention, L.intermediate_w, L.intermediate_b, hf + "intermediate.dense"),
                                           traced(l, LT::intermediate));
      const std::string out = linear(inter, L.output_w, L.output_b, hf + "output.dense");
      x = layer_norm(b_.op("Add", {out, attention}), L.output_ln_g, L.output_ln_b, hf + "output.LayerNorm",
                     traced(l, LT::output));
    }
    return b_.op("Identity", {x}, "last_hidden_state");
  }

  const std::vector<std::string>& traced_names() const { return traced_; }

 private:
  // Kobayashi et al. 2020: ‖v‖ and ‖f(x)‖ with f(x) = v · W_O[h] (b_O excluded), and α weighted by them.
  // W_O[h] is rows h·Dh … (h+1)·Dh of W_Oᵀ, unquantized in every variant: the lens reads the weights,
  // it is not a layer of the model.
  void lenses(int l, const std::string& hf, const LayerWeights& L, const std::string& v,
              const std::string& probs) {
    const int64_t H = ck_.config.num_attention_heads, Dh = ck_.config.head_dim(), D = ck_.config.hidden_size;
    const std::string value_norm = reduce_l2_last(v, traced(l, LT::value_norm));
    std::string wo_t = hf + "attention.output.dense.weight_t";
    if (options_.variant == Variant::int8) wo_t = b_.fp32(hf + "attention.output.dense.weight_t_lens",
                                                           {D, D}, transposed(L.attention_out_w));
    const std::string fx = b_.op("MatMul", {v, b_.op("Reshape", {wo_t, b_.int64s({H, Dh, D})})});  // [B, H, S, D]
    const std::string transformed_norm = reduce_l2_last(fx, traced(l, LT::transformed_norm));
    b_.op("Mul", {probs, b_.op("Unsqueeze", {value_norm, b_.int64s({2})})}, traced(l, LT::lens_value_norm));
    b_.op("Mul", {probs, b_.op("Unsqueeze", {transformed_norm, b_.int64s({2})})},
          traced(l, LT::lens_transformed_norm));
    onnx::NodeProto& summed = b_.node("Einsum", {probs, fx}, "");
    attr(summed, "equation", std::string("bhij,bhjd->bijd"));
    reduce_l2_last(summed.output(0), traced(l, LT::lens_summed_transformed_norm));
  }

  Builder b_;
  const Checkpoint& ck_;
  const ExportOptions& options_;
  std::vector<std::string> traced_;
};

void value_info(onnx::ValueInfoProto& v, const std::string& name, int type, const std::vector<std::string>& params,
                const std::vector<int64_t>& values) {
  v.set_name(name);
  onnx::TypeProto_Tensor& t = *v.mutable_type()->mutable_tensor_type();
  t.set_elem_type(type);
  for (size_t i = 0; i < params.size(); ++i) {
    onnx::TensorShapeProto_Dimension& d = *t.mutable_shape()->add_dim();
    if (!params[i].empty()) d.set_dim_param(params[i]);
    else d.set_dim_value(values[i]);
  }
}

}  // namespace

ExportSummary export_onnx(const Checkpoint& ck, const ExportOptions& options, const std::filesystem::path& out) {
  onnx::ModelProto model;
  model.set_ir_version(onnx::IR_VERSION);
  model.set_producer_name("lenscheck");
  model.set_producer_version(fmt::format("{} ({})", build_version(), variant_name(options.variant)));
  model.set_doc_string(fmt::format("BertModel of {} ({} SHA-256 {}), {}{}", ck.dir.string(),
                                   ck.weights_file.filename().string(), ck.model_sha256, variant_name(options.variant),
                                   options.trace ? ", every lenscheck trace tensor as an output" : ""));
  onnx::OperatorSetIdProto& opset = *model.add_opset_import();
  opset.set_domain("");
  opset.set_version(kOpset);
  onnx::GraphProto& graph = *model.mutable_graph();
  graph.set_name("BertModel");

  BertGraph bert(graph, ck, options);
  bert.build();
  const int float_type = options.variant == Variant::fp16 ? TensorProto::FLOAT16 : TensorProto::FLOAT;
  for (const char* input : {"input_ids", "attention_mask", "token_type_ids"})
    value_info(*graph.add_input(), input, TensorProto::INT64, {"batch_size", "sequence_length"}, {0, 0});
  value_info(*graph.add_output(), "last_hidden_state", float_type, {"batch_size", "sequence_length", ""},
             {0, 0, ck.config.hidden_size});
  if (options.trace) {
    // Every tensor of the schema, in its order, with [batch_size] in front; the builder must have made each
    // but the residual lens's, derived from the trace after the run (onnx/candidate.cpp).
    const std::vector<std::string>& made = bert.traced_names();
    for (const TensorSpec& spec : trace_schema(ck.config, 1)) {
      if (is_residual_lens(spec.name)) continue;
      if (std::find(made.begin(), made.end(), spec.name) == made.end())
        throw std::logic_error("the ONNX graph lacks trace tensor " + spec.name);
      std::vector<std::string> params = {"batch_size"};
      std::vector<int64_t> values = {0};
      for (size_t i = 0; i < spec.axes.size(); ++i) {
        const bool token = spec.axes[i] == Axis::token || spec.axes[i] == Axis::query || spec.axes[i] == Axis::key;
        params.push_back(token ? "sequence_length" : "");
        values.push_back(spec.shape[i]);
      }
      value_info(*graph.add_output(), spec.name, float_type, params, values);
    }
    if (made.size() != size_t(graph.output_size() - 1)) throw std::logic_error("the ONNX graph traces extra tensors");
  }

  try {
    onnx::checker::check_model(model);
  } catch (const std::exception& e) {
    throw std::logic_error(std::string("the exported graph fails onnx::checker: ") + e.what());
  }
  std::ofstream file(out, std::ios::binary | std::ios::trunc);
  if (!file || !model.SerializeToOstream(&file) || !file.flush())
    throw InputError(out, "cannot write the ONNX model");
  return {size_t(graph.node_size()), size_t(graph.initializer_size()), size_t(graph.output_size()),
          static_cast<uint64_t>(model.ByteSizeLong())};
}

}  // namespace lenscheck::onnx_export
