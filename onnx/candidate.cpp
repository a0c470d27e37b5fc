#include "onnx/candidate.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "model/error.h"
#include "runtime/encoder.h"

namespace lenscheck::onnx_export {

Variant parse_candidate(const std::string& candidate) {
  if (candidate == "onnxruntime") return Variant::fp32;
  const std::string prefix = "onnxruntime:";
  if (candidate.rfind(prefix, 0) == 0) {
    const std::string variant = candidate.substr(prefix.size());
    if (variant == "fp16" || variant == "int8") return parse_variant(variant);
  }
  throw InputError("--candidate", fmt::format("\"{}\" is not runtime, onnxruntime, onnxruntime:fp16, onnxruntime:int8, "
                                              "onnx:PATH or transformers[:eager|:sdpa]", candidate));
}

Arithmetic declared_arithmetic(Variant variant) {
  switch (variant) {
    case Variant::fp32: return Arithmetic::fp32;
    case Variant::fp16: return Arithmetic::fp16_ort_cpu;
    case Variant::int8: return Arithmetic::int8;
  }
  return Arithmetic::fp32;
}

namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// How the candidate names itself in reports: what the CPU execution provider really computes (ORT's
// profiler, reports/verify-onnxruntime.md): it has float16 kernels for Gather, Reshape, Transpose and
// LayerNormalization only, and runs every other node in float32 between the casts it inserts.
std::string label_of(const CandidateSpec& spec) {
  const std::string arithmetic = spec.variant == Variant::fp16   ? "fp16 graph, fp32 arithmetic between inserted casts"
                                 : spec.variant == Variant::int8 ? "int8 linear layers (uint8 x int8 MatMulInteger), fp32 elsewhere"
                                                                 : "fp32";
  return fmt::format("onnxruntime {} (CPU, {} intra-op thread{}, graph optimization {})", arithmetic,
                     spec.ort.intra_op_threads, spec.ort.intra_op_threads == 1 ? "" : "s", spec.ort.graph_optimization);
}

}  // namespace

Candidate candidate(const CandidateSpec& spec) {
  Candidate c;
  c.name = spec.variant == Variant::fp32 ? "onnxruntime" : fmt::format("onnxruntime:{}", variant_name(spec.variant));
  c.arithmetic = declared_arithmetic(spec.variant);
  c.run = [spec, precision = arithmetic_name(c.arithmetic)](const Checkpoint& ck, const std::vector<Encoding>& inputs,
                                                            const runtime::Stages* stages, unsigned) {
    if (stages) throw std::logic_error("ONNX Runtime's stages cannot be replaced");
    const std::string label = label_of(spec);
    const ScratchFolder scratch("the exported graph");
    const std::filesystem::path graph = scratch.path() / fmt::format("bert-{}-trace.onnx", variant_name(spec.variant));
    const auto started = std::chrono::steady_clock::now();
    const ExportSummary exported = export_onnx(ck, {.variant = spec.variant, .trace = true}, graph);
    const double export_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    onnxruntime::Run run = onnxruntime::run(graph, inputs, spec.ort, label, precision, ck.vocab);
    CandidateRun r;
    r.traces = std::move(run.traces);
    r.int8_sums = run.int8_sums;
    const runtime::Encoder lens_code(ck.config, ck.weights);
    for (Trace& trace : r.traces) r.derived = lens_code.derive_lenses(trace);  // the same tensors for each
    r.label = fmt::format("onnxruntime {} {}", run.version, label.substr(std::string("onnxruntime ").size()));
    r.notes.push_back(fmt::format("candidate: {}; graph: opset {}, {} nodes, {} outputs, {:.1f} MB, exported in {:.2f} s",
                                  r.label, kOpset, exported.nodes, exported.outputs, double(exported.bytes) / 1e6,
                                  export_s));
    r.notes.push_back(fmt::format("onnxruntime: session created in {:.0f} ms; session.run with the full trace {:.2f} ms "
                                  "per sentence (median of {}; largest {:.2f} ms)",
                                  run.session_ms, median(run.sentence_ms), run.sentence_ms.size(),
                                  run.sentence_ms.empty()
                                      ? 0.0
                                      : *std::max_element(run.sentence_ms.begin(), run.sentence_ms.end())));
    if (spec.variant == Variant::int8) r.notes.push_back(onnxruntime::int8_sums_note(run.int8_sums));
    r.notes.push_back("derived: the residual lens (lens.residual_norm, lens.residual_layernorm_norm, mixing_ratio.*), "
                      "which the graph does not compute, by lenscheck's runtime lens code in fp32 from the candidate's "
                      "own attention.value, attention.probs and attention.pre_norm and each layer's input");
    return r;
  };
  return c;
}

}  // namespace lenscheck::onnx_export
