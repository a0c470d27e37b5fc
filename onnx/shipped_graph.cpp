#include "onnx/shipped_graph.h"

#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>

#include "model/error.h"
#include "model/trace.h"
#include "onnx/graph_patterns.h"
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

// What the graph computes in, as its tensors and ops say: int8 where a linear layer is quantized, fp16 where
// the initializers are float16, fp32 otherwise.
std::pair<Arithmetic, std::string> implied_arithmetic(const onnx::GraphProto& g) {
  for (const onnx::NodeProto& n : g.node())
    if (n.op_type() == "MatMulInteger" || n.op_type() == "DynamicQuantizeLinear")
      return {Arithmetic::int8, fmt::format("its linear layers are quantized ({} nodes)", n.op_type())};
  for (const onnx::TensorProto& t : g.initializer())
    if (t.data_type() == onnx::TensorProto::FLOAT16) return {Arithmetic::fp16_ort_cpu, "its initializers are float16"};
  return {Arithmetic::fp32, "its initializers are float32 and no layer is quantized"};
}

// An initializer's values as floats: float32, float16, or int8 times its scale per output channel (the
// last axis).
std::vector<double> values_of(const onnx::TensorProto& t, const onnx::TensorProto* scale) {
  const std::string& raw = t.raw_data();
  std::vector<double> v;
  if (t.data_type() == onnx::TensorProto::FLOAT) {
    if (raw.empty()) v.assign(t.float_data().begin(), t.float_data().end());
    for (size_t i = 0; i + 4 <= raw.size(); i += 4) {
      float f;
      std::memcpy(&f, raw.data() + i, 4);
      v.push_back(f);
    }
  } else if (t.data_type() == onnx::TensorProto::FLOAT16) {
    for (size_t i = 0; i + 2 <= raw.size(); i += 2) {
      _Float16 h;
      std::memcpy(&h, raw.data() + i, 2);
      v.push_back(static_cast<float>(h));
    }
  } else if (t.data_type() == onnx::TensorProto::INT8 && scale) {
    const std::vector<double> scales = values_of(*scale, nullptr);
    for (size_t i = 0; i < raw.size() && !scales.empty(); ++i)
      v.push_back(double(static_cast<int8_t>(raw[i])) * scales[i % scales.size()]);
  }
  return v;
}

// One parameter of the checkpoint against the graph's: equal in fp32, equal once rounded to the
// nearest float16, or within half a quantization step of its channel (quantize_dynamic rounds each weight
// to the nearest multiple of its channel's scale). `transposed`: the graph holds W[in, out] of the
// checkpoint's W[out, in]. Returns the problem, or nothing.
std::optional<std::string> differs(const std::string& name, const Param& p, const onnx::TensorProto& t,
                                   const onnx::TensorProto* scale, bool transposed) {
  const std::vector<double> g = values_of(t, scale);
  if (g.size() != p.values.size())
    return fmt::format("{} has {} values in the graph, {} in the checkpoint", name, g.size(), p.values.size());
  const size_t out = p.shape.size() == 2 ? size_t(p.shape[0]) : 1, in = p.values.size() / out;
  const std::vector<double> scales = scale ? values_of(*scale, nullptr) : std::vector<double>{};
  if (scale && scales.size() != out)
    return fmt::format("{} has {} scales in the graph for {} output channels", name, scales.size(), out);
  double worst = 0;
  size_t at = 0;
  bool wrong = false;
  for (size_t o = 0; o < out; ++o)
    for (size_t i = 0; i < in; ++i) {
      const double want = p.values[o * in + i], got = g[transposed ? i * out + o : o * in + i];
      const double expected = t.data_type() == onnx::TensorProto::FLOAT16 ? double(static_cast<_Float16>(float(want)))
                                                                           : want;
      // int8: half a step of the channel, plus the fp32 rounding of w / scale before it is rounded to an
      // integer (2^-24 of |w / scale| steps, doubled).
      const double slack = scale ? 0.5 * scales[o] + std::abs(want) * 0x1p-23 : 0.0;
      const double d = std::abs(got - expected);
      if (!(d <= slack)) wrong = true;  // NaN never matches
      if (!std::isnan(worst) && !(d <= worst)) {  // the first NaN is the worst
        worst = d;
        at = o * in + i;
      }
    }
  if (!wrong) return std::nullopt;
  return fmt::format("{} differs from the checkpoint's: max |Δ| {:.3g} (at {})", name, worst,
                     p.shape.size() == 2 ? fmt::format("[{}, {}]", at / in, at % in) : fmt::format("[{}]", at));
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

// One layer's attention, anchored at its Softmax: what of it the pattern shows. `values`: trace tensor →
// graph value; `split`: query, key, value → the [B, T, H, Dh] Reshape of its linear layer's output, where the
// graph holds the key only transposed for the scores' product (ONNX Runtime folds its two Transposes).
struct AttentionFound {
  std::map<LT, std::string> values, split;
};

AttentionFound attention_of(const GraphIndex& graph, const onnx::NodeProto& softmax) {
  AttentionFound found;
  const std::string probs = softmax.output(0);
  found.values[LT::probs] = probs;
  for (const onnx::NodeProto* mm : graph.readers(probs, "MatMul")) {
    if (mm->input(0) != probs) continue;
    found.values[LT::value] = mm->input(1);
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
  found.values[LT::query] = qk->input(0);
  if (key_transposed) {
    found.values[LT::key] = qk->input(1);
  } else if (const onnx::NodeProto* kt = graph.made_by(qk->input(1), "Transpose")) {
    if (perm_attribute(*kt, 1) == 1 && perm_attribute(*kt, 2) == 3 && perm_attribute(*kt, 3) == 2)
      found.values[LT::key] = kt->input(0);
    else if (perm_attribute(*kt, 1) == 2 && perm_attribute(*kt, 2) == 3 && perm_attribute(*kt, 3) == 1)
      if (const onnx::NodeProto* r = graph.made_by(kt->input(0), "Reshape")) found.split[LT::key] = r->output(0);
  }
  for (LT t : {LT::query, LT::key, LT::value})
    if (found.values.count(t))
      if (const onnx::NodeProto* r = split_behind(graph, found.values[t])) found.split[t] = r->output(0);
  return found;
}

// What the patterns found: trace name → graph value, and for query, key and value the Reshape that splits
// their linear layer's output into heads.
struct Found {
  std::map<std::string, std::string> values, split;
};

// Every parameter the graph's patterns locate, against the checkpoint's; where the FFN's second linear
// layer is found, its input is the activation's output: the layer's intermediate.
void check_weights(const GraphIndex& graph, const BertConfig& config, const BertWeights& w,
                   const std::vector<Norm>& norms, Found& found, FoundGraph& f) {
  auto check = [&](const std::string& name, const Param& p, const onnx::TensorProto* t,
                   const onnx::TensorProto* scale, bool transposed) {
    if (!t) {
      f.weights_not_found.push_back(name);
      return;
    }
    ++f.weights_checked;
    if (const std::optional<std::string> problem = differs(name, p, *t, scale, transposed))
      f.weight_problems.push_back(*problem);
  };
  auto check_linear = [&](const std::string& prefix, const std::optional<Linear>& lin, const Param& weight,
                          const Param& bias) {
    check(prefix + ".weight", weight, lin ? lin->weight : nullptr, lin ? lin->scale : nullptr, lin && lin->in_out);
    check(prefix + ".bias", bias, lin ? lin->bias : nullptr, nullptr, false);
  };
  // The embedding tables, by the shapes their Gathers and Slices read.
  std::map<int64_t, const onnx::TensorProto*> tables;  // rows → table
  for (const char* op : {"Gather", "Slice"})
    for (const onnx::NodeProto* n : graph.nodes(op))
      if (const onnx::TensorProto* t = graph.initializer(n->input(0)))
        if (t->dims_size() == 2 && t->dims(1) == config.hidden_size) tables[t->dims(0)] = t;
  auto table = [&](int64_t rows) { return tables.count(rows) ? tables[rows] : nullptr; };
  check("embeddings.word_embeddings.weight", w.word_embeddings, table(config.vocab_size), nullptr, false);
  check("embeddings.position_embeddings.weight", w.position_embeddings, table(config.max_position_embeddings), nullptr,
        false);
  check("embeddings.token_type_embeddings.weight", w.token_type_embeddings, table(config.type_vocab_size), nullptr,
        false);
  auto norm = [&](const std::string& prefix, size_t at, const Param& gain, const Param& bias) {
    check(prefix + ".weight", gain, at < norms.size() ? norms[at].gain : nullptr, nullptr, false);
    check(prefix + ".bias", bias, at < norms.size() ? norms[at].bias : nullptr, nullptr, false);
  };
  norm("embeddings.LayerNorm", 0, w.embeddings_ln_g, w.embeddings_ln_b);
  // The residual's Add before a LayerNorm: which of its two inputs a linear layer makes.
  auto linear_into = [&](size_t at) -> std::optional<Linear> {
    if (at >= norms.size()) return std::nullopt;
    const onnx::NodeProto* add = graph.made_by(norms[at].input, "Add");
    for (int i = 0; add && i < add->input_size(); ++i)
      if (std::optional<Linear> lin = linear_behind(graph, add->input(i))) return lin;
    return std::nullopt;
  };
  for (int l = 0; l < config.num_hidden_layers; ++l) {
    const LayerWeights& L = w.layers[size_t(l)];
    const std::string hf = fmt::format("encoder.layer.{}.", l);
    // Q, K, V: the linear layer behind the Reshape that splits its output into heads.
    auto projection = [&](LT tensor) -> std::optional<Linear> {
      const auto it = found.split.find(trace_name(l, tensor));
      const onnx::NodeProto* r = it == found.split.end() ? nullptr : graph.made_by(it->second, "Reshape");
      return r ? linear_behind(graph, r->input(0)) : std::nullopt;
    };
    check_linear(hf + "attention.self.query", projection(LT::query), L.query_w, L.query_b);
    check_linear(hf + "attention.self.key", projection(LT::key), L.key_w, L.key_b);
    check_linear(hf + "attention.self.value", projection(LT::value), L.value_w, L.value_b);
    check_linear(hf + "attention.output.dense", linear_into(size_t(1 + 2 * l)), L.attention_out_w, L.attention_out_b);
    norm(hf + "attention.output.LayerNorm", size_t(1 + 2 * l), L.attention_ln_g, L.attention_ln_b);
    const std::optional<Linear> second = linear_into(size_t(2 + 2 * l));
    const std::optional<Linear> first =
        second ? linear_before(graph, second->input, config.hidden_size, config.intermediate_size) : std::nullopt;
    if (second && first) found.values.emplace(trace_name(l, LT::intermediate), second->input);
    check_linear(hf + "intermediate.dense", first, L.intermediate_w, L.intermediate_b);
    check_linear(hf + "output.dense", second, L.output_w, L.output_b);
    norm(hf + "output.LayerNorm", size_t(2 + 2 * l), L.output_ln_g, L.output_ln_b);
  }
}

// Why a trace tensor was not found, from what the search for its pattern said.
std::string why_not_found(const std::string& name, const std::string& attention_why, const std::string& norms_why) {
  const bool attention = name.find(".attention.") != std::string::npos && !name.ends_with(".attention.output");
  if (attention && !attention_why.empty()) return attention_why;
  if (is_residual_lens(name))
    return "a residual-lens tensor, derived from the candidate's attention.value, attention.probs, attention.pre_norm "
           "and each layer's input, which are not all found";
  if (is_lens_tensor(name))
    return "a lens tensor, derived from the candidate's attention.value and attention.probs, which are not found";
  if (!norms_why.empty() && (name == kEmbeddingsOutput || name.ends_with(".output"))) return norms_why;
  if (name.ends_with(".intermediate")) return "the FFN's two linear layers, between which it lies, are not recognised";
  return "not recognised in the graph";
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
                                 const std::filesystem::path& copy) {
  const BertConfig& config = ck.config;
  onnx::ModelProto model = read_model(file);
  onnx::GraphProto& g = *model.mutable_graph();
  FoundGraph f;
  f.nodes = size_t(g.node_size());
  f.initializers = size_t(g.initializer_size());
  std::tie(f.implied, f.implied_by) = implied_arithmetic(g);

  check_interface(g, file, config.hidden_size);

  const int L = config.num_hidden_layers;
  const GraphIndex graph(g);
  Found found;
  found.values[trace_name(L - 1, LT::output)] = "last_hidden_state";

  const std::vector<const onnx::NodeProto*> softmaxes = graph.nodes("Softmax");
  const std::vector<const onnx::NodeProto*> attention_ops = graph.nodes("Attention");
  std::string attention_why;
  if (!attention_ops.empty())
    attention_why = fmt::format("inside {}.Attention, which hides the scores, probabilities and context",
                                attention_ops.front()->domain());
  else if (softmaxes.size() != size_t(L))
    attention_why = fmt::format("{} Softmax nodes for {} layers: the attention is not recognised", softmaxes.size(), L);
  else
    for (int l = 0; l < L; ++l) {
      const AttentionFound a = attention_of(graph, *softmaxes[size_t(l)]);
      for (const auto& [tensor, value] : a.values) found.values[trace_name(l, tensor)] = value;
      for (const auto& [tensor, split] : a.split) found.split[trace_name(l, tensor)] = split;
    }

  const std::vector<Norm> norms = norms_of(graph, g);
  if (attention_ops.empty() && softmaxes.size() != size_t(L) && norms.size() == 1 + 2 * softmaxes.size())
    throw InputError(file, fmt::format("the graph has {} layers (Softmax nodes, with the LayerNorms they imply); the "
                                       "checkpoint has {}",
                                       softmaxes.size(), L));
  const std::string norms_why =
      norms.size() == size_t(1 + 2 * L)
          ? ""
          : fmt::format("{} LayerNorms (LayerNormalization nodes or their decomposition) for the embeddings' and {} "
                        "layers' two: not recognised",
                        norms.size(), L);
  if (norms_why.empty()) {
    found.values[kEmbeddingsOutput] = norms[0].output;
    for (int l = 0; l < L; ++l) {
      found.values.emplace(trace_name(l, LT::attention_pre_norm), norms[size_t(1 + 2 * l)].input);
      found.values.emplace(trace_name(l, LT::attention_output), norms[size_t(1 + 2 * l)].output);
      found.values.emplace(trace_name(l, LT::output), norms[size_t(2 + 2 * l)].output);
    }
  }

  check_weights(graph, config, ck.weights, norms_why.empty() ? norms : std::vector<Norm>{}, found, f);

  // The lens tensors are derived from every layer's value and probs, where the graph gives them; the
  // residual lens also from its context and input.
  auto all_found = [&](std::initializer_list<LT> tensors) {
    for (int l = 0; l < L; ++l)
      for (LT t : tensors)
        if (!found.values.count(trace_name(l, t))) return false;
    return true;
  };
  f.lenses_derived = all_found({LT::value, LT::probs});
  const bool residual_lens_derived = f.lenses_derived && all_found({LT::attention_pre_norm, LT::output}) &&
                                     found.values.count(kEmbeddingsOutput);

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
    } else if (!(is_residual_lens(spec.name) ? residual_lens_derived
                                                    : f.lenses_derived && is_lens_tensor(spec.name))) {
      f.unreachable.push_back({spec.name, why_not_found(spec.name, attention_why, norms_why)});
    }
  }
  std::ofstream out(copy, std::ios::binary | std::ios::trunc);
  if (!out || !model.SerializeToOstream(&out) || !out.flush()) throw InputError(copy, "cannot write the ONNX model");
  return f;
}

Candidate shipped_candidate(const std::filesystem::path& file, const onnxruntime::Options& ort) {
  Candidate c;
  c.name = "onnx:" + file.string();
  std::string implied_by;
  std::tie(c.arithmetic, implied_by) = implied_arithmetic(read_model(file).graph());
  c.run = [file, ort, name = c.name, implied_by](const Checkpoint& ck, const std::vector<Encoding>& inputs,
                                                 const runtime::Stages* stages, unsigned) {
    if (stages) throw std::logic_error("ONNX Runtime's stages cannot be replaced");
    const ScratchFolder scratch("the graph with its trace tensors as outputs");
    const std::filesystem::path copy = scratch.path() / file.filename();
    const FoundGraph found = prepare_shipped_graph(file, ck, copy);
    const std::string precision = arithmetic_name(found.implied);
    CandidateRun r;
    r.label = fmt::format("onnxruntime on {} (CPU, {} intra-op thread{}, graph optimization {})",
                          file.filename().string(), ort.intra_op_threads, ort.intra_op_threads == 1 ? "" : "s",
                          ort.graph_optimization);
    r.notes.push_back(fmt::format("candidate: {}: {} nodes, {} initializers; it declares {}: {}", file.string(),
                                  found.nodes, found.initializers, precision, implied_by));
    r.notes.push_back(fmt::format("weights: {} of the checkpoint's parameters located in the graph, {} of them equal "
                                  "to the checkpoint's (fp32 exactly, float16 rounded to nearest, int8 within half "
                                  "its channel's step){}",
                                  found.weights_checked, found.weights_checked - found.weight_problems.size(),
                                  found.weights_not_found.empty()
                                      ? ""
                                      : fmt::format("; not located: {}", fmt::join(found.weights_not_found, ", "))));
    r.weights_differ = found.weight_problems;
    if (!r.weights_differ.empty()) return r;  // another checkpoint's graph: no sentence runs
    onnxruntime::Run run = onnxruntime::run(copy, inputs, ort, name, precision, ck.vocab);
    r.traces = std::move(run.traces);
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
      for (Trace& trace : r.traces) lens_code.derive_lenses(trace);
      r.notes.push_back("derived: the lens tensors (value_norm, transformed_norm, lens.*, mixing_ratio.*), which the "
                        "graph does not compute, by lenscheck's runtime lens code in fp32 from the candidate's own "
                        "attention.value and attention.probs (the residual lens also its attention.pre_norm and each "
                        "layer's input) and the checkpoint's W_O and attention LayerNorm gain");
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
