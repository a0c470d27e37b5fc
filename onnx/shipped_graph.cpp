#include "onnx/shipped_graph.h"

#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <optional>
#include <set>

#include "model/error.h"
#include "model/trace.h"

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

// The graph as an index: who makes each value, who reads it, which values are initializers.
class GraphIndex {
 public:
  explicit GraphIndex(const onnx::GraphProto& g) : g_(g) {
    for (int i = 0; i < g.node_size(); ++i)
      for (const std::string& out : g.node(i).output()) producer_[out] = i;
    for (const onnx::TensorProto& t : g.initializer()) constants_.insert(t.name());
  }
  const onnx::NodeProto* producer(const std::string& value) const {
    const auto it = producer_.find(value);
    return it == producer_.end() ? nullptr : &g_.node(it->second);
  }
  const onnx::NodeProto* made_by(const std::string& value, const std::string& op) const {
    const onnx::NodeProto* n = producer(value);
    return n && n->op_type() == op ? n : nullptr;
  }
  std::vector<const onnx::NodeProto*> readers(const std::string& value, const std::string& op) const {
    std::vector<const onnx::NodeProto*> r;
    for (const onnx::NodeProto& n : g_.node())
      if (n.op_type() == op && std::find(n.input().begin(), n.input().end(), value) != n.input().end()) r.push_back(&n);
    return r;
  }
  std::vector<const onnx::NodeProto*> nodes(const std::string& op) const {
    std::vector<const onnx::NodeProto*> r;
    for (const onnx::NodeProto& n : g_.node())
      if (n.op_type() == op) r.push_back(&n);
    return r;
  }
  bool constant(const std::string& value) const {
    const onnx::NodeProto* n = producer(value);
    return constants_.count(value) || (n && n->op_type() == "Constant");
  }

 private:
  const onnx::GraphProto& g_;
  std::map<std::string, int> producer_;
  std::set<std::string> constants_;
};

int64_t perm_attribute(const onnx::NodeProto& n, size_t at) {
  for (const onnx::AttributeProto& a : n.attribute())
    if (a.name() == "perm" && a.ints_size() > int(at)) return a.ints(int(at));
  return -1;
}

// One layer's attention, anchored at its Softmax: what of it the pattern shows.
std::map<LT, std::string> attention_of(const GraphIndex& graph, const onnx::NodeProto& softmax) {
  std::map<LT, std::string> found;
  const std::string probs = softmax.output(0);
  found[LT::probs] = probs;
  for (const onnx::NodeProto* mm : graph.readers(probs, "MatMul")) {
    if (mm->input(0) != probs) continue;
    found[LT::value] = mm->input(1);
    for (const onnx::NodeProto* t : graph.readers(mm->output(0), "Transpose"))
      for (const onnx::NodeProto* r : graph.readers(t->output(0), "Reshape")) found[LT::context] = r->output(0);
  }
  // Softmax(scores + mask), or Softmax(scores) where the graph has no mask.
  std::string scores = softmax.input(0);
  if (const onnx::NodeProto* add = graph.made_by(scores, "Add"))
    for (const std::string& in : add->input())
      if (graph.made_by(in, "Div") || graph.made_by(in, "Mul")) scores = in;
  const onnx::NodeProto* scale = graph.made_by(scores, "Div");
  if (!scale) scale = graph.made_by(scores, "Mul");
  const onnx::NodeProto* qk = nullptr;
  for (int i = 0; scale && i < scale->input_size() && !qk; ++i) qk = graph.made_by(scale->input(i), "MatMul");
  if (!qk) return found;
  found[LT::scores] = scores;
  found[LT::query] = qk->input(0);
  if (const onnx::NodeProto* kt = graph.made_by(qk->input(1), "Transpose"))
    if (perm_attribute(*kt, 2) == 3 && perm_attribute(*kt, 3) == 2) found[LT::key] = kt->input(0);
  return found;
}

}  // namespace

FoundGraph prepare_shipped_graph(const std::filesystem::path& file, const BertConfig& config,
                                 const std::filesystem::path& copy) {
  onnx::ModelProto model = read_model(file);
  onnx::GraphProto& g = *model.mutable_graph();
  FoundGraph f;
  f.nodes = size_t(g.node_size());
  f.initializers = size_t(g.initializer_size());
  std::tie(f.implied, f.implied_by) = implied_arithmetic(g);

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
      if (shape.dim_size() == 3 && shape.dim(2).has_dim_value() && shape.dim(2).dim_value() != config.hidden_size)
        throw InputError(file, fmt::format("last_hidden_state has {} features; the checkpoint's hidden size is {}",
                                           shape.dim(2).dim_value(), config.hidden_size));
    }

  const int L = config.num_hidden_layers;
  const GraphIndex graph(g);
  std::map<std::string, std::string> found;  // trace name → graph value
  found[trace_name(L - 1, LT::output)] = "last_hidden_state";

  const std::vector<const onnx::NodeProto*> softmaxes = graph.nodes("Softmax");
  const std::vector<const onnx::NodeProto*> attention_ops = graph.nodes("Attention");
  std::string attention_why;
  if (!attention_ops.empty())
    attention_why = fmt::format("inside {}.Attention, which hides the scores, probabilities and context",
                                attention_ops.front()->domain());
  else if (softmaxes.size() != size_t(L))
    attention_why = fmt::format("{} Softmax nodes for {} layers: the attention is not recognised", softmaxes.size(), L);
  else
    for (int l = 0; l < L; ++l)
      for (const auto& [tensor, value] : attention_of(graph, *softmaxes[size_t(l)])) found[trace_name(l, tensor)] = value;

  const std::vector<const onnx::NodeProto*> norms = graph.nodes("LayerNormalization");
  const std::string norms_why =
      norms.size() == size_t(1 + 2 * L)
          ? ""
          : fmt::format("{} LayerNormalization nodes for the embeddings' and {} layers' two: not recognised",
                        norms.size(), L);
  if (norms_why.empty()) {
    found[kEmbeddingsOutput] = norms[0]->output(0);
    for (int l = 0; l < L; ++l) {
      found.emplace(trace_name(l, LT::attention_output), norms[size_t(1 + 2 * l)]->output(0));
      found.emplace(trace_name(l, LT::output), norms[size_t(2 + 2 * l)]->output(0));
    }
  }

  // Each found value becomes an output under its trace name; last_hidden_state stays what it is.
  for (const TensorSpec& spec : trace_schema(config, 1)) {
    const auto it = found.find(spec.name);
    if (it != found.end()) {
      f.outputs.emplace_back(it->second, spec.name);
      onnx::NodeProto& identity = *g.add_node();
      identity.set_op_type("Identity");
      identity.set_name("lenscheck_" + spec.name);
      identity.add_input(it->second);
      identity.add_output(spec.name);
      g.add_output()->set_name(spec.name);
      continue;
    }
    std::string why = "not recognised in the graph";
    if (spec.name.find(".attention.") != std::string::npos && spec.name.find(".attention.output") == std::string::npos)
      why = attention_why.empty() ? why : attention_why;
    else if (spec.name.find(".lens.") != std::string::npos || spec.name.find("_norm") != std::string::npos)
      why = "a lens tensor, which no shipped graph computes (not yet derived from its values and probabilities)";
    else if (!norms_why.empty() && (spec.name == kEmbeddingsOutput || spec.name.ends_with(".output")))
      why = norms_why;
    else if (spec.name.ends_with(".intermediate"))
      why = "the FFN's activation is not yet recognised";
    f.unreachable.push_back({spec.name, why});
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
    const onnxruntime::ScratchFolder scratch("the graph with its trace tensors as outputs");
    const std::filesystem::path copy = scratch.path() / file.filename();
    const FoundGraph found = prepare_shipped_graph(file, ck.config, copy);
    const std::string precision = arithmetic_name(found.implied);
    onnxruntime::Run run = onnxruntime::run(copy, inputs, ort, name, precision, ck.vocab);
    CandidateRun r;
    r.traces = std::move(run.traces);
    r.unreachable = found.unreachable;
    r.label = fmt::format("onnxruntime-node {} on {} (CPU, {} intra-op thread{}, graph optimization {})", run.version,
                          file.filename().string(), ort.intra_op_threads, ort.intra_op_threads == 1 ? "" : "s",
                          ort.graph_optimization);
    r.notes.push_back(fmt::format("candidate: {}: {} nodes, {} initializers; it declares {}: {}", file.string(),
                                  found.nodes, found.initializers, precision, implied_by));
    r.notes.push_back(fmt::format("found in the graph: {} of {} trace tensors, each made an output of a copy",
                                  found.outputs.size(), found.outputs.size() + found.unreachable.size()));
    return r;
  };
  return c;
}

}  // namespace lenscheck::onnx_export
