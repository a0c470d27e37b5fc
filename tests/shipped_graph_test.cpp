// `--candidate onnx:PATH`: a graph as its user ships it (lenscheck's own export without --trace, at fp32,
// fp16 and int8; PyTorch's torch.onnx export at opset 14; the same after ONNX Runtime's optimizer; the
// LayerNorms and weights in other exporters' forms), its weights checked against the checkpoint's, its
// trace tensors found by their patterns and judged, the lenses derived from its values and probabilities;
// a copy with one weight moved by one per mille and another checkpoint's graph fail by the weights, and bad
// graphs are bad input naming the file. Third parties' forms: weight-only int8 (Cast · scale, DequantizeLinear)
// judged as w8a32, a wrong op and a moved int8 value in them caught, linear layers as Gemm; ONNX Runtime's
// transformer-optimized graphs, fp32 and fp16, a wrong op and a wrong packed weight in them caught.
#include <gtest/gtest.h>
#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include <cstring>
#include <functional>
#include <initializer_list>
#include <fstream>
#include <limits>
#include <set>
#include <string>
#include <tuple>

#include "audit/study_plan.h"
#include "gate/verify.h"
#include "gate/verify_report.h"
#include "model/checkpoint.h"
#include "model/error.h"
#include "model/quantize.h"
#include "model/trace.h"
#include "onnx/export.h"
#include "onnx/shipped_graph.h"
#include "tests/test_support.h"

using namespace lenscheck;
namespace fs = std::filesystem;

namespace {

// `run` must throw an InputError whose message holds every one of `fragments` (the file, the problem).
template <class F>
void expect_input_error(F run, std::initializer_list<std::string> fragments) {
  try {
    run();
    ADD_FAILURE() << "no InputError; expected one saying " << fmt::format("{}", fmt::join(fragments, ", "));
  } catch (const InputError& e) {
    for (const std::string& fragment : fragments)
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

const Checkpoint& trained_mini() {
  static const Checkpoint ck = load_checkpoint(test::fixture("trained-mini"));
  return ck;
}
const Tolerances& tolerances() {
  static const Tolerances t = load_tolerances(test::source_dir() / "fixtures/tolerances.yaml");
  return t;
}
const fs::path& two_sentences() {
  static const fs::path file = [] {
    const fs::path f = test::temp_dir("sentences") / "two.yaml";
    test::write_file(f, "sentences:\n  - id: nurse\n    text: The nurse handed the doctor the scissors.\n"
                        "  - id: short\n    text: Time heals.\n");
    return f;
  }();
  return file;
}

fs::path exported(onnx_export::Variant variant) {
  const fs::path file = test::temp_dir("graphs") / fmt::format("model-{}.onnx", onnx_export::variant_name(variant));
  if (!fs::exists(file)) onnx_export::export_onnx(trained_mini(), {.variant = variant, .trace = false}, file);
  return file;
}

onnx::ModelProto read(const fs::path& file) {
  onnx::ModelProto m;
  std::ifstream in(file, std::ios::binary);
  EXPECT_TRUE(m.ParseFromIstream(&in)) << file;
  return m;
}
void write(const onnx::ModelProto& m, const fs::path& file) {
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  ASSERT_TRUE(m.SerializeToOstream(&out)) << file;
}

// With the display verdict of the bundled study's instrument.
VerifyResult verified(const fs::path& graph, const onnxruntime::Options& ort = {}) {
  static const Instrument instrument =
      instrument_of(load_study_plan(test::source_dir() / "fixtures/studies/norm-weighted-attention.yaml"));
  return verify(trained_mini(), onnx_export::shipped_candidate(graph, ort), load_sentences(two_sentences()),
                two_sentences(), tolerances(), {.instrument = &instrument});
}

// torch.onnx's opset-14 graph with every float initializer a node reads reached through an Identity and a
// Cast to float, as exporters write shared and retyped weights.
fs::path through_identity_and_cast() {
  const fs::path file = test::temp_dir("graphs") / "torch-identity-cast.onnx";
  if (fs::exists(file)) return file;
  onnx::ModelProto m = read(test::fixture("onnx/trained-mini-torch.onnx"));
  onnx::GraphProto& g = *m.mutable_graph();
  std::set<std::string> initializers;
  for (const onnx::TensorProto& t : g.initializer())
    if (t.data_type() == onnx::TensorProto::FLOAT) initializers.insert(t.name());
  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
  for (onnx::NodeProto& n : *g.mutable_node()) {
    for (int i = 0; i < n.input_size(); ++i) {
      if (!initializers.count(n.input(i))) continue;
      const std::string copied = fmt::format("{}_{}_identity", n.name(), i);
      const std::string cast = fmt::format("{}_{}_cast", n.name(), i);
      onnx::NodeProto& id = *nodes.Add();
      id.set_op_type("Identity");
      id.add_input(n.input(i));
      id.add_output(copied);
      onnx::NodeProto& c = *nodes.Add();
      c.set_op_type("Cast");
      c.add_input(copied);
      c.add_output(cast);
      onnx::AttributeProto& to = *c.add_attribute();
      to.set_name("to");
      to.set_type(onnx::AttributeProto::INT);
      to.set_i(onnx::TensorProto::FLOAT);
      n.set_input(i, cast);
    }
    *nodes.Add() = n;
  }
  g.mutable_node()->Swap(&nodes);
  write(m, file);
  return file;
}

// Inserts a Mul by the initializer `factor` on the product entering each Add with an input named
// `…bias_suffix` (as ../shared/tools/graph_fault.py does): a node the graph patterns do not expect.
// Returns how many it inserted.
int insert_mul(onnx::GraphProto& g, const std::string& bias_suffix, const std::string& factor) {
  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
  int inserted = 0;
  for (onnx::NodeProto& n : *g.mutable_node()) {
    if (n.op_type() == "Add" && n.input_size() == 2 &&
        (n.input(0).ends_with(bias_suffix) || n.input(1).ends_with(bias_suffix))) {
      const int product = n.input(0).ends_with(bias_suffix) ? 1 : 0;
      onnx::NodeProto& mul = *nodes.Add();
      mul.set_op_type("Mul");
      mul.set_name(fmt::format("{}_{}", factor, inserted++));
      mul.add_input(n.input(product));
      mul.add_input(factor);
      mul.add_output(mul.name());
      n.set_input(product, mul.name());
    }
    *nodes.Add() = n;
  }
  g.mutable_node()->Swap(&nodes);
  return inserted;
}

// One graph as shipped, and the initializer a fault scales: the last layer's value weight (its int8 scale),
// or in torch.onnx's graphs, whose transposed weights have generated names, its bias.
struct Shipped {
  std::string name;
  std::function<fs::path()> graph;
  std::string value_initializer;
  onnxruntime::Options ort = {};
};
void PrintTo(const Shipped& s, std::ostream* os) { *os << s.name; }

onnxruntime::Options optimized_at(const std::string& level) {
  onnxruntime::Options o;
  o.graph_optimization = level;
  return o;
}

std::vector<Shipped> shipped_graphs() {
  using onnx_export::Variant;
  return {{"lenscheck_fp32", [] { return exported(Variant::fp32); }, "encoder.layer.3.attention.self.value.weight_t"},
          {"lenscheck_fp16", [] { return exported(Variant::fp16); }, "encoder.layer.3.attention.self.value.weight_t"},
          {"lenscheck_int8", [] { return exported(Variant::int8); }, "encoder.layer.3.attention.self.value.weight_scale"},
          {"torch_onnx_opset14", [] { return test::fixture("onnx/trained-mini-torch.onnx"); },
           "encoder.layer.3.attention.self.value.bias"},
          {"torch_onnx_ort_optimized", [] { return test::fixture("onnx/trained-mini-torch-ort.onnx"); },
           "encoder.layer.3.attention.self.value.bias"},
          // The other forms of issue #44 (scripts/make-onnx-fixtures.cmake); the unfolded graph keeps the
          // weights' names, behind their Transposes.
          {"torch_onnx_functional_opset14", [] { return test::fixture("onnx/trained-mini-torch-functional.onnx"); },
           "encoder.layer.3.attention.self.value.bias"},
          {"torch_onnx_by_hand_opset11", [] { return test::fixture("onnx/trained-mini-torch-manual.onnx"); },
           "encoder.layer.3.attention.self.value.bias"},
          {"torch_onnx_by_hand_reciprocal_opset17", [] { return test::fixture("onnx/trained-mini-torch-manual-mul.onnx"); },
           "encoder.layer.3.attention.self.value.bias"},
          {"tensorflow_onnx_folded_norm", [] { return test::fixture("onnx/trained-mini-torch-tf.onnx"); },
           "encoder.layer.3.attention.self.value.bias"},
          {"torch_onnx_unfolded_opset17", [] { return test::fixture("onnx/trained-mini-torch-no-fold.onnx"); },
           "encoder.layer.3.attention.self.value.weight"},
          {"torch_onnx_through_identity_and_cast", through_identity_and_cast, "encoder.layer.3.attention.self.value.bias"},
          // Third parties' forms (scripts/requantize-graph.py): weight-only int8 (w8a32) by Cast · scale and by
          // DequantizeLinear, which ONNX Runtime runs as written at optimization level basic only
          // (ShippedGraphWeightOnlyInt8 below), and the linear layers as Gemm.
          {"weight_only_int8_cast_scale", [] { return test::fixture("onnx/trained-mini-cast-scale.onnx"); },
           "encoder.layer.3.attention.self.value.bias"},
          {"weight_only_int8_dequantize_linear", [] { return test::fixture("onnx/trained-mini-dequantize-linear.onnx"); },
           "encoder.layer.3.attention.self.value.bias", optimized_at("basic")},
          {"linear_layers_as_gemm", [] { return test::fixture("onnx/trained-mini-gemm.onnx"); },
           "encoder.layer.3.attention.self.value.bias"}};
}

class ShippedGraph : public testing::TestWithParam<Shipped> {};

}  // namespace

// Every trace tensor is found, or derived (the lenses, from the graph's own values and probabilities), and
// judged on both sentences; the display verdict runs.
TEST_P(ShippedGraph, PassesWithEveryTensorFoundOrDerivedAndJudged) {
  const VerifyResult r = verified(GetParam().graph(), GetParam().ort);
  EXPECT_TRUE(r.pass());
  const int layers = trained_mini().config.num_hidden_layers;
  EXPECT_TRUE(r.weights_differ.empty());
  EXPECT_TRUE(r.unreachable.empty()) << r.unreachable.front().tensor << ": " << r.unreachable.front().why;
  EXPECT_TRUE(r.display.has_value());
  for (const TensorSpec& spec : trace_schema(trained_mini().config, 1)) {
    const std::string family = spec.name.starts_with("layer.") ? "layer.*" + spec.name.substr(spec.name.find('.', 6))
                                                               : spec.name;
    const auto judged = std::find_if(r.gate.families.begin(), r.gate.families.end(),
                                     [&](const TensorSummary& f) { return f.name == family; });
    ASSERT_NE(judged, r.gate.families.end()) << family;
    EXPECT_EQ(judged->compared, size_t(2 * (spec.name.starts_with("layer.") ? layers : 1))) << family;
  }
  const auto derived = std::find_if(r.notes.begin(), r.notes.end(), [](const std::string& n) { return n.starts_with("derived: "); });
  EXPECT_NE(derived, r.notes.end());
}

// Each fails by the weight check, naming the parameter, before any sentence runs: fp32 exactly, fp16 once
// rounded; in int8 the scale times 1.001 moves some weight past half a step of its channel.
TEST_P(ShippedGraph, FailsACopyWithOneOfTheLastLayersValueParametersScaledByOnePerMille) {
  onnx::ModelProto m = read(GetParam().graph());
  const std::string& name = GetParam().value_initializer;
  bool scaled = false;
  for (onnx::TensorProto& t : *m.mutable_graph()->mutable_initializer()) {
    if (t.name() != name) continue;
    std::string& raw = *t.mutable_raw_data();
    if (t.data_type() == onnx::TensorProto::FLOAT) {
      for (size_t i = 0; i < raw.size(); i += 4) {
        float v;
        std::memcpy(&v, raw.data() + i, 4);
        v *= 1.001f;
        std::memcpy(raw.data() + i, &v, 4);
      }
    } else {  // float16: one per mille is about two steps of its 10-bit significand; x · 1.001 rounded
      ASSERT_EQ(t.data_type(), onnx::TensorProto::FLOAT16);
      for (size_t i = 0; i < raw.size(); i += 2) {
        _Float16 h;
        std::memcpy(&h, raw.data() + i, 2);
        h = static_cast<_Float16>(static_cast<float>(h) * 1.001f);
        std::memcpy(raw.data() + i, &h, 2);
      }
    }
    scaled = true;
  }
  ASSERT_TRUE(scaled) << name;
  const fs::path copy = test::temp_dir("faulty") / "model.onnx";
  write(m, copy);
  const VerifyResult r = verified(copy, GetParam().ort);
  EXPECT_FALSE(r.pass());
  ASSERT_EQ(r.weights_differ.size(), 1u);
  EXPECT_TRUE(r.weights_differ[0].starts_with("encoder.layer.3.attention.self.value.")) << r.weights_differ[0];
  EXPECT_NE(r.weights_differ[0].find(" differs from the checkpoint's"), std::string::npos) << r.weights_differ[0];
  EXPECT_TRUE(r.sentences.empty());
}

// The display verdict's error spans both correct executions of an fp16 graph (gate/verify.h
// other_rounding): bert-mini's plain fp16 export, whose embeddings and LayerNorm outputs ONNX Runtime 1.30
// keeps in fp32, was one row beyond fp16-ort-cpu's error alone (the "list" sentence's tape@2, transformed_norm
// sink share 0.14 for 0.15: margin 3.8e-5, error 3.6e-5; with the other rounding 5.4e-5); it passes, and
// so does the copy with a ×1.0 Mul between each layer's value MatMul and its bias Add.
TEST(ShippedGraphDisplay, APlainFp16GraphPassesWithAndWithoutATimesOneNodeInEachLayer) {
  const Checkpoint ck = load_checkpoint(test::bert_mini());
  const fs::path dir = test::temp_dir("fp16"), plain = dir / "bert-mini-fp16.onnx";
  onnx_export::export_onnx(ck, {.variant = onnx_export::Variant::fp16, .trace = false}, plain);
  onnx::ModelProto m = read(plain);
  onnx::GraphProto& g = *m.mutable_graph();
  onnx::TensorProto& one = *g.add_initializer();
  one.set_name("times_one");
  one.set_data_type(onnx::TensorProto::FLOAT16);
  const _Float16 h = 1;
  one.set_raw_data(&h, sizeof h);
  ASSERT_EQ(insert_mul(g, "attention.self.value.bias", "times_one"), ck.config.num_hidden_layers);
  const fs::path times_one = dir / "bert-mini-fp16-times-one.onnx";
  write(m, times_one);
  static const Instrument instrument =
      instrument_of(load_study_plan(test::source_dir() / "fixtures/studies/norm-weighted-attention.yaml"));
  const fs::path sentences = test::source_dir() / "fixtures/sentences.yaml";
  for (const fs::path& graph : {plain, times_one}) {
    const VerifyResult r = verify(ck, onnx_export::shipped_candidate(graph, {}), load_sentences(sentences), sentences,
                                  tolerances(), {.instrument = &instrument});
    ASSERT_TRUE(r.display.has_value()) << graph;
    EXPECT_EQ(r.display->wrong(), 0u) << graph << ": " << r.display->headline("fp16-ort-cpu");
    EXPECT_TRUE(r.pass()) << graph;
  }
}

// The hand-written LayerNorm's graph of a module whose last output LayerNorm gain is times 1.001 before export.
TEST(ShippedGraphWeights, AHandWrittenLayerNormWithItsGainScaledByOnePerMilleFailsNamingIt) {
  const VerifyResult r = verified(test::fixture("onnx/trained-mini-torch-manual-fault.onnx"));
  EXPECT_FALSE(r.pass());
  EXPECT_TRUE(r.sentences.empty());
  ASSERT_EQ(r.weights_differ.size(), 1u);
  EXPECT_TRUE(r.weights_differ[0].starts_with("encoder.layer.3.output.LayerNorm.weight differs")) << r.weights_differ[0];
}

// No span unjudged (issue #44): an int8 graph whose layer 2 FFN output projection an extra node scales
// by 1.1 hides that FFN from the patterns (its weights not located, layer.2.intermediate not found). It
// passed when layer.2.output was judged globally only, int8's own error hiding 10 %; the local verdict
// judges it as the span from the attention block's output through the FFN and fails it there (4.9e5×
// on 14 sentences, k 16). The same graph with a ×1.0 node passes, the span listed (0.72×).
TEST(ShippedGraphSpan, AnInt8GraphWithAnExtraNodeInAnFfnFailsAtTheSpanThroughIt) {
  const fs::path dir = test::temp_dir("span");
  const std::string span = "span layer.2.attention.output → layer.2.output through layer.2.intermediate";
  for (const float factor : {1.1f, 1.0f}) {
    onnx::ModelProto m = read(exported(onnx_export::Variant::int8));
    onnx::TensorProto& t = *m.mutable_graph()->add_initializer();
    t.set_name("fault_scale");
    t.set_data_type(onnx::TensorProto::FLOAT);
    t.set_raw_data(&factor, sizeof factor);
    ASSERT_EQ(insert_mul(*m.mutable_graph(), "layer.2.output.dense.bias", "fault_scale"), 1);
    const fs::path graph = dir / fmt::format("times-{}.onnx", factor);
    write(m, graph);
    const VerifyResult r = verified(graph);
    EXPECT_TRUE(r.weights_differ.empty());
    ASSERT_EQ(r.unreachable.size(), 1u);
    EXPECT_EQ(r.unreachable[0].tensor, "layer.2.intermediate");
    ASSERT_FALSE(r.sentences.empty());
    for (const SentenceVerdict& v : r.sentences) {
      const auto output = std::find_if(v.gate.tensors.begin(), v.gate.tensors.end(),
                                       [](const TensorComparison& c) { return c.name == "layer.2.output"; });
      ASSERT_NE(output, v.gate.tensors.end());
      ASSERT_TRUE(output->local.has_value()) << v.sentence.id;
      EXPECT_EQ(local_scope(*output), span);
      const TensorComparison* blamed = v.gate.first_local_failure();
      if (factor == 1.0f) {
        EXPECT_EQ(blamed, nullptr) << v.sentence.id << ": " << blamed->name;
      } else {
        ASSERT_NE(blamed, nullptr) << v.sentence.id;
        EXPECT_EQ(local_scope(*blamed), span);
      }
    }
    EXPECT_EQ(r.pass(), factor == 1.0f);
    write_verify_markdown(r, dir / "verify.md");
    EXPECT_NE(test::read_file(dir / "verify.md").find("| `" + span + "` |"), std::string::npos);
  }
}

TEST(ShippedGraphWeights, ANanInAWeightIsADifferenceNotAMatch) {
  onnx::ModelProto m = read(exported(onnx_export::Variant::fp32));
  for (onnx::TensorProto& t : *m.mutable_graph()->mutable_initializer())
    if (t.name() == "encoder.layer.1.attention.self.query.weight_t") {
      const float nan = std::numeric_limits<float>::quiet_NaN();
      std::memcpy(t.mutable_raw_data()->data() + 4 * 17, &nan, 4);
    }
  const fs::path copy = test::temp_dir("nan") / "model.onnx";
  write(m, copy);
  const VerifyResult r = verified(copy);
  EXPECT_FALSE(r.pass());
  ASSERT_EQ(r.weights_differ.size(), 1u);
  EXPECT_TRUE(r.weights_differ[0].starts_with("encoder.layer.1.attention.self.query.weight differs")) << r.weights_differ[0];
  EXPECT_NE(r.weights_differ[0].find("nan"), std::string::npos) << r.weights_differ[0];
}

TEST(ShippedGraphWeights, AnotherCheckpointsGraphFailsNamingTheFirstParameterBeforeAnySentenceRuns) {
  const fs::path file = test::temp_dir("other") / "bert-mini.onnx";
  onnx_export::export_onnx(load_checkpoint(test::bert_mini()), {.variant = onnx_export::Variant::fp32, .trace = false},
                           file);
  const VerifyResult r = verified(file);
  EXPECT_FALSE(r.pass());
  EXPECT_TRUE(r.sentences.empty());
  ASSERT_FALSE(r.weights_differ.empty());
  EXPECT_TRUE(r.weights_differ[0].starts_with("embeddings.word_embeddings.weight differs from the checkpoint's: max |Δ|"))
      << r.weights_differ[0];
  // CI reads the JUnit file: one failing case, not an empty suite.
  write_verify_junit(r, file.parent_path() / "verify.xml");
  const std::string junit = test::read_file(file.parent_path() / "verify.xml");
  EXPECT_NE(junit.find("tests=\"1\" failures=\"1\""), std::string::npos) << junit;
  EXPECT_NE(junit.find("embeddings.word_embeddings.weight differs"), std::string::npos) << junit;
}

// The note of `r` that starts with `prefix`, or "".
std::string note(const VerifyResult& r, const std::string& prefix) {
  const auto it = std::find_if(r.notes.begin(), r.notes.end(), [&](const std::string& n) { return n.starts_with(prefix); });
  return it == r.notes.end() ? "" : *it;
}

// Every sentence of `r` ran and fails locally first at `tensor`.
void expect_every_sentence_blames(const VerifyResult& r, const std::string& tensor) {
  ASSERT_FALSE(r.sentences.empty());
  for (const SentenceVerdict& v : r.sentences) {
    const TensorComparison* blamed = v.gate.first_local_failure();
    ASSERT_NE(blamed, nullptr) << v.sentence.id;
    EXPECT_EQ(blamed->name, tensor) << v.sentence.id;
  }
}

// Weight-only int8 (issue #45): the scheme read from the graph and stated, every int8 weight within half its
// channel's step of the checkpoint's, and the benchmark computing with the graph's own integers.
TEST(ShippedGraphWeightOnlyInt8, TheSchemeIsReadFromTheGraphAndEveryInt8WeightIsWithinItsStepOfTheCheckpoints) {
  const VerifyResult r = verified(test::fixture("onnx/trained-mini-cast-scale.onnx"));
  EXPECT_TRUE(r.pass());
  EXPECT_EQ(r.gate.arithmetic, Arithmetic::w8a32);
  const std::string candidate = note(r, "candidate: ");
  EXPECT_NE(candidate.find("it declares w8a32: its weights are 26 int8 constants dequantized by Cast · scale: "
                           "symmetric, per channel, values in [-127, 127], every op fp32"),
            std::string::npos)
      << candidate;
  // 4 layers' 6 linear weights and the word and position tables.
  const std::string weights = note(r, "weights: ");
  EXPECT_NE(weights.find("69 of the checkpoint's parameters located in the graph (26 of them int8, read as the "
                         "graph dequantizes them), 69 of them equal"),
            std::string::npos)
      << weights;
  EXPECT_NE(weights.find("w8a32 computes with the graph's own integers, scales and zero points"), std::string::npos)
      << weights;
}

// The benchmark computes with the graph's own quantization, not w8a32's rule: one scale moved by 2^-20 keeps each
// value within half a step of the checkpoint's, and the graph passes (its error against the truth is its own
// rounding's); a scale ×1.01, which moves the weight's values past half a step, fails naming the weight. Scales
// along a weight's input channels are exit 2, naming the axis: no scale per output channel to compute with.
TEST(ShippedGraphWeightOnlyInt8, TheGraphsOwnScaleIsJudgedAndOneAlongTheInputChannelsIsBadInput) {
  const fs::path dir = test::temp_dir("w8a32-rule");
  auto with_scale = [&](const std::function<void(onnx::TensorProto&)>& change, const std::string& name) {
    onnx::ModelProto m = read(test::fixture("onnx/trained-mini-cast-scale.onnx"));
    bool changed = false;
    for (onnx::TensorProto& t : *m.mutable_graph()->mutable_initializer())
      if (!changed && t.name().starts_with("onnx::MatMul_") && t.name().ends_with("_scale")) {
        change(t);
        changed = true;
      }
    EXPECT_TRUE(changed);
    write(m, dir / name);
    return dir / name;
  };
  auto first_scale_times = [](float factor) {
    return [factor](onnx::TensorProto& t) {
      std::string raw = t.raw_data();
      float first;
      std::memcpy(&first, raw.data(), 4);
      first *= factor;
      std::memcpy(raw.data(), &first, 4);
      t.set_raw_data(raw);
    };
  };
  EXPECT_TRUE(verified(with_scale(first_scale_times(1 + 0x1p-20f), "scale-off-rule.onnx")).pass());
  const VerifyResult off = verified(with_scale(first_scale_times(1.01f), "scale-off.onnx"));
  EXPECT_FALSE(off.pass());
  ASSERT_EQ(off.weights_differ.size(), 1u);
  EXPECT_TRUE(off.weights_differ[0].starts_with("encoder.layer.0.attention.self.query.weight differs from the "
                                                "checkpoint's"))
      << off.weights_differ[0];
  const fs::path input_axis = with_scale(
      [](onnx::TensorProto& t) {
        t.set_dims(0, t.dims(1));
        t.set_dims(1, 1);
      },
      "input-axis.onnx");
  expect_input_error([&] { verified(input_axis); },
                     {"encoder.layer.0.attention.self.query.weight is scaled along axis 0, not its output channels"});
}

// Weight-only int8 on the linear layers alone, the embedding tables left fp32: the benchmark computes with the
// graph's integers and the tables as they are (w8a32's rule would quantize them too), and the graph passes.
TEST(ShippedGraphWeightOnlyInt8, LinearLayersAloneInt8PassWithTheTablesAsTheGraphHoldsThem) {
  const VerifyResult r = verified(test::fixture("onnx/trained-mini-cast-scale-linear-only.onnx"));
  EXPECT_TRUE(r.pass());
  EXPECT_EQ(r.gate.arithmetic, Arithmetic::w8a32);
  EXPECT_NE(note(r, "weights: ").find("(24 of them int8"), std::string::npos) << note(r, "weights: ");
}

// ONNX Runtime's quantize_dynamic as a third party runs it (scripts/ort-quantize.py): with its defaults every
// linear weight is int8 per tensor in the full range and the embedding tables uint8 with zero points, dequantized
// after their Gather; per channel in the reduced range otherwise. Each is judged on its own integers, summed as
// the adapter measured ONNX Runtime's kernel to sum them, and passes, every parameter located and within half its
// step of the checkpoint's, the rule that made them named. (On the rule of `export-onnx --variant int8` instead,
// the default graph failed locally at 1e5× its spread on every linear layer; on an AVX2 CPU without VNNI with
// exact sums, at 1.2e5×, where MLAS saturates pairs of its full-range products: local 0.00× when they are.)
TEST(ShippedGraphThirdPartyInt8, QuantizeDynamicGraphsPassOnTheirOwnIntegers) {
  for (auto [name, rule] : {std::pair{"onnx/trained-mini-ort-dynamic.onnx", "symmetric per tensor in [-127, 127]"},
                            std::pair{"onnx/trained-mini-ort-dynamic-per-channel.onnx",
                                      "symmetric per output channel in [-64, 64]"}}) {
    const VerifyResult r = verified(test::fixture(name));
    EXPECT_TRUE(r.pass()) << name;
    EXPECT_EQ(r.gate.arithmetic, Arithmetic::int8) << name;
    const std::string weights = note(r, "weights: ");
    EXPECT_NE(weights.find("69 of the checkpoint's parameters located in the graph (27 of them int8, read as the "
                           "graph dequantizes them), 69 of them equal"),
              std::string::npos)
        << name << ": " << weights;
    EXPECT_NE(weights.find("int8 computes with the graph's own integers"), std::string::npos) << name;
    EXPECT_NE(weights.find(fmt::format("every linear weight is the checkpoint's quantized {}, bit for bit", rule)),
              std::string::npos)
        << name << ": " << weights;
    EXPECT_NE(note(r, "int8 sums: "), "") << name;
  }
}

// ONNX Runtime's quantize_static as a third party runs it (scripts/ort-quantize.py --static), calibrated on the
// bundled sentences: every MatMul's operands and product at fixed scales, as QuantizeLinear → DequantizeLinear
// pairs (QDQ: the residual sums read the LayerNorms' outputs quantized too) and as QLinearMatMul (QOperator: they
// read them unquantized). Each is judged on the graph's own integers and scales, read through the pairs, and
// passes; ONNX Runtime at `all` fuses every product into QLinearMatMul, whose requantization the oracle
// reproduces bit for bit: each linear layer's and attention product's local ratio is 0.
TEST(ShippedGraphThirdPartyInt8, QuantizeStaticGraphsPassOnTheirOwnScalesBitForBit) {
  for (auto [name, activations] :
       {std::pair{"onnx/trained-mini-ort-static-qdq.onnx",
                  "activations: 80 values quantized at the graph's fixed scales and zero points (static quantization: "
                  "24 linear layers' inputs, 32 products, 16 attention operands, 8 residual sums' block inputs)"},
        std::pair{"onnx/trained-mini-ort-static-qoperator.onnx",
                  "activations: 72 values quantized at the graph's fixed scales and zero points (static quantization: "
                  "24 linear layers' inputs, 32 products, 16 attention operands, 0 residual sums' block inputs)"}}) {
    const VerifyResult r = verified(test::fixture(name));
    EXPECT_TRUE(r.pass()) << name;
    EXPECT_EQ(r.gate.arithmetic, Arithmetic::int8) << name;
    EXPECT_NE(note(r, "candidate: ").find("static quantization"), std::string::npos) << name;
    EXPECT_TRUE(note(r, "activations: ").starts_with(activations)) << name << ": " << note(r, "activations: ");
    EXPECT_NE(note(r, "weights: ").find("every linear weight is the checkpoint's quantized symmetric per tensor in "
                                        "[-127, 127], bit for bit"),
              std::string::npos)
        << name;
    ASSERT_FALSE(r.sentences.empty());
    for (const SentenceVerdict& v : r.sentences)
      for (const TensorComparison& c : v.gate.tensors)
        for (const char* product : {".attention.query", ".attention.key", ".attention.value", ".attention.scores",
                                    ".attention.context", ".attention.pre_norm"})
          if (c.name.ends_with(product)) {
            ASSERT_TRUE(c.local.has_value()) << c.name;
            EXPECT_EQ(c.local->ratio, 0.0) << name << " " << v.sentence.id << " " << c.name;
          }
  }
}

// The same QDQ graph as written, unfused (--ort-optimization disabled): each product an fp32 MatMul of the
// dequantized operands, then QuantizeLinear, whose fp32 sums put a few products one integer from QLinearMatMul's
// (on the 14 bundled sentences, a query's and a pre_norm's: their local ratio 1.00×, not 0). It passes: where a
// product lies within √n · u · Σ|terms| of a rounding boundary, the local spread holds the boundary's other side
// (Oracle::LocalReferences::requantized_other_way; without it the run failed there at 3 457× and 10 439×).
TEST(ShippedGraphThirdPartyInt8, AStaticGraphRunUnfusedPassesWithItsProductsOneIntegerOffNextToABoundary) {
  const fs::path sentences = test::source_dir() / "fixtures/sentences.yaml";
  onnxruntime::Options unfused;
  unfused.graph_optimization = "disabled";
  const VerifyResult r =
      verify(trained_mini(), onnx_export::shipped_candidate(test::fixture("onnx/trained-mini-ort-static-qdq.onnx"), unfused),
             load_sentences(sentences), sentences, tolerances(), {});
  EXPECT_TRUE(r.pass());
  double worst = 0;
  for (const SentenceVerdict& v : r.sentences)
    for (const TensorComparison& c : v.gate.tensors)
      if (c.local && (c.name.ends_with(".attention.query") || c.name.ends_with(".attention.pre_norm")))
        worst = std::max(worst, c.local->ratio);
  EXPECT_GT(worst, 0.5);  // some product is one integer off: the other side of its boundary was needed
}

// The static QDQ graph with layer 1's attention LayerNorm output times 1.001 before its quantization
// (scripts/graph-fault.py): every weight the checkpoint's, the FFN after it fails (blamed: layer.1.intermediate).
TEST(ShippedGraphThirdPartyInt8, AStaticGraphsLayerNormTimesOnePerMilleFailsBlamingTheOpAfterIt) {
  const VerifyResult r = verified(test::fixture("onnx/trained-mini-ort-static-qdq-layernorm-fault.onnx"));
  EXPECT_FALSE(r.pass());
  EXPECT_TRUE(r.weights_differ.empty());
  expect_every_sentence_blames(r, "layer.1.intermediate");
}

// Static quantization where the int8 scheme quantizes nothing, or in a form it does not read, is bad input naming
// it: a QuantizeLinear → DequantizeLinear pair on layer 0's masked scores (the Softmax's input), and an op that
// computes on the integers (QLinearAdd).
TEST(ShippedGraphThirdPartyInt8, QuantizationTheSchemeDoesNotModelIsBadInputNamingIt) {
  const fs::path dir = test::temp_dir("static-unmodelled");
  onnx::ModelProto m = read(test::fixture("onnx/trained-mini-ort-static-qdq.onnx"));
  onnx::GraphProto& g = *m.mutable_graph();
  const float scale = 0.05f;
  const uint8_t zero = 128;
  onnx::TensorProto& s = *g.add_initializer();
  s.set_name("scores_scale");
  s.set_data_type(onnx::TensorProto::FLOAT);
  s.set_raw_data(&scale, sizeof scale);
  onnx::TensorProto& z = *g.add_initializer();
  z.set_name("scores_zero_point");
  z.set_data_type(onnx::TensorProto::UINT8);
  z.set_raw_data(&zero, sizeof zero);
  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
  std::string scores;
  for (onnx::NodeProto& n : *g.mutable_node()) {
    if (n.op_type() == "Softmax" && scores.empty()) {
      scores = n.input(0);
      for (auto [op, in, out] : {std::tuple{"QuantizeLinear", scores, std::string("scores_q")},
                                 std::tuple{"DequantizeLinear", std::string("scores_q"), std::string("scores_dq")}}) {
        onnx::NodeProto& q = *nodes.Add();
        q.set_op_type(op);
        q.add_input(in);
        q.add_input("scores_scale");
        q.add_input("scores_zero_point");
        q.add_output(out);
      }
      n.set_input(0, "scores_dq");
    }
    *nodes.Add() = n;
  }
  g.mutable_node()->Swap(&nodes);
  ASSERT_FALSE(scores.empty());
  const fs::path softmax = dir / "softmax-input.onnx";
  write(m, softmax);
  expect_input_error([&] { verified(softmax); },
                     {softmax.string(), "Softmax node", "reads " + scores + " quantized, which the int8 scheme "
                                                                           "quantizes nowhere"});
  for (onnx::NodeProto& n : *g.mutable_node())
    if (n.op_type() == "Add") {
      n.set_op_type("QLinearAdd");
      n.set_domain("com.microsoft");
      break;
    }
  const fs::path qlinear = dir / "qlinear-add.onnx";
  write(m, qlinear);
  expect_input_error([&] { verified(qlinear); },
                     {qlinear.string(), "its activations are quantized where lenscheck's int8 scheme does not model "
                                        "it", "QLinearAdd node"});
}

// A wrong op, every weight the checkpoint's: the last layer's value product times 1.001 fails the local
// verdict there on every sentence (2 440× the op's rounding spread on the 14 bundled sentences, k 16).
TEST(ShippedGraphWeightOnlyInt8, TheLastValueProductTimesOnePerMilleFailsBlamingThatOp) {
  const VerifyResult r = verified(test::fixture("onnx/trained-mini-cast-scale-value-fault.onnx"));
  EXPECT_FALSE(r.pass());
  EXPECT_TRUE(r.weights_differ.empty());
  ASSERT_EQ(r.sentences.size(), 2u);
  for (const SentenceVerdict& v : r.sentences) {
    const TensorComparison* blamed = v.gate.first_local_failure();
    ASSERT_NE(blamed, nullptr) << v.sentence.id;
    EXPECT_EQ(blamed->name, "layer.3.attention.value") << v.sentence.id;
  }
}

// One int8 value of the last layer's value weight two steps off: a graph quantized from another model, refused
// by its weights before any sentence runs.
TEST(ShippedGraphWeightOnlyInt8, OneInt8ValueMovedFailsNamingTheWeight) {
  const VerifyResult r = verified(test::fixture("onnx/trained-mini-cast-scale-int8-fault.onnx"));
  EXPECT_FALSE(r.pass());
  EXPECT_TRUE(r.sentences.empty());
  ASSERT_EQ(r.weights_differ.size(), 1u);
  EXPECT_TRUE(r.weights_differ[0].starts_with("encoder.layer.3.attention.self.value.weight differs from the "
                                              "checkpoint's: max |Δ|"))
      << r.weights_differ[0];
}

// ONNX Runtime 1.30's optimizer, from level extended, rewrites DequantizeLinear → MatMul as MatMulNBits, which
// quantizes the activations to int8: not the w8a32 the graph declares. The report says so, and the local verdict
// fails at the first linear layer (1.3e4× its spread), where at level basic the same graph passes (above).
TEST(ShippedGraphWeightOnlyInt8, DequantizeLinearFusedByOnnxRuntimeFailsAtTheFirstLinearLayerAndSaysWhy) {
  const VerifyResult r = verified(test::fixture("onnx/trained-mini-dequantize-linear.onnx"));
  EXPECT_FALSE(r.pass());
  EXPECT_TRUE(r.weights_differ.empty());
  EXPECT_NE(note(r, "ONNX Runtime's graph optimization all fuses each DequantizeLinear → MatMul into "
                    "com.microsoft.MatMulNBits"),
            "");
  expect_every_sentence_blames(r, "layer.0.attention.query");
}

// One weight given one scale for all, not its own: judged against the checkpoint, its values differ by more
// than half a step and the graph fails naming it; read with no checkpoint, the same graph is fp32 arithmetic
// on the weights it dequantizes, whatever the rule: it declares fp32 and passes.
TEST(ShippedGraphWeightOnlyInt8, AWeightRescaledPerTensorDiffersFromTheCheckpointButIsItsOwnTruth) {
  onnx::ModelProto m = read(test::fixture("onnx/trained-mini-cast-scale.onnx"));
  bool changed = false;
  for (onnx::TensorProto& t : *m.mutable_graph()->mutable_initializer())
    if (!changed && t.name().ends_with("_scale") && t.dims_size() == 2 && t.dims(0) == 1) {
      const float one_for_all = 0.01f;
      t.clear_dims();
      t.set_raw_data(&one_for_all, sizeof one_for_all);
      changed = true;
    }
  ASSERT_TRUE(changed);
  const fs::path file = test::temp_dir("per-tensor") / "model.onnx";
  write(m, file);
  const VerifyResult against_checkpoint = verified(file);
  EXPECT_FALSE(against_checkpoint.pass());
  ASSERT_EQ(against_checkpoint.weights_differ.size(), 1u);
  EXPECT_NE(against_checkpoint.weights_differ[0].find("differs from the checkpoint's"), std::string::npos)
      << against_checkpoint.weights_differ[0];
  const Checkpoint own = onnx_export::graph_checkpoint(file, test::fixture("trained-mini"));
  const Candidate c = onnx_export::shipped_candidate(file, {}, true);
  EXPECT_EQ(c.arithmetic, Arithmetic::fp32);
  EXPECT_TRUE(verify(own, c, load_sentences(two_sentences()), two_sentences(), tolerances(), {}).pass());
}

// A graph with BERT's interface and no encoder (an embedding lookup alone) is bad input saying what was looked for.
TEST(ShippedGraphInput, AGraphWithNoBertInItIsBadInputSayingWhatWasLookedFor) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(14);
  onnx::GraphProto& g = *m.mutable_graph();
  g.set_name("lookup");
  onnx::ValueInfoProto& ids = *g.add_input();
  ids.set_name("input_ids");
  ids.mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::INT64);
  g.add_output()->set_name("last_hidden_state");
  onnx::TensorProto& table = *g.add_initializer();
  table.set_name("table");
  table.set_data_type(onnx::TensorProto::FLOAT);
  table.add_dims(2);
  table.add_dims(trained_mini().config.hidden_size);
  table.mutable_raw_data()->assign(size_t(2 * 4 * trained_mini().config.hidden_size), '\0');
  onnx::NodeProto& gather = *g.add_node();
  gather.set_op_type("Gather");
  gather.add_input("table");
  gather.add_input("input_ids");
  gather.add_output("last_hidden_state");
  const fs::path file = test::temp_dir("no-bert") / "lookup.onnx";
  write(m, file);
  expect_input_error([&] { verified(file); },
                     {file.string(),
                      "no BERT encoder is recognised in the graph: it has no Softmax"});
}

INSTANTIATE_TEST_SUITE_P(OnnxRuntime, ShippedGraph, testing::ValuesIn(shipped_graphs()),
                         [](const auto& info) { return info.param.name; });

// ONNX Runtime's Python transformer optimizer's graphs (scripts/ort-transformers-fuse.py): what its fused ops
// expose is judged, every parameter is located (Q, K and V inside Attention's packed weight) and checked, the
// queries, keys, values, scores and probabilities are named as inside Attention, and the context is judged
// as the span through them; the fp16 conversion is judged as fp16-ort-fused.
class ShippedFusedGraph : public testing::TestWithParam<std::pair<const char*, Arithmetic>> {};

TEST_P(ShippedFusedGraph, PassesWithWhatItsFusedOpsExposeJudgedAndTheRestNamed) {
  const VerifyResult r = verified(test::fixture(GetParam().first));
  EXPECT_TRUE(r.pass());
  EXPECT_EQ(r.gate.arithmetic, GetParam().second);
  EXPECT_TRUE(r.weights_differ.empty());
  const auto weights = std::find_if(r.notes.begin(), r.notes.end(), [](const std::string& n) { return n.starts_with("weights: "); });
  ASSERT_NE(weights, r.notes.end());
  EXPECT_TRUE(weights->starts_with("weights: 69 of the checkpoint's parameters located in the graph, 69 of them equal"))
      << *weights;
  for (const char* tensor : {"layer.3.attention.query", "layer.3.attention.probs"}) {
    const auto u = std::find_if(r.unreachable.begin(), r.unreachable.end(),
                                [&](const Unreachable& x) { return x.tensor == tensor; });
    ASSERT_NE(u, r.unreachable.end()) << tensor;
    EXPECT_NE(u->why.find("inside com.microsoft.Attention"), std::string::npos) << u->why;
  }
  for (const char* family : {"embeddings.output", "layer.*.attention.context", "layer.*.attention.pre_norm",
                             "layer.*.attention.output", "layer.*.intermediate", "layer.*.output"}) {
    const auto judged = std::find_if(r.gate.families.begin(), r.gate.families.end(),
                                     [&](const TensorSummary& f) { return f.name == family; });
    ASSERT_NE(judged, r.gate.families.end()) << family;
    EXPECT_GT(judged->compared, 0u) << family;
  }
  ASSERT_FALSE(r.sentences.empty());
  for (const SentenceVerdict& v : r.sentences) {
    const auto context = std::find_if(v.gate.tensors.begin(), v.gate.tensors.end(),
                                      [](const TensorComparison& c) { return c.name == "layer.3.attention.context"; });
    ASSERT_NE(context, v.gate.tensors.end());
    ASSERT_TRUE(context->local.has_value()) << v.sentence.id;
    EXPECT_NE(local_scope(*context).find("through layer.3.attention.query"), std::string::npos) << local_scope(*context);
  }
}

// One op wrong: at fp32 layer 3's FFN input product (its MatMul, apart from BiasGelu) times 1.001, caught as
// the span through the FFN the extra node hides; at fp16, where 1.001 is two steps of the stored format and
// passes, layer 3's attention output product times 1.01, caught at attention.pre_norm. And one weight: the
// value third of layer 3's packed Q, K, V weight times 1.001.
TEST_P(ShippedFusedGraph, AnOpOrAPackedWeightWrongFails) {
  const fs::path dir = test::temp_dir("fused");
  const bool half = GetParam().second != Arithmetic::fp32;
  {
    onnx::ModelProto m = read(test::fixture(GetParam().first));
    onnx::GraphProto& g = *m.mutable_graph();
    onnx::TensorProto& t = *g.add_initializer();
    t.set_name("fault_scale");
    t.set_data_type(half ? onnx::TensorProto::FLOAT16 : onnx::TensorProto::FLOAT);
    const float factor = half ? 1.01f : 1.001f;
    const _Float16 factor16 = static_cast<_Float16>(factor);
    t.set_raw_data(half ? static_cast<const void*>(&factor16) : &factor, half ? 2 : 4);
    const std::string op = half ? "SkipLayerNormalization" : "BiasGelu";
    const std::string product = half ? "/layer.3/attention/output/dense/" : "/layer.3/intermediate/dense/";
    google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
    int inserted = 0;
    for (onnx::NodeProto& n : *g.mutable_node()) {
      if (n.op_type() == op && n.input(0).find(product) != std::string::npos) {
        onnx::NodeProto& mul = *nodes.Add();
        mul.set_op_type("Mul");
        mul.add_input(n.input(0));
        mul.add_input("fault_scale");
        mul.add_output("fault_scaled");
        n.set_input(0, "fault_scaled");
        ++inserted;
      }
      *nodes.Add() = n;
    }
    g.mutable_node()->Swap(&nodes);
    ASSERT_EQ(inserted, 1);
    write(m, dir / "op.onnx");
    const VerifyResult r = verified(dir / "op.onnx");
    EXPECT_FALSE(r.pass());
    EXPECT_TRUE(r.weights_differ.empty());
    for (const SentenceVerdict& v : r.sentences) {
      const TensorComparison* blamed = v.gate.first_local_failure();
      ASSERT_NE(blamed, nullptr) << v.sentence.id;
      EXPECT_EQ(local_scope(*blamed), half ? "layer.3.attention.pre_norm"
                                           : "span layer.3.attention.output → layer.3.output through layer.3.intermediate")
          << v.sentence.id;
    }
  }
  onnx::ModelProto m = read(test::fixture(GetParam().first));
  const int64_t hidden = trained_mini().config.hidden_size;
  bool scaled = false;
  for (onnx::TensorProto& t : *m.mutable_graph()->mutable_initializer()) {
    if (t.name() != "Attention_3_qkv_weight") continue;
    std::string& raw = *t.mutable_raw_data();
    const size_t width = half ? 2 : 4;
    for (size_t at = 0; at < raw.size(); at += width) {
      if (int64_t(at / width) % (3 * hidden) < 2 * hidden) continue;  // [in, 3 · out]: Q, K, V side by side
      if (half) {
        _Float16 h;
        std::memcpy(&h, raw.data() + at, 2);
        h = static_cast<_Float16>(static_cast<float>(h) * 1.001f);
        std::memcpy(raw.data() + at, &h, 2);
      } else {
        float v;
        std::memcpy(&v, raw.data() + at, 4);
        v *= 1.001f;
        std::memcpy(raw.data() + at, &v, 4);
      }
    }
    scaled = true;
  }
  ASSERT_TRUE(scaled);
  write(m, dir / "weight.onnx");
  const VerifyResult r = verified(dir / "weight.onnx");
  EXPECT_FALSE(r.pass());
  ASSERT_EQ(r.weights_differ.size(), 1u);
  EXPECT_TRUE(r.weights_differ[0].starts_with("encoder.layer.3.attention.self.value.weight differs")) << r.weights_differ[0];
}

INSTANTIATE_TEST_SUITE_P(OnnxRuntime, ShippedFusedGraph,
                         testing::Values(std::pair{"onnx/trained-mini-torch-fused.onnx", Arithmetic::fp32},
                                         std::pair{"onnx/trained-mini-torch-fused-fp16.onnx", Arithmetic::fp16_ort_fused}),
                         [](const auto& info) { return info.param.second == Arithmetic::fp32 ? "fp32" : "fp16"; });

TEST(ShippedGraphInput, NotOnnxNoOutputOrAnotherHiddenSizeDepthOrHeadCountIsBadInputNamingTheFile) {
  const fs::path dir = test::temp_dir("bad");
  test::write_file(dir / "text.onnx", "not a graph\n");
  EXPECT_THROW(onnx_export::shipped_candidate(dir / "text.onnx", {}), InputError);

  onnx::ModelProto m = read(exported(onnx_export::Variant::fp32));
  m.mutable_graph()->mutable_output(0)->set_name("pooler_output");
  write(m, dir / "renamed.onnx");
  expect_input_error([&] { verified(dir / "renamed.onnx"); },
                     {"renamed.onnx",
                      "no output named last_hidden_state (its outputs: pooler_output)"});

  m = read(exported(onnx_export::Variant::fp32));
  m.mutable_graph()->mutable_output(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(2)->set_dim_value(128);
  write(m, dir / "narrow.onnx");
  expect_input_error([&] { verified(dir / "narrow.onnx"); },
                     {"last_hidden_state has 128 features; the checkpoint's hidden size is"});

  // trained-mini's first two layers alone: a graph of another depth.
  Checkpoint shallow = trained_mini();
  shallow.config.num_hidden_layers = 2;
  shallow.weights.layers.resize(2);
  onnx_export::export_onnx(shallow, {.variant = onnx_export::Variant::fp32, .trace = false}, dir / "shallow.onnx");
  expect_input_error([&] { verified(dir / "shallow.onnx"); },
                     {"shallow.onnx",
                      "the graph has 2 layers (Softmax nodes, with the LayerNorms they imply); the checkpoint has 4"});

  // The same weights split into 8 heads of 32: every parameter equal, another model.
  Checkpoint eight_heads = trained_mini();
  eight_heads.config.num_attention_heads = 8;
  onnx_export::export_onnx(eight_heads, {.variant = onnx_export::Variant::fp32, .trace = false}, dir / "heads.onnx");
  expect_input_error([&] { verified(dir / "heads.onnx"); },
                     {"heads.onnx",
                      "the graph splits layer 0's attention into 8 heads; the checkpoint has 4"});
}

// A graph shipped with no checkpoint beside it (issue #45, item 2), read as one, is trained-mini: the same
// config (ε as the graph stores it, in float32) and the same weights, exactly where the graph holds float32,
// and within half an int8 step of the parameter's largest value in quantize_dynamic's reduced range [-64, 64]
// (max |w| / 128) where it holds int8 or float16: the full range's step (max |w| / 254) and float16's rounding
// (2^-11 relative) meet it too. `stored_in_float32`: whether a parameter is held as float32 in the graph.
namespace {

void expect_trained_mini(const Checkpoint& ck, const std::function<bool(const std::string&)>& stored_in_float32) {
  const BertConfig& want = trained_mini().config;
  EXPECT_EQ(ck.config.num_hidden_layers, want.num_hidden_layers);
  EXPECT_EQ(ck.config.hidden_size, want.hidden_size);
  EXPECT_EQ(ck.config.num_attention_heads, want.num_attention_heads);
  EXPECT_EQ(ck.config.intermediate_size, want.intermediate_size);
  EXPECT_EQ(ck.config.hidden_act, want.hidden_act);
  EXPECT_EQ(float(ck.config.layer_norm_eps), float(want.layer_norm_eps));
  EXPECT_EQ(ck.config.vocab_size, want.vocab_size);
  EXPECT_EQ(ck.config.max_position_embeddings, want.max_position_embeddings);
  EXPECT_EQ(ck.config.type_vocab_size, want.type_vocab_size);
  EXPECT_EQ(ck.vocab.size(), trained_mini().vocab.size());
  std::map<std::string, const Param*> read;
  for_each_param(ck.config, ck.weights, [&](const std::string& name, const Param& p) { read[name] = &p; });
  for_each_param(want, trained_mini().weights, [&](const std::string& name, const Param& p) {
    const Param& got = *read.at(name);
    ASSERT_EQ(got.shape, p.shape) << name;
    if (stored_in_float32(name)) {
      EXPECT_EQ(got.values, p.values) << name;
      return;
    }
    double largest = 0, worst = 0;
    for (size_t i = 0; i < p.values.size(); ++i) {
      largest = std::max(largest, double(std::abs(p.values[i])));
      worst = std::max(worst, double(std::abs(got.values[i] - p.values[i])));
    }
    EXPECT_LE(worst, largest / (2 * kInt8WeightLimit)) << name;
  });
}

// Whether a graph of this form holds the parameter as float32: a float16 graph none; an int8 one all but its
// linear weights (and, weight-only, the word and position tables); the others every one.
bool float32_in(const std::string& graph, const std::string& name) {
  if (graph.find("fp16") != std::string::npos) return false;
  const bool int8 = graph.find("int8") != std::string::npos;
  const bool weight_only = graph.starts_with("weight_only_int8");
  const bool linear_weight = name.ends_with(".weight") && name.find("LayerNorm") == std::string::npos &&
                             name.find("embeddings") == std::string::npos;
  const bool quantized_table = name == "embeddings.word_embeddings.weight" ||
                               name == "embeddings.position_embeddings.weight";
  return !(int8 && linear_weight) && !(weight_only && quantized_table);
}

}  // namespace

TEST_P(ShippedGraph, ReadWithNoCheckpointItIsTheCheckpointItWasMadeFrom) {
  const Checkpoint ck = onnx_export::graph_checkpoint(GetParam().graph(), test::fixture("trained-mini"));
  EXPECT_EQ(ck.weights_file, GetParam().graph());
  expect_trained_mini(ck, [&](const std::string& name) { return float32_in(GetParam().name, name); });
}

// ONNX Runtime's fused graphs: the config from EmbedLayerNormalization's tables, Attention's num_heads and
// BiasGelu, ε from the fused ops; Q, K and V as thirds of the packed weight and bias.
TEST_P(ShippedFusedGraph, ReadWithNoCheckpointItIsTheCheckpointItWasMadeFrom) {
  const Checkpoint ck = onnx_export::graph_checkpoint(test::fixture(GetParam().first), test::fixture("trained-mini"));
  expect_trained_mini(ck, [&](const std::string&) { return GetParam().second == Arithmetic::fp32; });
}

namespace {

// The graph with one node, Mul by `factor`, after its `at`th LayerNormalization (in graph order).
fs::path with_layer_norm_scaled(const fs::path& source, int at, float factor, const fs::path& file) {
  onnx::ModelProto m = read(source);
  onnx::GraphProto& g = *m.mutable_graph();
  onnx::TensorProto& t = *g.add_initializer();
  t.set_name("fault_scale");
  t.set_data_type(onnx::TensorProto::FLOAT);
  t.set_raw_data(&factor, sizeof factor);
  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
  int seen = 0;
  for (onnx::NodeProto& n : *g.mutable_node()) {
    *nodes.Add() = n;
    if (n.op_type() != "LayerNormalization" || seen++ != at) continue;
    onnx::NodeProto& norm = nodes[nodes.size() - 1];
    onnx::NodeProto& mul = *nodes.Add();
    mul.set_op_type("Mul");
    mul.set_name("fault");
    mul.add_input(norm.output(0) + "_unscaled");
    mul.add_input("fault_scale");
    mul.add_output(norm.output(0));
    norm.set_output(0, norm.output(0) + "_unscaled");
  }
  g.mutable_node()->Swap(&nodes);
  write(m, file);
  return file;
}

VerifyResult verified_alone(const fs::path& graph, const fs::path& tokenizer) {
  return verify(onnx_export::graph_checkpoint(graph, tokenizer), onnx_export::shipped_candidate(graph, {}, true),
                load_sentences(two_sentences()), two_sentences(), tolerances(), {});
}

}  // namespace

// Judged against its own weights, torch.onnx's graph of trained-mini passes with the tokenizer beside it, and
// says where its weights came from; the same graph with layer 1's attention LayerNorm times 1.001 fails,
// blaming the FFN's first op that reads it. A node inside a linear layer leaves its weight unreadable: exit 2
// naming it, and what --model would do.
TEST(GraphWithNoCheckpoint, PassesAgainstItsOwnWeightsAndAnOpFaultInItFails) {
  const fs::path dir = test::temp_dir("alone");
  fs::copy_file(test::fixture("onnx/trained-mini-torch-ort.onnx"), dir / "model.onnx",
                fs::copy_options::overwrite_existing);
  fs::copy_file(test::fixture("trained-mini/vocab.txt"), dir / "vocab.txt", fs::copy_options::overwrite_existing);
  const VerifyResult clean = verified_alone(dir / "model.onnx", "");
  EXPECT_TRUE(clean.pass());
  EXPECT_EQ(clean.weights_file, "model.onnx");
  const auto none = std::find_if(clean.notes.begin(), clean.notes.end(),
                                 [](const std::string& n) { return n.starts_with("checkpoint: none; the weights read from the graph"); });
  EXPECT_NE(none, clean.notes.end());
  EXPECT_TRUE(clean.unreachable.empty());

  const VerifyResult faulty = verified_alone(with_layer_norm_scaled(dir / "model.onnx", 3, 1.001f, dir / "fault.onnx"),
                                             dir / "vocab.txt");
  EXPECT_FALSE(faulty.pass());
  expect_every_sentence_blames(faulty, "layer.1.intermediate");

  onnx::ModelProto m = read(dir / "model.onnx");
  onnx::TensorProto& t = *m.mutable_graph()->add_initializer();
  const float one = 1.0f;
  t.set_name("times_one");
  t.set_data_type(onnx::TensorProto::FLOAT);
  t.set_raw_data(&one, sizeof one);
  ASSERT_EQ(insert_mul(*m.mutable_graph(), "layer.2.output.dense.bias", "times_one"), 1);
  write(m, dir / "inside.onnx");
  expect_input_error([&] { onnx_export::graph_checkpoint(dir / "inside.onnx", dir / "vocab.txt"); },
                     {"inside.onnx",
                      "does not give encoder.layer.2.intermediate.dense.weight: no pattern locates it"});
}

// quantize_static's QDQ graph read as its own checkpoint: its int8 weights dequantized as the graph does it, its
// activations' fixed scales int8's; it passes, and so does its LayerNorm fault fail (blamed: the FFN after it).
TEST(GraphWithNoCheckpoint, AStaticallyQuantizedGraphPassesOnItsOwnWeightsAndScalesAndItsFaultFails) {
  const fs::path vocab = test::fixture("trained-mini/vocab.txt");
  const VerifyResult clean = verified_alone(test::fixture("onnx/trained-mini-ort-static-qdq.onnx"), vocab);
  EXPECT_TRUE(clean.pass());
  EXPECT_EQ(clean.gate.arithmetic, Arithmetic::int8);
  EXPECT_NE(note(clean, "checkpoint: none; ").find("24 of them int8 dequantized as the graph does it"),
            std::string::npos)
      << note(clean, "checkpoint: none; ");
  EXPECT_NE(note(clean, "activations: "), "");
  const VerifyResult faulty =
      verified_alone(test::fixture("onnx/trained-mini-ort-static-qdq-layernorm-fault.onnx"), vocab);
  EXPECT_FALSE(faulty.pass());
  expect_every_sentence_blames(faulty, "layer.1.intermediate");
}

// The tokenizer: none beside the graph, or one of another kind than BERT's WordPiece, is bad input naming the
// file; a vocabulary of another size than the graph's word table names both.
TEST(GraphWithNoCheckpoint, AMissingForeignOrMismatchedTokenizerIsBadInputNamingTheFile) {
  const fs::path dir = test::temp_dir("alone-tokenizer");
  const fs::path graph = dir / "model.onnx";
  fs::copy_file(test::fixture("onnx/trained-mini-torch.onnx"), graph, fs::copy_options::overwrite_existing);
  auto expect_error = [&](const fs::path& tokenizer, const std::string& file, const std::string& says) {
    expect_input_error([&] { onnx_export::graph_checkpoint(graph, tokenizer); }, {file, says});
  };
  expect_error("", "vocab.txt", "missing, and no tokenizer.json beside it");
  expect_error(test::source_dir() / "fixtures/fuzz/tokenizer_json/bpe.json", "bpe.json", "model BPE is not WordPiece");
  test::write_file(dir / "short-vocab.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\n");
  expect_error(dir / "short-vocab.txt", "short-vocab.txt",
               "has 6 tokens but model.onnx says vocab_size 30522");
}

// A fused op the patterns do not know (here ONNX Runtime's MultiHeadAttention in place of its Attention) is
// named with every tensor it may hold, which the local verdict then judges as a span.
TEST(ShippedGraphInput, AFusedOpThePatternsDoNotKnowIsNamedWithWhatItHides) {
  onnx::ModelProto m = read(test::fixture("onnx/trained-mini-torch-fused.onnx"));
  int renamed = 0;
  for (onnx::NodeProto& n : *m.mutable_graph()->mutable_node())
    if (n.op_type() == "Attention") {
      n.set_op_type("MultiHeadAttention");
      ++renamed;
    }
  ASSERT_EQ(renamed, trained_mini().config.num_hidden_layers);
  const fs::path dir = test::temp_dir("unknown-op");
  write(m, dir / "model.onnx");
  const onnx_export::FoundGraph f = onnx_export::prepare_shipped_graph(dir / "model.onnx", trained_mini(),
                                                                       dir / "copy.onnx", false);
  const auto context = std::find_if(f.unreachable.begin(), f.unreachable.end(),
                                    [](const Unreachable& u) { return u.tensor == "layer.2.attention.context"; });
  ASSERT_NE(context, f.unreachable.end());
  EXPECT_NE(context->why.find("ops the patterns do not know: com.microsoft.MultiHeadAttention ×4"), std::string::npos)
      << context->why;
}
